//! `rtlab noise --engine user`: rtlab's own detector as an engine of the measuring
//! [`session`](crate::session). What it adds to the session: the counter chosen and
//! calibrated, the attribution trace started, the main thread kept off the measured CPUs, a
//! detector thread per CPU ([`NoiseWorker`]) that spins to the common start and polls until
//! the end, the interruption logs drained every tick, and the `rtlab.noise/1` document with
//! each interruption attributed from the trace.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use model::measure::{MeasureRun, Progress, RunStatus, Warning};
use model::{CpuSet, Nanos};
use sys::counter::CounterKind;
use sys::parse::stat::CpuTimes;
use sys::sched::SchedParams;

use super::detector::{self, NoiseCell, Scale};
use super::figures::{self, PlanSpec};
use super::tracing::{self, NoiseTrace};
use super::{HwWindows, NoiseConfig};
use crate::env::{ClockChoice, Environment, RunError};
use crate::result::{self, RunFacts};
use crate::session::crew::{self, Crew, ThreadSetup, Worker, prepare_cpu};
use crate::session::{Engine, MainThread, TICK};

/// How long the counter is calibrated against CLOCK_MONOTONIC_RAW before a run.
const CALIBRATION_NS: u64 = 50_000_000;
/// The common start lies this far ahead of the main thread's release.
const START_MARGIN_NS: u64 = 10_000_000;
/// Interruptions kept per CPU for attribution (16 bytes each); more are counted unexplained.
const MAX_WINDOWS: usize = 1 << 22;

/// The user-space noise engine: what a run holds from its preparation to its result.
/// Dropped before its end (an error, a panic), the threads are stopped and joined first, then
/// the trace instance is removed.
pub(super) struct UserNoise<'a> {
    crew: Option<Crew<NoiseCell>>,
    trace: Option<NoiseTrace>,
    config: &'a NoiseConfig,
    env: &'a Environment,
    facts: RunFacts,
    kind: CounterKind,
    hz: u64,
    scale: Scale,
    hypervisor: Option<String>,
    steal_before: Option<Vec<(u32, CpuTimes)>>,
    /// Counter value and CLOCK_MONOTONIC_RAW at the release; the common start and end.
    anchor: (u64, u64),
    start: u64,
    end: u64,
    /// Per CPU, the interruptions drained from its ring (counter values), and how many did
    /// not fit.
    logs: Vec<Vec<(u64, u64)>>,
    overflow: Vec<u64>,
}

impl<'a> UserNoise<'a> {
    /// The host described and the privileges checked; nothing changed yet.
    pub(super) fn new(
        config: &'a NoiseConfig,
        env: &'a Environment,
    ) -> Result<UserNoise<'a>, RunError> {
        if !matches!(env.clock, ClockChoice::Real) {
            return Err(RunError::Setup(
                "rtlab noise measures with the CPU's counter; it has no scripted clock".to_string(),
            ));
        }
        crate::run::check_policy_privileges("rtlab noise", config.policy, config.priority)?;
        let host = sys::host::host_info(&env.root);
        let rt_limit = host
            .sched_rt_runtime_us
            .zip(host.sched_rt_period_us.and_then(|p| u64::try_from(p).ok()));
        let mut warnings = config.warnings(rt_limit);
        warnings.extend(crate::preflight::placement_warnings(&env.root));
        let n = config.cpus.len();
        Ok(UserNoise {
            crew: None,
            trace: None,
            config,
            env,
            facts: RunFacts {
                host,
                params: figures::params(config, CounterKind::MonotonicRaw.as_str()),
                warnings,
                started_at: SystemTime::now(),
                workload: None,
            },
            kind: CounterKind::MonotonicRaw,
            hz: 1,
            scale: Scale::new(1),
            hypervisor: None,
            steal_before: None,
            anchor: (0, 0),
            start: 0,
            end: 0,
            logs: vec![Vec::new(); n],
            overflow: vec![0; n],
        })
    }

    fn crew(&self) -> &Crew<NoiseCell> {
        self.crew
            .as_ref()
            .expect("the detector threads are started")
    }

    /// The document from the cells so far.
    fn document(&self, status: RunStatus, steal: Option<&Vec<(u32, u64)>>) -> MeasureRun {
        let cells = self.crew.as_ref().map_or(&[][..], Crew::cells);
        let counter = (self.kind, self.hz);
        figures::document(&self.facts, self.config, counter, cells, status, steal)
    }

    /// Moves each ring's interruptions into the run's log, up to [`MAX_WINDOWS`] per CPU.
    fn drain(&mut self) {
        let Some(crew) = &self.crew else { return };
        drain(crew.cells(), &mut self.logs, &mut self.overflow);
    }
}

impl Engine for UserNoise<'_> {
    type Output = (MeasureRun, HwWindows);
    type Document = MeasureRun;

    /// Chooses and calibrates the counter, starts the trace, and chooses the main thread's
    /// CPUs: off the measured ones, as oslat keeps its own, unless there is no other CPU or
    /// `--main-cpu` says where.
    fn prepare(&mut self) -> Result<MainThread, RunError> {
        let root = &self.env.root;
        let (kind, why_not) = sys::counter::choose(root);
        if let Some(why) = why_not {
            self.facts.warnings.push(Warning::new(
                "noise-counter",
                format!("{why}: the detector reads CLOCK_MONOTONIC_RAW through the vDSO, which is slower per read"),
            ));
        }
        self.kind = kind;
        self.hz = sys::counter::frequency(kind, CALIBRATION_NS);
        self.scale = Scale::new(self.hz);
        self.hypervisor = sys::cpu::hypervisor(root);
        self.steal_before = sys::cpu::times(root).ok();
        if self.config.attribute {
            let cpus = self.config.cpus.iter();
            self.trace = tracing::start(root, cpus, &mut self.facts.warnings);
        }
        let main = self
            .config
            .main_cpus
            .clone()
            .or_else(|| other_cpus(root, &self.config.cpus));
        self.facts.params = model::measure::MeasureParams {
            main_cpus: main.clone(),
            ..figures::params(self.config, kind.as_str())
        };
        Ok(MainThread {
            cpus: main,
            mlock: self.config.mlock,
        })
    }

    fn start(&mut self) -> Result<(), RunError> {
        let config = self.config;
        let spec = PlanSpec::new(config, self.scale);
        let workers = config
            .cpus
            .iter()
            .map(|cpu| NoiseWorker {
                setup: ThreadSetup {
                    cpu,
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
                },
                spec,
                kind: self.kind,
            })
            .collect();
        self.crew = Some(Crew::start("rtlab-noise", config.stack_bytes, workers)?);
        Ok(())
    }

    /// The common start, a little ahead so every thread is polling before it.
    fn go(&mut self) -> Result<MeasureRun, RunError> {
        self.anchor = sys::counter::pair(self.kind);
        self.start = self
            .anchor
            .0
            .saturating_add(self.scale.ticks(START_MARGIN_NS));
        self.end = PlanSpec::new(self.config, self.scale).end(self.start);
        self.facts.started_at = SystemTime::now() + Duration::from_nanos(START_MARGIN_NS);
        let start = self.start;
        self.crew.as_mut().expect("started").release(start);
        let counter = (self.kind, self.hz);
        Ok(figures::document(
            &self.facts,
            self.config,
            counter,
            &[],
            RunStatus::Running,
            None,
        ))
    }

    fn tick(&self) -> Duration {
        TICK
    }

    /// Drains the logs; every detector out of its loop is the end.
    fn ended(&mut self) -> bool {
        self.drain();
        self.crew().ended()
    }

    fn progress(&self) -> Option<Progress> {
        let cells = self.crew().cells().iter().map(|c| &*c.cell);
        let now = sys::counter::read(self.kind);
        let elapsed = Nanos(self.scale.ns(now.saturating_sub(self.start)));
        Some(result::progress(cells, elapsed, self.config.duration))
    }

    fn checkpoint_every(&self) -> Option<Duration> {
        self.config.checkpoint.map(Nanos::to_duration)
    }

    fn checkpoint(&self) -> MeasureRun {
        self.document(RunStatus::Running, None)
    }

    fn stop(&mut self) {
        self.crew().stop();
    }

    /// Joins the detectors, drains what is left, and attributes every logged interruption
    /// from the trace (which is removed then).
    fn finish(mut self, status: RunStatus) -> Result<(MeasureRun, HwWindows), RunError> {
        self.crew.as_mut().expect("started").join();
        self.drain();
        let finish = sys::counter::pair(self.kind);
        let steal = self.steal_before.take().and_then(|before| {
            let after = sys::cpu::times(&self.env.root).ok()?;
            Some(figures::steal_ns(&before, &after))
        });
        let mut doc = self.document(status, steal.as_ref());
        let ran = finish.0.min(self.end).saturating_sub(self.start);
        doc.elapsed_ns = Nanos(self.scale.ns(ran));
        let crew = self.crew.take().expect("started");
        let cells = crew.cells();
        let unexplained: Vec<u64> = cells
            .iter()
            .zip(&self.overflow)
            .map(|(c, o)| c.dropped().saturating_add(*o))
            .collect();
        let logs = std::mem::take(&mut self.logs);
        let fit = figures::Fit::new(self.anchor, finish);
        let attribution = self.trace.take().map(|t| attribute(t, cells, logs, fit));
        let hw = attribution.as_ref().map(|a| {
            a.per_cpu
                .iter()
                .map(|(cpu, a)| (*cpu, a.hw_windows.clone()))
                .collect()
        });
        figures::attribute(&mut doc, attribution, &unexplained, self.hypervisor.take());
        Ok((doc, hw))
    }
}

/// The CPUs other than `measured` this process may use (`None` if there is none). In the RT
/// cpuset of a tuned machine (or a container's) the others are out of reach, and the main
/// thread then shares the measured CPUs.
fn other_cpus(root: &sys::Root, measured: &CpuSet) -> Option<CpuSet> {
    let allowed = sys::sched::affinity().ok();
    let others: CpuSet = sys::cpu::online(root)
        .ok()?
        .iter()
        .filter(|c| !measured.contains(*c))
        .filter(|c| allowed.as_ref().is_none_or(|a| a.contains(*c)))
        .collect();
    (!others.is_empty()).then_some(others)
}

/// Each CPU's logged interruptions placed on the trace clock and attributed from the trace.
fn attribute(
    trace: NoiseTrace,
    cells: &[Arc<NoiseCell>],
    logs: Vec<Vec<(u64, u64)>>,
    fit: figures::Fit,
) -> figures::Attributed {
    let missing = trace.missing.clone();
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
    let (per_cpu, notes) = trace.finish(windows);
    figures::Attributed {
        per_cpu,
        missing,
        notes,
    }
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

/// A detector thread: its CPU prepared and its interruption ring allocated; from the common
/// start, polling its counter until the end or a stop.
struct NoiseWorker {
    setup: ThreadSetup,
    spec: PlanSpec,
    kind: CounterKind,
}

impl Worker for NoiseWorker {
    type Cell = NoiseCell;

    fn cpu(&self) -> u32 {
        self.setup.cpu
    }

    fn prepare(&mut self) -> Result<Arc<NoiseCell>, RunError> {
        prepare_cpu(&self.setup).map(|cell| Arc::new(NoiseCell::new(cell)))
    }

    fn measure(self, cell: &NoiseCell, crew: &crew::Shared) {
        let start = crew.start();
        let plan = self
            .spec
            .plan(start, self.spec.end(start), sys::counter::pair(self.kind));
        // Wait for the common start without polling figures into the result.
        while sys::counter::read(self.kind) < start && !crew.stop.load(Ordering::Relaxed) {
            std::hint::spin_loop();
        }
        let sleep = |ns: u64| sys::clock::sleep_ns(ns);
        let stop = &crew.stop;
        let _exit: detector::Exit = match self.kind {
            CounterKind::Tsc => detector::detect::<sys::counter::Tsc>(&plan, cell, stop, &sleep),
            CounterKind::Cntvct => {
                detector::detect::<sys::counter::Cntvct>(&plan, cell, stop, &sleep)
            }
            CounterKind::MonotonicRaw => {
                detector::detect::<sys::counter::MonoRaw>(&plan, cell, stop, &sleep)
            }
        };
        cell.cell.finish();
    }
}
