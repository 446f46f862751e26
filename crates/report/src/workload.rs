//! The `--workload` section under a run's table: per CPU, the jobs, the deadline misses split
//! into late starts (wake-up jitter), long executions and both (talk 001's figures 1b–1d),
//! the worst wake-up latency and the execution times against the nominal one (the job's CPU
//! time).

use std::fmt::Write;

use model::Nanos;
use model::workload::WorkloadInfo;

use crate::columns::align_right;

/// The section as text.
pub fn table(w: &WorkloadInfo) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "workload: {} of work after each wake-up, deadline {} after each release; times in us",
        w.runtime_ns, w.deadline_ns
    );
    let us = |ns: u64| format!("{:.1}", ns as f64 / 1000.0);
    let mut rows = vec![
        [
            "CPU",
            "jobs",
            "misses",
            "late start",
            "long exec",
            "both",
            "max wake-up",
            "exec nominal",
            "exec min",
            "exec max",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for c in &w.cpus {
        rows.push(vec![
            c.cpu.to_string(),
            c.jobs.to_string(),
            c.misses.to_string(),
            c.late_start.to_string(),
            c.long_execution.to_string(),
            c.both.to_string(),
            us(c.max_latency_ns),
            us(c.nominal_ns),
            us(c.min_execution_ns),
            us(c.max_execution_ns),
        ]);
    }
    for line in align_right(&rows) {
        out.push_str(&line);
        out.push('\n');
    }
    let misses: u64 = w.cpus.iter().map(|c| c.misses).sum();
    if misses > 0 {
        let _ = writeln!(
            out,
            "{misses} job(s) ended after the deadline {}: a late start means the wake-up alone \
             used the slack, a long execution that the job was preempted or slowed while working",
            Nanos::from(w.deadline_ns.to_duration())
        );
    }
    out
}
