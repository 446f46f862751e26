//! Operating-system noise: the `noise` section of a noise run (`rtlab noise`, imported
//! `rtla osnoise` output, the osnoise tracer's trace), written as the schema `rtlab.noise/1`.
//!
//! A noise run is a [`crate::measure::MeasureRun`] whose samples are the gaps between two
//! reads of the clock in a busy loop (oslat's quantity): every gap is in the per-CPU
//! histogram, so `runs`, `show`, `compare` (noise against noise only), `report` and `export`
//! work on it as on any run. This section adds what only noise has: the engine and counter
//! that produced the figures, the threshold above which a gap is an interruption, and per CPU
//! the rtla osnoise columns (runtime, noise, % CPU available, max noise per period, max single,
//! HW/NMI/IRQ/softirq/thread counts), the time taken by each class, the named culprits and the
//! steal time a hypervisor reported. Pure data.

use serde::{Deserialize, Serialize};

use crate::nanos::Nanos;

/// The schema id of a noise run document.
pub const NOISE_SCHEMA: &str = "rtlab.noise/1";

/// Most culprits kept per CPU (the longest in total first); the rest are summed in `other`.
pub const MAX_CULPRITS: usize = 32;

/// What produced a noise run's figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Engine {
    /// rtlab's own detector: a thread per CPU polling the CPU's counter in user space.
    #[default]
    User,
    /// The kernel's osnoise tracer (its per-CPU counters and noise events).
    Kernel,
    /// Another tool's output read by `rtlab import` (see the run's `import`).
    Imported,
}

impl Engine {
    /// The engine's name as written (`user`, `kernel`, `imported`).
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::User => "user",
            Engine::Kernel => "kernel",
            Engine::Imported => "imported",
        }
    }

    /// The engine for a person.
    pub fn describe(self) -> &'static str {
        match self {
            Engine::User => "rtlab's user-space detector",
            Engine::Kernel => "the kernel's osnoise tracer",
            Engine::Imported => "another tool's output",
        }
    }
}

/// Where an interruption's time went, as rtla osnoise splits it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// Nothing the kernel recorded: hardware, firmware (SMI) or the hypervisor.
    Hw,
    /// A non-maskable interrupt.
    Nmi,
    /// A hard interrupt handler (including the local timer and IPIs).
    Irq,
    /// A softirq.
    Softirq,
    /// Another thread ran on the CPU.
    Thread,
}

impl Source {
    /// All classes, in rtla osnoise's column order.
    pub const ALL: [Source; 5] = [
        Source::Hw,
        Source::Nmi,
        Source::Irq,
        Source::Softirq,
        Source::Thread,
    ];

    /// The column name (`HW`, `NMI`, `IRQ`, `Softirq`, `Thread`).
    pub fn column(self) -> &'static str {
        match self {
            Source::Hw => "HW",
            Source::Nmi => "NMI",
            Source::Irq => "IRQ",
            Source::Softirq => "Softirq",
            Source::Thread => "Thread",
        }
    }
}

/// A figure per class of noise.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerSource {
    /// Hardware, firmware or hypervisor (nothing the kernel saw).
    pub hw: u64,
    /// NMIs.
    pub nmi: u64,
    /// Hard IRQs.
    pub irq: u64,
    /// Softirqs.
    pub softirq: u64,
    /// Threads.
    pub thread: u64,
}

impl PerSource {
    /// The figure of `source`.
    pub fn get(&self, source: Source) -> u64 {
        match source {
            Source::Hw => self.hw,
            Source::Nmi => self.nmi,
            Source::Irq => self.irq,
            Source::Softirq => self.softirq,
            Source::Thread => self.thread,
        }
    }

    /// Adds `n` to `source`'s figure (saturating: counts from outside are bounded by their
    /// reader, and a sum past 2^64 ns is 584 years).
    pub fn add(&mut self, source: Source, n: u64) {
        let slot = match source {
            Source::Hw => &mut self.hw,
            Source::Nmi => &mut self.nmi,
            Source::Irq => &mut self.irq,
            Source::Softirq => &mut self.softirq,
            Source::Thread => &mut self.thread,
        };
        *slot = slot.saturating_add(n);
    }

    /// The sum over every class.
    pub fn total(&self) -> u64 {
        Source::ALL
            .iter()
            .fold(0u64, |acc, s| acc.saturating_add(self.get(*s)))
    }
}

/// One named cause of noise on a CPU: an IRQ handler, a softirq, an NMI handler, a thread.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Culprit {
    /// Its class.
    pub source: Source,
    /// Its name: `irq 24 virtio0-input.0`, `local_timer`, `softirq TIMER`,
    /// `nmi perf_event_nmi_handler`, `ksoftirqd/1 (pid 18, SCHED_OTHER)`, `unattributed`.
    pub name: String,
    /// Interruptions it was the main cause of.
    pub count: u64,
    /// Its time within interruptions, ns.
    pub total_ns: u64,
    /// Its longest time within one interruption, ns.
    pub max_ns: u64,
}

/// One CPU's noise figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoiseCpu {
    /// The CPU.
    pub cpu: u32,
    /// Time the detector was meant to have the CPU (the osnoise `Runtime` column), ns.
    pub runtime_ns: u64,
    /// Time taken from it by interruptions at or above the threshold, ns.
    pub noise_ns: u64,
    /// Interruptions at or above the threshold.
    pub interruptions: u64,
    /// The longest single interruption, ns.
    pub max_single_ns: u64,
    /// The most noise in any one period (the osnoise `Max Noise` column), ns.
    pub max_period_noise_ns: u64,
    /// Loop iterations (clock reads) of the user detector; absent for the kernel tracer and
    /// imports that do not give it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u64>,
    /// Interruptions whose main cause was each class (the osnoise HW/NMI/IRQ/Softirq/Thread
    /// columns); absent when nothing attributed them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<PerSource>,
    /// Time within interruptions taken by each class, ns; absent when not attributed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_ns: Option<PerSource>,
    /// Named causes, the longest in total first (at most [`MAX_CULPRITS`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub culprits: Vec<Culprit>,
    /// Interruptions that happened when no trace covered them (buffer overrun, event log
    /// full): counted here, never silently given a cause.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unexplained: u64,
    /// Time the hypervisor reported as stolen from this CPU during the run (`/proc/stat`),
    /// ns; absent outside a virtual machine or when not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_ns: Option<u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl NoiseCpu {
    /// The share of runtime left to the detector, in percent (the osnoise `% CPU Aval`
    /// column); `None` without runtime.
    pub fn available_pct(&self) -> Option<f64> {
        (self.runtime_ns > 0).then(|| {
            let left = self.runtime_ns.saturating_sub(self.noise_ns) as f64;
            100.0 * left / self.runtime_ns as f64
        })
    }

    /// The mean time of one loop iteration (the detector's resolution), ns.
    pub fn loop_ns(&self) -> Option<f64> {
        let n = self.iterations.filter(|n| *n > 0)?;
        let busy = self.runtime_ns.saturating_sub(self.noise_ns);
        Some(busy as f64 / n as f64)
    }
}

/// What the noise section of a run says besides per-CPU figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoiseInfo {
    /// Which engine produced the figures.
    pub engine: Engine,
    /// The counter the detector read: `tsc` (an invariant TSC), `cntvct` (the arm64 virtual
    /// counter), `clock-monotonic-raw` (the vDSO clock), `osnoise-tracer`, or the imported
    /// tool's name.
    pub counter: String,
    /// The counter's frequency in Hz, when it is a raw counter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counter_hz: Option<u64>,
    /// Gaps at or above this are interruptions, ns.
    pub threshold_ns: Nanos,
    /// Within each period the detector runs for this long (the duty cycle), ns.
    pub runtime_ns: Nanos,
    /// The period of the duty cycle, and of the `Max Noise` column, ns.
    pub period_ns: Nanos,
    /// How interruptions were attributed: `trace` (a private tracefs instance), `tracer` (the
    /// osnoise tracer's own counts), or `none`, with the reason in `attribution_note`.
    pub attribution: String,
    /// Why attribution is missing or partial (no tracefs, events missing, buffer overrun).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution_note: Option<String>,
    /// The hypervisor the host runs under (`KVM`, `VMware`, ...) when the CPU says so: then
    /// unattributed noise may be the hypervisor's, and steal time is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hypervisor: Option<String>,
    /// Per-CPU figures, ascending by CPU (the same CPUs as the run's `cpus`).
    pub cpus: Vec<NoiseCpu>,
}

impl NoiseInfo {
    /// All CPUs' figures summed (max fields: the maximum).
    pub fn total(&self) -> NoiseCpu {
        let mut all = NoiseCpu::default();
        let mut counts: Option<PerSource> = None;
        let mut times: Option<PerSource> = None;
        for c in &self.cpus {
            all.runtime_ns = all.runtime_ns.saturating_add(c.runtime_ns);
            all.noise_ns = all.noise_ns.saturating_add(c.noise_ns);
            all.interruptions = all.interruptions.saturating_add(c.interruptions);
            all.max_single_ns = all.max_single_ns.max(c.max_single_ns);
            all.max_period_noise_ns = all.max_period_noise_ns.max(c.max_period_noise_ns);
            all.unexplained = all.unexplained.saturating_add(c.unexplained);
            if let Some(n) = c.iterations {
                all.iterations = Some(all.iterations.unwrap_or(0).saturating_add(n));
            }
            if let Some(s) = c.steal_ns {
                all.steal_ns = Some(all.steal_ns.unwrap_or(0).saturating_add(s));
            }
            for (mine, theirs) in [(&mut counts, c.counts), (&mut times, c.time_ns)] {
                if let Some(t) = theirs {
                    let m = mine.get_or_insert_with(PerSource::default);
                    for s in Source::ALL {
                        m.add(s, t.get(s));
                    }
                }
            }
        }
        all.counts = counts;
        all.time_ns = times;
        all
    }

    /// What a document from outside must satisfy: CPUs ascending, each once, within
    /// [`crate::limits::MAX_CPU`], noise within runtime, culprits bounded.
    pub fn check_bounds(&self) -> Result<(), String> {
        let mut last: Option<u32> = None;
        for c in &self.cpus {
            if c.cpu > crate::limits::MAX_CPU {
                return Err(format!(
                    "noise: CPU {} is past the largest CPU number rtlab reads ({})",
                    c.cpu,
                    crate::limits::MAX_CPU
                ));
            }
            if last.is_some_and(|l| l >= c.cpu) {
                return Err(format!(
                    "noise: CPU {} is listed out of order or twice",
                    c.cpu
                ));
            }
            last = Some(c.cpu);
            if c.culprits.len() > MAX_CULPRITS {
                return Err(format!(
                    "noise: CPU {} lists {} culprits, more than the {MAX_CULPRITS} rtlab keeps",
                    c.cpu,
                    c.culprits.len()
                ));
            }
        }
        if self.runtime_ns > self.period_ns {
            return Err(format!(
                "noise: runtime {} is longer than its period {}",
                self.runtime_ns, self.period_ns
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(cpu: u32, runtime: u64, noise: u64) -> NoiseCpu {
        NoiseCpu {
            cpu,
            runtime_ns: runtime,
            noise_ns: noise,
            ..NoiseCpu::default()
        }
    }

    #[test]
    fn available_is_the_share_of_runtime_left() {
        let c = cpu(0, 53_100_000_000, 304_896_000);
        let pct = c.available_pct().unwrap();
        // rtla osnoise top printed 99.42580 for this CPU.
        assert!((pct - 99.425_80).abs() < 0.000_01, "{pct}");
        assert_eq!(cpu(0, 0, 0).available_pct(), None);
    }

    #[test]
    fn totals_add_counts_only_where_attributed() {
        let mut a = cpu(0, 100, 10);
        a.counts = Some(PerSource {
            irq: 3,
            ..PerSource::default()
        });
        let b = cpu(1, 100, 30);
        let info = NoiseInfo {
            cpus: vec![a, b],
            period_ns: Nanos(1),
            runtime_ns: Nanos(1),
            ..NoiseInfo::default()
        };
        let all = info.total();
        assert_eq!((all.runtime_ns, all.noise_ns), (200, 40));
        assert_eq!(all.counts.unwrap().irq, 3);
        assert_eq!(all.time_ns, None);
        assert!(info.check_bounds().is_ok());
    }

    #[test]
    fn bounds_refuse_disorder_and_a_runtime_past_its_period() {
        let mut info = NoiseInfo {
            cpus: vec![cpu(1, 0, 0), cpu(1, 0, 0)],
            ..NoiseInfo::default()
        };
        assert!(info.check_bounds().unwrap_err().contains("twice"));
        info.cpus.pop();
        info.runtime_ns = Nanos(2);
        info.period_ns = Nanos(1);
        assert!(info.check_bounds().unwrap_err().contains("longer than"));
    }
}
