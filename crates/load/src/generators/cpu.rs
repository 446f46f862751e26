//! `cpu:N%`: one worker per CPU, each pinned to its CPU, busy N % of the time in short slices
//! (stress-ng's `--cpu-load`), or all the time at 100 %.
//!
//! The work is not one tight loop: each loop mixes integer hashing, a floating-point
//! recurrence with a square root, and read-modify-writes at pseudo-random places of a
//! 256 KiB buffer (about an L2 cache), so the core's integer and FP units and its caches
//! are all busy, as with real computation.
//!
//! The duty cycle is held in the thread's own CPU time (decision 0008): in each slice the
//! worker runs until its CPU time reaches N % of the wall time since it started, then sleeps
//! to the end of the slice. A worker preempted by something else therefore does not count
//! the time it did not run; what it could not get back within two slices is forgiven rather
//! than run flat out later, and reported as a note.
//!
//! Slices are 10.618 ms long: `/proc/stat` counts busy time by sampling at each scheduler tick
//! (every 1, 3.3, 4 or 10 ms), so a slice that is a multiple of the tick would lock the busy
//! phase onto the samples and read far off the truth. With the golden-ratio fraction of a
//! millisecond added, successive slices start at phases that spread evenly over any tick
//! period (a Weyl sequence), so the sampled busy share converges faster than with random slice
//! lengths (error bounded by a few ticks, not growing with the square root of the run).

use model::CpuSet;

use crate::worker::{DEFAULT_STACK, Meter, Shared, Workers};
use crate::{Counters, Generator, LoadError, StartContext};

/// Slice length: 10 ms plus the golden ratio's fraction of a millisecond (see the module
/// note).
const SLICE_NS: u64 = 10_618_034;
/// 64-bit words in a worker's buffer (256 KiB).
const BUFFER_WORDS: usize = 32 * 1024;
/// Iterations of one work loop (about 10-30 us on a current core).
const LOOP_ITERATIONS: u32 = 1024;

/// Duty-cycled busy workers.
#[derive(Debug)]
pub struct CpuLoad {
    percent: u8,
    cpus: CpuSet,
    workers: Workers,
    started_ns: u64,
    stopped_ns: Option<u64>,
}

impl CpuLoad {
    /// A load of `percent` (1 to 100) on every CPU it is given.
    pub fn new(item: String, percent: u8) -> CpuLoad {
        CpuLoad {
            workers: Workers::new(item),
            percent: percent.clamp(1, 100),
            cpus: CpuSet::new(),
            started_ns: 0,
            stopped_ns: None,
        }
    }
}

impl Generator for CpuLoad {
    fn start(&mut self, ctx: &StartContext<'_>) -> Result<(), LoadError> {
        self.cpus = ctx.cpus.clone();
        for (i, cpu) in ctx.cpus.iter().enumerate() {
            let percent = self.percent;
            let seed = ctx.seed.wrapping_add(i as u64);
            let phase = slice_phase(i);
            self.workers.spawn(
                &format!("rtlab-cpu{cpu}"),
                &CpuSet::from_cpus([cpu]),
                DEFAULT_STACK,
                move |shared, meter| {
                    let mut work = Work::new(seed);
                    if percent >= 100 {
                        saturate(&mut work, shared, meter);
                    } else {
                        duty_cycle(&mut work, u64::from(percent), phase, shared, meter);
                    }
                },
            )?;
        }
        self.workers.go();
        self.started_ns = sys::clock::monotonic_ns();
        Ok(())
    }

    fn achieved(&self) -> Counters {
        self.workers.counters()
    }

    fn describe(&self) -> String {
        let n = self.cpus.len();
        let duty = if self.percent >= 100 {
            "always busy".to_string()
        } else {
            format!("busy {}% of each ~10 ms slice", self.percent)
        };
        match n {
            1 => format!("1 worker {duty}, pinned to CPU {}", self.cpus),
            _ => format!(
                "{n} workers {duty}, one pinned to each of CPUs {}",
                self.cpus
            ),
        }
    }

    fn unit(&self) -> &'static str {
        "loop"
    }

    fn tasks(&self) -> u32 {
        self.workers.len() as u32
    }

    fn stop(&mut self) -> Counters {
        let counters = self.workers.stop();
        self.stopped_ns.get_or_insert_with(sys::clock::monotonic_ns);
        counters
    }

    fn notes(&self) -> Vec<String> {
        let end = self.stopped_ns.unwrap_or_else(sys::clock::monotonic_ns);
        let wall = end.saturating_sub(self.started_ns) as f64;
        let expected = wall * f64::from(self.percent) / 100.0 * self.cpus.len() as f64;
        let got = self.workers.counters().cpu_ns as f64;
        // Short runs and the last publishing interval make small gaps; 5 % is a real one.
        if wall < 1e9 || expected == 0.0 || got >= expected * 0.95 {
            return Vec::new();
        }
        let cpus = match self.cpus.len() {
            1 => format!("CPU {}", self.cpus),
            _ => self.cpus.with_noun(),
        };
        vec![format!(
            "the workers got {:.0}% of the CPU time {}% duty asks for: other work on {cpus} \
             (other generators, a measurement, other tasks) took the rest",
            got * 100.0 / expected,
            self.percent,
        )]
    }
}

/// Busy all the time.
fn saturate(work: &mut Work, shared: &Shared, meter: &mut Meter) {
    while !shared.stopping() {
        work.run();
        meter.count(1, 0);
        meter.tick(shared);
    }
}

/// Where worker `i` starts its first slice, as an offset into it: the golden-ratio sequence
/// again, so any number of workers spread their busy phases over the slice instead of all
/// switching on and off together (which on a virtual machine also makes the host steal more).
fn slice_phase(i: usize) -> u64 {
    const GOLDEN: f64 = 0.618_033_988_749_895;
    ((i as f64 * GOLDEN).fract() * SLICE_NS as f64) as u64
}

/// Busy `percent` % of each slice, in CPU time, the first slice starting `phase` ns from now.
fn duty_cycle(work: &mut Work, percent: u64, phase: u64, shared: &Shared, meter: &mut Meter) {
    sys::clock::sleep_ns(phase);
    let cpu_base = sys::clock::thread_cpu_ns();
    // CPU time owed since the start, and CPU time used.
    let mut target = 0u64;
    let mut slice_start = sys::clock::monotonic_ns();
    while !shared.stopping() {
        let slice_end = slice_start + SLICE_NS;
        let share = SLICE_NS * percent / 100;
        let used = sys::clock::thread_cpu_ns() - cpu_base;
        // Owe this slice's share plus at most one slice of earlier shortfall.
        target = (target + share).min(used + 2 * share);
        while sys::clock::thread_cpu_ns() - cpu_base < target
            && sys::clock::monotonic_ns() < slice_end
            && !shared.stopping()
        {
            work.run();
            meter.count(1, 0);
        }
        meter.tick(shared);
        let now = sys::clock::monotonic_ns();
        if now < slice_end {
            sys::clock::sleep_until_monotonic(slice_end);
            slice_start = slice_end;
        } else {
            // Overran (preempted): start the next slice now rather than sprint to catch up.
            slice_start = now;
        }
    }
}

/// One worker's computation: integer, floating-point and cache work, mixed.
struct Work {
    buffer: Vec<u64>,
    x: u64,
    f: f64,
}

impl Work {
    fn new(seed: u64) -> Work {
        Work {
            buffer: vec![seed; BUFFER_WORDS],
            x: seed | 1,
            f: 1.0,
        }
    }

    /// One work loop.
    #[inline(never)]
    fn run(&mut self) {
        let mask = BUFFER_WORDS - 1;
        for _ in 0..LOOP_ITERATIONS {
            self.x ^= self.x << 13;
            self.x ^= self.x >> 7;
            self.x ^= self.x << 17;
            // Converges to sqrt(2c) for c in 1..=256: bounded, never NaN.
            self.f = (0.5 * self.f * self.f + 1.0 + (self.x & 0xff) as f64).sqrt();
            let i = (self.x >> 20) as usize & mask;
            self.buffer[i] = self.buffer[i].wrapping_add(self.x) ^ self.f.to_bits();
        }
        std::hint::black_box(&mut self.buffer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_work_loop_stays_finite_and_changes_the_buffer() {
        let mut work = Work::new(42);
        let before = work.buffer.clone();
        for _ in 0..100 {
            work.run();
        }
        assert!(
            work.f.is_finite() && work.f > 1.0 && work.f < 32.0,
            "{}",
            work.f
        );
        assert_ne!(work.buffer, before);
    }

    #[test]
    fn workers_start_at_phases_spread_over_the_slice() {
        let mut phases: Vec<u64> = (0..8).map(slice_phase).collect();
        assert_eq!(phases[0], 0);
        phases.sort_unstable();
        // Eight phases in one slice: no two closer than a quarter of an even spacing.
        let min_gap = phases.windows(2).map(|w| w[1] - w[0]).min().unwrap();
        assert!(min_gap > SLICE_NS / 8 / 4, "{phases:?}");
        assert!(phases.iter().all(|&p| p < SLICE_NS));
    }

    #[test]
    fn describes_its_placement() {
        let mut load = CpuLoad::new("cpu:60%".into(), 60);
        load.cpus = CpuSet::parse_list("0-1").unwrap();
        assert_eq!(
            load.describe(),
            "2 workers busy 60% of each ~10 ms slice, one pinned to each of CPUs 0-1"
        );
        load.cpus = CpuSet::from_cpus([3]);
        load.percent = 100;
        assert_eq!(load.describe(), "1 worker always busy, pinned to CPU 3");
        assert_eq!(load.tasks(), 0);
        assert_eq!(load.unit(), "loop");
    }
}
