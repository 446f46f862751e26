//! A run's verdict on the command line: the gate's reasons ([`model::gate`]) in words on
//! standard error, and the exit status they mean. No command judges a run itself.

use model::gate::{Reason, Verdict};

use crate::console::Console;
use crate::exit::Exit;

/// The exit status of a run this process measured: 1 for a failed criterion; 130 when the
/// run was interrupted (what it measured may not be judgeable, and that is no verdict); 1
/// when it cannot be judged; else 0.
pub fn live_exit(verdict: &Verdict, interrupted: bool) -> Exit {
    if verdict.failures().next().is_some() {
        Exit::VerdictFailed
    } else if interrupted {
        Exit::Interrupted
    } else {
        stored_exit(verdict)
    }
}

/// The exit status of a run read back (a file, the store): 1 unless it passed.
pub fn stored_exit(verdict: &Verdict) -> Exit {
    if verdict.passed() {
        Exit::Ok
    } else {
        Exit::VerdictFailed
    }
}

/// The verdict on a run read back (a file, the store): its reasons on standard error after
/// `who`, and the exit status ([`stored_exit`]).
pub fn told(console: &mut Console, verdict: &Verdict, who: Option<&str>) -> Exit {
    say(console, verdict, who, false);
    stored_exit(verdict)
}

/// Says every reason against the run, one line each, after `who` (a run's name when several
/// are judged); with `unjudgeable_told`, not that the run cannot be judged (said already, or
/// no news: a run this process measured was stopped).
pub fn say(console: &mut Console, verdict: &Verdict, who: Option<&str>, unjudgeable_told: bool) {
    for reason in &verdict.reasons {
        if unjudgeable_told && reason.is_unjudgeable() {
            continue;
        }
        let line = words(reason);
        match who {
            Some(who) => console.verdict(&format!("{who}: {line}")),
            None => console.verdict(&line),
        }
    }
}

/// The line that ends a command's text summary on standard output, where a script keeps it
/// (`rtlab measure --budget 50us > out.txt`, `rtlab show RUN`): `verdict: ` and the verdict in
/// one line ([`report::story::verdict::line`], the words every surface uses), or `verdict:
/// INTERRUPTED: ...` for a run this process measured that a signal stopped and nothing failed.
pub fn summary_line(verdict: &Verdict, interrupted: bool) -> String {
    if interrupted && verdict.failures().next().is_none() {
        return "verdict: INTERRUPTED: stopped by a signal; what was measured is above\n"
            .to_string();
    }
    format!("verdict: {}\n", report::story::verdict::line(verdict))
}

/// One reason in words (`report::story::verdict`, which the HTML report says them with too).
pub fn words(reason: &Reason) -> String {
    report::story::verdict::words(reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::Nanos;
    use model::gate::{BudgetFrom, Criteria, Worst};

    #[test]
    fn an_interrupted_run_exits_130_unless_a_criterion_failed() {
        let unjudgeable = Verdict {
            reasons: vec![Reason::Unjudgeable { why: "x".into() }],
            ..Verdict::default()
        };
        assert_eq!(live_exit(&unjudgeable, true), Exit::Interrupted);
        assert_eq!(live_exit(&unjudgeable, false), Exit::VerdictFailed);
        assert_eq!(stored_exit(&unjudgeable), Exit::VerdictFailed);
        let budget = |b| Criteria {
            budget: Some(Nanos::from_us(b)),
            from: BudgetFrom::Run,
            ..Criteria::default()
        };
        let over = Verdict {
            criteria: budget(100),
            reasons: vec![Reason::OverBudget {
                cpu: 1,
                worst: Worst::Maximum,
                ns: 250_000,
                budget: Nanos::from_us(100),
            }],
            cpus: Vec::new(),
        };
        assert_eq!(live_exit(&over, true), Exit::VerdictFailed);
        assert_eq!(
            words(&over.reasons[0]),
            "CPU 1: max latency 250.0us exceeds --budget 100us"
        );
        assert_eq!(
            summary_line(&over, true),
            "verdict: FAIL: CPU 1: max latency 250.0us exceeds --budget 100us\n"
        );
        let within = Verdict {
            criteria: budget(50),
            ..Verdict::default()
        };
        assert_eq!(
            summary_line(&within, false),
            "verdict: PASS: every CPU within --budget 50us\n"
        );
        assert_eq!(
            summary_line(&Verdict::default(), false),
            "verdict: PASS: measured without a budget: judged on completeness only\n"
        );
        assert!(summary_line(&unjudgeable, false).starts_with("verdict: CANNOT JUDGE: x"));
        assert!(summary_line(&unjudgeable, true).starts_with("verdict: INTERRUPTED"));
        assert_eq!(live_exit(&Verdict::default(), true), Exit::Interrupted);
        assert_eq!(live_exit(&Verdict::default(), false), Exit::Ok);
    }
}
