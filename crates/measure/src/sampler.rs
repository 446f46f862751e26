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
use crate::workload::{Pace, Spin};

/// One thread's schedule.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    /// Common start of the run on the clock (slot 0 of the series begins here).
    pub t0: u64,
    /// This thread's offset from `t0` (less than one interval).
    pub offset: u64,
    /// Period.
    pub interval: u64,
    /// Periods to run (samples + overruns), or with `count_wakeups` wake-ups to take.
    pub periods: u64,
    /// `--cycles`: `periods` counts wake-ups, as cyclictest's `-l` counts its loops; a period
    /// a late wake-up missed is an overrun and does not count (`-l 10000` takes 10000
    /// samples). Otherwise the run is a time: missed periods count toward it.
    pub count_wakeups: bool,
    /// Stop at the first sample above this (`u64::MAX` for never).
    pub break_ns: u64,
    /// Length of one slot of the maximum-over-time series.
    pub slot_ns: u64,
    /// The job run after each wake-up (`--workload`); the sample is then the response time.
    pub work: Option<Job>,
}

impl Plan {
    /// Whether the loop goes on after `samples` wake-ups over `period` periods.
    #[inline]
    fn more(&self, samples: u64, period: u64) -> bool {
        match self.count_wakeups {
            true => samples < self.periods,
            false => period < self.periods,
        }
    }
}

/// The work after each wake-up.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Job {
    /// The CPU time each job uses, ns (`--workload`).
    pub cpu_ns: u64,
    /// The deadline after each release, ns.
    pub deadline_ns: u64,
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
pub(crate) fn sample<C: Spin>(
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
    let mut pace = Pace::new();

    while plan.more(acc.count, period) {
        clock.sleep_until(next);
        let now = clock.now();
        // Without a workload the sample is the wake-up latency; with one, the response time
        // (release to the end of the job), the job's start and length going to its counters.
        let (latency, end) = match plan.work {
            None => (now.saturating_sub(next), now),
            Some(job) => {
                clock.work(job.cpu_ns, &mut pace);
                let end = clock.now();
                cell.work.record(
                    now.saturating_sub(next),
                    end.saturating_sub(now),
                    job.deadline_ns,
                );
                (end.saturating_sub(next), end)
            }
        };
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
        while next < end && (plan.count_wakeups || period < plan.periods) {
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
            count_wakeups: false,
            break_ns: u64::MAX,
            slot_ns: SECOND,
            work: None,
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
    fn counted_wake_ups_take_that_many_samples_whatever_is_missed() {
        // cyclictest's -l 10: ten samples; the 3.5-ms stall's three missed periods are
        // overruns on top (`-l 10000` showed `Total: 9990` when missed periods counted).
        let mut p = plan(10, 1_000_000);
        p.count_wakeups = true;
        p.slot_ns = 100 * SECOND;
        let mut script = vec![10_000; 10];
        script[1] = 3_500_000;
        let (exit, cell) = run(script, p, 8);
        assert_eq!(exit, Exit::Finished);
        let acc = cell.accumulator();
        assert_eq!((acc.count, acc.overruns), (10, 3));
        assert_eq!(cell.periods_done(), 13);
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

    /// `--workload 200us --workload-deadline 1ms` on the scripted clock: each job takes exactly its
    /// 200 us; the sample is the response time, and the 900 us wake-up misses by its start.
    #[test]
    fn a_workload_records_response_times_and_classifies_misses() {
        let mut p = plan(6, 2_000_000);
        p.work = Some(Job {
            cpu_ns: 200_000,
            deadline_ns: 1_000_000,
        });
        let slots = 4;
        let cell = CpuCell::new(0, 4, slots, p.slot_ns);
        cell.work.prepared(200_000);
        let exit = sample(
            &mut FakeClock::new(vec![5_000, 9_000, 900_000]),
            &p,
            &cell,
            &AtomicBool::new(false),
        );
        assert_eq!(exit, Exit::Finished);
        let acc = cell.accumulator();
        assert_eq!((acc.count, acc.min_ns, acc.max_ns), (6, 205_000, 1_100_000));
        let w = cell.work.snapshot(0);
        assert_eq!(
            (w.jobs, w.misses, w.late_start, w.long_execution),
            (6, 2, 2, 0)
        );
        assert_eq!(
            (w.max_latency_ns, w.min_execution_ns, w.max_execution_ns),
            (900_000, 200_000, 200_000)
        );
    }

    /// A job that ends after the next release overruns that period, as a late wake-up does.
    #[test]
    fn a_job_past_its_period_skips_the_periods_it_covered() {
        let mut p = plan(5, 1_000_000);
        p.work = Some(Job {
            cpu_ns: 900_000,
            deadline_ns: 1_000_000,
        });
        let cell = CpuCell::new(0, 4, 4, p.slot_ns);
        cell.work.prepared(900_000);
        sample(
            &mut FakeClock::new(vec![10_000, 1_200_000]),
            &p,
            &cell,
            &AtomicBool::new(false),
        );
        let acc = cell.accumulator();
        assert_eq!(acc.count + acc.overruns, 5);
        assert!(acc.overruns >= 1, "{acc:?}");
        assert!(cell.work.snapshot(0).misses >= 1);
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
