//! Running a measurement: prepare the machine, start one thread per CPU, watch them, stop them,
//! and leave the machine as it was.
//!
//! Order of work: describe the host and check privileges (nothing changed yet); block the
//! termination signals so only this thread sees them; hold `/dev/cpu_dma_latency` (released
//! when the file closes, even if rtlab is killed); open the tracefs files `--break` needs;
//! lock memory; start the threads, which pin themselves, allocate and touch their memory, take
//! their scheduling policy and wait at a barrier; start them all at one instant; then wake
//! every 100 ms to handle signals, report progress and write checkpoints.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::time::{Duration, Instant, SystemTime};

use model::Nanos;
use model::measure::{BreakEvent, MeasureRun, Progress, RunStatus, Warning};
use sys::Root;
use sys::sched::SchedParams;
use sys::signals::TerminationSignals;

use crate::cell::CpuCell;
use crate::clock::{Clock, FAKE_EPOCH_NS, FakeScript, RealClock};
use crate::config::{Config, PREFAULT_STACK_BYTES};
use crate::preflight;
use crate::result::{self, RunFacts};
use crate::sampler::{self, Exit, Plan};

/// Which clock the threads use.
#[derive(Clone, Debug)]
pub enum ClockChoice {
    /// CLOCK_MONOTONIC, real threads with real scheduling: a measurement.
    Real,
    /// Scripted latencies, no scheduling changes: for tests of the logic.
    Fake(FakeScript),
}

/// Where a run happens.
#[derive(Clone, Debug)]
pub struct Environment {
    /// Kernel tree (the host, or a fixture for tests).
    pub root: Root,
    /// The clock.
    pub clock: ClockChoice,
}

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

/// Why a run could not be done. Each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Missing privileges for the requested policy.
    #[error("{0}")]
    Privileges(String),
    /// The kernel refused a step of the setup.
    #[error("{what}: {source}")]
    Kernel {
        /// The step.
        what: String,
        /// The kernel's answer.
        #[source]
        source: sys::Error,
    },
    /// A measuring thread could not be prepared.
    #[error("CPU {cpu}: {message}")]
    Thread {
        /// The CPU.
        cpu: u32,
        /// What went wrong.
        message: String,
    },
}

/// State shared by the main thread and the measuring threads.
struct Shared {
    stop: AtomicBool,
    abort: AtomicBool,
    t0: AtomicU64,
    barrier: Barrier,
    brk: BreakState,
}

/// The first sample over `--break`, and the trace marker it fires.
struct BreakState {
    threshold: u64,
    tripped: AtomicBool,
    cpu: AtomicU32,
    latency: AtomicU64,
    cycle: AtomicU64,
    frozen: AtomicBool,
    trigger: Option<sys::tracefs::BreakTrigger>,
    tracefs: Option<String>,
}

impl BreakState {
    fn trip(&self, cpu: u32, latency: u64, cycle: u64) {
        if self.tripped.swap(true, Ordering::AcqRel) {
            return;
        }
        self.cpu.store(cpu, Ordering::Relaxed);
        self.latency.store(latency, Ordering::Relaxed);
        self.cycle.store(cycle, Ordering::Relaxed);
        if let Some(trigger) = &self.trigger {
            let frozen = trigger.fire(cpu, latency, self.threshold, cycle);
            self.frozen.store(frozen, Ordering::Relaxed);
        }
    }

    fn event(&self) -> Option<BreakEvent> {
        self.tripped.load(Ordering::Acquire).then(|| BreakEvent {
            cpu: self.cpu.load(Ordering::Relaxed),
            latency_ns: self.latency.load(Ordering::Relaxed),
            cycle: self.cycle.load(Ordering::Relaxed),
            trace_frozen: self.frozen.load(Ordering::Relaxed),
            tracefs: if self.frozen.load(Ordering::Relaxed) {
                self.tracefs.clone()
            } else {
                None
            },
        })
    }
}

/// What one measuring thread needs to set itself up.
#[derive(Clone)]
struct ThreadSetup {
    cpu: u32,
    offset: u64,
    real: bool,
    sched: SchedParams,
    prefault: bool,
    spikes: u32,
    series_slots: usize,
    slot_ns: u64,
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
    let host = sys::host::host_info(&env.root);
    let mut warnings = preflight::warnings(config, &host);
    if real {
        check_privileges(config)?;
    } else {
        warnings.push(Warning::new(
            "fake-clock",
            "fake clock: these figures are scripted for a test, not measured",
        ));
    }

    let signals = TerminationSignals::block().map_err(|source| RunError::Kernel {
        what: "blocking SIGINT/SIGTERM for an orderly stop".to_string(),
        source,
    })?;

    // Held for the whole run; dropping it (or the process dying) releases the request.
    let mut dma_guard = None;
    if let (true, Some(us)) = (real, config.dma_latency_us) {
        match sys::pmqos::DmaLatencyRequest::hold(&env.root, us) {
            Ok(guard) => dma_guard = Some(guard),
            Err(e) => warnings.push(Warning::new(
                "dma-latency-unavailable",
                format!("could not hold /dev/cpu_dma_latency at {us} us ({e}): deep idle states may add their exit latency"),
            )),
        }
    }
    let dma_latency_us = dma_guard.as_ref().map(|g| g.requested_us());

    let session = config
        .trace
        .as_ref()
        .filter(|_| real)
        .and_then(|o| crate::tracing::start(&env.root, o, config.cpus.iter(), &mut warnings));
    let brk = break_state(
        config,
        env,
        real,
        session.as_ref().map(crate::tracing::Session::tracefs),
        &mut warnings,
    );

    if let (true, Some(main)) = (real, &config.main_cpus) {
        sys::sched::pin_current_thread(main).map_err(|source| RunError::Kernel {
            what: format!("pinning rtlab's main thread to CPUs {main} (--main-cpu)"),
            source,
        })?;
    }
    if real && config.mlock {
        sys::mem::single_malloc_arena();
        sys::mem::lock_all_memory().map_err(|source| RunError::Kernel {
            what: "locking memory (mlockall)".to_string(),
            source,
        })?;
    }

    let mut facts = RunFacts {
        host,
        params: result::params(config, dma_latency_us, !real),
        warnings,
        started_at: SystemTime::now(),
    };
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        abort: AtomicBool::new(false),
        t0: AtomicU64::new(0),
        barrier: Barrier::new(config.cpus.len() + 1),
        brk,
    });

    let (cells, handles) = start_threads(config, env, &shared)?;
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
    observer.started(&result::document(
        &facts,
        RunStatus::Running,
        Vec::new(),
        Nanos::ZERO,
        SystemTime::now(),
        None,
    ));

    // Measured time: up to the last deadline any thread reached (exact for complete runs,
    // and independent of how quickly the main thread noticed the end).
    let elapsed = |cells: &[Arc<CpuCell>]| -> Nanos {
        let periods = cells.iter().map(|c| c.periods_done()).max().unwrap_or(0);
        Nanos(periods.saturating_mul(config.interval.get()))
    };
    let planned = config.planned();
    let checkpoint_every = config.checkpoint.map(Nanos::to_duration);
    let wants_progress = observer.wants_progress();
    let mut last_progress = Instant::now();
    let mut next_checkpoint =
        checkpoint_every.map(|every| Instant::now() + every.min(FIRST_CHECKPOINT));
    let mut status = RunStatus::Complete;
    // The last deadline (plus the widest thread offset); near it the main thread looks more
    // often, so the end is noticed within a millisecond or two rather than a whole tick.
    let planned_end = t0 + planned.get() + config.interval.get();
    loop {
        let wait = if real {
            let left = planned_end.saturating_sub(sys::clock::monotonic_ns());
            TICK.min(Duration::from_nanos(left).max(END_POLL))
        } else {
            TICK
        };
        if let Some(_signal) = signals.wait(wait) {
            shared.stop.store(true, Ordering::Relaxed);
            status = RunStatus::Interrupted;
            break;
        }
        if shared.stop.load(Ordering::Relaxed) || cells.iter().all(|c| c.is_done()) {
            break;
        }
        if wants_progress && last_progress.elapsed() >= PROGRESS_EVERY {
            last_progress = Instant::now();
            observer.progress(&result::progress(&cells, elapsed(&cells), planned));
        }
        if let (Some(every), Some(at)) = (checkpoint_every, next_checkpoint)
            && Instant::now() >= at
        {
            next_checkpoint = Some(Instant::now() + every);
            let snaps = cells.iter().map(|c| c.snapshot()).collect();
            observer.checkpoint(&result::document(
                &facts,
                RunStatus::Running,
                snaps,
                elapsed(&cells),
                SystemTime::now(),
                None,
            ));
        }
    }
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
    let elapsed = elapsed(&cells);
    drop(dma_guard);
    let mut doc = result::document(
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
    if let Some(session) = session {
        doc.trace = Some(crate::tracing::finish(session, &doc));
        // The instance the break froze is gone; its window is in `trace`, and the machine's
        // own tracing was never switched off.
        if let Some(b) = doc.break_event.as_mut() {
            b.tracefs = None;
        }
    }
    Ok(doc)
}

/// The result of a run stopped before its threads started (a signal during a load's
/// warm-up): status `interrupted`, no CPU measured, the host and parameters as they would
/// have been. It is a valid document that no gate passes (it has no samples), so a signal at
/// any moment still leaves a result to save and print.
pub fn not_started(config: &Config, env: &Environment) -> MeasureRun {
    let real = matches!(env.clock, ClockChoice::Real);
    let host = sys::host::host_info(&env.root);
    let mut warnings = preflight::warnings(config, &host);
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
    if !config.policy.is_realtime() {
        return Ok(());
    }
    let privs = sys::privilege::Privileges::current();
    let ok = if config.policy.takes_priority() {
        privs.can_use_priority(config.priority)
    } else {
        privs.euid == 0 || privs.cap_sys_nice
    };
    if ok {
        return Ok(());
    }
    Err(RunError::Privileges(format!(
        "rtlab measure needs root or CAP_SYS_NICE to run SCHED_{} threads{}: {}",
        config.policy.as_str().to_uppercase(),
        if config.policy.takes_priority() {
            format!(" at priority {}", config.priority)
        } else {
            String::new()
        },
        sys::privilege::rt_fix_hint()
    )))
}

fn break_state(
    config: &Config,
    env: &Environment,
    real: bool,
    instance: Option<&sys::tracefs::Tracefs>,
    warnings: &mut Vec<Warning>,
) -> BreakState {
    let mut state = BreakState {
        threshold: config.break_threshold.map_or(u64::MAX, Nanos::get),
        tripped: AtomicBool::new(false),
        cpu: AtomicU32::new(0),
        latency: AtomicU64::new(0),
        cycle: AtomicU64::new(0),
        frozen: AtomicBool::new(false),
        trigger: None,
        tracefs: None,
    };
    if config.break_threshold.is_none() || !real {
        return state;
    }
    match instance.cloned().or_else(|| sys::tracefs::Tracefs::find(&env.root)) {
        Some(tracefs) => match tracefs.break_trigger() {
            Ok(trigger) => {
                state.tracefs = Some(tracefs.dir().display().to_string());
                state.trigger = Some(trigger);
            }
            Err(e) => warnings.push(Warning::new(
                "break-no-trace",
                format!("--break cannot freeze the trace ({e}); the run still stops at the threshold"),
            )),
        },
        None => warnings.push(Warning::new(
            "break-no-trace",
            format!(
                "tracefs is not mounted, so --break will stop the run but freeze no trace; mount it with `{}`",
                sys::tracefs::mount_hint()
            ),
        )),
    }
    state
}

type Started = (Vec<Arc<CpuCell>>, Vec<std::thread::JoinHandle<()>>);

fn start_threads(
    config: &Config,
    env: &Environment,
    shared: &Arc<Shared>,
) -> Result<Started, RunError> {
    let real = matches!(env.clock, ClockChoice::Real);
    let offsets = config.offsets();
    let (series_slots, slot_ns) = (config.series_slots(), config.series_slot().get());
    let sched = SchedParams {
        policy: config.policy,
        priority: config.priority,
        dl_runtime: config.dl_runtime,
        dl_deadline: config.dl_period,
        dl_period: config.dl_period,
    };
    let (tx, rx) = mpsc::channel();
    let mut handles = Vec::new();
    for (index, (cpu, offset)) in config.cpus.iter().zip(&offsets).enumerate() {
        let setup = ThreadSetup {
            cpu,
            offset: offset.get(),
            real,
            sched,
            prefault: config.mlock,
            spikes: config.spikes,
            series_slots,
            slot_ns,
        };
        let plan = (config.interval.get(), config.periods());
        let thread_shared = Arc::clone(shared);
        let tx = tx.clone();
        let clock_choice = env.clock.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("rtlab/{cpu}"))
            .stack_size(config.stack_bytes)
            .spawn(move || match clock_choice {
                ClockChoice::Real => worker(index, setup, plan, RealClock, &thread_shared, &tx),
                ClockChoice::Fake(script) => worker(
                    index,
                    setup,
                    plan,
                    script.clock_for(cpu),
                    &thread_shared,
                    &tx,
                ),
            });
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                // Threads already started are waiting at the barrier: release them.
                shared.abort.store(true, Ordering::Relaxed);
                return Err(RunError::Thread {
                    cpu,
                    message: format!("cannot start a thread: {e}"),
                });
            }
        }
    }
    drop(tx);
    let mut cells: Vec<Option<Arc<CpuCell>>> = vec![None; config.cpus.len()];
    let mut failure = None;
    for (index, outcome) in rx.iter().take(config.cpus.len()) {
        match outcome {
            Ok(cell) => cells[index] = Some(cell),
            Err(e) => {
                failure.get_or_insert(e);
            }
        }
    }
    if let Some(e) = failure {
        shared.abort.store(true, Ordering::Relaxed);
        shared.barrier.wait();
        for h in handles {
            let _ = h.join();
        }
        return Err(e);
    }
    Ok((cells.into_iter().flatten().collect(), handles))
}

/// A measuring thread: set up, wait for the common start, sample, report a breach.
fn worker<C: Clock>(
    index: usize,
    setup: ThreadSetup,
    (interval, periods): (u64, u64),
    mut clock: C,
    shared: &Shared,
    ready: &mpsc::Sender<(usize, Result<Arc<CpuCell>, RunError>)>,
) {
    let cell = match prepare(&setup) {
        Ok(cell) => {
            let _ = ready.send((index, Ok(Arc::clone(&cell))));
            cell
        }
        Err(e) => {
            let _ = ready.send((index, Err(e)));
            shared.barrier.wait();
            return;
        }
    };
    shared.barrier.wait();
    if shared.abort.load(Ordering::Relaxed) {
        return;
    }
    let plan = Plan {
        t0: shared.t0.load(Ordering::Acquire),
        offset: setup.offset,
        interval,
        periods,
        break_ns: shared.brk.threshold,
        slot_ns: setup.slot_ns,
    };
    let exit = sampler::sample(&mut clock, &plan, &cell, &shared.stop);
    if let Exit::Breach { latency_ns, cycle } = exit {
        shared.brk.trip(setup.cpu, latency_ns, cycle);
        shared.stop.store(true, Ordering::Relaxed);
    }
    cell.finish();
}

/// Pins the thread, allocates and touches its memory, pre-faults its stack, then takes the
/// scheduling policy (last, so the setup work does not run at real-time priority).
fn prepare(setup: &ThreadSetup) -> Result<Arc<CpuCell>, RunError> {
    let fail = |message: String| RunError::Thread {
        cpu: setup.cpu,
        message,
    };
    if setup.real {
        sys::sched::pin_current_thread(&model::CpuSet::from_cpus([setup.cpu]))
            .map_err(|e| fail(format!("cannot pin the measuring thread: {e}")))?;
    }
    let cell = Arc::new(CpuCell::new(
        setup.cpu,
        setup.spikes,
        setup.series_slots,
        setup.slot_ns,
    ));
    cell.tid.store(sys::sched::current_tid(), Ordering::Relaxed);
    if setup.real {
        if setup.prefault {
            sys::mem::prefault_stack(PREFAULT_STACK_BYTES);
        }
        sys::sched::set_current_thread_policy(&setup.sched)
            .map_err(|e| fail(format!("cannot set the scheduling policy: {e}")))?;
    }
    Ok(cell)
}
