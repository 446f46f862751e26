//! The gate's verdict ([`model::gate`]) in words, as the command line, the reports and the
//! server's pages say it: each reason (`CPU 1: max latency 250.0us exceeds --budget 100us`) and
//! the one line that sums a run up (`FAIL: ...`, `PASS: every CPU within --budget 50us`).

use model::gate::{BudgetFrom, Outcome, Reason, Verdict, Worst};

/// The verdict in one line, its word first: `FAIL: CPU 1: max latency 250.0us exceeds --budget
/// 50us`, `CANNOT JUDGE: the run stopped at its --break threshold ...`, `PASS: every CPU within
/// --budget 50us`. The criteria follow in brackets unless the run was held to the budget it was
/// measured with (`(judged against 100us given now; measured with 50us)`); a run held to no
/// budget says so as its pass (`PASS: measured without a budget: judged on completeness
/// only`).
pub fn line(verdict: &Verdict) -> String {
    let c = &verdict.criteria;
    let criteria = c.describe();
    let body = match verdict.outcome() {
        Outcome::Fail => verdict.failures().map(words).collect::<Vec<_>>().join("; "),
        Outcome::CannotJudge => verdict.unjudgeable().unwrap_or_default().to_string(),
        Outcome::Pass => match c.budget {
            Some(b) => format!("every CPU within --budget {b}"),
            None if let Some(h) = c.hardlimit => format!("no sample reached --budget {h}"),
            None => return format!("PASS: {criteria}"),
        },
    };
    // Held to its own criteria: a budget it was measured with, a hardware-latency run's own
    // hard limit (whose failure names it already).
    let own = matches!(c.from, BudgetFrom::Run | BudgetFrom::HardLimit) && c.deadline.is_none();
    match (own || criteria.is_empty(), verdict.outcome()) {
        (true, o) => format!("{}: {body}", o.word()),
        (false, o) => format!("{}: {body} ({criteria})", o.word()),
    }
}

/// One reason in words.
pub fn words(reason: &Reason) -> String {
    match reason {
        Reason::Unjudgeable { why } => format!("the run cannot be judged: {why}"),
        Reason::OverBudget {
            cpu,
            worst,
            ns,
            budget,
        } => {
            let what = match worst {
                Worst::Maximum => "max latency",
                Worst::Interruption => "longest interruption",
            };
            format!("CPU {cpu}: {what} {} exceeds --budget {budget}", us(*ns))
        }
        Reason::DeadlineMissed {
            cpu,
            misses,
            jobs,
            late_start,
            long_execution,
            both,
            deadline,
        } => format!(
            "CPU {cpu}: {misses} of {jobs} jobs missed the deadline {deadline} ({late_start} late start, {long_execution} long execution, {both} both)"
        ),
        Reason::HardLimit {
            samples,
            worst_ns,
            limit,
        } => format!(
            "--budget {limit}: {samples} sample{} reached it (the worst {} us)",
            if *samples == 1 { "" } else { "s" },
            worst_ns / 1000
        ),
    }
}

/// Nanoseconds as microseconds with one decimal and the unit: `250.0us`.
fn us(ns: u64) -> String {
    format!("{}us", crate::format_us(ns))
}
