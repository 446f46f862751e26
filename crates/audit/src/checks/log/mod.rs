//! The `log.*` checks: what the kernel log (`/dev/kmsg`, or a saved log given with
//! `--dmesg`) says that matters to real-time behaviour, each with the direction of the fix.
//!
//! The log is parsed ([`sys::parse::klog`]) and classified ([`classify`]) once per audit and
//! shared through the context's memo; `time.tsc_stable` reads the same classification.

mod classify;
#[cfg(test)]
mod tests;

use std::rc::Rc;

use model::audit::{Group, Severity};
use sys::parse::klog;

use crate::check::Check;
use crate::context::Ctx;
use crate::outcome::Outcome;
pub(crate) use classify::{Event, Kind, Scan};

/// The checks of this group.
pub(crate) const CHECKS: &[Check] = &[
    Check {
        id: "log.sleeping_in_atomic",
        title: "Sleeping in atomic context",
        group: Group::Log,
        severity: Severity::Fail,
        why: "a sleeping lock taken with IRQs or preemption off is a bug, and on PREEMPT_RT every spinlock_t sleeps",
        run: sleeping_in_atomic,
    },
    Check {
        id: "log.scheduling_while_atomic",
        title: "Scheduling while atomic",
        group: Group::Log,
        severity: Severity::Fail,
        why: "a task that schedules with preemption or bottom halves disabled leaves the kernel in a broken state",
        run: scheduling_while_atomic,
    },
    Check {
        id: "log.lockdep",
        title: "Lockdep reports",
        group: Group::Log,
        severity: Severity::Fail,
        why: "lockdep found a lock order or lock context that can deadlock, or sleep where PREEMPT_RT cannot",
        run: lockdep,
    },
    Check {
        id: "log.soft_lockup",
        title: "Soft and hard lockups",
        group: Group::Log,
        severity: Severity::Fail,
        why: "a CPU that ran kernel code for seconds without scheduling starved everything else on it",
        run: soft_lockup,
    },
    Check {
        id: "log.hung_task",
        title: "Hung tasks",
        group: Group::Log,
        severity: Severity::Warn,
        why: "tasks blocked for minutes often wait on a lock or kthread starved by real-time tasks",
        run: hung_task,
    },
    Check {
        id: "log.rt_throttling",
        title: "RT throttling activated",
        group: Group::Log,
        severity: Severity::Warn,
        why: "RT throttling stopped SCHED_FIFO/RR tasks for the rest of a period: a latency spike of up to 50 ms",
        run: rt_throttling,
    },
    Check {
        id: "log.irq_disabled",
        title: "IRQs disabled as spurious",
        group: Group::Log,
        severity: Severity::Fail,
        why: "an IRQ the kernel disabled as unhandled stops every device sharing it (a Raspberry Pi kernel log shows it as \"Disabling IRQ #59\")",
        run: irq_disabled,
    },
    Check {
        id: "log.hrtimer_interrupt",
        title: "Slow hrtimer interrupt",
        group: Group::Log,
        severity: Severity::Warn,
        why: "a timer interrupt that loops too long makes the kernel defer all timers on that CPU",
        run: hrtimer_interrupt,
    },
    Check {
        id: "log.rcu_stall",
        title: "RCU stalls",
        group: Group::Log,
        severity: Severity::Warn,
        why: "an RCU stall means a CPU or task did not let a grace period end for many seconds",
        run: rcu_stall,
    },
];

/// The classified log, with the path it came from.
pub(crate) struct Scanned {
    /// `/dev/kmsg` or the `--dmesg` file.
    pub(crate) path: String,
    /// The events.
    pub(crate) scan: Scan,
}

/// The memo key: the classified log, or why it could not be read.
struct Memo(Result<Rc<Scanned>, String>);

/// The kernel log, parsed and classified once per audit.
pub(crate) fn scanned(ctx: &Ctx) -> Result<Rc<Scanned>, String> {
    let memo = ctx.memo(|ctx| {
        Memo(
            ctx.kernel_log()
                .map(|source| {
                    Rc::new(Scanned {
                        path: source.path.clone(),
                        scan: classify::classify(&klog::parse(&source.text)),
                    })
                })
                .map_err(str::to_string),
        )
    });
    memo.0.clone()
}

/// The `unknown` outcome for a log that could not be read.
pub(crate) fn unreadable(reason: &str) -> Outcome {
    Outcome::unknown(format!(
        "cannot read the kernel log ({reason}); give a saved one with --dmesg FILE"
    ))
}

/// One event as evidence: its timestamp (else its line) and its message.
pub(crate) fn cite(e: &Event) -> String {
    let text = shorten(&e.text, 160);
    match e.timestamp_us {
        Some(us) => format!("[{}.{:06}] {text}", us / 1_000_000, us % 1_000_000),
        None => format!("line {}: {text}", e.line_no),
    }
}

/// [`cite`] of the first of `n` events.
pub(crate) fn cite_first(e: &Event, n: usize) -> String {
    if n > 1 {
        format!("{} (first of {n})", cite(e))
    } else {
        cite(e)
    }
}

/// `text` cut to `max` characters.
fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

/// Up to 8 items, then "... and N more".
pub(crate) fn listing(items: &[String]) -> String {
    const MAX: usize = 8;
    let mut out = items
        .iter()
        .take(MAX)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > MAX {
        out.push_str(&format!(" ... and {} more", items.len() - MAX));
    }
    out
}

/// The distinct values, in first-seen order.
fn distinct(values: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// "1 report" / "3 reports".
fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// The pass outcome: nothing of `what` among the messages read.
fn clean(log: &Scanned, what: &str) -> Outcome {
    let n = messages(log.scan.messages);
    Outcome::pass(format!("no {what} in the kernel log ({n})"))
        .evidence(log.path.clone(), format!("{n}, none matching"))
}

/// `1 message`, `40 messages`.
pub(crate) fn messages(n: usize) -> String {
    match n {
        1 => "1 message".to_string(),
        n => format!("{n} messages"),
    }
}

/// Runs `judge` on the events `pick` selects, or passes / reports unknown.
fn with_events(
    ctx: &Ctx,
    what: &str,
    pick: impl Fn(&Kind) -> bool,
    judge: impl FnOnce(&Scanned, &[&Event]) -> Outcome,
) -> Outcome {
    let log = match scanned(ctx) {
        Ok(log) => log,
        Err(reason) => return unreadable(&reason),
    };
    let events = log.scan.of(pick);
    if events.is_empty() {
        return clean(&log, what);
    }
    judge(&log, &events)
}

const IRQS_OFF_FIX: &str = "IRQs were disabled: a spinlock_t (a sleeping lock on PREEMPT_RT) or another sleeping call is used inside a local_irq_disable()/local_irq_save() section; make that lock a raw_spinlock_t or restructure so the sleeping call runs with interrupts on";
const PREEMPT_OFF_FIX: &str = "preemption was disabled: a sleeping lock or call is used inside preempt_disable(), get_cpu() or a raw_spinlock_t section; use raw_spinlock_t for the inner lock, or move the call (e.g. a memory allocation, which may sleep on PREEMPT_RT even with GFP_ATOMIC) out of the section";
const OTHER_CONTEXT_FIX: &str = "neither IRQs nor preemption were off: the call sleeps inside an RCU read-side section or a non-blocking region; the call trace after the report names the caller";

fn sleeping_in_atomic(ctx: &Ctx) -> Outcome {
    with_events(
        ctx,
        "\"sleeping function called from invalid context\"",
        |k| matches!(k, Kind::SleepingInAtomic(_)),
        |log, events| {
            // Split by context as the Linaro 2023 talk does: irqs_disabled() first, then in_atomic().
            let mut groups: [(&str, &str, Vec<&Event>); 3] = [
                ("with IRQs disabled", IRQS_OFF_FIX, Vec::new()),
                ("with preemption disabled", PREEMPT_OFF_FIX, Vec::new()),
                ("in another context", OTHER_CONTEXT_FIX, Vec::new()),
            ];
            for e in events {
                let Kind::SleepingInAtomic(s) = &e.kind else {
                    continue;
                };
                let slot = match (s.irqs_disabled, s.in_atomic) {
                    (Some(i), _) if i != 0 => 0,
                    (_, Some(a)) if a != 0 => 1,
                    _ => 2,
                };
                groups[slot].2.push(e);
            }
            let mut parts = Vec::new();
            let mut evidence = Vec::new();
            let mut fixes = Vec::new();
            for (label, fix, list) in &groups {
                let Some(first) = list.first() else {
                    continue;
                };
                let who = distinct(list.iter().filter_map(|e| match &e.kind {
                    Kind::SleepingInAtomic(s) => Some(format!(
                        "{} at {}",
                        s.name.as_deref().unwrap_or("unknown task"),
                        s.location.as_deref().unwrap_or("unknown location")
                    )),
                    _ => None,
                }));
                parts.push(format!("{} {label} ({})", list.len(), listing(&who)));
                let mut value = cite_first(first, list.len());
                if let Kind::SleepingInAtomic(s) = &first.kind
                    && !first.text.contains("in_atomic()")
                    && let (Some(a), Some(i)) = (s.in_atomic, s.irqs_disabled)
                {
                    value.push_str(&format!("; in_atomic(): {a}, irqs_disabled(): {i}"));
                    if let Some(pid) = s.pid {
                        value.push_str(&format!(", pid: {pid}"));
                    }
                }
                evidence.push(value);
                fixes.push(*fix);
            }
            let mut outcome = Outcome::problem(format!(
                "{} of \"sleeping function called from invalid context\": {}",
                count(events.len(), "report"),
                parts.join("; ")
            ));
            for value in evidence {
                outcome = outcome.evidence(log.path.clone(), value);
            }
            for fix in fixes {
                outcome = outcome.fix_advice(fix);
            }
            outcome
        },
    )
}

/// What a preempt count says, in words (include/linux/preempt.h layout: preempt depth in
/// bits 0-7, softirq in 8-15 (odd: serving one; +2 per bottom-half disable), hardirq in
/// 16-19, NMI in 20-23).
fn preempt_count_words(count: u32) -> String {
    let mut words = Vec::new();
    let depth = count & 0xff;
    if depth != 0 {
        words.push(format!("preemption disabled {depth} deep"));
    }
    if count & 0x100 != 0 {
        words.push("serving a softirq".to_string());
    }
    if (count >> 9) & 0x7f != 0 {
        words.push("bottom halves disabled".to_string());
    }
    if (count >> 16) & 0xf != 0 {
        words.push("in a hard IRQ".to_string());
    }
    if (count >> 20) & 0xf != 0 {
        words.push("in an NMI".to_string());
    }
    if words.is_empty() {
        words.push("nothing disabled".to_string());
    }
    words.join(", ")
}

fn scheduling_while_atomic(ctx: &Ctx) -> Outcome {
    with_events(
        ctx,
        "\"scheduling while atomic\"",
        |k| matches!(k, Kind::SchedulingWhileAtomic { .. }),
        |log, events| {
            let who = distinct(events.iter().filter_map(|e| match &e.kind {
                Kind::SchedulingWhileAtomic {
                    task,
                    preempt_count: Some(c),
                } => Some(format!(
                    "{task}, preempt_count {c:#010x}: {}",
                    preempt_count_words(*c)
                )),
                Kind::SchedulingWhileAtomic { task, .. } => Some(task.clone()),
                _ => None,
            }));
            Outcome::problem(format!(
                "{} of \"scheduling while atomic\": {}",
                count(events.len(), "report"),
                listing(&who)
            ))
            .evidence(log.path.clone(), cite_first(events[0], events.len()))
            .fix_advice("a task called schedule() while preemption, bottom halves or interrupts were disabled: a missing unlock, preempt_enable() or local_bh_enable(), or a sleeping call inside such a section; the call trace after the report shows where")
        },
    )
}

fn lockdep(ctx: &Ctx) -> Outcome {
    with_events(
        ctx,
        "lockdep report",
        |k| matches!(k, Kind::Lockdep { .. }),
        |log, events| {
            let mut invalid_wait = false;
            let found = distinct(events.iter().filter_map(|e| match &e.kind {
                Kind::Lockdep { what, task } => {
                    invalid_wait |= *what == "invalid wait context";
                    Some(match task {
                        Some(t) => format!("{what} ({t})"),
                        None => what.to_string(),
                    })
                }
                _ => None,
            }));
            let mut outcome = Outcome::problem(format!(
                "{}: {}",
                count(events.len(), "lockdep report"),
                listing(&found)
            ))
            .evidence(log.path.clone(), cite_first(events[0], events.len()));
            if invalid_wait {
                outcome = outcome.fix_advice("invalid wait context: a lock that sleeps on PREEMPT_RT (spinlock_t, mutex) is taken inside a raw_spinlock_t or IRQs-off section; make the inner lock raw or move it out (CONFIG_PROVE_RAW_LOCK_NESTING finds these before an RT kernel does)");
            }
            outcome.fix_advice("read the whole report: 'Chain exists of:' and 'Possible unsafe locking scenario' name the locks and the order that can deadlock; fix the order or the context in the code named by the call traces")
        },
    )
}

fn soft_lockup(ctx: &Ctx) -> Outcome {
    with_events(
        ctx,
        "soft or hard lockup",
        |k| matches!(k, Kind::SoftLockup { .. } | Kind::HardLockup { .. }),
        |log, events| {
            let cpu = |c: &Option<u32>| c.map_or("CPU ?".to_string(), |c| format!("CPU {c}"));
            let found = distinct(events.iter().filter_map(|e| match &e.kind {
                Kind::SoftLockup { cpu: c, secs, task } => Some(format!(
                    "soft lockup on {} for {} in {}",
                    cpu(c),
                    secs.map_or("?".to_string(), |s| format!("{s} s")),
                    task.as_deref().unwrap_or("an unknown task")
                )),
                Kind::HardLockup { cpu: c } => Some(format!("hard lockup on {}", cpu(c))),
                _ => None,
            }));
            Outcome::problem(format!(
                "{}: {}",
                count(events.len(), "lockup report"),
                listing(&found)
            ))
            .evidence(log.path.clone(), cite_first(events[0], events.len()))
            .fix_advice("the task named ran kernel code without scheduling (soft) or with interrupts off (hard) for seconds: the call trace after the report shows the loop; if it is your own real-time task busy-looping on an isolated CPU on purpose, boot with nosoftlockup (and nowatchdog) so the detectors leave that CPU alone")
        },
    )
}

fn hung_task(ctx: &Ctx) -> Outcome {
    with_events(
        ctx,
        "hung task report",
        |k| matches!(k, Kind::HungTask { .. }),
        |log, events| {
            let found = distinct(events.iter().filter_map(|e| match &e.kind {
                Kind::HungTask { task, secs } => Some(match secs {
                    Some(s) => format!("{task} blocked for more than {s} s"),
                    None => format!("{task} blocked"),
                }),
                _ => None,
            }));
            Outcome::problem(format!(
                "{}: {}",
                count(events.len(), "hung task report"),
                listing(&found)
            ))
            .evidence(log.path.clone(), cite_first(events[0], events.len()))
            .fix_advice("the task waited in D state that long: the stack after the report shows what it waits for; on a real-time machine look for a lock held by a low-priority task, or a kworker/ksoftirqd starved on a CPU that SCHED_FIFO tasks keep busy")
        },
    )
}

fn rt_throttling(ctx: &Ctx) -> Outcome {
    with_events(
        ctx,
        "\"sched: RT throttling activated\"",
        |k| matches!(k, Kind::RtThrottling),
        |log, events| {
            Outcome::problem(
                "RT throttling was activated: SCHED_FIFO/RR tasks used more than sched_rt_runtime_us of a period and were stopped until it ended",
            )
            .evidence(log.path.clone(), cite_first(events[0], events.len()))
            .fix_advice("find the real-time task that ran without sleeping (a busy loop, or a priority too high for its work); if a CPU is meant to run one real-time task at 100%, lift the limit with `echo -1 > /proc/sys/kernel/sched_rt_runtime_us` (other tasks on its CPU then starve)")
        },
    )
}

fn irq_disabled(ctx: &Ctx) -> Outcome {
    with_events(
        ctx,
        "\"irq N: nobody cared\" or \"Disabling IRQ #N\"",
        |k| matches!(k, Kind::IrqNobodyCared { .. } | Kind::IrqDisabled { .. }),
        |log, events| {
            let mut irqs: Vec<(u32, Vec<String>)> = Vec::new();
            for e in events {
                let (irq, handlers) = match &e.kind {
                    Kind::IrqNobodyCared { irq, handlers } => (*irq, handlers.clone()),
                    Kind::IrqDisabled { irq } => (*irq, Vec::new()),
                    _ => continue,
                };
                match irqs.iter_mut().find(|(i, _)| *i == irq) {
                    Some((_, known)) => {
                        for h in handlers {
                            if !known.contains(&h) {
                                known.push(h);
                            }
                        }
                    }
                    None => irqs.push((irq, handlers)),
                }
            }
            let described: Vec<String> = irqs
                .iter()
                .map(|(irq, handlers)| {
                    if handlers.is_empty() {
                        format!("IRQ {irq}")
                    } else {
                        format!("IRQ {irq} (handlers: {})", handlers.join(", "))
                    }
                })
                .collect();
            let mut outcome = Outcome::problem(format!(
                "the kernel disabled {} nobody handled: {}; every device on it stops getting interrupts",
                if irqs.len() == 1 { "an IRQ" } else { "IRQs" },
                listing(&described)
            ));
            for e in events.iter().take(2) {
                outcome = outcome.evidence(log.path.clone(), cite(e));
            }
            for (irq, _) in irqs.iter().take(3) {
                outcome = outcome.fix_command(format!("grep -E '^ *{irq}:' /proc/interrupts"));
            }
            outcome.fix_advice("a device raised the IRQ and no handler claimed it: it is usually shared (on a Raspberry Pi, IRQ #59 is shared by spi1, spi2 and uart1); check the drivers of every device on it, the interrupt routing (BIOS, device tree) and the device's firmware; booting with irqpoll recovers it but polls every handler on each timer tick, which costs latency")
        },
    )
}

fn hrtimer_interrupt(ctx: &Ctx) -> Outcome {
    with_events(
        ctx,
        "\"hrtimer: interrupt took\"",
        |k| matches!(k, Kind::HrtimerInterrupt { .. }),
        |log, events| {
            let took = events.iter().find_map(|e| match e.kind {
                Kind::HrtimerInterrupt { ns: Some(ns) } => Some(ns),
                _ => None,
            });
            let took = took.map_or("too long".to_string(), |ns| {
                format!("{}.{:03} us", ns / 1000, ns % 1000)
            });
            Outcome::problem(format!(
                "the hrtimer interrupt took {took} and looped without catching up; the kernel then pushed this CPU's next timer out by as long (it reports this once per boot)"
            ))
            .evidence(log.path.clone(), cite_first(events[0], events.len()))
            .fix_advice("too many timers expired at once (many SCHED_OTHER sleepers), the clock event device is slow, or a virtual machine lost its CPU; trace with `rtla timerlat` or the hrtimer_expire_entry/exit events to see which timers run")
        },
    )
}

fn rcu_stall(ctx: &Ctx) -> Outcome {
    with_events(
        ctx,
        "RCU stall",
        |k| matches!(k, Kind::RcuStall { .. }),
        |log, events| {
            let flavors = distinct(events.iter().filter_map(|e| match &e.kind {
                Kind::RcuStall { flavor } => Some(flavor.clone()),
                _ => None,
            }));
            Outcome::problem(format!(
                "{} ({})",
                count(events.len(), "RCU stall report"),
                listing(&flavors)
            ))
            .evidence(log.path.clone(), cite_first(events[0], events.len()))
            .fix_advice("a CPU or task did not pass a quiescent state for rcu_cpu_stall_timeout seconds: usually a real-time task busy-looping at high priority on a CPU that also runs RCU work (offload it with rcu_nocbs= and give the rcuc/rcub kthreads a priority above the busy task), or a long IRQs-off section; the report's stack shows which")
        },
    )
}
