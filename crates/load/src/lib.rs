//! rtlab's built-in loads: generators that stress CPUs, timers, the scheduler, memory, storage
//! and the network stack while a measurement runs, and say what they achieved.
//!
//! Each generator is a value behind [`Generator`] (start, achieved, describe, stop) in
//! [`generators`]; [`LoadSet`] runs a whole [`LoadSpec`](model::load::LoadSpec) together,
//! opens the reporting window, and turns the counters into a
//! [`LoadReport`](model::load::LoadReport) with the busy share `/proc/stat` saw per CPU.
//! Nothing outlives the load: threads end with the process, child processes carry a
//! parent-death signal, and a [`guardian`] process removes temporary files and cgroups and
//! kills command process groups if rtlab itself is killed.
//!
//! This crate runs loads; it does not parse the command line or measure latency, and it
//! reaches the kernel only through `rtlab-sys`.

pub mod children;
pub mod generator;
pub mod generators;
pub mod guardian;
mod set;
pub mod worker;

pub use generator::{Counters, Generator, LoadError, StartContext};
pub use set::{LoadOptions, LoadSet, placements};
