//! The hot loop: sleep to an absolute deadline, read the clock, record how late the wake-up
//! was. Nothing else happens here — no allocation, lock, I/O or system call besides the sleep
//! and the clock (a vDSO read). Everything else (trace markers, output, shutdown) is done by
//! the caller once the loop has returned.
//!
//! A thread that wakes after its *next* deadline has missed that period: the missed periods are
//! counted as overruns and skipped, as cyclictest does, so one long stall is one sample plus
//! overruns rather than a burst of catch-up samples.

use std::sync::atomic::{AtomicBool, Ordering};

use model::measure::Spike;
use model::stats::Accumulator;

use crate::cell::CpuCell;
use crate::clock::Clock;

/// One thread's schedule.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    /// Common start of the run on the clock (slot 0 of the series begins here).
    pub t0: u64,
    /// This thread's offset from `t0` (less than one interval).
    pub offset: u64,
    /// Period.
    pub interval: u64,
    /// Periods to run (samples + overruns).
    pub periods: u64,
    /// Stop at the first sample above this (`u64::MAX` for never).
    pub break_ns: u64,
    /// Length of one slot of the maximum-over-time series.
    pub slot_ns: u64,
}

/// Why the loop returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exit {
    /// Ran every period.
    Finished,
    /// Asked to stop.
    Stopped,
    /// A sample exceeded the break threshold.
    Breach {
        /// The sample.
        latency_ns: u64,
        /// Its period number.
        cycle: u64,
    },
}

/// Runs the loop for `plan`, recording into `cell`, until the plan is done, `stop` is set, or
/// a sample exceeds the break threshold.
pub(crate) fn sample<C: Clock>(
    clock: &mut C,
    plan: &Plan,
    cell: &CpuCell,
    stop: &AtomicBool,
) -> Exit {
    // Everything the loop needs is allocated here, before it starts.
    let capacity = cell.spike_capacity();
    let mut spike_latency = vec![0u64; capacity];
    let mut spike_len = 0usize;
    let mut weakest = 0usize; // slot of the smallest kept spike once the table is full
    let series_last = cell.series_capacity().saturating_sub(1);

    let mut acc = Accumulator::new();
    let mut slot = 0usize;
    let mut slot_end = plan.t0 + plan.slot_ns;
    let (mut slot_max, mut slot_count) = (0u64, 0u64);
    let mut next = plan.t0 + plan.offset;
    let mut period = 0u64;

    while period < plan.periods {
        clock.sleep_until(next);
        let now = clock.now();
        let latency = now.saturating_sub(next);
        let cycle = period;

        while next >= slot_end {
            slot += 1;
            slot_end += plan.slot_ns;
            slot_max = 0;
            slot_count = 0;
        }
        slot_max = slot_max.max(latency);
        slot_count += 1;
        cell.put_series(slot.min(series_last), slot_max, slot_count);

        cell.count(latency);
        acc.record(latency);

        if spike_len < capacity || (capacity > 0 && latency > spike_latency[weakest]) {
            let at = if spike_len < capacity {
                spike_len += 1;
                spike_len - 1
            } else {
                weakest
            };
            spike_latency[at] = latency;
            let spike = Spike {
                latency_ns: latency,
                cycle,
                at_ns: next - plan.t0,
                monotonic_ns: now,
            };
            cell.put_spike(at, &spike, spike_len);
            if spike_len == capacity {
                weakest = index_of_min(&spike_latency);
            }
        }

        period += 1;
        next += plan.interval;
        while next < now && period < plan.periods {
            next += plan.interval;
            period += 1;
            acc.overruns += 1;
        }
        cell.publish(&acc, period);

        if latency > plan.break_ns {
            return Exit::Breach {
                latency_ns: latency,
                cycle,
            };
        }
        if stop.load(Ordering::Relaxed) {
            return Exit::Stopped;
        }
    }
    Exit::Finished
}

#[inline]
fn index_of_min(values: &[u64]) -> usize {
    let mut best = 0;
    for (i, &v) in values.iter().enumerate() {
        if v < values[best] {
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{FAKE_EPOCH_NS, FakeClock};

    fn plan(periods: u64, interval: u64) -> Plan {
        Plan {
            t0: FAKE_EPOCH_NS,
            offset: 0,
            interval,
            periods,
            break_ns: u64::MAX,
            slot_ns: SECOND,
        }
    }

    const SECOND: u64 = 1_000_000_000;

    fn run(script: Vec<u64>, plan: Plan, spikes: u32) -> (Exit, CpuCell) {
        let slots = ((plan.offset + plan.periods * plan.interval) / plan.slot_ns + 2) as usize;
        let cell = CpuCell::new(0, spikes, slots, plan.slot_ns);
        let exit = sample(
            &mut FakeClock::new(script),
            &plan,
            &cell,
            &AtomicBool::new(false),
        );
        (exit, cell)
    }

    #[test]
    fn records_every_scripted_latency() {
        let (exit, cell) = run(vec![5_000, 7_000, 3_000], plan(3_000, 1_000_000), 4);
        assert_eq!(exit, Exit::Finished);
        let acc = cell.accumulator();
        assert_eq!(acc.count, 3_000);
        assert_eq!((acc.min_ns, acc.max_ns, acc.overruns), (3_000, 7_000, 0));
        assert_eq!(acc.sum_ns, 1_000 * 15_000);
        assert_eq!(cell.histogram().count(), 3_000);
        let series = cell.series();
        assert_eq!(series.count, vec![1_000, 1_000, 1_000]);
        assert_eq!(series.max_ns, vec![7_000; 3]);
        assert_eq!(cell.periods_done(), 3_000);
    }

    #[test]
    fn a_late_wake_skips_missed_periods_as_overruns() {
        // 1 ms period; the second wake-up is 3.5 ms late: periods 2, 3 and 4 are missed.
        let (_, cell) = run(
            vec![10_000, 3_500_000, 10_000, 10_000, 10_000, 10_000],
            plan(10, 1_000_000),
            8,
        );
        let acc = cell.accumulator();
        assert_eq!(acc.overruns, 3);
        assert_eq!(acc.count, 7);
        assert_eq!(acc.count + acc.overruns, 10);
        assert_eq!(acc.max_ns, 3_500_000);
        let spikes = cell.spikes();
        assert_eq!(spikes[0].latency_ns, 3_500_000);
        assert_eq!(spikes[0].cycle, 1);
        assert_eq!(spikes[1].cycle, 0, "ties keep the earlier cycle first");
        // The sample after the stall belongs to period 5.
        assert!(spikes.iter().any(|s| s.cycle == 5));
    }

    #[test]
    fn keeps_exactly_the_worst_n() {
        let script: Vec<u64> = (1..=100).map(|i| (i * 7919 % 101) * 1_000).collect();
        let (_, cell) = run(script.clone(), plan(100, 100_000), 5);
        let kept: Vec<u64> = cell.spikes().iter().map(|s| s.latency_ns).collect();
        let mut sorted = script;
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        assert_eq!(kept, sorted[..5].to_vec());
        let (_, none) = run(vec![1_000], plan(10, 100_000), 0);
        assert!(none.spikes().is_empty());
    }

    #[test]
    fn breaks_at_the_first_sample_over_the_threshold() {
        let mut p = plan(100, 1_000_000);
        p.break_ns = 50_000;
        let (exit, cell) = run(vec![10_000, 20_000, 60_000, 10_000], p, 4);
        assert_eq!(
            exit,
            Exit::Breach {
                latency_ns: 60_000,
                cycle: 2
            }
        );
        assert_eq!(
            cell.accumulator().count,
            3,
            "the breaching sample is recorded"
        );
    }

    #[test]
    fn stops_when_asked() {
        let cell = CpuCell::new(0, 4, 4, SECOND);
        let exit = sample(
            &mut FakeClock::new(vec![1]),
            &plan(1_000, 1_000),
            &cell,
            &AtomicBool::new(true),
        );
        assert_eq!(exit, Exit::Stopped);
        assert_eq!(cell.accumulator().count, 1);
    }
}
