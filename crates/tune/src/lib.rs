//! rtlab's tuning room: what to change so that the RT CPUs are left to real-time work.
//!
//! [`plan`] reads the machine (through a [`sys::Root`], so captured trees plan too) and returns
//! a [`model::tune::TunePlan`]: the boot parameters to add and how to install them ([`boot`]),
//! and the runtime changes with their current and new values — IRQ affinity, the default IRQ
//! affinity, unbound workqueues, the cpufreq governor, idle states, timer migration,
//! transparent huge pages, RT throttling and watchdogs (`strict`), cgroup cpuset partitions.
//! [`apply`] carries a plan out with a [`journal`] of every original written to disk before
//! each change, [`revert`] takes it back from the journal (after a crash too), [`status`]
//! compares the machine with it. Their report types ([`Outcome`], [`Standing`]) sit below
//! them and below the single-thread steps they share.

pub mod apply;
pub mod boot;
pub mod irqd;
pub mod journal;
pub mod launch;
mod outcome;
pub mod plan;
mod revert;
mod rules;
mod status;
mod tasks;
mod threads;

pub use apply::{apply, apply_changes};
pub use irqd::{Irqd, Pass};
pub use outcome::{Outcome, Standing};
pub use plan::{PlanError, Request, Siblings, housekeeping, plan, plan_irqs};
pub use revert::revert;
pub use status::{rt_group, status};
