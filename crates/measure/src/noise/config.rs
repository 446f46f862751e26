//! [`NoiseConfig`]: a noise run's parameters, the rules that refuse bad ones, and the
//! warnings a valid but risky one earns (a real-time detector polling all the time).
//!
//! Defaults follow oslat and rtla osnoise where they agree, and say why where they differ:
//! SCHED_OTHER (oslat's default; rtla osnoise's kernel threads run at SCHED_OTHER too unless
//! given `-P`), so the detector never starves the CPU's kernel threads and a thread that
//! preempts it shows up as thread noise; polling all of every 1 s period (rtla osnoise's
//! default runtime and period); a 1 us threshold (the and rtla osnoise's default
//! `tracing_thresh` of 5 us is coarser than oslat's 1 us buckets).

use model::limits::{MAX_RUN, MAX_SERIES_SLOTS, MAX_SPIKES};
use model::measure::{Policy, Warning};
use model::{CpuSet, Nanos};

use crate::config::DEFAULT_STACK_BYTES;

/// The smallest threshold: below it a counter read and its bookkeeping are the gap.
pub const MIN_THRESHOLD: Nanos = Nanos(100);
/// The largest threshold.
pub const MAX_THRESHOLD: Nanos = Nanos::SECOND;
/// The shortest runtime slice.
pub const MIN_RUNTIME: Nanos = Nanos(100_000);
/// The longest period.
pub const MAX_PERIOD: Nanos = Nanos(60 * 1_000_000_000);

/// Which engine measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoiseEngine {
    /// The kernel's osnoise tracer where it exists (and the detector's policy was not asked
    /// for), else rtlab's detector.
    Auto,
    /// rtlab's user-space detector.
    User,
    /// The kernel's osnoise tracer; an error without it.
    Kernel,
}

/// A noise run's parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct NoiseConfig {
    /// CPUs to poll, one thread each.
    pub cpus: CpuSet,
    /// How long to run.
    pub duration: Nanos,
    /// Gaps at or above this are interruptions.
    pub threshold: Nanos,
    /// Polling time in each period.
    pub runtime: Nanos,
    /// The duty cycle's period (and the `Max Noise` column's).
    pub period: Nanos,
    /// The detector's policy (`other`, `fifo`, `rr`).
    pub policy: Policy,
    /// Its real-time priority (fifo/rr).
    pub priority: u8,
    /// Whether priority 99 was asked for knowingly (`--allow-prio-99`).
    pub allow_prio_99: bool,
    /// Attribute interruptions from a private kernel trace.
    pub attribute: bool,
    /// Checkpoint interval.
    pub checkpoint: Option<Nanos>,
    /// Worst interruptions kept per CPU.
    pub spikes: u32,
    /// CPUs for rtlab's main thread.
    pub main_cpus: Option<CpuSet>,
    /// Lock memory (mlockall) and pre-fault the stacks.
    pub mlock: bool,
    /// Stack size of a detector thread.
    pub stack_bytes: usize,
    /// Which engine measures.
    pub engine: NoiseEngine,
}

/// Why a noise configuration was refused; the message names the flag and the fix.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NoiseConfigError(pub String);

impl NoiseConfig {
    /// The defaults for `cpus`.
    pub fn new(cpus: CpuSet) -> NoiseConfig {
        NoiseConfig {
            cpus,
            duration: Nanos::from_secs(10),
            threshold: Nanos::from_us(1),
            runtime: Nanos::SECOND,
            period: Nanos::SECOND,
            policy: Policy::Other,
            priority: 0,
            allow_prio_99: false,
            attribute: true,
            checkpoint: Some(Nanos::from_secs(10)),
            spikes: 64,
            main_cpus: None,
            mlock: true,
            stack_bytes: DEFAULT_STACK_BYTES,
            engine: NoiseEngine::Auto,
        }
    }

    /// Refuses what cannot be measured; the message names the flag.
    pub fn validate(&self) -> Result<(), NoiseConfigError> {
        let err = |m: String| Err(NoiseConfigError(m));
        if self.cpus.is_empty() {
            return err("--cpus names no CPU: give at least one, e.g. --cpus 1".into());
        }
        if self.duration.get() == 0 || self.duration > MAX_RUN {
            return err(format!(
                "--duration {} is out of range: give more than 0s, up to {MAX_RUN}",
                self.duration
            ));
        }
        if self.threshold < MIN_THRESHOLD || self.threshold > MAX_THRESHOLD {
            return err(format!(
                "--threshold {} is out of range: give {MIN_THRESHOLD} to {MAX_THRESHOLD}",
                self.threshold
            ));
        }
        if self.period > MAX_PERIOD || self.period < MIN_RUNTIME {
            return err(format!(
                "--period {} is out of range: give {MIN_RUNTIME} to {MAX_PERIOD}",
                self.period
            ));
        }
        if self.runtime < MIN_RUNTIME || self.runtime > self.period {
            return err(format!(
                "--runtime {} must be at least {MIN_RUNTIME} and at most --period ({})",
                self.runtime, self.period
            ));
        }
        if self.spikes > MAX_SPIKES {
            return err(format!(
                "--spikes {} is more than {MAX_SPIKES}",
                self.spikes
            ));
        }
        match self.policy {
            Policy::Other | Policy::Batch | Policy::Idle if self.priority != 0 => {
                return err(format!(
                    "--priority {} needs --policy fifo or rr (SCHED_{} takes none)",
                    self.priority,
                    self.policy.as_str().to_uppercase()
                ));
            }
            Policy::Fifo | Policy::Rr if self.priority == 0 => {
                return err(format!(
                    "--policy {} needs -p/--priority PRIO (1-98)",
                    self.policy.as_str()
                ));
            }
            Policy::Fifo | Policy::Rr if !(1..=99).contains(&self.priority) => {
                return err(format!(
                    "--priority {} is out of range for SCHED_{}: give 1 to 99",
                    self.priority,
                    self.policy.as_str().to_uppercase()
                ));
            }
            Policy::Fifo | Policy::Rr if self.priority == 99 && !self.allow_prio_99 => {
                return err(
                    "--priority 99 would starve the kernel threads that run at 99 (migration, \
                     watchdogs); use 98 or less, or add --allow-prio-99 if you mean it"
                        .into(),
                );
            }
            _ if self.engine == NoiseEngine::Kernel && self.policy != Policy::Other => {
                return err(format!(
                    "--policy {} is the user engine's: the osnoise tracer's threads are the kernel's; drop --policy or use --engine user",
                    self.policy.as_str()
                ));
            }
            Policy::Deadline => {
                return err(
                    "--policy deadline is not for a polling detector: use --policy fifo with --runtime/--period"
                        .into(),
                );
            }
            _ => {}
        }
        Ok(())
    }

    /// Per-second series slots for the run (bounded like `measure`'s).
    pub fn series_slots(&self) -> usize {
        let secs = self.duration.get().div_ceil(Nanos::SECOND.get());
        usize::try_from(secs.saturating_add(2))
            .unwrap_or(usize::MAX)
            .min(MAX_SERIES_SLOTS)
    }

    /// Warnings a valid configuration earns on a machine whose RT bandwidth is `rt_limit`
    /// (`kernel.sched_rt_runtime_us` and `sched_rt_period_us`, where read).
    pub fn warnings(&self, rt_limit: Option<(i64, u64)>) -> Vec<Warning> {
        let mut w = Vec::new();
        if let Some((runtime_us, period_us)) = rt_limit.filter(|(r, p)| *r >= 0 && *p > 0)
            && self.policy.is_realtime()
            && self.runtime < self.period
        {
            let asked = self.runtime.get() as f64 / self.period.get() as f64;
            let limit = runtime_us as f64 / period_us as f64;
            if asked >= limit {
                w.push(Warning::new(
                    "noise-rt-throttling",
                    format!(
                        "the SCHED_{} detector asks {:.1}% of every period and RT throttling (kernel.sched_rt_runtime_us {runtime_us} of {period_us}) stops real-time tasks past {:.1}%: its gaps, up to {} us, are named RT throttling, not noise; give --runtime below {:.0}% of --period, or set `sysctl kernel.sched_rt_runtime_us=-1`",
                        self.policy.as_str().to_uppercase(),
                        asked * 100.0,
                        limit * 100.0,
                        period_us.saturating_sub(runtime_us as u64),
                        limit * 100.0
                    ),
                ));
            }
        }
        if self.policy.is_realtime() && self.runtime == self.period {
            w.push(Warning::new(
                "noise-starves",
                format!(
                    "a SCHED_{} detector polling all of every period keeps the CPU's kernel threads (RCU, ksoftirqd, kworkers) from running; the kernel's RT throttling (sched_rt_runtime_us) then takes its share as one long interruption. Give --runtime below --period (e.g. --runtime 900ms --period 1s)",
                    self.policy.as_str().to_uppercase()
                ),
            ));
        }
        if self.series_slots() == MAX_SERIES_SLOTS {
            w.push(Warning::new(
                "series-capped",
                format!(
                    "the per-second series keeps {MAX_SERIES_SLOTS} slots: seconds after that share the last slot"
                ),
            ));
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> NoiseConfig {
        NoiseConfig::new(CpuSet::from_cpus([1]))
    }

    #[test]
    fn the_defaults_are_valid_and_quiet() {
        let c = config();
        c.validate().unwrap();
        assert!(c.warnings(Some((950_000, 1_000_000))).is_empty());
        assert_eq!(c.series_slots(), 12);
    }
    /// Issue #45: a real-time detector asking at least the kernel's real-time share of each
    /// period is throttled; below it, or without a limit, nothing is said.
    #[test]
    fn a_realtime_detector_at_the_rt_limit_is_warned_of_throttling() {
        let mut c = config();
        c.policy = Policy::Fifo;
        c.priority = 1;
        c.runtime = Nanos::from_ms(950);
        let w = c.warnings(Some((950_000, 1_000_000)));
        assert_eq!(w[0].code, "noise-rt-throttling", "{w:?}");
        assert!(w[0].message.contains("up to 50000 us"), "{w:?}");
        assert!(c.warnings(Some((-1, 1_000_000))).is_empty());
        c.runtime = Nanos::from_ms(900);
        assert!(c.warnings(Some((950_000, 1_000_000))).is_empty());
    }

    type Change = Box<dyn Fn(&mut NoiseConfig)>;

    #[test]
    fn bad_values_are_refused_by_name() {
        let cases: Vec<(Change, &str)> = vec![
            (Box::new(|c| c.threshold = Nanos(10)), "--threshold"),
            (Box::new(|c| c.runtime = Nanos::from_secs(2)), "--runtime"),
            (Box::new(|c| c.period = Nanos::from_secs(3600)), "--period"),
            (Box::new(|c| c.duration = Nanos(0)), "--duration"),
            (Box::new(|c| c.priority = 5), "--priority"),
            (
                Box::new(|c| {
                    c.policy = Policy::Fifo;
                    c.priority = 0
                }),
                "--policy fifo needs -p/--priority",
            ),
            (
                Box::new(|c| {
                    c.policy = Policy::Rr;
                    c.priority = 99
                }),
                "--priority 99 would starve",
            ),
            (Box::new(|c| c.policy = Policy::Deadline), "--policy"),
            (Box::new(|c| c.cpus = CpuSet::default()), "--cpus"),
        ];
        for (change, flag) in cases {
            let mut c = config();
            change(&mut c);
            let e = c.validate().unwrap_err().to_string();
            assert!(e.starts_with(flag), "{e}");
        }
    }

    #[test]
    fn a_realtime_detector_polling_all_the_time_is_warned_about() {
        let mut c = config();
        c.policy = Policy::Fifo;
        c.priority = 10;
        assert_eq!(c.warnings(None)[0].code, "noise-starves");
        c.runtime = Nanos::from_ms(900);
        assert!(c.warnings(None).is_empty());
    }
}
