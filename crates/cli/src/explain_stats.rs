//! `rtlab explain irqs|sched|wakeups TRACEFILE`: what talk 001 measured by hand, from the
//! ordinary scheduler, IRQ and timer events of a whole trace — each interrupt handler's and
//! softirq's durations (the slow top halves, without function_graph or kretprobes), each
//! task's wake-up-to-run delay and migrations (the maximum run delay that took a patched
//! schedstat), and each CPU's wake-up latency of real-time tasks (the old RT patch's latency
//! histograms). It also owns what the explain commands share: the analyses' arguments, the
//! output formats and opening a trace for one streaming pass. The statistics are the trace
//! room's ([`trace::explain::stats`]), their text and JSON the report room's.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use model::Nanos;
use model::nanos::parse_nanos;
use trace::explain;

use crate::console;
use crate::exit::{Exit, UsageError};

/// The analyses.
#[derive(Debug, Subcommand)]
pub enum Analysis {
    /// Interrupt handler and softirq durations per handler: count, mean, p99, maximum, and
    /// the handlers slower than --threshold (slow top halves).
    #[command(after_long_help = crate::exit::help::ANALYSIS)]
    Irqs(AnalysisArgs),
    /// Each task's delay from wake-up to running (the maximum run delay) and its migrations.
    #[command(after_long_help = crate::exit::help::ANALYSIS)]
    Sched(AnalysisArgs),
    /// Each CPU's wake-up latency of real-time tasks' timer wake-ups, from tracepoints.
    #[command(after_long_help = crate::exit::help::ANALYSIS)]
    Wakeups(AnalysisArgs),
}

/// Options of the analyses.
#[derive(Debug, Args)]
pub struct AnalysisArgs {
    /// The trace file.
    #[arg(value_name = "TRACEFILE")]
    pub trace: std::path::PathBuf,
    /// Flag handlers and tasks whose maximum is above TIME.
    #[arg(long, value_name = "TIME", value_parser = parse_nanos, default_value = "50us")]
    pub threshold: Nanos,
    /// Rows to show at most.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub top: usize,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: ExplainFormat,
}

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExplainFormat {
    /// Stories and tables.
    Text,
    /// JSON (`rtlab.explain/1`; the analyses `rtlab.trace-stats/1`).
    Json,
}

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

/// Runs one analysis: the trace's statistics from the trace room, rendered by the report room.
pub fn run(analysis: &Analysis) -> Result<Exit> {
    let (args, kind) = match analysis {
        Analysis::Irqs(a) => (a, explain::Analysis::Irqs),
        Analysis::Sched(a) => (a, explain::Analysis::Sched),
        Analysis::Wakeups(a) => (a, explain::Analysis::Wakeups),
    };
    let name = args.trace.display().to_string();
    let scan = explain::scan(open(&args.trace)?).with_context(|| format!("reading {name}"))?;
    if scan.read.events == 0 {
        return Err(crate::exit::UsageError(format!(
            "{name}: no trace events in it; give the kernel's trace text or trace-cmd report output"
        ))
        .into());
    }
    let (doc, tally) = explain::stats(&scan, kind, &name, args.threshold.get(), args.top);
    let out = match args.format {
        ExplainFormat::Text => report::explain_stats::stats_text(&doc, &tally),
        ExplainFormat::Json => report::explain_stats::stats_json(&doc),
    };
    console::print_stdout(&out)?;
    Ok(Exit::Ok)
}
