//! IRQ rules in a plan (talks 002–004: the NIC's IRQ thread above the application, its IRQ
//! pinned next to it): the first rule whose pattern matches an IRQ decides where the IRQ runs
//! (instead of the housekeeping CPUs) and how its handler threads (`irq/<N>-<name>`, and the
//! `irq/<N>-s-<name>` secondary ones) are scheduled.
//!
//! Reading only: the changes are [`Change`]s like the others, carried out by `apply`.

use model::tune::{Action, Change, IrqRule, ThreadSched};
use model::{CpuSet, measure::Policy};
use sys::Root;
use sys::irq::Irq;
use sys::tasks::Task;

/// The rule that decides for `irq`: the first that matches.
pub(crate) fn rule_for<'r>(rules: &'r [IrqRule], irq: &Irq) -> Option<&'r IrqRule> {
    let number = irq.number.to_string();
    rules.iter().find(|r| r.matches(&number, &irq.actions))
}

/// A rule naming a CPU that is not online.
pub(crate) fn check(rules: &[IrqRule], online: &CpuSet) -> Result<(), String> {
    for r in rules {
        if let Some(cpu) = r
            .cpus
            .as_ref()
            .and_then(|c| c.iter().find(|c| !online.contains(*c)))
        {
            return Err(format!(
                "--irq-rule {r}: CPU {cpu} is not online (online: {online}); give online CPUs"
            ));
        }
    }
    Ok(())
}

/// The IRQ a handler thread serves, from its name: `irq/24-eth0` and `irq/24-s-eth0` → 24.
pub(crate) fn thread_irq(comm: &str) -> Option<u32> {
    let rest = comm.strip_prefix("irq/")?;
    let digits: &str = &rest[..rest.find(|c: char| !c.is_ascii_digit())?];
    rest[digits.len()..]
        .starts_with('-')
        .then(|| digits.parse().ok())
        .flatten()
}

/// How `task` is scheduled now.
pub(crate) fn sched_of(task: &Task) -> Option<ThreadSched> {
    let policy = task.policy()?;
    let priority = if policy.takes_priority() {
        u8::try_from(task.rt_priority).ok()?
    } else {
        0
    };
    Some(ThreadSched { policy, priority })
}

/// Whether `now` already is what `want` asks (for other, the nice value does not matter).
fn same(now: &ThreadSched, want: &ThreadSched) -> bool {
    now.policy == want.policy && (!want.policy.takes_priority() || now.priority == want.priority)
}

/// The policy changes the rules ask of the IRQ threads, and notes on rules that found nothing
/// to act on.
pub(crate) fn thread_changes(
    root: &Root,
    irqs: &[Irq],
    rules: &[IrqRule],
) -> (Vec<Change>, Vec<String>) {
    let mut changes = Vec::new();
    let mut notes = Vec::new();
    if rules.is_empty() {
        return (changes, notes);
    }
    let threads: Vec<Task> = match sys::tasks::all_threads(root) {
        Ok(t) => t
            .into_iter()
            .filter(|t| t.is_kernel_thread() && thread_irq(&t.comm).is_some())
            .collect(),
        Err(e) => {
            notes.push(format!(
                "IRQ threads: {e}; the rules' policies are not planned"
            ));
            return (changes, notes);
        }
    };
    let mut unthreaded = Vec::new();
    for (i, rule) in rules.iter().enumerate() {
        let hits: Vec<&Irq> = irqs
            .iter()
            .filter(|irq| rule_for(rules, irq).is_some_and(|r| std::ptr::eq(r, &rules[i])))
            .collect();
        if hits.is_empty() {
            notes.push(format!(
                "--irq-rule {rule} matches no IRQ here (or an earlier rule took them); `rtlab \
                 tune irqd` applies it to IRQs that appear later"
            ));
            continue;
        }
        let Some(want) = rule.sched else { continue };
        for irq in hits {
            let mine: Vec<&Task> = threads
                .iter()
                .filter(|t| thread_irq(&t.comm) == Some(irq.number))
                .collect();
            if mine.is_empty() {
                unthreaded.push(irq.label());
            }
            for t in mine {
                let now = sched_of(t);
                if now.as_ref().is_some_and(|n| same(n, &want)) {
                    continue;
                }
                changes.push(Change {
                    group: "irq".to_string(),
                    action: Action::SetPolicy,
                    path: format!("/proc/{}", t.tid),
                    current: now.map(|n| n.to_string()),
                    new: Some(want.to_string()),
                    reason: format!("IRQ thread {}: rule {rule}", t.comm),
                });
            }
        }
    }
    if !unthreaded.is_empty() {
        notes.push(format!(
            "IRQs a rule gives a policy but that have no handler thread (their handler runs in \
             hard interrupt context): {}; boot with `threadirqs` or run a PREEMPT_RT kernel to \
             thread them",
            unthreaded.join(", ")
        ));
    }
    (changes, notes)
}

/// Reads the journal's `SetPolicy` value back: `FIFO 80`, `OTHER`, ...
pub(crate) fn parse_sched(text: &str) -> Option<ThreadSched> {
    let mut words = text.split_whitespace();
    let policy = match words.next()?.to_ascii_lowercase().as_str() {
        "fifo" => Policy::Fifo,
        "rr" => Policy::Rr,
        "other" => Policy::Other,
        "batch" => Policy::Batch,
        "idle" => Policy::Idle,
        _ => return None,
    };
    let priority = if policy.takes_priority() {
        words.next()?.parse().ok()?
    } else {
        0
    };
    Some(ThreadSched { policy, priority })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_irq_of_a_thread() {
        assert_eq!(thread_irq("irq/24-eth0"), Some(24));
        assert_eq!(thread_irq("irq/129-s-iwlwifi"), Some(129));
        assert_eq!(thread_irq("irq/work"), None);
        assert_eq!(thread_irq("irq/"), None);
        assert_eq!(thread_irq("kworker/1:0"), None);
    }

    #[test]
    fn reads_back_what_it_wrote() {
        for s in ["FIFO 80", "RR 1", "OTHER", "BATCH", "IDLE"] {
            assert_eq!(parse_sched(s).unwrap().to_string(), s);
        }
        assert_eq!(parse_sched("FIFO"), None);
        assert_eq!(parse_sched("DEADLINE"), None);
    }
}
