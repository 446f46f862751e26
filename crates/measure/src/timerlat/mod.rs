//! `rtlab measure --engine timerlat`: the kernel's timerlat tracer measures, as an engine of
//! the measuring session. It arms a timer per CPU every `--interval` and records how late the
//! timer's IRQ ran and how late its thread ran after it; rtlab reads that trace as it is
//! produced ([`reader`]), into the same per-CPU figures as its own threads give (the thread
//! latency in the run's `cpus`, the IRQ latency in its `timerlat` section), with the
//! auto-analysis of each CPU's worst activation.
//!
//! The tracer runs in rtlab's own trace instance where the kernel allows it (else in the free
//! top-level buffer); its options are restored and the instance removed on every path (the
//! tracer's guard). `--break` is the kernel's own stop (`stop_tracing_us`,
//! `stop_tracing_total_us`) with the IRQ's stack recorded (`print_stack`); the trace of that
//! moment is kept in the result. The run ends after `--duration` or when every CPU has its
//! `--cycles` activations; activations past the plan are not counted, so a complete run has
//! exactly its planned samples per CPU unless the ring buffer lost some (then said).

mod reader;
mod user;

use std::time::{Duration, Instant, SystemTime};

use model::Nanos;
use model::measure::{
    BreakEvent, Engine as MeasureEngine, MeasureRun, Progress, RunStatus, Warning,
};
use model::timerlat::{TimerlatInfo, TimerlatStop};
use sys::pmqos::DmaLatencyRequest;
use sys::timerlat::{TimerlatSettings, TimerlatTracer};
use sys::tracefs::Tracefs;

use crate::config::{Config, RunLength};
use crate::env::{ClockChoice, Environment, RunError};
use crate::result::{self, RunFacts};
use crate::session::{self, Engine, MainThread, Observer, TICK};
use reader::Reader;

/// How long the tracer runs on past the planned end, so the last planned activation of
/// every CPU is in the trace before it stops.
const END_MARGIN: Duration = Duration::from_millis(20);
/// Bytes of trace read per tick at most: a storm of noise events can feed the pipe faster
/// than it is read, and the main thread must still look for signals and the end. What the
/// buffer cannot hold meanwhile is lost, counted and said.
const DRAIN_PER_TICK: usize = 4 << 20;
/// Bytes read at most once the tracer is stopped (a stopped buffer is finite; this bounds a
/// kernel that keeps writing).
const DRAIN_AT_END: usize = 256 << 20;

/// Measures with the timerlat tracer according to `config`.
pub(crate) fn run(
    config: &Config,
    env: &Environment,
    observer: &mut dyn Observer,
) -> Result<MeasureRun, RunError> {
    if !matches!(env.clock, ClockChoice::Real) {
        return Err(RunError::Setup(
            "--engine timerlat measures with the kernel's tracer; a scripted clock cannot drive it"
                .to_string(),
        ));
    }
    let fs = available(env)?;
    session::run(Timerlat::new(config, env, fs), observer)
}

/// The tracer's tracefs, or why it cannot be used (one line, with how to get it).
pub fn available(env: &Environment) -> Result<Tracefs, RunError> {
    sys::timerlat::available(&env.root).ok_or_else(|| {
        let why = match Tracefs::find(&env.root) {
            None => format!("tracefs is not mounted ({})", sys::tracefs::mount_hint()),
            Some(_) => "this kernel has no timerlat tracer: it needs CONFIG_TIMERLAT_TRACER, which every PREEMPT_RT kernel Debian ships has (`apt install linux-image-rt-amd64`, or -rt-arm64)".to_string(),
        };
        RunError::Setup(format!(
            "--engine timerlat: {why}; --engine user measures without it"
        ))
    })
}

/// The timerlat tracer as an engine of the measuring session.
struct Timerlat<'a> {
    config: &'a Config,
    env: &'a Environment,
    fs: Tracefs,
    settings: TimerlatSettings,
    facts: RunFacts,
    dma_guard: Option<DmaLatencyRequest>,
    /// With `--user-threads`: the measuring threads (stopped and joined before the tracer,
    /// also when dropped: fields drop in order).
    users: Option<user::UserThreads>,
    /// The tracer, running (restored when dropped, on every path).
    tracer: Option<TimerlatTracer>,
    reader: Reader,
    buf: Vec<u8>,
    /// A read of the pipe failed: the run ends and says so.
    read_error: Option<String>,
    /// When the noise events were switched off because they came faster than they could be
    /// read (the samples go on; the analysis covers the time before).
    events_off_at: Option<Duration>,
    t0: Instant,
    end: Instant,
    /// When the tracer was stopped (the measured time ends there).
    stopped_at: Option<Instant>,
}

impl<'a> Timerlat<'a> {
    /// The tracer's settings from `config`; nothing changed yet.
    fn new(config: &'a Config, env: &'a Environment, fs: Tracefs) -> Self {
        let stop_us = config
            .break_threshold
            .map(|b| b.get().div_ceil(1_000).max(1));
        let mut warnings: Vec<Warning> =
            crate::preflight::warnings(config, &sys::host::host_info(&env.root));
        warnings.extend(crate::preflight::placement_warnings(&env.root));
        if let Some(b) = config.break_threshold
            && !b.get().is_multiple_of(1_000)
        {
            warnings.push(Warning::new(
                "break-rounded",
                format!(
                    "the timerlat tracer stops at whole microseconds: --break {b} is {} us",
                    stop_us.unwrap_or(0)
                ),
            ));
        }
        let settings = TimerlatSettings {
            cpus: config.cpus.clone(),
            period_us: config.interval.get() / 1_000,
            stop_irq_us: stop_us,
            stop_thread_us: stop_us,
            print_stack_us: stop_us,
            user_threads: config.user_threads,
        };
        let mut params = result::params(config, None, false);
        params.engine = MeasureEngine::Timerlat;
        // The kernel's threads measure, or rtlab's user threads (whose memory is locked; their
        // stacks are the default's: they only read a file).
        params.mlock = config.user_threads && config.mlock;
        params.thread_stack_bytes = 0;
        let reader = Reader::new(
            config.cpus.iter().collect(),
            config.interval,
            config.periods(),
            (config.spikes, config.series_slot(), config.series_slots()),
            stop_us,
        );
        let now = Instant::now();
        Timerlat {
            config,
            env,
            fs,
            settings,
            facts: RunFacts {
                host: sys::host::host_info(&env.root),
                params,
                warnings,
                started_at: SystemTime::now(),
                workload: None,
            },
            dma_guard: None,
            users: None,
            tracer: None,
            reader,
            buf: Vec::with_capacity(256 * 1024),
            read_error: None,
            events_off_at: None,
            t0: now,
            end: now,
            stopped_at: None,
        }
    }

    /// Reads what the pipe holds (up to `at_most` bytes) into the figures.
    fn drain(&mut self, at_most: usize) {
        let Some(tracer) = self.tracer.as_mut() else {
            return;
        };
        self.buf.clear();
        match tracer.drain(&mut self.buf, at_most) {
            Ok(n) => {
                // The pipe held more than a tick's worth: the noise events outrun the
                // reader, and the samples would be lost with them. They go; the samples stay.
                if n >= at_most && self.events_off_at.is_none() && tracer.noise_events_off().is_ok()
                {
                    self.events_off_at = Some(self.t0.elapsed());
                }
                self.reader.feed(&self.buf);
            }
            Err(e) => {
                self.read_error.get_or_insert(e.to_string());
            }
        }
    }

    /// Measured time: since the tracer was armed, at most the plan (the tracer skips the
    /// periods its thread was too late for, so counting activations would say less).
    fn elapsed(&self) -> Nanos {
        let until = self.stopped_at.unwrap_or_else(Instant::now);
        let since = until.saturating_duration_since(self.t0).as_nanos();
        Nanos(
            u64::try_from(since)
                .unwrap_or(u64::MAX)
                .min(self.config.planned().get()),
        )
    }

    fn snapshots(&self) -> Vec<crate::cell::CellSnapshot> {
        let cpus = self.reader.cpus();
        cpus.iter()
            .zip(&self.reader.thread)
            .map(|(&cpu, f)| f.snapshot(cpu))
            .collect()
    }

    fn document(&self, status: RunStatus, break_event: Option<BreakEvent>) -> MeasureRun {
        let mut doc = result::document(
            &self.facts,
            status,
            self.snapshots(),
            self.elapsed(),
            SystemTime::now(),
            break_event,
        );
        doc.timerlat = Some(self.section());
        doc
    }

    /// The `timerlat` section: the IRQ (and user) figures, the stop, the analyses.
    fn section(&self) -> TimerlatInfo {
        let results = |list: &[reader::Figures]| {
            self.reader
                .cpus()
                .iter()
                .zip(list)
                .map(|(&cpu, f)| {
                    let s = f.snapshot(cpu);
                    model::measure::cpu_result(cpu, s.tid, s.acc, s.histogram, s.spikes, s.series)
                })
                .collect::<Vec<_>>()
        };
        let user = if self.reader.user.iter().any(|f| f.count() > 0) {
            results(&self.reader.user)
        } else {
            Vec::new()
        };
        let stop = self.reader.stop.as_ref().map(|s| TimerlatStop {
            cpu: s.cpu,
            context: s.context,
            activation: s.activation,
            latency_ns: s.latency_ns,
            stack: s.stack.clone(),
            window: self.reader.window(),
        });
        let mut analyses = self.reader.analyser.worst();
        if let Some(s) = &self.reader.stop
            && let Some(last) = self.reader.analyser.last(s.cpu)
        {
            analyses.retain(|a| !(a.cpu == last.cpu && a.activation == last.activation));
            analyses.insert(0, last);
        }
        analyses.truncate(model::timerlat::MAX_ANALYSES);
        TimerlatInfo {
            period_ns: self.config.interval,
            in_instance: self
                .tracer
                .as_ref()
                .is_some_and(TimerlatTracer::in_instance),
            user_threads: self.config.user_threads,
            stop_ns: self.settings.stop_thread_us.map(Nanos::from_us),
            stack_ns: self.settings.print_stack_us.map(Nanos::from_us),
            trace_clock: "local".to_string(),
            irq: results(&self.reader.irq),
            user,
            lost_events: self.reader.lost,
            stop,
            analyses,
        }
    }
}

impl Engine for Timerlat<'_> {
    type Output = MeasureRun;
    type Document = MeasureRun;

    /// Holds the DMA latency request, as the user engine does: the tracer's threads meet the
    /// same idle states.
    fn prepare(&mut self) -> Result<MainThread, RunError> {
        self.dma_guard = crate::preflight::hold_dma_latency(
            self.config,
            self.env,
            true,
            &mut self.facts.warnings,
        );
        self.facts.params.dma_latency_us = self.dma_guard.as_ref().map(|g| g.requested_us());
        if self.config.user_threads && !sys::timerlat::has_user_threads(&self.fs) {
            return Err(RunError::Setup(
                "--user-threads: this kernel's timerlat tracer takes no user-space threads (timerlat_fd came with Linux 6.6); leave --user-threads out to measure with the kernel's threads".to_string(),
            ));
        }
        self.facts.params.main_cpus = self.main_cpus();
        Ok(MainThread {
            cpus: self.main_cpus(),
            // The user threads' memory is rtlab's: locked as the user engine's is.
            mlock: self.config.user_threads && self.config.mlock,
        })
    }

    fn start(&mut self) -> Result<(), RunError> {
        Ok(())
    }

    /// Arms the tracer: its threads start measuring.
    fn go(&mut self) -> Result<MeasureRun, RunError> {
        self.facts.started_at = SystemTime::now();
        let tracer =
            TimerlatTracer::start(&self.fs, &self.settings).map_err(|source| RunError::Kernel {
                what: "starting the timerlat tracer (run as root: it is driven through tracefs)"
                    .to_string(),
                source,
            })?;
        if self.config.user_threads {
            let cpus: Vec<u32> = self.config.cpus.iter().collect();
            self.users = Some(user::UserThreads::start(tracer.top(), &cpus)?);
        }
        self.tracer = Some(tracer);
        self.t0 = Instant::now();
        self.end = match self.config.length {
            RunLength::Duration(d) => self.t0 + d.to_duration(),
            // Ends when every CPU has its activations; this is the bound if some never come.
            RunLength::Cycles(_) => {
                self.t0 + self.config.planned().to_duration() * 2 + Duration::from_secs(1)
            }
        };
        Ok(self.document(RunStatus::Running, None))
    }

    fn tick(&self) -> Duration {
        self.end.saturating_duration_since(Instant::now()).min(TICK)
    }

    /// The planned end, every CPU's activations read, the tracer's stop, or a failed read.
    fn ended(&mut self) -> bool {
        self.drain(DRAIN_PER_TICK);
        let cycles_done =
            matches!(self.config.length, RunLength::Cycles(_)) && self.reader.all_done();
        Instant::now() >= self.end
            || cycles_done
            || self.reader.stop.is_some()
            || self.read_error.is_some()
    }

    fn progress(&self) -> Option<Progress> {
        Some(crate::result::progress_of(
            self.snapshots().iter(),
            self.elapsed(),
            self.config.planned(),
        ))
    }

    fn checkpoint_every(&self) -> Option<Duration> {
        self.config.checkpoint.map(Nanos::to_duration)
    }

    fn checkpoint(&self) -> MeasureRun {
        self.document(RunStatus::Running, None)
    }

    fn stop(&mut self) {
        if let Some(users) = &self.users {
            users.stop();
        }
    }

    /// Lets the last planned activations arrive, stops the tracer, reads the rest of its
    /// trace, restores it, and builds the document.
    fn finish(mut self, status: RunStatus) -> Result<MeasureRun, RunError> {
        if status == RunStatus::Complete && self.reader.stop.is_none() {
            std::thread::sleep(self.config.interval.to_duration() + END_MARGIN);
        }
        // The user threads end after their next activation, while the tracer still runs.
        let joined = self.users.take().map_or(Ok(()), user::UserThreads::join);
        if let Some(tracer) = self.tracer.as_ref() {
            let _ = tracer.stop();
        }
        self.stopped_at = Some(Instant::now());
        self.drain(DRAIN_AT_END);
        let section = self.section();
        let tracer = self.tracer.take().expect("armed");
        tracer.restore().map_err(|source| RunError::Kernel {
            what: "restoring the timerlat tracer's options".to_string(),
            source,
        })?;
        drop(self.dma_guard.take());
        joined?;
        if let Some(e) = &self.read_error {
            return Err(RunError::Setup(format!(
                "reading the timerlat tracer's trace: {e}"
            )));
        }
        self.note_losses();
        let (status, break_event) = match &self.reader.stop {
            Some(s) => (
                RunStatus::BrokeThreshold,
                Some(BreakEvent {
                    cpu: s.cpu,
                    latency_ns: s.latency_ns,
                    cycle: s.activation.saturating_sub(1),
                    trace_frozen: true,
                    tracefs: None,
                }),
            ),
            None => (status, None),
        };
        let mut doc = self.document(status, break_event);
        doc.timerlat = Some(section);
        Ok(doc)
    }
}

impl Timerlat<'_> {
    /// Where rtlab's reader runs: `--main-cpu`, else the CPUs it may use but the measured
    /// ones (it reads and parses the trace all run long; on a measured CPU it would be the
    /// thread that blocks the timerlat thread), else where it is.
    fn main_cpus(&self) -> Option<model::CpuSet> {
        if let Some(cpus) = &self.config.main_cpus {
            return Some(cpus.clone());
        }
        let allowed = sys::sched::affinity().ok()?;
        let others: model::CpuSet = allowed
            .iter()
            .filter(|c| !self.config.cpus.contains(*c))
            .collect();
        (!others.is_empty()).then_some(others)
    }

    /// Warnings for what the trace could not give.
    fn note_losses(&mut self) {
        if let Some(at) = self.events_off_at {
            self.facts.warnings.push(Warning::new(
                "timerlat-events-off",
                format!(
                    "the tracer's noise events came faster than rtlab could read them, and were switched off {:.1} s into the run so that no sample was lost: the analysis covers the activations before",
                    at.as_secs_f64()
                ),
            ));
        }
        if self.reader.lost > 0 {
            self.facts.warnings.push(Warning::new(
                "trace-lost-events",
                format!(
                    "the tracer's ring buffer lost {} events before rtlab read them: those activations are missing from the figures (a busy main CPU; give rtlab's main thread a CPU of its own with --main-cpu)",
                    self.reader.lost
                ),
            ));
        }
        if self.reader.malformed > 0 {
            self.facts.warnings.push(Warning::new(
                "trace-unreadable-lines",
                format!(
                    "{} lines of the tracer's trace could not be read",
                    self.reader.malformed
                ),
            ));
        }
    }
}
