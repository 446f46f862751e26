//! The tracers' own entries in a recording (`trace-cmd record -p timerlat`, `-p hwlat`, with
//! the osnoise events): which tracer a recording holds, and each entry as the kernel's trace
//! text prints it, so the timerlat and hwlat readers of [`crate::timerlat`] and
//! [`crate::hwlat`] read a recording as they read the tracer's `trace` file.
//!
//! The fields are read by name from the file's own formats (`ftrace/timerlat`: `seqnum`,
//! `context`, `timer_latency`; `ftrace/hwlat`: `seqnum`, `duration`, `outer_duration`,
//! `tv_sec` and `tv_nsec` (or one `timestamp` struct), `count`, `nmi_total_ts`, `nmi_count`;
//! `osnoise/*_noise`: `start`, `duration` and the source's name and number).

use std::fmt::Write;

use tracedat::{Endian, EventFormat, ReadAt, TraceDat};

use crate::error::ParseError;

/// A tracer whose entries a recording holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tracer {
    /// timerlat: one entry per activation and context.
    Timerlat,
    /// hwlat: one entry per sample over the threshold.
    Hwlat,
}

impl Tracer {
    fn of(f: &EventFormat) -> Option<Tracer> {
        match (f.system.as_str(), f.name.as_str()) {
            ("ftrace", "timerlat") => Some(Tracer::Timerlat),
            ("ftrace", "hwlat") => Some(Tracer::Hwlat),
            _ => None,
        }
    }
}

/// Records looked at to tell a tracer's recording (its entries come every activation or
/// sample window, from the start).
pub const PROBE_RECORDS: u64 = 100_000;

/// The tracer whose entries appear among the first [`PROBE_RECORDS`] records of `dat`'s
/// buffers; `None` for a recording of events only. Every kernel with the tracers describes
/// their entries, so the formats alone do not tell.
pub fn probe<R: ReadAt>(dat: &TraceDat<R>) -> Option<Tracer> {
    let ids: Vec<(u64, Tracer)> = dat
        .formats
        .all()
        .iter()
        .filter_map(|f| Some((u64::from(f.id), Tracer::of(f)?)))
        .collect();
    if ids.is_empty() {
        return None;
    }
    let mut events = dat.events_merged();
    let mut seen = 0;
    while let Some(item) = events.next() {
        if let tracedat::Item::Event(r) = item
            && let Some(id) = dat.endian.uint(r.data, 2)
            && let Some((_, t)) = ids.iter().find(|(i, _)| *i == id)
        {
            return Some(*t);
        }
        seen += 1;
        if seen >= PROBE_RECORDS {
            break;
        }
    }
    None
}

/// Whether `f` is a tracer entry, which the kernel prints without an event name.
pub(super) fn is_entry(f: &EventFormat) -> bool {
    Tracer::of(f).is_some()
}

/// The fields of a tracer entry or an osnoise noise event as the kernel prints them; false
/// when `f` is neither (or a field is missing: the caller prints the record's fields).
pub(super) fn fields(out: &mut String, f: &EventFormat, d: &[u8], e: Endian) -> bool {
    let start = out.len();
    let done = match (f.system.as_str(), f.name.as_str()) {
        ("ftrace", "timerlat") => timerlat_entry(out, f, d, e),
        ("ftrace", "hwlat") => hwlat_entry(out, f, d, e),
        ("osnoise", name) if name.ends_with("_noise") => noise(out, f, d, e),
        _ => None,
    };
    if done.is_none() {
        out.truncate(start);
    }
    done.is_some()
}

fn uint(f: &EventFormat, name: &str, d: &[u8], e: Endian) -> Option<u64> {
    f.field(name)?.uint(d, e)
}

/// `#SEQ context irq|thread|user-ret timer_latency N ns`.
fn timerlat_entry(out: &mut String, f: &EventFormat, d: &[u8], e: Endian) -> Option<()> {
    let seq = uint(f, "seqnum", d, e)?;
    let context = match f.field("context")?.int(d, e)? {
        0 => "irq",
        1 => "thread",
        2 => "user-ret",
        _ => return None,
    };
    let ns = uint(f, "timer_latency", d, e)?;
    write!(
        out,
        "#{seq:<5} context {context:>6} timer_latency {ns:>9} ns"
    )
    .ok()
}

/// `#SEQ inner/outer(us): I/O ts:SECS.NSECS count:N`, with ` nmi-total:T nmi-count:C` when
/// NMIs ran.
fn hwlat_entry(out: &mut String, f: &EventFormat, d: &[u8], e: Endian) -> Option<()> {
    let seq = uint(f, "seqnum", d, e)?;
    let inner = uint(f, "duration", d, e)?;
    let outer = uint(f, "outer_duration", d, e)?;
    let (secs, nsecs) = wall_time(f, d, e)?;
    let count = uint(f, "count", d, e)?;
    write!(
        out,
        "#{seq:<5} inner/outer(us): {inner:>4}/{outer:<5} ts:{secs}.{nsecs:09} count:{count}"
    )
    .ok()?;
    let nmi_total = uint(f, "nmi_total_ts", d, e).unwrap_or(0);
    if nmi_total > 0 {
        let nmi_count = uint(f, "nmi_count", d, e).unwrap_or(0);
        write!(out, " nmi-total:{nmi_total} nmi-count:{nmi_count}").ok()?;
    }
    Some(())
}

/// The sample's wall-clock time: the format's `tv_sec` and `tv_nsec` fields (as kernels
/// describe the `struct timespec64`), or the struct as one `timestamp` field (seconds, 8 bytes,
/// then nanoseconds, a kernel `long`).
fn wall_time(f: &EventFormat, d: &[u8], e: Endian) -> Option<(u64, u64)> {
    if let (Some(s), Some(n)) = (f.field("tv_sec"), f.field("tv_nsec")) {
        return Some((s.uint(d, e)?, n.uint(d, e)?));
    }
    let ts = f.field("timestamp")?;
    let at = usize::from(ts.offset);
    let secs = e.uint(d.get(at..)?, 8)?;
    let nsec_len = usize::from(ts.size)
        .checked_sub(8)
        .filter(|n| *n == 4 || *n == 8)?;
    Some((secs, e.uint(d.get(at + 8..)?, nsec_len)?))
}

/// `NAME:ID start SECS.NSECS duration N ns` (`start ...` alone for an NMI).
fn noise(out: &mut String, f: &EventFormat, d: &[u8], e: Endian) -> Option<()> {
    let start = uint(f, "start", d, e)?;
    let duration = uint(f, "duration", d, e)?;
    let source = match f.name.as_str() {
        "irq_noise" => Some((
            f.field("desc")?.str(d, e)?.to_string(),
            uint(f, "vector", d, e)?,
        )),
        "softirq_noise" => {
            let vector = uint(f, "vector", d, e)?;
            let name = f
                .symbols("__print_symbolic")
                .into_iter()
                .find(|(v, _)| *v == vector)
                .map_or_else(|| vector.to_string(), |(_, n)| n);
            Some((name, vector))
        }
        "thread_noise" => Some((
            f.field("comm")?.str(d, e)?.to_string(),
            uint(f, "pid", d, e)?,
        )),
        "nmi_noise" => None,
        _ => return None,
    };
    match source {
        // The kernel pads softirq and thread names to 8, not interrupts'.
        Some((name, id)) if f.name == "irq_noise" => write!(out, "{name}:{id} ").ok()?,
        Some((name, id)) => write!(out, "{name:>8}:{id} ").ok()?,
        None => {}
    }
    write!(
        out,
        "start {}.{:09} duration {duration} ns",
        start / 1_000_000_000,
        start % 1_000_000_000
    )
    .ok()
}

/// Each item of `dat`'s buffers (merged) as a line of the kernel's trace text (a loss as the
/// kernel's `CPU:N [LOST M EVENTS]`), with the event's name.
fn each_line<R: ReadAt>(
    dat: &TraceDat<R>,
    visit: &mut dyn FnMut(&str, &str),
) -> std::io::Result<()> {
    let mut src = super::Dat::new(dat);
    crate::source::Source::keep_lines(&mut src, true);
    src.ns_lines(true);
    let mut lost = String::new();
    crate::source::Source::each(&mut src, &mut |item| match item {
        crate::source::Item::Event(e, _) => visit(e.name, e.line),
        crate::source::Item::Lost { cpu, events } => {
            lost.clear();
            let _ = write!(lost, "CPU:{} [LOST ", cpu.unwrap_or(0));
            let _ = match events {
                Some(n) => write!(lost, "{n} EVENTS]"),
                None => write!(lost, "EVENTS]"),
            };
            visit("", &lost);
        }
        _ => {}
    })
}

/// A parse error's line made a record's number (the text was rendered, not read).
fn at_record(e: ParseError) -> ParseError {
    ParseError {
        line: e.line,
        what: format!("record {}: {}", e.line, e.what),
    }
}

/// The timerlat tracer's recording read as its trace text is ([`crate::timerlat::parse`]):
/// the samples, and the auto-analysis of the osnoise events and other events recorded with
/// them.
pub fn timerlat<R: ReadAt>(dat: &TraceDat<R>) -> Result<crate::timerlat::TimerlatReport, String> {
    let mut parser = crate::timerlat::Parser::default();
    let mut failed = None;
    each_line(dat, &mut |_, line| {
        if failed.is_none()
            && let Err(e) = parser.line(line)
        {
            failed = Some(at_record(e));
        }
    })
    .map_err(|e| e.to_string())?;
    if let Some(e) = failed {
        return Err(e.what);
    }
    parser.finish().map_err(|e| e.what)
}

/// Entries of a hwlat recording held at once (one per sampling window over the threshold).
pub const MAX_HWLAT_TEXT: usize = 64 << 20;

/// The hwlat tracer's recording read as its trace text is ([`crate::hwlat::parse`]).
pub fn hwlat<R: ReadAt>(dat: &TraceDat<R>) -> Result<crate::hwlat::HwlatReport, String> {
    crate::hwlat::parse(&hwlat_text(dat)?).map_err(|e| e.what)
}

/// A hwlat recording's samples as the tracer's `trace` file shows them: the header (the
/// tracer, the CPU count) and one line per sample, at most [`MAX_HWLAT_TEXT`] bytes.
pub fn hwlat_text<R: ReadAt>(dat: &TraceDat<R>) -> Result<String, String> {
    let cpus = dat
        .options
        .cpu_count
        .unwrap_or(dat.buffers.first().map_or(0, |b| b.cpus.len() as u32));
    let mut text =
        format!("# tracer: hwlat\n#\n# entries-in-buffer/entries-written: 0/0   #P:{cpus}\n");
    let mut over = false;
    each_line(dat, &mut |name, line| {
        if name == "hwlat" && !over {
            over = text.len() + line.len() >= MAX_HWLAT_TEXT;
            text.push_str(line);
            text.push('\n');
        }
    })
    .map_err(|e| e.to_string())?;
    if over {
        return Err(format!(
            "more than {} MiB of hwlat samples; rtlab reads hwlat recordings up to that",
            MAX_HWLAT_TEXT >> 20
        ));
    }
    Ok(text)
}
