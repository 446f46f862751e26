//! The gate's reasons ([`model::gate`]) in words, as the command line and the report say them:
//! `CPU 1: max latency 250.0us exceeds --budget 100us`.

use model::gate::{Reason, Worst};

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
            "--hardlimit {limit}: {samples} sample{} reached it (the worst {} us)",
            if *samples == 1 { "" } else { "s" },
            worst_ns / 1000
        ),
    }
}

/// Nanoseconds as microseconds with one decimal and the unit: `250.0us`.
fn us(ns: u64) -> String {
    format!("{}us", crate::format_us(ns))
}
