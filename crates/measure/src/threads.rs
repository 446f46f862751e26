//! The measuring threads: the state they share with the main thread ([`Shared`], with the
//! `--break` trigger), starting one per CPU (each pins itself, allocates and touches its
//! memory, takes its policy, then waits at the barrier), and what each runs: the sampler
//! between the common start and the stop.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, mpsc};

use model::Nanos;
use model::measure::{BreakEvent, Warning};
use sys::Root;
use sys::sched::SchedParams;

use crate::cell::CpuCell;
use crate::clock::{Clock, RealClock};
use crate::config::{Config, PREFAULT_STACK_BYTES};
use crate::env::{ClockChoice, Environment, RunError};
use crate::sampler::{self, Exit, Job, Plan};

/// State shared by the main thread and the measuring threads.
pub(crate) struct Shared {
    pub(crate) stop: AtomicBool,
    pub(crate) abort: AtomicBool,
    pub(crate) t0: AtomicU64,
    pub(crate) barrier: Barrier,
    pub(crate) brk: BreakState,
    pub(crate) end: EndStop,
}

/// Stops the run's own trace when the last measuring thread leaves its loop, so the buffer
/// ends where the measurement did: the teardown after it (joining, the load stopping, a main
/// thread queued behind a load's hundreds of threads) would otherwise fill the buffer with
/// events no spike needs and push the run's last stretch out of it.
pub(crate) struct EndStop {
    left: AtomicUsize,
    stop: Option<sys::tracefs::TraceStop>,
}

impl EndStop {
    /// For `threads` measuring threads; `stop` is the run's private trace instance, if any.
    pub(crate) fn new(threads: usize, stop: Option<sys::tracefs::TraceStop>) -> EndStop {
        EndStop {
            left: AtomicUsize::new(threads),
            stop,
        }
    }

    /// One thread left its loop; the last one stops the trace (one write(2)).
    fn thread_done(&self) {
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1
            && let Some(stop) = &self.stop
        {
            let _ = stop.stop();
        }
    }
}

/// The first sample over `--break`, and the trace marker it fires.
pub(crate) struct BreakState {
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

    /// The breach, once a thread tripped it.
    pub(crate) fn event(&self) -> Option<BreakEvent> {
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
pub(crate) struct ThreadSetup {
    pub(crate) cpu: u32,
    pub(crate) offset: u64,
    pub(crate) real: bool,
    pub(crate) sched: SchedParams,
    pub(crate) prefault: bool,
    pub(crate) spikes: u32,
    pub(crate) series_slots: usize,
    pub(crate) slot_ns: u64,
    /// `--workload`: the runtime to calibrate to and the deadline, ns.
    pub(crate) workload: Option<(u64, u64)>,
}

/// The `--break` state: the threshold, and the trace trigger it fires (a warning when there
/// is no trace to freeze).
pub(crate) fn break_state(
    config: &Config,
    root: &Root,
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
    match instance.cloned().or_else(|| sys::tracefs::Tracefs::find(root)) {
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

/// Threads' cells (their results as they sample) and handles.
pub(crate) type StartedWith<T> = (Vec<Arc<T>>, Vec<std::thread::JoinHandle<()>>);

/// The measuring threads' cells and handles.
pub(crate) type Started = StartedWith<CpuCell>;

/// Starts one measuring thread per CPU and waits until each is set up (or one failed: then
/// all are released and joined, and the error returned).
pub(crate) fn start_threads(
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
            workload: config.workload.map(|w| (w.runtime.get(), w.deadline.get())),
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
    gather(&rx, handles, &shared.abort, &shared.barrier)
}

/// Each started thread's report of its set-up, in CPU order, with the handles; when one
/// failed, every thread is released from the barrier (told to abort), joined, and the first
/// error returned. Shared by the latency and the noise threads.
pub(crate) fn gather<T>(
    rx: &mpsc::Receiver<(usize, Result<Arc<T>, RunError>)>,
    handles: Vec<std::thread::JoinHandle<()>>,
    abort: &AtomicBool,
    barrier: &Barrier,
) -> Result<StartedWith<T>, RunError> {
    let n = handles.len();
    let mut cells: Vec<Option<Arc<T>>> = (0..n).map(|_| None).collect();
    let mut failure = None;
    for (index, outcome) in rx.iter().take(n) {
        match outcome {
            Ok(cell) => cells[index] = Some(cell),
            Err(e) => {
                failure.get_or_insert(e);
            }
        }
    }
    if let Some(e) = failure {
        abort.store(true, Ordering::Relaxed);
        barrier.wait();
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
    let mut job = None;
    let cell = match prepare(&setup) {
        Ok(cell) => {
            // Calibrated here: pinned, at the run's policy, before the common start.
            if let Some((runtime, deadline_ns)) = setup.workload {
                let c = clock.calibrate(runtime);
                cell.work.calibrated(c);
                job = Some(Job {
                    iterations: c.iterations,
                    deadline_ns,
                });
            }
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
        work: job,
    };
    let exit = sampler::sample(&mut clock, &plan, &cell, &shared.stop);
    if let Exit::Breach { latency_ns, cycle } = exit {
        shared.brk.trip(setup.cpu, latency_ns, cycle);
        shared.stop.store(true, Ordering::Relaxed);
    }
    shared.end.thread_done();
    cell.finish();
}

/// Pins the thread, allocates and touches its memory, pre-faults its stack, then takes the
/// scheduling policy (last, so the setup work does not run at real-time priority).
pub(crate) fn prepare(setup: &ThreadSetup) -> Result<Arc<CpuCell>, RunError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_thread_out_stops_the_trace() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tracing_on"), "1").unwrap();
        let fs = sys::tracefs::Tracefs::at(dir.path());
        let end = EndStop::new(3, Some(fs.stopper().unwrap()));
        end.thread_done();
        end.thread_done();
        assert!(fs.is_on().unwrap(), "stopped while a thread still measured");
        end.thread_done();
        assert!(!fs.is_on().unwrap());
    }
}
