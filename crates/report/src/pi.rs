//! The text of `rtlab pi check`: the verdict in a sentence, then one row per inversion group
//! of each run (the PI run, then the plain-lock control), with the high thread's waits in µs.

use model::Nanos;
use model::pi::{PiCheck, PiRun, PiVerdict};

use crate::table::format_us;

/// The verdict line and the table.
pub fn table(check: &PiCheck) -> String {
    let mut out = verdict_line(check);
    out.push_str(&format!(
        "\n{:<22} {:>4} {:>10} {:>8} {:>7} {:>14} {:>13}\n",
        "lock", "CPU", "inversions", "in time", "missed", "mean wait (us)", "max wait (us)"
    ));
    rows(&check.pi, &mut out);
    rows(&check.control, &mut out);
    out.push_str(&format!(
        "priorities low/medium/high: FIFO {}/{}/{}; the low thread holds the lock for {} of \
         CPU time; deadline {}\n",
        check.priorities.low,
        check.priorities.medium,
        check.priorities.high,
        Nanos(check.hold_ns),
        Nanos(check.deadline_ns)
    ));
    out
}

fn verdict_line(check: &PiCheck) -> String {
    let (pi, control) = (&check.pi, &check.control);
    let caught = format!(
        "the plain lock missed {} of {}",
        control.missed(),
        control.inversions()
    );
    match check.verdict {
        PiVerdict::Held => format!(
            "priority inheritance held: {} of {} inversions resolved within the {} deadline \
             ({caught}, the inversion it prevents)\n",
            pi.inversions() - pi.missed(),
            pi.inversions(),
            Nanos(check.deadline_ns)
        ),
        PiVerdict::HeldUnconfirmed => format!(
            "priority inheritance held in {} inversions, but {caught}: the control showed no \
             inversion here, so the check cannot tell inheritance from luck\n",
            pi.inversions()
        ),
        PiVerdict::Missed => format!(
            "priority inheritance FAILED: {} of {} inversions missed the {} deadline with a PI \
             futex ({caught})\n",
            pi.missed(),
            pi.inversions(),
            Nanos(check.deadline_ns)
        ),
    }
}

fn rows(run: &PiRun, out: &mut String) {
    for g in &run.groups {
        let mean = g.total_wait_ns.checked_div(g.inversions).unwrap_or(0);
        out.push_str(&format!(
            "{:<22} {:>4} {:>10} {:>8} {:>7} {:>14} {:>13}\n",
            run.lock.label(),
            g.cpu,
            g.inversions,
            g.in_time,
            g.missed,
            format_us(mean),
            format_us(g.max_wait_ns)
        ));
    }
}

#[cfg(test)]
mod tests {
    use model::pi::{PI_SCHEMA, PiGroup, PiLockKind, PiPriorities};

    use super::*;

    fn check(pi_missed: u64) -> PiCheck {
        let group = |inversions, missed, wait| PiGroup {
            cpu: 1,
            inversions,
            in_time: inversions - missed,
            missed,
            max_wait_ns: wait,
            total_wait_ns: wait * inversions,
        };
        let pi = PiRun {
            lock: PiLockKind::FutexPi,
            elapsed_ns: 2_000_000_000,
            groups: vec![group(900, pi_missed, 1_050_000)],
        };
        let control = PiRun {
            lock: PiLockKind::FutexPlain,
            elapsed_ns: 400_000_000,
            groups: vec![group(3, 3, 100_000_000)],
        };
        PiCheck {
            schema: PI_SCHEMA.to_string(),
            priorities: PiPriorities {
                low: 20,
                medium: 30,
                high: 40,
            },
            deadline_ns: 100_000_000,
            hold_ns: 1_000_000,
            verdict: PiCheck::judge(&pi, &control),
            pi,
            control,
        }
    }

    #[test]
    fn a_held_check_reads_as_such_with_both_runs() {
        let text = table(&check(0));
        assert!(
            text.starts_with("priority inheritance held: 900 of 900 inversions"),
            "{text}"
        );
        assert!(text.contains("the plain lock missed 3 of 3"), "{text}");
        assert!(text.contains("PI futex"), "{text}");
        assert!(text.contains("plain futex (control)"), "{text}");
        assert!(text.contains("1050.0"), "{text}");
    }

    #[test]
    fn a_miss_is_a_failure() {
        let text = table(&check(2));
        assert!(
            text.starts_with("priority inheritance FAILED: 2 of 900"),
            "{text}"
        );
    }
}
