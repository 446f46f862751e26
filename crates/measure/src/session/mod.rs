//! One measuring session, whatever measures: prepare the machine, start measuring on every CPU,
//! watch (signals, progress, checkpoints), stop in order, build the result. The order is
//! written once, here ([`run`]); what differs between engines — the latency sampler, the noise
//! detector, the kernel's osnoise, timerlat and hwlat tracers — is behind [`Engine`].
//!
//! Order of work: the engine is made (it describes the host and checks privileges: nothing is
//! changed yet); the termination signals are blocked, so only this thread sees them; the
//! engine prepares the machine (a DMA latency request held, a trace started: each a guard the
//! engine owns, released when it is dropped, on every path); rtlab's main thread is pinned and
//! memory locked; the engine starts measuring on every CPU (a thread per CPU set up and waiting
//! at a barrier, see [`crew`]; nothing yet for a kernel tracer); then the common start (the
//! threads released, or the tracer armed) and the observer hears `started`. The main thread
//! then wakes every tick to take a signal, let the engine look (drain logs, notice the end),
//! report progress about once a second and write checkpoints. At the end the engine is told to
//! stop, the observer hears `finished`, and the engine waits for the measurement to end, leaves
//! the machine as it was and builds the result.
//!
//! Two kinds of engine plug in. One that measures from user space (the sampler, the noise
//! detector) starts a [`crew::Crew`] in `start`, releases it in `go`, asks it whether every
//! thread is done in `ended`, and joins it in `finish`; its [`crew::Worker`] is how one CPU is
//! prepared and what its thread measures. One where a kernel tracer measures (osnoise; the
//! timerlat tracer next, whose per-CPU wake-up latencies come through tracefs) starts nothing,
//! arms the tracer in `go`, ends with `--duration` (reading the tracer's output as it goes in
//! `ended` where it has a live view and checkpoints to give), and stops, reads and restores
//! the tracer in `finish`; the tracer's guard restores it when dropped on any other path.
//!
//! This module never touches what is measured: the hot loops are the engines' own, generic
//! (one copy per counter or clock), and run in their threads or in the kernel.

pub(crate) mod crew;

use std::time::{Duration, Instant};

use model::CpuSet;
use model::measure::{MeasureRun, Progress, RunStatus};
use sys::signals::TerminationSignals;

use crate::env::RunError;
use crate::preflight;

/// Receives what happens during a run of an engine whose documents are `D` (a
/// [`MeasureRun`] for latency, noise and timerlat; a hardware-latency run for hwlat). Every
/// method has a default that ignores it.
pub trait Observer<D = MeasureRun> {
    /// Once, when the measurement has started; `run` is an empty document.
    fn started(&mut self, _run: &D) {}
    /// Whether [`Observer::progress`] is wanted (computing it reads every histogram).
    fn wants_progress(&self) -> bool {
        true
    }
    /// About once a second.
    fn progress(&mut self, _progress: &Progress) {}
    /// Every checkpoint interval, with the full document so far (status `running`).
    fn checkpoint(&mut self, _run: &D) {}
    /// Once, as soon as the measurement has been told to stop (the measured time is over, or
    /// the run was interrupted), before it is joined and the result is built.
    fn finished(&mut self) {}
}

/// An observer that ignores everything.
pub struct NoObserver;
impl<D> Observer<D> for NoObserver {
    fn wants_progress(&self) -> bool {
        false
    }
}

/// How a session uses rtlab's own main thread while the engine measures.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct MainThread {
    /// The CPUs it is pinned to (`--main-cpu`, or the engine's choice); `None` leaves it.
    pub cpus: Option<CpuSet>,
    /// Lock the process's memory (mlockall) before the measurement starts.
    pub mlock: bool,
}

/// The parts of a measurement that differ between engines. The session calls them in this
/// order: `prepare`, `start`, `go`, then per tick `ended` (and `progress`, `checkpoint` when
/// due), then `stop` and `finish`. An engine dropped after an error releases what it holds.
pub(crate) trait Engine {
    /// What the run returns.
    type Output;
    /// The document the observer is given at the start and at each checkpoint.
    type Document;

    /// Changes the machine for the run (signals are blocked already): what it holds is kept
    /// in the engine and released when the engine is dropped. Says how the main thread runs.
    fn prepare(&mut self) -> Result<MainThread, RunError>;
    /// Starts measuring up to the common start: a thread per CPU set up and waiting
    /// ([`crew::Crew`]); nothing for a kernel tracer.
    fn start(&mut self) -> Result<(), RunError>;
    /// The common start (threads released, or a tracer armed); the empty document the
    /// observer is given.
    fn go(&mut self) -> Result<Self::Document, RunError>;
    /// How long the main thread waits for a signal before it looks again.
    fn tick(&self) -> Duration;
    /// Looks at the measurement once a tick (a log drained); true once it has ended by itself.
    fn ended(&mut self) -> bool;
    /// The live view, where the engine has one (none by default: a kernel tracer's figures
    /// are read at the end).
    fn progress(&self) -> Option<Progress> {
        None
    }
    /// How often the engine gives a checkpoint; `None` (the default) for never.
    fn checkpoint_every(&self) -> Option<Duration> {
        None
    }
    /// The document so far (status `running`).
    fn checkpoint(&self) -> Self::Document;
    /// Tells the measurement to stop; quick (the observer hears `finished` right after).
    fn stop(&mut self);
    /// Waits for the measurement to end, leaves the machine as it was, builds the result.
    fn finish(self, status: RunStatus) -> Result<Self::Output, RunError>;
}

/// A main-thread tick (how often it looks for a signal, at most).
pub(crate) const TICK: Duration = Duration::from_millis(100);

/// How often progress and the first checkpoint come.
#[derive(Clone, Copy, Debug)]
struct Pace {
    progress_every: Duration,
    /// When the first checkpoint is written: soon, so a run killed early still leaves
    /// figures behind (later ones follow the checkpoint interval).
    first_checkpoint: Duration,
}

const PACE: Pace = Pace {
    progress_every: Duration::from_secs(1),
    first_checkpoint: Duration::from_secs(1),
};

/// Runs `engine` through the session and returns its result: status `complete`, or
/// `interrupted` when a termination signal came. The machine is left as it was whatever
/// happens (the engine's guards are dropped on every path).
pub(crate) fn run<E: Engine>(
    engine: E,
    observer: &mut dyn Observer<E::Document>,
) -> Result<E::Output, RunError> {
    let signals = TerminationSignals::block().map_err(|source| RunError::Kernel {
        what: "blocking SIGINT/SIGTERM for an orderly stop".to_string(),
        source,
    })?;
    drive(
        engine,
        observer,
        &mut |tick| signals.wait(tick).is_some(),
        PACE,
    )
}

/// The session after the signals are blocked; `signal(tick)` waits up to `tick` for one.
fn drive<E: Engine>(
    mut engine: E,
    observer: &mut dyn Observer<E::Document>,
    signal: &mut dyn FnMut(Duration) -> bool,
    pace: Pace,
) -> Result<E::Output, RunError> {
    let main = engine.prepare()?;
    pin_and_lock(&main)?;
    engine.start()?;
    let empty = engine.go()?;
    observer.started(&empty);
    let status = watch(&mut engine, observer, signal, pace);
    engine.stop();
    observer.finished();
    engine.finish(status)
}

/// Waits for the end (the engine's, or a signal's), reporting progress and writing
/// checkpoints meanwhile; `interrupted` on a signal, else `complete`.
fn watch<E: Engine>(
    engine: &mut E,
    observer: &mut dyn Observer<E::Document>,
    signal: &mut dyn FnMut(Duration) -> bool,
    pace: Pace,
) -> RunStatus {
    let checkpoint_every = engine.checkpoint_every();
    let wants_progress = observer.wants_progress();
    let mut last_progress = Instant::now();
    let mut next_checkpoint =
        checkpoint_every.map(|every| Instant::now() + every.min(pace.first_checkpoint));
    loop {
        if signal(engine.tick()) {
            return RunStatus::Interrupted;
        }
        if engine.ended() {
            return RunStatus::Complete;
        }
        if wants_progress && last_progress.elapsed() >= pace.progress_every {
            last_progress = Instant::now();
            if let Some(progress) = engine.progress() {
                observer.progress(&progress);
            }
        }
        if let (Some(every), Some(at)) = (checkpoint_every, next_checkpoint)
            && Instant::now() >= at
        {
            next_checkpoint = Some(Instant::now() + every);
            observer.checkpoint(&engine.checkpoint());
        }
    }
}

/// rtlab's main thread pinned where `main` says, and memory locked when it asks.
fn pin_and_lock(main: &MainThread) -> Result<(), RunError> {
    if let Some(cpus) = &main.cpus {
        sys::sched::pin_current_thread(cpus).map_err(|source| RunError::Kernel {
            what: format!("pinning rtlab's main thread to CPUs {cpus} (--main-cpu)"),
            source,
        })?;
    }
    if main.mlock {
        sys::mem::single_malloc_arena();
        sys::mem::lock_all_memory().map_err(|source| {
            match preflight::RtAccess::current(&sys::Root::host()).mlock_hint() {
                Some(hint) => {
                    RunError::Setup(format!("locking memory (mlockall): {source}; {hint}"))
                }
                None => RunError::Kernel {
                    what: "locking memory (mlockall)".to_string(),
                    source,
                },
            }
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
