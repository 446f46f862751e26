//! Why a spike happened: the trace a run captured (`measure --trace`) and the explanations
//! built from it, in the measurement document and in `rtlab explain`'s JSON
//! (`rtlab.explain/2`); and the whole-trace analyses of `rtlab explain irqs|sched|wakeups`
//! ([`TraceStats`], `rtlab.trace-stats/1`) with what to do about a slow handler
//! ([`HandlerFix`]). Pure data, no words; the trace room builds it, `report::story` tells it.
//!
//! An [`Explanation`] follows one late wake-up on one CPU from the deadline (the timer's
//! expiry) to the thread running, and splits the delay into [`Part`]s: the timer interrupt's
//! own delay, interrupt handlers and softirqs, tasks that held the CPU, the scheduler's
//! switch, and what the trace does not cover. Times in a part are offsets from the deadline.
//! It holds what the trace shows, not sentences: `report::story` tells it in words.

use serde::{Deserialize, Serialize};

use crate::histogram::Histogram;

mod agent;

pub use agent::{Agent, Task};

/// Schema id of `rtlab explain --format json`.
pub const SCHEMA: &str = "rtlab.explain/2";

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
    /// What the CPU did before the timer fired and before the switch-in; absent in documents
    /// written before `rtlab.explain/2`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases: Option<Phases>,
    /// The sentences an rtlab before `rtlab.explain/2` stored: read, so that such a document is
    /// told as it was (it has no [`Phases`] to tell it from), and written back only where it was
    /// read, so a document carried over loses nothing; an explanation made now has none.
    #[serde(default, rename = "story", skip_serializing_if = "Option::is_none")]
    pub old_story: Option<String>,
    /// What limits this explanation (lost events, missing events, switches inferred).
    pub caveats: Vec<Caveat>,
}

impl Explanation {
    /// The part of the delay the trace cannot see into, ns: stretches with no event while a
    /// task ran or the CPU idled before the timer fired (interrupts off without a
    /// tracepoint, an idle exit, a stalled CPU), and time no switch in the trace accounts for.
    /// The rest is what the trace shows.
    pub fn unseen_ns(&self) -> u64 {
        self.parts
            .iter()
            .filter(|p| p.unseen())
            .map(|p| p.duration_ns)
            .sum()
    }
}

impl Part {
    /// Whether the part is time the trace cannot see into: untraced, or the CPU idle or
    /// stalled as far as its events say.
    pub fn unseen(&self) -> bool {
        self.kind == PartKind::Untraced
            || matches!(
                self.what,
                Agent::Untraced { .. } | Agent::Idle | Agent::NoSwitch
            )
    }
}

/// What limits an explanation: what the trace lacks or could not keep, and what the thread
/// did that the explanation does not account for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Caveat {
    /// Switches on the CPU that the trace lacks, inferred from the tasks its events name (some
    /// kernels do not trace switches out of the idle task).
    InferredSwitches {
        /// The CPU.
        cpu: u32,
        /// How many.
        count: u64,
    },
    /// The thread's timer expiry is not in the trace (other expiries are): the timer is taken
    /// to have fired on time.
    NoTimerExpiry,
    /// The trace has no hrtimer events at all: the timer is taken to have fired on time, so a
    /// late timer interrupt shows as scheduler delay.
    NoHrtimerEvents,
    /// The thread's wake-up is not in the trace.
    NoWakeup,
    /// The thread's switch-in is not in the trace.
    NoSwitchIn,
    /// The trace has no preemptirq events (interrupts or preemption off and on) where the
    /// explanation has time it cannot see into or a task that could not be preempted: a
    /// section with interrupts or preemption off shows only as a gap, or as the task it ran in.
    NoSectionEvents,
    /// The kernel reported lost events in the window: parts may be missing.
    LostEvents {
        /// How many lost-events markers.
        times: u64,
    },
    /// The window held more events than are read, and those after them were not read.
    WindowTruncated {
        /// The events read.
        max_events: u64,
    },
    /// The CPU's trace buffer starts inside the window: older events are gone.
    BufferStartedLate,
    /// The thread moved to another CPU around its spike.
    Migrated {
        /// From.
        from: u32,
        /// To.
        to: u32,
        /// When, as an offset from the deadline (negative: before it), ns.
        at_ns: i64,
    },
    /// A caveat in words, as an rtlab before `rtlab.explain/2` stored them.
    #[serde(untagged)]
    Said(String),
}

/// Offsets from the deadline (ns) of what the trace shows; absent when it does not show it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Milestones {
    /// The thread armed its timer past the deadline (`hrtimer_start` of the thread's timer
    /// after its expiry): it had not gone back to sleep since its previous wake-up (it was
    /// preempted, or its own work overran). Absent when the timer was armed in time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer_armed_ns: Option<u64>,
    /// The timer's expiry was handled (`hrtimer_expire_entry` of the thread's timer).
    pub timer_fired_ns: Option<u64>,
    /// The thread was woken (`sched_waking`/`sched_wakeup`).
    pub woken_ns: Option<u64>,
    /// The thread was switched in (`sched_switch` to it); its wake-up's time when it was
    /// woken while it still ran ([`Milestones::woken_running`]).
    pub switched_in_ns: Option<u64>,
    /// The thread was woken in its own context: its timer fired before it went to sleep, so it
    /// never left the CPU and nothing after its wake-up delayed it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub woken_running: bool,
}

/// What the CPU did in the two stretches of a spike an explanation tells of, each summed by
/// kind and what, largest first (equal ones in the order the trace shows them first).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Phases {
    /// From the deadline to the thread arming its timer, when it armed it past the deadline
    /// ([`Milestones::timer_armed_ns`]): what held the CPU while the thread, not yet back
    /// asleep, waited to run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unarmed: Vec<Cause>,
    /// From the deadline (or the arming, when later) to the thread's timer firing: what the
    /// CPU did while the timer interrupt did not come.
    pub before_fire: Vec<Cause>,
    /// From the wake-up (the deadline when the trace shows none) to the switch-in: what held
    /// the CPU while the thread waited to run.
    pub waiting: Vec<Cause>,
}

/// One kind of delay in a phase of a spike, summed over its stretches in that phase.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cause {
    /// What kind of delay.
    pub kind: PartKind,
    /// What it was, as in [`Part::what`].
    pub what: Agent,
    /// How long in this phase, ns.
    pub duration_ns: u64,
}

/// A share of a spike's delay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Part {
    /// What kind of delay.
    pub kind: PartKind,
    /// What it was: a handler (`irq 36 virtio1-req.0`), a task (`stress-ng-cpu`, pid 812,
    /// priority 0), the CPU idle; words only in documents written before `rtlab.explain/2`.
    pub what: Agent,
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
    /// The kernel functions the function tracers (`function`, `function_graph`) recorded in
    /// its time: what the CPU was executing. Absent when the trace holds none there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub functions: Option<FunctionsTraced>,
}

/// The kernel functions traced in a part's time.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FunctionsTraced {
    /// Calls traced in all.
    pub calls: u64,
    /// The functions called, the longest-running first (function_graph's durations), then
    /// the most called; at most [`FunctionsTraced::MAX`].
    pub top: Vec<FunctionTraced>,
}

impl FunctionsTraced {
    /// Functions kept at most.
    pub const MAX: usize = 8;
}

/// One function traced in a part's time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FunctionTraced {
    /// Its symbol (`hrtimer_interrupt`), or its address where the recording names none.
    pub name: String,
    /// Calls that started in the part's time.
    pub calls: u64,
    /// Their time from call to return, ns (function_graph), where the trace gives it; calls
    /// nested in others count in both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_ns: Option<u64>,
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

/// The share of a spike's delay an interrupt handler's part must have for the pattern its work
/// fits to be set: a pattern is a cause only where its handler took a real part of the delay
/// (issue #44: a priority-99 task's 99 % came with a timer-storm pattern and its fix).
pub const PATTERN_SHARE: f64 = 0.1;

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
    /// RT throttling: the kernel gave the CPU to an ordinary task (or left it idle) while
    /// real-time tasks were runnable, as it does once they have used `sched_rt_runtime_us` of
    /// a period (the fair server's time on kernels since 6.12). The evidence: a real-time task
    /// switched out runnable for an ordinary one on the thread's CPU.
    RtThrottling,
    /// An IRQ thread held the CPU.
    IrqThread,
    /// Switching to the thread: wake-up to switch-in not covered by anything above.
    Scheduler,
    /// From the switch-in to the thread reading its clock.
    Return,
    /// Time the trace does not cover: no events at all while the thread should have run.
    Untraced,
    /// The thread itself slept on something other than its timer (state `D`: I/O, a page
    /// fault, a lock; `S`: a wait) before it armed its timer, past its deadline: no other
    /// task's doing.
    Blocked,
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
    /// For a run of the timerlat tracer: the auto-analysis of its worst activations (the
    /// stop's first), worst first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timerlat: Vec<crate::timerlat::Analysis>,
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

/// Schema id of `rtlab explain irqs|sched|wakeups --format json`.
pub const STATS_SCHEMA: &str = "rtlab.trace-stats/1";

/// `rtlab explain irqs|sched|wakeups --format json`: one whole-trace analysis.
///
/// Not `deny_unknown_fields`: serde cannot refuse unknown fields beside a flattened enum.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceStats {
    /// Always [`STATS_SCHEMA`].
    pub schema: String,
    /// The trace file read.
    pub source: String,
    /// What the trace held.
    pub trace: TraceSummary,
    /// Rows whose maximum is above this are marked (`--threshold`), ns.
    pub threshold_ns: u64,
    /// The analysis (`analysis`: `irqs`, `sched` or `wakeups`) and its rows (`rows`), at most
    /// `--top` of them, worst first (`wakeups`: every CPU, ascending).
    #[serde(flatten)]
    pub rows: StatsRows,
}

/// An analysis's rows, tagged with its name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "analysis", content = "rows", rename_all = "lowercase")]
pub enum StatsRows {
    /// Interrupt handler and softirq durations.
    Irqs(Vec<HandlerRow>),
    /// Each task's wake-up-to-run delay and migrations.
    Sched(Vec<TaskRow>),
    /// Each CPU's timer wake-up latency of real-time tasks.
    Wakeups(Vec<CpuRow>),
}

/// One interrupt handler or softirq: how long it ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandlerRow {
    /// `irq 36 virtio1-req.0`, `softirq TIMER`, `local_timer interrupt`.
    pub handler: String,
    /// Times it ran.
    pub runs: u64,
    /// Time it ran in all, ns.
    pub total_ns: u64,
    /// Its 99th percentile, the lower edge of the histogram bucket holding it, ns.
    pub p99_ns: u64,
    /// Its longest run, ns.
    pub max_ns: u64,
    /// When the longest run started (trace clock), ns.
    pub max_at_ns: u64,
    /// The CPU of the longest run.
    pub max_cpu: u32,
    /// Runs longer than the threshold.
    pub over_threshold: u64,
}

/// One task: its delays from wake-up to running, and its migrations.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskRow {
    /// Its name (the last seen).
    pub comm: String,
    /// Its pid.
    pub pid: u32,
    /// Its kernel priority (the last seen): below 0 deadline, 0..=99 real-time (lower is
    /// more urgent), 100..=139 normal.
    pub prio: i32,
    /// Wake-ups followed by a switch-in.
    pub wakeups: u64,
    /// The 99th percentile delay (bucket lower edge), ns.
    pub p99_ns: u64,
    /// The longest delay, ns.
    pub max_ns: u64,
    /// When that switch-in was (trace clock), ns.
    pub max_at_ns: u64,
    /// Its CPU.
    pub max_cpu: u32,
    /// Times it moved to another CPU.
    pub migrations: u64,
}

/// One CPU: real-time tasks' timer wake-up latencies, deadline to switch-in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuRow {
    /// The CPU.
    pub cpu: u32,
    /// Wake-ups.
    pub wakeups: u64,
    /// The smallest (lower edge of the lowest bucket), ns.
    pub min_ns: u64,
    /// Percentiles (bucket lower edges), ns.
    pub p50_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// 99.9th percentile, ns.
    pub p99_9_ns: u64,
    /// The largest, exact, ns.
    pub max_ns: u64,
    /// All of them, in the measure document's histogram scheme.
    pub histogram: Histogram,
}

/// What the text of an analysis says of all its rows, including those past `--top`; not in
/// the JSON.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatsTally {
    /// Rows the analysis found (handlers, tasks, CPUs) before `--top`.
    pub rows: usize,
    /// The handlers whose maximum is above the threshold, worst first.
    pub over_threshold: Vec<String>,
    /// Real-time tasks that migrated between CPUs.
    pub rt_migrating: usize,
}

/// What to do about an interrupt handler or softirq that runs long, by what it is: the kind
/// of advice under `rtlab explain irqs` (`report::story::fix` words it). A softirq's fix is
/// where its work comes from, not the IRQ affinity of a hard interrupt.
///
/// Kernel facts behind the kinds: on PREEMPT_RT every IRQ not marked `IRQF_NO_THREAD` runs
/// in a thread (`force_irqthreads`, kernel/irq/manage.c), and a softirq runs in the thread
/// that raised it or in `ksoftirqd/N`, the timer softirqs in `ktimers/N` (kernel/softirq.c),
/// at those threads' priorities; elsewhere softirqs run on interrupt exit with preemption
/// off. Network receive runs on the CPU whose NIC queue interrupted, and RPS/XPS steer
/// protocol work and transmit queues (Documentation/networking/scaling.rst). Timers expire on
/// the CPU that armed them; `nohz_full=` CPUs leave unpinned timers to housekeeping CPUs
/// (Documentation/timers/no_hz.rst) and `kernel.timer_migration` lets idle CPUs' timers move
/// (Documentation/admin-guide/sysctl/kernel.rst). RCU callbacks run in the RCU softirq unless
/// `rcu_nocbs=` offloads them to `rcuo` threads, which `nohz_full=` implies on kernels with
/// CONFIG_RCU_NOCB_CPU (Documentation/admin-guide/kernel-per-CPU-kthreads.rst). The SCHED
/// softirq is load balancing, absent from CPUs outside scheduler domains (`isolcpus=domain`,
/// an isolated cpuset partition: Documentation/admin-guide/cgroup-v2.rst). Block completions
/// run where the device interrupted or go back to the submitting CPU (`rq_affinity`,
/// Documentation/ABI/stable/sysfs-block). Tasklets run on the CPU that scheduled them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HandlerFix {
    /// A device's hard interrupt handler (`irq 41 eth0`).
    HardIrq,
    /// A CPU-local interrupt vector (`local_timer interrupt`, `reschedule interrupt`).
    Vector,
    /// `NET_RX`, `NET_TX`.
    Network,
    /// `TIMER`, `HRTIMER`.
    Timers,
    /// `RCU`.
    Rcu,
    /// `SCHED`.
    Sched,
    /// `BLOCK`, `IRQ_POLL`.
    Block,
    /// `HI`, `TASKLET`.
    Tasklet,
    /// A softirq without a known name.
    OtherSoftirq,
}

impl HandlerFix {
    /// The fix for the handler named as the scan names them (`irq 41 eth0`, `softirq
    /// NET_RX`, `softirq 3`, `local_timer interrupt`).
    pub fn of(handler: &str) -> HandlerFix {
        if let Some(softirq) = handler.strip_prefix("softirq ") {
            return HandlerFix::of_softirq(softirq.trim());
        }
        if handler.ends_with(" interrupt") {
            return HandlerFix::Vector;
        }
        HandlerFix::HardIrq
    }

    /// The fix for softirq `name` (`NET_RX`), or its vector number (`3`) in the kernel's
    /// order (`softirq_to_name`, kernel/softirq.c).
    fn of_softirq(name: &str) -> HandlerFix {
        const BY_NUMBER: [&str; 10] = [
            "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER",
            "RCU",
        ];
        let name = name
            .parse::<usize>()
            .ok()
            .and_then(|n| BY_NUMBER.get(n).copied())
            .unwrap_or(name);
        match name {
            "NET_RX" | "NET_TX" => HandlerFix::Network,
            "TIMER" | "HRTIMER" => HandlerFix::Timers,
            "RCU" => HandlerFix::Rcu,
            "SCHED" => HandlerFix::Sched,
            "BLOCK" | "IRQ_POLL" => HandlerFix::Block,
            "HI" | "TASKLET" => HandlerFix::Tasklet,
            _ => HandlerFix::OtherSoftirq,
        }
    }

    /// Whether the handler is a softirq (then where softirqs run matters too).
    pub fn is_softirq(self) -> bool {
        !matches!(self, HandlerFix::HardIrq | HandlerFix::Vector)
    }
}

#[cfg(test)]
mod tests;
