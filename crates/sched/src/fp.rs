//! Fixed-priority preemptive scheduling (SCHED_FIFO) on one CPU: the utilisation bounds as
//! quick answers, exact response-time analysis, and a priority order that works when the
//! given one does not.
//!
//! - Liu & Layland, "Scheduling Algorithms for Multiprogramming in a Hard-Real-Time
//!   Environment", JACM 20(1), 1973: rate-monotonic order meets every implicit deadline when
//!   U <= n(2^(1/n) - 1).
//! - Bini, Buttazzo & Buttazzo, "Rate Monotonic Analysis: The Hyperbolic Bound", IEEE TC
//!   52(7), 2003: the same when Π(Ui + 1) <= 2, which admits strictly more sets.
//! - Joseph & Pandya, "Finding Response Times in a Real-Time System", The Computer Journal
//!   29(5), 1986: the exact worst-case response time as the least fixed point of
//!   R = C + Σ ceil(R/Tj)·Cj over the higher-priority tasks.
//! - Audsley, Burns, Richardson, Tindell & Wellings, "Applying New Scheduling Theory to Static
//!   Priority Pre-emptive Scheduling", Software Engineering Journal 8(5), 1993: with release
//!   jitter and blocking, w = C + B + Σ ceil((w + Jj)/Tj)·Cj and R = w + J. With deadlines up
//!   to the period, one job per task is enough whenever R <= D.
//! - Leung & Whitehead, 1982: deadline-monotonic order is optimal for constrained deadlines;
//!   Audsley, "Optimal Priority Assignment and Feasibility of Static Priority Tasks with
//!   Arbitrary Start Times", YCS 164, University of York, 1991: assigning the lowest priority
//!   first finds an order whenever one exists for this analysis (jitter included: Davis &
//!   Burns, Real-Time Systems 47(1), 2011).

use crate::{Budget, Work};

/// The outcome of one task's response-time analysis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Response {
    /// The worst-case response time (release to completion, jitter included), within the
    /// deadline.
    Within(u64),
    /// The response time passes the deadline (the iteration stopped there).
    Exceeds,
    /// The step budget ran out first.
    Undecided,
}

/// The worst-case response time of `task` below `higher` (the tasks of higher or equal
/// priority), Audsley et al. 1993.
pub(crate) fn response_time(task: &Work, higher: &[&Work], budget: &mut Budget) -> Response {
    let limit = u128::from(task.d);
    let own = u128::from(task.c) + u128::from(task.b);
    let mut w: u128 = own + higher.iter().map(|h| u128::from(h.c)).sum::<u128>();
    loop {
        if w + u128::from(task.j) > limit {
            return Response::Exceeds;
        }
        if !budget.take(higher.len() as u64 + 1) {
            return Response::Undecided;
        }
        let next = own
            + higher
                .iter()
                .map(|h| (w + u128::from(h.j)).div_ceil(u128::from(h.t)) * u128::from(h.c))
                .sum::<u128>();
        if next == w {
            // w + j <= d <= u64::MAX here.
            return Response::Within((w + u128::from(task.j)) as u64);
        }
        w = next;
    }
}

/// Liu & Layland's bound for `n` tasks, n(2^(1/n) - 1).
pub(crate) fn liu_layland_bound(n: usize) -> f64 {
    let n = n as f64;
    n * (2f64.powf(1.0 / n) - 1.0)
}

/// The hyperbolic product Π(Ui + 1).
pub(crate) fn hyperbolic_product(tasks: &[Work]) -> f64 {
    tasks
        .iter()
        .map(|t| t.c as f64 / t.t as f64 + 1.0)
        .product()
}

/// Response times of `tasks` in the priority order `order` (indices, highest first); tasks
/// whose priorities tie (`tied[i]` with the one before) interfere with each other.
pub(crate) fn analyse_order(
    tasks: &[Work],
    order: &[usize],
    ties: &[bool],
    budget: &mut Budget,
) -> Vec<Response> {
    let mut out = vec![Response::Undecided; tasks.len()];
    for (rank, &i) in order.iter().enumerate() {
        // Everything above, and any later task tied with this one.
        let mut higher: Vec<&Work> = order[..rank].iter().map(|&j| &tasks[j]).collect();
        let mut k = rank + 1;
        while k < order.len() && ties[k] {
            higher.push(&tasks[order[k]]);
            k += 1;
        }
        // Ties before this task are already in `order[..rank]`.
        out[i] = response_time(&tasks[i], &higher, budget);
    }
    out
}

/// Deadline-monotonic order (by deadline less jitter, then period, then file order),
/// highest priority first.
pub(crate) fn deadline_monotonic(tasks: &[Work]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..tasks.len()).collect();
    order.sort_by_key(|&i| (tasks[i].d.saturating_sub(tasks[i].j), tasks[i].t, i));
    order
}

/// Rate-monotonic order (by period, then deadline, then file order), highest first.
pub(crate) fn rate_monotonic(tasks: &[Work]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..tasks.len()).collect();
    order.sort_by_key(|&i| (tasks[i].t, tasks[i].d, i));
    order
}

/// Audsley's lowest-priority-first assignment: `Ok(Some(order))` highest first, `Ok(None)`
/// when no fixed-priority order meets every deadline, `Err(())` when the budget ran out.
pub(crate) fn audsley(tasks: &[Work], budget: &mut Budget) -> Result<Option<Vec<usize>>, ()> {
    let mut unassigned: Vec<usize> = deadline_monotonic(tasks);
    let mut lowest_first = Vec::with_capacity(tasks.len());
    while !unassigned.is_empty() {
        let mut placed = None;
        // Try the longest deadlines first: they are the likeliest to fit at the bottom.
        for (pos, &i) in unassigned.iter().enumerate().rev() {
            let higher: Vec<&Work> = unassigned
                .iter()
                .filter(|&&j| j != i)
                .map(|&j| &tasks[j])
                .collect();
            match response_time(&tasks[i], &higher, budget) {
                Response::Within(_) => {
                    placed = Some(pos);
                    break;
                }
                Response::Exceeds => {}
                Response::Undecided => return Err(()),
            }
        }
        match placed {
            Some(pos) => lowest_first.push(unassigned.remove(pos)),
            None => return Ok(None),
        }
    }
    lowest_first.reverse();
    Ok(Some(lowest_first))
}

/// SCHED_FIFO priorities for `n` tasks in order, highest first: 49 downwards, below the IRQ
/// threads' 50 as talk 002 advises, or from n downwards when more than 49 need distinct
/// priorities; `None` past 98 (99 is the kernel's own).
pub(crate) fn fifo_priorities(n: usize) -> Option<Vec<u8>> {
    let top = match n {
        0..=49 => 49,
        50..=98 => n,
        _ => return None,
    };
    Some((0..n).map(|k| (top - k) as u8).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(c: u64, t: u64) -> Work {
        Work {
            c,
            t,
            d: t,
            j: 0,
            b: 0,
        }
    }

    fn responses(tasks: &[Work]) -> Vec<Response> {
        let order: Vec<usize> = (0..tasks.len()).collect();
        let ties = vec![false; tasks.len()];
        analyse_order(tasks, &order, &ties, &mut Budget::new(1_000_000))
    }

    /// The classic three-task set of the textbooks' response-time chapters: (C, T) = (1, 4),
    /// (2, 6), (3, 10) under RM: R = 1, 3, 10 (iterating 6, 7, 9, 10, 10 for the last).
    #[test]
    fn the_textbook_rm_set_has_its_published_response_times() {
        let set = [w(1, 4), w(2, 6), w(3, 10)];
        assert_eq!(
            responses(&set),
            vec![
                Response::Within(1),
                Response::Within(3),
                Response::Within(10)
            ]
        );
        // U = 0.25 + 0.333 + 0.3 = 0.883 > 3(2^(1/3) - 1) = 0.7798: Liu–Layland cannot tell.
        assert!((liu_layland_bound(3) - 0.7798).abs() < 1e-4);
        // and the hyperbolic product 1.25 * 1.333 * 1.3 = 2.1667 > 2: neither can it.
        assert!(hyperbolic_product(&set) > 2.0);
    }

    /// Burns & Wellings, Real-Time Systems and Programming Languages, the response-time
    /// example: (T, C) = a (7, 3), b (12, 3), c (20, 5): R = 3, 6, 20 — schedulable although
    /// U = 0.93 is over every utilisation bound.
    #[test]
    fn burns_and_wellings_set_meets_its_deadlines_at_exactly_twenty() {
        let set = [w(3, 7), w(3, 12), w(5, 20)];
        assert_eq!(
            responses(&set),
            vec![
                Response::Within(3),
                Response::Within(6),
                Response::Within(20)
            ]
        );
        // One nanosecond more on the lowest task and it misses.
        let set = [w(3, 7), w(3, 12), w(6, 20)];
        assert_eq!(responses(&set)[2], Response::Exceeds);
    }

    /// Bini et al. 2003: U = (1/2, 1/3) is over Liu & Layland's 0.8284 for two tasks, yet
    /// Π(Ui + 1) = 1.5 · 1.333 = 2 sits exactly on the hyperbolic bound (and the set is
    /// schedulable: R = 1, 2).
    #[test]
    fn the_hyperbolic_bound_admits_what_liu_layland_does_not() {
        let set = [w(1, 2), w(1, 3)];
        let u = 0.5 + 1.0 / 3.0;
        assert!(u > liu_layland_bound(2));
        assert!((hyperbolic_product(&set) - 2.0).abs() < 1e-12);
        assert_eq!(
            responses(&set),
            vec![Response::Within(1), Response::Within(2)]
        );
    }

    /// Audsley et al. 1993 with jitter and blocking, checked by hand: task 1 (C 1, T 5, J 1),
    /// task 2 (C 2, T 10, D 10, B 1): w2 = 2 + 1 + ceil((w + 1)/5)·1 → w = 4; R2 = 4.
    #[test]
    fn jitter_and_blocking_enter_as_published() {
        let hi = Work {
            c: 1,
            t: 5,
            d: 5,
            j: 1,
            b: 0,
        };
        let lo = Work {
            c: 2,
            t: 10,
            d: 10,
            j: 0,
            b: 1,
        };
        assert_eq!(
            response_time(&hi, &[], &mut Budget::new(100)),
            Response::Within(2)
        );
        assert_eq!(
            response_time(&lo, &[&hi], &mut Budget::new(100)),
            Response::Within(4)
        );
        // The high task's jitter of 4 lets two of its jobs land in the low task's window:
        // w = 3 + ceil((w + 4)/5) → w = 5; R = 5.
        let hi = Work { j: 4, ..hi };
        assert_eq!(
            response_time(&lo, &[&hi], &mut Budget::new(100)),
            Response::Within(5)
        );
    }

    /// Leung & Whitehead: (C, D, T) = (2, 4, 10) below (3, 10, 10) misses under rate-monotonic
    /// ties broken the wrong way but meets under deadline-monotonic order.
    #[test]
    fn deadline_monotonic_and_audsley_find_the_order() {
        let a = Work {
            c: 3,
            t: 10,
            d: 10,
            j: 0,
            b: 0,
        };
        let b = Work {
            c: 2,
            t: 10,
            d: 4,
            j: 0,
            b: 0,
        };
        let set = [a, b];
        assert_eq!(responses(&set)[1], Response::Exceeds);
        assert_eq!(deadline_monotonic(&set), vec![1, 0]);
        let mut budget = Budget::new(1000);
        assert_eq!(audsley(&set, &mut budget), Ok(Some(vec![1, 0])));
        // Two tasks that each need the whole deadline cannot share a CPU in any order.
        let set = [
            Work {
                c: 3,
                t: 10,
                d: 3,
                j: 0,
                b: 0,
            },
            Work {
                c: 3,
                t: 10,
                d: 3,
                j: 0,
                b: 0,
            },
        ];
        assert_eq!(audsley(&set, &mut budget), Ok(None));
    }

    #[test]
    fn ties_interfere_both_ways() {
        let set = [w(2, 10), w(2, 10)];
        let out = analyse_order(&set, &[0, 1], &[false, true], &mut Budget::new(100));
        assert_eq!(out, vec![Response::Within(4), Response::Within(4)]);
    }

    #[test]
    fn priorities_stay_below_the_irq_threads_when_they_can() {
        assert_eq!(fifo_priorities(3), Some(vec![49, 48, 47]));
        assert_eq!(fifo_priorities(60).unwrap()[0], 60);
        assert_eq!(fifo_priorities(60).unwrap()[59], 1);
        assert_eq!(fifo_priorities(99), None);
    }

    #[test]
    fn a_tiny_budget_is_undecided_not_a_verdict() {
        let hi = w(2, 3);
        let lo = w(100, 1_000_000_000);
        let mut budget = Budget::new(2);
        let lo = response_time(&lo, &[&hi], &mut budget);
        assert_eq!(lo, Response::Undecided);
    }
}
