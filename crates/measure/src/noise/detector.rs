//! The noise detector's hot loop and what it writes: read the CPU's counter back to back; every
//! gap goes into the histogram (oslat's quantity), every gap at or above the threshold is an
//! interruption, logged with its start and end for attribution. Nothing else happens in the
//! loop — no allocation, lock, I/O or system call; the counter is one instruction (or the vDSO
//! clock). Between runtime slices of a duty cycle the thread sleeps, outside the measured time.
//!
//! [`NoiseCell`] is the thread's state as the main thread sees it: the latency engine's
//! [`CpuCell`] (histogram, accumulator, spikes, per-second series), the noise figures through
//! a sequence lock, and the interruption log, a single-producer ring the main thread drains.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use model::measure::Spike;
use model::stats::Accumulator;
use sys::counter::Ticks;

use crate::cell::CpuCell;
use crate::seqlock::SeqWords;

/// Interruptions the ring holds between two drains (the main thread drains every 100 ms).
pub(crate) const LOG_CAPACITY: usize = 1 << 15;

/// How often, in counter ticks converted from this many ns, the loop looks up from polling
/// (the stop flag, the end of a runtime slice, the per-second slot, publishing figures).
const LOOK_UP_NS: u64 = 100_000;

/// Counter ticks to ns: `ns = ticks * mult >> 32`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scale {
    mult: u64,
}

impl Scale {
    /// For a counter of `hz`.
    pub(crate) fn new(hz: u64) -> Scale {
        let mult = (1_000_000_000u128 << 32) / u128::from(hz.max(1));
        Scale {
            mult: u64::try_from(mult).unwrap_or(u64::MAX),
        }
    }

    /// `ticks` in ns.
    #[inline(always)]
    pub(crate) fn ns(self, ticks: u64) -> u64 {
        u64::try_from((u128::from(ticks) * u128::from(self.mult)) >> 32).unwrap_or(u64::MAX)
    }

    /// `ns` in ticks.
    pub(crate) fn ticks(self, ns: u64) -> u64 {
        u64::try_from((u128::from(ns) << 32) / u128::from(self.mult.max(1))).unwrap_or(u64::MAX)
    }
}

/// The noise figures a thread publishes: runtime, noise, interruptions, longest single, most
/// noise in one period (all ns but the count), and iterations.
const NOISE_WORDS: usize = 6;

/// One CPU's noise figures so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Figures {
    pub runtime_ns: u64,
    pub noise_ns: u64,
    pub interruptions: u64,
    pub max_single_ns: u64,
    pub max_period_noise_ns: u64,
    pub iterations: u64,
}

/// A detector thread's state, shared with the main thread.
pub(crate) struct NoiseCell {
    pub(crate) cell: std::sync::Arc<CpuCell>,
    figures: SeqWords<NOISE_WORDS>,
    log: Box<[AtomicU64]>,
    head: AtomicU64,
    tail: AtomicU64,
    dropped: AtomicU64,
}

impl NoiseCell {
    /// Around a prepared cell; the log's memory is allocated and touched here.
    pub(crate) fn new(cell: std::sync::Arc<CpuCell>) -> NoiseCell {
        let log: Box<[AtomicU64]> = (0..LOG_CAPACITY * 2).map(|_| AtomicU64::new(0)).collect();
        for w in log.iter().step_by(512) {
            w.store(0, Ordering::Relaxed);
        }
        let c = NoiseCell {
            cell,
            figures: SeqWords::new(),
            log,
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        };
        c.figures.write(&[0; NOISE_WORDS]);
        c
    }

    #[inline(always)]
    fn publish(&self, f: &Figures) {
        self.figures.write(&[
            f.runtime_ns,
            f.noise_ns,
            f.interruptions,
            f.max_single_ns,
            f.max_period_noise_ns,
            f.iterations,
        ]);
    }

    /// The figures as last published.
    pub(crate) fn figures(&self) -> Figures {
        let w = self.figures.read();
        Figures {
            runtime_ns: w[0],
            noise_ns: w[1],
            interruptions: w[2],
            max_single_ns: w[3],
            max_period_noise_ns: w[4],
            iterations: w[5],
        }
    }

    /// Logs one interruption (counter values); counted as dropped when the ring is full.
    #[inline(always)]
    fn log(&self, start: u64, end: u64) {
        let head = self.head.load(Ordering::Relaxed);
        let tail = self.tail.load(Ordering::Acquire);
        if head.wrapping_sub(tail) >= LOG_CAPACITY as u64 {
            let d = self.dropped.load(Ordering::Relaxed);
            self.dropped.store(d + 1, Ordering::Relaxed);
            return;
        }
        let at = (head as usize % LOG_CAPACITY) * 2;
        self.log[at].store(start, Ordering::Relaxed);
        self.log[at + 1].store(end, Ordering::Relaxed);
        self.head.store(head + 1, Ordering::Release);
    }

    /// Moves the logged interruptions into `out` (the main thread's side of the ring).
    pub(crate) fn drain(&self, out: &mut Vec<(u64, u64)>) {
        let head = self.head.load(Ordering::Acquire);
        let mut tail = self.tail.load(Ordering::Relaxed);
        while tail != head {
            let at = (tail as usize % LOG_CAPACITY) * 2;
            out.push((
                self.log[at].load(Ordering::Relaxed),
                self.log[at + 1].load(Ordering::Relaxed),
            ));
            tail += 1;
        }
        self.tail.store(tail, Ordering::Release);
    }

    /// Interruptions the ring had no room for.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// What a detector thread does, in counter ticks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    /// The common start.
    pub start: u64,
    /// The end of the run.
    pub end: u64,
    /// Polling time in each period.
    pub runtime: u64,
    /// The period.
    pub period: u64,
    /// Gaps at or above this are interruptions.
    pub threshold: u64,
    /// Per-second series slot.
    pub slot: u64,
    /// A counter value and its CLOCK_MONOTONIC_RAW time, for spike timestamps.
    pub anchor: (u64, u64),
    pub scale: Scale,
}

/// How a detector's loop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exit {
    /// The run's end came.
    Finished,
    /// The main thread asked it to stop.
    Stopped,
}

/// The loop's running state (kept together so the cold paths take one reference).
struct State {
    acc: Accumulator,
    fig: Figures,
    period_noise: u64,
    slot: usize,
    slot_max: u64,
    slot_count: u64,
    spike_ns: Vec<u64>,
    spike_len: usize,
    weakest: usize,
}

impl State {
    /// Before the first read: the spike table allocated here, outside the loop.
    fn new(spikes: usize) -> State {
        State {
            acc: Accumulator::new(),
            fig: Figures::default(),
            period_noise: 0,
            slot: 0,
            slot_max: 0,
            slot_count: 0,
            spike_ns: vec![0; spikes],
            spike_len: 0,
            weakest: 0,
        }
    }
}

/// Polls `T` until the plan's end or `stop`. `sleep_ns` sleeps between runtime slices.
pub(crate) fn detect<T: Ticks>(
    plan: &Plan,
    cell: &NoiseCell,
    stop: &AtomicBool,
    sleep_ns: &dyn Fn(u64),
) -> Exit {
    let c = &*cell.cell;
    let mut st = State::new(c.spike_capacity());
    let series_last = c.series_capacity().saturating_sub(1);
    let look_up = plan.scale.ticks(LOOK_UP_NS).max(1);
    let mut period_start = plan.start;
    let exit = 'run: loop {
        let slice_end = period_start.saturating_add(plan.runtime).min(plan.end);
        let mut prev = T::now();
        let slice_start = prev;
        let mut next_look = prev.saturating_add(look_up);
        loop {
            let now = T::now();
            let d = now.saturating_sub(prev);
            let ns = plan.scale.ns(d);
            c.count(ns);
            st.acc.count += 1;
            st.acc.sum_ns = st.acc.sum_ns.wrapping_add(ns);
            st.acc.sum_sq_ns2 = st
                .acc
                .sum_sq_ns2
                .wrapping_add(u128::from(ns) * u128::from(ns));
            st.acc.min_ns = st.acc.min_ns.min(ns);
            st.acc.max_ns = st.acc.max_ns.max(ns);
            st.slot_max = st.slot_max.max(ns);
            st.slot_count += 1;
            if d >= plan.threshold {
                interruption(plan, cell, &mut st, prev, now, ns);
            }
            prev = now;
            if now >= next_look {
                next_look = now.saturating_add(look_up);
                st.fig.iterations = st.acc.count;
                let slot = (now.saturating_sub(plan.start) / plan.slot.max(1)) as usize;
                if slot != st.slot {
                    c.put_series(st.slot.min(series_last), st.slot_max, st.slot_count);
                    (st.slot, st.slot_max, st.slot_count) = (slot, 0, 0);
                }
                c.put_series(st.slot.min(series_last), st.slot_max, st.slot_count);
                let ran = plan.scale.ns(now.saturating_sub(slice_start));
                let so_far = Figures {
                    runtime_ns: st.fig.runtime_ns.saturating_add(ran),
                    ..st.fig
                };
                cell.publish(&so_far);
                c.publish(&st.acc, st.acc.count);
                if stop.load(Ordering::Relaxed) {
                    st.fig.runtime_ns = so_far.runtime_ns;
                    break 'run Exit::Stopped;
                }
                if now >= slice_end {
                    st.fig.runtime_ns = so_far.runtime_ns;
                    break;
                }
            }
        }
        st.fig.max_period_noise_ns = st.fig.max_period_noise_ns.max(st.period_noise);
        st.period_noise = 0;
        period_start = period_start.saturating_add(plan.period);
        if period_start >= plan.end {
            break Exit::Finished;
        }
        let now = T::now();
        if period_start > now {
            sleep_ns(plan.scale.ns(period_start - now));
        }
        if stop.load(Ordering::Relaxed) {
            break Exit::Stopped;
        }
    };
    st.fig.max_period_noise_ns = st.fig.max_period_noise_ns.max(st.period_noise);
    st.fig.iterations = st.acc.count;
    c.put_series(st.slot.min(series_last), st.slot_max, st.slot_count);
    cell.publish(&st.fig);
    c.publish(&st.acc, st.acc.count);
    exit
}

/// The cold path: one gap at or above the threshold.
#[cold]
#[inline(never)]
fn interruption(plan: &Plan, cell: &NoiseCell, st: &mut State, from: u64, to: u64, ns: u64) {
    cell.log(from, to);
    st.fig.noise_ns = st.fig.noise_ns.saturating_add(ns);
    st.fig.interruptions += 1;
    st.fig.max_single_ns = st.fig.max_single_ns.max(ns);
    st.period_noise = st.period_noise.saturating_add(ns);
    let capacity = st.spike_ns.len();
    if st.spike_len < capacity || (capacity > 0 && ns > st.spike_ns[st.weakest]) {
        let at = if st.spike_len < capacity {
            st.spike_len += 1;
            st.spike_len - 1
        } else {
            st.weakest
        };
        st.spike_ns[at] = ns;
        let (anchor_tick, anchor_raw) = plan.anchor;
        let spike = Spike {
            latency_ns: ns,
            cycle: st.acc.count,
            at_ns: plan.scale.ns(from.saturating_sub(plan.start)),
            monotonic_ns: anchor_raw
                .saturating_add(plan.scale.ns(from.saturating_sub(anchor_tick))),
        };
        cell.cell.put_spike(at, &spike, st.spike_len);
        if st.spike_len == capacity {
            st.weakest = (0..capacity).min_by_key(|i| st.spike_ns[*i]).unwrap_or(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        static SCRIPT: Cell<u64> = const { Cell::new(0) };
        static STEP: Cell<u64> = const { Cell::new(0) };
    }

    /// A counter that advances 10 ticks per read, and 5 000 every 1 000th read.
    struct Scripted;
    impl Ticks for Scripted {
        fn now() -> u64 {
            let n = STEP.with(|s| {
                s.set(s.get() + 1);
                s.get()
            });
            SCRIPT.with(|t| {
                t.set(t.get() + if n.is_multiple_of(1_000) { 5_000 } else { 10 });
                t.get()
            })
        }
    }

    #[test]
    fn every_gap_is_counted_and_the_long_ones_are_interruptions() {
        let cpu = std::sync::Arc::new(CpuCell::new(0, 4, 8, 1_000_000_000));
        let cell = NoiseCell::new(cpu);
        // 1 GHz: a tick is a ns. 2 ms of polling.
        let plan = Plan {
            start: 0,
            end: 2_000_000,
            runtime: 2_000_000,
            period: 2_000_000,
            threshold: 1_000,
            slot: 1_000_000_000,
            anchor: (0, 0),
            scale: Scale::new(1_000_000_000),
        };
        let exit = detect::<Scripted>(&plan, &cell, &AtomicBool::new(false), &|_| {});
        assert_eq!(exit, Exit::Finished);
        let f = cell.figures();
        let acc = cell.cell.accumulator();
        assert_eq!(acc.count, f.iterations);
        assert_eq!(cell.cell.histogram().count(), acc.count);
        assert!(f.interruptions > 100, "{f:?}");
        assert_eq!(f.noise_ns, f.interruptions * 5_000);
        assert_eq!(f.max_single_ns, 5_000);
        assert_eq!(acc.max_ns, 5_000);
        let mut log = Vec::new();
        cell.drain(&mut log);
        assert_eq!(log.len() as u64, f.interruptions);
        assert!(log.iter().all(|(a, b)| b - a == 5_000));
        assert_eq!(cell.cell.spikes().len(), 4);
        // Runtime is what was polled: the scripted counter passed the 2 ms end.
        assert!(
            f.runtime_ns >= 2_000_000 && f.runtime_ns < 2_200_000,
            "{f:?}"
        );
    }

    #[test]
    fn a_full_ring_counts_what_it_drops() {
        let cell = NoiseCell::new(std::sync::Arc::new(CpuCell::new(0, 0, 1, 1)));
        for i in 0..(LOG_CAPACITY as u64 + 5) {
            cell.log(i, i + 1);
        }
        assert_eq!(cell.dropped(), 5);
        let mut out = Vec::new();
        cell.drain(&mut out);
        assert_eq!(out.len(), LOG_CAPACITY);
        cell.log(1, 2);
        cell.drain(&mut out);
        assert_eq!(out.last(), Some(&(1, 2)));
    }

    #[test]
    fn the_scale_round_trips() {
        let s = Scale::new(2_994_000_000);
        assert_eq!(s.ns(2_994_000_000), 999_999_999);
        let t = s.ticks(1_000);
        assert!((2_993..=2_994).contains(&t), "{t}");
    }
}
