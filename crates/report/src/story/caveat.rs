//! What limits an explanation (`model::explain::Caveat`), in words.

use model::explain::Caveat;

use super::us;

/// Whether the caveat is a blind spot of the trace, told in the explanation's confidence line
/// ([`super::spike::seen`]) rather than as a note of its own.
pub fn in_confidence(c: &Caveat) -> bool {
    matches!(c, Caveat::NoSectionEvents | Caveat::LostEvents { .. })
}

/// The caveat as a sentence without its full stop.
pub fn say(c: &Caveat) -> String {
    match c {
        Caveat::InferredSwitches { cpu, count } => {
            let (switches, are, were) = if *count == 1 {
                ("1 switch".to_string(), "is", "was")
            } else {
                (format!("{count} switches"), "are", "were")
            };
            format!(
                "{switches} on CPU {cpu} {are} not in the trace and {were} inferred from the tasks \
                 its events name (some kernels do not trace switches out of the idle task)"
            )
        }
        Caveat::NoTimerExpiry => {
            "the thread's timer expiry is not in the trace: the timer is taken to have fired on \
             time"
                .to_string()
        }
        Caveat::NoHrtimerEvents => {
            "the trace has no hrtimer events: the timer is taken to have fired on time, so a late \
             timer interrupt shows as scheduler delay"
                .to_string()
        }
        Caveat::NoWakeup => "the thread's wake-up is not in the trace".to_string(),
        Caveat::NoSwitchIn => "the thread's switch-in is not in the trace".to_string(),
        Caveat::NoSectionEvents => "the trace has no preemptirq events (the kernel lacks \
             CONFIG_PREEMPTIRQ_TRACEPOINTS, or they were not recorded): a section with interrupts \
             or preemption off shows only as a gap, or as the task it ran in"
            .to_string(),
        Caveat::LostEvents { times } => {
            let times = match times {
                1 => "once".to_string(),
                n => format!("{n} times"),
            };
            format!("the kernel reported lost events {times} in this window: parts may be missing")
        }
        Caveat::WindowTruncated { max_events } => format!(
            "the window held more than {max_events} events, and those after them were not read: \
             a damaged trace, or a thread that was not switched in for a very long time"
        ),
        Caveat::BufferStartedLate => {
            "the CPU's trace buffer starts inside the window: older events are gone".to_string()
        }
        Caveat::Migrated { from, to, at_ns } => format!(
            "the thread migrated from CPU {from} to CPU {to} at {}{} (pin it to one CPU)",
            if *at_ns < 0 { "-" } else { "+" },
            us(at_ns.unsigned_abs())
        ),
        Caveat::Said(text) => text.clone(),
    }
}
