//! `memory[:SIZE][:WORKERS]`: memory-bandwidth and page-fault pressure.
//!
//! Each worker owns a buffer of SIZE bytes (default four times the last-level cache, at least
//! 64 MiB) and copies its first half over its second half, 1 MiB at a time, round and round:
//! a stream that cannot be served from the cache, so it keeps the memory controller and the
//! cache-coherence traffic busy for every other core. Between every 16 MiB copied it maps
//! 1 MiB of fresh anonymous memory, writes one byte to each page so each one faults in, and
//! unmaps it again (page allocation, zeroing, page-table updates and the TLB flush of the
//! unmap). 1 MiB mappings are too small for transparent huge pages, so every page faults.
//!
//! What is achieved: bytes copied, and page faults taken (the operations).

use model::CpuSet;
use model::load::spec::{format_bytes, format_size};
use sys::mem::AnonMap;

use crate::worker::{DEFAULT_STACK, Workers};
use crate::{Counters, Generator, LoadError, StartContext};

/// Copied per step.
const CHUNK: usize = 1 << 20;
/// Copied between two fault rounds.
const COPY_PER_ROUND: usize = 16 << 20;
/// Mapped, faulted and unmapped per fault round.
const FAULT_MAP: usize = 1 << 20;
/// Default buffer: this many times the last-level cache ...
const CACHE_MULTIPLE: u64 = 4;
/// ... and at least this much.
const DEFAULT_MIN: u64 = 64 << 20;
/// Share of the available memory all workers together may take, in percent.
const MAX_SHARE_OF_AVAILABLE: u64 = 50;

/// Streaming copies and a page-fault storm.
#[derive(Debug)]
pub struct MemoryLoad {
    item: String,
    bytes: Option<u64>,
    workers_wanted: u32,
    cpus: CpuSet,
    buffer: u64,
    llc: Option<u64>,
    workers: Workers,
}

impl MemoryLoad {
    /// `workers` workers with a `bytes` buffer each (`None`: sized from the cache).
    pub fn new(item: String, bytes: Option<u64>, workers: u32) -> MemoryLoad {
        MemoryLoad {
            workers: Workers::new(&item),
            item,
            bytes,
            workers_wanted: workers,
            cpus: CpuSet::new(),
            buffer: 0,
            llc: None,
        }
    }
}

/// The default buffer for a last-level cache of `llc` bytes.
fn default_buffer(llc: Option<u64>) -> u64 {
    llc.map_or(DEFAULT_MIN, |c| (c * CACHE_MULTIPLE).max(DEFAULT_MIN))
}

impl Generator for MemoryLoad {
    fn start(&mut self, ctx: &StartContext<'_>) -> Result<(), LoadError> {
        self.cpus = ctx.cpus.clone();
        let first = ctx.cpus.iter().next().unwrap_or(0);
        self.llc = sys::cpu::last_level_cache_bytes(ctx.root, first);
        // Whole chunks in each half.
        let wanted = self.bytes.unwrap_or_else(|| default_buffer(self.llc));
        self.buffer = wanted
            .div_ceil(2 * CHUNK as u64)
            .saturating_mul(2 * CHUNK as u64);
        let len = buffer_len(self.buffer).map_err(|why| LoadError::setup(&self.item, why))?;
        let total = self
            .buffer
            .saturating_add(FAULT_MAP as u64)
            .saturating_mul(u64::from(self.workers_wanted));
        if let Some(available) = sys::mem::available_bytes(ctx.root)
            && total > available / 100 * MAX_SHARE_OF_AVAILABLE
        {
            return Err(LoadError::setup(
                &self.item,
                format!(
                    "needs {} of memory and only {} is available (rtlab uses at most half); \
                     use a smaller SIZE or fewer workers",
                    format_bytes(total as f64),
                    format_bytes(available as f64)
                ),
            ));
        }
        for w in 0..self.workers_wanted {
            let mut buffer = AnonMap::new(len).map_err(|e| LoadError::sys(&self.item, e))?;
            self.workers.spawn(
                &format!("rtlab-mem{w}"),
                ctx.cpus,
                DEFAULT_STACK,
                move |shared, meter| {
                    let (src, dst) = buffer.as_mut_slice().split_at_mut(len / 2);
                    fill(src);
                    let mut offset = 0;
                    let mut since_faults = 0;
                    while !shared.stopping() {
                        dst[offset..offset + CHUNK].copy_from_slice(&src[offset..offset + CHUNK]);
                        std::hint::black_box(&mut dst[offset]);
                        offset = (offset + CHUNK) % src.len();
                        since_faults += CHUNK;
                        meter.count(0, CHUNK as u64);
                        if since_faults >= COPY_PER_ROUND {
                            since_faults = 0;
                            meter.count(fault_round(), 0);
                        }
                        meter.tick(shared);
                    }
                },
            )?;
        }
        self.workers.go();
        Ok(())
    }

    fn achieved(&self) -> Counters {
        self.workers.counters()
    }

    fn describe(&self) -> String {
        let sized = match (self.bytes, self.llc) {
            (Some(_), _) => String::new(),
            (None, Some(llc)) => format!(
                " ({}x the {} last-level cache)",
                CACHE_MULTIPLE,
                format_size(llc)
            ),
            (None, None) => " (last-level cache size unknown)".to_string(),
        };
        format!(
            "{} worker{} copying within a {} buffer{sized} and faulting in {} mappings page \
             by page, on {}",
            self.workers_wanted,
            if self.workers_wanted == 1 { "" } else { "s" },
            format_size(self.buffer),
            format_size(FAULT_MAP as u64),
            self.cpus.with_noun()
        )
    }

    fn unit(&self) -> &'static str {
        "fault"
    }

    fn tasks(&self) -> u32 {
        self.workers.len() as u32
    }

    fn stop(&mut self) -> Counters {
        self.workers.stop()
    }
}

/// The buffer's length in this process's address space: a SIZE beyond it (4 GiB and more
/// on a 32-bit board) is refused, never cut down to its low bits.
fn buffer_len(buffer: u64) -> Result<usize, String> {
    usize::try_from(buffer).map_err(|_| {
        format!(
            "a {} buffer does not fit the address space of this {}-bit build; use a smaller \
             SIZE per worker (and more workers)",
            format_size(buffer),
            usize::BITS
        )
    })
}

/// Gives `buf` distinct, non-zero content (so the copies move real data, not the zero page),
/// quickly: one pattern chunk, copied over the rest.
fn fill(buf: &mut [u8]) {
    let (first, rest) = buf.split_at_mut(CHUNK.min(buf.len()));
    for (i, b) in first.iter_mut().enumerate() {
        *b = (i % 251) as u8;
    }
    for chunk in rest.chunks_mut(CHUNK) {
        chunk.copy_from_slice(&first[..chunk.len()]);
    }
}

/// Maps fresh memory, faults in every page with a write, unmaps it; returns the pages.
fn fault_round() -> u64 {
    AnonMap::new(FAULT_MAP).map_or(0, |mut map| map.touch_for_write() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_buffer_is_four_caches_but_at_least_64m() {
        assert_eq!(default_buffer(None), 64 << 20);
        assert_eq!(default_buffer(Some(8 << 20)), 64 << 20);
        assert_eq!(default_buffer(Some(32 << 20)), 128 << 20);
    }

    #[test]
    fn a_buffer_past_the_address_space_is_refused_not_truncated() {
        // 5 GiB: on a 32-bit build `as usize` would have kept its low bits, 1 GiB.
        let five_gib: u64 = 5 << 30;
        match buffer_len(five_gib) {
            Ok(len) => {
                assert_eq!(usize::BITS, 64);
                assert_eq!(len as u64, five_gib);
            }
            Err(why) => {
                assert_eq!(usize::BITS, 32);
                assert!(why.starts_with("a 5G buffer does not fit"), "{why}");
                assert!(why.contains("32-bit build"), "{why}");
            }
        }
        assert_eq!(buffer_len(64 << 20), Ok(64 << 20));
    }

    #[test]
    fn fill_covers_the_whole_buffer() {
        let mut buf = vec![0u8; 2 * CHUNK + 7];
        fill(&mut buf);
        assert_eq!(buf[CHUNK + 1000], (1000 % 251) as u8);
        assert_eq!(buf[2 * CHUNK + 6], 6);
        let zeros_per_chunk = |len: usize| len.div_ceil(251);
        assert_eq!(
            buf.iter().filter(|&&b| b == 0).count(),
            2 * zeros_per_chunk(CHUNK) + zeros_per_chunk(7)
        );
    }

    #[test]
    fn a_fault_round_touches_every_page() {
        assert_eq!(fault_round(), (FAULT_MAP / sys::mem::page_size()) as u64);
    }
}
