//! `rtlab trace record`: a plain capture in a private tracefs instance (the events `rtlab
//! explain` reads, or `--events`), for a duration or until Ctrl-C, written as the kernel's
//! trace text; nothing else in tracefs is touched and the instance is removed.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Result;
use clap::{Args, Subcommand};
use model::nanos::parse_nanos;
use model::{CpuSpec, Nanos};
use sys::Root;
use sys::signals::TerminationSignals;

use crate::console;
use crate::exit::{Exit, UsageError};

/// `rtlab trace` commands.
#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Record a kernel trace into FILE: the scheduler, IRQ, softirq, timer, IPI and workqueue
    /// events `rtlab explain` reads (or --events), in a private tracefs instance with the mono
    /// clock, for --duration or until Ctrl-C.
    #[command(after_long_help = crate::exit::help::TRACE_RECORD)]
    Record(RecordArgs),
}

/// Options of `rtlab trace record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Where to write the trace text (written whole when recording ends, or not at all).
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// How long to record; Ctrl-C ends it earlier and still writes the file.
    #[arg(short = 'D', long, value_name = "TIME", value_parser = parse_nanos, default_value = "10s")]
    pub duration: Nanos,
    /// Events to record instead of the explanation's set: comma-separated groups (`sched`)
    /// or group/event names (`irq/irq_handler_entry`), as under events/ in tracefs.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub events: Option<Vec<String>>,
    /// Ring buffer per CPU, in KiB: the oldest events are overwritten when it is full.
    #[arg(long, value_name = "KIB", default_value_t = 4096, value_parser = clap::value_parser!(u64).range(64..=1_048_576))]
    pub buffer: u64,
    /// CPUs to record (default: all online).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<CpuSpec>,
}

/// `rtlab trace`.
pub fn run(command: &TraceCommand, root: &Root) -> Result<Exit> {
    match command {
        TraceCommand::Record(args) => record(args, root),
    }
}

fn record(args: &RecordArgs, root: &Root) -> Result<Exit> {
    if args.duration.get() == 0 {
        return Err(UsageError("--duration 0 records nothing; give e.g. 10s".to_string()).into());
    }
    sys::fs::check_creatable(&args.output)
        .map_err(|e| UsageError(format!("-o {}: {e}", args.output.display())))?;
    let possible = sys::cpu::possible(root)?;
    let online = sys::cpu::online(root)?;
    let cpus = args
        .cpus
        .as_ref()
        .unwrap_or(&CpuSpec::All)
        .resolve(&possible, &online, &online)
        .map_err(|e| UsageError(format!("--cpus: {e}")))?;
    let signals = TerminationSignals::block()?;
    let rec = measure::Recording::start(root, args.buffer, cpus.iter(), args.events.as_deref())
        .map_err(|why| UsageError(format!("rtlab trace record: {why}")))?;
    let mut console = console::Console::new(false);
    for m in rec.missing() {
        console.warn(&format!("not recorded: {m}"));
    }
    let started = Instant::now();
    let total = args.duration.to_duration();
    let mut interrupted = false;
    while started.elapsed() < total {
        let left = total - started.elapsed();
        if signals.wait(left.min(Duration::from_millis(200))).is_some() {
            interrupted = true;
            break;
        }
    }
    let events = match rec.events().len() {
        1 => rec.events()[0].clone(),
        n => format!("{n} events"),
    };
    let clock = rec.clock().to_string();
    let (bytes, lost) = rec
        .finish(&args.output)
        .map_err(|e| UsageError(format!("-o {}: {e}", args.output.display())))?;
    // A signal that came while the trace was written is taken here, not at the exit.
    let _ = signals.wait(Duration::ZERO);
    console::print_stdout(&format!(
        "recorded {:.1} s{} of {events} on CPUs {cpus} (clock {clock}) into {} ({} KiB){}\n",
        started.elapsed().as_secs_f64(),
        if interrupted {
            " (stopped by a signal)"
        } else {
            ""
        },
        args.output.display(),
        bytes / 1024,
        if lost > 0 {
            format!("; {lost} events were overwritten (the buffer filled): raise --buffer")
        } else {
            String::new()
        }
    ))?;
    Ok(Exit::Ok)
}
