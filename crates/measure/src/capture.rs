//! The binary capture of a stopped tracefs instance: its ring buffers read raw
//! (`trace_pipe_raw`, [`sys::raw_trace`]) into a trace.dat (version 7) in memory or in a file —
//! what `rtlab trace record` writes and what `measure --trace` explains from. The kernel
//! formats no text; the only work is copying pages, after the measurement is over.

use std::path::Path;

use sys::Root;
use sys::trace_instance::Instance;
use sys::tracefs::Tracefs;
use tracedat::{Compression, Contents};

/// The most bytes of pages read from one CPU: twice its buffer, a guard against a buffer
/// that keeps filling (the instance is stopped first, so it cannot).
fn limit(buffer_kb: u64) -> usize {
    usize::try_from(buffer_kb.saturating_mul(2048))
        .unwrap_or(usize::MAX)
        .max(1 << 20)
}

/// Reads the stopped `instance`'s buffers of its CPUs into a recording's contents: the formats
/// of `events`, kallsyms, task names, `clock`.
pub(crate) fn contents(
    instance: &Instance,
    root: &Root,
    events: &[String],
    clock: &str,
    buffer_kb: u64,
) -> Result<Contents, String> {
    let top = Tracefs::find(root).ok_or("tracefs is not mounted")?;
    let cpus = instance.buffer_cpus();
    let raw = instance
        .read_raw(&top, root, events, &cpus, limit(buffer_kb))
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
    })
}

/// The recording as a trace.dat in memory (uncompressed: it is read at once).
pub(crate) fn in_memory(c: &Contents) -> Result<tracedat::TraceDat<Vec<u8>>, String> {
    let mut bytes = Vec::new();
    tracedat::write_v7(c, Compression::None, &mut bytes).map_err(|e| e.to_string())?;
    tracedat::TraceDat::open(bytes).map_err(|e| format!("the recording does not read back ({e})"))
}

/// Writes the recording to `path` (zstd-compressed version 7), whole or not at all: into a
/// `.partial` file first, synced, then renamed. The bytes written.
pub fn write_file(c: &Contents, path: &Path) -> std::io::Result<u64> {
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
