//! What an interrupt handler did inside its time, as the trace shows it: the hrtimers it
//! expired (`hrtimer_expire_entry` while the handler is open), the tasks woken there
//! (`sched_waking`), the softirqs it raised. A long `local_timer` interrupt is rarely one slow
//! thing: under a timer storm it is dozens of expiries, each waking an ordinary task, run in
//! hard interrupt context ahead of the real-time thread. Decomposing the handler names that
//! pattern (the RT-Summit 2017 talk's "concurrent hrtimer expirations from low-priority
//! threads"); `report::story` says it and its fix in words.

use std::collections::BTreeMap;

use model::explain::{Agent, HandlerInside, HandlerPattern, WokenTask};

use super::owned::{TaskRef, What};

/// Expiries of non-real-time tasks' timers in one handler from which the handler counts as a
/// timer storm.
const STORM_EXPIRIES: u32 = 3;

/// One open handler's work so far.
#[derive(Clone, Debug, Default)]
struct Frame {
    expiries: u32,
    callbacks: BTreeMap<String, u32>,
    woken: BTreeMap<(u32, String, i32), u32>,
    raised: Vec<String>,
}

/// The handlers open on the CPU (innermost last) and what the closed ones did, by handler.
#[derive(Debug, Default)]
pub(super) struct Inside {
    open: Vec<(Agent, Frame)>,
    done: BTreeMap<Agent, Frame>,
}

impl Inside {
    /// Handler `handler` started.
    pub(super) fn enter(&mut self, handler: &Agent) {
        self.open.push((handler.clone(), Frame::default()));
    }

    /// An event inside the innermost open handler, if one is open.
    pub(super) fn note(&mut self, what: &What) {
        let Some((_, f)) = self.open.last_mut() else {
            return;
        };
        match what {
            What::TimerFired { function, .. } => {
                f.expiries = f.expiries.saturating_add(1);
                bump(f.callbacks.entry(function.clone()).or_default());
            }
            What::Woken { task, .. } => {
                bump(f.woken.entry(key(task)).or_default());
            }
            What::SoftRaise(name) if !f.raised.contains(name) => f.raised.push(name.clone()),
            _ => {}
        }
    }

    /// The innermost handler ended at `at`; its work counts when it ran past `from` (the
    /// deadline: a handler over before it delayed nothing).
    pub(super) fn leave(&mut self, at: u64, from: u64) {
        if let Some((handler, f)) = self.open.pop()
            && at > from
        {
            self.keep(handler, f);
        }
    }

    /// The handlers still open at the end of the spike.
    pub(super) fn close_all(&mut self) {
        while let Some((handler, f)) = self.open.pop() {
            self.keep(handler, f);
        }
    }

    fn keep(&mut self, handler: Agent, f: Frame) {
        let into = self.done.entry(handler).or_default();
        into.expiries = into.expiries.saturating_add(f.expiries);
        for (k, n) in f.callbacks {
            let e = into.callbacks.entry(k).or_default();
            *e = e.saturating_add(n);
        }
        for (k, n) in f.woken {
            let e = into.woken.entry(k).or_default();
            *e = e.saturating_add(n);
        }
        for r in f.raised {
            if !into.raised.contains(&r) {
                into.raised.push(r);
            }
        }
    }

    /// What handler `handler` did, when the trace shows it doing anything; `thread` is the pid
    /// of the thread whose spike this is (its own timer's expiry is not part of a storm).
    pub(super) fn of(&self, handler: &Agent, thread: Option<u32>) -> Option<HandlerInside> {
        let f = self.done.get(handler)?;
        if f.expiries == 0 && f.woken.is_empty() && f.raised.is_empty() {
            return None;
        }
        let mut callbacks: Vec<(String, u32)> =
            f.callbacks.iter().map(|(k, n)| (k.clone(), *n)).collect();
        callbacks.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut woken: Vec<WokenTask> = f
            .woken
            .iter()
            .map(|((pid, comm, prio), n)| WokenTask {
                comm: comm.clone(),
                pid: *pid,
                prio: *prio,
                times: *n,
            })
            .collect();
        woken.sort_by(|a, b| b.times.cmp(&a.times).then(a.pid.cmp(&b.pid)));
        let others = woken
            .iter()
            .filter(|w| Some(w.pid) != thread && w.prio >= 100)
            .map(|w| w.times)
            .fold(0u32, u32::saturating_add);
        let pattern = (others >= STORM_EXPIRIES && f.expiries >= STORM_EXPIRIES)
            .then_some(HandlerPattern::ConcurrentHrtimerExpiries);
        Some(HandlerInside {
            timer_expiries: f.expiries,
            timer_callbacks: callbacks,
            woken,
            softirqs_raised: f.raised.clone(),
            pattern,
        })
    }
}

fn bump(n: &mut u32) {
    *n = n.saturating_add(1);
}

fn key(task: &TaskRef) -> (u32, String, i32) {
    (task.pid, task.comm.clone(), task.prio)
}
