//! The latency engine's measuring threads ([`LatencyWorker`], run by the session's
//! [`crew`]): each prepares its CPU and its workload's counters, then runs the sampler
//! between the common start and the stop. What they share besides the crew's start and stop
//! ([`Shared`]): the `--break` trigger and the trace stop when the last one is done.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use model::Nanos;
use model::measure::{BreakEvent, Warning};
use sys::Root;
use sys::sched::SchedParams;

use crate::cell::CpuCell;
use crate::config::Config;
use crate::env::RunError;
use crate::sampler::{self, Exit, Job, Plan};
use crate::session::crew::{self, ThreadSetup, Worker, prepare_cpu};
use crate::workload::Spin;

/// What the latency threads share with the main thread besides the crew's start and stop.
pub(crate) struct Shared {
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

/// The latency engine's measuring thread: its CPU prepared (and its workload's counters), then the sampler from the common start to the end of its plan, a stop or a breach.
pub(crate) struct LatencyWorker<C> {
    setup: ThreadSetup,
    offset: u64,
    /// `--workload`: the job's CPU time and its deadline, ns.
    workload: Option<(u64, u64)>,
    /// The job, once prepared.
    job: Option<Job>,
    interval: u64,
    periods: u64,
    /// `--cycles`: `periods` counts wake-ups ([`Plan::count_wakeups`]).
    count_wakeups: bool,
    clock: C,
    shared: Arc<Shared>,
}

/// One worker per CPU of `config`, each with the clock `clock_for` gives its CPU.
pub(crate) fn workers<C: Spin + 'static>(
    config: &Config,
    real: bool,
    shared: &Arc<Shared>,
    clock_for: impl Fn(u32) -> C,
) -> Vec<LatencyWorker<C>> {
    let sched = SchedParams {
        policy: config.policy,
        priority: config.priority,
        dl_runtime: config.dl_runtime,
        dl_deadline: config.dl_period,
        dl_period: config.dl_period,
    };
    config
        .cpus
        .iter()
        .zip(config.offsets())
        .map(|(cpu, offset)| LatencyWorker {
            setup: ThreadSetup {
                cpu,
                real,
                sched,
                prefault: config.mlock,
                spikes: config.spikes,
                series_slots: config.series_slots(),
                slot_ns: config.series_slot().get(),
            },
            offset: offset.get(),
            workload: config.workload.map(|w| (w.runtime.get(), w.deadline.get())),
            job: None,
            interval: config.interval.get(),
            periods: config.periods(),
            count_wakeups: matches!(config.length, crate::config::RunLength::Cycles(_)),
            clock: clock_for(cpu),
            shared: Arc::clone(shared),
        })
        .collect()
}

impl<C: Spin + 'static> Worker for LatencyWorker<C> {
    type Cell = CpuCell;

    fn cpu(&self) -> u32 {
        self.setup.cpu
    }

    fn prepare(&mut self) -> Result<Arc<CpuCell>, RunError> {
        let cell = prepare_cpu(&self.setup)?;
        // The job is held to this thread's CPU clock: nothing to calibrate.
        if let Some((runtime, deadline_ns)) = self.workload {
            cell.work.prepared(runtime);
            self.job = Some(Job {
                cpu_ns: runtime,
                deadline_ns,
            });
        }
        Ok(cell)
    }

    fn measure(mut self, cell: &CpuCell, crew: &crew::Shared) {
        let plan = Plan {
            t0: crew.start(),
            offset: self.offset,
            interval: self.interval,
            periods: self.periods,
            count_wakeups: self.count_wakeups,
            break_ns: self.shared.brk.threshold,
            slot_ns: self.setup.slot_ns,
            work: self.job,
        };
        let exit = sampler::sample(&mut self.clock, &plan, cell, &crew.stop);
        if let Exit::Breach { latency_ns, cycle } = exit {
            self.shared.brk.trip(self.setup.cpu, latency_ns, cycle);
            crew.stop.store(true, Ordering::Relaxed);
        }
        self.shared.end.thread_done();
        cell.finish();
    }
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
