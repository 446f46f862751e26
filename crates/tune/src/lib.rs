//! rtlab's tuning room: what to change so that the RT CPUs are left to real-time work.
//!
//! [`plan`] reads the machine (through a [`sys::Root`], so captured trees plan too) and returns
//! a [`model::tune::TunePlan`]: the boot parameters to add and how to install them ([`boot`]),
//! and the runtime changes with their current and new values — IRQ affinity, the default IRQ
//! affinity, unbound workqueues, the cpufreq governor, idle states, timer migration,
//! transparent huge pages, RT throttling and watchdogs (`strict`), cgroup cpuset partitions.
//! [`apply`] carries a plan out with a [`journal`] of every original written to disk before
//! each change, [`revert`] takes it back from the journal (after a crash too), [`status`]
//! compares the machine with it.

pub mod apply;
pub mod boot;
pub mod journal;
pub mod plan;

pub use apply::{Outcome, Standing, apply, revert, rt_group, status};
pub use plan::{PlanError, Request, plan};
