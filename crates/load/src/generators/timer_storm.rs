//! `timer-storm:N`: N ordinary (SCHED_OTHER) threads, each sleeping a random 0 to 1 ms over
//! and over with a relative `clock_nanosleep`, as an application full of short timeouts does.
//!
//! Every sleep arms an hrtimer; with hundreds of sleepers their expiries pile up, so the
//! timer interrupt of a CPU runs many expiries at once and the scheduler switches constantly.
//! This is the pathological load of the NI talk (RT-Summit 2017, "RT trouble #2"): real-time
//! threads on the same CPUs wait behind long runs of expiring ordinary timers. What is
//! achieved is the number of wake-ups.

use model::CpuSet;

use crate::worker::{Rng, Workers};
use crate::{Counters, Generator, LoadError, StartContext};

/// Longest sleep, nanoseconds (sleeps are uniform in 0..=this).
const MAX_SLEEP_NS: u64 = 1_000_000;
/// A sleeper needs little stack; thousands of them should not reserve megabytes each.
const STACK: usize = 64 * 1024;

/// Threads sleeping random sub-millisecond spans.
#[derive(Debug)]
pub struct TimerStorm {
    threads: u32,
    cpus: CpuSet,
    workers: Workers,
}

impl TimerStorm {
    /// `threads` sleepers.
    pub fn new(item: String, threads: u32) -> TimerStorm {
        TimerStorm {
            workers: Workers::new(item),
            threads,
            cpus: CpuSet::new(),
        }
    }
}

impl Generator for TimerStorm {
    fn start(&mut self, ctx: &StartContext<'_>) -> Result<(), LoadError> {
        self.cpus = ctx.cpus.clone();
        for i in 0..self.threads {
            let seed = ctx.seed.wrapping_add(u64::from(i));
            self.workers.spawn(
                &format!("rtlab-timer{i}"),
                ctx.cpus,
                STACK,
                move |shared, meter| {
                    let mut rng = Rng::new(seed);
                    while !shared.stopping() {
                        sys::clock::sleep_ns(rng.below(MAX_SLEEP_NS + 1));
                        meter.count(1, 0);
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
        format!(
            "{} SCHED_OTHER threads sleeping a random 0-1 ms over and over, on {}",
            self.threads,
            self.cpus.with_noun()
        )
    }

    fn unit(&self) -> &'static str {
        "wakeup"
    }

    fn tasks(&self) -> u32 {
        self.workers.len() as u32
    }

    fn stop(&mut self) -> Counters {
        self.workers.stop()
    }
}
