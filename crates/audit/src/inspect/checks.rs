//! The inspection's checks: pure functions from what was sampled (an [`Inspection`] without
//! findings) to findings in the audit's form, each with evidence and the fix.
//!
//! The rules follow the seeds' talks: talk 002's real-time "hello world" (SCHED_FIFO at 49,
//! below the IRQ threads' 50, never 99; `mlockall(MCL_CURRENT | MCL_FUTURE)`; a pre-faulted
//! stack; pinned to its CPU), talk 001's run delay and migrations read from the scheduler's
//! statistics, and talk 003's finding that glibc's condition variables, semaphores and
//! rwlocks wait without priority inheritance. Only the real-time threads are judged on
//! scheduling, placement, faults, delays and futexes; memory locking is the process's.

use model::CpuSet;
use model::audit::{Finding, Group, Severity};
use model::inspect::{Inspection, RunDelaySource, ThreadReport};

use crate::outcome::Outcome;

/// What the checks are judged against, besides the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// A real-time thread waiting longer than this for its CPU is a warning, ns.
    pub run_delay_budget_ns: u64,
}

/// One inspection check: its fixed description and the look.
struct InspectCheck {
    id: &'static str,
    title: &'static str,
    group: Group,
    severity: Severity,
    why: &'static str,
    run: fn(&Inspection, &Limits) -> Outcome,
}

const CHECKS: [InspectCheck; 8] = [
    InspectCheck {
        id: "inspect.realtime",
        title: "a real-time policy",
        group: Group::Placement,
        severity: Severity::Fail,
        why: "a thread under SCHED_OTHER shares its CPU fairly with every other task: its wake-up latency has no bound",
        run: realtime,
    },
    InspectCheck {
        id: "inspect.priority",
        title: "priority against the kernel's threads",
        group: Group::Placement,
        severity: Severity::Fail,
        why: "at 99 a thread competes with the kernel's migration and watchdog threads; above the IRQ threads it starves the interrupts it may wait for",
        run: priority,
    },
    InspectCheck {
        id: "inspect.affinity",
        title: "CPU affinity",
        group: Group::Placement,
        severity: Severity::Fail,
        why: "a real-time thread allowed on every CPU is migrated by the scheduler and shares CPUs with housekeeping work",
        run: affinity,
    },
    InspectCheck {
        id: "inspect.memory_lock",
        title: "memory locked",
        group: Group::Sched,
        severity: Severity::Fail,
        why: "unlocked memory can be paged out or not yet mapped: touching it takes a page fault, milliseconds when it reads the disk",
        run: memory_lock,
    },
    InspectCheck {
        id: "inspect.page_faults",
        title: "page faults in real-time threads",
        group: Group::Sched,
        severity: Severity::Fail,
        why: "a page fault in a real-time thread takes the memory map's lock and may read the disk: the loop's latency is unbounded",
        run: page_faults,
    },
    InspectCheck {
        id: "inspect.futex_pi",
        title: "futex waits without priority inheritance",
        group: Group::Sched,
        severity: Severity::Fail,
        why: "a real-time thread blocked on a lock without priority inheritance (glibc condition variables, semaphores, rwlocks, normal mutexes) waits as long as a medium-priority thread keeps the holder off the CPU",
        run: futex_pi,
    },
    InspectCheck {
        id: "inspect.run_delay",
        title: "run delay of real-time threads",
        group: Group::Sched,
        severity: Severity::Warn,
        why: "time runnable but not running is latency the thread's own code cannot remove: another thread of equal or higher priority, or the kernel, held the CPU",
        run: run_delay,
    },
    InspectCheck {
        id: "inspect.migrations",
        title: "migrations of real-time threads",
        group: Group::Sched,
        severity: Severity::Warn,
        why: "a migrated thread starts on a CPU with cold caches, and the move itself waits for the target CPU",
        run: migrations,
    },
];

/// The ids of every inspection check, in order.
pub fn ids() -> impl Iterator<Item = &'static str> {
    CHECKS.iter().map(|c| c.id)
}

/// Every check's finding on `inspection`, in check order.
pub fn findings(inspection: &Inspection, limits: &Limits) -> Vec<Finding> {
    CHECKS
        .iter()
        .map(|c| {
            let judged = (c.run)(inspection, limits).judge(c.severity);
            Finding {
                id: c.id.to_string(),
                title: c.title.to_string(),
                group: c.group,
                severity: judged.severity,
                status: judged.status,
                summary: judged.summary,
                evidence: judged.evidence,
                why: c.why.to_string(),
                fix: judged.fix,
            }
        })
        .collect()
}

/// The real-time threads that lived through the window's end.
fn rt_threads(i: &Inspection) -> Vec<&ThreadReport> {
    i.threads.iter().filter(|t| t.realtime).collect()
}

fn who(t: &ThreadReport) -> String {
    format!("{}:{}", t.name, t.tid)
}

fn stat_path(pid: u32, t: &ThreadReport, file: &str) -> String {
    format!("/proc/{pid}/task/{}/{file}", t.tid)
}

fn list(names: impl Iterator<Item = String>) -> String {
    let all: Vec<String> = names.collect();
    const FEW: usize = 4;
    if all.len() > FEW {
        format!("{} and {} more", all[..FEW].join(", "), all.len() - FEW)
    } else {
        all.join(", ")
    }
}

fn seconds(ns: u64) -> String {
    format!("{:.1} s", ns as f64 / 1e9)
}

fn us(ns: u64) -> String {
    format!("{:.1} us", ns as f64 / 1e3)
}

/// An interval as set: whole milliseconds as `10 ms`, else microseconds.
fn interval(ns: u64) -> String {
    if ns.is_multiple_of(1_000_000) {
        format!("{} ms", ns / 1_000_000)
    } else {
        us(ns)
    }
}

fn realtime(i: &Inspection, _: &Limits) -> Outcome {
    let rt = rt_threads(i);
    if !rt.is_empty() {
        return Outcome::pass(format!(
            "{} of {} threads real-time: {}",
            rt.len(),
            i.threads.len(),
            list(rt.iter().map(|t| format!("{} {}", who(t), t.sched)))
        ));
    }
    let mut o = Outcome::problem(match i.threads.as_slice() {
        [only] => format!(
            "its only thread runs under {}, not SCHED_FIFO, SCHED_RR or SCHED_DEADLINE",
            only.sched
        ),
        all => format!(
            "none of its {} threads runs under SCHED_FIFO, SCHED_RR or SCHED_DEADLINE",
            all.len()
        ),
    });
    for t in i.threads.iter().take(4) {
        o = o.evidence(
            stat_path(i.pid, t, "stat"),
            format!("{} {}", who(t), t.sched),
        );
    }
    o.fix_command(format!("chrt -f -p 49 {}", i.pid)).fix_advice(
        "set the policy in the program (pthread_attr_setschedpolicy SCHED_FIFO with PTHREAD_EXPLICIT_SCHED, priority 1-98) or start it under `chrt -f 49`",
    )
}

/// `FIFO 50` or `FIFO 1-50` for a group of kernel threads.
fn span(k: &model::inspect::KernelThreads) -> String {
    match (k.lowest, k.highest) {
        (0, 0) => "SCHED_OTHER".to_string(),
        (0, h) => format!("OTHER to FIFO {h}"),
        (l, h) if l == h => format!("FIFO {l}"),
        (l, h) => format!("FIFO {l}-{h}"),
    }
}

fn priority(i: &Inspection, _: &Limits) -> Outcome {
    let rt = rt_threads(i);
    let mut evidence: Vec<(String, String)> = Vec::new();
    if let Some(irq) = &i.irq_threads {
        evidence.push((
            "IRQ threads (irq/*)".into(),
            format!("{} ×{}", span(irq), irq.count),
        ));
    }
    if let Some(soft) = &i.softirq_threads {
        evidence.push((
            "softirq threads (ksoftirqd/N, ktimers/N)".into(),
            format!("{} ×{}", span(soft), soft.count),
        ));
    }
    let at99: Vec<&&ThreadReport> = rt.iter().filter(|t| t.rt_priority >= 99).collect();
    let irq_low = i.irq_threads.as_ref().map(|k| k.lowest).filter(|&l| l > 0);
    let above: Vec<&&ThreadReport> = rt
        .iter()
        .filter(|t| t.rt_priority < 99 && irq_low.is_some_and(|l| t.rt_priority > l))
        .collect();
    let mut o = if !at99.is_empty() {
        let mut o = Outcome::problem(format!(
            "{} at priority 99: {}",
            if at99.len() == 1 {
                "1 thread"
            } else {
                "threads"
            },
            list(at99.iter().map(|t| format!("{} {}", who(t), t.sched)))
        ));
        for t in at99.iter().take(4) {
            o = o.evidence(stat_path(i.pid, t, "stat"), t.sched.clone());
        }
        for t in at99.iter().take(4) {
            o = o.fix_command(format!("chrt -f -p 49 {}", t.tid));
        }
        o.fix_advice("use 1-98, below the IRQ threads the program waits on (50 by default)")
    } else if !above.is_empty() {
        let irq = irq_low.unwrap_or(50);
        let mut o = Outcome::warn(format!(
            "above the IRQ threads (FIFO {irq}): {}",
            list(above.iter().map(|t| format!("{} {}", who(t), t.sched)))
        ));
        for t in above.iter().take(4) {
            o = o.fix_command(format!(
                "chrt -f -p {} {}",
                irq.saturating_sub(1).max(1),
                t.tid
            ));
        }
        o.fix_advice("raise only the IRQ threads the program waits for above it")
    } else if rt.is_empty() {
        Outcome::pass("no real-time thread to place among the kernel's")
    } else {
        let top = rt.iter().map(|t| t.rt_priority).max().unwrap_or(0);
        let irq = match &i.irq_threads {
            Some(k) => format!("the IRQ threads ({})", span(k)),
            None => "99 (no IRQ threads: handlers are not threaded)".to_string(),
        };
        Outcome::pass(format!("highest priority {top}, below {irq}"))
    };
    for (source, value) in evidence {
        o = o.evidence(source, value);
    }
    o
}

/// The CPU to pin to: the first real-time CPU, else the last online one.
fn pin_target(i: &Inspection) -> Option<u32> {
    i.rt_cpus.cpus.first().or_else(|| i.online_cpus.last())
}

fn affinity(i: &Inspection, _: &Limits) -> Outcome {
    let rt = rt_threads(i);
    let online = &i.online_cpus;
    let placed: Vec<(&ThreadReport, CpuSet)> = rt
        .iter()
        .filter_map(|t| t.cpus_allowed.clone().map(|c| (*t, c)))
        .collect();
    let everywhere: Vec<&(&ThreadReport, CpuSet)> = placed
        .iter()
        .filter(|(_, c)| online.len() > 1 && online.is_subset(c))
        .collect();
    let rt_cpus = &i.rt_cpus.cpus;
    let on_housekeeping: Vec<&(&ThreadReport, CpuSet)> = placed
        .iter()
        .filter(|(_, c)| !(online.len() > 1 && online.is_subset(c)))
        .filter(|(_, c)| {
            if rt_cpus.is_empty() {
                c.intersection(online).len() > 1
            } else {
                !c.intersection(online).is_subset(rt_cpus)
            }
        })
        .collect();
    if !everywhere.is_empty() {
        let o = Outcome::problem(format!(
            "allowed on every CPU ({online}): {}",
            list(everywhere.iter().map(|(t, _)| who(t)))
        ));
        return pin_fixes(i, affinity_evidence(i, o, &everywhere), &everywhere);
    }
    if !on_housekeeping.is_empty() {
        let what = if rt_cpus.is_empty() {
            "on more than one CPU".to_string()
        } else {
            format!("on housekeeping CPUs (real-time: {rt_cpus})")
        };
        let o = Outcome::warn(format!(
            "allowed {what}: {}",
            list(
                on_housekeeping
                    .iter()
                    .map(|(t, c)| format!("{} on {c}", who(t)))
            )
        ));
        return pin_fixes(
            i,
            affinity_evidence(i, o, &on_housekeeping),
            &on_housekeeping,
        );
    }
    if placed.is_empty() {
        return if rt.is_empty() {
            Outcome::pass("no real-time thread to place")
        } else {
            Outcome::unknown("the real-time threads' allowed CPUs could not be read")
        };
    }
    Outcome::pass(format!(
        "pinned: {}",
        list(placed.iter().map(|(t, c)| format!("{} on {c}", who(t))))
    ))
}

/// The commands that pin the first of the `bad` threads to a real-time CPU, and how to do
/// it in the program.
fn pin_fixes(i: &Inspection, mut o: Outcome, bad: &[&(&ThreadReport, CpuSet)]) -> Outcome {
    if let Some(cpu) = pin_target(i) {
        for (t, _) in bad.iter().take(4) {
            o = o.fix_command(format!("taskset -p -c {cpu} {}", t.tid));
        }
    }
    o.fix_advice("pin each real-time thread to its own real-time CPU (pthread_setaffinity_np or sched_setaffinity)")
}

/// The allowed CPUs of the first of the `bad` threads and where the real-time CPUs came
/// from, as evidence.
fn affinity_evidence(i: &Inspection, mut o: Outcome, bad: &[&(&ThreadReport, CpuSet)]) -> Outcome {
    let rt_cpus = &i.rt_cpus.cpus;
    for (t, c) in bad.iter().take(4) {
        o = o.evidence(
            stat_path(i.pid, t, "status"),
            format!("{} Cpus_allowed_list {c}", who(t)),
        );
    }
    o.evidence(
        "real-time CPUs",
        format!(
            "{} (from {})",
            if rt_cpus.is_empty() {
                "none".into()
            } else {
                rt_cpus.to_string()
            },
            i.rt_cpus.source
        ),
    )
}

fn memory_lock(i: &Inspection, _: &Limits) -> Outcome {
    let (Some(locked), Some(rss)) = (i.locked_kb, i.rss_kb) else {
        return Outcome::unknown(format!(
            "/proc/{}/status has no VmLck or VmRSS (a kernel thread has no memory of its own)",
            i.pid
        ));
    };
    let seen = format!("VmLck {locked} kB, VmRSS {rss} kB");
    let advice = "call mlockall(MCL_CURRENT | MCL_FUTURE) at start, before the real-time loop (RLIMIT_MEMLOCK must allow it: `ulimit -l unlimited` or run as root)";
    let path = format!("/proc/{}/status", i.pid);
    if locked == 0 {
        return Outcome::problem(format!("no memory locked ({seen})"))
            .evidence(path, seen)
            .fix_advice(advice);
    }
    if locked < rss {
        return Outcome::warn(format!(
            "{} kB of the {rss} kB resident is not locked ({seen})",
            rss - locked
        ))
        .evidence(path, seen)
        .fix_advice(advice);
    }
    Outcome::pass(format!("all resident memory locked ({seen})"))
}

fn page_faults(i: &Inspection, _: &Limits) -> Outcome {
    let rt = rt_threads(i);
    let faulting: Vec<&&ThreadReport> = rt
        .iter()
        .filter(|t| t.minor_faults > 0 || t.major_faults > 0)
        .collect();
    let window = seconds(i.window_ns);
    if faulting.is_empty() {
        return Outcome::pass(if rt.is_empty() {
            "no real-time thread".to_string()
        } else {
            format!(
                "no page fault in {} real-time threads over {window}",
                rt.len()
            )
        });
    }
    let mut o = Outcome::problem(format!(
        "page faults over {window}: {}",
        list(faulting.iter().map(|t| format!(
            "{} {} minor, {} major",
            who(t),
            t.minor_faults,
            t.major_faults
        )))
    ));
    for t in faulting.iter().take(4) {
        o = o.evidence(
            stat_path(i.pid, t, "stat"),
            format!(
                "minflt +{}, majflt +{} (fields 10, 12)",
                t.minor_faults, t.major_faults
            ),
        );
    }
    o.fix_advice(
        "lock memory (mlockall MCL_CURRENT | MCL_FUTURE), pre-fault the stack and the heap the loop uses before it starts, and allocate or map nothing inside the loop",
    )
}

fn futex_pi(i: &Inspection, _: &Limits) -> Outcome {
    let rt = rt_threads(i);
    if let Some(t) = rt.iter().find(|t| !t.syscall_readable) {
        return Outcome::unknown(format!(
            "{} cannot be read (it needs ptrace access to the process): run rtlab inspect as root",
            stat_path(i.pid, t, "syscall")
        ));
    }
    let mut bad = Vec::new();
    let mut pi = Vec::new();
    for t in &rt {
        for f in &t.futex_waits {
            if f.priority_inheritance {
                pi.push((*t, f));
            } else {
                bad.push((*t, f));
            }
        }
    }
    let describe = |(t, f): &(&ThreadReport, &model::inspect::FutexSeen)| {
        format!(
            "{} in {} at {} ({} of {} samples)",
            who(t),
            f.op,
            f.uaddr,
            f.samples,
            i.samples
        )
    };
    if bad.is_empty() {
        let pi_note = if pi.is_empty() {
            String::new()
        } else {
            format!("; with inheritance: {}", list(pi.iter().map(describe)))
        };
        return Outcome::pass(format!(
            "no real-time thread seen blocked on a futex without priority inheritance over {} samples{pi_note}",
            i.samples
        ));
    }
    let mut o = Outcome::problem(format!(
        "blocked without priority inheritance: {}",
        list(bad.iter().map(describe))
    ));
    for (t, f) in bad.iter().take(4) {
        o = o.evidence(
            stat_path(i.pid, t, "syscall"),
            format!("futex({}, {}, ...)", f.uaddr, f.op),
        );
    }
    o.fix_advice(
        "wait on PTHREAD_PRIO_INHERIT mutexes (pthread_mutexattr_setprotocol); glibc's condition variables, semaphores and rwlocks have no inheritance: use librtpi's pi_cond or a design that needs no wait on a lower-priority thread",
    )
}

fn run_delay(i: &Inspection, limits: &Limits) -> Outcome {
    let rt = rt_threads(i);
    let measured: Vec<(&&ThreadReport, u64)> = rt
        .iter()
        .filter_map(|t| t.max_run_delay_ns.map(|m| (t, m)))
        .collect();
    if measured.is_empty() {
        return if rt.is_empty() {
            Outcome::pass("no real-time thread")
        } else {
            Outcome::unknown(
                "no run delay: /proc/PID/task/TID/schedstat is absent (CONFIG_SCHED_INFO)",
            )
        };
    }
    let how = match i.run_delay_source {
        RunDelaySource::Schedstat => {
            format!(
                "most in one {} interval (schedstat)",
                interval(i.interval_ns)
            )
        }
        RunDelaySource::Trace => "longest single wait (sched_wakeup/sched_switch)".to_string(),
    };
    let budget = limits.run_delay_budget_ns;
    let over: Vec<&(&&ThreadReport, u64)> = measured.iter().filter(|(_, m)| *m > budget).collect();
    let show = |(t, m): &(&&ThreadReport, u64)| {
        format!(
            "{} {} ({} in total)",
            who(t),
            us(*m),
            us(t.run_delay_ns.unwrap_or(0))
        )
    };
    if over.is_empty() {
        let worst = measured
            .iter()
            .max_by_key(|(_, m)| *m)
            .map(show)
            .unwrap_or_default();
        return Outcome::pass(format!("within {} ({how}): worst {worst}", us(budget)));
    }
    let mut o = Outcome::problem(format!(
        "over {} ({how}): {}",
        us(budget),
        list(over.iter().map(|x| show(x)))
    ));
    for (t, m) in over.iter().take(4) {
        o = o.evidence(
            stat_path(i.pid, t, "schedstat"),
            format!("run delay max {}", us(*m)),
        );
    }
    o.fix_advice(
        "see what ran instead: `rtlab trace record` then `rtlab explain`; give the thread a CPU of its own (isolcpus or a cpuset partition) and keep other real-time threads of equal or higher priority off it",
    )
}

fn migrations(i: &Inspection, _: &Limits) -> Outcome {
    let rt = rt_threads(i);
    let known: Vec<(&&ThreadReport, u64)> = rt
        .iter()
        .filter_map(|t| t.migrations.map(|m| (t, m)))
        .collect();
    if known.is_empty() {
        return if rt.is_empty() {
            Outcome::pass("no real-time thread")
        } else {
            Outcome::unknown(
                "no migration counts: /proc/PID/task/TID/sched is absent (CONFIG_SCHED_DEBUG)",
            )
        };
    }
    let moved: Vec<&(&&ThreadReport, u64)> = known.iter().filter(|(_, m)| *m > 0).collect();
    if moved.is_empty() {
        return Outcome::pass(format!("no migration over {}", seconds(i.window_ns)));
    }
    let mut o = Outcome::problem(format!(
        "migrated over {}: {}",
        seconds(i.window_ns),
        list(moved.iter().map(|(t, m)| format!("{} ×{m}", who(t))))
    ));
    for (t, m) in moved.iter().take(4) {
        o = o.evidence(
            stat_path(i.pid, t, "sched"),
            format!("se.nr_migrations +{m}"),
        );
    }
    if let Some(cpu) = pin_target(i) {
        for (t, _) in moved.iter().take(4) {
            o = o.fix_command(format!("taskset -p -c {cpu} {}", t.tid));
        }
    }
    o
}
