//! `rtlab sched check`'s table: per CPU, each policy's verdict, the tests behind it, each
//! task's worst-case response time and slack, a suggested priority order, the first failing
//! interval; then SCHED_DEADLINE admission and the notes.

use std::fmt::Write;

use model::Nanos;
use model::sched::{PolicyAnalysis, SchedPolicy, SchedReport, Task, Verdict};

/// The report as text.
pub fn table(report: &SchedReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Task set {}: {} task{}; {} under {}",
        report.source,
        report.tasks.len(),
        if report.tasks.len() == 1 { "" } else { "s" },
        report.verdict.as_str(),
        policy_name(report.policy)
    );
    for p in &report.partitions {
        let _ = writeln!(
            out,
            "\n{} (U = {:.4})",
            match p.cpu {
                Some(c) => format!("CPU {c}"),
                None => "Tasks without a cpu".to_string(),
            },
            p.utilisation
        );
        for a in &p.analyses {
            analysis(&mut out, a, &report.tasks);
        }
    }
    if !report.admission.is_empty() {
        let _ = writeln!(out, "\nSCHED_DEADLINE admission on this machine:");
        for t in &report.admission {
            let _ = writeln!(
                out,
                "  {:<22} {:<16} {}",
                t.name,
                t.verdict.as_str(),
                t.note
            );
        }
        if let Some(bw) = &report.bandwidth {
            for line in &bw.tasks {
                let _ = writeln!(out, "  already running: {line}");
            }
        }
    }
    if !report.notes.is_empty() {
        let _ = writeln!(out, "\nNotes:");
        for n in &report.notes {
            let _ = writeln!(out, "  - {n}");
        }
    }
    out
}

fn policy_name(p: SchedPolicy) -> &'static str {
    match p {
        SchedPolicy::Fifo => "fixed priorities (SCHED_FIFO)",
        SchedPolicy::Edf => "EDF",
        SchedPolicy::Deadline => "SCHED_DEADLINE",
    }
}

fn ns(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), |n| Nanos(n).to_string())
}

fn analysis(out: &mut String, a: &PolicyAnalysis, tasks: &[Task]) {
    let _ = writeln!(
        out,
        "  {:<32} {}",
        policy_name(a.policy),
        a.verdict.as_str()
    );
    for t in &a.tests {
        let _ = writeln!(
            out,
            "    {:<20} {:<16} {}",
            t.name,
            t.verdict.as_str(),
            t.note
        );
    }
    if let Some(f) = &a.first_failure {
        let _ = writeln!(
            out,
            "    {} interval: [0, {}) demands {}",
            if f.first {
                "first failing"
            } else {
                "a failing"
            },
            Nanos(f.t_ns),
            Nanos(f.demand_ns)
        );
    }
    if a.policy == SchedPolicy::Fifo {
        let _ = writeln!(
            out,
            "    {:<16} {:>4} {:>9} {:>9} {:>9} {:>8} {:>8} {:>10} {:>9}  verdict",
            "task", "prio", "period", "wcet", "deadline", "jitter", "blocking", "response", "slack"
        );
        for v in &a.tasks {
            let Some(t) = tasks.iter().find(|t| t.name == v.name) else {
                continue;
            };
            let _ = writeln!(
                out,
                "    {:<16} {:>4} {:>9} {:>9} {:>9} {:>8} {:>8} {:>10} {:>9}  {}",
                v.name,
                v.priority
                    .map_or_else(|| "-".to_string(), |p| p.to_string()),
                t.period.to_string(),
                t.wcet.to_string(),
                t.deadline.to_string(),
                t.jitter.to_string(),
                t.blocking.to_string(),
                match (v.response_ns, v.verdict) {
                    (None, Verdict::NotSchedulable) => format!(">{}", t.deadline),
                    (r, _) => ns(r),
                },
                ns(v.slack_ns),
                v.verdict.as_str()
            );
        }
    }
    if let Some(s) = &a.suggestion {
        let order: Vec<String> = s
            .order
            .iter()
            .map(|p| format!("{} {}", p.name, p.priority))
            .collect();
        let _ = writeln!(
            out,
            "    a {} order meets every deadline: {}",
            s.method,
            order.join(", ")
        );
    }
}
