//! rtlab's only door to the kernel.
//!
//! Everything rtlab reads or writes in procfs, sysfs, tracefs, cgroupfs and devices goes through
//! a [`Root`], so the same code runs against the live host (`Root::host()`) or a fixture tree in
//! tests (`Root::at(dir)`). Parsers of kernel text are pure functions over `&str` in
//! [`parse`]. Syscalls (scheduling, affinity, memory locking, clocks, signals) are thin, typed
//! wrappers here and nowhere else.
//!
//! This crate decides nothing: it reports what the kernel says ([`Error`] carries the path and,
//! where there is one, the fix); the rooms above decide what a missing file means.

pub mod cgroup;
pub mod clock;
pub mod container;
pub mod counter;
pub mod cpu;
pub mod cpusets;
pub mod dl_bandwidth;
pub mod futex;
pub mod host;
pub mod hwlat;
pub mod irq;
mod kernel_tracer;
pub mod kmsg;
pub mod launch;
pub mod mapped;
pub mod mem;
pub mod mounts;
pub mod osnoise;
pub mod parse;
pub mod partition;
pub mod pmqos;
pub mod privilege;
pub mod process;
pub mod random;
pub mod raw_trace;
mod root;
pub mod sched;
pub mod service;
pub mod signals;
pub mod tasks;
#[cfg(test)]
mod test_tree;
pub mod thread_stats;
pub mod timerlat;
pub mod trace_instance;
pub mod tracefs;

pub use root::{EntryKind, Error, KEEP_MARKER, Result, Root};
