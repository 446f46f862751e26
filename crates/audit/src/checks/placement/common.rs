//! What the placement checks share: the split of online CPUs into real-time and
//! housekeeping ones, the IRQ table and the thread list read once per audit, and the words
//! their summaries are built with. Below every placement check, so none depends on the
//! group's catalogue.

use std::fmt::Display;
use std::rc::Rc;

use model::CpuSet;
use sys::irq::IrqTable;
use sys::tasks::Task;

use crate::context::Ctx;
use crate::outcome::Outcome;

/// How many items a summary or an evidence value names before "... and N more".
pub(super) const FEW: usize = 8;

/// The RT CPUs and the housekeeping CPUs (the other online ones).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Split {
    pub(super) rt: CpuSet,
    pub(super) hk: CpuSet,
}

/// The split, or the outcome a placement check returns without one: `unknown` when no CPU is
/// set apart, or when no online CPU is left for housekeeping (`cpu.isolation` reports both).
pub(super) fn split(ctx: &Ctx) -> Result<Split, Outcome> {
    let rt = ctx.rt_cpus_or_unknown()?.clone();
    let hk = ctx.online().difference(&rt);
    if hk.is_empty() {
        return Err(Outcome::unknown(format!(
            "every online CPU ({}) is an RT CPU, so there is no housekeeping CPU to move work to (see cpu.isolation)",
            ctx.online()
        )));
    }
    Ok(Split { rt, hk })
}

/// The IRQ table, read once per audit.
struct IrqMemo(Result<Rc<IrqTable>, String>);

/// The IRQ table, or the `unknown` outcome of a check that cannot read it.
pub(super) fn irq_table(ctx: &Ctx) -> Result<Rc<IrqTable>, Outcome> {
    let memo = ctx.memo(|ctx| {
        IrqMemo(
            sys::irq::irq_table(ctx.root())
                .map(Rc::new)
                .map_err(|e| e.to_string()),
        )
    });
    match &memo.0 {
        Ok(table) => Ok(Rc::clone(table)),
        Err(e) => Err(no_table(e)),
    }
}

/// Every thread, read once per audit.
struct TaskMemo(Result<Rc<Vec<Task>>, String>);

/// Every thread, or the `unknown` outcome of a check that cannot read the list.
pub(super) fn task_list(ctx: &Ctx) -> Result<Rc<Vec<Task>>, Outcome> {
    let memo = ctx.memo(|ctx| {
        TaskMemo(match sys::tasks::all_threads(ctx.root()) {
            Ok(tasks) if tasks.is_empty() => Err("no process directories under /proc".to_string()),
            Ok(tasks) => Ok(Rc::new(tasks)),
            Err(e) => Err(e.to_string()),
        })
    });
    match &memo.0 {
        Ok(tasks) => Ok(Rc::clone(tasks)),
        Err(e) => Err(no_threads(e)),
    }
}

/// The split and every thread, or the outcome of a check that lacks either.
pub(super) fn split_and_tasks(ctx: &Ctx) -> Result<(Split, Rc<Vec<Task>>), Outcome> {
    Ok((split(ctx)?, task_list(ctx)?))
}

/// The split and the IRQ table, or the outcome of a check that lacks either.
pub(super) fn split_and_irqs(ctx: &Ctx) -> Result<(Split, Rc<IrqTable>), Outcome> {
    Ok((split(ctx)?, irq_table(ctx)?))
}

/// The outcome of a check that cannot read the IRQ table.
pub(super) fn no_table(err: &str) -> Outcome {
    Outcome::unknown(format!(
        "the IRQ table cannot be read ({err}); /proc/irq lists every IRQ and its affinity"
    ))
}

/// The outcome of a check that cannot read the thread list.
pub(super) fn no_threads(err: &str) -> Outcome {
    Outcome::unknown(format!(
        "the thread list cannot be read ({err}); /proc/PID/task/TID lists every thread"
    ))
}

/// Whether `task` is this audit itself (on the live machine), which no check should report.
pub(super) fn is_self(ctx: &Ctx, task: &Task) -> bool {
    ctx.root().is_host() && task.pid == std::process::id()
}

/// `a, b, c` for at most [`FEW`] items, then `... and N more`.
pub(super) fn few<T: Display>(items: impl IntoIterator<Item = T>) -> String {
    let items: Vec<String> = items.into_iter().map(|i| i.to_string()).collect();
    let mut out = items
        .iter()
        .take(FEW)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > FEW {
        out.push_str(&format!(" ... and {} more", items.len() - FEW));
    }
    out
}

/// `CPU 3` or `CPUs 2-7`.
pub(super) fn cpus_word(cpus: &CpuSet) -> String {
    if cpus.len() == 1 {
        format!("CPU {cpus}")
    } else {
        format!("CPUs {cpus}")
    }
}

/// `1 thread` / `3 threads`.
pub(super) fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Options;

    #[test]
    fn lists_are_cut_after_a_few() {
        assert_eq!(few([1, 2, 3]), "1, 2, 3");
        assert_eq!(few(0..10), "0, 1, 2, 3, 4, 5, 6, 7 ... and 2 more");
        assert_eq!(few(Vec::<u32>::new()), "");
        assert_eq!(cpus_word(&CpuSet::from_cpus([3])), "CPU 3");
        assert_eq!(cpus_word(&CpuSet::parse_list("2-7").unwrap()), "CPUs 2-7");
        assert_eq!(count(1, "IRQ", "IRQs"), "1 IRQ");
        assert_eq!(count(0, "IRQ", "IRQs"), "0 IRQs");
    }

    #[test]
    fn the_split_needs_rt_and_housekeeping_cpus() {
        let fake = testkit::FakeRoot::new().cpus(4).cmdline("quiet");
        let ctx = Ctx::new(fake.root(), Options::default());
        assert!(!split(&ctx).unwrap_err().passed());
        let ctx = Ctx::new(
            fake.root(),
            Options {
                rt_cpus: Some(CpuSet::parse_list("0-3").unwrap()),
                ..Options::default()
            },
        );
        let err = split(&ctx).unwrap_err();
        assert!(err.summary().contains("no housekeeping CPU"), "{err:?}");
        let ctx = Ctx::new(
            fake.root(),
            Options {
                rt_cpus: Some(CpuSet::parse_list("2-3").unwrap()),
                ..Options::default()
            },
        );
        let s = split(&ctx).unwrap();
        assert_eq!(
            (s.rt.to_string(), s.hk.to_string()),
            ("2-3".into(), "0-1".into())
        );
    }
}
