//! `rtlab noise`: operating-system noise measured by polling, on any kernel. One thread per
//! CPU reads the CPU's counter back to back ([`detector`]); every gap is a sample, and a gap at
//! or above the threshold is an interruption. With tracefs, a private instance records the
//! kernel's ordinary IRQ, softirq, NMI and scheduler events meanwhile ([`tracing`]), and each
//! interruption gets its cause: the rtla osnoise columns, without the osnoise tracer.
//!
//! This module owns the noise run's parameters ([`NoiseConfig`], validated) and its
//! orchestration ([`run_noise`]): the counter chosen and calibrated, the trace started,
//! threads pinned and started together, checkpoints and signals handled as `measure` does,
//! the result built as an `rtlab.noise/1` document, and the machine left as it was.

mod config;
mod detector;
mod figures;
mod kernel;
mod tracing;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::time::{Duration, Instant, SystemTime};

use model::Nanos;
use model::measure::{MeasureRun, RunStatus, Warning};
use sys::counter::CounterKind;
use sys::sched::SchedParams;
use sys::signals::TerminationSignals;

use crate::cell::CpuCell;
use crate::env::{ClockChoice, Environment, RunError};
use crate::result::{self, RunFacts};
use crate::run::Observer;
use crate::threads::{ThreadSetup, prepare};

pub use config::{
    MAX_PERIOD, MAX_THRESHOLD, MIN_RUNTIME, MIN_THRESHOLD, NoiseConfig, NoiseConfigError,
    NoiseEngine,
};
use detector::{Exit, NoiseCell, Scale};

/// How long the counter is calibrated against CLOCK_MONOTONIC_RAW before a run.
const CALIBRATION_NS: u64 = 50_000_000;
/// The common start lies this far ahead of the main thread's release.
const START_MARGIN_NS: u64 = 10_000_000;
const TICK: Duration = Duration::from_millis(100);
const PROGRESS_EVERY: Duration = Duration::from_secs(1);
const FIRST_CHECKPOINT: Duration = Duration::from_secs(1);
/// Interruptions kept per CPU for attribution (16 bytes each); more are counted unexplained.
const MAX_WINDOWS: usize = 1 << 22;

/// What the detector threads and the main thread share.
struct Shared {
    stop: AtomicBool,
    abort: AtomicBool,
    start: AtomicU64,
    end: AtomicU64,
    barrier: Barrier,
    running: AtomicUsize,
}

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
        (NoiseEngine::Kernel, Some(fs)) => kernel::run_kernel(config, env, &fs, observer),
        // Auto takes the tracer where it exists, unless the detector's policy was asked
        // for: the tracer's threads are the kernel's.
        (NoiseEngine::Auto, Some(fs)) if config.policy == model::measure::Policy::Other => {
            kernel::run_kernel(config, env, &fs, observer)
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
    if !matches!(env.clock, ClockChoice::Real) {
        return Err(RunError::Setup(
            "rtlab noise measures with the CPU's counter; it has no scripted clock".to_string(),
        ));
    }
    crate::run::check_policy_privileges("rtlab noise", config.policy, config.priority)?;
    let root = &env.root;
    let host = sys::host::host_info(root);
    let mut warnings = config.warnings();
    warnings.extend(crate::preflight::container_warning(root));
    let signals = TerminationSignals::block().map_err(|source| RunError::Kernel {
        what: "blocking SIGINT/SIGTERM for an orderly stop".to_string(),
        source,
    })?;
    let (kind, why_not) = sys::counter::choose(root);
    if let Some(why) = why_not {
        warnings.push(Warning::new(
            "noise-counter",
            format!("{why}: the detector reads CLOCK_MONOTONIC_RAW through the vDSO, which is slower per read"),
        ));
    }
    let hz = sys::counter::frequency(kind, CALIBRATION_NS);
    let scale = Scale::new(hz);
    let hypervisor = sys::cpu::hypervisor(root);
    let steal_before = sys::cpu::times(root).ok();
    let trace = if config.attribute {
        tracing::start(root, config.cpus.iter(), &mut warnings)
    } else {
        None
    };
    // The main thread wakes every 100 ms and builds checkpoints: off the measured CPUs, as
    // oslat keeps its own, unless there is no other CPU or --main-cpu says where. Only CPUs
    // this process may use count: in the RT cpuset of a tuned machine (or a container's) the
    // others are out of reach, and the main thread then shares the measured CPUs.
    let main = config.main_cpus.clone().or_else(|| {
        let allowed = sys::sched::affinity().ok();
        let others: model::CpuSet = sys::cpu::online(root)
            .ok()?
            .iter()
            .filter(|c| !config.cpus.contains(*c))
            .filter(|c| allowed.as_ref().is_none_or(|a| a.contains(*c)))
            .collect();
        (!others.is_empty()).then_some(others)
    });
    if let Some(main) = &main {
        sys::sched::pin_current_thread(main).map_err(|source| RunError::Kernel {
            what: format!("pinning rtlab's main thread to CPUs {main} (--main-cpu)"),
            source,
        })?;
    }
    if config.mlock {
        sys::mem::single_malloc_arena();
        sys::mem::lock_all_memory().map_err(|source| RunError::Kernel {
            what: "locking memory (mlockall)".to_string(),
            source,
        })?;
    }
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        abort: AtomicBool::new(false),
        start: AtomicU64::new(0),
        end: AtomicU64::new(0),
        barrier: Barrier::new(config.cpus.len() + 1),
        running: AtomicUsize::new(config.cpus.len()),
    });
    let (cells, handles) = start_threads(config, kind, scale, &shared)?;

    // The common start, a little ahead so every thread is polling before it.
    let anchor = sys::counter::pair(kind);
    let start = anchor.0.saturating_add(scale.ticks(START_MARGIN_NS));
    let end = start.saturating_add(scale.ticks(config.duration.get()));
    shared.start.store(start, Ordering::Relaxed);
    shared.end.store(end, Ordering::Release);
    let started_at = SystemTime::now() + Duration::from_nanos(START_MARGIN_NS);
    let facts = RunFacts {
        host,
        params: model::measure::MeasureParams {
            main_cpus: main.clone(),
            ..figures::params(config, kind.as_str())
        },
        warnings,
        started_at,
        workload: None,
    };
    let doc_so_far = |status, cells: &[Arc<NoiseCell>]| {
        figures::document(&facts, config, (kind, hz), cells, status, None)
    };
    observer.started(&doc_so_far(RunStatus::Running, &[]));
    shared.barrier.wait();

    let mut logs: Vec<Vec<(u64, u64)>> = vec![Vec::new(); cells.len()];
    let mut overflow = vec![0u64; cells.len()];
    let status = {
        let checkpoint_every = config.checkpoint.map(Nanos::to_duration);
        let mut next_checkpoint =
            checkpoint_every.map(|e| Instant::now() + e.min(FIRST_CHECKPOINT));
        let wants_progress = observer.wants_progress();
        let mut last_progress = Instant::now();
        loop {
            if signals.wait(TICK).is_some() {
                break RunStatus::Interrupted;
            }
            drain(&cells, &mut logs, &mut overflow);
            if shared.running.load(Ordering::Acquire) == 0 {
                break RunStatus::Complete;
            }
            if wants_progress && last_progress.elapsed() >= PROGRESS_EVERY {
                last_progress = Instant::now();
                let inner: Vec<Arc<CpuCell>> = cells.iter().map(|c| Arc::clone(&c.cell)).collect();
                let elapsed = Nanos(scale.ns(sys::counter::read(kind).saturating_sub(start)));
                observer.progress(&result::progress(&inner, elapsed, config.duration));
            }
            if let (Some(every), Some(at)) = (checkpoint_every, next_checkpoint)
                && Instant::now() >= at
            {
                next_checkpoint = Some(Instant::now() + every);
                observer.checkpoint(&doc_so_far(RunStatus::Running, &cells));
            }
        }
    };
    shared.stop.store(true, Ordering::Relaxed);
    observer.finished();
    for h in handles {
        let _ = h.join();
    }
    drain(&cells, &mut logs, &mut overflow);
    let finish = sys::counter::pair(kind);
    let steal = steal_before.and_then(|before| {
        let after = sys::cpu::times(root).ok()?;
        Some(figures::steal_ns(&before, &after))
    });

    let mut doc = figures::document(&facts, config, (kind, hz), &cells, status, steal.as_ref());
    doc.elapsed_ns = Nanos(scale.ns(finish.0.min(end).saturating_sub(start)));
    let unexplained: Vec<u64> = cells
        .iter()
        .zip(&overflow)
        .map(|(c, o)| c.dropped().saturating_add(*o))
        .collect();
    let attribution = trace.map(|t| {
        let missing = t.missing.clone();
        let fit = figures::Fit::new(anchor, finish);
        let windows = cells
            .iter()
            .zip(logs)
            .map(|(c, log)| tracing::CpuWindows {
                cpu: c.cell.cpu(),
                tid: c.cell.tid(),
                windows: log
                    .into_iter()
                    .map(|(a, b)| trace::noise::Window {
                        start_ns: fit.raw(a),
                        end_ns: fit.raw(b),
                    })
                    .collect(),
            })
            .collect();
        let (per_cpu, notes) = t.finish(windows);
        figures::Attributed {
            per_cpu,
            missing,
            notes,
        }
    });
    let hw = attribution.as_ref().map(|a| {
        a.per_cpu
            .iter()
            .map(|(cpu, a)| (*cpu, a.hw_windows.clone()))
            .collect()
    });
    figures::attribute(&mut doc, attribution, &unexplained, hypervisor);
    Ok((doc, hw))
}

/// Moves each ring's interruptions into the run's log, up to [`MAX_WINDOWS`] per CPU.
fn drain(cells: &[Arc<NoiseCell>], logs: &mut [Vec<(u64, u64)>], overflow: &mut [u64]) {
    let mut scratch = Vec::new();
    for (i, c) in cells.iter().enumerate() {
        scratch.clear();
        c.drain(&mut scratch);
        let room = MAX_WINDOWS.saturating_sub(logs[i].len());
        let take = scratch.len().min(room);
        logs[i].extend_from_slice(&scratch[..take]);
        overflow[i] = overflow[i].saturating_add((scratch.len() - take) as u64);
    }
}

/// The threads' cells and handles.
type Started = crate::threads::StartedWith<NoiseCell>;

/// Starts one detector per CPU; each pins itself, allocates and touches its memory, takes its
/// policy and waits at the barrier.
fn start_threads(
    config: &NoiseConfig,
    kind: CounterKind,
    scale: Scale,
    shared: &Arc<Shared>,
) -> Result<Started, RunError> {
    let (tx, rx) = mpsc::channel();
    let mut handles = Vec::new();
    for (index, cpu) in config.cpus.iter().enumerate() {
        let setup = ThreadSetup {
            cpu,
            offset: 0,
            real: true,
            sched: SchedParams {
                policy: config.policy,
                priority: config.priority,
                dl_runtime: None,
                dl_deadline: None,
                dl_period: None,
            },
            prefault: config.mlock,
            spikes: config.spikes,
            series_slots: config.series_slots(),
            slot_ns: Nanos::SECOND.get(),
            workload: None,
        };
        let plan = figures::PlanSpec::new(config, scale);
        let thread_shared = Arc::clone(shared);
        let tx = tx.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("rtlab-noise/{cpu}"))
            .stack_size(config.stack_bytes)
            .spawn(move || worker(index, &setup, plan, kind, &thread_shared, &tx));
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                shared.abort.store(true, Ordering::Relaxed);
                return Err(RunError::Thread {
                    cpu,
                    message: format!("cannot start a thread: {e}"),
                });
            }
        }
    }
    drop(tx);
    crate::threads::gather(&rx, handles, &shared.abort, &shared.barrier)
}

type Ready = mpsc::Sender<(usize, Result<Arc<NoiseCell>, RunError>)>;

/// A detector thread: set up, wait for the common start, poll, say it is done.
fn worker(
    index: usize,
    setup: &ThreadSetup,
    spec: figures::PlanSpec,
    kind: CounterKind,
    shared: &Shared,
    ready: &Ready,
) {
    let cell = match prepare(setup) {
        Ok(cell) => {
            let cell = Arc::new(NoiseCell::new(cell));
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
    let start = shared.start.load(Ordering::Relaxed);
    let plan = spec.plan(
        start,
        shared.end.load(Ordering::Acquire),
        sys::counter::pair(kind),
    );
    // Wait for the common start without polling figures into the result.
    while sys::counter::read(kind) < start && !shared.stop.load(Ordering::Relaxed) {
        std::hint::spin_loop();
    }
    let sleep = |ns: u64| sys::clock::sleep_ns(ns);
    let _exit: Exit = match kind {
        CounterKind::Tsc => {
            detector::detect::<sys::counter::Tsc>(&plan, &cell, &shared.stop, &sleep)
        }
        CounterKind::Cntvct => {
            detector::detect::<sys::counter::Cntvct>(&plan, &cell, &shared.stop, &sleep)
        }
        CounterKind::MonotonicRaw => {
            detector::detect::<sys::counter::MonoRaw>(&plan, &cell, &shared.stop, &sleep)
        }
    };
    cell.cell.finish();
    shared.running.fetch_sub(1, Ordering::AcqRel);
}
