//! rtlab's shared vocabulary: pure data types and the pure functions that belong to them.
//!
//! This crate owns time values ([`Nanos`] and the unit-carrying duration syntax), CPU sets
//! ([`CpuSet`], [`CpuSpec`]), the latency histogram scheme ([`histogram`]), statistics derived
//! from it ([`stats`]), the serialized result of a measurement ([`measure`]), whose JSON
//! form is the versioned schema `rtlab.measure/1`, and of an audit ([`audit`], `rtlab.audit/2`),
//! of a noise run ([`noise`], `rtlab.noise/1`), of a schedulability check ([`sched`], `rtlab.sched/1`) and of a hardware-latency run ([`hwlat`],
//! `rtlab.hwlat/1`), whether a run passes ([`gate`]: the one budget rule), the bounds on everything that comes from outside ([`limits`]), and which rtlab binary wrote
//! a result ([`build`], the one fact set process-wide).
//!
//! It must not touch the kernel, the clock, the file system or the terminal: every other room
//! depends on it, and it depends on no room.

pub mod audit;
pub mod build;
pub mod campaign;
pub mod campaign_state;
pub mod cpuset;
pub mod evaluation;
pub mod explain;
pub mod gate;
pub mod histogram;
pub mod host;
pub mod hwlat;
pub mod imported;
pub mod inspect;
pub mod irq_rule;
pub mod limits;
pub mod load;
pub mod measure;
pub mod monitor;
pub mod nanos;
pub mod noise;
pub mod per_cpu;
pub mod pi;
pub mod sched;
pub mod stats;
pub mod timerlat;
pub mod toml_error;
pub mod tune;
pub mod workload;
pub mod worst;

pub use cpuset::{CpuSet, CpuSpec};
pub use histogram::Histogram;
pub use nanos::Nanos;
