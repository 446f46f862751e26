//! Earliest-deadline-first on one CPU: the utilisation test where it is exact, the
//! processor-demand test otherwise, and the first interval whose demand exceeds its length.
//!
//! - Liu & Layland 1973: with deadlines equal to periods, EDF meets every deadline iff
//!   U = Σ C/T <= 1.
//! - Baruah, Rosier & Howell, "Algorithms and Complexity Concerning the Preemptive Scheduling
//!   of Periodic, Real-Time Tasks on One Processor", Real-Time Systems 2(4), 1990: with
//!   constrained deadlines, iff U <= 1 and the demand bound h(t) = Σ (floor((t - D)/T) + 1)·C
//!   over D <= t stays <= t at every absolute deadline t below a bound L.
//! - Spuri, "Analysis of Deadline Scheduled Real-Time Systems", INRIA RR-2772, 1996: release
//!   jitter J shortens the deadline to D - J in that test; blocking B (a lock held by a job
//!   with a later deadline, Baker's SRP 1991) adds max{B : D <= t} to the demand at t.
//! - Zhang & Burns, "Schedulability Analysis for Real-Time Systems with EDF Scheduling", IEEE
//!   TC 58(9), 2009: Quick Processor-demand Analysis (QPA) walks the deadlines down from L,
//!   jumping to h(t) when h(t) < t, so only a few points are checked; L is the smaller of
//!   La = max(Dmax, Σ(T - D)·U / (1 - U)) and the synchronous busy period.
//!
//! QPA needs only that the demand is non-decreasing, zero before the first deadline and steps
//! only at deadlines; the blocking term keeps all three.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::{Budget, Work};

/// The processor-demand test's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Demand {
    /// Demand stays within every interval up to the bound `l`.
    Met {
        /// The bound L the test checked up to.
        l: u64,
    },
    /// Demand exceeds the interval `[0, t)`.
    Exceeded {
        /// The interval.
        t: u64,
        /// The demand in it.
        demand: u64,
        /// Whether no shorter interval fails.
        first: bool,
    },
    /// The step budget ran out, or no bound L could be computed.
    Undecided,
}

/// A task's effective deadline: its deadline less its release jitter (`None` when the jitter
/// eats the whole deadline).
fn effective_deadline(w: &Work) -> Option<u64> {
    w.d.checked_sub(w.j).filter(|&d| d > 0)
}

/// Σ C/T.
pub(crate) fn utilisation(tasks: &[Work]) -> f64 {
    tasks.iter().map(|t| t.c as f64 / t.t as f64).sum()
}

/// Whether Σ C/T <= 1, exactly (integer arithmetic over the periods' product where it fits,
/// else floating point with a margin that only refuses).
pub(crate) fn utilisation_at_most_one(tasks: &[Work]) -> bool {
    // Σ C_i/T_i <= 1 ⇔ Σ C_i·(P/T_i) <= P with P = lcm(T): exact when P fits.
    if let Some(p) = lcm_all(tasks.iter().map(|t| t.t), u128::from(u64::MAX) << 32) {
        let total: Option<u128> = tasks.iter().try_fold(0u128, |acc, t| {
            acc.checked_add(u128::from(t.c).checked_mul(p / u128::from(t.t))?)
        });
        if let Some(total) = total {
            return total <= p;
        }
    }
    utilisation(tasks) <= 1.0 - 1e-12
}

/// The least common multiple of `values`, if it stays at or below `cap`.
fn lcm_all(values: impl Iterator<Item = u64>, cap: u128) -> Option<u128> {
    let mut l: u128 = 1;
    for v in values {
        let v = u128::from(v);
        let g = gcd(l, v);
        l = (l / g).checked_mul(v)?;
        if l > cap {
            return None;
        }
    }
    Some(l)
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The demand in `[0, t)`'s closure: jobs released at 0 with effective deadlines at or
/// before `t`, plus the longest blocking of a task whose deadline is at or before `t`.
fn demand(tasks: &[(Work, u64)], t: u64) -> u128 {
    let mut sum: u128 = 0;
    let mut blocking = 0u64;
    for (w, d) in tasks {
        if *d <= t {
            sum += (u128::from((t - d) / w.t) + 1) * u128::from(w.c);
            blocking = blocking.max(w.b);
        }
    }
    sum + u128::from(blocking)
}

/// The largest absolute deadline strictly below `t`, if any.
fn deadline_below(tasks: &[(Work, u64)], t: u64) -> Option<u64> {
    tasks
        .iter()
        .filter(|(_, d)| *d < t)
        .map(|(w, d)| d + (t - 1 - d) / w.t * w.t)
        .max()
}

/// The processor-demand test of `tasks` (which must have U <= 1 for it to end).
pub(crate) fn processor_demand(tasks: &[Work], budget: &mut Budget) -> Demand {
    let mut eff = Vec::with_capacity(tasks.len());
    for w in tasks {
        match effective_deadline(w) {
            Some(d) => eff.push((*w, d)),
            // Released after its deadline: fails at once; the first interval is its deadline.
            None => {
                return Demand::Exceeded {
                    t: w.d,
                    demand: w.c.saturating_add(w.j),
                    first: true,
                };
            }
        }
    }
    let Some(l) = bound(&eff, budget) else {
        return Demand::Undecided;
    };
    let d_min = eff.iter().map(|(_, d)| *d).min().unwrap_or(0);
    // QPA: from the last deadline below L downwards.
    let Some(mut t) = deadline_below(&eff, l.saturating_add(1)) else {
        return Demand::Met { l };
    };
    loop {
        if !budget.take(eff.len() as u64) {
            return Demand::Undecided;
        }
        let h = demand(&eff, t);
        if h > u128::from(t) {
            return first_failure(&eff, t, h, budget);
        }
        if h <= u128::from(d_min) {
            return Demand::Met { l };
        }
        let h = h as u64;
        t = if h < t {
            h
        } else {
            match deadline_below(&eff, t) {
                Some(d) => d,
                None => return Demand::Met { l },
            }
        };
    }
}

/// The bound L below which a failure must show (Zhang & Burns 2009), or `None`.
fn bound(eff: &[(Work, u64)], budget: &mut Budget) -> Option<u64> {
    let works: Vec<Work> = eff.iter().map(|(w, _)| *w).collect();
    let d_max = eff.iter().map(|(_, d)| *d).max().unwrap_or(0);
    let b_max = eff.iter().map(|(w, _)| w.b).max().unwrap_or(0);
    let u = utilisation(&works);
    let la = if u < 1.0 - 1e-9 {
        let slack: f64 = eff
            .iter()
            .map(|(w, d)| (w.t - d) as f64 * (w.c as f64 / w.t as f64))
            .sum::<f64>()
            + b_max as f64;
        // Rounded up, with room for the floating-point error: L only has to be an upper bound.
        let la = (slack / (1.0 - u)) * (1.0 + 1e-9) + 2.0;
        (la < u64::MAX as f64 / 2.0).then(|| (la.ceil() as u64).max(d_max))
    } else {
        None
    };
    if la.is_none() {
        // U is 1 (the caller checked it is not more): the busy period need not end, but the
        // demand repeats every hyperperiod H while time advances by H (Baruah, Rosier &
        // Howell 1990), so (0, H + Dmax] holds every failure there is.
        let h = lcm_all(works.iter().map(|x| x.t), u128::from(u64::MAX / 2))?;
        return u64::try_from(h).ok()?.checked_add(d_max);
    }
    // The synchronous busy period: w = B + Σ ceil(w/T)·C, from Σ C upwards.
    let own: u128 = u128::from(b_max);
    let mut w: u128 = own + works.iter().map(|x| u128::from(x.c)).sum::<u128>();
    let cap = la.map_or(u128::from(u64::MAX), u128::from);
    let lb = loop {
        if w > cap || !budget.take(works.len() as u64) {
            break None;
        }
        let next = own
            + works
                .iter()
                .map(|x| w.div_ceil(u128::from(x.t)) * u128::from(x.c))
                .sum::<u128>();
        if next == w {
            break Some(w as u64);
        }
        w = next;
    };
    match (la, lb) {
        (Some(a), Some(b)) => Some(a.min(b.max(d_max))),
        (a, _) => a,
    }
}

/// The smallest failing interval up to `t_fail` (where QPA found demand `h_fail`), walking
/// the deadlines upwards while the budget lasts; otherwise `t_fail` itself, marked not first.
fn first_failure(eff: &[(Work, u64)], t_fail: u64, h_fail: u128, budget: &mut Budget) -> Demand {
    let mut next: BinaryHeap<Reverse<(u64, usize)>> = eff
        .iter()
        .enumerate()
        .map(|(i, (_, d))| Reverse((*d, i)))
        .collect();
    while let Some(Reverse((t, i))) = next.pop() {
        if t > t_fail || !budget.take(eff.len() as u64) {
            break;
        }
        // Several tasks may share this deadline: check each point once.
        while next.peek().is_some_and(|Reverse((u, _))| *u == t) {
            if let Some(Reverse((_, j))) = next.pop() {
                push_next(&mut next, eff, t, j);
            }
        }
        push_next(&mut next, eff, t, i);
        let h = demand(eff, t);
        if h > u128::from(t) {
            return Demand::Exceeded {
                t,
                demand: clamp(h),
                first: true,
            };
        }
    }
    Demand::Exceeded {
        t: t_fail,
        demand: clamp(h_fail),
        first: false,
    }
}

fn push_next(heap: &mut BinaryHeap<Reverse<(u64, usize)>>, eff: &[(Work, u64)], t: u64, i: usize) {
    if let Some(n) = t.checked_add(eff[i].0.t) {
        heap.push(Reverse((n, i)));
    }
}

fn clamp(v: u128) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}

/// For a set with U > 1: the first interval whose demand exceeds it, searched upwards within
/// the budget (it exists: demand grows faster than time).
pub(crate) fn overload(tasks: &[Work], budget: &mut Budget) -> Demand {
    let eff: Vec<(Work, u64)> = tasks
        .iter()
        .map(|w| (*w, effective_deadline(w).unwrap_or(1)))
        .collect();
    match first_failure(&eff, u64::MAX, 0, budget) {
        Demand::Exceeded {
            first: true,
            t,
            demand,
        } => Demand::Exceeded {
            t,
            demand,
            first: true,
        },
        _ => Demand::Undecided,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(c: u64, d: u64, t: u64) -> Work {
        Work {
            c,
            t,
            d,
            j: 0,
            b: 0,
        }
    }

    fn check(tasks: &[Work]) -> Demand {
        processor_demand(tasks, &mut Budget::new(10_000_000))
    }

    #[test]
    fn implicit_deadlines_up_to_full_utilisation_pass() {
        assert!(utilisation_at_most_one(&[w(2, 4, 4), w(3, 6, 6)]));
        assert!(!utilisation_at_most_one(&[
            w(2, 4, 4),
            w(3, 6, 6),
            w(1, 1000, 1000)
        ]));
        // U exactly 1 (1/3 + 2/3) is schedulable by EDF; the demand test agrees.
        assert!(utilisation_at_most_one(&[w(1, 3, 3), w(4, 6, 6)]));
        assert!(matches!(
            check(&[w(1, 3, 3), w(4, 6, 6)]),
            Demand::Met { .. }
        ));
    }

    /// Checked by hand: (C, D, T) = (2, 4, 6), (2, 5, 8), (3, 7, 9); U = 0.9167, L = 25.
    /// h(4) = 2, h(5) = 4, h(7) = 7, h(10) = 9, h(13) = 11, h(16) = 16, h(21) = 18,
    /// h(22) = 20, h(25) = 23: never above t (and exactly t at 7 and 16).
    #[test]
    fn a_constrained_set_within_its_demand() {
        assert!(matches!(
            check(&[w(2, 4, 6), w(2, 5, 8), w(3, 7, 9)]),
            Demand::Met { .. }
        ));
    }

    /// The last task's deadline one unit earlier: h(6) = 2 + 2 + 3 = 7 > 6, and nothing
    /// fails before (h(4) = 2, h(5) = 4).
    #[test]
    fn the_first_failing_interval_is_named() {
        let d = check(&[w(2, 4, 6), w(2, 5, 8), w(3, 6, 9)]);
        assert_eq!(
            d,
            Demand::Exceeded {
                t: 6,
                demand: 7,
                first: true
            }
        );
    }

    /// U = 0.4 + 0.4615 = 0.86, yet with the second deadline at 7: h(5) = 2, h(7) = 8 > 7.
    /// With implicit deadlines (2, 5, 5), (4, 13, 13) the same shape passes.
    #[test]
    fn constrained_deadlines_fail_where_utilisation_passes() {
        let set = [w(2, 5, 5), w(6, 7, 13)];
        assert!(utilisation(&set) < 0.9);
        assert_eq!(
            check(&set),
            Demand::Exceeded {
                t: 7,
                demand: 8,
                first: true
            }
        );
        let set = [w(2, 5, 5), w(4, 13, 13)];
        assert!(matches!(check(&set), Demand::Met { .. }));
    }

    #[test]
    fn jitter_shortens_the_deadline_and_blocking_adds_demand() {
        // (2, 4, 6) alone: fine; with jitter 3 the effective deadline is 1 < C: h(1) = 2 > 1.
        let jittery = Work { j: 3, ..w(2, 4, 6) };
        assert_eq!(
            check(&[jittery]),
            Demand::Exceeded {
                t: 1,
                demand: 2,
                first: true
            }
        );
        // Blocking 3 on a (2, 4, 6) task: h(4) = 2 + 3 = 5 > 4.
        let blocked = Work { b: 3, ..w(2, 4, 6) };
        assert_eq!(
            check(&[blocked, w(1, 10, 10)]),
            Demand::Exceeded {
                t: 4,
                demand: 5,
                first: true
            }
        );
        let blocked = Work { b: 2, ..w(2, 4, 6) };
        assert!(matches!(
            check(&[blocked, w(1, 10, 10)]),
            Demand::Met { .. }
        ));
    }

    #[test]
    fn overload_names_where_it_shows() {
        // U = 1.25: h(5) = 5, h(10) = 10, h(13) = 10 + 5 = 15 > 13.
        let set = [w(5, 5, 8), w(5, 10, 8)];
        assert!(!utilisation_at_most_one(&set));
        assert_eq!(
            overload(&set, &mut Budget::new(1_000_000)),
            Demand::Exceeded {
                t: 13,
                demand: 15,
                first: true
            }
        );
    }

    /// U exactly 1 with blocking: the busy period never ends, the hyperperiod bounds the
    /// search. (1, 2, 2) and (2, 4, 4): h(2) = 1, h(4) = 4; with blocking 1 on the first task
    /// h(2) = 2 ≤ 2, h(4) = 5 > 4.
    #[test]
    fn full_utilisation_with_blocking_ends() {
        let set = [Work { b: 1, ..w(1, 2, 2) }, w(2, 4, 4)];
        let mut budget = Budget::new(1_000_000);
        assert_eq!(
            processor_demand(&set, &mut budget),
            Demand::Exceeded {
                t: 4,
                demand: 5,
                first: true
            }
        );
        // Jitter 1 leaves the first task 1 of its 2: h(t) = t at 1, 5, 9, …, never above.
        let set = [Work { j: 1, ..w(1, 2, 2) }, w(2, 4, 4)];
        assert!(matches!(
            processor_demand(&set, &mut Budget::new(1_000_000)),
            Demand::Met { .. }
        ));
        let set = [w(1, 2, 2), w(2, 4, 4)];
        assert!(matches!(
            processor_demand(&set, &mut Budget::new(1_000_000)),
            Demand::Met { .. }
        ));
    }

    #[test]
    fn a_large_hyperperiod_is_decided_quickly_by_qpa() {
        // Co-prime periods in the millions: a hyperperiod of ~1e30 ns, QPA checks a handful.
        let set = [
            w(100_000, 900_001, 1_000_003),
            w(200_000, 1_900_000, 2_000_029),
            w(300_000, 2_999_999, 3_000_017),
            w(100_000, 3_500_000, 4_000_037),
        ];
        let mut budget = Budget::new(100_000);
        assert!(matches!(
            processor_demand(&set, &mut budget),
            Demand::Met { .. }
        ));
    }
}
