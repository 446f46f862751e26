//! Running a measurement: prepare the machine, start one thread per CPU, watch them, stop them,
//! and leave the machine as it was.
//!
//! Order of work: describe the host and check privileges (nothing changed yet); block the
//! termination signals so only this thread sees them; hold `/dev/cpu_dma_latency` (released
//! when the file closes, even if rtlab is killed); open the tracefs files `--break` needs;
//! lock memory; start the threads ([`crate::threads`]), which pin themselves, allocate and
//! touch their memory, take their scheduling policy and wait at a barrier; start them all at
//! one instant; then wake every 100 ms to handle signals, report progress and write
//! checkpoints; at the end stop and join them, release what was held and build the result.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant, SystemTime};

use model::Nanos;
use model::host::HostInfo;
use model::measure::{MeasureRun, Progress, RunStatus, Warning};
use sys::pmqos::DmaLatencyRequest;
use sys::signals::TerminationSignals;

use crate::cell::CpuCell;
use crate::clock::FAKE_EPOCH_NS;
use crate::config::Config;
use crate::preflight;
use crate::result::{self, RunFacts};
use crate::threads::{EndStop, Shared, break_state, start_threads};
use crate::tracing::Session;

pub use crate::env::{ClockChoice, Environment, RunError};

/// Receives what happens during a run. Every method has a default that ignores it.
pub trait Observer {
    /// Once, when the threads are about to start; `run` is an empty document.
    fn started(&mut self, _run: &MeasureRun) {}
    /// Whether [`Observer::progress`] is wanted (computing it reads every histogram).
    fn wants_progress(&self) -> bool {
        true
    }
    /// About once a second.
    fn progress(&mut self, _progress: &Progress) {}
    /// Every checkpoint interval, with the full document so far (status `running`).
    fn checkpoint(&mut self, _run: &MeasureRun) {}
    /// Once, as soon as the measuring threads have been told to stop (the measured time is
    /// over, or the run was interrupted), before they are joined and the result is built.
    fn finished(&mut self) {}
}

/// An observer that ignores everything.
pub struct NoObserver;
impl Observer for NoObserver {
    fn wants_progress(&self) -> bool {
        false
    }
}

const TICK: Duration = Duration::from_millis(100);
/// How often the main thread looks once the planned end has come.
const END_POLL: Duration = Duration::from_millis(1);
const START_MARGIN_NS: u64 = 10_000_000;
const PROGRESS_EVERY: Duration = Duration::from_secs(1);
/// When the first checkpoint with samples is written: soon, so a run killed early still
/// leaves figures behind (later ones follow the checkpoint interval).
const FIRST_CHECKPOINT: Duration = Duration::from_secs(1);

/// Measures according to `config` and returns the result (status `complete`, `interrupted`
/// or `broke-threshold`). The machine is left as it was whatever happens; only a `--break`
/// that fired leaves tracing switched off, on purpose, and the result says so.
pub fn run(
    config: &Config,
    env: &Environment,
    observer: &mut dyn Observer,
) -> Result<MeasureRun, RunError> {
    let real = matches!(env.clock, ClockChoice::Real);
    let (host, mut warnings) = look(config, env, real)?;
    let signals = TerminationSignals::block().map_err(|source| RunError::Kernel {
        what: "blocking SIGINT/SIGTERM for an orderly stop".to_string(),
        source,
    })?;
    // Held for the whole run; dropping it (or the process dying) releases the request.
    let dma_guard = hold_dma_latency(config, env, real, &mut warnings);
    let session = config
        .trace
        .as_ref()
        .filter(|_| real)
        .and_then(|o| crate::tracing::start(&env.root, o, config.cpus.iter(), &mut warnings));
    let brk = break_state(
        config,
        &env.root,
        real,
        session.as_ref().map(Session::tracefs),
        &mut warnings,
    );
    pin_and_lock(config, real)?;

    let mut facts = RunFacts {
        host,
        params: result::params(config, dma_guard.as_ref().map(|g| g.requested_us()), !real),
        warnings,
        started_at: SystemTime::now(),
        workload: config.workload,
    };
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        abort: AtomicBool::new(false),
        t0: AtomicU64::new(0),
        barrier: Barrier::new(config.cpus.len() + 1),
        brk,
        end: EndStop::new(
            config.cpus.len(),
            session.as_ref().and_then(|s| s.tracefs().stopper().ok()),
        ),
    });
    let (cells, handles) = start_threads(config, env, &shared)?;
    let t0 = start_together(&shared, &mut facts, real);
    observer.started(&result::document(
        &facts,
        RunStatus::Running,
        Vec::new(),
        Nanos::ZERO,
        SystemTime::now(),
        None,
    ));
    let watch = Watch {
        config,
        real,
        t0,
        signals: &signals,
        cells: &cells,
        shared: &shared,
        facts: &facts,
    };
    let mut status = watch.until_done(observer);

    // Teardown: stop and join the threads, release the DMA latency request, build the result.
    shared.stop.store(true, Ordering::Relaxed);
    observer.finished();
    for h in handles {
        let _ = h.join();
    }
    let break_event = shared.brk.event();
    if break_event.is_some() {
        status = RunStatus::BrokeThreshold;
    }
    let snaps = cells.iter().map(|c| c.snapshot()).collect();
    let elapsed = elapsed(&cells, config);
    drop(dma_guard);
    let doc = result::document(
        &facts,
        status,
        snaps,
        elapsed,
        SystemTime::now(),
        break_event,
    );
    // The break trigger holds the instance's files open; the instance cannot go while it
    // lives.
    drop(shared);
    Ok(finish_trace(doc, session))
}

/// The host described and the warnings about it; a real run's privileges checked, a fake
/// run's figures marked as scripted. Nothing is changed yet.
fn look(
    config: &Config,
    env: &Environment,
    real: bool,
) -> Result<(HostInfo, Vec<Warning>), RunError> {
    let host = sys::host::host_info(&env.root);
    let mut warnings = preflight::warnings(config, &host);
    warnings.extend(preflight::container_warning(&env.root));
    if real {
        check_privileges(config)?;
    } else {
        warnings.push(Warning::new(
            "fake-clock",
            "fake clock: these figures are scripted for a test, not measured",
        ));
    }
    Ok((host, warnings))
}

/// Holds `/dev/cpu_dma_latency` at `--dma-latency` for a real run; a warning when it cannot.
fn hold_dma_latency(
    config: &Config,
    env: &Environment,
    real: bool,
    warnings: &mut Vec<Warning>,
) -> Option<DmaLatencyRequest> {
    let (true, Some(us)) = (real, config.dma_latency_us) else {
        return None;
    };
    match DmaLatencyRequest::hold(&env.root, us) {
        Ok(guard) => Some(guard),
        Err(e) => {
            let hint = preflight::RtAccess::current(&env.root)
                .dma_latency_hint()
                .map_or(String::new(), |h| format!("; {h}"));
            warnings.push(Warning::new(
                "dma-latency-unavailable",
                format!("could not hold /dev/cpu_dma_latency at {us} us ({e}): deep idle states may add their exit latency{hint}"),
            ));
            None
        }
    }
}

/// For a real run: rtlab's main thread pinned to `--main-cpu`, and memory locked.
fn pin_and_lock(config: &Config, real: bool) -> Result<(), RunError> {
    if let (true, Some(main)) = (real, &config.main_cpus) {
        sys::sched::pin_current_thread(main).map_err(|source| RunError::Kernel {
            what: format!("pinning rtlab's main thread to CPUs {main} (--main-cpu)"),
            source,
        })?;
    }
    if real && config.mlock {
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

/// Sets the common start and releases the threads waiting at the barrier; the start.
fn start_together(shared: &Shared, facts: &mut RunFacts, real: bool) -> u64 {
    // The common start lies a little ahead, so every thread is asleep before its first
    // deadline however the scheduler orders their release from the barrier.
    let t0 = if real {
        sys::clock::monotonic_ns() + START_MARGIN_NS
    } else {
        FAKE_EPOCH_NS
    };
    shared.t0.store(t0, Ordering::Release);
    facts.started_at =
        SystemTime::now() + Duration::from_nanos(if real { START_MARGIN_NS } else { 0 });
    shared.barrier.wait();
    t0
}

/// Measured time: up to the last deadline any thread reached (exact for complete runs, and
/// independent of how quickly the main thread noticed the end).
fn elapsed(cells: &[Arc<CpuCell>], config: &Config) -> Nanos {
    let periods = cells.iter().map(|c| c.periods_done()).max().unwrap_or(0);
    Nanos(periods.saturating_mul(config.interval.get()))
}

/// What the main thread watches while the threads measure.
struct Watch<'a> {
    config: &'a Config,
    real: bool,
    t0: u64,
    signals: &'a TerminationSignals,
    cells: &'a [Arc<CpuCell>],
    shared: &'a Shared,
    facts: &'a RunFacts,
}

impl Watch<'_> {
    /// Waits for the end (every thread done, a breach, or a signal), reporting progress and
    /// writing checkpoints meanwhile; `interrupted` on a signal, else `complete`.
    fn until_done(&self, observer: &mut dyn Observer) -> RunStatus {
        let planned = self.config.planned();
        let checkpoint_every = self.config.checkpoint.map(Nanos::to_duration);
        let wants_progress = observer.wants_progress();
        let mut last_progress = Instant::now();
        let mut next_checkpoint =
            checkpoint_every.map(|every| Instant::now() + every.min(FIRST_CHECKPOINT));
        // The last deadline (plus the widest thread offset); near it the main thread looks
        // more often, so the end is noticed within a millisecond or two rather than a tick.
        let planned_end = self.t0 + planned.get() + self.config.interval.get();
        loop {
            if let Some(_signal) = self.signals.wait(self.wait(planned_end)) {
                self.shared.stop.store(true, Ordering::Relaxed);
                return RunStatus::Interrupted;
            }
            if self.shared.stop.load(Ordering::Relaxed) || self.cells.iter().all(|c| c.is_done()) {
                return RunStatus::Complete;
            }
            if wants_progress && last_progress.elapsed() >= PROGRESS_EVERY {
                last_progress = Instant::now();
                let progress =
                    result::progress(self.cells, elapsed(self.cells, self.config), planned);
                observer.progress(&progress);
            }
            if let (Some(every), Some(at)) = (checkpoint_every, next_checkpoint)
                && Instant::now() >= at
            {
                next_checkpoint = Some(Instant::now() + every);
                observer.checkpoint(&self.checkpoint());
            }
        }
    }

    /// How long to wait for a signal: a tick, less near the planned end of a real run.
    fn wait(&self, planned_end: u64) -> Duration {
        if self.real {
            let left = planned_end.saturating_sub(sys::clock::monotonic_ns());
            TICK.min(Duration::from_nanos(left).max(END_POLL))
        } else {
            TICK
        }
    }

    /// The document so far, status `running`.
    fn checkpoint(&self) -> MeasureRun {
        let snaps = self.cells.iter().map(|c| c.snapshot()).collect();
        result::document(
            self.facts,
            RunStatus::Running,
            snaps,
            elapsed(self.cells, self.config),
            SystemTime::now(),
            None,
        )
    }
}

/// The trace a `--trace` run captured, put into its result; the instance the break froze is
/// gone then (its window is in `trace`, and the machine's own tracing was never switched off).
fn finish_trace(mut doc: MeasureRun, session: Option<Session>) -> MeasureRun {
    if let Some(session) = session {
        doc.trace = Some(crate::tracing::finish(session, &doc));
        if let Some(b) = doc.break_event.as_mut() {
            b.tracefs = None;
        }
    }
    doc
}

/// The result of a run stopped before its threads started (a signal during a load's
/// warm-up): status `interrupted`, no CPU measured, the host and parameters as they would
/// have been. It is a valid document that no gate passes (it has no samples), so a signal at
/// any moment still leaves a result to save and print.
pub fn not_started(config: &Config, env: &Environment) -> MeasureRun {
    let real = matches!(env.clock, ClockChoice::Real);
    let host = sys::host::host_info(&env.root);
    let mut warnings = preflight::warnings(config, &host);
    warnings.extend(preflight::container_warning(&env.root));
    warnings.push(Warning::new(
        "not-started",
        "the run was interrupted before its measuring threads started: nothing was measured",
    ));
    let now = SystemTime::now();
    let facts = RunFacts {
        host,
        params: result::params(config, None, !real),
        warnings,
        started_at: now,
        workload: config.workload,
    };
    result::document(
        &facts,
        RunStatus::Interrupted,
        Vec::new(),
        Nanos::ZERO,
        now,
        None,
    )
}

/// Whether this process may run `config`'s measuring threads (root or CAP_SYS_NICE for a
/// real-time policy); the error says how to get the privilege. [`run`] checks it too; a
/// front end calls it first, so the most basic refusal comes before any other.
pub fn check_privileges(config: &Config) -> Result<(), RunError> {
    check_policy_privileges("rtlab measure", config.policy, config.priority)
}

/// Whether this process may run threads of `policy` at `priority` for `command`; the error
/// says how to get the privilege.
pub(crate) fn check_policy_privileges(
    command: &str,
    policy: model::measure::Policy,
    priority: u8,
) -> Result<(), RunError> {
    // What decides it (capabilities, rlimit, the cgroup's real-time budget) is read from the
    // live host: this process's own privileges and cgroup.
    match preflight::RtAccess::current(&sys::Root::host()).refusal(command, policy, priority) {
        Some(why) => Err(RunError::Privileges(why)),
        None => Ok(()),
    }
}
