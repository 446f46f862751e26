//! Run delay measured exactly: for chosen threads, every wait from becoming runnable to
//! running, from the scheduler's `sched_wakeup`/`sched_wakeup_new` and `sched_switch` events
//! (what `rtlab inspect --trace` records for the inspected process).
//!
//! A wait starts when the thread is woken (`sched_wakeup`, the task runnable on its target
//! CPU) or preempted (`sched_switch` away from it with `prev_state` `R` or `R+`: it stays
//! runnable), and ends when a `sched_switch` switches to it. This is what the scheduler's
//! `sched_info` accounting adds to `schedstat`'s run delay, one wait at a time. A wait whose
//! start came before the trace began is not counted (its length is unknown); a wake-up of a
//! thread already waiting keeps the earlier start.

use std::collections::BTreeMap;

use crate::event::Kind;

/// One thread's waits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Waits {
    /// Waits completed.
    pub count: u64,
    /// The longest, ns.
    pub max_ns: u64,
    /// All of them together, ns.
    pub total_ns: u64,
    /// Wake-ups seen.
    pub wakeups: u64,
    /// When the wait in progress started.
    since: Option<u64>,
}

/// The waits of a set of threads, fed events in time order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunDelays {
    threads: BTreeMap<u32, Waits>,
}

impl RunDelays {
    /// Follows the threads `tids`.
    pub fn new(tids: impl IntoIterator<Item = u32>) -> RunDelays {
        RunDelays {
            threads: tids.into_iter().map(|t| (t, Waits::default())).collect(),
        }
    }

    /// Takes one event at `ts_ns` (of one trace clock; events in time order).
    pub fn feed(&mut self, ts_ns: u64, kind: &Kind<'_>) {
        match kind {
            Kind::Wakeup { task, .. } => {
                if let Some(w) = self.threads.get_mut(&task.pid) {
                    w.wakeups = w.wakeups.saturating_add(1);
                    w.since.get_or_insert(ts_ns);
                }
            }
            Kind::Switch {
                prev,
                prev_state,
                next,
            } => {
                if let Some(w) = self.threads.get_mut(&prev.pid) {
                    w.since = prev_state.starts_with('R').then_some(ts_ns);
                }
                if let Some(w) = self.threads.get_mut(&next.pid)
                    && let Some(since) = w.since.take()
                {
                    let waited = ts_ns.saturating_sub(since);
                    w.count = w.count.saturating_add(1);
                    w.total_ns = w.total_ns.saturating_add(waited);
                    w.max_ns = w.max_ns.max(waited);
                }
            }
            _ => {}
        }
    }

    /// Each followed thread's waits, by thread id.
    pub fn waits(&self) -> &BTreeMap<u32, Waits> {
        &self.threads
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::decode;
    use crate::line::{Line, parse};

    fn feed_text(d: &mut RunDelays, text: &str) {
        for line in text.lines() {
            if let Line::Event(e) = parse(line) {
                d.feed(e.ts_ns, &decode(&e));
            }
        }
    }

    #[test]
    fn wakeups_and_preemptions_start_waits_switches_end_them() {
        let trace = "\
            rt-4243    [001] d..2.   100.000100: sched_switch: prev_comm=rt prev_pid=4243 prev_prio=50 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0     [001] dNh2.   100.001000: sched_wakeup: comm=rt pid=4243 prio=50 target_cpu=001
          <idle>-0     [001] d..2.   100.001012: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rt next_pid=4243 next_prio=50
            rt-4243    [001] d..2.   100.001500: sched_switch: prev_comm=rt prev_pid=4243 prev_prio=50 prev_state=R+ ==> next_comm=migration/1 next_pid=21 next_prio=0
     migration/1-21    [001] d..2.   100.001620: sched_switch: prev_comm=migration/1 prev_pid=21 prev_prio=0 prev_state=S ==> next_comm=rt next_pid=4243 next_prio=50
            bash-900   [000] d..2.   100.002000: sched_switch: prev_comm=bash prev_pid=900 prev_prio=120 prev_state=R ==> next_comm=other next_pid=901 next_prio=120
";
        let mut d = RunDelays::new([4243]);
        feed_text(&mut d, trace);
        let w = d.waits()[&4243];
        assert_eq!((w.count, w.wakeups), (2, 1));
        assert_eq!(w.max_ns, 120_000);
        assert_eq!(w.total_ns, 12_000 + 120_000);
        assert!(!d.waits().contains_key(&900));
    }

    #[test]
    fn a_wait_begun_before_the_trace_is_not_counted() {
        let mut d = RunDelays::new([7]);
        feed_text(
            &mut d,
            "  x-8 [000] d..2. 5.000000: sched_switch: prev_comm=x prev_pid=8 prev_prio=120 prev_state=S ==> next_comm=t next_pid=7 next_prio=49\n",
        );
        assert_eq!(d.waits()[&7].count, 0);
    }
}
