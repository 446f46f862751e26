//! A spike to explain, and the milestones of its way from its deadline to the thread running
//! as the trace shows them: the thread's timer armed (where that came past the deadline),
//! fired, the thread woken, switched in; the stretch they cut into phases, and the caveats for
//! those the trace does not show.

use model::explain::{Caveat, Milestones};

use super::owned::{Ev, TaskRef, What};
use super::piece::Phase;
use super::window::Window;

/// A spike to explain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spike {
    /// The CPU.
    pub cpu: u32,
    /// The thread that woke late, when known.
    pub pid: Option<u32>,
    /// Its name, when known.
    pub comm: Option<String>,
    /// The deadline on the trace clock (ns).
    pub deadline_ts: u64,
    /// When the thread read its clock (a run's sample), trace clock; `None` for a trace alone
    /// (the switch-in ends the spike).
    pub end_ts: Option<u64>,
    /// The measurement cycle.
    pub cycle: Option<u64>,
}

/// Events within this much before a milestone's deadline still count for it (timestamps
/// are truncated to microseconds).
pub(super) const SLACK_NS: u64 = 2_000;

/// What the trace shows of the thread's way from its deadline to running.
pub(super) struct Found<'a> {
    /// Its wake-up (`sched_waking`/`sched_wakeup`) at or after the deadline.
    pub(super) woken: Option<&'a Ev>,
    /// Its switch-in after that; its wake-up itself when it was woken while it ran.
    pub(super) switched: Option<&'a Ev>,
    /// When its timer fired (`hrtimer_wakeup` expiry), on the trace clock.
    pub(super) fired: Option<u64>,
    /// When the thread armed that timer, on the trace clock, where it did so past the
    /// deadline: it had not gone back to sleep since its previous wake-up.
    pub(super) armed: Option<u64>,
    /// The thread, as the switch-in (else the wake-up) names it.
    pub(super) thread: Option<TaskRef>,
    /// Whether it was woken in its own context (still running): `switched` is its wake-up.
    pub(super) running: bool,
}

pub(super) fn find_milestones<'a>(
    window: &'a Window,
    on_cpu: &[&'a Ev],
    spike: &Spike,
    clock_offset_ns: i64,
) -> Found<'a> {
    let d = spike.deadline_ts;
    // A timer armed past its deadline ends with a wake-up after the arming: one before it
    // (from I/O, a page fault, a lock the thread slept on meanwhile) is not this timer's.
    let after = own_late_arming(on_cpu, spike, clock_offset_ns).unwrap_or(0);
    let woken = spike.pid.and_then(|pid| {
        window.events.iter().find(|e| {
            e.ts_ns + SLACK_NS >= d
                && e.ts_ns >= after
                && matches!(&e.what, What::Woken { task, .. } if task.pid == pid)
        })
    });
    // A thread woken in its own context (its timer fired while it still ran) was never off
    // the CPU: it runs on from its wake-up, and no later switch-in ends this wake-up.
    let running = woken.filter(|w| spike.pid == Some(w.pid));
    // A run's sample ends when the thread read its clock: a task that preempted it after its
    // first switch-in and before that read (a FIFO hog waking at that moment) held it up as
    // much as one before, so the switch-in that ends the wait is its last before the read.
    // A trace alone ends the spike at the first.
    let switched = running.or_else(|| {
        spike.pid.and_then(|pid| {
            let mut ins = on_cpu.iter().copied().filter(|e| {
                e.ts_ns + SLACK_NS >= d
                    && woken.is_none_or(|w| e.ts_ns >= w.ts_ns)
                    && matches!(&e.what, What::Switch { next, .. } if next.pid == pid)
            });
            let first = ins.next()?;
            Some(match spike.end_ts {
                Some(end) => ins.take_while(|e| e.ts_ns <= end).last().unwrap_or(first),
                None => first,
            })
        })
    });
    let fired = on_cpu
        .iter()
        .copied()
        .filter(|e| e.ts_ns + SLACK_NS >= d && woken.is_none_or(|w| e.ts_ns <= w.ts_ns))
        .filter_map(|e| match &e.what {
            What::TimerFired {
                function, now_ns, ..
            } if function == "hrtimer_wakeup" => {
                Some(now_ns.saturating_add_signed(clock_offset_ns).max(d))
            }
            _ => None,
        })
        .next_back()
        .filter(|_| woken.is_some() || spike.pid.is_none());
    let armed = fired.and_then(|f| armed_late(on_cpu, spike, f, clock_offset_ns));
    let thread = switched
        .and_then(|e| match &e.what {
            What::Switch { next, .. } => Some(next.clone()),
            _ => None,
        })
        .or_else(|| {
            woken.and_then(|e| match &e.what {
                What::Woken { task, .. } => Some(task.clone()),
                _ => None,
            })
        });
    Found {
        woken,
        switched,
        fired,
        armed,
        thread,
        running: running.is_some(),
    }
}

/// When the thread armed the timer for this very deadline after the deadline had passed: the
/// first `hrtimer_start` of `hrtimer_wakeup` by the thread past the deadline whose expiry is
/// the deadline (within the timestamps' truncation).
fn own_late_arming(on_cpu: &[&Ev], spike: &Spike, clock_offset_ns: i64) -> Option<u64> {
    let (pid, d) = (spike.pid?, spike.deadline_ts);
    on_cpu
        .iter()
        .find(|e| {
            e.pid == pid
                && e.ts_ns > d.saturating_add(SLACK_NS)
                && matches!(&e.what, What::TimerArmed { function, expires_ns, .. }
                    if function == "hrtimer_wakeup"
                        && expires_ns.saturating_add_signed(clock_offset_ns).abs_diff(d) <= SLACK_NS)
        })
        .map(|e| e.ts_ns)
}

/// When the thread armed the timer that fired at `fired`, where it did so past the timer's
/// expiry: the last `hrtimer_start` of `hrtimer_wakeup` by the thread after the deadline and
/// by `fired` whose expiry had passed as it was armed.
fn armed_late(on_cpu: &[&Ev], spike: &Spike, fired: u64, clock_offset_ns: i64) -> Option<u64> {
    let (pid, d) = (spike.pid?, spike.deadline_ts);
    on_cpu
        .iter()
        .filter(|e| e.pid == pid && e.ts_ns > d.saturating_add(SLACK_NS) && e.ts_ns <= fired)
        .filter(|e| match &e.what {
            What::TimerArmed {
                function,
                expires_ns,
                ..
            } => {
                function == "hrtimer_wakeup"
                    && expires_ns.saturating_add_signed(clock_offset_ns) < e.ts_ns
            }
            _ => false,
        })
        .map(|e| e.ts_ns)
        .next_back()
}

/// The spike's stretch on the trace clock, cut at the milestones: each clamped into
/// `[deadline, end]` and after the one before.
pub(super) struct Times {
    pub(super) deadline: u64,
    pub(super) armed: u64,
    pub(super) fired: u64,
    pub(super) woken: u64,
    pub(super) switched: u64,
    pub(super) end: u64,
}

impl Times {
    pub(super) fn of(spike: &Spike, found: &Found, on_cpu: &[&Ev]) -> Times {
        let d = spike.deadline_ts;
        let end = spike
            .end_ts
            .or(found.switched.map(|e| e.ts_ns))
            .unwrap_or_else(|| on_cpu.last().map_or(d, |e| e.ts_ns))
            .max(d);
        let switched = found.switched.map_or(end, |e| e.ts_ns.clamp(d, end));
        let woken = found.woken.map_or(d, |e| e.ts_ns.clamp(d, switched));
        let fired = found.fired.map_or(woken.min(d), |f| f.clamp(d, woken));
        let armed = found.armed.map_or(d, |a| a.clamp(d, fired));
        Times {
            deadline: d,
            armed,
            fired,
            woken,
            switched,
            end,
        }
    }

    pub(super) fn latency(&self) -> u64 {
        self.end - self.deadline
    }

    /// The phase a moment falls in.
    pub(super) fn phase_at(&self, ts: u64) -> Phase {
        if ts < self.armed {
            Phase::Unarmed
        } else if ts < self.fired {
            Phase::BeforeFire
        } else if ts < self.woken {
            Phase::Firing
        } else if ts < self.switched {
            Phase::Waiting
        } else {
            Phase::Returning
        }
    }

    /// Offsets from the deadline of the milestones the trace shows.
    pub(super) fn milestones(&self, found: &Found) -> Milestones {
        let d = self.deadline;
        Milestones {
            timer_armed_ns: found.armed.map(|_| self.armed - d),
            timer_fired_ns: found.fired.map(|_| self.fired - d),
            woken_ns: found.woken.map(|_| self.woken - d),
            switched_in_ns: found.switched.map(|_| self.switched - d),
            woken_running: found.running,
        }
    }
}

/// What limits the milestones: each one the trace does not show.
pub(super) fn milestone_caveats(found: &Found, on_cpu: &[&Ev], caveats: &mut Vec<Caveat>) {
    if found.fired.is_none() {
        let any_expiry = on_cpu
            .iter()
            .any(|e| matches!(e.what, What::TimerFired { .. }));
        caveats.push(if any_expiry {
            Caveat::NoTimerExpiry
        } else {
            Caveat::NoHrtimerEvents
        });
    }
    if found.woken.is_none() {
        caveats.push(Caveat::NoWakeup);
    }
    if found.switched.is_none() {
        caveats.push(Caveat::NoSwitchIn);
    }
}
