//! Priorities: `irq.threads` (IRQ threads under SCHED_FIFO, below 99), `sched_prio.rt99`
//! (no user thread at priority 99) and `sched_prio.softirq_threads` (what `ksoftirqd/N` and
//! `ktimers/N` run at on the RT CPUs).
//!
//! The kernel starts IRQ threads at FIFO 50 (kernel/irq/manage.c, `sched_set_fifo`), keeps
//! priority 99 for its own stop-the-world threads (`migration/N`) and, on PREEMPT_RT, runs
//! the timer softirq thread `ktimers/N` at FIFO 1 so timer callbacks are not starved by
//! SCHED_OTHER load. the FreedomHEC 2012 talk's advice: real-time applications use priorities 1 to 98.

use std::collections::BTreeMap;

use model::CpuSet;
use model::audit::{Group, Severity};
use sys::tasks::Task;

use super::common::{count, cpus_word, few, is_self, split_and_tasks, task_list};
use crate::check::Check;
use crate::context::Ctx;
use crate::outcome::Outcome;
use model::measure::Policy;

pub(super) const IRQ_THREADS: Check = Check {
    id: "irq.threads",
    title: "IRQ thread priorities",
    group: Group::Placement,
    severity: Severity::Warn,
    why: "threaded IRQ handlers are scheduled like tasks: one not at SCHED_FIFO waits behind normal load, one at 99 preempts the kernel's own critical threads",
    run: irq_threads,
};

pub(super) const RT99: Check = Check {
    id: "sched_prio.rt99",
    title: "user threads at priority 99",
    group: Group::Placement,
    severity: Severity::Warn,
    why: "a user thread at FIFO/RR 99 can starve migration and watchdog threads that share the priority; applications should use 1-98",
    run: rt99,
};

pub(super) const SOFTIRQ_THREADS: Check = Check {
    id: "sched_prio.softirq_threads",
    title: "softirq threads on RT CPUs",
    group: Group::Placement,
    severity: Severity::Info,
    why: "softirq work (network receive, timers, tasklets) deferred to ksoftirqd or ktimers runs at their priority, below or above the RT thread",
    run: softirq_threads,
};

/// `chrt`-style label counts: `FIFO 50 ×21, OTHER nice 0 ×1`.
fn distribution(tasks: &[&Task]) -> String {
    let mut by: BTreeMap<(u32, std::cmp::Reverse<u32>, i32), (String, usize)> = BTreeMap::new();
    for t in tasks {
        let key = (t.policy, std::cmp::Reverse(t.rt_priority), t.nice);
        by.entry(key).or_insert_with(|| (t.sched_label(), 0)).1 += 1;
    }
    by.into_values()
        .map(|(label, n)| format!("{label} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn irq_threads(ctx: &Ctx) -> Outcome {
    let all = match task_list(ctx) {
        Ok(t) => t,
        Err(o) => return o,
    };
    let threads: Vec<&Task> = all
        .iter()
        .filter(|t| t.is_kernel_thread() && !t.is_dead() && t.comm.starts_with("irq/"))
        .collect();
    if threads.is_empty() {
        let why = if ctx.host().preempt_rt {
            "no IRQ threads found, although the kernel is PREEMPT_RT"
        } else {
            "no IRQ threads: handlers run in hard IRQ context (PREEMPT_RT or the threadirqs boot parameter would thread them)"
        };
        return Outcome::pass(why);
    }
    let bad: Vec<&Task> = threads
        .iter()
        .copied()
        .filter(|t| t.policy() != Some(Policy::Fifo) || t.rt_priority >= 99)
        .collect();
    let dist = distribution(&threads);
    if bad.is_empty() {
        return Outcome::pass(format!(
            "{}: {dist}",
            count(threads.len(), "IRQ thread", "IRQ threads")
        ));
    }
    let mut outcome = Outcome::problem(format!(
        "{} of {} off SCHED_FIFO 1-98: {}",
        bad.len(),
        count(threads.len(), "IRQ thread", "IRQ threads"),
        few(bad
            .iter()
            .map(|t| format!("{}:{} {}", t.comm, t.tid, t.sched_label())))
    ))
    .evidence("IRQ threads (/proc/PID/task/TID/stat)", dist);
    for t in bad.iter().take(super::common::FEW) {
        outcome = outcome.evidence(
            format!("/proc/{}/task/{}/stat", t.pid, t.tid),
            format!("{} {}", t.comm, t.sched_label()),
        );
    }
    for t in bad.iter().take(super::common::FEW) {
        let prio = if t.rt_priority >= 99 { 98 } else { 50 };
        outcome = outcome.fix_command(format!("chrt -f -p {prio} {}", t.tid));
    }
    outcome.fix_advice(
        "50 is the kernel's default; raise the IRQ threads the RT application waits on above the application, keep the rest below it, and never at 99",
    )
}

fn rt99(ctx: &Ctx) -> Outcome {
    let all = match task_list(ctx) {
        Ok(t) => t,
        Err(o) => return o,
    };
    let user_rt: Vec<&Task> = all
        .iter()
        .filter(|t| !t.is_kernel_thread() && !t.is_dead() && !is_self(ctx, t))
        .filter(|t| matches!(t.policy(), Some(Policy::Fifo | Policy::Rr)))
        .collect();
    let at99: Vec<&Task> = user_rt
        .iter()
        .copied()
        .filter(|t| t.rt_priority >= 99)
        .collect();
    if at99.is_empty() {
        let highest = user_rt
            .iter()
            .max_by_key(|t| t.rt_priority)
            .map(|t| format!(", the highest {} ({}:{})", t.sched_label(), t.comm, t.tid))
            .unwrap_or_default();
        return Outcome::pass(format!(
            "no user thread at priority 99 ({}{highest})",
            count(user_rt.len(), "FIFO/RR user thread", "FIFO/RR user threads")
        ));
    }
    let mut outcome = Outcome::problem(format!(
        "{} at priority 99: {}",
        count(at99.len(), "user thread", "user threads"),
        few(at99
            .iter()
            .map(|t| format!("{}:{} {}", t.comm, t.tid, t.sched_label())))
    ));
    for t in at99.iter().take(super::common::FEW) {
        outcome = outcome.evidence(
            format!("/proc/{}/task/{}/stat", t.pid, t.tid),
            format!("{} {}", t.comm, t.sched_label()),
        );
    }
    for t in at99.iter().take(super::common::FEW) {
        let flag = if t.policy() == Some(Policy::Rr) {
            "-r"
        } else {
            "-f"
        };
        outcome = outcome.fix_command(format!("chrt {flag} -p 98 {}", t.tid));
    }
    outcome.fix_advice(
        "start the application at 98 or below (chrt -f 98 ..., or its own priority setting)",
    )
}

/// Per-CPU softirq threads by kind: `ksoftirqd`, `ktimers` (PREEMPT_RT since 5.x) and
/// `ktimersoftd` (older PREEMPT_RT).
const SOFTIRQ_KINDS: [&str; 3] = ["ksoftirqd", "ktimers", "ktimersoftd"];

fn softirq_threads(ctx: &Ctx) -> Outcome {
    let (s, all) = match split_and_tasks(ctx) {
        Ok(v) => v,
        Err(o) => return o,
    };
    let mut found: Vec<(&str, u32, &Task)> = Vec::new();
    for t in all.iter().filter(|t| t.is_kernel_thread() && !t.is_dead()) {
        let Some((kind, cpu)) = t.comm.split_once('/') else {
            continue;
        };
        let Some(kind) = SOFTIRQ_KINDS.iter().find(|k| **k == kind) else {
            continue;
        };
        if let Ok(cpu) = cpu.parse::<u32>()
            && s.rt.contains(cpu)
        {
            found.push((kind, cpu, t));
        }
    }
    if found.is_empty() {
        return Outcome::pass(format!(
            "no ksoftirqd or ktimers thread found for RT {}",
            cpus_word(&s.rt)
        ));
    }
    // kind -> label -> CPUs.
    let mut groups: BTreeMap<&str, BTreeMap<String, CpuSet>> = BTreeMap::new();
    for (kind, cpu, t) in &found {
        groups
            .entry(kind)
            .or_default()
            .entry(t.sched_label())
            .or_default()
            .insert(*cpu);
    }
    let described = groups
        .iter()
        .flat_map(|(kind, labels)| {
            labels
                .iter()
                .map(move |(label, cpus)| format!("{kind} on {}: {label}", cpus_word(cpus)))
        })
        .collect::<Vec<_>>()
        .join("; ");
    let rt_kernel = ctx.host().preempt_rt;
    let bad: Vec<&(&str, u32, &Task)> = found
        .iter()
        .filter(|(kind, _, t)| {
            t.rt_priority >= 99
                || (rt_kernel && *kind != "ksoftirqd" && t.policy() != Some(Policy::Fifo))
        })
        .collect();
    if bad.is_empty() {
        return Outcome::pass(described);
    }
    let mut outcome = Outcome::problem(format!(
        "{described} ({})",
        if bad.iter().any(|(_, _, t)| t.rt_priority >= 99) {
            "priority 99 is the kernel's own"
        } else {
            "the PREEMPT_RT default is FIFO 1 for timer softirq threads"
        }
    ));
    for (_, _, t) in bad.iter().take(super::common::FEW) {
        outcome = outcome
            .evidence(
                format!("/proc/{}/task/{}/stat", t.pid, t.tid),
                format!("{} {}", t.comm, t.sched_label()),
            )
            .fix_command(format!("chrt -f -p 1 {}", t.tid));
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::super::trees::{
        FIFO, KTHREAD, OTHER, Tree, USER, tuned, tuned_ctx, untuned, untuned_ctx,
    };
    use super::*;
    use crate::context::Options;
    use model::audit::{Finding, Fix, Status};
    use testkit::FakeRoot;

    fn finding(check: &Check, ctx: &Ctx) -> Finding {
        check.finding((check.run)(ctx))
    }

    #[test]
    fn tuned_board_passes() {
        let fake = tuned();
        let ctx = tuned_ctx(&fake);
        let f = finding(&IRQ_THREADS, &ctx);
        assert_eq!(f.status, Status::Pass, "{f:?}");
        assert_eq!(f.summary, "2 IRQ threads: FIFO 50 ×2");
        let f = finding(&RT99, &ctx);
        assert_eq!(f.status, Status::Pass, "{f:?}");
        assert_eq!(
            f.summary,
            "no user thread at priority 99 (1 FIFO/RR user thread, the highest FIFO 80 (rtapp-rt:1001))"
        );
        let f = finding(&SOFTIRQ_THREADS, &ctx);
        assert_eq!(f.status, Status::Pass, "{f:?}");
        assert_eq!(
            f.summary,
            "ksoftirqd on CPUs 2-7: OTHER nice 0; ktimers on CPUs 2-7: FIFO 1"
        );
    }

    #[test]
    fn untuned_box_fires_each() {
        let fake = untuned();
        let ctx = untuned_ctx(&fake);
        let f = finding(&IRQ_THREADS, &ctx);
        assert_eq!(f.status, Status::Warn, "{f:?}");
        assert_eq!(
            f.summary,
            "2 of 3 IRQ threads off SCHED_FIFO 1-98: irq/4-ttyS0:60 OTHER nice 0, irq/30-eth0:61 FIFO 99"
        );
        assert_eq!(
            f.evidence[0].value,
            "OTHER nice 0 ×1, FIFO 99 ×1, FIFO 50 ×1"
        );
        assert!(f.fix.contains(&Fix::Command {
            command: "chrt -f -p 50 60".into()
        }));
        assert!(f.fix.contains(&Fix::Command {
            command: "chrt -f -p 98 61".into()
        }));
        let f = finding(&RT99, &ctx);
        assert_eq!(f.status, Status::Warn, "{f:?}");
        assert_eq!(
            f.summary,
            "1 user thread at priority 99: rtapp-rt:1001 FIFO 99"
        );
        assert_eq!(
            f.fix[0],
            Fix::Command {
                command: "chrt -f -p 98 1001".into()
            }
        );
        let f = finding(&SOFTIRQ_THREADS, &ctx);
        assert_eq!(f.status, Status::Info, "{f:?}");
        assert!(
            f.summary.starts_with("ksoftirqd on CPUs 2-7: OTHER nice 0; ktimers on CPUs 2-7: OTHER nice 0 (the PREEMPT_RT default"),
            "{}",
            f.summary
        );
        assert!(f.fix.contains(&Fix::Command {
            command: format!("chrt -f -p 1 {}", 100 + 2 * 10 + 2)
        }));
    }

    #[test]
    fn no_irq_threads_on_a_non_rt_kernel_and_rr_99() {
        let fake = Tree(FakeRoot::new().cpus(2).cmdline("isolcpus=1"))
            .proc(2, "kthreadd", KTHREAD, (OTHER, 0), "0-1")
            .proc(500, "daemon", USER, (2, 99), "0-1")
            .proc(501, "irq/5-fake", USER, (FIFO, 99), "0-1")
            .0;
        let ctx = Ctx::new(fake.root(), Options::default());
        let f = finding(&IRQ_THREADS, &ctx);
        assert_eq!(f.status, Status::Pass);
        assert!(f.summary.contains("threadirqs"), "{}", f.summary);
        let f = finding(&RT99, &ctx);
        assert_eq!(
            f.summary,
            "2 user threads at priority 99: daemon:500 RR 99, irq/5-fake:501 FIFO 99"
        );
        assert!(f.fix.contains(&Fix::Command {
            command: "chrt -r -p 98 500".into()
        }));
        let f = finding(&SOFTIRQ_THREADS, &ctx);
        assert_eq!(f.status, Status::Pass);
        assert!(f.summary.starts_with("no ksoftirqd"), "{}", f.summary);
    }
}
