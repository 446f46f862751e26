//! The latency engine's run: [`run`] measures how late a periodic real-time thread wakes up
//! on every CPU, through the measuring session every engine shares (`crate::session`); this
//! module is the part that differs (`Latency`).
//!
//! What it adds to the session: describing the host and checking privileges (nothing changed
//! yet); holding `/dev/cpu_dma_latency` (released when the file closes, even if rtlab is
//! killed); the `--trace` recording and the tracefs files `--break` needs; the measuring
//! threads (`crate::threads`), which pin themselves, allocate and touch their memory,
//! take their scheduling policy and wait for one common start a
//! little ahead; the end noticed within a millisecond or two of the last deadline; and the
//! result, with the breach and the trace explained.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use model::Nanos;
use model::host::HostInfo;
use model::measure::{MeasureRun, Progress, RunStatus, Warning};
use sys::pmqos::DmaLatencyRequest;

use crate::cell::CpuCell;
use crate::clock::{FAKE_EPOCH_NS, RealClock};
use crate::config::Config;
use crate::preflight;
use crate::result::{self, RunFacts};
use crate::session::crew::Crew;
use crate::session::{self, Engine, MainThread, TICK};
use crate::threads::{EndStop, Shared, break_state, workers};
use crate::tracing::Session;

pub use crate::env::{ClockChoice, Environment, RunError};
pub use crate::session::{NoObserver, Observer};

/// How often the main thread looks once the planned end has come.
const END_POLL: Duration = Duration::from_millis(1);
/// The common start lies this far ahead of the threads' release, so every thread is asleep
/// before its first deadline however the scheduler orders their release from the barrier.
const START_MARGIN_NS: u64 = 10_000_000;

/// Measures according to `config` and returns the result (status `complete`, `interrupted`
/// or `broke-threshold`). The machine is left as it was whatever happens; only a `--break`
/// that fired leaves tracing switched off, on purpose, and the result says so.
pub fn run(
    config: &Config,
    env: &Environment,
    observer: &mut dyn Observer,
) -> Result<MeasureRun, RunError> {
    match config.engine {
        model::measure::Engine::User => session::run(Latency::new(config, env)?, observer),
        model::measure::Engine::Timerlat => crate::timerlat::run(config, env, observer),
    }
}

/// The latency engine: what a run holds from its preparation to its result. Dropped before
/// its end (an error, a panic), its fields go in this order: the threads stopped and joined,
/// the break trigger closed, the trace removed, the DMA latency request released.
struct Latency<'a> {
    crew: Option<Crew<CpuCell>>,
    shared: Option<Arc<Shared>>,
    session: Option<Session>,
    /// Held for the whole run; dropping it (or the process dying) releases the request.
    dma_guard: Option<DmaLatencyRequest>,
    config: &'a Config,
    env: &'a Environment,
    real: bool,
    facts: RunFacts,
    t0: u64,
    /// Each thread's offset from the common start, in the cells' order.
    offsets: Vec<Nanos>,
}

impl<'a> Latency<'a> {
    /// The host described and the privileges checked; nothing changed yet.
    fn new(config: &'a Config, env: &'a Environment) -> Result<Latency<'a>, RunError> {
        let real = matches!(env.clock, ClockChoice::Real);
        let (host, warnings) = look(config, env, real)?;
        Ok(Latency {
            crew: None,
            shared: None,
            session: None,
            dma_guard: None,
            config,
            env,
            real,
            facts: RunFacts {
                host,
                params: result::params(config, None, !real),
                warnings,
                started_at: SystemTime::now(),
                workload: config.workload,
            },
            t0: 0,
            offsets: config.offsets(),
        })
    }

    fn crew(&self) -> &Crew<CpuCell> {
        self.crew.as_ref().expect("the latency threads are started")
    }

    /// Measured time: up to the last deadline any thread reached (exact for complete runs,
    /// and independent of how quickly the main thread noticed the end).
    fn elapsed(&self) -> Nanos {
        elapsed(self.crew().cells(), self.config)
    }
}

impl Engine for Latency<'_> {
    type Output = MeasureRun;
    type Document = MeasureRun;

    /// Holds the DMA latency request, starts `--trace`'s recording and arms `--break`.
    fn prepare(&mut self) -> Result<MainThread, RunError> {
        let (config, env, real) = (self.config, self.env, self.real);
        let warnings = &mut self.facts.warnings;
        self.dma_guard = preflight::hold_dma_latency(config, env, real, warnings);
        self.facts.params.dma_latency_us = self.dma_guard.as_ref().map(|g| g.requested_us());
        self.session = config
            .trace
            .as_ref()
            .filter(|_| real)
            .and_then(|o| crate::tracing::start(&env.root, o, config.cpus.iter(), warnings));
        let tracefs = self.session.as_ref().map(Session::tracefs);
        let brk = break_state(config, &env.root, real, tracefs, warnings);
        let stopper = tracefs.and_then(|t| t.stopper().ok());
        self.shared = Some(Arc::new(Shared {
            brk,
            end: EndStop::new(config.cpus.len(), stopper),
        }));
        Ok(MainThread {
            cpus: config.main_cpus.clone().filter(|_| real),
            mlock: real && config.mlock,
        })
    }

    fn start(&mut self) -> Result<(), RunError> {
        let (config, real) = (self.config, self.real);
        let shared = self.shared.as_ref().expect("prepared");
        let (name, stack) = ("rtlab", config.stack_bytes);
        self.crew = Some(match &self.env.clock {
            ClockChoice::Real => {
                Crew::start(name, stack, workers(config, real, shared, |_| RealClock))?
            }
            ClockChoice::Fake(script) => Crew::start(
                name,
                stack,
                workers(config, real, shared, |cpu| script.clock_for(cpu)),
            )?,
        });
        Ok(())
    }

    /// Sets the common start, a little ahead, and releases the threads.
    fn go(&mut self) -> Result<MeasureRun, RunError> {
        let real = self.real;
        self.t0 = if real {
            sys::clock::monotonic_ns() + START_MARGIN_NS
        } else {
            FAKE_EPOCH_NS
        };
        self.facts.started_at =
            SystemTime::now() + Duration::from_nanos(if real { START_MARGIN_NS } else { 0 });
        let t0 = self.t0;
        self.crew.as_mut().expect("started").release(t0);
        Ok(result::document(
            &self.facts,
            RunStatus::Running,
            Vec::new(),
            Nanos::ZERO,
            SystemTime::now(),
            None,
        ))
    }

    /// A tick, less near the planned end of a real run: the last deadline (plus the widest
    /// thread offset) is noticed within a millisecond or two rather than a tick.
    fn tick(&self) -> Duration {
        if !self.real {
            return TICK;
        }
        let planned_end = self.t0 + self.config.planned().get() + self.config.interval.get();
        let left = planned_end.saturating_sub(sys::clock::monotonic_ns());
        TICK.min(Duration::from_nanos(left).max(END_POLL))
    }

    /// Every thread done, or a breach stopped them. A new worst latency has `--trace` set
    /// the buffer aside (without `--break`, which freezes it at the breach instead), never
    /// while a thread is past its deadline and not yet run.
    fn ended(&mut self) -> bool {
        if self.session.is_some() && self.config.break_threshold.is_none() {
            let cells = self.crew.as_ref().expect("started").cells();
            let max = || {
                cells
                    .iter()
                    .map(|c| c.accumulator().max_ns)
                    .max()
                    .unwrap_or(0)
            };
            let (t0, interval) = (self.t0, self.config.interval.get());
            let offsets = &self.offsets;
            // A thread's next deadline is t0 + its offset + the periods it has done: how far
            // the latest thread that has not run yet is past it.
            let lateness = || {
                let now = sys::clock::monotonic_ns();
                cells
                    .iter()
                    .zip(offsets)
                    .filter(|(c, _)| !c.is_done())
                    .map(|(c, offset)| {
                        now.saturating_sub(
                            t0.saturating_add(offset.get())
                                .saturating_add(c.periods_done().saturating_mul(interval)),
                        )
                    })
                    .max()
                    .unwrap_or(0)
            };
            if let Some(session) = self.session.as_mut() {
                session.keep_worst(max, lateness);
            }
        }
        self.crew().ended()
    }

    fn progress(&self) -> Option<Progress> {
        let cells = self.crew().cells().iter().map(|c| &**c);
        Some(result::progress(
            cells,
            self.elapsed(),
            self.config.planned(),
        ))
    }

    fn checkpoint_every(&self) -> Option<Duration> {
        self.config.checkpoint.map(Nanos::to_duration)
    }

    fn checkpoint(&self) -> MeasureRun {
        let snaps = self.crew().cells().iter().map(|c| c.snapshot()).collect();
        result::document(
            &self.facts,
            RunStatus::Running,
            snaps,
            self.elapsed(),
            SystemTime::now(),
            None,
        )
    }

    fn stop(&mut self) {
        self.crew().stop();
    }

    /// Joins the threads, releases the DMA latency request, builds the result (a breach
    /// makes it `broke-threshold`) and puts the trace into it.
    fn finish(mut self, mut status: RunStatus) -> Result<MeasureRun, RunError> {
        let mut crew = self.crew.take().expect("started");
        crew.join();
        let shared = self.shared.take().expect("prepared");
        let break_event = shared.brk.event();
        if break_event.is_some() {
            status = RunStatus::BrokeThreshold;
        }
        let snaps = crew.cells().iter().map(|c| c.snapshot()).collect();
        let elapsed = elapsed(crew.cells(), self.config);
        drop(self.dma_guard.take());
        let doc = result::document(
            &self.facts,
            status,
            snaps,
            elapsed,
            SystemTime::now(),
            break_event,
        );
        // The break trigger holds the instance's files open; the instance cannot go while
        // it lives.
        drop(shared);
        Ok(finish_trace(doc, self.session.take()))
    }
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
    warnings.extend(preflight::placement_warnings(&env.root));
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

/// Measured time: up to the last deadline any thread reached (exact for complete runs, and
/// independent of how quickly the main thread noticed the end).
fn elapsed(cells: &[Arc<CpuCell>], config: &Config) -> Nanos {
    let periods = cells.iter().map(|c| c.periods_done()).max().unwrap_or(0);
    Nanos(periods.saturating_mul(config.interval.get()))
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
    warnings.extend(preflight::placement_warnings(&env.root));
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
