//! The whole-trace analyses of `rtlab explain irqs|sched|wakeups` as data: from a [`Scan`],
//! the rows of one analysis (worst first, at most `top`), the tally the text needs of every
//! row, and what the trace held. Rendering is the report room's.

use model::Histogram;
use model::explain::{
    CpuRow, HandlerRow, STATS_SCHEMA, StatsRows, StatsTally, TaskRow, TraceStats, TraceSummary,
};
use model::histogram::Quantile;

use super::scan::Scan;

/// Which analysis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Analysis {
    /// Interrupt handler and softirq durations.
    Irqs,
    /// Each task's wake-up-to-run delay and migrations.
    Sched,
    /// Each CPU's timer wake-up latency of real-time tasks.
    Wakeups,
}

/// What a trace file held, for the headings and the JSON.
pub fn summary(scan: &Scan) -> TraceSummary {
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

/// One analysis of `scan` read from `source`: rows above `threshold_ns` are marked, `top`
/// rows at most (every CPU for `wakeups`).
pub fn stats(
    scan: &Scan,
    analysis: Analysis,
    source: &str,
    threshold_ns: u64,
    top: usize,
) -> (TraceStats, StatsTally) {
    let (rows, tally) = match analysis {
        Analysis::Irqs => irqs(scan, threshold_ns, top),
        Analysis::Sched => sched(scan, top),
        Analysis::Wakeups => wakeups(scan),
    };
    let doc = TraceStats {
        schema: STATS_SCHEMA.to_string(),
        source: source.to_string(),
        trace: summary(scan),
        threshold_ns,
        rows,
    };
    (doc, tally)
}

/// The quantile's bucket's lower bound (above the range: the range's end).
fn pct(h: &Histogram, q: f64) -> u64 {
    match h.quantile(q) {
        Some(Quantile::InRange { lo, .. }) => lo,
        Some(Quantile::AboveRange) => model::histogram::RANGE_END_NS,
        None => 0,
    }
}

fn irqs(scan: &Scan, threshold_ns: u64, top: usize) -> (StatsRows, StatsTally) {
    let mut handlers: Vec<_> = scan.handlers.iter().collect();
    handlers.sort_by_key(|(_, h)| std::cmp::Reverse(h.max_ns));
    let rows = handlers
        .iter()
        .take(top)
        .map(|(name, h)| HandlerRow {
            handler: (*name).clone(),
            runs: h.count,
            total_ns: h.total_ns,
            p99_ns: pct(&h.histogram, 0.99),
            max_ns: h.max_ns,
            max_at_ns: h.max_at.0,
            max_cpu: h.max_at.1,
            over_threshold: h.histogram.count()
                - h.histogram.count_below(threshold_ns.saturating_add(1)),
        })
        .collect();
    let tally = StatsTally {
        rows: handlers.len(),
        over_threshold: handlers
            .iter()
            .filter(|(_, h)| h.max_ns > threshold_ns)
            .map(|(name, _)| (*name).clone())
            .collect(),
        rt_migrating: 0,
    };
    (StatsRows::Irqs(rows), tally)
}

fn sched(scan: &Scan, top: usize) -> (StatsRows, StatsTally) {
    let mut tasks: Vec<_> = scan
        .tasks
        .iter()
        .filter(|(_, t)| t.wakeups > 0 || t.migrations > 0)
        .collect();
    tasks.sort_by_key(|(_, t)| std::cmp::Reverse(t.max_ns));
    let rows = tasks
        .iter()
        .take(top)
        .map(|(pid, t)| TaskRow {
            comm: t.comm.clone(),
            pid: **pid,
            prio: t.prio,
            wakeups: t.wakeups,
            p99_ns: pct(&t.histogram, 0.99),
            max_ns: t.max_ns,
            max_at_ns: t.max_at.0,
            max_cpu: t.max_at.1,
            migrations: t.migrations,
        })
        .collect();
    let tally = StatsTally {
        rows: tasks.len(),
        over_threshold: Vec::new(),
        rt_migrating: tasks
            .iter()
            .filter(|(_, t)| t.prio < 100 && t.migrations > 0)
            .count(),
    };
    (StatsRows::Sched(rows), tally)
}

fn wakeups(scan: &Scan) -> (StatsRows, StatsTally) {
    let rows: Vec<CpuRow> = scan
        .rt_histograms
        .iter()
        .map(|(cpu, h)| CpuRow {
            cpu: *cpu,
            wakeups: h.count(),
            min_ns: h.buckets().next().map_or(0, |(lo, _, _)| lo),
            p50_ns: pct(h, 0.5),
            p99_ns: pct(h, 0.99),
            p99_9_ns: pct(h, 0.999),
            max_ns: scan.rt_max.get(cpu).copied().unwrap_or(0),
            histogram: h.clone(),
        })
        .collect();
    let tally = StatsTally {
        rows: rows.len(),
        ..StatsTally::default()
    };
    (StatsRows::Wakeups(rows), tally)
}
