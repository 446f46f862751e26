//! `rtlab trace` and `trace record`.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use model::{CpuSpec, Nanos};

use super::values::{parse_cpu_spec, parse_time};

/// `rtlab trace` commands.
#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Record a kernel trace into FILE (a trace.dat, or text with --format text): the
    /// scheduler, IRQ, softirq, timer, IPI and workqueue events `rtlab explain` reads (or
    /// --events), in a private tracefs instance with the mono clock, for --duration or until
    /// Ctrl-C.
    #[command(after_long_help = super::help::TRACE_RECORD)]
    Record(RecordArgs),
}

/// What `rtlab trace record` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RecordFormat {
    /// trace-cmd's binary trace.dat.
    Dat,
    /// The kernel's trace text.
    Text,
}

/// Options of `rtlab trace record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Where to write the trace (written whole when recording ends, or not at all).
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// What FILE holds: `dat`, trace-cmd's binary trace.dat (version 7, zstd: the ring
    /// buffers' pages as the kernel keeps them, read by `rtlab explain`, `trace-cmd report`
    /// and KernelShark), or `text`, the kernel's trace text.
    #[arg(long, value_name = "FORMAT", value_enum, default_value = "dat")]
    pub format: RecordFormat,
    /// How long to record; Ctrl-C ends it earlier and still writes the file.
    #[arg(short = 'D', long, value_name = "TIME", value_parser = parse_time, default_value = "10s")]
    pub duration: Nanos,
    /// Events to record instead of the explanation's set: comma-separated groups (`sched`)
    /// or group/event names (`irq/irq_handler_entry`), as under events/ in tracefs.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub events: Option<Vec<String>>,
    /// Ring buffer per CPU, such as 8M (a bare number is KiB): the oldest events are overwritten when it is full (as
    /// `rtlab measure --trace-buffer`).
    #[arg(long = "trace-buffer", alias = "buffer", value_name = "SIZE", default_value_t = 4096, value_parser = super::values::parse_trace_buffer)]
    pub buffer: u64,
    /// CPUs to record: a list like 0-3,6, `all`, or `!0` (all but 0). Default: all online.
    #[arg(short = 'a', long, value_name = "LIST", value_parser = parse_cpu_spec)]
    pub cpus: Option<CpuSpec>,
}
