//! `tasks.user_affinity` (user threads that may run on RT CPUs) and `tasks.kernel_threads`
//! (unbound kernel threads that may run there).
//!
//! Left out on purpose: user threads under SCHED_FIFO, SCHED_RR or SCHED_DEADLINE (the RT
//! workload itself) and user threads pinned entirely inside the RT CPUs (placed there by
//! someone); per-CPU kernel threads (allowed on exactly one CPU: `ksoftirqd/N`,
//! `migration/N`, `kworker/N:M`, ... cannot be moved and belong to their CPU); IRQ threads
//! (`irq/N-name`, which follow their IRQ's affinity, see `irq.affinity`); zombies; and this
//! audit itself.

use std::collections::BTreeMap;

use model::CpuSet;
use model::audit::{Fix, Group, Severity};
use sys::tasks::Task;

use super::common::{Split, count, cpus_word, few, is_self, split_and_tasks};
use crate::check::Check;
use crate::context::{Ctx, isolcpus_split};
use crate::outcome::Outcome;

pub(super) const USER_AFFINITY: Check = Check {
    id: "tasks.user_affinity",
    title: "user threads on RT CPUs",
    group: Group::Placement,
    severity: Severity::Warn,
    why: "any user thread allowed on an RT CPU can be scheduled there and compete with, or delay the wakeup of, the RT thread",
    run: user_affinity,
};

pub(super) const KERNEL_THREADS: Check = Check {
    id: "tasks.kernel_threads",
    title: "kernel threads on RT CPUs",
    group: Group::Placement,
    severity: Severity::Warn,
    why: "unbound kernel threads (kswapd, khugepaged, RCU, kthreadd's children) allowed on RT CPUs run housekeeping work there",
    run: kernel_threads,
};

/// Whether `t` may run on an RT CPU.
fn touches_rt(t: &Task, s: &Split) -> bool {
    t.cpus_allowed
        .as_ref()
        .is_some_and(|a| !a.intersection(&s.rt).is_empty())
}

/// `comm:pid` (and `/tid` for a thread other than the main one).
fn name(t: &Task) -> String {
    if t.pid == t.tid {
        format!("{}:{}", t.comm, t.pid)
    } else {
        format!("{}:{}/{}", t.comm, t.pid, t.tid)
    }
}

fn allowed_evidence(mut outcome: Outcome, tasks: &[&Task]) -> Outcome {
    for t in tasks.iter().take(super::common::FEW) {
        outcome = outcome.evidence(
            format!("/proc/{}/task/{}/status", t.pid, t.tid),
            format!(
                "Cpus_allowed_list: {} ({})",
                t.cpus_allowed
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default(),
                t.comm
            ),
        );
    }
    outcome
}

fn user_affinity(ctx: &Ctx) -> Outcome {
    let (s, all) = match split_and_tasks(ctx) {
        Ok(v) => v,
        Err(o) => return o,
    };
    let user: Vec<&Task> = all
        .iter()
        .filter(|t| !t.is_kernel_thread() && !t.is_dead() && !is_self(ctx, t))
        .collect();
    let mut realtime = 0;
    let mut pinned = 0;
    let mut offenders: Vec<&Task> = Vec::new();
    for t in user.iter().copied().filter(|t| touches_rt(t, &s)) {
        let allowed = t.cpus_allowed.as_ref().expect("touches_rt checked it");
        if t.is_realtime() {
            realtime += 1;
        } else if allowed.is_subset(&s.rt) {
            pinned += 1;
        } else {
            offenders.push(t);
        }
    }
    let left_out = format!(
        "{} and {} left out",
        count(realtime, "real-time thread", "real-time threads"),
        count(
            pinned,
            "thread pinned inside the RT CPUs",
            "threads pinned inside the RT CPUs"
        )
    );
    if offenders.is_empty() {
        return Outcome::pass(format!(
            "none of {} may run on RT {} ({left_out})",
            count(user.len(), "user thread", "user threads"),
            cpus_word(&s.rt)
        ));
    }
    // One line per process: its main thread's name and how many of its threads.
    let mut by_process: BTreeMap<u32, (String, usize)> = BTreeMap::new();
    for t in &offenders {
        let entry = by_process
            .entry(t.pid)
            .or_insert_with(|| (t.comm.clone(), 0));
        entry.1 += 1;
        if t.pid == t.tid {
            entry.0 = t.comm.clone();
        }
    }
    let names = few(by_process.iter().map(|(pid, (comm, n))| {
        if *n == 1 {
            format!("{comm}:{pid}")
        } else {
            format!("{comm}:{pid} ({n} threads)")
        }
    }));
    let mut outcome = Outcome::problem(format!(
        "{} in {} may run on RT {}: {names} ({left_out})",
        count(offenders.len(), "user thread", "user threads"),
        count(by_process.len(), "process", "processes"),
        cpus_word(&s.rt)
    ));
    outcome = allowed_evidence(outcome, &offenders);
    let systemd = all.iter().any(|t| t.pid == 1 && t.comm == "systemd");
    let pids: Vec<u32> = by_process.keys().take(3).copied().collect();
    outcome.with_fixes(user_affinity_fixes(ctx, systemd, &s.rt, &s.hk, &pids))
}

/// Moving user threads to the housekeeping CPUs `hk`, as this machine can: systemd's slices
/// only where systemd runs the machine (PID 1) on cgroup v2, where its AllowedCPUs= has a
/// cpuset to write, else `rtlab tune apply`; then `taskset` for the first processes.
fn user_affinity_fixes(
    ctx: &Ctx,
    systemd: bool,
    rt: &CpuSet,
    hk: &CpuSet,
    pids: &[u32],
) -> Vec<Fix> {
    let v2 = ctx.root().exists("/sys/fs/cgroup/cgroup.controllers");
    let command = |command: String| Fix::Command { command };
    let mut fixes: Vec<Fix> = if systemd && v2 {
        ["system.slice", "user.slice", "init.scope"]
            .iter()
            .map(|slice| {
                command(format!(
                    "systemctl set-property --runtime {slice} AllowedCPUs={hk}"
                ))
            })
            .collect()
    } else {
        vec![command(format!("rtlab tune apply --rt-cpus {rt}"))]
    };
    fixes.extend(
        pids.iter()
            .map(|pid| command(format!("taskset -apc {hk} {pid}"))),
    );
    let systemwide = if systemd {
        format!("CPUAffinity={hk} in /etc/systemd/system.conf (every service inherits it), or ")
    } else {
        String::new()
    };
    let cpuset = if v2 { "a cgroup v2" } else { "a cgroup v1" };
    fixes.push(Fix::Advice {
        text: format!(
            "to keep it across reboots: {systemwide}{cpuset} housekeeping cpuset holding everything but the RT workload; start the RT workload in its own cpuset or with taskset -c {rt}"
        ),
    });
    fixes
}

fn kernel_threads(ctx: &Ctx) -> Outcome {
    let (s, all) = match split_and_tasks(ctx) {
        Ok(v) => v,
        Err(o) => return o,
    };
    let kthreads: Vec<&Task> = all
        .iter()
        .filter(|t| t.is_kernel_thread() && !t.is_dead())
        .collect();
    let bound = kthreads
        .iter()
        .filter(|t| t.is_per_cpu_kernel_thread())
        .count();
    let offenders: Vec<&Task> = kthreads
        .iter()
        .copied()
        .filter(|t| !t.is_per_cpu_kernel_thread() && !t.comm.starts_with("irq/"))
        .filter(|t| touches_rt(t, &s))
        .collect();
    if offenders.is_empty() {
        return Outcome::pass(format!(
            "no unbound kernel thread may run on RT {} ({}, {} bound to single CPUs)",
            cpus_word(&s.rt),
            count(kthreads.len(), "kernel thread", "kernel threads"),
            bound
        ));
    }
    let workers: Vec<&Task> = offenders
        .iter()
        .copied()
        .filter(|t| t.is_workqueue_worker())
        .collect();
    let movable: Vec<&Task> = offenders
        .iter()
        .copied()
        .filter(|t| !t.is_workqueue_worker() && t.affinity_settable())
        .collect();
    let stuck: Vec<&Task> = offenders
        .iter()
        .copied()
        .filter(|t| !t.is_workqueue_worker() && !t.affinity_settable())
        .collect();
    let mut outcome = Outcome::problem(format!(
        "{} may run on RT {}: {}",
        count(
            offenders.len(),
            "unbound kernel thread",
            "unbound kernel threads"
        ),
        cpus_word(&s.rt),
        few(offenders.iter().map(|t| name(t)))
    ));
    outcome = allowed_evidence(outcome, &offenders);
    if !movable.is_empty() {
        outcome = move_kthreads(outcome, &movable, &s.hk);
    }
    if !workers.is_empty() {
        outcome = outcome.fix_advice(format!(
            "{} follow the workqueue cpumasks (see workqueue.unbound_cpumask, workqueue.named)",
            few(workers.iter().map(|t| name(t)))
        ));
    }
    boot_fixes(ctx, outcome, &stuck, &s)
}

/// The commands that move the `movable` kernel threads to the housekeeping CPUs `hk`:
/// kthreadd first, as kernel threads created later start from its mask.
fn move_kthreads(mut outcome: Outcome, movable: &[&Task], hk: &CpuSet) -> Outcome {
    let mut pids: Vec<u32> = movable.iter().map(|t| t.tid).collect();
    pids.sort_by_key(|&p| (p != 2, p));
    if pids.len() <= 32 {
        let list = pids
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(" ");
        outcome = outcome.fix_command(format!("for p in {list}; do taskset -pc {hk} $p; done"));
    } else {
        outcome = outcome.fix_command(format!(
            "taskset -pc {hk} 2 && for p in $(ps -eo pid=,flags= | awk 'and($2, 0x200000) {{print $1}}'); do taskset -pc {hk} $p 2>/dev/null; done"
        ));
    }
    outcome.fix_advice(
        "kernel threads started later inherit kthreadd's (pid 2) mask, so move kthreadd first; the writes last until reboot",
    )
}

/// What only boot parameters fix: the `stuck` kernel threads that refuse a new affinity,
/// and no `isolcpus=` with the `domain` flag.
fn boot_fixes(ctx: &Ctx, mut outcome: Outcome, stuck: &[&Task], s: &Split) -> Outcome {
    let (flags, _) = ctx
        .cmdline()
        .value("isolcpus")
        .map(isolcpus_split)
        .unwrap_or_default();
    let has_domain = ctx.cmdline().value("isolcpus").is_some()
        && (flags.is_empty() || flags.contains(&"domain"));
    if !stuck.is_empty() || !has_domain {
        if !stuck.is_empty() {
            outcome = outcome.fix_advice(format!(
                "{} refuse a new affinity (PF_NO_SETAFFINITY); only boot parameters keep them off",
                few(stuck.iter().map(|t| name(t)))
            ));
        }
        if !has_domain {
            // nohz_full= only where the kernel has NO_HZ_FULL (it would be ignored).
            let tick = if ctx.root().exists("/sys/devices/system/cpu/nohz_full") {
                format!(" nohz_full={}", s.rt)
            } else {
                String::new()
            };
            outcome = outcome.fix_boot(format!("isolcpus=managed_irq,domain,{}{tick}", s.rt));
        }
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::super::trees::{
        KTHREAD, KTHREAD_BOUND, OTHER, Tree, tuned, tuned_ctx, untuned, untuned_ctx,
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
        let f = finding(&USER_AFFINITY, &ctx);
        assert_eq!(f.status, Status::Pass, "{f:?}");
        assert_eq!(
            f.summary,
            "none of 5 user threads may run on RT CPUs 2-7 (1 real-time thread and 1 thread pinned inside the RT CPUs left out)"
        );
        let f = finding(&KERNEL_THREADS, &ctx);
        assert_eq!(f.status, Status::Pass, "{f:?}");
        assert_eq!(
            f.summary,
            "no unbound kernel thread may run on RT CPUs 2-7 (46 kernel threads, 42 bound to single CPUs)"
        );
    }

    #[test]
    fn untuned_box_fires_each() {
        let fake = untuned();
        let ctx = untuned_ctx(&fake);
        let f = finding(&USER_AFFINITY, &ctx);
        assert_eq!(f.status, Status::Warn, "{f:?}");
        assert_eq!(
            f.summary,
            "5 user threads in 4 processes may run on RT CPUs 2-7: systemd:1, irqbalance:900, sshd:950, rtapp:1000 (2 threads) (1 real-time thread and 0 threads pinned inside the RT CPUs left out)"
        );
        assert!(f.fix.contains(&Fix::Command {
            command: "systemctl set-property --runtime system.slice AllowedCPUs=0-1".into()
        }));
        assert!(f.fix.contains(&Fix::Command {
            command: "taskset -apc 0-1 1".into()
        }));
        assert!(
            f.evidence
                .iter()
                .any(|e| e.source == "/proc/1000/task/1002/status"
                    && e.value == "Cpus_allowed_list: 0-7 (rtapp-log)")
        );

        let f = finding(&KERNEL_THREADS, &ctx);
        assert_eq!(f.status, Status::Warn, "{f:?}");
        assert_eq!(
            f.summary,
            "5 unbound kernel threads may run on RT CPUs 2-7: kthreadd:2, rcu_preempt:12, kswapd0:40, khugepaged:41, kworker/u16:1:70"
        );
        assert!(f.fix.contains(&Fix::Command {
            command: "for p in 2 12 40 41; do taskset -pc 0-1 $p; done".into()
        }));
        assert!(f.fix.contains(&Fix::BootParam {
            param: "isolcpus=managed_irq,domain,2-7 nohz_full=2-7".into()
        }));
    }

    #[test]
    fn unmovable_kernel_threads_and_missing_inputs() {
        let fake = Tree(FakeRoot::new().cpus(4).cmdline("isolcpus=domain,2-3"))
            .proc(2, "kthreadd", KTHREAD, (OTHER, 0), "0-1")
            .proc(30, "rcuog/0", KTHREAD_BOUND, (OTHER, 0), "0-3")
            .proc(31, "cpuhp/3", KTHREAD_BOUND, (OTHER, 0), "3")
            .0;
        let ctx = Ctx::new(fake.root(), Options::default());
        let f = finding(&KERNEL_THREADS, &ctx);
        assert_eq!(f.status, Status::Warn, "{f:?}");
        assert_eq!(
            f.summary,
            "1 unbound kernel thread may run on RT CPUs 2-3: rcuog/0:30"
        );
        assert!(
            f.fix
                .iter()
                .any(|x| matches!(x, Fix::Advice { text } if text.contains("PF_NO_SETAFFINITY")))
        );
        assert!(!f.fix.iter().any(|x| matches!(x, Fix::BootParam { .. })));

        // No /proc: unknown, with the reason.
        let fake = FakeRoot::new().cpus(4).cmdline("isolcpus=2-3");
        let ctx = Ctx::new(fake.root(), Options::default());
        let f = finding(&USER_AFFINITY, &ctx);
        assert_eq!(f.status, Status::Unknown);
        assert!(f.summary.contains("thread list"), "{}", f.summary);
        assert_eq!(finding(&KERNEL_THREADS, &ctx).status, Status::Unknown);
    }
}
