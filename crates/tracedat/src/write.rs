//! Writing a recording: version 7 (sections, each compressed when a compression is chosen,
//! trace data in compressed chunks of ten pages as trace-cmd writes them) or version 6, in
//! either byte order, from [`Contents`]: the metadata texts as tracefs gave them and each
//! CPU's raw ring-buffer pages. The layout follows trace-cmd's, so `trace-cmd report` and
//! KernelShark read what rtlab writes.

use std::io::{self, Write};

use crate::bytes::Endian;
use crate::compress::Compression;

/// Pages in one compressed chunk of trace data (trace-cmd's choice).
pub const CHUNK_PAGES: usize = 10;

/// What a recording holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Contents {
    /// The recorded machine's byte order.
    pub endian: Endian,
    /// Its user-space `long` size (4 or 8).
    pub long_size: u8,
    /// Its page size.
    pub host_page_size: u32,
    /// `events/header_page`.
    pub header_page: Vec<u8>,
    /// `events/header_event`.
    pub header_event: Vec<u8>,
    /// `events/ftrace/*/format`.
    pub ftrace_formats: Vec<Vec<u8>>,
    /// Every other system's formats: (system, formats).
    pub systems: Vec<(String, Vec<Vec<u8>>)>,
    /// `/proc/kallsyms`.
    pub kallsyms: Vec<u8>,
    /// `printk_formats`.
    pub printk: Vec<u8>,
    /// `saved_cmdlines`.
    pub cmdlines: Vec<u8>,
    /// The trace clock (`mono`).
    pub clock: String,
    /// `uname -a`'s line.
    pub uname: String,
    /// The recorder and its version.
    pub recorder: String,
    /// CPUs on the machine.
    pub cpu_count: u32,
    /// Each recorded CPU's `per_cpu/cpuN/stats`.
    pub cpu_stats: Vec<String>,
    /// The ring buffer's page size.
    pub page_size: u32,
    /// Each CPU's raw pages, as `trace_pipe_raw` gave them.
    pub cpus: CpuPages,
    /// A latency tracer's text (its `trace` file), written instead of the CPUs' pages.
    pub latency: Option<Vec<u8>>,
    /// Named instances' buffers (`trace-cmd record -B NAME`): each one's name and CPUs' raw
    /// pages, after the top buffer's (version 6 only; version 7 writes the top buffer).
    pub instances: Vec<(String, CpuPages)>,
}

/// Each CPU's raw ring-buffer pages: the CPU and its pages back to back.
pub type CpuPages = Vec<(u32, Vec<u8>)>;

/// Bytes in the file's byte order.
struct Out {
    buf: Vec<u8>,
    endian: Endian,
}

impl Out {
    fn new(endian: Endian) -> Out {
        Out {
            buf: Vec::new(),
            endian,
        }
    }
    fn u16(&mut self, v: u16) {
        self.endian.put(&mut self.buf, u64::from(v), 2);
    }
    fn u32(&mut self, v: u32) {
        self.endian.put(&mut self.buf, u64::from(v), 4);
    }
    fn u64(&mut self, v: u64) {
        self.endian.put(&mut self.buf, v, 8);
    }
    fn cstr(&mut self, s: &str) {
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.push(0);
    }
    fn sized(&mut self, size_len: usize, data: &[u8]) {
        self.endian.put(&mut self.buf, data.len() as u64, size_len);
        self.buf.extend_from_slice(data);
    }
}

/// The metadata blocks, laid out as both versions have them.
fn header_info(o: &mut Out, c: &Contents) {
    o.buf.extend_from_slice(b"header_page\0");
    o.sized(8, &c.header_page);
    o.buf.extend_from_slice(b"header_event\0");
    o.sized(8, &c.header_event);
}

fn ftrace_formats(o: &mut Out, c: &Contents) {
    o.u32(c.ftrace_formats.len() as u32);
    for f in &c.ftrace_formats {
        o.sized(8, f);
    }
}

fn event_formats(o: &mut Out, c: &Contents) {
    o.u32(c.systems.len() as u32);
    for (system, formats) in &c.systems {
        o.cstr(system);
        o.u32(formats.len() as u32);
        for f in formats {
            o.sized(8, f);
        }
    }
}

/// The initial format: magic, version, byte order, long size, page size.
fn initial(o: &mut Out, c: &Contents, version: u32) {
    o.buf.extend_from_slice(crate::MAGIC);
    o.cstr(&version.to_string());
    o.buf.push(u8::from(c.endian == Endian::Big));
    o.buf.push(c.long_size);
    o.u32(c.host_page_size);
}

/// Writes `c` as version 6 (uncompressed); the bytes written.
pub fn write_v6<W: Write>(c: &Contents, mut w: W) -> io::Result<u64> {
    let mut o = Out::new(c.endian);
    initial(&mut o, c, 6);
    header_info(&mut o, c);
    ftrace_formats(&mut o, c);
    event_formats(&mut o, c);
    o.sized(4, &c.kallsyms);
    o.sized(4, &c.printk);
    o.sized(8, &c.cmdlines);
    o.u32(c.cpus.len() as u32);
    o.buf.extend_from_slice(b"options  \0");
    let mut clock = format!("[{}]", c.clock).into_bytes();
    clock.push(0);
    option(&mut o, 4, &clock);
    option(&mut o, 5, &nul(&c.uname));
    let mut count = Vec::new();
    c.endian.put(&mut count, u64::from(c.cpu_count), 4);
    option(&mut o, 8, &count);
    for s in &c.cpu_stats {
        option(&mut o, 2, &nul(s));
    }
    // Each instance's BUFFER option: where its data is (filled in below), and its name.
    let mut instance_at = Vec::new();
    for (name, _) in &c.instances {
        o.u16(3);
        o.u32(8 + name.len() as u32 + 1);
        instance_at.push(o.buf.len());
        o.u64(0);
        o.cstr(name);
    }
    o.u16(0);
    if let Some(text) = &c.latency {
        o.buf.extend_from_slice(b"latency  \0");
        o.buf.extend_from_slice(text);
        w.write_all(&o.buf)?;
        return Ok(o.buf.len() as u64);
    }
    v6_flyrecord(&mut o, &c.cpus, c.page_size);
    for ((_, cpus), patch) in c.instances.iter().zip(instance_at) {
        let mut at = Vec::new();
        c.endian.put(&mut at, o.buf.len() as u64, 8);
        o.buf[patch..patch + 8].copy_from_slice(&at);
        v6_flyrecord(&mut o, cpus, c.page_size);
    }
    w.write_all(&o.buf)?;
    Ok(o.buf.len() as u64)
}

/// A version 6 buffer's data: the `flyrecord` label, each CPU's offset and size, then each
/// CPU's pages at a page-aligned offset.
fn v6_flyrecord(o: &mut Out, cpus: &CpuPages, page_size: u32) {
    o.buf.extend_from_slice(b"flyrecord\0");
    let page = u64::from(page_size.max(1));
    let mut at = (o.buf.len() as u64 + 16 * cpus.len() as u64).next_multiple_of(page);
    for (_, data) in cpus {
        o.u64(at);
        o.u64(data.len() as u64);
        at = (at + data.len() as u64).next_multiple_of(page);
    }
    for (_, data) in cpus {
        o.buf
            .resize((o.buf.len() as u64).next_multiple_of(page) as usize, 0);
        o.buf.extend_from_slice(data);
    }
}

fn nul(s: &str) -> Vec<u8> {
    let mut v = s.as_bytes().to_vec();
    v.push(0);
    v
}

fn option(o: &mut Out, id: u16, data: &[u8]) {
    o.u16(id);
    o.sized(4, data);
}

/// One version 7 section: header (id, flags, description's string id, size) and content,
/// compressed when `compression` is not none.
fn section(o: &mut Out, id: u16, desc: u32, content: &[u8], compression: Compression) {
    o.u16(id);
    let packed = compression != Compression::None;
    o.u16(u16::from(packed));
    o.u32(desc);
    if packed {
        let data = compression.compress(content);
        o.u64(8 + data.len() as u64);
        o.u32(data.len() as u32);
        o.u32(content.len() as u32);
        o.buf.extend_from_slice(&data);
    } else {
        o.sized(8, content);
    }
}

/// One CPU's data as it goes into the file: raw pages, or a chunk count and compressed
/// chunks. The size the BUFFER option gives leaves the count out (as trace-cmd does).
fn cpu_data(data: &[u8], page: usize, endian: Endian, compression: Compression) -> (Vec<u8>, u64) {
    if compression == Compression::None {
        return (data.to_vec(), data.len() as u64);
    }
    let mut o = Out::new(endian);
    let chunks: Vec<&[u8]> = data.chunks(page * CHUNK_PAGES).collect();
    o.u32(chunks.len() as u32);
    for chunk in chunks {
        let packed = compression.compress(chunk);
        o.u32(packed.len() as u32);
        o.u32(chunk.len() as u32);
        o.buf.extend_from_slice(&packed);
    }
    let size = o.buf.len() as u64 - 4;
    (o.buf, size)
}

/// The strings section's descriptions, and their ids (offsets in it).
const STRINGS: &[&str] = &[
    "options",
    "headers",
    "ftrace events format",
    "events format",
    "kallsyms",
    "printk",
    "command lines",
    "buffer flyrecord ",
    "buffer latency",
    "strings",
];

fn string_id(name: &str) -> u32 {
    let mut at = 0u32;
    for s in STRINGS {
        if *s == name {
            return at;
        }
        at += s.len() as u32 + 1;
    }
    0
}

/// The metadata sections, laid out back to back (they follow the options section, whose size
/// is known once their offsets are): the bytes, and each section's id and offset in them.
fn meta_sections(c: &Contents, compression: Compression) -> (Out, Vec<(u16, u64)>) {
    let e = c.endian;
    let mut blocks: Vec<(u16, &str, Vec<u8>)> = Vec::new();
    let mut strings = Vec::new();
    for s in STRINGS {
        strings.extend_from_slice(s.as_bytes());
        strings.push(0);
    }
    blocks.push((15, "strings", strings));
    let mut o = Out::new(e);
    header_info(&mut o, c);
    blocks.push((16, "headers", o.buf));
    let mut o = Out::new(e);
    ftrace_formats(&mut o, c);
    blocks.push((17, "ftrace events format", o.buf));
    let mut o = Out::new(e);
    event_formats(&mut o, c);
    blocks.push((18, "events format", o.buf));
    let mut o = Out::new(e);
    o.sized(4, &c.kallsyms);
    blocks.push((19, "kallsyms", o.buf));
    let mut o = Out::new(e);
    o.sized(4, &c.printk);
    blocks.push((20, "printk", o.buf));
    let mut o = Out::new(e);
    o.sized(8, &c.cmdlines);
    blocks.push((21, "command lines", o.buf));
    let mut sections = Out::new(e);
    let mut section_at = Vec::new();
    for (id, desc, content) in &blocks {
        // The strings section is never compressed: a reader finds it before it knows how.
        let how = if *id == 15 {
            Compression::None
        } else {
            compression
        };
        section_at.push((*id, sections.buf.len() as u64));
        section(&mut sections, *id, string_id(desc), content, how);
    }
    (sections, section_at)
}

/// Writes `c` as version 7 with `compression`; the bytes written.
pub fn write_v7<W: Write>(c: &Contents, compression: Compression, mut w: W) -> io::Result<u64> {
    let e = c.endian;
    let mut head = Out::new(e);
    initial(&mut head, c, 7);
    head.cstr(compression.name());
    head.cstr(match compression {
        Compression::None => "",
        Compression::Zlib => "1.2.13",
        Compression::Zstd => "1.5.4",
    });
    let options_at = head.buf.len() as u64 + 8;
    head.u64(options_at);

    let (sections, section_at) = meta_sections(c, compression);
    let page = c.page_size.max(64) as usize;
    let data: Vec<(u32, Vec<u8>, u64)> = c
        .cpus
        .iter()
        .map(|(cpu, d)| {
            let (bytes, size) = cpu_data(d, page, e, compression);
            (*cpu, bytes, size)
        })
        .collect();

    // The options point at everything after them, so their own length places it: build
    // them once to measure (the length does not depend on the offsets), then for real.
    let layout = |opts_len: u64| {
        let meta_base = options_at + 16 + opts_len;
        let buffer_at = meta_base + sections.buf.len() as u64;
        (meta_base, buffer_at)
    };
    let (meta, buffer) = layout(0);
    let probe = build_options(c, &data, &section_at, meta, buffer);
    let (meta, buffer_at) = layout(probe.buf.len() as u64);
    let opts = build_options(c, &data, &section_at, meta, buffer_at);
    let mut file = head;
    section(
        &mut file,
        0,
        string_id("options"),
        &opts.buf,
        Compression::None,
    );
    file.buf.extend_from_slice(&sections.buf);
    debug_assert_eq!(file.buf.len() as u64, buffer_at);
    match &c.latency {
        Some(text) => latency(&mut file, text, c.host_page_size, compression),
        None => flyrecord(&mut file, &data, page as u64, compression),
    }
    w.write_all(&file.buf)?;
    Ok(file.buf.len() as u64)
}

/// The latency text's section: plain, or compressed in chunks of ten host pages as trace-cmd
/// writes CPU data (the section is flagged compressed, its content is not one block).
fn latency(o: &mut Out, text: &[u8], page: u32, compression: Compression) {
    let content = match compression {
        Compression::None => text.to_vec(),
        _ => cpu_data(text, page.max(64) as usize, o.endian, compression).0,
    };
    o.u16(22);
    o.u16(u16::from(compression != Compression::None));
    o.u32(string_id("buffer latency"));
    o.sized(8, &content);
}

/// Where each CPU's data lands after the buffer section's header at `at`: page-aligned.
fn cpu_offsets(at: u64, data: &[(u32, Vec<u8>, u64)], page: u64) -> Vec<u64> {
    let mut pos = at + 16;
    data.iter()
        .map(|(_, bytes, _)| {
            let start = pos.next_multiple_of(page);
            pos = start + bytes.len() as u64;
            start
        })
        .collect()
}

/// The buffer section: its header, then each CPU's data at a page-aligned offset.
fn flyrecord(o: &mut Out, data: &[(u32, Vec<u8>, u64)], page: u64, compression: Compression) {
    let at = o.buf.len() as u64;
    let offsets = cpu_offsets(at, data, page);
    let end = offsets
        .iter()
        .zip(data)
        .map(|(start, (_, bytes, _))| start + bytes.len() as u64)
        .max()
        .unwrap_or(at + 16);
    o.u16(3);
    o.u16(u16::from(compression != Compression::None));
    o.u32(string_id("buffer flyrecord "));
    o.u64(end - at - 16);
    for (start, (_, bytes, _)) in offsets.iter().zip(data) {
        o.buf.resize(*start as usize, 0);
        o.buf.extend_from_slice(bytes);
    }
    o.buf.resize(end as usize, 0);
}

/// The options section's content: the CPU count, clock, machine, recorder, each CPU's
/// statistics, where every metadata section is (`sections`: offsets from `meta_base`), and
/// the buffer (its section at `buffer_at`).
fn build_options(
    c: &Contents,
    data: &[(u32, Vec<u8>, u64)],
    sections: &[(u16, u64)],
    meta_base: u64,
    buffer_at: u64,
) -> Out {
    let mut o = Out::new(c.endian);
    let mut count = Vec::new();
    c.endian.put(&mut count, u64::from(c.cpu_count), 4);
    option(&mut o, 8, &count);
    option(&mut o, 4, &nul(&format!("[{}]", c.clock)));
    option(&mut o, 5, &nul(&c.uname));
    option(&mut o, 9, &nul(&c.recorder));
    for s in &c.cpu_stats {
        option(&mut o, 2, &nul(s));
    }
    for &(id, at) in sections {
        let mut v = Vec::new();
        c.endian.put(&mut v, meta_base + at, 8);
        option(&mut o, id, &v);
    }
    if c.latency.is_some() {
        // The text's section, with the instance's name and clock.
        let mut b = Out::new(c.endian);
        b.u64(buffer_at);
        b.cstr("");
        b.cstr(&c.clock);
        option(&mut o, 22, &b.buf);
        option(&mut o, 0, &[0; 8]);
        return o;
    }
    let offsets = cpu_offsets(buffer_at, data, u64::from(c.page_size.max(64)));
    let mut b = Out::new(c.endian);
    b.u64(buffer_at);
    b.cstr("");
    b.cstr(&c.clock);
    b.u32(c.page_size);
    b.u32(data.len() as u32);
    for ((cpu, _, size), at) in data.iter().zip(offsets) {
        b.u32(*cpu);
        b.u64(at);
        b.u64(*size);
    }
    option(&mut o, 3, &b.buf);
    option(&mut o, 0, &[0; 8]);
    o
}

impl Contents {
    /// What `dat` holds, to write again (in another version, compression or both): its
    /// metadata texts and each CPU's pages of its first buffer, at most `limit` bytes per CPU.
    pub fn from_dat<R: crate::ReadAt>(
        dat: &crate::TraceDat<R>,
        limit: u64,
    ) -> Result<Contents, crate::Error> {
        let raw = &dat.raw;
        let buffer = dat.buffers.first();
        let mut cpus = Vec::new();
        for i in 0..buffer.map_or(0, |b| b.cpus.len()) {
            cpus.push((
                buffer.map_or(0, |b| b.cpus[i].cpu),
                dat.cpu_pages(0, i, limit)?,
            ));
        }
        Ok(Contents {
            endian: dat.endian,
            long_size: dat.long_size,
            host_page_size: dat.host_page_size,
            header_page: raw.header_page.clone(),
            header_event: raw.header_event.clone(),
            ftrace_formats: raw.ftrace.clone(),
            systems: raw.systems.clone(),
            kallsyms: raw.kallsyms.clone(),
            printk: raw.printk.clone(),
            cmdlines: raw.cmdlines.clone(),
            clock: buffer
                .and_then(|b| b.clock.clone())
                .unwrap_or_else(|| "local".to_string()),
            uname: dat.options.uname.clone().unwrap_or_default(),
            recorder: dat.options.recorder.clone().unwrap_or_default(),
            cpu_count: dat.options.cpu_count.unwrap_or(cpus.len() as u32),
            cpu_stats: dat.options.cpu_stats.clone(),
            page_size: buffer.map_or(dat.host_page_size, |b| b.page_size),
            cpus,
            latency: dat.latency_text(model::limits::MAX_TRACEDAT_SECTION_BYTES)?,
            instances: Vec::new(),
        })
    }
}
