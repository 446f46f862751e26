//! One CPU's tasks through each policy's tests, into the report's `PolicyAnalysis`: the order
//! of the tests, which apply, what each says in words, and the suggestion when the given
//! priorities fail.

use std::collections::BTreeMap;

use model::Nanos;
use model::sched::{
    DeadlineBandwidth, DemandFailure, Placed, PolicyAnalysis, SchedPolicy, Suggestion, Task,
    TaskVerdict, Test, Verdict,
};

use crate::edf::{self, Demand};
use crate::fp::{self, Response};
use crate::{Budget, Work, combine};

/// The tasks by CPU: the CPU-less ones first, then by CPU number; file order within.
pub(crate) fn group(tasks: &[Task]) -> Vec<(Option<u32>, Vec<&Task>)> {
    let mut by: BTreeMap<Option<u32>, Vec<&Task>> = BTreeMap::new();
    for t in tasks {
        by.entry(t.cpu).or_default().push(t);
    }
    by.into_iter().collect()
}

/// The priority order of `tasks`: given priorities highest first (ties in file order, marked),
/// or rate-monotonic order.
fn given_order(tasks: &[&Task], works: &[Work]) -> (Vec<usize>, Vec<bool>, bool) {
    if tasks.iter().all(|t| t.priority.is_some()) {
        let mut order: Vec<usize> = (0..tasks.len()).collect();
        order.sort_by_key(|&i| (std::cmp::Reverse(tasks[i].priority), i));
        let ties = order
            .iter()
            .enumerate()
            .map(|(k, &i)| k > 0 && tasks[order[k - 1]].priority == tasks[i].priority)
            .collect();
        (order, ties, true)
    } else {
        (fp::rate_monotonic(works), vec![false; tasks.len()], false)
    }
}

/// SCHED_FIFO: utilisation, Liu–Layland, hyperbolic, then exact response times.
pub(crate) fn fixed_priority(
    tasks: &[&Task],
    bandwidth: Option<&DeadlineBandwidth>,
    budget: &mut Budget,
    notes: &mut Vec<String>,
) -> PolicyAnalysis {
    let works: Vec<Work> = tasks.iter().map(|t| Work::of(t)).collect();
    let (order, ties, given) = given_order(tasks, &works);
    let u = edf::utilisation(&works);
    let mut tests = vec![utilisation_test(u)];
    tests.extend(bound_tests(tasks, &works, &order, u));
    let responses = fp::analyse_order(&works, &order, &ties, budget);
    let rta = combine(responses.iter().map(|r| match r {
        Response::Within(_) => Verdict::Schedulable,
        Response::Exceeds => Verdict::NotSchedulable,
        Response::Undecided => Verdict::Undecided,
    }));
    let misses: Vec<&str> = order
        .iter()
        .filter(|&&i| responses[i] == Response::Exceeds)
        .map(|&i| tasks[i].name.as_str())
        .collect();
    tests.push(Test {
        name: "response-time".into(),
        verdict: rta,
        note: match rta {
            Verdict::Schedulable => "every worst-case response time is within its deadline".into(),
            Verdict::NotSchedulable => format!("misses its deadline: {}", misses.join(", ")),
            _ => "the iteration did not settle within rtlab's bound of steps".into(),
        },
    });
    let assigned = if given {
        None
    } else {
        fp::fifo_priorities(order.len())
    };
    let verdicts = order
        .iter()
        .enumerate()
        .map(|(rank, &i)| {
            let response = match responses[i] {
                Response::Within(r) => Some(r),
                _ => None,
            };
            TaskVerdict {
                name: tasks[i].name.clone(),
                priority: tasks[i]
                    .priority
                    .or_else(|| assigned.as_ref().map(|p| p[rank])),
                response_ns: response,
                slack_ns: response.map(|r| works[i].d - r),
                verdict: match responses[i] {
                    Response::Within(_) => Verdict::Schedulable,
                    Response::Exceeds => Verdict::NotSchedulable,
                    Response::Undecided => Verdict::Undecided,
                },
            }
        })
        .collect();
    note_ties(tasks, &order, &ties, notes);
    // RT throttling stops the tasks whatever their response times say.
    let throttle = crate::throttle::test(&works, bandwidth);
    let verdict = combine([
        rta,
        throttle
            .as_ref()
            .map_or(Verdict::NotApplicable, |t| t.verdict),
    ]);
    tests.extend(throttle);
    let mut analysis = PolicyAnalysis {
        policy: SchedPolicy::Fifo,
        verdict,
        tests,
        tasks: verdicts,
        suggestion: None,
        first_failure: None,
    };
    if rta == Verdict::NotSchedulable {
        suggest(tasks, &works, &order, &mut analysis, budget);
    }
    analysis
}

/// Notes the tasks that share a priority with the task before them.
fn note_ties(tasks: &[&Task], order: &[usize], ties: &[bool], notes: &mut Vec<String>) {
    let tied: Vec<&str> = order
        .iter()
        .zip(ties)
        .filter(|(_, t)| **t)
        .map(|(&i, _)| tasks[i].name.as_str())
        .collect();
    if !tied.is_empty() {
        notes.push(format!(
            "{} share a priority with the task before them: tasks of equal priority are each \
             analysed as if the others always ran first (SCHED_FIFO runs them in arrival order)",
            tied.join(", ")
        ));
    }
}

/// Utilisation over one: a necessary condition for every policy on one CPU.
fn utilisation_test(u: f64) -> Test {
    if u > 1.0 {
        Test {
            name: "utilisation".into(),
            verdict: Verdict::NotSchedulable,
            note: format!("U = {u:.4} > 1: the CPU is overloaded under any policy"),
        }
    } else {
        Test {
            name: "utilisation".into(),
            verdict: Verdict::Inconclusive,
            note: format!("U = {u:.4} <= 1: necessary, not sufficient"),
        }
    }
}

/// Liu–Layland and the hyperbolic bound, where their conditions hold.
fn bound_tests(tasks: &[&Task], works: &[Work], order: &[usize], u: f64) -> Vec<Test> {
    let why_not = if works.iter().any(|w| w.d != w.t) {
        Some("a deadline is shorter than its period")
    } else if works.iter().any(|w| w.j != 0 || w.b != 0) {
        Some("a task has release jitter or blocking")
    } else if order.windows(2).any(|p| works[p[0]].t > works[p[1]].t) {
        Some("the priorities are not in rate-monotonic order")
    } else {
        None
    };
    if let Some(why) = why_not {
        return ["liu-layland", "hyperbolic"]
            .iter()
            .map(|name| Test {
                name: (*name).into(),
                verdict: Verdict::NotApplicable,
                note: format!("the bound assumes implicit deadlines, no jitter or blocking and rate-monotonic priorities: {why}"),
            })
            .collect();
    }
    let n = tasks.len();
    let ll = fp::liu_layland_bound(n);
    let hb = fp::hyperbolic_product(works);
    let pass = |ok: bool| {
        if ok {
            Verdict::Schedulable
        } else {
            Verdict::Inconclusive
        }
    };
    vec![
        Test {
            name: "liu-layland".into(),
            verdict: pass(u <= ll),
            note: format!("U = {u:.4} against n(2^(1/n) - 1) = {ll:.4} for n = {n}"),
        },
        Test {
            name: "hyperbolic".into(),
            verdict: pass(hb <= 2.0),
            note: format!("product of (Ui + 1) = {hb:.4} against 2"),
        },
    ]
}

/// A deadline-monotonic order, else Audsley's, when either passes; else the finding that none
/// does.
fn suggest(
    tasks: &[&Task],
    works: &[Work],
    given: &[usize],
    analysis: &mut PolicyAnalysis,
    budget: &mut Budget,
) {
    let dm = fp::deadline_monotonic(works);
    let distinct = vec![false; works.len()];
    let (method, order) = if dm != given
        && fp::analyse_order(works, &dm, &distinct, budget)
            .iter()
            .all(|r| matches!(r, Response::Within(_)))
    {
        ("deadline-monotonic", dm)
    } else {
        match fp::audsley(works, budget) {
            Ok(Some(order)) => ("audsley", order),
            Ok(None) => {
                analysis.tests.push(Test {
                    name: "priority-order".into(),
                    verdict: Verdict::NotSchedulable,
                    note: "no fixed-priority order meets every deadline (Audsley's assignment, \
                           exact for this analysis): shorten a WCET, lengthen a period, or move \
                           a task to another CPU"
                        .into(),
                });
                return;
            }
            Err(()) => return,
        }
    };
    let Some(priorities) = fp::fifo_priorities(order.len()) else {
        return;
    };
    analysis.suggestion = Some(Suggestion {
        method: method.into(),
        order: order
            .iter()
            .zip(priorities)
            .map(|(&i, priority)| Placed {
                name: tasks[i].name.clone(),
                priority,
            })
            .collect(),
    });
}

/// EDF on one CPU (`policy` Edf, C = WCET) or over SCHED_DEADLINE reservations (C = runtime).
pub(crate) fn edf(
    tasks: &[&Task],
    policy: SchedPolicy,
    work: fn(&Task) -> Work,
    budget: &mut Budget,
) -> PolicyAnalysis {
    let works: Vec<Work> = tasks.iter().map(|t| work(t)).collect();
    let u = edf::utilisation(&works);
    let implicit = works.iter().all(|w| w.d == w.t && w.j == 0 && w.b == 0);
    let at_most_one = edf::utilisation_at_most_one(&works);
    let mut tests = Vec::new();
    let mut failure = None;
    let verdict = if !at_most_one {
        tests.push(utilisation_test(u.max(1.0 + f64::EPSILON)));
        if let Demand::Exceeded { t, demand, first } = edf::overload(&works, budget) {
            failure = Some(DemandFailure {
                t_ns: t,
                demand_ns: demand,
                first,
            });
        }
        Verdict::NotSchedulable
    } else if implicit {
        tests.push(Test {
            name: "utilisation".into(),
            verdict: Verdict::Schedulable,
            note: format!("U = {u:.4} <= 1 with deadlines equal to periods: exact for EDF"),
        });
        Verdict::Schedulable
    } else {
        tests.push(utilisation_test(u));
        let (verdict, note) = match edf::processor_demand(&works, budget) {
            Demand::Met { l } => (
                Verdict::Schedulable,
                format!("demand within every interval up to L = {}", Nanos(l)),
            ),
            Demand::Exceeded { t, demand, first } => {
                failure = Some(DemandFailure {
                    t_ns: t,
                    demand_ns: demand,
                    first,
                });
                (
                    Verdict::NotSchedulable,
                    format!(
                        "{} interval [0, {t} ns) demands {demand} ns",
                        if first {
                            "the first failing"
                        } else {
                            "a failing"
                        }
                    ),
                )
            }
            Demand::Undecided => (
                Verdict::Undecided,
                "the demand test did not finish within rtlab's bound of steps".into(),
            ),
        };
        tests.push(Test {
            name: "processor-demand".into(),
            verdict,
            note,
        });
        verdict
    };
    PolicyAnalysis {
        policy,
        verdict,
        tests,
        tasks: tasks
            .iter()
            .map(|t| TaskVerdict {
                name: t.name.clone(),
                priority: None,
                response_ns: None,
                slack_ns: None,
                verdict,
            })
            .collect(),
        suggestion: None,
        first_failure: failure,
    }
}
