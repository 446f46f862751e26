//! Options: what a recording says about itself beyond formats and data (its clock, the time
//! offset to add, the CPU count, the kernel's release, each CPU's buffer statistics) and, in
//! version 7, where every section and buffer is.

use model::limits::{MAX_CPU, MAX_TRACEDAT_OPTIONS};

use crate::Error;
use crate::bytes::{Cursor, Endian};
/// The longest name (system, buffer, clock, compression) read.
pub(crate) const MAX_NAME: usize = 256;

/// One CPU's trace data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuData {
    /// The CPU.
    pub cpu: u32,
    /// Where its data starts in the file.
    pub offset: u64,
    /// Its length in the file (compressed, when the buffer is).
    pub size: u64,
}

/// Where version 7's metadata sections are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sections {
    /// header_page and header_event.
    pub header_info: Option<u64>,
    /// The ftrace formats.
    pub ftrace_events: Option<u64>,
    /// The event formats.
    pub event_formats: Option<u64>,
    /// kallsyms.
    pub kallsyms: Option<u64>,
    /// printk formats.
    pub printk: Option<u64>,
    /// saved_cmdlines.
    pub cmdlines: Option<u64>,
}

/// A version 7 BUFFER option.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct V7Buffer {
    pub(crate) section: u64,
    pub(crate) name: String,
    pub(crate) clock: String,
    pub(crate) page_size: u32,
    pub(crate) cpus: Vec<CpuData>,
}

/// What the options said.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// The kernel's `uname` (`Linux host 6.12.0-rt ...`).
    pub uname: Option<String>,
    /// The recorder's version.
    pub recorder: Option<String>,
    /// CPUs on the recorded machine.
    pub cpu_count: Option<u32>,
    /// The trace clock in use (the bracketed one of `trace_clock`).
    pub clock: Option<String>,
    /// Nanoseconds added to every timestamp (the DATE and OFFSET options).
    pub ts_offset: i64,
    /// TSC to nanoseconds: multiplier, shift, offset (x86-tsc clock recordings).
    pub tsc2nsec: Option<(u32, u32, u64)>,
    /// Each CPU's buffer statistics (`per_cpu/cpuN/stats`), in file order.
    pub cpu_stats: Vec<String>,
    /// A latency tracer's text: offset and length in the file.
    pub latency_text: Option<(u64, u64)>,
    /// Version 7's sections.
    pub sections: Sections,
    pub(crate) v7_buffers: Vec<V7Buffer>,
    pub(crate) v6_instances: Vec<(String, u64)>,
}

impl Options {
    /// Events each CPU's ring buffer dropped while it was full (`dropped events:` of the
    /// recorder's `CPU: N` statistics): losses no page marks, as the buffer does not
    /// overwrite. CPUs with none are left out.
    pub fn dropped_events(&self) -> Vec<(u32, u64)> {
        self.cpu_stats
            .iter()
            .filter_map(|text| {
                let value = |key: &str| {
                    text.lines()
                        .find_map(|l| l.strip_prefix(key))
                        .and_then(|v| v.trim().parse::<u64>().ok())
                };
                let cpu = u32::try_from(value("CPU:")?).ok()?;
                Some((cpu, value("dropped events:")?)).filter(|&(_, n)| n > 0)
            })
            .collect()
    }
}

/// The option's text: up to its NUL, lossy.
fn text(data: &[u8]) -> String {
    let end = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    String::from_utf8_lossy(&data[..end]).trim().to_string()
}

/// A number as C's `strtoll(s, NULL, 0)` reads it: decimal, or hex after `0x`, signed.
fn c_number(s: &str) -> Option<i64> {
    let s = s.trim();
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => i64::from_str_radix(h, 16).ok()?,
        None => s.parse().ok()?,
    };
    Some(if neg { -v } else { v })
}

/// One option (`id`, its `data` at file offset `at`) into `o`; one that does not read is a
/// note.
pub(crate) fn apply(
    o: &mut Options,
    id: u16,
    data: &[u8],
    version: u32,
    endian: Endian,
    at: u64,
    notes: &mut Vec<String>,
) {
    let mut c = Cursor::new(data, at, endian);
    let offset = |c: &mut Cursor<'_>| c.u64("a section offset").ok();
    match id {
        // DATE: microseconds, as C reads the text.
        1 => match c_number(&text(data)).and_then(|us| us.checked_mul(1000)) {
            Some(ns) => o.ts_offset = o.ts_offset.saturating_add(ns),
            None => notes.push(format!(
                "the DATE option \"{}\" is not a number",
                text(data)
            )),
        },
        2 => o.cpu_stats.push(text(data)),
        3 if version >= 7 => match v7_buffer(&mut c) {
            Ok(b) => o.v7_buffers.push(b),
            Err(e) => notes.push(format!("a buffer option does not read: {e}")),
        },
        3 => {
            if let (Ok(off), Ok(name)) =
                (c.u64("a buffer offset"), c.cstr(MAX_NAME, "a buffer name"))
            {
                o.v6_instances.push((name.to_string(), off));
            }
        }
        4 => {
            let t = text(data);
            o.clock = t
                .split_once('[')
                .and_then(|(_, r)| r.split_once(']'))
                .map(|(c, _)| c.to_string());
        }
        5 => o.uname = Some(text(data)),
        7 => match c_number(&text(data)) {
            Some(ns) => o.ts_offset = o.ts_offset.saturating_add(ns),
            None => notes.push(format!(
                "the OFFSET option \"{}\" is not a number",
                text(data)
            )),
        },
        8 => o.cpu_count = c.u32("the CPU count").ok(),
        9 => o.recorder = Some(text(data)),
        14 => {
            if let (Ok(mult), Ok(shift), Ok(off)) =
                (c.u32("tsc2nsec"), c.u32("tsc2nsec"), c.u64("tsc2nsec"))
            {
                o.tsc2nsec = Some((mult, shift.min(63), off));
            }
        }
        16 => o.sections.header_info = offset(&mut c),
        17 => o.sections.ftrace_events = offset(&mut c),
        18 => o.sections.event_formats = offset(&mut c),
        19 => o.sections.kallsyms = offset(&mut c),
        20 => o.sections.printk = offset(&mut c),
        21 => o.sections.cmdlines = offset(&mut c),
        22 => {
            if let Ok(off) = c.u64("a text buffer offset") {
                o.latency_text = Some((off, 0));
            }
        }
        _ => {}
    }
}

/// `offset, name, clock, page size, CPUs, (cpu, offset, size)...`
fn v7_buffer(c: &mut Cursor<'_>) -> Result<V7Buffer, Error> {
    let section = c.u64("the buffer's section")?;
    let name = c.cstr(MAX_NAME, "the buffer's name")?.to_string();
    let clock = c.cstr(MAX_NAME, "the buffer's clock")?.to_string();
    let page_size = c.u32("the buffer's page size")?;
    let at = c.offset();
    let count = c.u32("the buffer's CPU count")?;
    if count > MAX_CPU + 1 {
        return Err(Error::damaged(
            format!("{count} CPUs is more than any kernel has"),
            at,
        ));
    }
    let mut cpus = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let at = c.offset();
        let cpu = c.u32("a CPU number")?;
        if cpu > MAX_CPU {
            return Err(Error::damaged(
                format!("CPU {cpu} is beyond any kernel's"),
                at,
            ));
        }
        cpus.push(CpuData {
            cpu,
            offset: c.u64("a CPU's data offset")?,
            size: c.u64("a CPU's data size")?,
        });
    }
    Ok(V7Buffer {
        section,
        name,
        clock,
        page_size,
        cpus,
    })
}

/// A version 7 option section's content into `o`; the offset of the next option section (0
/// when none).
pub(crate) fn section(
    o: &mut Options,
    data: &[u8],
    at: u64,
    endian: Endian,
    notes: &mut Vec<String>,
) -> Result<u64, Error> {
    let mut c = Cursor::new(data, at, endian);
    for _ in 0..MAX_TRACEDAT_OPTIONS {
        if c.is_empty() {
            return Ok(0);
        }
        let id = c.u16("an option's id")?;
        let len = c.u32("an option's size")?;
        let body_at = c.offset();
        let body = c.bytes(len as usize, "an option")?;
        if id == 0 {
            return Cursor::new(body, body_at, endian).u64("the next options offset");
        }
        apply(o, id, body, 7, endian, body_at, notes);
    }
    Err(Error::damaged(
        "an option section holds more options than rtlab reads",
        at,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_c_reads_them() {
        assert_eq!(c_number("0x10"), Some(16));
        assert_eq!(c_number("-25"), Some(-25));
        assert_eq!(c_number(" 7 "), Some(7));
        assert_eq!(c_number("x"), None);
    }

    #[test]
    fn dropped_events_come_from_each_cpus_statistics() {
        let stats = |cpu: u32, dropped: &str| {
            format!(
                "CPU: {cpu}\nentries: 8832\noverrun: 0\ncommit overrun: 0\nbytes: 335892\n\
                 oldest event ts: 71976.680271\nnow ts: 71977.149282\n\
                 dropped events: {dropped}\nread events: 0\n"
            )
        };
        let o = Options {
            cpu_stats: vec![
                stats(0, "0"),
                stats(1, "4096"),
                stats(3, "x"),
                "junk".into(),
            ],
            ..Options::default()
        };
        assert_eq!(o.dropped_events(), vec![(1, 4096)]);
    }

    #[test]
    fn options_fill_what_they_say() {
        let mut o = Options::default();
        let mut notes = Vec::new();
        let le = Endian::Little;
        apply(&mut o, 4, b"local [mono] global\0", 7, le, 0, &mut notes);
        apply(&mut o, 1, b"0x2\0", 7, le, 0, &mut notes);
        apply(&mut o, 7, b"-500\0", 7, le, 0, &mut notes);
        apply(&mut o, 8, &4u32.to_le_bytes(), 7, le, 0, &mut notes);
        apply(&mut o, 7, b"junk\0", 7, le, 0, &mut notes);
        assert_eq!(o.clock.as_deref(), Some("mono"));
        assert_eq!(o.ts_offset, 1500);
        assert_eq!(o.cpu_count, Some(4));
        assert_eq!(notes.len(), 1);
    }
}
