//! `rtlab explain irqs|sched|wakeups TRACEFILE`: what talk 001 measured by hand, from the
//! ordinary scheduler, IRQ and timer events of a whole trace — each interrupt handler's and
//! softirq's durations (the slow top halves, without function_graph or kretprobes), each
//! task's wake-up-to-run delay and migrations (the maximum run delay that took a patched
//! schedstat), and each CPU's wake-up latency of real-time tasks (the old RT patch's latency
//! histograms). It also owns what the explain commands share: the analyses' arguments, the
//! output formats, opening a trace for one streaming pass, and a trace's summary.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use anyhow::{Context, Result};
use model::Histogram;
use model::explain::TraceSummary;
use model::histogram::Quantile;
use serde_json::json;
use trace::explain::{self, Scan, us};

use crate::console;
use crate::exit::{Exit, UsageError};
use crate::flags::{Analysis, AnalysisArgs, ExplainFormat};

/// Schema of the analyses' JSON.
const STATS_SCHEMA: &str = "rtlab.trace-stats/1";

/// Opens a trace file for one streaming pass.
pub(crate) fn open(path: &Path) -> Result<BufReader<File>> {
    let file = File::open(path).map_err(|e| UsageError(format!("{}: {e}", path.display())))?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(UsageError(format!(
            "{}: it is a directory; name a trace file",
            path.display()
        ))
        .into());
    }
    Ok(BufReader::with_capacity(1 << 20, file))
}

/// What a trace file held, for the headings and the JSON.
pub(crate) fn summary(scan: &Scan) -> TraceSummary {
    let first = scan.cpus.values().map(|c| c.0).min().unwrap_or(0);
    let last = scan.cpus.values().map(|c| c.1).max().unwrap_or(0);
    TraceSummary {
        lines: scan.read.lines,
        events: scan.read.events,
        malformed: scan.read.malformed,
        lost_events: scan.read.lost_events().unwrap_or(0),
        cpus: scan.cpus.keys().copied().collect(),
        span_ns: last.saturating_sub(first),
        wakeups: scan.wakeup_count,
        clock_offset_ns: scan.clock_offset_ns,
    }
}

/// Runs one analysis.
pub fn run(analysis: &Analysis) -> Result<Exit> {
    let (args, kind) = match analysis {
        Analysis::Irqs(a) => (a, "irqs"),
        Analysis::Sched(a) => (a, "sched"),
        Analysis::Wakeups(a) => (a, "wakeups"),
    };
    let name = args.trace.display().to_string();
    let scan = explain::scan(open(&args.trace)?).with_context(|| format!("reading {name}"))?;
    if scan.read.events == 0 {
        return Err(crate::exit::UsageError(format!(
            "{name}: no trace events in it; give the kernel's trace text or trace-cmd report output"
        ))
        .into());
    }
    let (text, value) = match kind {
        "irqs" => irqs(&scan, args),
        "sched" => sched(&scan, args),
        _ => wakeups(&scan, args),
    };
    let out = match args.format {
        ExplainFormat::Text => {
            let s = summary(&scan);
            format!(
                "{name}: {} events on {} CPUs over {:.3} s, {} lost\n\n{text}",
                s.events,
                s.cpus.len(),
                s.span_ns as f64 / 1e9,
                s.lost_events
            )
        }
        ExplainFormat::Json => {
            let doc = json!({
                "schema": STATS_SCHEMA,
                "source": name,
                "analysis": kind,
                "trace": summary(&scan),
                "threshold_ns": args.threshold.get(),
                "rows": value,
            });
            serde_json::to_string_pretty(&doc)? + "\n"
        }
    };
    console::print_stdout(&out)?;
    Ok(Exit::Ok)
}

/// The quantile's bucket's lower bound (above the range: the range's end).
fn pct(h: &Histogram, q: f64) -> u64 {
    match h.quantile(q) {
        Some(Quantile::InRange { lo, .. }) => lo,
        Some(Quantile::AboveRange) => model::histogram::RANGE_END_NS,
        None => 0,
    }
}

fn table(rows: Vec<Vec<String>>) -> String {
    let mut out = String::new();
    for line in report::table::align(&rows, true) {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn irqs(scan: &Scan, args: &AnalysisArgs) -> (String, serde_json::Value) {
    let mut handlers: Vec<_> = scan.handlers.iter().collect();
    handlers.sort_by_key(|(_, h)| std::cmp::Reverse(h.max_ns));
    let limit = args.threshold.get();
    let mut rows = vec![
        ["handler", "runs", "mean", "p99", "max", "max at", "over"]
            .map(String::from)
            .to_vec(),
    ];
    let mut json_rows = Vec::new();
    for (name, h) in handlers.iter().take(args.top) {
        let over = h.histogram.count() - h.histogram.count_below(limit + 1);
        rows.push(vec![
            format!("{}{name}", if h.max_ns > limit { "! " } else { "  " }),
            h.count.to_string(),
            us(h.total_ns / h.count.max(1)),
            us(pct(&h.histogram, 0.99)),
            us(h.max_ns),
            format!("CPU {} {:.6}", h.max_at.1, h.max_at.0 as f64 / 1e9),
            over.to_string(),
        ]);
        json_rows.push(json!({
            "handler": name, "runs": h.count, "total_ns": h.total_ns,
            "p99_ns": pct(&h.histogram, 0.99), "max_ns": h.max_ns,
            "max_at_ns": h.max_at.0, "max_cpu": h.max_at.1, "over_threshold": over,
        }));
    }
    let slow = handlers.iter().filter(|(_, h)| h.max_ns > limit).count();
    let mut text = table(rows);
    text.push_str(&format!(
        "\n{slow} handler(s) ran longer than {} at least once (marked !){}\n",
        args.threshold,
        if slow > 0 {
            ": a hard interrupt handler that long delays every real-time thread on its CPU; \
             move its IRQ off the real-time CPUs or make it a threaded IRQ"
        } else {
            ""
        }
    ));
    if scan.handlers.is_empty() {
        text = "no irq_handler_entry/exit or softirq_entry/exit events in this trace\n".to_string();
    }
    (text, json!(json_rows))
}

fn sched(scan: &Scan, args: &AnalysisArgs) -> (String, serde_json::Value) {
    let mut tasks: Vec<_> = scan
        .tasks
        .iter()
        .filter(|(_, t)| t.wakeups > 0 || t.migrations > 0)
        .collect();
    tasks.sort_by_key(|(_, t)| std::cmp::Reverse(t.max_ns));
    let limit = args.threshold.get();
    let mut rows = vec![
        [
            "task",
            "pid",
            "prio",
            "wake-ups",
            "p99",
            "max",
            "max at",
            "migrations",
        ]
        .map(String::from)
        .to_vec(),
    ];
    let mut json_rows = Vec::new();
    for (pid, t) in tasks.iter().take(args.top) {
        let prio = match t.prio {
            p if p < 0 => "DL".to_string(),
            p @ 0..=99 => format!("RT {}", 99 - p),
            p => format!("nice {}", p - 120),
        };
        rows.push(vec![
            format!("{}{}", if t.max_ns > limit { "! " } else { "  " }, t.comm),
            pid.to_string(),
            prio,
            t.wakeups.to_string(),
            us(pct(&t.histogram, 0.99)),
            us(t.max_ns),
            format!("CPU {} {:.6}", t.max_at.1, t.max_at.0 as f64 / 1e9),
            t.migrations.to_string(),
        ]);
        json_rows.push(json!({
            "comm": t.comm, "pid": pid, "prio": t.prio, "wakeups": t.wakeups,
            "p99_ns": pct(&t.histogram, 0.99), "max_ns": t.max_ns,
            "max_at_ns": t.max_at.0, "max_cpu": t.max_at.1, "migrations": t.migrations,
        }));
    }
    let mut text = table(rows);
    let rt_migrating = tasks
        .iter()
        .filter(|(_, t)| t.prio < 100 && t.migrations > 0)
        .count();
    text.push_str(&format!(
        "\nwake-up to run: from sched_waking/sched_wakeup to the switch-in; ! marks a maximum \
         above {}.{}\n",
        args.threshold,
        if rt_migrating > 0 {
            format!(" {rt_migrating} real-time task(s) migrated between CPUs: pin them (taskset, sched_setaffinity) to keep their caches and avoid the migration's cost.")
        } else {
            String::new()
        }
    ));
    (text, json!(json_rows))
}

fn wakeups(scan: &Scan, _args: &AnalysisArgs) -> (String, serde_json::Value) {
    let hists = &scan.rt_histograms;
    let mut rows = vec![
        ["CPU", "wake-ups", "min", "p50", "p99", "p99.9", "max"]
            .map(String::from)
            .to_vec(),
    ];
    let mut json_rows = Vec::new();
    for (cpu, h) in hists {
        let min = h.buckets().next().map_or(0, |(lo, _, _)| lo);
        let max = scan.rt_max.get(cpu).copied().unwrap_or(0);
        rows.push(vec![
            cpu.to_string(),
            h.count().to_string(),
            us(min),
            us(pct(h, 0.5)),
            us(pct(h, 0.99)),
            us(pct(h, 0.999)),
            us(max),
        ]);
        json_rows.push(json!({
            "cpu": cpu, "wakeups": h.count(), "min_ns": min, "p50_ns": pct(h, 0.5),
            "p99_ns": pct(h, 0.99), "p99_9_ns": pct(h, 0.999), "max_ns": max,
            "histogram": h,
        }));
    }
    let mut text = table(rows);
    text.push_str(
        "\nreal-time tasks' timer wake-ups: from the deadline they slept to (hrtimer_start) to \
         their switch-in; a measuring thread reads its clock a few us after that\n",
    );
    if hists.is_empty() {
        text = "no timer wake-up of a real-time task in this trace (it needs sched and \
                timer:hrtimer_* events)\n"
            .to_string();
    }
    (text, json!(json_rows))
}
