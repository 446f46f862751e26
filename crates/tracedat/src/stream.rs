//! The events: each CPU's pages read in blocks (or decompressed chunk by chunk), decoded, and
//! merged into one stream in time order. Memory is bounded whatever the file's size: each CPU
//! holds one block of pages ([`block_bytes`]) or one decompressed chunk, and nothing else grows.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use model::limits::MAX_TRACEDAT_CHUNK_BYTES;

use crate::bytes::{ReadAt, read_full};
use crate::open::{Buffer, TraceDat};
use crate::page::{self, Step};

/// The most memory the CPUs' blocks of uncompressed pages take together.
pub const BLOCKS_BYTES: usize = 64 << 20;

/// One CPU's block at most.
pub const MAX_BLOCK_BYTES: usize = 1 << 20;

/// How many bytes of pages each of `cpus` CPUs reads at once: whole pages, at least one.
pub fn block_bytes(cpus: usize, page_size: usize) -> usize {
    let share = (BLOCKS_BYTES / cpus.max(1)).min(MAX_BLOCK_BYTES);
    (share / page_size).max(1) * page_size
}

/// One raw event: its CPU, timestamp (ns, the file's offsets applied) and record bytes (from
/// `common_type` on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// The CPU it was recorded on.
    pub cpu: u32,
    /// Its timestamp.
    pub ts: u64,
    /// The record.
    pub data: &'a [u8],
}

/// What the stream yields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item<'a> {
    /// An event.
    Event(Record<'a>),
    /// The kernel lost events on `cpu` before the page starting at `ts` (`count` when it
    /// stored how many).
    Lost {
        /// The CPU.
        cpu: u32,
        /// The page's timestamp.
        ts: u64,
        /// How many, when counted.
        count: Option<u64>,
    },
}

/// What reading met.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadReport {
    /// Pages read.
    pub pages: u64,
    /// Events yielded.
    pub events: u64,
    /// Pages whose header or events did not fit the page (the rest of each skipped).
    pub damaged_pages: u64,
    /// Compressed chunks that did not decompress (skipped).
    pub damaged_chunks: u64,
    /// The first damage: CPU and what.
    pub first_damage: Option<String>,
    /// CPUs whose data the file cut short.
    pub truncated_cpus: Vec<u32>,
    /// Pages that said events were lost before them.
    pub lost_pages: u64,
}

impl ReadReport {
    fn damage(&mut self, what: String) {
        if self.first_damage.is_none() {
            self.first_damage = Some(what);
        }
    }

    /// Whether anything was skipped.
    pub fn damaged(&self) -> bool {
        self.damaged_pages > 0 || self.damaged_chunks > 0 || !self.truncated_cpus.is_empty()
    }
}

/// The item a CPU holds next.
#[derive(Clone, Copy, Debug)]
enum Pending {
    Done,
    Event { ts: u64, start: usize, len: usize },
    Lost { ts: u64, count: Option<u64> },
}

/// One CPU's data, of one buffer, as it is read.
struct Cpu {
    cpu: u32,
    /// Its buffer's page size, whether its data is in compressed chunks, and how much is read
    /// at once.
    page_size: usize,
    compressed: bool,
    block: usize,
    /// File offset of the next block (or chunk header) and the end of the data.
    next: u64,
    end: u64,
    /// Chunks left, once the count was read (compressed data).
    chunks: Option<u32>,
    buf: Vec<u8>,
    buf_len: usize,
    /// The current page's start in `buf`, and within it the next event and the data's end.
    page_at: usize,
    in_page: bool,
    pos: usize,
    page_end: usize,
    ts: u64,
    pending: Pending,
}

/// The events of one buffer, or of several merged, in time order.
pub struct Events<'t, R> {
    dat: &'t TraceDat<R>,
    cpus: Vec<Cpu>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    /// The CPU whose item was yielded last: it moves on at the next call.
    current: Option<usize>,
    packed: Vec<u8>,
    report: ReadReport,
}

impl<R: ReadAt> TraceDat<R> {
    /// The events of buffer `index` (0: the top instance), streaming; an empty stream when
    /// there is no such buffer.
    pub fn events(&self, index: usize) -> Events<'_, R> {
        self.primed(self.events_unprimed(&[index]))
    }

    /// The events of every buffer (the top instance and the named ones) merged in time order,
    /// as `trace-cmd report` prints them: a recording made with `-B` holds some events only
    /// in its instances.
    pub fn events_merged(&self) -> Events<'_, R> {
        let all: Vec<usize> = (0..self.buffers.len()).collect();
        self.primed(self.events_unprimed(&all))
    }

    /// Each CPU of the stream moved to its first item.
    fn primed<'t>(&self, mut ev: Events<'t, R>) -> Events<'t, R> {
        for i in 0..ev.cpus.len() {
            ev.advance(i);
            ev.push(i);
        }
        ev
    }

    /// The stream of `buffers` before any CPU read its first page (a buffer that does not
    /// exist adds nothing).
    fn events_unprimed(&self, buffers: &[usize]) -> Events<'_, R> {
        let mut report = ReadReport::default();
        let chosen: Vec<&Buffer> = buffers
            .iter()
            .filter_map(|&i| self.buffers.get(i))
            .collect();
        let streams: usize = chosen.iter().map(|b| b.cpus.len()).sum();
        let mut cpus = Vec::with_capacity(streams);
        for b in chosen {
            let page_size = (b.page_size as usize).max(64);
            for c in &b.cpus {
                // A compressed CPU's size does not count its leading chunk count.
                let count = if b.compressed { 4 } else { 0 };
                let end = c.offset.saturating_add(c.size).saturating_add(count);
                if end > self.len {
                    report.truncated_cpus.push(c.cpu);
                }
                cpus.push(Cpu {
                    cpu: c.cpu,
                    page_size,
                    compressed: b.compressed,
                    block: block_bytes(streams, page_size),
                    next: c.offset,
                    end: end.min(self.len),
                    chunks: None,
                    buf: Vec::new(),
                    buf_len: 0,
                    page_at: 0,
                    in_page: false,
                    pos: 0,
                    page_end: 0,
                    ts: 0,
                    pending: Pending::Done,
                });
            }
        }
        Events {
            dat: self,
            cpus,
            heap: BinaryHeap::new(),
            current: None,
            packed: Vec::new(),
            report,
        }
    }
}

impl<R: ReadAt> Events<'_, R> {
    /// What reading met so far.
    pub fn report(&self) -> &ReadReport {
        &self.report
    }

    /// The next item in time order; `None` at the end.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<Item<'_>> {
        let i = self.prepare()?;
        Some(self.item(i))
    }

    /// Moves to the next item without borrowing it: the index of the CPU that holds it, for
    /// [`Events::item`]; `None` at the end.
    fn prepare(&mut self) -> Option<usize> {
        let i = match self.current.take() {
            Some(i) => {
                self.advance(i);
                match (self.key(i), self.heap.peek()) {
                    (None, _) => self.pop()?,
                    (Some(k), Some(Reverse(top))) if k > *top => {
                        self.push(i);
                        self.pop()?
                    }
                    _ => i,
                }
            }
            None => self.pop()?,
        };
        self.current = Some(i);
        if let Pending::Event { .. } = self.cpus[i].pending {
            self.report.events += 1;
        }
        Some(i)
    }

    /// The item [`Events::prepare`] moved to.
    fn item(&self, i: usize) -> Item<'_> {
        let c = &self.cpus[i];
        match c.pending {
            Pending::Event { ts, start, len } => Item::Event(Record {
                cpu: c.cpu,
                ts: self.dat.convert_ts(ts),
                data: &c.buf[start..start + len],
            }),
            Pending::Lost { ts, count } => Item::Lost {
                cpu: c.cpu,
                ts: self.dat.convert_ts(ts),
                count,
            },
            // Never held by a CPU in the heap; an empty record rather than a panic.
            Pending::Done => Item::Lost {
                cpu: c.cpu,
                ts: 0,
                count: Some(0),
            },
        }
    }

    /// The heap's key of CPU `i`'s pending item.
    fn key(&self, i: usize) -> Option<(u64, usize)> {
        match self.cpus[i].pending {
            Pending::Done => None,
            Pending::Event { ts, .. } | Pending::Lost { ts, .. } => Some((ts, i)),
        }
    }

    fn push(&mut self, i: usize) {
        if let Some(k) = self.key(i) {
            self.heap.push(Reverse(k));
        }
    }

    fn pop(&mut self) -> Option<usize> {
        self.heap.pop().map(|Reverse((_, i))| i)
    }

    /// CPU `i` moves to its next item (or to done).
    fn advance(&mut self, i: usize) {
        loop {
            let c = &mut self.cpus[i];
            if c.in_page {
                match page::step(&c.buf, c.pos, c.page_end, &mut c.ts, self.dat.endian) {
                    Step::Event { start, len, next } => {
                        c.pos = next;
                        c.pending = Pending::Event {
                            ts: c.ts,
                            start,
                            len,
                        };
                        return;
                    }
                    Step::End => {}
                    Step::Damaged => {
                        self.report.damaged_pages += 1;
                        let what = format!("CPU {}: an event runs past its page", c.cpu);
                        self.report.damage(what);
                    }
                }
                c.in_page = false;
                c.page_at += c.page_size;
                continue;
            }
            if c.page_at >= c.buf_len && !self.load(i) {
                self.cpus[i].pending = Pending::Done;
                return;
            }
            let c = &mut self.cpus[i];
            let len = c.page_size.min(c.buf_len - c.page_at);
            match page::page(
                &c.buf,
                c.page_at,
                len,
                &self.dat.page_header,
                self.dat.endian,
            ) {
                Some(p) => {
                    self.report.pages += 1;
                    (c.ts, c.pos, c.page_end, c.in_page) = (p.ts, p.data, p.end, true);
                    if let Some(count) = p.lost {
                        self.report.lost_pages += 1;
                        c.pending = Pending::Lost { ts: p.ts, count };
                        return;
                    }
                }
                None => {
                    self.report.damaged_pages += 1;
                    let what = format!("CPU {}: a page's header claims more than the page", c.cpu);
                    self.report.damage(what);
                    c.page_at += c.page_size;
                }
            }
        }
    }

    /// CPU `i`'s next block of pages (or chunk); false when its data is done.
    fn load(&mut self, i: usize) -> bool {
        if self.cpus[i].compressed {
            return self.load_chunk(i);
        }
        let c = &mut self.cpus[i];
        let block = c.block;
        let want = c.end.saturating_sub(c.next).min(block as u64) as usize;
        if want == 0 {
            return false;
        }
        if c.buf.len() < want {
            c.buf.resize(want, 0);
        }
        let got = match read_full(&self.dat.src, &mut c.buf[..want], c.next) {
            Ok(n) => n,
            Err(e) => {
                let what = format!("CPU {}: reading failed: {e}", c.cpu);
                self.report.damage(what);
                0
            }
        };
        c.next += want as u64;
        (c.buf_len, c.page_at) = (got, 0);
        got > 0
    }

    /// The next compressed chunk of CPU `i`, decompressed; a chunk that does not is skipped.
    fn load_chunk(&mut self, i: usize) -> bool {
        let endian = self.dat.endian;
        loop {
            let c = &mut self.cpus[i];
            let mut head = [0u8; 8];
            if c.chunks.is_none() {
                if read_full(&self.dat.src, &mut head[..4], c.next).ok() != Some(4)
                    || c.next + 4 > c.end
                {
                    return false;
                }
                c.chunks = Some(endian.u32(&head));
                c.next += 4;
            }
            if c.chunks == Some(0) || c.next >= c.end {
                return false;
            }
            c.chunks = c.chunks.map(|n| n - 1);
            let at = c.next;
            if read_full(&self.dat.src, &mut head, at).ok() != Some(8) {
                return false;
            }
            let packed_len = u64::from(endian.u32(&head));
            let plain_len = u64::from(endian.u32(&head[4..]));
            c.next = at.saturating_add(8).saturating_add(packed_len);
            if c.next > c.end {
                self.report.truncated_cpus.push(c.cpu);
                return false;
            }
            self.packed.resize(packed_len as usize, 0);
            let read = read_full(&self.dat.src, &mut self.packed, at + 8).ok();
            let what = ("a trace data chunk", at);
            let out = read.filter(|&n| n == self.packed.len()).map(|_| {
                self.dat.compression.decompress_into(
                    &self.packed,
                    plain_len,
                    u64::from(MAX_TRACEDAT_CHUNK_BYTES),
                    &mut c.buf,
                    what,
                )
            });
            match out {
                Some(Ok(())) => {
                    (c.buf_len, c.page_at) = (c.buf.len(), 0);
                    if c.buf_len > 0 {
                        return true;
                    }
                }
                Some(Err(e)) => {
                    self.report.damaged_chunks += 1;
                    let what = format!("CPU {}: {e}", c.cpu);
                    self.report.damage(what);
                }
                None => return false,
            }
        }
    }
}

impl<R: ReadAt> TraceDat<R> {
    /// The pages of CPU `index` of buffer `buffer`, decompressed, at most `limit` bytes (what a
    /// rewrite of the file copies).
    pub fn cpu_pages(
        &self,
        buffer: usize,
        index: usize,
        limit: u64,
    ) -> Result<Vec<u8>, crate::Error> {
        let Some(b) = self.buffers.get(buffer) else {
            return Ok(Vec::new());
        };
        let Some(c) = b.cpus.get(index) else {
            return Ok(Vec::new());
        };
        if !b.compressed {
            return crate::bytes::read_vec(&self.src, c.offset, c.size, limit, "a CPU's data");
        }
        let mut ev = self.events_unprimed(&[buffer]);
        let mut out = Vec::new();
        // One CPU's stream alone: load its chunks in turn.
        while ev.load_chunk(index) {
            let cpu = &ev.cpus[index];
            if out.len() as u64 + cpu.buf_len as u64 > limit {
                return Err(crate::Error::damaged(
                    "a CPU's data is larger than asked",
                    c.offset,
                ));
            }
            out.extend_from_slice(&cpu.buf[..cpu.buf_len]);
        }
        Ok(out)
    }
}

impl<R> TraceDat<R> {
    /// A raw timestamp as trace-cmd shows it: TSC cycles to ns when the file says how, then
    /// the file's offsets added.
    #[inline]
    pub fn convert_ts(&self, ts: u64) -> u64 {
        let ts = match self.options.tsc2nsec {
            Some((mult, shift, offset)) if mult != 0 => {
                let ns = (u128::from(ts) * u128::from(mult)) >> shift;
                u64::try_from(ns).unwrap_or(u64::MAX).saturating_add(offset)
            }
            _ => ts,
        };
        ts.saturating_add_signed(self.options.ts_offset)
    }
}
