//! A stopped instance's ring buffers read as the kernel keeps them: each CPU's pages from
//! `per_cpu/cpuN/trace_pipe_raw`, with what a reader needs to decode them (the page and event
//! headers, the event formats, kallsyms, the saved task names, printk formats). This is what a
//! trace.dat holds; nothing is formatted as text by the kernel, and nothing is read while the
//! buffers record (the measured machine pays only the tracepoints).

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::trace_instance::Instance;
use crate::tracefs::Tracefs;
use crate::{Error, Result, Root};

/// What a trace.dat holds, as tracefs and procfs gave it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawCapture {
    /// `events/header_page`.
    pub header_page: Vec<u8>,
    /// `events/header_event`.
    pub header_event: Vec<u8>,
    /// `events/ftrace/*/format`.
    pub ftrace_formats: Vec<Vec<u8>>,
    /// The recorded systems' formats: (system, formats).
    pub systems: Vec<(String, Vec<Vec<u8>>)>,
    /// `/proc/kallsyms` (addresses hidden without the right to see them).
    pub kallsyms: Vec<u8>,
    /// `printk_formats`.
    pub printk: Vec<u8>,
    /// `saved_cmdlines`.
    pub cmdlines: Vec<u8>,
    /// The ring buffer's page size (from `header_page`).
    pub page_size: u32,
    /// Each CPU's pages.
    pub cpus: Vec<(u32, Vec<u8>)>,
    /// Each CPU's `stats`, as read before its pages.
    pub cpu_stats: Vec<String>,
}

/// The machine as `uname -a` names it (kernel, host, release, version, architecture), from
/// procfs.
pub fn uname(root: &Root) -> String {
    let read = |f: &str| {
        root.read_trimmed(format!("proc/sys/kernel/{f}"))
            .unwrap_or_default()
    };
    format!(
        "{} {} {} {} {}",
        read("ostype"),
        read("hostname"),
        read("osrelease"),
        read("version"),
        std::env::consts::ARCH
    )
}

/// The page size `header_page` describes: the data field's offset plus its size.
pub fn page_size(header_page: &str) -> Option<u32> {
    let line = header_page.lines().find(|l| l.contains(" data;"))?;
    let num = |key: &str| -> Option<u32> {
        let rest = &line[line.find(key)? + key.len()..];
        rest.split(';').next()?.trim().parse().ok()
    };
    num("offset:")?.checked_add(num("size:")?)
}

/// A tracefs file read with one large buffer: `header_page` and `header_event` answer only the
/// first read (a second at a non-zero offset returns nothing), so std's small first probe of a
/// file whose size is 0 would cut them at 32 bytes.
fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    let mut file = std::fs::File::open(path).map_err(|e| Error::from_io(path, e))?;
    let mut out = vec![0u8; 64 << 10];
    let mut len = 0;
    loop {
        if len == out.len() {
            out.resize(out.len() * 2, 0);
        }
        match file.read(&mut out[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::from_io(path, e)),
        }
    }
    out.truncate(len);
    Ok(out)
}

/// The formats of the events `events` names (`sched`, `irq/irq_handler_entry`), by system, in
/// the order named; events the kernel lacks are left out.
fn formats(top: &Tracefs, events: &[String]) -> Vec<(String, Vec<Vec<u8>>)> {
    let mut systems: Vec<(String, Vec<Vec<u8>>)> = Vec::new();
    let base = top.dir().join("events");
    for spec in events {
        let (system, event) = match spec.split_once('/') {
            Some((s, e)) => (s, Some(e)),
            None => (spec.as_str(), None),
        };
        let dirs: Vec<String> = match event {
            Some(e) => vec![e.to_string()],
            None => std::fs::read_dir(base.join(system))
                .map(|d| {
                    let mut v: Vec<String> = d
                        .flatten()
                        .filter(|e| e.path().is_dir())
                        .filter_map(|e| e.file_name().to_str().map(str::to_string))
                        .collect();
                    v.sort();
                    v
                })
                .unwrap_or_default(),
        };
        let read: Vec<Vec<u8>> = dirs
            .iter()
            .filter_map(|d| read_bytes(&base.join(system).join(d).join("format")).ok())
            .collect();
        if read.is_empty() {
            continue;
        }
        match systems.iter_mut().find(|(s, _)| s == system) {
            Some((_, list)) => list.extend(read),
            None => systems.push((system.to_string(), read)),
        }
    }
    systems
}

/// The ftrace formats (`print`, `bprint`, `function`...): markers are `print` records.
fn ftrace_formats(top: &Tracefs) -> Vec<Vec<u8>> {
    let dir = top.dir().join("events/ftrace");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut names: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    names.sort();
    names
        .iter()
        .filter_map(|p| read_bytes(&p.join("format")).ok())
        .collect()
}

/// One CPU's pages: read until the buffer is empty, at most `limit` bytes (the buffer is
/// stopped, so it cannot refill; the bound only guards a kernel that keeps giving).
fn cpu_pages(path: &Path, page: usize, limit: usize) -> Result<Vec<u8>> {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Error::from_io(path, e))?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; page];
    while out.len() < limit {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                // A short read is a partial page: the kernel pads pages to their size.
                out.resize(out.len().next_multiple_of(page), 0);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => return Err(Error::from_io(path, e)),
        }
    }
    Ok(out)
}

/// Which of an instance's buffers to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buffer {
    /// The one being recorded into (`per_cpu/cpuN/trace_pipe_raw`).
    Recording,
    /// The snapshot buffer ([`Instance::snapshot`]; `per_cpu/cpuN/snapshot_raw`).
    Snapshot,
}

impl Instance {
    /// Reads the (stopped) instance's `buffer` (the recording one, or the snapshot) of `cpus`
    /// raw, with the metadata of `events` from `top` and kallsyms from `root`; each CPU's pages
    /// at most `limit` bytes. The buffer is consumed: reading it again gives nothing.
    pub fn read_raw(
        &self,
        top: &Tracefs,
        root: &Root,
        events: &[String],
        cpus: &[u32],
        limit: usize,
        buffer: Buffer,
    ) -> Result<RawCapture> {
        let header_page = read_bytes(&top.dir().join("events/header_page"))?;
        let page = page_size(&String::from_utf8_lossy(&header_page))
            .filter(|p| (64..=(8 << 20)).contains(p))
            .ok_or_else(|| {
                Error::from_io(
                    top.dir().join("events/header_page"),
                    std::io::Error::new(std::io::ErrorKind::InvalidData, "no page size in it"),
                )
            })?;
        let mut capture = RawCapture {
            header_page,
            header_event: read_bytes(&top.dir().join("events/header_event"))?,
            ftrace_formats: ftrace_formats(top),
            systems: formats(top, events),
            kallsyms: root.read_bytes("proc/kallsyms").unwrap_or_default(),
            printk: read_bytes(&top.dir().join("printk_formats")).unwrap_or_default(),
            cmdlines: read_bytes(&top.dir().join("saved_cmdlines")).unwrap_or_default(),
            page_size: page,
            ..RawCapture::default()
        };
        for &cpu in cpus {
            let dir = self.dir().join(format!("per_cpu/cpu{cpu}"));
            // `stats` counts the recording buffer only.
            capture.cpu_stats.push(match buffer {
                Buffer::Recording => std::fs::read_to_string(dir.join("stats")).unwrap_or_default(),
                Buffer::Snapshot => String::new(),
            });
            let file = match buffer {
                Buffer::Recording => "trace_pipe_raw",
                Buffer::Snapshot => "snapshot_raw",
            };
            let pages = cpu_pages(&dir.join(file), page as usize, limit)?;
            capture.cpus.push((cpu, pages));
        }
        Ok(capture)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_size_is_where_the_data_ends() {
        let h = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
                 \tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
                 \tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
        assert_eq!(page_size(h), Some(4096));
        assert_eq!(page_size("nothing"), None);
    }
}
