//! Runtime placement for the real-time CPUs: whether CPUs are set apart at all, and then
//! whether IRQs, irqbalance, workqueues, user and kernel threads stay off them; SMT siblings,
//! cpuset partitions, and the priorities of RT tasks, IRQ threads and softirq threads.
//!
//! The RT CPUs come from [`Ctx::rt`]; every other online CPU is a housekeeping CPU, and the
//! fixes name those lists. The IRQ table and the thread list are read once per audit
//! ([`common`]) and shared by the checks here.
//!
//! - [`cpu`]: `cpu.isolation`, `cpuset.partitions`, `cpu.smt_siblings`.
//! - [`irq`]: `irq.affinity`, `irq.effective_affinity`, `irq.default_affinity`.
//! - [`irqbalance`]: `irq.irqbalance`, the daemon and the CPUs it leaves alone.
//! - [`workqueue`]: `workqueue.unbound_cpumask`, `workqueue.named`.
//! - [`tasks`]: `tasks.user_affinity`, `tasks.kernel_threads`.
//! - [`prio`]: `irq.threads`, `sched_prio.rt99`, `sched_prio.softirq_threads`.

use crate::check::Check;

mod common;
mod cpu;
pub(crate) mod irq;
pub(crate) mod irqbalance;
mod prio;
mod tasks;
#[cfg(test)]
mod trees;
mod workqueue;

/// The checks of this group.
pub(crate) const CHECKS: &[Check] = &[
    cpu::ISOLATION,
    cpu::PARTITIONS,
    cpu::SMT_SIBLINGS,
    irq::AFFINITY,
    irq::effective::EFFECTIVE_AFFINITY,
    irq::DEFAULT_AFFINITY,
    irqbalance::IRQBALANCE,
    workqueue::UNBOUND_CPUMASK,
    workqueue::NAMED,
    tasks::USER_AFFINITY,
    tasks::KERNEL_THREADS,
    prio::IRQ_THREADS,
    prio::RT99,
    prio::SOFTIRQ_THREADS,
];

#[cfg(test)]
mod tests {
    use super::common::{irq_table, task_list};
    use super::*;
    use crate::context::{Ctx, Options};
    use model::CpuSet;

    /// This machine: every placement check runs, none panics, and the ones that read /proc
    /// find the threads and IRQs; quick enough for the audit's 200 ms budget.
    #[test]
    fn live_host() {
        let root = sys::Root::host();
        let online = sys::cpu::online(&root).unwrap_or_default();
        let Some(last) = online.last().filter(|_| online.len() > 1) else {
            return testkit::live::skip("one CPU here: nothing to split");
        };
        let ctx = Ctx::new(
            root,
            Options {
                rt_cpus: Some(CpuSet::from_cpus([last])),
                ..Options::default()
            },
        );
        let started = std::time::Instant::now();
        let _ = ctx.host();
        eprintln!("host description read in {:?}", started.elapsed());
        for check in CHECKS {
            let one = std::time::Instant::now();
            let finding = check.finding((check.run)(&ctx));
            eprintln!(
                "{} {:?} in {:?}: {}",
                finding.id,
                finding.status,
                one.elapsed(),
                finding.summary
            );
            if check.id.starts_with("tasks.") || check.id.starts_with("sched_prio.") {
                assert_ne!(finding.status, model::audit::Status::Unknown, "{finding:?}");
            }
        }
        eprintln!("placement checks took {:?}", started.elapsed());
        let tasks = task_list(&ctx).unwrap();
        assert!(tasks.len() > 10);
        if let Some(kthreadd) = tasks.iter().find(|t| t.pid == 2) {
            assert!(kthreadd.is_kernel_thread() && kthreadd.comm == "kthreadd");
        }
        if let Ok(table) = irq_table(&ctx) {
            assert!(
                table
                    .irqs
                    .iter()
                    .all(|i| i.affinity.is_some() || !i.counts.is_empty())
            );
        }
    }
}
