//! RT throttling under fixed priorities: the kernel lets the real-time tasks of a CPU run at
//! most `sched_rt_runtime_us` of every `sched_rt_period_us` and then stops them for the rest of
//! the period, whatever their deadlines (since 6.12 it runs the fair server instead, for the
//! same share, whenever an ordinary task waits). A task set that needs more of a CPU than that
//! misses deadlines by up to the rest of a period — 50 ms a second by default — however its
//! response times add up without it.
//!
//! The test: with a utilisation above the limit, throttling stops the tasks in every period
//! (not schedulable); with the real-time demand of any window of one period within the
//! runtime, it never begins (schedulable); between the two a burst of releases may reach the
//! limit, which the analysis does not model (undecided).

use model::sched::{DeadlineBandwidth, Test, Verdict};

use crate::Work;

/// The throttling test for the tasks of one CPU (`works`), or none where the machine's limit
/// could not be read (the note elsewhere says so).
pub(crate) fn test(works: &[Work], bw: Option<&DeadlineBandwidth>) -> Option<Test> {
    let bw = bw?;
    let name = "rt-throttling".to_string();
    if bw.rt_runtime_us < 0 {
        return Some(Test {
            name,
            verdict: Verdict::NotApplicable,
            note: "kernel.sched_rt_runtime_us is -1: the kernel never throttles real-time tasks"
                .into(),
        });
    }
    let runtime_ns = (bw.rt_runtime_us as u64).saturating_mul(1000);
    let period_ns = bw.rt_period_us.saturating_mul(1000);
    if period_ns == 0 || runtime_ns >= period_ns {
        return Some(Test {
            name,
            verdict: Verdict::NotApplicable,
            note: format!(
                "sched_rt_runtime_us {} is the whole sched_rt_period_us {}: no throttling",
                bw.rt_runtime_us, bw.rt_period_us
            ),
        });
    }
    let limit = runtime_ns as f64 / period_ns as f64;
    let u = crate::edf::utilisation(works);
    let stop_ms = (period_ns - runtime_ns) as f64 / 1e6;
    let settings = format!(
        "kernel.sched_rt_runtime_us {} of sched_rt_period_us {}",
        bw.rt_runtime_us, bw.rt_period_us
    );
    if u > limit {
        return Some(Test {
            name,
            verdict: Verdict::NotSchedulable,
            note: format!(
                "U = {u:.4} > {limit:.4} ({settings}): the kernel stops these real-time tasks \
                 for up to {stop_ms:.1} ms in every period; set kernel.sched_rt_runtime_us=-1 \
                 (with a watchdog of your own) or lower the load"
            ),
        });
    }
    // The most the tasks can ask for in one period's window: every release in it at its
    // WCET, released together at the window's start.
    let demand = works.iter().fold(0u64, |sum, w| {
        let releases = period_ns.saturating_add(w.j).div_ceil(w.t.max(1));
        sum.saturating_add(releases.saturating_mul(w.c))
    });
    Some(if demand <= runtime_ns {
        Test {
            name,
            verdict: Verdict::Schedulable,
            note: format!(
                "at most {:.1} ms of real-time work in any {:.0} ms window, within the \
                 {:.1} ms the kernel allows ({settings}): throttling never begins",
                demand as f64 / 1e6,
                period_ns as f64 / 1e6,
                runtime_ns as f64 / 1e6
            ),
        }
    } else {
        Test {
            name,
            verdict: Verdict::Undecided,
            note: format!(
                "U = {u:.4} is within {limit:.4} ({settings}), but releases together can ask \
                 {:.1} ms in one {:.0} ms window, past the {:.1} ms allowed: a burst may be \
                 throttled, which this analysis does not model",
                demand as f64 / 1e6,
                period_ns as f64 / 1e6,
                runtime_ns as f64 / 1e6
            ),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bw(runtime_us: i64) -> DeadlineBandwidth {
        DeadlineBandwidth {
            rt_runtime_us: runtime_us,
            rt_period_us: 1_000_000,
            ..crate::tests::machine(1)
        }
    }

    fn work(c_us: u64, t_us: u64) -> Work {
        Work {
            c: c_us * 1000,
            t: t_us * 1000,
            d: t_us * 1000,
            j: 0,
            b: 0,
        }
    }

    /// Issue #45: 9.7 ms every 10 ms needs 97 % of the CPU; the default limit gives real-time
    /// tasks 95 %, and the kernel stops them 50 ms a second.
    #[test]
    fn a_set_above_the_limit_is_throttled() {
        let t = test(&[work(9_700, 10_000)], Some(&bw(950_000))).unwrap();
        assert_eq!(t.verdict, Verdict::NotSchedulable, "{}", t.note);
        assert!(t.note.contains("50.0 ms"), "{}", t.note);
        assert_eq!(
            test(&[work(9_700, 10_000)], Some(&bw(-1))).unwrap().verdict,
            Verdict::NotApplicable
        );
        assert!(test(&[work(9_700, 10_000)], None).is_none());
    }

    /// Half the CPU never reaches the limit; 94 % in 100 ms bursts may.
    #[test]
    fn a_set_within_the_limit_is_never_or_maybe_throttled() {
        let t = test(&[work(5_000, 10_000)], Some(&bw(950_000))).unwrap();
        assert_eq!(t.verdict, Verdict::Schedulable, "{}", t.note);
        // 94 ms every 100 ms: within 95 % over time, and 940 ms in any second.
        let t = test(&[work(94_000, 100_000)], Some(&bw(950_000))).unwrap();
        assert_eq!(t.verdict, Verdict::Schedulable, "{}", t.note);
        // 600 ms every 700 ms: 86 % on average, but two releases in one second ask 1.2 s.
        let t = test(&[work(600_000, 700_000)], Some(&bw(950_000))).unwrap();
        assert_eq!(t.verdict, Verdict::Undecided, "{}", t.note);
    }
}
