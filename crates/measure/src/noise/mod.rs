//! `rtlab noise`: operating-system noise measured by polling, on any kernel. One thread per
//! CPU reads the CPU's counter back to back ([`detector`]); every gap is a sample, and a gap at
//! or above the threshold is an interruption. With tracefs, a private instance records the
//! kernel's ordinary IRQ, softirq, NMI and scheduler events meanwhile ([`tracing`]), and each
//! interruption gets its cause: the rtla osnoise columns, without the osnoise tracer.
//!
//! This module owns the noise run's parameters ([`NoiseConfig`], validated) and the choice of
//! engine ([`run_noise`]): rtlab's detector (`user`) or the kernel's osnoise tracer
//! (`kernel`), each an engine of the measuring session that `measure` runs too (signals,
//! the common start, progress, checkpoints, the orderly stop, the machine left as it was),
//! each giving an `rtlab.noise/1` document.

mod config;
mod detector;
mod figures;
mod kernel;
mod tracing;
mod user;

use model::measure::MeasureRun;

use crate::env::{Environment, RunError};
use crate::session::{self, Observer};

pub use config::{
    MAX_PERIOD, MAX_THRESHOLD, MIN_RUNTIME, MIN_THRESHOLD, NoiseConfig, NoiseConfigError,
    NoiseEngine,
};

/// Measures noise according to `config` (a real run only: the detector has no scripted
/// clock) and returns an `rtlab.noise/1` document.
pub fn run_noise(
    config: &NoiseConfig,
    env: &Environment,
    observer: &mut dyn Observer,
) -> Result<MeasureRun, RunError> {
    let tracer = sys::osnoise::available(&env.root);
    match (config.engine, tracer) {
        (NoiseEngine::Kernel, None) => Err(RunError::Setup(
            "--engine kernel: this kernel has no osnoise tracer (CONFIG_OSNOISE_TRACER) or tracefs is not mounted; --engine user measures without it".to_string(),
        )),
        (NoiseEngine::Kernel, Some(fs)) => {
            session::run(kernel::KernelNoise::new(config, env, fs), observer)
        }
        // Auto takes the tracer where it exists, unless the detector's policy was asked
        // for: the tracer's threads are the kernel's.
        (NoiseEngine::Auto, Some(fs)) if config.policy == model::measure::Policy::Other => {
            session::run(kernel::KernelNoise::new(config, env, fs), observer)
        }
        _ => run_noise_windows(config, env, observer).map(|(run, _)| run),
    }
}

/// Per CPU, the interruptions nothing in the kernel's trace explains (on the trace's
/// `mono_raw` clock); `None` when the run was not attributed.
pub type HwWindows = Option<Vec<(u32, Vec<trace::noise::Window>)>>;

/// The user-space detector (whatever `config.engine` says), with the interruptions no
/// kernel event explains: what `rtlab hwlat`'s user-space engine reports.
pub fn run_noise_windows(
    config: &NoiseConfig,
    env: &Environment,
    observer: &mut dyn Observer,
) -> Result<(MeasureRun, HwWindows), RunError> {
    session::run(user::UserNoise::new(config, env)?, observer)
}
