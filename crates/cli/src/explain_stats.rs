//! `rtlab explain irqs|sched|wakeups TRACEFILE`: what engineers measure by hand with tracers, from the
//! ordinary scheduler, IRQ and timer events of a whole trace — each interrupt handler's and
//! softirq's durations (the slow top halves, without function_graph or kretprobes), each
//! task's wake-up-to-run delay and migrations (the maximum run delay that took a patched
//! schedstat), and each CPU's wake-up latency of real-time tasks (the old RT patch's latency
//! histograms). It also owns opening a trace for one streaming pass, which `rtlab explain`
//! shares. The statistics are the trace
//! room's ([`trace::explain::stats`]), their text and JSON the report room's.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use anyhow::{Context, Result};
use trace::explain;

use crate::console;
use crate::exit::{Exit, UsageError};
use crate::flags::{Analysis, ExplainFormat};

/// Opens a trace file for one streaming pass: text for the line reader, or a trace-cmd
/// recording (trace.dat) opened with its metadata. A regular file is read through a memory
/// mapping ([`sys::mapped`]); anything else with `read`.
pub(crate) fn open(path: &Path) -> Result<Opened> {
    let io_error =
        |e: &std::io::Error| UsageError(format!("{}: {}", path.display(), files::plain_io(e)));
    let file = File::open(path).map_err(|e| io_error(&e))?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(UsageError(format!(
            "{}: it is a directory; name a trace file",
            path.display()
        ))
        .into());
    }
    let mut input = match sys::mapped::Mapped::of(&file) {
        Some(map) => Input::Mapped(sys::mapped::MappedReader::new(map)),
        None => Input::Read(BufReader::with_capacity(1 << 20, file)),
    };
    let head = input.fill_buf().map_err(|e| io_error(&e))?;
    if !tracedat::is_trace_dat(head) {
        return Ok(Opened::Text(input));
    }
    let dat = match input {
        Input::Mapped(r) => tracedat::open_any(MappedAt(r.into_inner())),
        Input::Read(r) => {
            let file = r.into_inner();
            if !file.metadata().is_ok_and(|m| m.is_file()) {
                return Err(UsageError(format!(
                    "{}: a trace.dat is read at offsets, and this is a pipe or a device; save it to a file and give that",
                    path.display()
                ))
                .into());
            }
            tracedat::open_any(file)
        }
    }
    .map_err(|e| {
        UsageError(format!(
            "{}: {e}; `trace-cmd report {}` shows whether trace-cmd reads it",
            path.display(),
            path.display()
        ))
    })?;
    Ok(Opened::Dat(Box::new(dat)))
}

/// A trace's bytes: mapped, or read from a file that cannot be (one type, so each pass is
/// compiled once).
pub(crate) enum Input {
    Mapped(sys::mapped::MappedReader),
    Read(BufReader<File>),
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Input::Mapped(r) => r.read(buf),
            Input::Read(r) => r.read(buf),
        }
    }
}

impl BufRead for Input {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        match self {
            Input::Mapped(r) => r.fill_buf(),
            Input::Read(r) => r.fill_buf(),
        }
    }

    fn consume(&mut self, amt: usize) {
        match self {
            Input::Mapped(r) => r.consume(amt),
            Input::Read(r) => r.consume(amt),
        }
    }
}

/// A mapped recording, read at offsets.
struct MappedAt(sys::mapped::Mapped);

impl tracedat::ReadAt for MappedAt {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        Ok(self.0.read_at(buf, offset))
    }

    fn size(&self) -> std::io::Result<u64> {
        Ok(self.0.bytes().len() as u64)
    }
}

/// The text a latency tracer's recording at `path` holds instead of events (trace-cmd
/// records `-p wakeup_rt`, `irqsoff`... as the tracer's own report); `None` for a recording
/// of events.
pub(crate) fn dat_text(path: &Path) -> Result<Option<String>> {
    let Opened::Dat(dat) = open(path)? else {
        return Ok(None);
    };
    let refused = |what: String| UsageError(format!("{}: {what}", path.display()));
    let Some(bytes) = dat
        .latency_text(model::limits::MAX_TRACEDAT_SECTION_BYTES)
        .map_err(|e| refused(e.to_string()))?
    else {
        return Ok(None);
    };
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| refused("the latency tracer's text in it is not UTF-8".to_string()).into())
}

/// Whether `path` starts as a trace-cmd recording does (false when it cannot be read: the
/// open that follows says why).
pub(crate) fn is_dat(path: &Path) -> bool {
    let mut head = [0u8; 10];
    File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok_and(|()| tracedat::is_trace_dat(&head))
}

/// A trace file, opened.
pub(crate) enum Opened {
    /// Text, read line by line.
    Text(Input),
    /// A trace-cmd recording.
    Dat(Box<tracedat::AnyDat>),
}

/// Reads the trace at `path` once: the first pass, and what reading a recording's metadata
/// left out (nothing for text).
pub(crate) fn scan(path: &Path) -> Result<(explain::Scan, Vec<String>)> {
    let name = path.display().to_string();
    let (scan, notes) = match open(path)? {
        Opened::Text(r) => (explain::scan(r), Vec::new()),
        Opened::Dat(dat) => (
            explain::scan_source(&mut trace::dat::Dat::new(&dat)),
            dat.notes.clone(),
        ),
    };
    Ok((scan.with_context(|| format!("reading {name}"))?, notes))
}

/// Reads the trace at `path` once more: the windows of `specs`.
pub(crate) fn collect(path: &Path, specs: &[explain::WindowSpec]) -> Result<Vec<explain::Window>> {
    let name = path.display().to_string();
    let windows = match open(path)? {
        Opened::Text(r) => explain::collect(r, specs, false),
        Opened::Dat(dat) => explain::collect_source(&mut trace::dat::Dat::new(&dat), specs, false),
    };
    windows.with_context(|| format!("reading {name}"))
}

/// Runs one analysis: the trace's statistics from the trace room, rendered by the report room.
pub fn run(analysis: &Analysis) -> Result<Exit> {
    let (args, kind) = match analysis {
        Analysis::Irqs(a) => (a, explain::Analysis::Irqs),
        Analysis::Sched(a) => (a, explain::Analysis::Sched),
        Analysis::Wakeups(a) => (a, explain::Analysis::Wakeups),
    };
    let name = args.trace.display().to_string();
    let (scan, _) = scan(&args.trace)?;
    if scan.read.events == 0 {
        return Err(crate::exit::UsageError(format!(
            "{name}: no trace events in it; give the kernel's trace text, trace-cmd report output or a trace.dat"
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
