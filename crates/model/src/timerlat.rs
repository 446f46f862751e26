//! Latency seen from inside the kernel: the `timerlat` section of a run measured by the
//! kernel's timerlat tracer (`rtlab measure --engine timerlat`) or read from its output.
//!
//! The tracer arms a timer per CPU every period and records two latencies per activation: how
//! late the timer's IRQ handler ran (hardware, IRQs-off sections, exit from idle) and how late
//! the tracer's thread ran after it (scheduling, a blocking thread, softirqs); with user-space
//! threads (`timerlat_fd`) a third, the return to user space. The run's per-CPU distributions
//! ([`crate::measure::MeasureRun::cpus`]) hold the thread latency — what a task woken by a
//! timer sees, the figure cyclictest measures — and this section the IRQ (and user) figures
//! beside them, with the same statistics, histograms, spikes and per-second maxima.
//!
//! It also holds what the tracer's noise events say about the worst activations
//! ([`Analysis`]: the auto-analysis `rtla timerlat -a` prints — IRQ handler delay and exit
//! from idle, the timerlat IRQ's duration, the blocking thread with its stack, IRQ, softirq,
//! NMI and thread interference with their share of the latency) and, when the tracer stopped
//! itself at the `--break` threshold, where and with which stack ([`TimerlatStop`]). Pure
//! data.

use serde::{Deserialize, Serialize};

use crate::nanos::Nanos;
use crate::per_cpu::CpuResult;

/// Most frames kept of one stack.
pub const MAX_STACK_FRAMES: usize = 64;
/// Most interferences of one kind listed in one analysis (the rest are summed).
pub const MAX_INTERFERENCES: usize = 32;
/// Most analyses a run keeps (one per CPU's worst activation, and the stop's).
pub const MAX_ANALYSES: usize = 1024;

/// Which of the tracer's latencies a figure is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Context {
    /// Timer expiry to the timerlat IRQ handler.
    Irq,
    /// Timer expiry to the timerlat thread running.
    Thread,
    /// Timer expiry to the user-space thread's return to user space (`timerlat_fd`).
    User,
}

impl Context {
    /// The context as written (`irq`, `thread`, `user`).
    pub fn as_str(self) -> &'static str {
        match self {
            Context::Irq => "irq",
            Context::Thread => "thread",
            Context::User => "user",
        }
    }

    /// The latency for a person (`IRQ latency`).
    pub fn describe(self) -> &'static str {
        match self {
            Context::Irq => "IRQ latency",
            Context::Thread => "thread latency",
            Context::User => "return-to-user latency",
        }
    }
}

/// The timerlat section of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimerlatInfo {
    /// The tracer's period (`osnoise/timerlat_period_us`).
    pub period_ns: Nanos,
    /// Whether the tracer ran in rtlab's own trace instance (else in the top-level buffer).
    pub in_instance: bool,
    /// Whether the measuring threads were user-space threads reading `timerlat_fd` (then
    /// `user` holds their return to user space); else the tracer's kernel threads.
    pub user_threads: bool,
    /// The thread latency at which the tracer stops itself (`osnoise/stop_tracing_total_us`,
    /// and `stop_tracing_us` for the IRQ): `--break`.
    pub stop_ns: Option<Nanos>,
    /// The thread latency above which the tracer records the IRQ's stack
    /// (`osnoise/print_stack`).
    pub stack_ns: Option<Nanos>,
    /// The clock of the tracer's timestamps (`local` unless set otherwise): the spikes'
    /// `monotonic_ns` of a timerlat run are on it, as are the analyses' `at_ns`.
    pub trace_clock: String,
    /// Per CPU, the IRQ latency, ascending by CPU.
    pub irq: Vec<CpuResult>,
    /// Per CPU, the return to user space; empty without user-space threads.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user: Vec<CpuResult>,
    /// Events the ring buffer lost before rtlab read them: activations missing from the
    /// distributions (0 when none was lost).
    pub lost_events: u64,
    /// Where the tracer stopped itself, when `--break` fired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<TimerlatStop>,
    /// The auto-analysis of each CPU's worst activation (and of the stop), worst first.
    #[serde(default)]
    pub analyses: Vec<Analysis>,
}

/// The tracer stopped itself at the threshold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimerlatStop {
    /// The CPU whose activation crossed it.
    pub cpu: u32,
    /// Which latency crossed it.
    pub context: Context,
    /// The activation (the tracer's per-CPU sequence number).
    pub activation: u64,
    /// Its latency.
    pub latency_ns: u64,
    /// The stack the tracer recorded in the timer's IRQ (innermost first); empty when the
    /// kernel recorded none.
    pub stack: Vec<String>,
    /// The trace of that moment: the CPU's last entries before the stop, as the kernel
    /// printed them.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub window: String,
}

/// One interference of an analysed activation: an IRQ, a softirq or a thread that ran on the
/// CPU between the timer's expiry and the timerlat thread.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interference {
    /// The IRQ's description, the softirq's name or the thread's command.
    pub name: String,
    /// The IRQ vector, softirq number or thread id.
    pub id: u64,
    /// Its net duration (the tracer subtracts what interrupted it), all occurrences
    /// together.
    pub duration_ns: u64,
    /// How many times it ran in the window (the same IRQ, softirq or thread again).
    #[serde(default = "one")]
    pub count: u64,
}

fn one() -> u64 {
    1
}

/// The thread that was running when the timer fired, and kept the timerlat thread waiting.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Blocking {
    /// Its command.
    pub comm: String,
    /// Its thread id (0: the CPU was idle).
    pub pid: u32,
    /// How long it ran on after the IRQ, net of interference; `None` when the trace ended
    /// (IRQ latency, or a stop) before it said.
    pub duration_ns: Option<u64>,
}

/// What the tracer's events say about one activation, rtla's auto-analysis: the parts of its
/// latency and the culprits. Every `_ns` figure is net; `share` is of `total_ns`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Analysis {
    /// The CPU.
    pub cpu: u32,
    /// The activation.
    pub activation: u64,
    /// Which latency is analysed: the IRQ's when the IRQ came late and no thread latency
    /// followed (a stop at the IRQ), else the thread's.
    pub context: Context,
    /// The latency analysed (100 %).
    pub total_ns: u64,
    /// When the timer IRQ ran, on the trace clock, ns.
    pub at_ns: u64,
    /// The activation's IRQ latency.
    pub irq_latency_ns: u64,
    /// Timer expiry to the start of the IRQ handler: the hardware, an IRQs-off section, the
    /// way out of an idle state.
    pub irq_handler_delay_ns: u64,
    /// Whether the delay was the CPU leaving an idle state (the timer fired while idle,
    /// nothing else ran before it).
    pub exit_from_idle: bool,
    /// An IRQ that ran just before the timer's and may have delayed it (up to its duration).
    pub previous_irq: Option<Interference>,
    /// How long the timerlat IRQ handler ran.
    pub timerlat_irq_ns: u64,
    /// The thread that was running when the timer fired.
    pub blocking: Option<Blocking>,
    /// The stack the tracer recorded in the timer's IRQ, innermost first (with
    /// `osnoise/print_stack`): where the blocking thread was.
    pub stack: Vec<String>,
    /// NMIs between the expiry and the timerlat thread, in total.
    pub nmi_ns: u64,
    /// IRQs after the timerlat IRQ and before its thread, each.
    pub irqs: Vec<Interference>,
    /// Softirqs after the timerlat IRQ and before its thread, each.
    pub softirqs: Vec<Interference>,
    /// Other threads that ran before the timerlat thread, each.
    pub threads: Vec<Interference>,
}

impl Analysis {
    /// `part` as a share of the total, in percent (0 for an empty total).
    pub fn share(&self, part_ns: u64) -> f64 {
        if self.total_ns == 0 {
            0.0
        } else {
            part_ns as f64 * 100.0 / self.total_ns as f64
        }
    }

    /// The sum of a list of interferences.
    pub fn sum(list: &[Interference]) -> u64 {
        list.iter()
            .fold(0u64, |s, i| s.saturating_add(i.duration_ns))
    }

    /// The largest part of the latency, for a one-line verdict: what to look at first.
    pub fn dominant(&self) -> (&'static str, u64) {
        let blocking = self
            .blocking
            .as_ref()
            .and_then(|b| b.duration_ns)
            .unwrap_or(0);
        let parts = [
            ("IRQ handler delay", self.irq_handler_delay_ns),
            ("timerlat IRQ duration", self.timerlat_irq_ns),
            ("blocking thread", blocking),
            ("NMI interference", self.nmi_ns),
            ("IRQ interference", Self::sum(&self.irqs)),
            ("softirq interference", Self::sum(&self.softirqs)),
            ("thread interference", Self::sum(&self.threads)),
        ];
        parts
            .into_iter()
            .max_by_key(|(_, ns)| *ns)
            .unwrap_or(("IRQ handler delay", 0))
    }
}

impl TimerlatInfo {
    /// Bounds a document from outside must satisfy: each CPU once and within
    /// [`crate::limits::MAX_CPU`], lists within their limits.
    pub fn check_bounds(&self) -> Result<(), String> {
        for (what, list) in [("irq", &self.irq), ("user", &self.user)] {
            let mut seen = std::collections::BTreeSet::new();
            for c in list {
                if c.cpu > crate::limits::MAX_CPU || !seen.insert(c.cpu) {
                    return Err(format!(
                        "timerlat.{what}: CPU {} is out of range or appears twice",
                        c.cpu
                    ));
                }
                if c.histogram.checked_count().is_none() {
                    return Err(format!(
                        "timerlat.{what}: CPU {}'s histogram holds more than 2^64 samples",
                        c.cpu
                    ));
                }
            }
        }
        if self.analyses.len() > MAX_ANALYSES {
            return Err(format!(
                "timerlat.analyses: {} analyses, at most {MAX_ANALYSES}",
                self.analyses.len()
            ));
        }
        let stacks = self
            .analyses
            .iter()
            .map(|a| a.stack.len())
            .chain(self.stop.iter().map(|s| s.stack.len()));
        if stacks.into_iter().any(|n| n > MAX_STACK_FRAMES) {
            return Err(format!(
                "timerlat: a stack of more than {MAX_STACK_FRAMES} frames"
            ));
        }
        Ok(())
    }

    /// Recomputes each distribution's derived statistics from its raw data.
    pub fn rederive(&mut self) {
        for c in self.irq.iter_mut().chain(self.user.iter_mut()) {
            c.stats = crate::stats::LatencyStats::derive(&c.raw, &c.histogram);
            c.regions = c.histogram.regions();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn analysis() -> Analysis {
        Analysis {
            cpu: 1,
            activation: 7,
            context: Context::Thread,
            total_ns: 100_000,
            at_ns: 0,
            irq_latency_ns: 3_000,
            irq_handler_delay_ns: 1_000,
            exit_from_idle: false,
            previous_irq: None,
            timerlat_irq_ns: 2_000,
            blocking: Some(Blocking {
                comm: "hog".into(),
                pid: 42,
                duration_ns: Some(90_000),
            }),
            stack: vec![],
            nmi_ns: 0,
            irqs: vec![Interference {
                name: "eth0".into(),
                id: 33,
                duration_ns: 5_000,
                count: 1,
            }],
            softirqs: vec![],
            threads: vec![],
        }
    }

    #[test]
    fn the_blocking_thread_dominates_and_shares_are_of_the_total() {
        let a = analysis();
        assert_eq!(a.dominant(), ("blocking thread", 90_000));
        assert!((a.share(5_000) - 5.0).abs() < 1e-9);
    }

    #[test]
    fn analyses_round_trip_as_json() {
        let a = analysis();
        let text = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<Analysis>(&text).unwrap(), a);
        assert!(text.contains("\"context\":\"thread\""));
    }
}
