//! The [`Clock`] seam between the sampler and time: [`RealClock`] sleeps on CLOCK_MONOTONIC;
//! [`FakeClock`] replays scripted latencies so statistics, overruns, `--break` and
//! `--fail-above` can be tested deterministically (hidden `--fake-clock` flag of the CLI).
//!
//! A fake clock is for logic, never a substitute for the live tests that measure for real.
//!
//! Time only: what the workload runs against a clock (its job, held to the thread's CPU time)
//! is [`crate::workload::Spin`]'s, so the dependency goes one way (workload uses the clock).

use std::collections::BTreeMap;

use model::Nanos;
use model::nanos::parse_nanos;

/// What the sampler needs from time: sleep to an absolute deadline, then read the time.
pub trait Clock: Send {
    /// Sleeps until `deadline_ns` (absolute, on this clock).
    fn sleep_until(&mut self, deadline_ns: u64);
    /// The current time on this clock.
    fn now(&mut self) -> u64;
}

/// CLOCK_MONOTONIC.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealClock;

impl Clock for RealClock {
    #[inline(always)]
    fn sleep_until(&mut self, deadline_ns: u64) {
        sys::clock::sleep_until_monotonic(deadline_ns);
    }

    #[inline(always)]
    fn now(&mut self) -> u64 {
        sys::clock::monotonic_ns()
    }
}

/// Where fake time starts (1000 s), so offsets and subtraction never go below zero.
pub const FAKE_EPOCH_NS: u64 = 1_000_000_000_000;

/// A clock that wakes each sleeper exactly its next scripted latency after the deadline.
#[derive(Clone, Debug)]
pub struct FakeClock {
    now: u64,
    script: Vec<u64>,
    next: usize,
}

impl FakeClock {
    /// A clock at [`FAKE_EPOCH_NS`] replaying `script` (ns) in a loop.
    pub fn new(script: Vec<u64>) -> FakeClock {
        FakeClock {
            now: FAKE_EPOCH_NS,
            script,
            next: 0,
        }
    }

    /// Lets `ns` of scripted time pass without a sleep (work done between two reads).
    pub fn advance(&mut self, ns: u64) {
        self.now = self.now.saturating_add(ns);
    }
}

impl Clock for FakeClock {
    fn sleep_until(&mut self, deadline_ns: u64) {
        let late = if self.script.is_empty() {
            0
        } else {
            let l = self.script[self.next % self.script.len()];
            self.next += 1;
            l
        };
        self.now = self.now.max(deadline_ns) + late;
    }

    fn now(&mut self) -> u64 {
        self.now
    }
}

/// A script for fake clocks: latencies for every CPU, optionally different per CPU.
///
/// Syntax: `LIST[;CPU=LIST]...` where LIST is comma-separated time values, e.g.
/// `5us,7us,900us` or `5us;1=3us,2ms` (CPU 1 replays 3us, 2ms; others 5us).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FakeScript {
    default: Vec<u64>,
    per_cpu: BTreeMap<u32, Vec<u64>>,
}

impl FakeScript {
    /// Parses the script syntax above.
    pub fn parse(text: &str) -> Result<FakeScript, String> {
        let mut default = Vec::new();
        let mut per_cpu = BTreeMap::new();
        for group in text.split(';').map(str::trim).filter(|g| !g.is_empty()) {
            let (cpu, list) = match group.split_once('=') {
                Some((cpu, list)) => {
                    let cpu: u32 = cpu
                        .trim()
                        .parse()
                        .map_err(|_| format!("fake clock: '{cpu}' is not a CPU number"))?;
                    (Some(cpu), list)
                }
                None => (None, group),
            };
            let values = list
                .split(',')
                .map(|v| {
                    parse_nanos(v)
                        .map(Nanos::get)
                        .map_err(|e| format!("fake clock: {e}"))
                })
                .collect::<Result<Vec<u64>, String>>()?;
            match cpu {
                Some(cpu) => {
                    per_cpu.insert(cpu, values);
                }
                None => default = values,
            }
        }
        if default.is_empty() && per_cpu.is_empty() {
            return Err("fake clock: empty script; give latencies such as 5us,7us".to_string());
        }
        Ok(FakeScript { default, per_cpu })
    }

    /// The clock for one CPU's thread.
    pub fn clock_for(&self, cpu: u32) -> FakeClock {
        FakeClock::new(self.per_cpu.get(&cpu).unwrap_or(&self.default).clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fake_clock_wakes_late_by_the_script() {
        let mut c = FakeClock::new(vec![5, 7]);
        c.sleep_until(FAKE_EPOCH_NS + 100);
        assert_eq!(c.now(), FAKE_EPOCH_NS + 105);
        c.sleep_until(FAKE_EPOCH_NS + 200);
        assert_eq!(c.now(), FAKE_EPOCH_NS + 207);
        c.sleep_until(FAKE_EPOCH_NS + 300);
        assert_eq!(c.now(), FAKE_EPOCH_NS + 305);
        // A deadline already past: wakes at once, plus the scripted delay.
        c.sleep_until(FAKE_EPOCH_NS);
        assert_eq!(c.now(), FAKE_EPOCH_NS + 312);
    }

    #[test]
    fn script_syntax() {
        let s = FakeScript::parse("5us,7us; 1=3us,2ms").unwrap();
        assert_eq!(s.clock_for(0).script, vec![5_000, 7_000]);
        assert_eq!(s.clock_for(1).script, vec![3_000, 2_000_000]);
        assert!(FakeScript::parse("").is_err());
        assert!(FakeScript::parse("5").unwrap_err().contains("no unit"));
        assert!(FakeScript::parse("x=5us").is_err());
    }
}
