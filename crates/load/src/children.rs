//! Forked worker processes of one generator (`messaging:...:process`, `fork`): forking them
//! placed and tied to rtlab's life, their CPU time while they run and after they are reaped,
//! and stopping them.
//!
//! The workers count their operations in [`SharedCounters`](sys::mem::SharedCounters) mapped
//! before the fork; this module only owns the processes. They are forked from the thread
//! that starts the load, which lives as long as the load does (the parent-death signal follows
//! the forking thread). They are stopped with SIGKILL, a worker holding nothing that needs a
//! polite end, or, where a worker has children of its own to reap first, by a flag it polls
//! with SIGKILL after a grace period ([`stop_within`](Children::stop_within)). Like threads,
//! forked workers wait until all are forked ([`go`](Children::go)), so forking hundreds does
//! not compete with those already running.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use model::CpuSet;
use model::measure::Policy;
use sys::mem::SharedCounters;
use sys::process::{ChildExit, StopSignal};
use sys::sched::SchedParams;

use crate::generator::LoadError;

/// A generator's worker processes.
#[derive(Debug)]
pub struct Children {
    generator: String,
    pids: Vec<u32>,
    forked: usize,
    /// CPU time of the workers already reaped.
    reaped_cpu_ns: u64,
    /// How the reaped workers ended.
    exits: Vec<ChildExit>,
    /// Slot 0 turns non-zero when the workers may start; made at the first fork.
    gate: Option<SharedCounters>,
}

impl Children {
    /// None yet; `generator` names the spec item in errors.
    pub fn new(generator: impl Into<String>) -> Children {
        Children {
            generator: generator.into(),
            pids: Vec::new(),
            forked: 0,
            reaped_cpu_ns: 0,
            exits: Vec::new(),
            gate: None,
        }
    }

    /// Forks a worker that runs `body` and exits with its return value. `body` runs in a
    /// single-threaded copy of this process: it must not take locks other threads may hold
    /// (see [`sys::process::fork_worker`]).
    /// The worker waits (polling every millisecond) until [`go`](Children::go) is called.
    pub fn fork(&mut self, body: impl FnOnce() -> i32) -> Result<u32, LoadError> {
        if self.gate.is_none() {
            self.gate =
                Some(SharedCounters::new(1).map_err(|e| LoadError::sys(&self.generator, e))?);
        }
        let gate = self.gate.as_ref().expect("just made");
        let pid = sys::process::fork_worker(|| {
            while gate.slot(0).load(Ordering::Relaxed) == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            body()
        })
        .map_err(|e| {
            LoadError::setup(
                &self.generator,
                format!(
                    "cannot fork worker {} ({e}); lower the task count or raise `ulimit -u`",
                    self.pids.len() + 1
                ),
            )
        })?;
        self.pids.push(pid);
        self.forked += 1;
        Ok(pid)
    }

    /// Forks a worker like [`fork`](Children::fork) that first makes itself an ordinary
    /// (SCHED_OTHER) process allowed on `cpus`, and exits with status 2 if it cannot.
    pub fn fork_placed(
        &mut self,
        cpus: &CpuSet,
        body: impl FnOnce() -> i32,
    ) -> Result<u32, LoadError> {
        self.fork(|| {
            let placed = sys::sched::set_current_thread_policy(&SchedParams::new(Policy::Other, 0))
                .and_then(|()| sys::sched::pin_current_thread(cpus));
            if placed.is_err() {
                return 2;
            }
            body()
        })
    }

    /// Lets every worker forked so far (and any forked later) run its body.
    pub fn go(&self) {
        if let Some(gate) = &self.gate {
            gate.slot(0).store(1, Ordering::Relaxed);
        }
    }

    /// Workers forked (running, ended, or stopped).
    pub fn len(&self) -> usize {
        self.forked
    }

    /// Whether none was forked.
    pub fn is_empty(&self) -> bool {
        self.forked == 0
    }

    /// Workers not yet reaped.
    pub fn running(&self) -> usize {
        self.pids.len()
    }

    /// CPU time all workers have used so far: exact per-process CPU clocks for those alive,
    /// plus what the reaped ones used.
    pub fn cpu_ns(&self) -> u64 {
        self.reaped_cpu_ns
            + self
                .pids
                .iter()
                .filter_map(|&pid| sys::process::cpu_time_of(pid))
                .sum::<u64>()
    }

    /// Reaps, without waiting, the workers that ended by themselves (not by
    /// [`stop`](Children::stop)); see [`ended_early`](Children::ended_early).
    pub fn reap_exited(&mut self) {
        let mut i = 0;
        while i < self.pids.len() {
            match sys::process::reap(self.pids[i], false) {
                Ok(Some(exit)) => {
                    self.reaped_cpu_ns += exit.cpu_ns;
                    self.exits.push(exit);
                    self.pids.swap_remove(i);
                }
                Ok(None) => i += 1,
                Err(_) => {
                    self.pids.swap_remove(i);
                }
            }
        }
    }

    /// How many workers ended on their own before the stop, and how many of those failed.
    pub fn ended_early(&self) -> (usize, usize) {
        let failed = self.exits.iter().filter(|e| !e.success()).count();
        (self.exits.len(), failed)
    }

    /// Kills every worker, reaps them all, and returns the CPU time they used in total.
    pub fn stop(&mut self) -> u64 {
        self.reap_exited();
        for &pid in &self.pids {
            let _ = sys::process::signal_process(pid, StopSignal::Kill);
        }
        for pid in self.pids.drain(..) {
            if let Ok(Some(exit)) = sys::process::reap(pid, true) {
                self.reaped_cpu_ns += exit.cpu_ns;
            }
        }
        self.reaped_cpu_ns
    }
}

impl Children {
    /// Waits up to `grace` for the workers to end by themselves (the caller has asked them
    /// to), reaping them as they do, then kills the rest; returns the CPU time of all.
    pub fn stop_within(&mut self, grace: Duration) -> u64 {
        let deadline = Instant::now() + grace;
        loop {
            self.reap_exited();
            if self.pids.is_empty() || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        self.stop()
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_are_counted_stopped_and_reaped() {
        let mut children = Children::new("messaging:1x1:socket:process");
        for _ in 0..2 {
            children
                .fork(|| {
                    let start = Instant::now();
                    let mut x = 0u64;
                    loop {
                        x = std::hint::black_box(x.wrapping_add(1));
                        if start.elapsed() > Duration::from_secs(60) {
                            return 0;
                        }
                    }
                })
                .unwrap();
        }
        children.fork(|| 3).unwrap();
        assert_eq!(children.len(), 3);
        std::thread::sleep(Duration::from_millis(50));
        children.reap_exited();
        assert_eq!(children.running(), 3, "held at the gate until go");
        children.go();
        std::thread::sleep(Duration::from_millis(100));
        let live = children.cpu_ns();
        assert!(live > 20_000_000, "{live}");
        children.reap_exited();
        assert_eq!(children.running(), 2);
        assert_eq!(children.ended_early(), (1, 1));
        let pids = children.pids.clone();
        let total = children.stop();
        assert!(total >= live, "{total} < {live}");
        assert_eq!(children.running(), 0);
        assert_eq!(children.len(), 3);
        for pid in pids {
            assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
        }
    }

    #[test]
    fn workers_asked_to_stop_end_by_themselves_and_are_placed() {
        let flag = sys::mem::SharedCounters::new(1).unwrap();
        let mut children = Children::new("fork:1");
        let cpu = sys::cpu::online(&sys::Root::host())
            .unwrap()
            .last()
            .unwrap();
        children
            .fork_placed(&CpuSet::from_cpus([cpu]), || {
                if sys::sched::affinity().ok() != Some(CpuSet::from_cpus([cpu])) {
                    return 3;
                }
                while flag.slot(0).load(Ordering::Relaxed) == 0 {
                    std::thread::sleep(Duration::from_millis(1));
                }
                0
            })
            .unwrap();
        children.go();
        std::thread::sleep(Duration::from_millis(50));
        flag.slot(0).store(1, Ordering::Relaxed);
        children.stop_within(Duration::from_secs(5));
        assert_eq!(
            children.ended_early(),
            (1, 0),
            "it ended by itself, with status 0"
        );
    }
}
