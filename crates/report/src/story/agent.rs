//! What a part of a spike's delay was, in words: its kind (`model::explain::PartKind`), and
//! the handler, the task with its priority, or what the CPU was doing
//! (`model::explain::Agent`), as the story, the parts table and the report name them.

use model::explain::{Agent, Explanation, PartKind, Task};

/// The kind of a part for a person: `timer interrupt delay`, `higher-priority task`.
pub fn kind(k: PartKind) -> &'static str {
    match k {
        PartKind::TimerDelay => "timer interrupt delay",
        PartKind::Irq => "IRQ handler",
        PartKind::Softirq => "softirq",
        PartKind::TimerHandler => "timer handling",
        PartKind::HigherPriorityTask => "higher-priority task",
        PartKind::SamePriorityTask => "same-priority task",
        PartKind::NonPreemptible => "non-preemptible section",
        PartKind::RtThrottling => "RT throttling",
        PartKind::IrqThread => "IRQ thread",
        PartKind::Scheduler => "scheduler",
        PartKind::Return => "return to the thread",
        PartKind::Untraced => "untraced",
        PartKind::Blocked => "the thread asleep",
    }
}

/// The main cause in a heading: its kind, and where the timer interrupt came late while
/// another task ran (no event says why), that task: `timer interrupt delay while kmsg-writer
/// (pid 32716) ran`, the one lead the trace gives.
pub fn main_cause(x: &Explanation) -> String {
    let k = kind(x.culprit);
    match x.parts.first().map(|p| (p.kind, &p.what)) {
        Some((PartKind::TimerDelay, Agent::Untraced { task: Some(t), .. }))
            if x.culprit == PartKind::TimerDelay && Some(t.pid) != x.pid =>
        {
            format!("{k} while {} (pid {}) ran", t.comm, t.pid)
        }
        Some((PartKind::TimerDelay, Agent::Idle)) if x.culprit == PartKind::TimerDelay => {
            format!("{k}, the CPU idle")
        }
        _ => k.to_string(),
    }
}

/// The stall a gap in the trace cannot tell apart from interrupts off.
const STALL: &str = "the CPU stalled (hypervisor, SMI, firmware)";

/// `irq 36 virtio1-req.0`, `hog (pid 812, real-time priority 99)`, `the CPU idle: ...`.
pub fn name(a: &Agent) -> String {
    match a {
        Agent::Irq { irq, name } => format!("irq {irq} {name}"),
        Agent::Vector { name } => format!("{name} interrupt"),
        Agent::Softirq { name } => format!("softirq {name}"),
        Agent::Task(t) => task(t),
        Agent::FairShare(t) => {
            format!("{}, sharing the CPU under the fair scheduler", task(t))
        }
        Agent::Idle => format!("the CPU idle: waking from an idle state, or {STALL}"),
        Agent::Untraced { task: t, irqs_off } => {
            let who = t.as_ref().map_or("an unknown task".to_string(), task);
            if *irqs_off {
                format!(
                    "no event while {who} ran, with interrupts off at its last event: they \
                     stayed off, or {STALL}; without the preemptirq tracepoints the trace \
                     cannot tell which"
                )
            } else {
                format!(
                    "nothing traced while {who} ran: interrupts off without a tracepoint, or \
                     {STALL}"
                )
            }
        }
        Agent::Expiry => "the timer's expiry and wake-up".to_string(),
        Agent::ClockRead => "switch-in to the thread reading its clock".to_string(),
        Agent::NoSwitch => "no switch shows what ran".to_string(),
        Agent::FromIdle => "switching from the idle task".to_string(),
        Agent::Asleep { state } if state.starts_with('D') => {
            format!("the thread itself, asleep in state {state} (I/O, a page fault or a lock)")
        }
        Agent::Asleep { state } if state.is_empty() => {
            "the thread itself, asleep (on something else than its timer)".to_string()
        }
        Agent::Asleep { state } => format!("the thread itself, asleep in state {state} (a wait)"),
        Agent::Said(words) => words.clone(),
    }
}

/// The name alone, without what follows a colon: `the CPU idle`, for one line per spike.
pub fn short(a: &Agent) -> String {
    let mut s = name(a);
    if let Some(at) = s.find(':') {
        s.truncate(at);
    }
    s
}

/// `stress-ng-cpu (pid 812, real-time priority 99)`, `the idle task`.
pub fn task(t: &Task) -> String {
    if t.pid == 0 {
        return "the idle task".to_string();
    }
    format!("{} (pid {}, {})", t.comm, t.pid, priority(t.prio))
}

/// A kernel priority as a person reads it: `real-time priority 99` (0..=99, lower more
/// urgent), `normal (nice 0)` (100..=139), `SCHED_DEADLINE` (below 0).
pub fn priority(prio: Option<i32>) -> String {
    match prio {
        None => "priority unknown".to_string(),
        Some(p) if p < 0 => "SCHED_DEADLINE".to_string(),
        Some(p @ 0..=99) => format!("real-time priority {}", 99 - p),
        Some(p) => format!("normal (nice {})", i64::from(p) - 120),
    }
}
