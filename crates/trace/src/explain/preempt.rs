//! Real-time tasks preempted while running: switched out still runnable (`R`, `R+`) and
//! switched back in later. Such a delay is no timer wake-up's (the task was not sleeping), so
//! the explanation of wake-ups does not see it; a measuring thread preempted between two
//! sleeps shows it as an overrun. The first pass keeps the longest, with what preempted it, so
//! `explain` can say so beside the wake-ups it explains.

use rustc_hash::FxHashMap as HashMap;

use crate::event::Task;

use super::switches::Comm;

/// One preemption of a real-time task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preemption {
    /// The task.
    pub pid: u32,
    /// Its name.
    pub comm: String,
    /// Its kernel priority (below 100).
    pub prio: i32,
    /// The CPU it was preempted on.
    pub cpu: u32,
    /// Trace time it was switched out.
    pub from_ts: u64,
    /// Switched out to switched back in, ns.
    pub delay_ns: u64,
    /// The task switched in instead: name, pid, kernel priority.
    pub by: (String, u32, i32),
}

/// Who was switched out, and for whom: name, pid, kernel priority of each.
#[derive(Clone, Copy)]
struct Open {
    ts: u64,
    cpu: u32,
    task: (Comm, i32),
    by: (Comm, u32, i32),
}

/// Preempted real-time tasks not yet back, and the longest preemption so far.
#[derive(Default)]
pub(super) struct Preemptions {
    /// By pid.
    open: HashMap<u32, Open>,
    pub(super) longest: Option<Preemption>,
}

impl Preemptions {
    /// `prev` was switched out in `state` on `cpu` at `ts` for `next`.
    pub(super) fn switched_out(
        &mut self,
        (ts, cpu): (u64, u32),
        prev: &Task<'_>,
        state: &str,
        next: &Task<'_>,
    ) {
        if !(state.starts_with('R') && (0..100).contains(&prev.prio)) {
            return;
        }
        let open = Open {
            ts,
            cpu,
            task: (Comm::new(prev.comm), prev.prio),
            by: (Comm::new(next.comm), next.pid, next.prio),
        };
        self.open.insert(prev.pid, open);
    }

    /// `pid` was switched in at `ts`: its preemption, if one was open, ends.
    pub(super) fn switched_in(&mut self, pid: u32, ts: u64) {
        let Some(o) = self.open.remove(&pid) else {
            return;
        };
        let delay_ns = ts.saturating_sub(o.ts);
        if self
            .longest
            .as_ref()
            .is_some_and(|l| l.delay_ns >= delay_ns)
        {
            return;
        }
        self.longest = Some(Preemption {
            pid,
            comm: o.task.0.as_str().to_string(),
            prio: o.task.1,
            cpu: o.cpu,
            from_ts: o.ts,
            delay_ns,
            by: (o.by.0.as_str().to_string(), o.by.1, o.by.2),
        });
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_longest_preemption_of_a_real_time_task_is_kept_with_what_preempted_it() {
        let text = "\
      rt-500     [001] d..2.   100.000100: sched_switch: prev_comm=rt prev_pid=500 prev_prio=49 prev_state=R+ ==> next_comm=hog next_pid=600 next_prio=1
     hog-600     [001] d..2.   100.002100: sched_switch: prev_comm=hog prev_pid=600 prev_prio=1 prev_state=S ==> next_comm=rt next_pid=500 next_prio=49
      rt-500     [001] d..2.   100.003000: sched_switch: prev_comm=rt prev_pid=500 prev_prio=49 prev_state=R ==> next_comm=hog next_pid=600 next_prio=1
     hog-600     [001] d..2.   100.003500: sched_switch: prev_comm=hog prev_pid=600 prev_prio=1 prev_state=S ==> next_comm=rt next_pid=500 next_prio=49
      rt-500     [001] d..2.   100.004000: sched_switch: prev_comm=rt prev_pid=500 prev_prio=49 prev_state=S ==> next_comm=app next_pid=700 next_prio=120
     app-700     [001] d..2.   100.004100: sched_switch: prev_comm=app prev_pid=700 prev_prio=120 prev_state=R+ ==> next_comm=hog next_pid=600 next_prio=1
     hog-600     [001] d..2.   100.090000: sched_switch: prev_comm=hog prev_pid=600 prev_prio=1 prev_state=S ==> next_comm=rt next_pid=500 next_prio=49
      rt-500     [001] d..2.   100.090100: sched_switch: prev_comm=rt prev_pid=500 prev_prio=49 prev_state=S ==> next_comm=app next_pid=700 next_prio=120
";
        let s = super::super::scan(text.as_bytes()).unwrap();
        // rt's 2 ms preemption, not its 0.5 ms one, its sleep (S) or app's (a normal task).
        let p = s.longest_preemption.unwrap();
        assert_eq!((p.pid, p.comm.as_str(), p.prio, p.cpu), (500, "rt", 49, 1));
        assert_eq!((p.from_ts, p.delay_ns), (100_000_100_000, 2_000_000));
        assert_eq!(p.by, ("hog".to_string(), 600, 1));
    }
}
