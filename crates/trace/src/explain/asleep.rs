//! When the thread whose spike is explained slept on something else than its timer: from its
//! switch-outs in a sleeping state (`D`: I/O, a page fault, a lock; `S`: a wait) to its next
//! wake-up or switch-in, in the window. A thread that armed its timer only past the deadline
//! spent that time asleep or running its own loop; whatever else ran meanwhile did not delay
//! it.

use super::owned::{Ev, What};
use super::window::Window;

/// The stretches the thread slept, in trace order: `[from, until)` and the state its switch-out
/// printed (empty where the window opened with the thread asleep: its switch-out came before).
#[derive(Debug, Default)]
pub(super) struct Asleep {
    stretches: Vec<(u64, u64, String)>,
}

/// Something the window shows of the thread: it went to sleep, was woken, was switched in.
enum Step<'a> {
    Slept(&'a str),
    Woken,
    Ran,
}

impl Asleep {
    /// The thread `pid`'s sleeps in `window`: its switches on the CPU (`on_cpu`) and its
    /// wake-ups from any CPU. Where the first of them is a wake-up, it slept since before the
    /// window opened.
    pub(super) fn of(window: &Window, on_cpu: &[&Ev], pid: Option<u32>) -> Asleep {
        let Some(pid) = pid else {
            return Asleep::default();
        };
        let mut steps: Vec<(u64, Step<'_>)> = on_cpu
            .iter()
            .filter_map(|e| match &e.what {
                What::Switch {
                    prev, prev_state, ..
                } if prev.pid == pid && !prev_state.starts_with('R') => {
                    Some((e.ts_ns, Step::Slept(prev_state.as_str())))
                }
                What::Switch { next, .. } if next.pid == pid => Some((e.ts_ns, Step::Ran)),
                _ => None,
            })
            .collect();
        steps.extend(window.events.iter().filter_map(|e| match &e.what {
            What::Woken { task, .. } if task.pid == pid => Some((e.ts_ns, Step::Woken)),
            _ => None,
        }));
        // Stable: a switch and a wake-up at the same time keep the switch first.
        steps.sort_by_key(|(ts, _)| *ts);
        let mut out = Asleep::default();
        let mut open: Option<(u64, &str)> = match steps.first() {
            Some((_, Step::Woken)) => Some((window.from_ts, "")),
            _ => None,
        };
        for (ts, step) in steps {
            match step {
                Step::Slept(state) => {
                    if open.is_none() {
                        open = Some((ts, state));
                    }
                }
                Step::Woken | Step::Ran => {
                    if let Some((from, state)) = open.take() {
                        out.stretches.push((from, ts, state.to_string()));
                    }
                }
            }
        }
        if let Some((from, state)) = open {
            out.stretches.push((from, u64::MAX, state.to_string()));
        }
        out
    }

    /// The state the thread slept in at `ts` (empty where unknown), if it was asleep.
    pub(super) fn at(&self, ts: u64) -> Option<&str> {
        self.stretches
            .iter()
            .find(|(from, until, _)| *from <= ts && ts < *until)
            .map(|(_, _, state)| state.as_str())
    }
}
