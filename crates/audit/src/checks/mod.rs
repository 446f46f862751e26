//! The catalogue: every check, grouped by the area it looks at, one module per group.
//!
//! - [`kernel`]: the running kernel's preemption model.
//! - [`tracers`]: whether the kernel latency tracers rtlab drives can be used now.
//! - [`kconfig`]: the kernel build configuration, judged for the profile.
//! - [`cmdline`]: boot parameters and their consistency.
//! - [`placement`]: IRQs, irqbalance, workqueues, tasks, SMT siblings, cpuset partitions and
//!   priorities, for the real-time CPUs.
//! - [`power`]: cpufreq governors and frequencies, cpuidle states, P-state drivers.
//! - [`sched`]: RT throttling, timer migration, THP, KSM, swap, NUMA balancing, watchdogs.
//! - [`time`]: clock sources.
//! - [`log`]: the kernel log, classified.

use crate::check::Check;

mod cmdline;
mod kconfig;
mod kernel;
mod log;
pub(crate) mod placement;
mod power;
mod sched;
mod time;
mod tracers;

/// Every check, in report order.
pub fn catalogue() -> Vec<&'static Check> {
    [
        kernel::CHECKS,
        tracers::CHECKS,
        kconfig::CHECKS,
        cmdline::CHECKS,
        placement::CHECKS,
        power::CHECKS,
        sched::CHECKS,
        time::CHECKS,
        log::CHECKS,
    ]
    .into_iter()
    .flatten()
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_unique_and_well_formed() {
        let mut seen = HashSet::new();
        for c in catalogue() {
            assert!(seen.insert(c.id), "duplicate id {}", c.id);
            let (group, name) = c.id.split_once('.').expect("id is group.name");
            assert!(!group.is_empty() && !name.is_empty(), "{}", c.id);
            assert!(
                c.id.bytes().all(|b| b.is_ascii_lowercase()
                    || b.is_ascii_digit()
                    || b == b'_'
                    || b == b'.'),
                "{}",
                c.id
            );
            assert!(!c.title.is_empty() && !c.why.is_empty(), "{}", c.id);
            assert!(
                !c.why.ends_with('.'),
                "{}: why is one line without a full stop",
                c.id
            );
        }
    }
}
