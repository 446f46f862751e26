//! `rtlab pi check`: does priority inheritance hold here? Inversion groups ([`group`]) run
//! first with a priority-inheriting futex for the configured duration, then, as a control,
//! for a few rounds with a plain futex lock, which must show the inversion the first run
//! survives. Returns a [`PiCheck`]; prints nothing.
//!
//! Every real-time thread is started here and joined before [`run_check`] returns, whatever
//! happens: none outlives the check. The medium threads' spins are bounded by a watchdog, and
//! the kernel's real-time throttling (`sched_rt_runtime_us`) still applies.

mod group;

use std::sync::Arc;
use std::time::Duration;

use model::measure::Policy;
use model::pi::{PI_SCHEMA, PiCheck, PiLockKind, PiPriorities, PiRun};
use model::{CpuSet, Nanos};
use sys::sched::SchedParams;

use group::Shared;

/// A thread's part in a group: its body.
type Role = fn(&Shared);

/// The error of a check stopped by [`run_check`]'s `wait`.
pub const INTERRUPTED: &str = "interrupted";

/// The most groups a check may run.
pub const MAX_GROUPS: u32 = 64;

/// A validated PI check.
#[derive(Clone, Debug, PartialEq)]
pub struct PiConfig {
    /// How long the PI run lasts.
    pub duration: Nanos,
    /// How many inversion groups run at once.
    pub groups: u32,
    /// The CPUs groups are pinned to, one group per CPU, in order.
    pub cpus: CpuSet,
    /// The threads' SCHED_FIFO priorities.
    pub priorities: PiPriorities,
    /// The high thread's deadline for each lock attempt.
    pub deadline: Nanos,
    /// How long the low thread holds the lock (its own CPU time).
    pub hold: Nanos,
    /// Rounds per group of the control run (each may cost a deadline of a CPU).
    pub control_rounds: u32,
}

impl PiConfig {
    /// The defaults for `groups` groups over `cpus` for `duration`: priorities 20/30/40 (below
    /// the IRQ threads' 50), a 100 ms deadline, a 1 ms hold, 3 control rounds.
    pub fn new(duration: Nanos, groups: u32, cpus: CpuSet) -> PiConfig {
        PiConfig {
            duration,
            groups,
            cpus,
            priorities: PiPriorities {
                low: 20,
                medium: 30,
                high: 40,
            },
            deadline: Nanos(100_000_000),
            hold: Nanos(1_000_000),
            control_rounds: 3,
        }
    }

    /// Checks the bounds; the error is one line naming the value.
    pub fn validate(&self) -> Result<(), String> {
        if self.groups == 0 || self.groups > MAX_GROUPS {
            return Err(format!("--groups {}: give 1 to {MAX_GROUPS}", self.groups));
        }
        if self.cpus.is_empty() {
            return Err("no CPU to run the groups on".to_string());
        }
        // Two groups on one CPU starve each other (FIFO does not share a priority level), so
        // they would measure each other instead of the lock.
        if self.groups as usize > self.cpus.len() {
            return Err(format!(
                "--groups {}: at most one group per CPU, and {} CPUs are available ({})",
                self.groups,
                self.cpus.len(),
                self.cpus
            ));
        }
        if self.duration < Nanos(100_000_000) || self.duration > Nanos(3_600_000_000_000) {
            return Err(format!("--duration {}: give 100ms to 1h", self.duration));
        }
        if self.hold >= self.deadline {
            return Err("the hold must be shorter than the deadline".to_string());
        }
        Ok(())
    }
}

/// Runs the check. `wait` is called on the calling thread with a tick to wait for; it returns
/// true when the check must stop early (a signal), which ends the current run at once.
pub fn run_check(
    config: &PiConfig,
    wait: &mut dyn FnMut(Duration) -> bool,
) -> Result<PiCheck, String> {
    config.validate()?;
    let pi = run_groups(
        config,
        PiLockKind::FutexPi,
        config.duration.get(),
        u64::MAX,
        wait,
    )?;
    let control_time = (config.deadline.get() + group::GRACE_NS + config.hold.get())
        .saturating_mul(u64::from(config.control_rounds) + 1);
    let control = run_groups(
        config,
        PiLockKind::FutexPlain,
        control_time,
        config.control_rounds.into(),
        wait,
    )?;
    Ok(PiCheck {
        schema: PI_SCHEMA.to_string(),
        priorities: config.priorities,
        deadline_ns: config.deadline.get(),
        hold_ns: config.hold.get(),
        verdict: PiCheck::judge(&pi, &control),
        pi,
        control,
    })
}

/// One run: every group's three threads for at most `length_ns` or `max_rounds` rounds.
fn run_groups(
    config: &PiConfig,
    kind: PiLockKind,
    length_ns: u64,
    max_rounds: u64,
    wait: &mut dyn FnMut(Duration) -> bool,
) -> Result<PiRun, String> {
    let start = sys::clock::monotonic_ns();
    let end = start.saturating_add(length_ns);
    let cpus: Vec<u32> = config.cpus.iter().collect();
    let groups: Vec<Arc<Shared>> = (0..config.groups as usize)
        .map(|i| {
            let cpu = cpus[i % cpus.len()];
            let (deadline, hold) = (config.deadline.get(), config.hold.get());
            Arc::new(Shared::new(cpu, kind, deadline, hold, end, max_rounds))
        })
        .collect();
    let mut threads = Vec::new();
    for g in &groups {
        let roles: [(u8, Role); 3] = [
            (config.priorities.low, group::low),
            (config.priorities.medium, group::medium),
            (config.priorities.high, group::high),
        ];
        for (priority, body) in roles {
            let mine = Arc::clone(g);
            let spawned = std::thread::Builder::new()
                .name(format!("rtlab-pi/{}", g.cpu))
                .spawn(move || {
                    if let Err(why) = become_rt(mine.cpu, priority) {
                        mine.fail(why);
                        return;
                    }
                    body(&mine);
                });
            match spawned {
                Ok(handle) => threads.push(handle),
                Err(e) => g.fail(format!("starting a thread: {e}")),
            }
        }
    }
    let stopped = supervise(&groups, end, wait);
    for t in threads {
        let _ = t.join();
    }
    for g in &groups {
        if let Some(why) = g.error.lock().ok().and_then(|e| e.clone()) {
            return Err(why);
        }
    }
    if stopped {
        return Err(INTERRUPTED.to_string());
    }
    Ok(PiRun {
        lock: kind,
        elapsed_ns: sys::clock::monotonic_ns().saturating_sub(start),
        groups: groups.iter().map(|g| g.figures()).collect(),
    })
}

/// Waits while the groups play; true when `wait` asked to stop (the groups are told to).
fn supervise(groups: &[Arc<Shared>], end: u64, wait: &mut dyn FnMut(Duration) -> bool) -> bool {
    let tick = Duration::from_millis(50);
    // A run ends by itself within a deadline and its grace after `end`; a second more is a
    // bug, and the groups are stopped rather than waited for.
    let limit = end.saturating_add(1_000_000_000);
    loop {
        if groups.iter().all(|g| g.finished()) {
            return false;
        }
        if wait(tick) {
            for g in groups {
                g.halt();
            }
            return true;
        }
        if sys::clock::monotonic_ns() > limit {
            for g in groups {
                g.fail("an inversion group did not finish its round in time".to_string());
            }
            return false;
        }
    }
}

/// Pins the calling thread to `cpu` and makes it SCHED_FIFO at `priority`.
fn become_rt(cpu: u32, priority: u8) -> Result<(), String> {
    sys::sched::pin_current_thread(&CpuSet::from_cpus([cpu])).map_err(|e| e.to_string())?;
    sys::sched::set_current_thread_policy(&SchedParams::new(Policy::Fifo, priority))
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests;
