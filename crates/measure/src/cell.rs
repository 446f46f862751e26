//! [`CpuCell`]: everything one measuring thread records, laid out so that the thread writes
//! without locks or allocation and other threads read it while it runs.
//!
//! * the exact accumulator is published through a sequence lock ([`SeqWords`]);
//! * histogram buckets and the per-second series are single-writer atomics (a relaxed load and
//!   store, no read-modify-write), so a reader sees each counter whole, never torn;
//! * the worst-N spike table is published through its own sequence lock.
//!
//! All memory is allocated, and every page touched, by [`CpuCell::new`] — before the thread
//! enters its loop.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use model::Nanos;
use model::histogram::{BUCKET_COUNT, Histogram, RANGE_END_NS, bucket_index};
use model::measure::{Series, Spike};
use model::stats::Accumulator;

use model::workload::WorkloadCpu;

use crate::seqlock::SeqWords;
use crate::workload::WorkCounters;

const SPIKE_WORDS: usize = 4;

/// One CPU's recorded data.
pub struct CpuCell {
    /// The CPU measured.
    pub cpu: u32,
    /// The measuring thread's id (0 until it has started).
    pub tid: AtomicU32,
    acc: SeqWords<8>,
    hist: Box<[AtomicU64]>,
    above: AtomicU64,
    spike_seq: AtomicU64,
    spikes: Box<[AtomicU64]>,
    spike_len: AtomicUsize,
    series_max: Box<[AtomicU64]>,
    series_count: Box<[AtomicU64]>,
    series_len: AtomicUsize,
    slot_ns: u64,
    periods_done: AtomicU64,
    done: AtomicBool,
    /// The `--workload` job counters (all zero without a workload).
    pub work: WorkCounters,
}

/// A consistent-enough copy of a cell, read while (or after) the thread runs.
#[derive(Clone, Debug)]
pub struct CellSnapshot {
    /// The CPU.
    pub cpu: u32,
    /// Thread id, if started.
    pub tid: Option<u32>,
    /// Exact figures.
    pub acc: Accumulator,
    /// Histogram.
    pub histogram: Histogram,
    /// Worst samples, worst first.
    pub spikes: Vec<Spike>,
    /// Per-second series up to the current slot.
    pub series: Series,
    /// Periods elapsed (samples + overruns).
    pub periods_done: u64,
    /// The `--workload` jobs (zero without a workload).
    pub work: WorkloadCpu,
}

fn atomics(n: usize) -> Box<[AtomicU64]> {
    (0..n).map(|_| AtomicU64::new(0)).collect()
}

/// Writes every page of `slice` once (a relaxed load and store of the same value), so the
/// pages are resident before the loop; with mlockall(MCL_FUTURE) they are already locked.
fn touch(slice: &[AtomicU64]) {
    const PER_PAGE: usize = 4096 / std::mem::size_of::<AtomicU64>();
    for w in slice.iter().step_by(PER_PAGE) {
        w.store(w.load(Ordering::Relaxed), Ordering::Relaxed);
    }
    if let Some(w) = slice.last() {
        w.store(w.load(Ordering::Relaxed), Ordering::Relaxed);
    }
}

fn to_words(a: &Accumulator) -> [u64; 8] {
    [
        a.count,
        a.min_ns,
        a.max_ns,
        a.sum_ns,
        a.sum_sq_ns2 as u64,
        (a.sum_sq_ns2 >> 64) as u64,
        a.overruns,
        a.last_ns,
    ]
}

fn from_words(w: [u64; 8]) -> Accumulator {
    Accumulator {
        count: w[0],
        min_ns: w[1],
        max_ns: w[2],
        sum_ns: w[3],
        sum_sq_ns2: u128::from(w[4]) | (u128::from(w[5]) << 64),
        overruns: w[6],
        last_ns: w[7],
    }
}

impl CpuCell {
    /// Allocates and touches a cell for `cpu` keeping `spikes` worst samples and
    /// `series_slots` slots of `slot_ns` each.
    pub fn new(cpu: u32, spikes: u32, series_slots: usize, slot_ns: u64) -> CpuCell {
        let cell = CpuCell {
            cpu,
            tid: AtomicU32::new(0),
            acc: SeqWords::new(),
            hist: atomics(BUCKET_COUNT),
            above: AtomicU64::new(0),
            spike_seq: AtomicU64::new(0),
            spikes: atomics(spikes as usize * SPIKE_WORDS),
            spike_len: AtomicUsize::new(0),
            series_max: atomics(series_slots),
            series_count: atomics(series_slots),
            series_len: AtomicUsize::new(0),
            slot_ns,
            periods_done: AtomicU64::new(0),
            done: AtomicBool::new(false),
            work: WorkCounters::default(),
        };
        cell.acc.write(&to_words(&Accumulator::new()));
        touch(&cell.hist);
        touch(&cell.spikes);
        touch(&cell.series_max);
        touch(&cell.series_count);
        cell
    }

    /// Number of series slots.
    pub(crate) fn series_capacity(&self) -> usize {
        self.series_max.len()
    }

    /// Spike table capacity.
    pub(crate) fn spike_capacity(&self) -> usize {
        self.spikes.len() / SPIKE_WORDS
    }

    /// Publishes the accumulator (writer only).
    #[inline(always)]
    pub(crate) fn publish(&self, acc: &Accumulator, periods_done: u64) {
        self.acc.write(&to_words(acc));
        self.periods_done.store(periods_done, Ordering::Relaxed);
    }

    /// Counts one sample in the histogram (writer only).
    #[inline(always)]
    pub(crate) fn count(&self, latency_ns: u64) {
        let counter = if latency_ns < RANGE_END_NS {
            &self.hist[bucket_index(latency_ns)]
        } else {
            &self.above
        };
        counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// Stores a spike at `slot` of the table (writer only).
    #[inline(always)]
    pub(crate) fn put_spike(&self, slot: usize, spike: &Spike, len: usize) {
        let s = self.spike_seq.load(Ordering::Relaxed);
        self.spike_seq.store(s + 1, Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::Release);
        let base = slot * SPIKE_WORDS;
        self.spikes[base].store(spike.latency_ns, Ordering::Relaxed);
        self.spikes[base + 1].store(spike.cycle, Ordering::Relaxed);
        self.spikes[base + 2].store(spike.at_ns, Ordering::Relaxed);
        self.spikes[base + 3].store(spike.monotonic_ns, Ordering::Relaxed);
        self.spike_len.store(len, Ordering::Relaxed);
        self.spike_seq.store(s + 2, Ordering::Release);
    }

    /// Updates the series slot `slot` (writer only).
    #[inline(always)]
    pub(crate) fn put_series(&self, slot: usize, max_ns: u64, count: u64) {
        self.series_max[slot].store(max_ns, Ordering::Relaxed);
        self.series_count[slot].store(count, Ordering::Relaxed);
        self.series_len.store(slot + 1, Ordering::Release);
    }

    /// Marks the thread finished.
    pub(crate) fn finish(&self) {
        self.done.store(true, Ordering::Release);
    }

    /// Whether the thread has finished.
    pub fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// The exact accumulator.
    pub fn accumulator(&self) -> Accumulator {
        from_words(self.acc.read())
    }

    /// Periods elapsed so far.
    pub fn periods_done(&self) -> u64 {
        self.periods_done.load(Ordering::Relaxed)
    }

    /// The histogram as it stands.
    pub fn histogram(&self) -> Histogram {
        Histogram::from_dense(
            self.hist.iter().map(|c| c.load(Ordering::Relaxed)),
            self.above.load(Ordering::Relaxed),
        )
    }

    /// The spike table, worst first (ties: earlier cycle first).
    pub fn spikes(&self) -> Vec<Spike> {
        let mut spikes = loop {
            let s1 = self.spike_seq.load(Ordering::Acquire);
            let len = self.spike_len.load(Ordering::Relaxed);
            let words: Vec<u64> = self.spikes[..len * SPIKE_WORDS]
                .iter()
                .map(|w| w.load(Ordering::Relaxed))
                .collect();
            std::sync::atomic::fence(Ordering::Acquire);
            if s1.is_multiple_of(2) && self.spike_seq.load(Ordering::Relaxed) == s1 {
                break words
                    .chunks_exact(SPIKE_WORDS)
                    .map(|w| Spike {
                        latency_ns: w[0],
                        cycle: w[1],
                        at_ns: w[2],
                        monotonic_ns: w[3],
                    })
                    .collect::<Vec<_>>();
            }
            std::hint::spin_loop();
        };
        spikes.sort_by(|a, b| b.latency_ns.cmp(&a.latency_ns).then(a.cycle.cmp(&b.cycle)));
        spikes
    }

    /// The series up to the slot being filled.
    pub fn series(&self) -> Series {
        let len = self.series_len.load(Ordering::Acquire);
        Series {
            slot_ns: Nanos(self.slot_ns),
            max_ns: self.series_max[..len]
                .iter()
                .map(|v| v.load(Ordering::Relaxed))
                .collect(),
            count: self.series_count[..len]
                .iter()
                .map(|v| v.load(Ordering::Relaxed))
                .collect(),
        }
    }

    /// The CPU measured.
    pub fn cpu(&self) -> u32 {
        self.cpu
    }

    /// The measuring thread's id, once it has started.
    pub fn tid(&self) -> Option<u32> {
        Some(self.tid.load(Ordering::Relaxed)).filter(|&t| t != 0)
    }

    /// Everything, read without stopping the writer.
    pub fn snapshot(&self) -> CellSnapshot {
        let acc = self.accumulator();
        CellSnapshot {
            cpu: self.cpu,
            tid: Some(self.tid.load(Ordering::Relaxed)).filter(|&t| t != 0),
            acc,
            histogram: self.histogram(),
            spikes: self.spikes(),
            series: self.series(),
            periods_done: self.periods_done(),
            work: self.work.snapshot(self.cpu),
        }
    }
}
