//! Opening a recording: the initial format, then the metadata, laid out in order (version 6)
//! or as sections found through option sections (version 7), into one [`TraceDat`]: byte
//! order, page layout, event formats, symbols, task names, and where each CPU's data is.

use std::collections::HashMap;

use model::limits::{
    MAX_CPU, MAX_TRACEDAT_FORMATS, MAX_TRACEDAT_OPTIONS, MAX_TRACEDAT_PAGE_BYTES,
    MAX_TRACEDAT_SECTION_BYTES,
};

use crate::bytes::{Cursor, Endian, ReadAt, read_full, read_vec};
use crate::compress::Compression;
use crate::format::{EventFormat, PageHeader};
use crate::input::{Input, Seq};
use crate::meta::{Comms, Symbols};
pub use crate::options::CpuData;
use crate::options::{self, MAX_NAME, Options};
use crate::{Error, MAGIC};

/// The longest event format file read (the largest real ones are a few KiB).
const MAX_FORMAT_BYTES: u64 = 1 << 20;

/// One ring buffer's recording (the top instance, or a named one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Buffer {
    /// The instance's name; empty for the top one.
    pub name: String,
    /// The trace clock (`local`, `mono`, `x86-tsc`...), when the file says.
    pub clock: Option<String>,
    /// The ring buffer's page (sub-buffer) size.
    pub page_size: u32,
    /// Whether its data is in compressed chunks.
    pub compressed: bool,
    /// Each CPU's data.
    pub cpus: Vec<CpuData>,
}

/// The event formats by id.
#[derive(Clone, Debug, Default)]
pub struct Formats {
    list: Vec<EventFormat>,
    by_id: HashMap<u32, usize>,
}

impl Formats {
    /// The format of records with `id`.
    #[inline]
    pub fn get(&self, id: u32) -> Option<&EventFormat> {
        self.by_id.get(&id).map(|&i| &self.list[i])
    }

    /// Every format, in file order.
    pub fn all(&self) -> &[EventFormat] {
        &self.list
    }

    /// The format named `system:name`.
    pub fn find(&self, system: &str, name: &str) -> Option<&EventFormat> {
        self.list
            .iter()
            .find(|f| f.name == name && f.system == system)
    }

    fn push(&mut self, f: EventFormat) {
        self.by_id.insert(f.id, self.list.len());
        self.list.push(f);
    }
}

/// An opened recording: everything but the events, which [`crate::Events`] reads.
#[derive(Debug)]
pub struct TraceDat<R> {
    pub(crate) src: R,
    /// The file's length.
    pub len: u64,
    /// The file version (6 or 7).
    pub version: u32,
    /// Its byte order.
    pub endian: Endian,
    /// The recorder's user-space `long` size (4 or 8).
    pub long_size: u8,
    /// The recorded machine's page size.
    pub host_page_size: u32,
    /// The compression of its sections and trace data.
    pub compression: Compression,
    /// The ring buffer's page header.
    pub page_header: PageHeader,
    /// The event formats.
    pub formats: Formats,
    /// The kernel's symbols.
    pub symbols: Symbols,
    /// Task names by pid.
    pub comms: Comms,
    /// What the options said.
    pub options: Options,
    /// The ring buffers recorded, the top instance first.
    pub buffers: Vec<Buffer>,
    /// Parts not read, and why (the file still reads without them).
    pub notes: Vec<String>,
    /// The metadata texts as the file holds them.
    pub raw: RawMeta,
}

/// The metadata as the file holds it (texts as tracefs gave them): what a rewrite of the file
/// copies.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawMeta {
    /// `events/header_page`.
    pub header_page: Vec<u8>,
    /// `events/header_event`.
    pub header_event: Vec<u8>,
    /// The ftrace formats.
    pub ftrace: Vec<Vec<u8>>,
    /// The other formats by system.
    pub systems: Vec<(String, Vec<Vec<u8>>)>,
    /// kallsyms.
    pub kallsyms: Vec<u8>,
    /// printk formats.
    pub printk: Vec<u8>,
    /// saved_cmdlines.
    pub cmdlines: Vec<u8>,
}

/// The metadata, as the sections give it.
#[derive(Default)]
struct Meta {
    page_header: Option<PageHeader>,
    formats: Formats,
    symbols: Symbols,
    comms: Comms,
    raw: RawMeta,
}

/// The initial format: version, byte order, long size, and where the page size is.
fn initial(head: &[u8]) -> Result<(u32, Endian, u8, u64), Error> {
    if !head.starts_with(MAGIC) {
        return Err(Error::NotTraceDat);
    }
    let mut c = Cursor::new(head, 0, Endian::Little);
    c.bytes(MAGIC.len(), "magic")?;
    let version: u32 = c
        .cstr(8, "the version")?
        .parse()
        .map_err(|_| Error::damaged("the version is not a number", 10))?;
    let endian = match c.u8("the byte order")? {
        0 => Endian::Little,
        1 => Endian::Big,
        b => {
            let at = c.offset() - 1;
            return Err(Error::damaged(
                format!("byte order flag {b} is neither 0 nor 1"),
                at,
            ));
        }
    };
    let long_size = c.u8("the long size")?;
    Ok((version, endian, long_size, c.offset()))
}

impl<R: ReadAt> TraceDat<R> {
    /// Opens a recording: reads its metadata (the events are read later, streaming).
    pub fn open(src: R) -> Result<TraceDat<R>, Error> {
        let len = src.size()?;
        let mut head = [0u8; 64];
        let n = read_full(&src, &mut head, 0)?;
        let (version, endian, long_size, pos) = initial(&head[..n])?;
        let mut seq = Seq {
            src: &src,
            pos,
            endian,
            len,
        };
        let host_page_size = seq.u32("the page size")?;
        let mut dat = TraceDat {
            src: &src,
            len,
            version,
            endian,
            long_size,
            host_page_size,
            compression: Compression::None,
            page_header: PageHeader::LONG64,
            formats: Formats::default(),
            symbols: Symbols::default(),
            comms: Comms::default(),
            options: Options::default(),
            buffers: Vec::new(),
            notes: Vec::new(),
            raw: RawMeta::default(),
        };
        let meta = match version {
            6 => dat.read_v6(&mut seq)?,
            7 => dat.read_v7(&mut seq)?,
            v => {
                return Err(Error::Unsupported(format!(
                    "trace.dat version {v}: rtlab reads versions 6 and 7 (`trace-cmd convert --file-version 7` converts)"
                )));
            }
        };
        dat.bound_streams();
        let page_header = meta
            .page_header
            .ok_or_else(|| Error::damaged("the page header (header_page) is missing", 0))?;
        // Let go of the borrowed source first, then take the owned one.
        let mut out = dat.with_src(()).with_src(src);
        out.page_header = page_header;
        out.formats = meta.formats;
        out.symbols = meta.symbols;
        out.comms = meta.comms;
        out.raw = meta.raw;
        Ok(out)
    }
}

impl<S> TraceDat<S> {
    /// The same recording over another source (the metadata moved, not copied).
    fn with_src<T>(self, src: T) -> TraceDat<T> {
        TraceDat {
            src,
            len: self.len,
            version: self.version,
            endian: self.endian,
            long_size: self.long_size,
            host_page_size: self.host_page_size,
            compression: self.compression,
            page_header: self.page_header,
            formats: self.formats,
            symbols: self.symbols,
            comms: self.comms,
            options: self.options,
            buffers: self.buffers,
            notes: self.notes,
            raw: self.raw,
        }
    }
}

impl<S> TraceDat<S> {
    /// Buffers past the first [`MAX_CPU`] + 1 CPUs of data in all are left out, with a note:
    /// their events are read merged, one stream each, so the streams (and the blocks they
    /// hold) stay as bounded as one buffer's CPUs.
    fn bound_streams(&mut self) {
        let mut streams = 0usize;
        let limit = MAX_CPU as usize + 1;
        let mut kept = Vec::new();
        for b in std::mem::take(&mut self.buffers) {
            streams = streams.saturating_add(b.cpus.len());
            if streams > limit {
                self.notes.push(format!(
                    "buffer \"{}\" not read: the buffers hold more than {limit} CPUs' data in all",
                    b.name
                ));
            } else {
                kept.push(b);
            }
        }
        self.buffers = kept;
    }
}

impl<R: ReadAt + ?Sized> TraceDat<&R> {
    /// Version 6: header info, formats, symbols, printk formats, task names, then the CPU
    /// count, options, and the flyrecord's CPU offsets, one after another.
    fn read_v6(&mut self, seq: &mut Seq<'_, R>) -> Result<Meta, Error> {
        let mut meta = Meta::default();
        meta.page_header = Some(header_info(seq, &mut meta.raw)?);
        ftrace_formats(seq, &mut meta)?;
        event_formats(seq, &mut meta)?;
        symbols(seq, &mut meta)?;
        meta.raw.printk = seq.sized(4, MAX_TRACEDAT_SECTION_BYTES, "the printk formats")?;
        comms(seq, &mut meta)?;
        let cpus = seq.u32("the CPU count")?;
        if cpus > MAX_CPU + 1 {
            return Err(Error::damaged(
                format!("{cpus} CPUs is more than any kernel has"),
                seq.pos - 4,
            ));
        }
        let mut label = seq.take(10, "the data label")?;
        if label == b"options  \0" {
            for _ in 0..MAX_TRACEDAT_OPTIONS {
                let id = seq.u16("an option")?;
                if id == 0 {
                    break;
                }
                let at = seq.pos;
                let data = seq.sized(4, MAX_TRACEDAT_SECTION_BYTES, "an option")?;
                options::apply(
                    &mut self.options,
                    id,
                    &data,
                    6,
                    self.endian,
                    at,
                    &mut self.notes,
                );
            }
            label = seq.take(10, "the data label")?;
        }
        match &label[..] {
            b"flyrecord\0" => {
                let mut list = Vec::new();
                for cpu in 0..cpus {
                    let offset = seq.u64("a CPU's data offset")?;
                    let size = seq.u64("a CPU's data size")?;
                    list.push(CpuData { cpu, offset, size });
                }
                self.buffers.push(Buffer {
                    name: String::new(),
                    clock: self.options.clock.clone(),
                    page_size: self.host_page_size,
                    compressed: false,
                    cpus: list,
                });
            }
            b"latency  \0" => {
                self.options.latency_text = Some((seq.pos, self.len.saturating_sub(seq.pos)));
            }
            _ => {
                return Err(Error::damaged(
                    "neither flyrecord nor latency data follows the header",
                    seq.pos - 10,
                ));
            }
        }
        check_page(self.host_page_size, 0)?;
        for (name, at) in std::mem::take(&mut self.options.v6_instances) {
            match self.v6_instance(cpus, at) {
                Ok(list) => self.buffers.push(Buffer {
                    name,
                    clock: self.options.clock.clone(),
                    page_size: self.host_page_size,
                    compressed: false,
                    cpus: list,
                }),
                Err(why) => self
                    .notes
                    .push(format!("instance buffer \"{name}\" not read: {why}")),
            }
        }
        Ok(meta)
    }

    /// A version 6 instance's CPU data, where its option points: the `flyrecord` label, then
    /// each CPU's offset and size, as for the top buffer.
    fn v6_instance(&self, cpus: u32, at: u64) -> Result<Vec<CpuData>, Error> {
        let mut seq = Seq {
            src: self.src,
            pos: at,
            endian: self.endian,
            len: self.len,
        };
        let label = seq.take(10, "an instance's data label")?;
        if label != b"flyrecord\0" {
            return Err(Error::damaged(
                "no flyrecord data where the instance's option points",
                at,
            ));
        }
        let mut list = Vec::new();
        for cpu in 0..cpus {
            let offset = seq.u64("a CPU's data offset")?;
            let size = seq.u64("a CPU's data size")?;
            list.push(CpuData { cpu, offset, size });
        }
        Ok(list)
    }

    /// Version 7: the compression, then option sections chained from the header, which say
    /// where each metadata section and each buffer's data is.
    fn read_v7(&mut self, seq: &mut Seq<'_, R>) -> Result<Meta, Error> {
        let name = seq.cstr(MAX_NAME, "the compression name")?;
        self.compression = Compression::from_name(&name).ok_or_else(|| {
            Error::Unsupported(format!(
                "compression \"{name}\": rtlab reads zlib and zstd (`trace-cmd convert --compression zstd` converts)"
            ))
        })?;
        seq.cstr(MAX_NAME, "the compression version")?;
        let mut next = seq.u64("the options offset")?;
        let mut seen = 0;
        while next != 0 {
            seen += 1;
            if seen > MAX_TRACEDAT_OPTIONS {
                return Err(Error::damaged("the option sections form a loop", next));
            }
            let data = self.section(next, 0, "an option section")?;
            next = options::section(&mut self.options, &data, next, self.endian, &mut self.notes)?;
        }
        let mut meta = Meta::default();
        let s = self.options.sections;
        if let Some(at) = s.header_info {
            let data = self.section(at, 16, "the header info section")?;
            meta.page_header = Some(header_info(
                &mut Cursor::new(&data, at, self.endian),
                &mut meta.raw,
            )?);
        }
        if let Some(at) = s.ftrace_events {
            let data = self.section(at, 17, "the ftrace formats section")?;
            ftrace_formats(&mut Cursor::new(&data, at, self.endian), &mut meta)?;
        }
        if let Some(at) = s.event_formats {
            let data = self.section(at, 18, "the event formats section")?;
            event_formats(&mut Cursor::new(&data, at, self.endian), &mut meta)?;
        }
        self.optional_meta(&mut meta);
        self.v7_buffers()?;
        Ok(meta)
    }

    /// Symbols and task names: a damaged one is a note, not a refusal (the events still read,
    /// with addresses and `<...>` for names).
    fn optional_meta(&mut self, meta: &mut Meta) {
        let s = self.options.sections;
        let e = self.endian;
        if let Some(at) = s.kallsyms {
            let read = self.section(at, 19, "the kallsyms section");
            if let Err(why) = read.and_then(|d| symbols(&mut Cursor::new(&d, at, e), meta)) {
                self.notes.push(format!("kernel symbols not read: {why}"));
            }
        }
        if let Some(at) = s.cmdlines {
            let read = self.section(at, 21, "the task names section");
            if let Err(why) = read.and_then(|d| comms(&mut Cursor::new(&d, at, e), meta)) {
                self.notes.push(format!("task names not read: {why}"));
            }
        }
        if let Some(at) = s.printk {
            let read = self.section(at, 20, "the printk section").and_then(|d| {
                Input::sized(
                    &mut Cursor::new(&d, at, e),
                    4,
                    MAX_TRACEDAT_SECTION_BYTES,
                    "printk",
                )
            });
            match read {
                Ok(p) => meta.raw.printk = p,
                Err(why) => self.notes.push(format!("printk formats not read: {why}")),
            }
        }
    }

    /// Each buffer the options named: whether its data is compressed (its section's flag).
    fn v7_buffers(&mut self) -> Result<(), Error> {
        for b in std::mem::take(&mut self.options.v7_buffers) {
            check_page(b.page_size, b.section)?;
            let mut head = [0u8; 4];
            let n = read_full(self.src, &mut head, b.section)?;
            if n < 4 {
                return Err(Error::truncated("a buffer's section", b.section));
            }
            let flags = self.endian.u16(&head[2..]);
            self.buffers.push(Buffer {
                name: b.name,
                clock: Some(b.clock),
                page_size: b.page_size,
                compressed: flags & 1 != 0,
                cpus: b.cpus,
            });
        }
        Ok(())
    }

    /// A version 7 section's content, decompressed: `id` is what the option that pointed here
    /// promised.
    fn section(&self, at: u64, id: u16, what: &str) -> Result<Vec<u8>, Error> {
        read_section(self.src, self.endian, self.compression, (at, id), what)
    }
}

/// A version 7 section's content at `at`, decompressed: `id` is what the option that pointed
/// there promised.
fn read_section<R: ReadAt + ?Sized>(
    src: &R,
    endian: Endian,
    compression: Compression,
    (at, id): (u64, u16),
    what: &str,
) -> Result<Vec<u8>, Error> {
    let head = read_vec(src, at, 16, 16, what)?;
    let found = endian.u16(&head);
    if found != id {
        return Err(Error::damaged(
            format!("{what} has section id {found}, not {id}"),
            at,
        ));
    }
    let flags = endian.u16(&head[2..]);
    let size = endian.u64(&head[8..]);
    if flags & 1 == 0 {
        return read_vec(src, at + 16, size, MAX_TRACEDAT_SECTION_BYTES, what);
    }
    let sizes = read_vec(src, at + 16, 8, 8, what)?;
    let packed_len = u64::from(endian.u32(&sizes));
    let plain_len = u64::from(endian.u32(&sizes[4..]));
    let packed = read_vec(src, at + 24, packed_len, MAX_TRACEDAT_SECTION_BYTES, what)?;
    let mut out = Vec::new();
    compression.decompress_into(
        &packed,
        plain_len,
        MAX_TRACEDAT_SECTION_BYTES,
        &mut out,
        (what, at),
    )?;
    Ok(out)
}

impl<R: ReadAt> TraceDat<R> {
    /// The text a latency tracer's recording holds instead of events (`trace-cmd record -p
    /// wakeup_rt`: the tracer's `trace` file as it was at the end), at most `limit` bytes;
    /// `None` for a recording of events.
    pub fn latency_text(&self, limit: u64) -> Result<Option<Vec<u8>>, Error> {
        let Some((at, len)) = self.options.latency_text else {
            return Ok(None);
        };
        let what = "the latency tracer's text";
        if self.version == 6 {
            return read_vec(&self.src, at, len, limit, what).map(Some);
        }
        // Its section's header, then the text: plain, or (compressed) in chunks as CPU data.
        let head = read_vec(&self.src, at, 16, 16, what)?;
        if self.endian.u16(&head) != 22 {
            return Err(Error::damaged(
                format!("{what} is not where its option says"),
                at,
            ));
        }
        let size = self.endian.u64(&head[8..]);
        if self.endian.u16(&head[2..]) & 1 == 0 {
            return read_vec(&self.src, at + 16, size, limit, what).map(Some);
        }
        self.latency_chunks(at + 16, limit).map(Some)
    }

    /// A compressed latency text: a chunk count, then each chunk's packed and plain sizes and
    /// its bytes.
    fn latency_chunks(&self, at: u64, limit: u64) -> Result<Vec<u8>, Error> {
        let what = "the latency tracer's text";
        let count = self.endian.u32(&read_vec(&self.src, at, 4, 4, what)?);
        let mut pos = at + 4;
        let mut text = Vec::new();
        for _ in 0..count {
            let sizes = read_vec(&self.src, pos, 8, 8, what)?;
            let packed_len = u64::from(self.endian.u32(&sizes));
            let plain_len = u64::from(self.endian.u32(&sizes[4..]));
            let room = limit.saturating_sub(text.len() as u64);
            let packed = read_vec(&self.src, pos + 8, packed_len, room, what)?;
            let mut plain = Vec::new();
            self.compression
                .decompress_into(&packed, plain_len, room, &mut plain, (what, pos))?;
            text.extend_from_slice(&plain);
            pos = pos + 8 + packed_len;
        }
        Ok(text)
    }
}

/// A page size the reader can hold.
fn check_page(size: u32, at: u64) -> Result<(), Error> {
    if (64..=MAX_TRACEDAT_PAGE_BYTES).contains(&size) {
        Ok(())
    } else {
        Err(Error::damaged(
            format!("a page size of {size} bytes is not one a kernel uses"),
            at,
        ))
    }
}

/// `header_page` and `header_event`: the page layout (the event header is the kernel's fixed
/// one, read but not needed).
fn header_info(input: &mut impl Input, raw: &mut RawMeta) -> Result<PageHeader, Error> {
    let at = input.offset();
    if input.take(12, "the header_page label")? != b"header_page\0" {
        return Err(Error::damaged(
            "no header_page where the header info starts",
            at,
        ));
    }
    let page = input.sized(8, MAX_FORMAT_BYTES, "header_page")?;
    let header = PageHeader::parse(&String::from_utf8_lossy(&page)).ok_or_else(|| {
        Error::damaged(
            "header_page does not describe a timestamp, commit and data",
            at,
        )
    })?;
    let at = input.offset();
    if input.take(13, "the header_event label")? != b"header_event\0" {
        return Err(Error::damaged("no header_event after header_page", at));
    }
    raw.header_event = input.sized(8, MAX_FORMAT_BYTES, "header_event")?;
    raw.header_page = page;
    Ok(header)
}

/// The ftrace tracers' own formats (function, print, bprint...).
fn ftrace_formats(input: &mut impl Input, meta: &mut Meta) -> Result<(), Error> {
    let at = input.offset();
    let count = input.u32("the ftrace format count")?;
    check_count(count, at)?;
    for _ in 0..count {
        let text = input.sized(8, MAX_FORMAT_BYTES, "an ftrace format")?;
        if let Some(f) = EventFormat::parse("ftrace", &String::from_utf8_lossy(&text)) {
            meta.formats.push(f);
        }
        meta.raw.ftrace.push(text);
    }
    Ok(())
}

/// Every other event's format, by system.
fn event_formats(input: &mut impl Input, meta: &mut Meta) -> Result<(), Error> {
    let at = input.offset();
    let systems = input.u32("the event system count")?;
    check_count(systems, at)?;
    let mut total = 0u32;
    for _ in 0..systems {
        let system = input.cstr(MAX_NAME, "an event system's name")?;
        let at = input.offset();
        let count = input.u32("an event system's format count")?;
        total = total.saturating_add(count);
        check_count(total, at)?;
        let mut raw = Vec::new();
        for _ in 0..count {
            let text = input.sized(8, MAX_FORMAT_BYTES, "an event format")?;
            if let Some(f) = EventFormat::parse(&system, &String::from_utf8_lossy(&text)) {
                meta.formats.push(f);
            }
            raw.push(text);
        }
        meta.raw.systems.push((system, raw));
    }
    Ok(())
}

fn check_count(count: u32, at: u64) -> Result<(), Error> {
    if count > MAX_TRACEDAT_FORMATS {
        return Err(Error::damaged(
            format!("{count} event formats, more than the {MAX_TRACEDAT_FORMATS} rtlab reads"),
            at,
        ));
    }
    Ok(())
}

fn symbols(input: &mut impl Input, meta: &mut Meta) -> Result<(), Error> {
    let text = input.sized(4, MAX_TRACEDAT_SECTION_BYTES, "the kernel symbols")?;
    meta.symbols = Symbols::parse(&String::from_utf8_lossy(&text));
    meta.raw.kallsyms = text;
    Ok(())
}

fn comms(input: &mut impl Input, meta: &mut Meta) -> Result<(), Error> {
    let text = input.sized(8, MAX_TRACEDAT_SECTION_BYTES, "the task names")?;
    meta.comms = Comms::parse(&String::from_utf8_lossy(&text));
    meta.raw.cmdlines = text;
    Ok(())
}
