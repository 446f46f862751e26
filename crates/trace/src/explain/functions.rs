//! The kernel functions the function tracers recorded in each part of an explanation: a call
//! counts for the part whose time it started in (what the CPU was doing then), and a
//! function_graph call's time from call to return with it, however the trace gives it (a
//! leaf's duration, a return matched to its call by depth). A part that was "a task ran with
//! nothing traced" reads differently when the trace shows `copy_page_range` called 300 times in
//! it.

use rustc_hash::FxHashMap as HashMap;

use model::explain::{Agent, FunctionTraced, FunctionsTraced, PartKind};

/// One function's calls and time within a part.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    calls: u64,
    time_ns: Option<u64>,
}

impl Tally {
    fn add_time(&mut self, ns: u64) {
        self.time_ns = Some(self.time_ns.unwrap_or(0).saturating_add(ns));
    }
}

/// Functions a part keeps tallies for at most (a function trace calls thousands of distinct
/// functions; the report names a few).
const MAX_TALLIED: usize = 4096;

/// One part's functions: its kind and what it was, a tally by function, the calls in all.
type PartTallies = ((PartKind, Agent), HashMap<String, Tally>, u64);

/// The functions traced, by part.
#[derive(Debug, Default)]
pub(super) struct Functions {
    parts: Vec<PartTallies>,
    /// function_graph calls not yet returned: (depth, part, function).
    open: Vec<(u32, usize, String)>,
}

impl Functions {
    /// A call of `func` in part `key`: at `depth` of a graph (function_graph), with its whole
    /// duration when it is a leaf.
    pub(super) fn call(
        &mut self,
        key: (PartKind, &Agent),
        func: &str,
        depth: Option<u32>,
        leaf_ns: Option<u64>,
    ) {
        let part = self.part(key);
        let (tallies, calls) = {
            let p = &mut self.parts[part];
            (&mut p.1, &mut p.2)
        };
        *calls = calls.saturating_add(1);
        let full = tallies.len() >= MAX_TALLIED;
        let tally = match tallies.get_mut(func) {
            Some(t) => Some(t),
            None if full => None,
            None => Some(tallies.entry(func.to_string()).or_default()),
        };
        if let Some(t) = tally {
            t.calls = t.calls.saturating_add(1);
            if let Some(ns) = leaf_ns {
                t.add_time(ns);
            }
        }
        if let (Some(d), None) = (depth, leaf_ns) {
            self.open.retain(|(open, _, _)| *open < d);
            self.open.push((d, part, func.to_string()));
        }
    }

    /// function_graph returned from the call at `depth` after `ns`: the time counts for the
    /// call's part (a call made before the explanation's start is not counted).
    pub(super) fn ret(&mut self, depth: u32, ns: Option<u64>) {
        while let Some((d, part, func)) = self.open.pop() {
            if d < depth {
                self.open.push((d, part, func));
                return;
            }
            if d == depth {
                if let (Some(ns), Some(t)) = (ns, self.parts[part].1.get_mut(&func)) {
                    t.add_time(ns);
                }
                return;
            }
        }
    }

    /// What part `kind`/`what` shows, most time then most calls first; `None` when no call
    /// was traced in it.
    pub(super) fn of(&self, kind: PartKind, what: &Agent) -> Option<FunctionsTraced> {
        let (_, tallies, calls) = self
            .parts
            .iter()
            .find(|((k, w), _, _)| *k == kind && w == what)?;
        let mut top: Vec<FunctionTraced> = tallies
            .iter()
            .map(|(name, t)| FunctionTraced {
                name: name.clone(),
                calls: t.calls,
                time_ns: t.time_ns,
            })
            .collect();
        top.sort_by(|a, b| {
            b.time_ns
                .cmp(&a.time_ns)
                .then(b.calls.cmp(&a.calls))
                .then_with(|| a.name.cmp(&b.name))
        });
        top.truncate(FunctionsTraced::MAX);
        Some(FunctionsTraced { calls: *calls, top })
    }

    fn part(&mut self, (kind, what): (PartKind, &Agent)) -> usize {
        if let Some(i) = self
            .parts
            .iter()
            .position(|((k, w), _, _)| *k == kind && w == what)
        {
            return i;
        }
        self.parts
            .push(((kind, what.clone()), HashMap::default(), 0));
        self.parts.len() - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> (PartKind, Agent) {
        (
            PartKind::Irq,
            Agent::Vector {
                name: "local_timer".into(),
            },
        )
    }

    #[test]
    fn a_return_gives_its_call_the_time_and_leaves_count_their_own() {
        let (k, w) = key();
        let mut f = Functions::default();
        f.call((k, &w), "hrtimer_interrupt", Some(0), None);
        f.call((k, &w), "_raw_spin_lock", Some(1), Some(300));
        f.call((k, &w), "__hrtimer_run_queues", Some(1), None);
        f.call((k, &w), "hrtimer_wakeup", Some(2), Some(1_200));
        f.ret(1, Some(2_000));
        f.ret(0, Some(5_000));
        let got = f.of(k, &w).unwrap();
        assert_eq!(got.calls, 4);
        let names: Vec<(&str, u64, Option<u64>)> = got
            .top
            .iter()
            .map(|t| (t.name.as_str(), t.calls, t.time_ns))
            .collect();
        assert_eq!(
            names,
            [
                ("hrtimer_interrupt", 1, Some(5_000)),
                ("__hrtimer_run_queues", 1, Some(2_000)),
                ("hrtimer_wakeup", 1, Some(1_200)),
                ("_raw_spin_lock", 1, Some(300)),
            ]
        );
    }

    #[test]
    fn a_return_whose_call_came_before_is_not_counted() {
        let (k, w) = key();
        let mut f = Functions::default();
        f.call((k, &w), "inner", Some(3), None);
        f.ret(3, Some(100));
        f.ret(2, Some(10_000)); // its call was before the explanation's start
        let got = f.of(k, &w).unwrap();
        assert_eq!(got.top[0].time_ns, Some(100));
        assert_eq!(got.top.len(), 1);
    }

    #[test]
    fn the_function_tracer_counts_calls_most_first() {
        let (k, w) = key();
        let mut f = Functions::default();
        for name in ["a", "b", "b", "c", "b", "a"] {
            f.call((k, &w), name, None, None);
        }
        let got = f.of(k, &w).unwrap();
        let names: Vec<(&str, u64)> = got.top.iter().map(|t| (t.name.as_str(), t.calls)).collect();
        assert_eq!(names, [("b", 3), ("a", 2), ("c", 1)]);
        assert!(f.of(PartKind::Softirq, &w).is_none());
    }
}
