//! `--workload`: the work a measuring thread does in each period, once woken — busy until the
//! thread has used the runtime asked for of its own CPU time (CLOCK_THREAD_CPUTIME_ID, what the
//! kernel accounts to the thread) — and the counters of what the jobs did: misses of the
//! deadline split by cause (`model::workload::classify`), the worst wake-up latency and the
//! execution times.
//!
//! The job is held to the clock, not to a loop count calibrated before the run: a count
//! calibrated while the CPU was shared gives less work later, and a busy machine made an
//! "800 us" job take 434 us (issue #42). A job of RUNTIME is RUNTIME of CPU time whatever else
//! runs, so its execution from start to end (wall time) is RUNTIME plus whatever took the CPU
//! from it: preemption, interrupts, a slowed core. That excess is what "long execution" means.
//!
//! Between two reads of the thread's CPU clock the job runs a pure computation (no memory
//! traffic), sized to half of what is left at the rate the previous stretch ran, so a job
//! makes a dozen clock reads whatever its length and ends within about one read of its
//! runtime. The counters are single-writer atomics in the thread's cell, stored with relaxed
//! ordering, like the histogram.

use std::sync::atomic::{AtomicU64, Ordering};

use model::workload::{MissCause, WorkloadCpu, classify};

use crate::clock::{Clock, FakeClock, RealClock};

/// What a thread running the workload needs from its clock beyond time: the job itself, run
/// against that clock. On real time it is [`busy_for`]; on scripted time a job takes exactly
/// its runtime.
pub trait Spin: Clock {
    /// Runs one job: busy until this thread has used `cpu_ns` more of CPU time. `pace` is the
    /// thread's own, kept from job to job.
    fn work(&mut self, cpu_ns: u64, pace: &mut Pace);
}

impl Spin for RealClock {
    #[inline(always)]
    fn work(&mut self, cpu_ns: u64, pace: &mut Pace) {
        busy_for(cpu_ns, pace, sys::clock::thread_cpu_ns);
    }
}

impl Spin for FakeClock {
    fn work(&mut self, cpu_ns: u64, _pace: &mut Pace) {
        self.advance(cpu_ns);
    }
}

/// What one stretch of a job runs: `iterations` rounds of an add the compiler may not remove.
#[inline(never)]
pub fn spin(iterations: u64) -> u64 {
    let mut x = 0u64;
    for i in 0..iterations {
        x = std::hint::black_box(x.wrapping_add(i));
    }
    x
}

/// How fast [`spin`] runs on this thread, learnt from the job's own stretches: it only sizes
/// the stretches between two clock reads, never how long a job is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pace {
    /// Iterations per microsecond of CPU time, as the last stretch ran.
    per_us: u64,
}

impl Pace {
    /// Iterations per microsecond a first stretch assumes (a slow core's; the next stretch
    /// corrects it).
    const FIRST_PER_US: u64 = 100;

    /// A pace not yet learnt.
    pub fn new() -> Pace {
        Pace {
            per_us: Self::FIRST_PER_US,
        }
    }

    /// Iterations that take about `cpu_ns`, at least one.
    fn iterations(self, cpu_ns: u64) -> u64 {
        (self.per_us.saturating_mul(cpu_ns) / 1_000).max(1)
    }

    /// Learns from a stretch of `iterations` that took `cpu_ns` (clock reads included). The
    /// rate at most quadruples at a time, so a stretch timed short (a coarse or stalled
    /// clock) cannot make the next one spin for long.
    fn learn(&mut self, iterations: u64, cpu_ns: u64) {
        // Stretches too short to time (a few clock reads) teach nothing.
        if cpu_ns >= 2_000 {
            let rate = (iterations.saturating_mul(1_000) / cpu_ns).max(1);
            self.per_us = rate.min(self.per_us.saturating_mul(4));
        }
    }
}

impl Default for Pace {
    fn default() -> Pace {
        Pace::new()
    }
}

/// Busy until `thread_cpu` (the calling thread's CPU clock, ns) has advanced by `cpu_ns`:
/// each stretch spins half of what is left, so a stretch that the pace overestimates by up to
/// twice still ends before the runtime, and the job ends within one clock read of it.
/// Returns the CPU time the job used.
#[inline]
pub fn busy_for(cpu_ns: u64, pace: &mut Pace, thread_cpu: impl FnMut() -> u64) -> u64 {
    run_job(cpu_ns, pace, thread_cpu, |n| {
        spin(n);
    })
}

/// [`busy_for`] with the stretch's work given: `spin(n)` runs `n` iterations.
#[inline(always)]
fn run_job(
    cpu_ns: u64,
    pace: &mut Pace,
    mut thread_cpu: impl FnMut() -> u64,
    mut spin: impl FnMut(u64),
) -> u64 {
    let start = thread_cpu();
    let mut used = 0u64;
    while used < cpu_ns {
        let iterations = pace.iterations((cpu_ns - used) / 2);
        spin(iterations);
        let now = thread_cpu().saturating_sub(start);
        pace.learn(iterations, now.saturating_sub(used));
        used = now;
    }
    used
}

/// One CPU's job counters (single writer: the measuring thread).
#[derive(Debug, Default)]
pub struct WorkCounters {
    nominal_ns: AtomicU64,
    jobs: AtomicU64,
    misses: AtomicU64,
    late_start: AtomicU64,
    long_execution: AtomicU64,
    both: AtomicU64,
    max_latency_ns: AtomicU64,
    min_execution_ns: AtomicU64,
    max_execution_ns: AtomicU64,
}

fn bump(a: &AtomicU64) {
    a.store(a.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

impl WorkCounters {
    /// Notes the job's CPU time (before the loop).
    pub(crate) fn prepared(&self, runtime_ns: u64) {
        self.nominal_ns.store(runtime_ns, Ordering::Relaxed);
        self.min_execution_ns.store(u64::MAX, Ordering::Relaxed);
    }

    /// Records one job: its wake-up latency and execution, against `deadline_ns`.
    #[inline]
    pub(crate) fn record(&self, latency: u64, execution: u64, deadline_ns: u64) {
        bump(&self.jobs);
        if latency > self.max_latency_ns.load(Ordering::Relaxed) {
            self.max_latency_ns.store(latency, Ordering::Relaxed);
        }
        if execution > self.max_execution_ns.load(Ordering::Relaxed) {
            self.max_execution_ns.store(execution, Ordering::Relaxed);
        }
        if execution < self.min_execution_ns.load(Ordering::Relaxed) {
            self.min_execution_ns.store(execution, Ordering::Relaxed);
        }
        let nominal = self.nominal_ns.load(Ordering::Relaxed);
        if let Some(cause) = classify(latency, execution, nominal, deadline_ns) {
            bump(&self.misses);
            bump(match cause {
                MissCause::LateStart => &self.late_start,
                MissCause::LongExecution => &self.long_execution,
                MissCause::Both => &self.both,
            });
        }
    }

    /// The counters as the result reports them.
    pub fn snapshot(&self, cpu: u32) -> WorkloadCpu {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let jobs = load(&self.jobs);
        WorkloadCpu {
            cpu,
            iterations: 0,
            nominal_ns: load(&self.nominal_ns),
            jobs,
            misses: load(&self.misses),
            late_start: load(&self.late_start),
            long_execution: load(&self.long_execution),
            both: load(&self.both),
            max_latency_ns: load(&self.max_latency_ns),
            min_execution_ns: if jobs == 0 {
                0
            } else {
                load(&self.min_execution_ns)
            },
            max_execution_ns: load(&self.max_execution_ns),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;
    use model::CpuSet;

    #[test]
    fn on_the_scripted_clock_a_job_takes_exactly_its_runtime() {
        let mut clock = FakeClock::new(vec![]);
        let t0 = clock.now();
        clock.work(250_000, &mut Pace::new());
        assert_eq!(clock.now() - t0, 250_000);
    }

    #[test]
    fn the_pace_sizes_stretches_and_learns_only_from_timed_ones() {
        let mut pace = Pace::new();
        assert_eq!(pace.iterations(0), 1, "at least one iteration");
        assert_eq!(pace.iterations(10_000), 1_000);
        pace.learn(3_000_000, 1_000_000); // 3 iterations a nanosecond, but at most 4 times
        assert_eq!(pace.iterations(1_000), 400);
        pace.learn(3_000_000, 1_000_000);
        pace.learn(3_000_000, 1_000_000);
        assert_eq!(pace.iterations(1_000), 3_000);
        pace.learn(1, 500); // too short to time: unchanged
        assert_eq!(pace.iterations(1_000), 3_000);
        pace.learn(1_000, 1_000_000); // slower: learnt at once
        assert_eq!(pace.iterations(1_000), 1);
        pace.learn(u64::MAX, 2_000); // no overflow
        assert!(pace.iterations(u64::MAX) > 0);
    }

    /// A scripted CPU: an iteration takes 3 ns and a clock read 500 ns. The job ends at the
    /// first read past its runtime, after about a dozen reads, whatever its length.
    #[test]
    fn a_job_ends_at_the_first_clock_read_past_its_runtime() {
        for runtime in [10_000u64, 100_000, 800_000, 50_000_000] {
            let t = std::cell::Cell::new(1_000_000u64);
            let reads = std::cell::Cell::new(0u32);
            let mut pace = Pace::new();
            let used = run_job(
                runtime,
                &mut pace,
                || {
                    reads.set(reads.get() + 1);
                    t.set(t.get() + 500);
                    t.get()
                },
                |n| t.set(t.get() + 3 * n),
            );
            assert!(
                (runtime..runtime + 2_000).contains(&used),
                "{runtime}: {used}"
            );
            assert!(reads.get() <= 30, "{runtime}: {} reads", reads.get());
            // The next job starts at the learnt pace: fewer reads still.
            let before = reads.get();
            run_job(
                runtime,
                &mut pace,
                || {
                    reads.set(reads.get() + 1);
                    t.set(t.get() + 500);
                    t.get()
                },
                |n| t.set(t.get() + 3 * n),
            );
            assert!(reads.get() - before <= 25, "{runtime}");
        }
        assert_eq!(busy_for(0, &mut Pace::new(), || 5), 0, "no work, no spin");
    }

    /// The CPU time the kernel accounts to the calling thread (utime + stime in
    /// `/proc/thread-self/stat`, clock ticks), read independently of the job's own clock.
    fn accounted_ticks() -> u64 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        let fields: Vec<&str> = after.split_whitespace().collect();
        // Fields 14 and 15 of stat(5), counted from the state (field 3).
        fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
    }

    /// Real time: a job of 300 ms is 300 ms of this thread's CPU time as the kernel accounts
    /// it, and its wall time is never less, however busy the machine is.
    #[test]
    fn a_real_job_uses_its_runtime_of_cpu_time() {
        let ticks0 = accounted_ticks();
        let wall0 = sys::clock::monotonic_ns();
        let used = busy_for(300_000_000, &mut Pace::new(), sys::clock::thread_cpu_ns);
        let wall = sys::clock::monotonic_ns() - wall0;
        let ticks = accounted_ticks() - ticks0;
        assert!((300_000_000..301_000_000).contains(&used), "used {used} ns");
        assert!(
            wall >= 299_000_000,
            "a 300 ms job took {wall} ns of wall time"
        );
        // USER_HZ is 100 on Linux: 30 ticks, give or take the ticks' rounding.
        assert!(
            (27..=34).contains(&ticks),
            "the kernel accounted {ticks} ticks"
        );
    }

    /// The case of issue #42: another thread wants the same CPU all the time. The job still
    /// does its whole runtime of work; what it lost to the other thread shows as wall time.
    #[test]
    fn a_job_sharing_its_cpu_still_does_all_its_work() {
        let cpu = sys::cpu::online(&sys::Root::host())
            .unwrap()
            .last()
            .unwrap();
        let only = CpuSet::from_cpus([cpu]);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let hog = {
            let (only, stop) = (only.clone(), stop.clone());
            std::thread::spawn(move || {
                sys::sched::pin_current_thread(&only).unwrap();
                while !stop.load(Ordering::Relaxed) {
                    spin(10_000);
                }
            })
        };
        sys::sched::pin_current_thread(&only).unwrap();
        let wall0 = sys::clock::monotonic_ns();
        let used = busy_for(100_000_000, &mut Pace::new(), sys::clock::thread_cpu_ns);
        let wall = sys::clock::monotonic_ns() - wall0;
        stop.store(true, Ordering::Relaxed);
        hog.join().unwrap();
        assert!(used >= 100_000_000, "used {used} ns");
        // Two threads on one CPU: the job gets about half of it (the fair scheduler), so its
        // wall time is well over its CPU time; never under it.
        assert!(wall >= used - used / 1000, "wall {wall} ns, CPU {used} ns");
    }

    #[test]
    fn counters_split_misses_by_cause() {
        let w = WorkCounters::default();
        w.prepared(1_000);
        w.record(100, 1_000, 1_500);
        w.record(700, 1_000, 1_500);
        w.record(0, 1_600, 1_500);
        w.record(300, 1_300, 1_500);
        let s = w.snapshot(3);
        assert_eq!(
            (s.jobs, s.misses, s.late_start, s.long_execution, s.both),
            (4, 3, 1, 1, 1)
        );
        assert_eq!(
            (s.max_latency_ns, s.min_execution_ns, s.max_execution_ns),
            (700, 1_000, 1_600)
        );
    }
}
