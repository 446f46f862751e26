//! The binary capture of a stopped tracefs instance: its ring buffers read raw
//! (`trace_pipe_raw`, [`sys::raw_trace`]) into a trace.dat (version 7) in memory or in a file —
//! what `rtlab trace record` writes and what `measure --trace` explains from. The kernel
//! formats no text; the only work is copying pages, after the measurement is over.

use std::path::{Path, PathBuf};

use model::explain::TraceCapture;
use model::measure::MeasureRun;
use sys::Root;
use sys::raw_trace::Buffer;
use sys::trace_instance::Instance;
use sys::tracefs::Tracefs;
use trace::explain::{self, WindowSpec};
use tracedat::{Compression, Contents};

/// The most bytes of pages read from one CPU: twice its buffer, a guard against a buffer
/// that keeps filling (the instance is stopped first, so it cannot).
fn limit(buffer_kb: u64) -> usize {
    usize::try_from(buffer_kb.saturating_mul(2048))
        .unwrap_or(usize::MAX)
        .max(1 << 20)
}

/// Reads the stopped `instance`'s buffers of its CPUs (the recording ones, or the snapshot)
/// into a recording's contents: the formats of `events`, kallsyms, task names, `clock`.
pub(crate) fn contents(
    instance: &Instance,
    root: &Root,
    events: &[String],
    clock: &str,
    buffer_kb: u64,
    buffer: Buffer,
) -> Result<Contents, String> {
    let top = Tracefs::find(root).ok_or("tracefs is not mounted")?;
    let cpus = instance.buffer_cpus();
    let raw = instance
        .read_raw(&top, root, events, &cpus, limit(buffer_kb), buffer)
        .map_err(|e| format!("reading the ring buffers failed ({e})"))?;
    let long_size = if cfg!(target_pointer_width = "64") {
        8
    } else {
        4
    };
    let online = sys::cpu::online(root)
        .map(|c| c.iter().count())
        .unwrap_or(cpus.len());
    Ok(Contents {
        endian: if cfg!(target_endian = "big") {
            tracedat::Endian::Big
        } else {
            tracedat::Endian::Little
        },
        long_size,
        host_page_size: u32::try_from(sys::mem::page_size()).unwrap_or(4096),
        header_page: raw.header_page,
        header_event: raw.header_event,
        ftrace_formats: raw.ftrace_formats,
        systems: raw.systems,
        kallsyms: raw.kallsyms,
        printk: raw.printk,
        cmdlines: raw.cmdlines,
        clock: clock.to_string(),
        uname: sys::raw_trace::uname(root),
        recorder: format!("rtlab {}", env!("CARGO_PKG_VERSION")),
        cpu_count: u32::try_from(online).unwrap_or(u32::MAX),
        cpu_stats: raw.cpu_stats,
        page_size: raw.page_size,
        cpus: raw.cpus,
        latency: None,
        instances: Vec::new(),
    })
}

/// The recording as a trace.dat in memory (uncompressed: it is read at once).
pub(crate) fn in_memory(c: &Contents) -> Result<tracedat::AnyDat, String> {
    let mut bytes = Vec::new();
    tracedat::write_v7(c, Compression::None, &mut bytes).map_err(|e| e.to_string())?;
    tracedat::open_any(bytes).map_err(|e| format!("the recording does not read back ({e})"))
}

/// Writes the recording to `path` (zstd-compressed version 7), whole or not at all: into a
/// `.partial` file first, synced, then renamed. The bytes written.
pub fn write_file(c: &Contents, path: &Path) -> std::io::Result<u64> {
    let (target, special) = files::output_target(path).map_err(std::io::Error::other)?;
    if special {
        // A device, FIFO or descriptor: streamed into as it is, never replaced.
        let file = std::fs::OpenOptions::new().append(true).open(&target)?;
        let mut out = std::io::BufWriter::new(file);
        let n = tracedat::write_v7(c, Compression::Zstd, &mut out)?;
        std::io::Write::flush(&mut out)?;
        return Ok(n);
    }
    let path = target.as_path();
    let tmp = path.with_extension("partial");
    let written = (|| {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
        let n = tracedat::write_v7(c, Compression::Zstd, &mut file)?;
        let file = file.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        Ok(n)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Copies the trace into `dir`; the file's path.
pub(crate) fn keep(
    trace: &Trace<'_>,
    dir: &std::path::Path,
    run: &MeasureRun,
) -> std::io::Result<PathBuf> {
    let stamp: String = run
        .started_at
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .take(15)
        .collect();
    let ext = match trace {
        Trace::Dat(..) => "dat",
        Trace::Text(_) => "txt",
    };
    let path = dir.join(format!("rtlab-trace-{}-{stamp}.{ext}", run.host.hostname));
    files::create_dir_all(dir)?;
    match trace {
        Trace::Dat(contents, _) => crate::capture::write_file(contents, &path).map(|_| path),
        Trace::Text(instance) => instance.copy_trace(&path, false).map(|_| path),
    }
}

/// The buffers read raw into a trace.dat; the kernel's text only where that fails (a note
/// says why).
pub(crate) fn read_trace<'a>(
    instance: &'a Instance,
    root: &Root,
    buffer_kb: u64,
    capture: &mut TraceCapture,
) -> Trace<'a> {
    let read = read_dat(instance, root, buffer_kb, capture, Buffer::Recording);
    match read {
        Ok((contents, dat)) => Trace::Dat(Box::new(contents), Box::new(dat)),
        Err(why) => {
            capture
                .notes
                .push(format!("{why}: the trace is read as text"));
            Trace::Text(instance)
        }
    }
}

/// The snapshot buffer ([`Instance::snapshot`]) read raw into a trace.dat; `None` (and a
/// note saying why) when it cannot be read.
pub(crate) fn read_snapshot<'a>(
    instance: &Instance,
    root: &Root,
    buffer_kb: u64,
    capture: &mut TraceCapture,
) -> Option<Trace<'a>> {
    match read_dat(instance, root, buffer_kb, capture, Buffer::Snapshot) {
        Ok((contents, dat)) => Some(Trace::Dat(Box::new(contents), Box::new(dat))),
        Err(why) => {
            capture.notes.push(format!(
                "the snapshot of the worst spike could not be read: {why}"
            ));
            None
        }
    }
}

fn read_dat(
    instance: &Instance,
    root: &Root,
    buffer_kb: u64,
    capture: &TraceCapture,
    buffer: Buffer,
) -> Result<(tracedat::Contents, tracedat::AnyDat), String> {
    contents(
        instance,
        root,
        &capture.events,
        &capture.clock,
        buffer_kb,
        buffer,
    )
    .and_then(|c| in_memory(&c).map(|dat| (c, dat)))
}

/// The stopped trace, as it is read: a trace.dat of the raw buffers (in memory), or the
/// instance's text.
pub(crate) enum Trace<'a> {
    Dat(Box<tracedat::Contents>, Box<tracedat::AnyDat>),
    Text(&'a Instance),
}

impl Trace<'_> {
    /// The first pass.
    pub(crate) fn scan(&self) -> std::io::Result<explain::Scan> {
        match self {
            Trace::Dat(_, dat) => explain::scan_source(&mut trace::dat::Dat::new(dat)),
            Trace::Text(instance) => instance.open_trace().and_then(explain::scan),
        }
    }

    /// The windows of `specs`, with their lines.
    pub(crate) fn collect(&self, specs: &[WindowSpec]) -> std::io::Result<Vec<explain::Window>> {
        match self {
            Trace::Dat(_, dat) => {
                explain::collect_source(&mut trace::dat::Dat::new(dat), specs, true)
            }
            Trace::Text(instance) => instance
                .open_trace()
                .and_then(|r| explain::collect(r, specs, true)),
        }
    }
}
