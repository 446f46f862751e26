//! rtlab's latency engine: how late does a periodic real-time thread wake up, on every CPU?
//!
//! One thread per measured CPU sleeps to absolute deadlines on CLOCK_MONOTONIC and records
//! `wake-up time − deadline` ([`sampler`]) into lock-free per-CPU state ([`cell`]) that the
//! main thread reads while the run goes on (live view, crash-safe checkpoints). A run is a
//! measuring session (`session`: prepare, start on every CPU, watch, stop, result, and the
//! machine left as it was), written once for every engine; [`run`] is the latency engine's
//! part of it. [`Config`] holds the validated parameters; [`Clock`] is the seam that lets
//! tests replace time with a script. With `--trace`, [`tracing`] records a private kernel
//! trace during the run and explains the worst spikes from it.
//!
//! With `--workload`, each thread is busy for the runtime of its own CPU time after every
//! wake-up ([`workload`]) and the sample is the response time, each deadline miss split by cause.
//!
//! [`noise`] measures in the same session with other engines: a thread per CPU polls the
//! CPU's counter and every gap is a sample (OS noise, `rtlab noise`), attributed from a
//! private trace; or the kernel's osnoise tracer measures.
//!
//! This room returns data and never prints: the CLI decides where output goes, through the
//! [`Observer`] it passes in.

pub mod capture;
pub mod cell;
pub mod clock;
pub mod config;
mod env;
pub mod hwlat;
pub mod noise;
pub mod pi;
pub mod preflight;
mod result;
pub mod run;
mod sampler;
mod seqlock;
mod session;
mod threads;
pub mod timerlat;
pub mod tracing;
pub mod workload;

pub use clock::{Clock, FakeClock, FakeScript, RealClock};
pub use config::{Config, ConfigError, Request, RunLength, TraceOptions, Workload};
pub use run::{
    ClockChoice, Environment, NoObserver, Observer, RunError, check_privileges, not_started, run,
};
pub use tracing::{Recorded, Recording};
