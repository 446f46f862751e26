//! `rtlab explain irqs|sched|wakeups TRACEFILE`: what engineers measure by hand with tracers, from the
//! ordinary scheduler, IRQ and timer events of a whole trace — each interrupt handler's and
//! softirq's durations (the slow top halves, without function_graph or kretprobes), each
//! task's wake-up-to-run delay and migrations (the maximum run delay that took a patched
//! schedstat), and each CPU's wake-up latency of real-time tasks (the old RT patch's latency
//! histograms). It also owns opening a trace for one streaming pass, which `rtlab explain`
//! shares. The statistics are the trace
//! room's ([`trace::explain::stats`]), their text and JSON the report room's.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use anyhow::{Context, Result};
use trace::explain;

use crate::console;
use crate::exit::{Exit, UsageError};
use crate::flags::{Analysis, ExplainFormat};

/// Opens a trace file for one streaming pass.
pub(crate) fn open(path: &Path) -> Result<BufReader<File>> {
    let file = File::open(path)
        .map_err(|e| UsageError(format!("{}: {}", path.display(), files::plain_io(&e))))?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(UsageError(format!(
            "{}: it is a directory; name a trace file",
            path.display()
        ))
        .into());
    }
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let head = std::io::BufRead::fill_buf(&mut reader)
        .map_err(|e| UsageError(format!("{}: {}", path.display(), files::plain_io(&e))))?;
    if trace::is_trace_cmd_data(head) {
        return Err(UsageError(format!(
            "{0}: this is a trace-cmd recording (trace.dat), not trace text; run `trace-cmd report {0} > trace.txt` and give trace.txt to rtlab",
            path.display()
        ))
        .into());
    }
    Ok(reader)
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
