//! Why a spike happened: the trace a run captured (`measure --trace`) and the explanations
//! built from it, in the measurement document and in `rtlab explain`'s JSON
//! (`rtlab.explain/1`). Pure data; the trace room builds it.
//!
//! An [`Explanation`] follows one late wake-up on one CPU from the deadline (the timer's
//! expiry) to the thread running, and splits the delay into [`Part`]s: the timer interrupt's
//! own delay, interrupt handlers and softirqs, tasks that held the CPU, the scheduler's
//! switch, and what the trace does not cover. Times in a part are offsets from the deadline.

use serde::{Deserialize, Serialize};

/// Schema id of `rtlab explain --format json`.
pub const SCHEMA: &str = "rtlab.explain/1";

/// What `measure --trace` captured, stored with the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceCapture {
    /// The tracefs instance used (removed afterwards).
    pub instance: String,
    /// The trace clock (`mono`: CLOCK_MONOTONIC, the clock rtlab measures with).
    pub clock: String,
    /// Per-CPU ring buffer size, KiB.
    pub buffer_kb: u64,
    /// Events enabled.
    pub events: Vec<String>,
    /// Events the explanation wanted but the kernel does not have, and what that costs.
    pub missing: Vec<String>,
    /// How the capture ended: `break` (frozen at the breach) or `end` (at the run's end).
    pub frozen_by: String,
    /// The trace text kept: the events of the window around each explained spike, as the
    /// kernel printed them.
    pub window: String,
    /// Events the kernel reported lost in the kept window.
    pub lost_events: u64,
    /// The explanations.
    pub explanations: Vec<Explanation>,
    /// What could not be explained, and why.
    pub notes: Vec<String>,
}

/// One spike, explained.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Explanation {
    /// The CPU.
    pub cpu: u32,
    /// The woken thread (the measuring thread for a run).
    pub pid: Option<u32>,
    /// Its name, when the trace names it.
    pub comm: Option<String>,
    /// Its kernel priority (0..=99 real-time, lower is more urgent), when known.
    pub prio: Option<i32>,
    /// How late it ran: deadline to the thread reading its clock (a run) or to its switch-in
    /// (a trace alone).
    pub latency_ns: u64,
    /// The deadline, on the trace clock (ns).
    pub deadline_ns: u64,
    /// The measurement cycle, for a run's spike.
    pub cycle: Option<u64>,
    /// Offsets from the deadline of the milestones the trace shows.
    pub milestones: Milestones,
    /// The delay split into parts, largest first; their durations add up to `latency_ns`.
    pub parts: Vec<Part>,
    /// The largest part's kind, the spike's main cause.
    pub culprit: PartKind,
    /// The explanation as sentences.
    pub story: String,
    /// What limits this explanation (lost events, missing events, coarse timestamps).
    pub caveats: Vec<String>,
}

/// Offsets from the deadline (ns) of what the trace shows; absent when it does not show it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Milestones {
    /// The timer's expiry was handled (`hrtimer_expire_entry` of the thread's timer).
    pub timer_fired_ns: Option<u64>,
    /// The thread was woken (`sched_waking`/`sched_wakeup`).
    pub woken_ns: Option<u64>,
    /// The thread was switched in (`sched_switch` to it).
    pub switched_in_ns: Option<u64>,
}

/// A share of a spike's delay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Part {
    /// What kind of delay.
    pub kind: PartKind,
    /// What it was: `irq 36 virtio1-req.0`, `stress-ng-cpu (pid 812, real-time priority 99)`.
    pub what: String,
    /// How long, ns.
    pub duration_ns: u64,
    /// When it first started, as an offset from the deadline (ns).
    pub start_ns: u64,
    /// How many separate stretches it covers (an IRQ that fired three times: 3).
    pub times: u32,
    /// Its share of the latency, 0..=1.
    pub share: f64,
    /// For an interrupt handler: what the trace shows it doing inside (the hrtimers it
    /// expired, the tasks they woke, the softirqs it raised). Absent for other parts, and for
    /// a handler in whose time the trace shows nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inside: Option<HandlerInside>,
}

/// What an interrupt handler did, as far as the trace shows: the work behind its duration.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandlerInside {
    /// hrtimer expiries handled in it (`hrtimer_expire_entry`), in all.
    pub timer_expiries: u32,
    /// Their callbacks with how many expiries each (`hrtimer_wakeup` 17), most first.
    pub timer_callbacks: Vec<(String, u32)>,
    /// Tasks woken in it (`sched_waking` in the handler), most woken first.
    pub woken: Vec<WokenTask>,
    /// Softirqs it raised (`softirq_raise`): `TIMER`, `SCHED`, `HRTIMER`.
    pub softirqs_raised: Vec<String>,
    /// The pattern this work fits, when one does (see [`HandlerPattern`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<HandlerPattern>,
}

/// A task woken inside an interrupt handler.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WokenTask {
    /// Its name.
    pub comm: String,
    /// Its pid.
    pub pid: u32,
    /// Its kernel priority (below 100: real-time).
    pub prio: i32,
    /// Times it was woken there.
    pub times: u32,
}

/// A known shape of interrupt work that delays real-time threads, with its remedy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HandlerPattern {
    /// Many hrtimers of ordinary (non-real-time) tasks expiring in one timer interrupt: each
    /// expiry runs its callback and wakes its task in hard interrupt context, ahead of the
    /// real-time thread whose own timer is due (a timer storm, many threads sleeping to
    /// nearby times).
    ConcurrentHrtimerExpiries,
}

impl HandlerPattern {
    /// The pattern in words.
    pub fn describe(self) -> &'static str {
        match self {
            HandlerPattern::ConcurrentHrtimerExpiries => {
                "concurrent hrtimer expiries of non-real-time tasks: the timer interrupt runs every due timer's callback and wake-up in hard interrupt context before the real-time thread can run"
            }
        }
    }

    /// What to do about it.
    pub fn fix(self) -> &'static str {
        match self {
            HandlerPattern::ConcurrentHrtimerExpiries => {
                "on a PREEMPT_RT kernel the hrtimers of non-real-time tasks expire in the timer softirq (ktimers thread) instead, off the real-time thread's path; in the application, use fewer and coarser timers for non-real-time work (one periodic timer serving several jobs, timer slack via prctl(PR_SET_TIMERSLACK), periods that do not coincide with the real-time thread's)"
            }
        }
    }
}

/// The kinds of delay an explanation tells apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PartKind {
    /// The timer interrupt came late and nothing in the trace covers the wait: interrupts off
    /// where no tracepoint sees it, an idle exit, or a stalled CPU (SMI, hypervisor, firmware).
    TimerDelay,
    /// A hard interrupt handler ran.
    Irq,
    /// A softirq ran.
    Softirq,
    /// The timer's own handling (expiry to wake-up).
    TimerHandler,
    /// A task of higher priority held the CPU.
    HigherPriorityTask,
    /// A task of the same priority held the CPU (FIFO: it runs until it blocks).
    SamePriorityTask,
    /// A task of lower priority held the CPU: it could not be preempted (preemption or
    /// interrupts off, a non-preemptible section).
    NonPreemptible,
    /// An IRQ thread held the CPU.
    IrqThread,
    /// Switching to the thread: wake-up to switch-in not covered by anything above.
    Scheduler,
    /// From the switch-in to the thread reading its clock.
    Return,
    /// Time the trace does not cover: no events at all while the thread should have run.
    Untraced,
}

impl PartKind {
    /// The kind for a person (`timer interrupt delay`).
    pub fn describe(self) -> &'static str {
        match self {
            PartKind::TimerDelay => "timer interrupt delay",
            PartKind::Irq => "IRQ handler",
            PartKind::Softirq => "softirq",
            PartKind::TimerHandler => "timer handling",
            PartKind::HigherPriorityTask => "higher-priority task",
            PartKind::SamePriorityTask => "same-priority task",
            PartKind::NonPreemptible => "non-preemptible section",
            PartKind::IrqThread => "IRQ thread",
            PartKind::Scheduler => "scheduler",
            PartKind::Return => "return to the thread",
            PartKind::Untraced => "untraced",
        }
    }
}

/// `rtlab explain --format json`: what was explained, from what.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplainDoc {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// What was read: a run id, a result file, a trace file.
    pub source: String,
    /// What the trace held, when a trace was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceSummary>,
    /// The explanations, worst first.
    pub explanations: Vec<Explanation>,
    /// What could not be explained, and why.
    pub notes: Vec<String>,
}

/// What a trace file held.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSummary {
    /// Lines read.
    pub lines: u64,
    /// Events.
    pub events: u64,
    /// Lines that were neither events nor known markers.
    pub malformed: u64,
    /// Events the kernel reported lost.
    pub lost_events: u64,
    /// CPUs with events.
    pub cpus: Vec<u32>,
    /// First to last event, ns.
    pub span_ns: u64,
    /// Timer wake-ups of sleeping tasks found.
    pub wakeups: u64,
    /// Trace clock minus the hrtimer clock, ns.
    pub clock_offset_ns: i64,
}
