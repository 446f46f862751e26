//! Classifies kernel log messages ([`sys::parse::klog::Line`]) into the events that matter to
//! real-time behaviour, with what each report names (task, location, CPU, IRQ). Pure: text
//! in, events out; it matches the kernel's own message formats, cited per event below.
//!
//! Matches are substrings, not prefixes: a message can be glued to earlier output on the same
//! line (`augmented rbtree testingNMI watchdog: BUG: soft lockup ...`) and carries a
//! subsystem prefix that changed over the years (`NMI watchdog:`, `watchdog:`, `rcu:`).

use sys::parse::klog::Line;

/// How many following messages may carry the details of a multi-line report.
const DETAIL_WINDOW: usize = 6;
/// How far after `irq N: nobody cared` its `handlers:` list may come (after a call trace).
const HANDLER_WINDOW: usize = 80;

/// The lockdep report headlines (kernel/locking/lockdep.c) and what each means, in words.
const LOCKDEP: &[(&str, &str)] = &[
    (
        "WARNING: possible circular locking dependency detected",
        "possible circular locking dependency",
    ),
    (
        "WARNING: possible recursive locking detected",
        "possible recursive locking",
    ),
    (
        "WARNING: inconsistent lock state",
        "inconsistent lock state",
    ),
    ("BUG: Invalid wait context", "invalid wait context"),
    (
        "WARNING: possible irq lock inversion dependency detected",
        "possible IRQ lock inversion",
    ),
    (
        "-unsafe lock order detected",
        "IRQ-safe -> IRQ-unsafe lock order",
    ),
    (
        "WARNING: bad unlock balance detected!",
        "bad unlock balance",
    ),
    ("WARNING: held lock freed!", "held lock freed"),
    (
        "WARNING: lock held when returning to user space!",
        "lock held when returning to user space",
    ),
];

/// Messages that say the TSC was found unreliable (arch/x86/kernel/tsc.c, tsc_sync.c,
/// kernel/time/clocksource.c; old and new wordings).
const TSC_UNSTABLE: &[&str] = &[
    "Marking clocksource 'tsc",
    "Marking TSC unstable",
    "TSC found unstable",
    "marking tsc unstable",
    "Clocksource tsc unstable",
    "TSC warp between CPUs",
];

/// What a message reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `BUG: sleeping function called from invalid context at FILE:LINE`, then (same or next
    /// message) `in_atomic(): A, irqs_disabled(): I, [non_block: N,] pid: P, name: COMM`
    /// (kernel/sched/core.c `__might_resched`, `___might_sleep` before 5.16).
    SleepingInAtomic(Sleeping),
    /// `BUG: scheduling while atomic: COMM/PID/0xPREEMPT_COUNT` (`__schedule_bug`).
    SchedulingWhileAtomic {
        /// `comm/pid`.
        task: String,
        /// The preempt count the kernel printed.
        preempt_count: Option<u32>,
    },
    /// A lockdep report.
    Lockdep {
        /// What it found, in words.
        what: &'static str,
        /// `comm/pid` of the task named in the report's first lines.
        task: Option<String>,
    },
    /// `BUG: soft lockup - CPU#N stuck for Ns! [COMM:PID]` (kernel/watchdog.c).
    SoftLockup {
        /// The CPU.
        cpu: Option<u32>,
        /// How long, in seconds.
        secs: Option<u64>,
        /// `comm:pid`.
        task: Option<String>,
    },
    /// `Watchdog detected hard LOCKUP on cpu N`.
    HardLockup {
        /// The CPU.
        cpu: Option<u32>,
    },
    /// `INFO: task COMM:PID blocked for more than N seconds.` (kernel/hung_task.c).
    HungTask {
        /// `comm:pid`.
        task: String,
        /// The threshold passed, in seconds.
        secs: Option<u64>,
    },
    /// `sched: RT throttling activated` (kernel/sched/rt.c).
    RtThrottling,
    /// `irq N: nobody cared (try booting with the "irqpoll" option)`, then `handlers:` and
    /// one `[<addr>] name` line per handler (kernel/irq/spurious.c).
    IrqNobodyCared {
        /// The IRQ.
        irq: u32,
        /// The handlers registered on it.
        handlers: Vec<String>,
    },
    /// `Disabling IRQ #N`.
    IrqDisabled {
        /// The IRQ.
        irq: u32,
    },
    /// `hrtimer: interrupt took N ns` (kernel/time/hrtimer.c, printed once per boot).
    HrtimerInterrupt {
        /// The duration.
        ns: Option<u64>,
    },
    /// `rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:`, `... self-detected stall on
    /// CPU`, `... detected expedited stalls ...` (kernel/rcu/tree_stall.h).
    RcuStall {
        /// `rcu_preempt`, `rcu_sched`, ...
        flavor: String,
    },
    /// The TSC marked unstable.
    TscUnstable,
    /// `clocksource: timekeeping watchdog on CPU...` (the clocksource watchdog speaking).
    ClocksourceWatchdog,
}

/// The details of a "sleeping function called from invalid context" report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Sleeping {
    /// `file:line` of the sleeping call.
    pub(crate) location: Option<String>,
    /// `in_atomic()`: non-zero inside a preempt-off (or raw spinlock, or IRQ) section.
    pub(crate) in_atomic: Option<u64>,
    /// `irqs_disabled()`: non-zero (1 on x86, 128 on arm64) with interrupts off.
    pub(crate) irqs_disabled: Option<u64>,
    /// The task's command name.
    pub(crate) name: Option<String>,
    /// The task's pid.
    pub(crate) pid: Option<u32>,
}

/// One classified message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    /// What it reports.
    pub(crate) kind: Kind,
    /// The message's line in the log.
    pub(crate) line_no: usize,
    /// Microseconds since boot, when known.
    pub(crate) timestamp_us: Option<u64>,
    /// The message, trimmed.
    pub(crate) text: String,
}

/// Every event in a log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Scan {
    /// How many messages the log holds.
    pub(crate) messages: usize,
    /// The events, in log order.
    pub(crate) events: Vec<Event>,
}

impl Scan {
    /// The events `pick` selects.
    pub(crate) fn of(&self, pick: impl Fn(&Kind) -> bool) -> Vec<&Event> {
        self.events.iter().filter(|e| pick(&e.kind)).collect()
    }
}

/// Classifies every message of a parsed log.
pub(crate) fn classify(lines: &[Line<'_>]) -> Scan {
    let mut events = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let text = line.text;
        let following = &lines[i + 1..];
        let kinds = task_kinds(text, following)
            .into_iter()
            .chain(irq_and_clock_kinds(text, following));
        for kind in kinds {
            events.push(Event {
                kind,
                line_no: line.line_no,
                timestamp_us: line.timestamp_us,
                text: text.trim().to_string(),
            });
        }
    }
    Scan {
        messages: lines.len(),
        events,
    }
}

/// What one message reports about tasks, locks and CPUs that stopped scheduling (sleeping
/// in atomic context, lockdep, lockups, hung tasks, RT throttling), in this order;
/// `following` are the lines after it (the report's body).
fn task_kinds(text: &str, following: &[Line<'_>]) -> Vec<Kind> {
    let mut kinds = Vec::new();
    if let Some(pos) = text.find("BUG: sleeping function called from invalid context") {
        kinds.push(Kind::SleepingInAtomic(sleeping(&text[pos..], following)));
    }
    if let Some(rest) = after(text, "BUG: scheduling while atomic: ") {
        kinds.push(scheduling_while_atomic(rest));
    }
    if let Some((_, what)) = LOCKDEP.iter().find(|(h, _)| text.contains(h)) {
        kinds.push(Kind::Lockdep {
            what,
            task: lockdep_task(following),
        });
    }
    if let Some(rest) = after(text, "BUG: soft lockup - CPU#") {
        kinds.push(soft_lockup(rest));
    }
    if let Some(rest) = after(text, "Watchdog detected hard LOCKUP on cpu ") {
        kinds.push(Kind::HardLockup {
            cpu: leading_number(rest).and_then(|n| u32::try_from(n).ok()),
        });
    }
    if let Some(rest) = after(text, "INFO: task ")
        && let Some((task, tail)) = rest.split_once(" blocked for more than ")
    {
        kinds.push(Kind::HungTask {
            task: task.to_string(),
            secs: leading_number(tail),
        });
    }
    if text.contains("RT throttling activated") {
        kinds.push(Kind::RtThrottling);
    }
    kinds
}

/// What one message reports about interrupts, RCU and clocks (unhandled and disabled
/// IRQs, slow hrtimer interrupts, RCU stalls, an unstable TSC, the clocksource watchdog),
/// in this order; `following` are the lines after it.
fn irq_and_clock_kinds(text: &str, following: &[Line<'_>]) -> Vec<Kind> {
    let mut kinds = Vec::new();
    if let Some(pos) = text.find(": nobody cared")
        && let Some(irq) = irq_before(&text[..pos])
    {
        kinds.push(Kind::IrqNobodyCared {
            irq,
            handlers: handlers(following),
        });
    }
    if let Some(rest) = after(text, "Disabling IRQ #")
        && let Some(irq) = leading_number(rest).and_then(|n| u32::try_from(n).ok())
    {
        kinds.push(Kind::IrqDisabled { irq });
    }
    if let Some(rest) = after(text, "hrtimer: interrupt took ") {
        kinds.push(Kind::HrtimerInterrupt {
            ns: leading_number(rest),
        });
    }
    if let Some(rest) = after(text, "INFO: rcu")
        && (rest.contains("detected stall") || rest.contains("detected expedited stall"))
    {
        let flavor = rest
            .split_whitespace()
            .next()
            .filter(|f| f.starts_with('_'))
            .unwrap_or("");
        kinds.push(Kind::RcuStall {
            flavor: format!("rcu{flavor}"),
        });
    }
    if TSC_UNSTABLE.iter().any(|p| text.contains(p)) {
        kinds.push(Kind::TscUnstable);
    }
    if text.contains("timekeeping watchdog on CPU") {
        kinds.push(Kind::ClocksourceWatchdog);
    }
    kinds
}

/// What follows the first `pattern` in `text`.
fn after<'t>(text: &'t str, pattern: &str) -> Option<&'t str> {
    text.find(pattern).map(|pos| &text[pos + pattern.len()..])
}

/// The decimal number at the start of `s`.
fn leading_number(s: &str) -> Option<u64> {
    let end = s
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(s.len());
    s[..end].parse().ok()
}

/// The number after `field` in `text` (`in_atomic(): 1`).
fn field_number(text: &str, field: &str) -> Option<u64> {
    leading_number(after(text, field)?)
}

/// The word after `field` in `text` (`name: sed`).
fn field_word(text: &str, field: &str) -> Option<String> {
    let rest = after(text, field)?;
    let word = rest.split_whitespace().next()?;
    Some(word.trim_end_matches(',').to_string())
}

fn sleeping(headline: &str, following: &[Line<'_>]) -> Sleeping {
    let location = after(headline, " at ")
        .and_then(|rest| rest.split_whitespace().next())
        .map(str::to_string);
    // The details are on the same message (the Linaro 2023 talk's console, joined) or on the next ones.
    let details = std::iter::once(headline)
        .chain(
            following
                .iter()
                .take(DETAIL_WINDOW)
                .map(|l| l.text)
                .take_while(|t| !t.contains("BUG:") && !t.contains("WARNING:")),
        )
        .find(|t| t.contains("in_atomic(): "));
    match details {
        Some(d) => Sleeping {
            location,
            in_atomic: field_number(d, "in_atomic(): "),
            irqs_disabled: field_number(d, "irqs_disabled(): "),
            name: field_word(d, "name: "),
            pid: field_number(d, "pid: ").and_then(|n| u32::try_from(n).ok()),
        },
        None => Sleeping {
            location,
            ..Sleeping::default()
        },
    }
}

fn scheduling_while_atomic(rest: &str) -> Kind {
    let word = rest.split_whitespace().next().unwrap_or("");
    // COMM may itself hold `/` (kworker/0:1): split from the right.
    let mut parts = word.rsplitn(3, '/');
    let count = parts.next().unwrap_or("");
    let pid = parts.next();
    let comm = parts.next();
    match (comm, pid) {
        (Some(comm), Some(pid)) => Kind::SchedulingWhileAtomic {
            task: format!("{comm}/{pid}"),
            preempt_count: count
                .strip_prefix("0x")
                .and_then(|hex| u32::from_str_radix(hex, 16).ok()),
        },
        _ => Kind::SchedulingWhileAtomic {
            task: word.to_string(),
            preempt_count: None,
        },
    }
}

/// The `comm/pid` that opens a lockdep report's body (`getty/4382 is trying to acquire
/// lock:`).
fn lockdep_task(following: &[Line<'_>]) -> Option<String> {
    following.iter().take(DETAIL_WINDOW).find_map(|l| {
        let word = l.text.split_whitespace().next()?;
        let word = word.trim_end_matches(':');
        let (comm, pid) = word.rsplit_once('/')?;
        (!comm.is_empty() && !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
            .then(|| word.to_string())
    })
}

fn soft_lockup(rest: &str) -> Kind {
    let cpu = leading_number(rest).and_then(|n| u32::try_from(n).ok());
    let secs = after(rest, " stuck for ").and_then(leading_number);
    let task = after(rest, "! [")
        .and_then(|t| t.split_once(']'))
        .map(|(task, _)| task.to_string());
    Kind::SoftLockup { cpu, secs, task }
}

/// `irq 16` at the end of `s`.
fn irq_before(s: &str) -> Option<u32> {
    let (_, number) = s.rsplit_once("irq ")?;
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    number.parse().ok()
}

/// The handler names listed after `handlers:` (`[<0000000013155f90>] usb_hcd_irq`, with
/// ` threaded [<...>] fn` appended for a threaded handler).
fn handlers(following: &[Line<'_>]) -> Vec<String> {
    let window = &following[..following.len().min(HANDLER_WINDOW)];
    let Some(start) = window.iter().position(|l| l.text.trim() == "handlers:") else {
        return Vec::new();
    };
    let mut names = Vec::new();
    for line in &window[start + 1..] {
        let Some(rest) = line.text.trim_start().strip_prefix("[<") else {
            break;
        };
        let Some((_, tail)) = rest.split_once(">] ") else {
            break;
        };
        if let Some(name) = tail.split_whitespace().next() {
            names.push(name.to_string());
        }
        if let Some(threaded) = after(tail, " threaded [<")
            && let Some((_, t)) = threaded.split_once(">] ")
            && let Some(name) = t.split_whitespace().next()
        {
            names.push(format!("{name} (thread)"));
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use sys::parse::klog;

    fn kinds(text: &str) -> Vec<Kind> {
        classify(&klog::parse(text))
            .events
            .into_iter()
            .map(|e| e.kind)
            .collect()
    }

    #[test]
    fn sleeping_function_on_one_line_or_two() {
        // the Linaro 2023 talk (PREEMPT_RT, arm64), the console showing both messages on one line.
        let joined = "BUG: sleeping function called from invalid context at kernel/locking/spinlock_rt.c:46 in_atomic(): 0, irqs_disabled(): 128, non_block: 0, pid: 298, name: systemd-udevd preempt_count: 0, expected: 0";
        assert_eq!(
            kinds(joined),
            [Kind::SleepingInAtomic(Sleeping {
                location: Some("kernel/locking/spinlock_rt.c:46".into()),
                in_atomic: Some(0),
                irqs_disabled: Some(128),
                name: Some("systemd-udevd".into()),
                pid: Some(298),
            })]
        );
        // Current kernels: three messages (kmsg records).
        let split = "3,100,5000,-;BUG: sleeping function called from invalid context at kernel/locking/spinlock_rt.c:46\n3,101,5001,-;in_atomic(): 1, irqs_disabled(): 0, non_block: 0, pid: 291, name: systemd-udevd\n3,102,5002,-;preempt_count: 1, expected: 0\n";
        let Kind::SleepingInAtomic(s) = &kinds(split)[0] else {
            panic!()
        };
        assert_eq!(
            (s.in_atomic, s.irqs_disabled, s.pid),
            (Some(1), Some(0), Some(291))
        );
        // A details line that belongs to the next report is not taken.
        let cut = "BUG: sleeping function called from invalid context at a.c:1\nBUG: sleeping function called from invalid context at b.c:2\nin_atomic(): 1, irqs_disabled(): 1, pid: 3, name: x\n";
        let k = kinds(cut);
        assert_eq!(k.len(), 2);
        assert_eq!(
            k[0],
            Kind::SleepingInAtomic(Sleeping {
                location: Some("a.c:1".into()),
                ..Sleeping::default()
            })
        );
    }

    #[test]
    fn scheduling_while_atomic_keeps_slashes_in_comm() {
        assert_eq!(
            kinds("BUG: scheduling while atomic: kworker/0:1/123/0x00000002"),
            [Kind::SchedulingWhileAtomic {
                task: "kworker/0:1/123".into(),
                preempt_count: Some(2)
            }]
        );
        assert_eq!(
            kinds("BUG: scheduling while atomic: odd"),
            [Kind::SchedulingWhileAtomic {
                task: "odd".into(),
                preempt_count: None
            }]
        );
    }

    #[test]
    fn rt_messages_in_kernel_formats() {
        // Lines written from the kernel's format strings (no corpus log holds them).
        let log = "[   10.000001] sched: RT throttling activated\n[   11.000000] hrtimer: interrupt took 1234567 ns\n[   12.000000] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:\n[   13.000000] INFO: rcu_sched self-detected stall on CPU\n[   14.000000] rcu: INFO: rcu_preempt detected expedited stalls on CPUs/tasks: {\n[   15.000000] clocksource: timekeeping watchdog on CPU1: Marking clocksource 'tsc' as unstable because the skew is too large:\n[   15.000001] tsc: Marking TSC unstable due to clocksource watchdog\n[   16.000000] NMI watchdog: Watchdog detected hard LOCKUP on cpu 3\n[   17.000000] watchdog: BUG: soft lockup - CPU#2 stuck for 22s! [kworker/2:1:77]\n[   18.000000] INFO: task kworker/u8:2:123 blocked for more than 122 seconds.\n";
        assert_eq!(
            kinds(log),
            [
                Kind::RtThrottling,
                Kind::HrtimerInterrupt {
                    ns: Some(1_234_567)
                },
                Kind::RcuStall {
                    flavor: "rcu_preempt".into()
                },
                Kind::RcuStall {
                    flavor: "rcu_sched".into()
                },
                Kind::RcuStall {
                    flavor: "rcu_preempt".into()
                },
                Kind::TscUnstable,
                Kind::ClocksourceWatchdog,
                Kind::TscUnstable,
                Kind::HardLockup { cpu: Some(3) },
                Kind::SoftLockup {
                    cpu: Some(2),
                    secs: Some(22),
                    task: Some("kworker/2:1:77".into())
                },
                Kind::HungTask {
                    task: "kworker/u8:2:123".into(),
                    secs: Some(122)
                },
            ]
        );
        // Near misses stay quiet.
        let quiet = "hrtimer_interrupt+0xb3/0x210\nKernel panic - not syncing: softlockup: hung tasks\nKernel panic - not syncing: hung_task: blocked tasks\nclocksource: Switched to clocksource tsc\ntsc: Refined TSC clocksource calibration: 2400.000 MHz\nrcu: Offload RCU callbacks from CPUs: 2-7.\nirq 5, desc: 0000, depth: 1\n";
        assert_eq!(kinds(quiet), []);
    }

    #[test]
    fn malformed_reports_do_not_panic() {
        for text in [
            "BUG: sleeping function called from invalid context",
            "BUG: sleeping function called from invalid context at",
            "in_atomic(): x, irqs_disabled(): , pid: -1, name:",
            "BUG: scheduling while atomic: ",
            "BUG: scheduling while atomic: a/b/0xZZ",
            "BUG: soft lockup - CPU#",
            "BUG: soft lockup - CPU#x stuck for ys! [",
            "INFO: task  blocked for more than  seconds.",
            "irq : nobody cared",
            "irq 99999999999: nobody cared",
            "Disabling IRQ #",
            "Disabling IRQ #-1",
            "hrtimer: interrupt took ",
            "INFO: rcu detected stall",
            "handlers:\n[<\n[<x>] ",
            "WARNING: possible recursive locking detected\n/\n//1\na/\n",
        ] {
            let _ = kinds(text);
        }
        assert_eq!(kinds("irq : nobody cared"), []);
        assert_eq!(kinds("Disabling IRQ #x"), []);
    }
}
