//! [`Config`]: a measurement's parameters, validated, and the rules that refuse bad ones.
//!
//! The CLI turns text into typed values; this module decides what combinations make sense
//! (an interval too short to measure, a priority that starves the kernel, deadline parameters
//! the kernel would reject) so every front end gets the same answers and the same messages.

use model::limits::{MAX_RUN, MAX_SERIES_SLOTS, MAX_SPIKES};
use model::measure::{Engine, Policy};
use model::{CpuSet, Nanos};

/// Shortest interval accepted: below it the thread spends most of its time in the kernel's
/// timer and scheduler paths and the figures describe that overhead, not latency.
pub const MIN_INTERVAL: Nanos = Nanos::from_us(20);

/// Default stack size of a measuring thread: small, because with mlockall every byte of every
/// thread stack is locked in RAM (a default 8 MiB stack per CPU is what makes cyclictest's
/// resident size grow with the CPU count).
pub const DEFAULT_STACK_BYTES: usize = 128 * 1024;

/// How much of that stack is touched before measuring, so no page fault lands in the loop.
pub const PREFAULT_STACK_BYTES: usize = 64 * 1024;

/// How long a run lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunLength {
    /// For this long.
    Duration(Nanos),
    /// For this many periods per CPU.
    Cycles(u64),
}

/// A validated measurement configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// What measures: rtlab's threads, or the kernel's timerlat tracer.
    pub engine: Engine,
    /// With the timerlat tracer: user-space threads reading `timerlat_fd` measure, not the
    /// kernel's own.
    pub user_threads: bool,
    /// CPUs to measure, one thread each.
    pub cpus: CpuSet,
    /// Period of every measuring thread.
    pub interval: Nanos,
    /// How long to run.
    pub length: RunLength,
    /// Wake every thread at the same instant (otherwise spread over the period).
    pub aligned: bool,
    /// Scheduling policy of the measuring threads.
    pub policy: Policy,
    /// Real-time priority (0 for policies without one).
    pub priority: u8,
    /// SCHED_DEADLINE runtime.
    pub dl_runtime: Option<Nanos>,
    /// SCHED_DEADLINE period (defaults to the interval).
    pub dl_period: Option<Nanos>,
    /// CPUs for the non-measuring threads.
    pub main_cpus: Option<CpuSet>,
    /// Lock memory and pre-fault stacks.
    pub mlock: bool,
    /// Request held on /dev/cpu_dma_latency (us), `None` for off.
    pub dma_latency_us: Option<u32>,
    /// Stop at the first sample above this.
    pub break_threshold: Option<Nanos>,
    /// Worst samples kept per CPU.
    pub spikes: u32,
    /// Interval between checkpoints of the result file.
    pub checkpoint: Option<Nanos>,
    /// Stack size of each measuring thread.
    pub stack_bytes: usize,
    /// `--trace`: capture a kernel trace and explain the spikes.
    pub trace: Option<TraceOptions>,
    /// `--workload`: work after each wake-up, and its deadline.
    pub workload: Option<Workload>,
}

/// The job each measuring thread runs after waking (`--workload`, `--workload-deadline`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Workload {
    /// The execution time asked for: each job's CPU time.
    pub runtime: Nanos,
    /// The deadline after each release (default: the interval).
    pub deadline: Nanos,
}

/// What a person asked for, before validation. Every field is optional where a default exists.
#[derive(Clone, Debug, Default)]
pub struct Request {
    /// `--engine` (`user` when not given).
    pub engine: Engine,
    /// `--user-threads`.
    pub user_threads: bool,
    /// Resolved CPUs (the CLI resolves `all` / `!N` against the machine).
    pub cpus: CpuSet,
    /// `--interval`.
    pub interval: Option<Nanos>,
    /// `--duration`.
    pub duration: Option<Nanos>,
    /// `--cycles`.
    pub cycles: Option<u64>,
    /// `--aligned`.
    pub aligned: bool,
    /// `--policy`.
    pub policy: Option<Policy>,
    /// `--priority`.
    pub priority: Option<u8>,
    /// `--allow-prio-99`.
    pub allow_prio_99: bool,
    /// `--dl-runtime`.
    pub dl_runtime: Option<Nanos>,
    /// `--dl-period`.
    pub dl_period: Option<Nanos>,
    /// `--main-cpu`.
    pub main_cpus: Option<CpuSet>,
    /// `--no-mlock`.
    pub no_mlock: bool,
    /// `--dma-latency` (`None` = default 0, `Some(None)` = off).
    pub dma_latency_us: Option<Option<u32>>,
    /// `--break`.
    pub break_threshold: Option<Nanos>,
    /// `--spikes`.
    pub spikes: Option<u32>,
    /// `--checkpoint`.
    pub checkpoint: Option<Nanos>,
    /// `--trace` and its options.
    pub trace: Option<TraceOptions>,
    /// `--workload`.
    pub workload: Option<Nanos>,
    /// `--workload-deadline`.
    pub deadline: Option<Nanos>,
}

/// How `--trace` captures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceOptions {
    /// Ring buffer per CPU, KiB (`--trace-buffer`).
    pub buffer_kb: u64,
    /// Where to keep the whole trace as text (`--trace-dir`), besides the windows stored with
    /// the run.
    pub keep_dir: Option<std::path::PathBuf>,
    /// Spikes to explain at most.
    pub explain: usize,
    /// Keep and explain the trace of a `--break` only (`rtlab monitor`'s armed segments): no
    /// snapshot of the buffer at each new maximum, and nothing explained when the run did not
    /// break. A monitor's segments that end without a breach have nothing to explain, and the
    /// snapshots cost its main thread about as much as measuring.
    pub at_break_only: bool,
}

impl Default for TraceOptions {
    fn default() -> TraceOptions {
        TraceOptions {
            buffer_kb: 4096,
            keep_dir: None,
            explain: 8,
            at_break_only: false,
        }
    }
}

/// A parameter combination rtlab refuses. Each message names the value and the fix.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// Interval below [`MIN_INTERVAL`].
    #[error(
        "--interval {0} is below the {MIN_INTERVAL} minimum: at that rate the figures measure timer and scheduler overhead, not latency; use 20us or more"
    )]
    IntervalTooShort(Nanos),
    /// A zero-length run.
    #[error("--duration {0} is shorter than one interval ({1}); give a longer duration")]
    TooShort(Nanos, Nanos),
    /// Zero cycles.
    #[error("--cycles 0 measures nothing; give at least 1")]
    NoCycles,
    /// Both lengths.
    #[error("--duration and --cycles both given; choose one")]
    BothLengths,
    /// Priority out of range.
    #[error(
        "--priority {0} is out of range; SCHED_FIFO and SCHED_RR take 1 to 98 (99 only with --allow-prio-99)"
    )]
    PriorityRange(u8),
    /// Priority 99 without consent.
    #[error(
        "--priority 99 would starve kernel threads that run at 99 (migration, watchdogs, some IRQ threads); use 98 or less, or pass --allow-prio-99 if you mean it"
    )]
    Priority99,
    /// A priority for a policy that has none.
    #[error(
        "--priority applies to fifo and rr only; --policy {0} runs at priority 0 (leave --priority out)"
    )]
    PriorityWithoutRt(&'static str),
    /// Deadline without a runtime.
    #[error(
        "--policy deadline needs --dl-runtime (the CPU time reserved each period), e.g. --dl-runtime 100us"
    )]
    DeadlineNeedsRuntime,
    /// Deadline options without the deadline policy.
    #[error("--dl-runtime and --dl-period apply to --policy deadline only")]
    DeadlineOptionsWithoutDeadline,
    /// Bad deadline parameters.
    #[error("--dl-runtime {runtime} must be at least 1024ns and no more than --dl-period {period}")]
    DeadlineParams {
        /// Runtime.
        runtime: Nanos,
        /// Period.
        period: Nanos,
    },
    /// No CPU to measure.
    #[error("no CPU selected to measure")]
    NoCpus,
    /// A break threshold of zero.
    #[error("--break 0 would stop at the first sample; give a latency such as 100us")]
    ZeroBreak,
    /// A checkpoint interval too short to be sensible.
    #[error(
        "--checkpoint {0} is shorter than 1s; rewriting the file that often disturbs the measurement"
    )]
    CheckpointTooShort(Nanos),
    /// A duration or cycle count whose plan is longer than [`MAX_RUN`].
    #[error(
        "--duration/--cycles plans {0} at this interval, longer than the {MAX_RUN} rtlab measures in one run; give {MAX_RUN} or less and start another run after it"
    )]
    TooLong(String),
    /// A spike table larger than [`MAX_SPIKES`].
    #[error(
        "--spikes {0} is more than the {MAX_SPIKES} worst samples rtlab keeps per CPU (the table is searched in the measuring loop); give {MAX_SPIKES} or less — the histogram keeps every sample anyway"
    )]
    TooManySpikes(u32),
    /// A workload shorter than the clock can time.
    #[error("--workload {0} is shorter than 1us; give the job's execution time, e.g. 200us")]
    WorkloadTooShort(Nanos),
    /// A workload that does not fit its period.
    #[error(
        "--workload {0} is not shorter than --interval {1}: each job must end before the next period; give a shorter workload or a longer interval"
    )]
    WorkloadOverInterval(Nanos, Nanos),
    /// A deadline without work to meet it.
    #[error(
        "--workload-deadline needs --workload: the deadline is for the job each period runs, e.g. --workload 300us --workload-deadline 500us"
    )]
    DeadlineWithoutWorkload,
    /// A deadline outside the period.
    #[error("--workload-deadline {0} must be above zero and at most --interval {1}")]
    DeadlineRange(Nanos, Nanos),
    /// A checkpoint interval longer than any run.
    #[error("--checkpoint {0} is longer than the longest run ({MAX_RUN}); give e.g. 10s")]
    CheckpointTooLong(Nanos),
    /// An option of the user engine given to the timerlat engine.
    #[error(
        "{0} is the user engine's: with --engine timerlat the kernel's timerlat threads measure (SCHED_FIFO 95); leave {0} out or use --engine user"
    )]
    NotForTimerlat(&'static str),
    /// `--user-threads` without the timerlat engine.
    #[error(
        "--user-threads makes user-space threads the timerlat tracer's measuring threads; give --engine timerlat with it"
    )]
    UserThreadsWithoutTimerlat,
    /// A period the timerlat tracer does not take.
    #[error(
        "--interval {0} with --engine timerlat: the tracer's period is whole microseconds from 100us to 1s; give e.g. 1ms"
    )]
    TimerlatPeriod(Nanos),
}

/// What the timerlat engine refuses: the options of rtlab's own threads, and a period the
/// tracer cannot take (`osnoise/timerlat_period_us`: 100 to 1 000 000 us).
fn timerlat_checks(req: &Request, interval: Nanos) -> Result<(), ConfigError> {
    let user_only = [
        ("--policy", req.policy.is_some_and(|p| p != Policy::Fifo)),
        ("--priority", req.priority.is_some()),
        ("--dl-runtime", req.dl_runtime.is_some()),
        ("--dl-period", req.dl_period.is_some()),
        ("--aligned", req.aligned),
        ("--workload", req.workload.is_some()),
        ("--workload-deadline", req.deadline.is_some()),
        ("--trace", req.trace.is_some()),
    ];
    if let Some((flag, _)) = user_only.iter().find(|(_, given)| *given) {
        return Err(ConfigError::NotForTimerlat(flag));
    }
    let us = interval.get() / 1_000;
    if !interval.get().is_multiple_of(1_000) || !(100..=1_000_000).contains(&us) {
        return Err(ConfigError::TimerlatPeriod(interval));
    }
    Ok(())
}

/// `--duration` or `--cycles` (60 s when neither), bounded by [`MAX_RUN`].
fn length(req: &Request, interval: Nanos) -> Result<RunLength, ConfigError> {
    Ok(match (req.duration, req.cycles) {
        (Some(_), Some(_)) => return Err(ConfigError::BothLengths),
        (Some(d), None) => {
            if d < interval {
                return Err(ConfigError::TooShort(d, interval));
            }
            if d > MAX_RUN {
                return Err(ConfigError::TooLong(d.to_string()));
            }
            RunLength::Duration(d)
        }
        (None, Some(0)) => return Err(ConfigError::NoCycles),
        (None, Some(n)) => {
            match n.checked_mul(interval.get()) {
                Some(ns) if Nanos(ns) <= MAX_RUN => {}
                Some(ns) => return Err(ConfigError::TooLong(Nanos(ns).to_string())),
                None => return Err(ConfigError::TooLong("more than 500 years".to_string())),
            }
            RunLength::Cycles(n)
        }
        (None, None) => RunLength::Duration(Nanos::from_secs(60)),
    })
}

/// `--priority` for `policy`: 95 by default for a real-time policy, 99 only when allowed;
/// none for the others.
fn priority(req: &Request, policy: Policy) -> Result<u8, ConfigError> {
    if policy.takes_priority() {
        let p = req.priority.unwrap_or(95);
        if p == 0 || p > 99 {
            return Err(ConfigError::PriorityRange(p));
        }
        if p == 99 && !req.allow_prio_99 {
            return Err(ConfigError::Priority99);
        }
        Ok(p)
    } else {
        if req.priority.is_some_and(|p| p != 0) {
            return Err(ConfigError::PriorityWithoutRt(policy.as_str()));
        }
        Ok(0)
    }
}

/// SCHED_DEADLINE's runtime and period (the period defaults to the interval); refused for
/// the other policies.
fn deadline_params(
    req: &Request,
    policy: Policy,
    interval: Nanos,
) -> Result<(Option<Nanos>, Option<Nanos>), ConfigError> {
    if policy == Policy::Deadline {
        let runtime = req.dl_runtime.ok_or(ConfigError::DeadlineNeedsRuntime)?;
        let period = req.dl_period.unwrap_or(interval);
        if runtime.get() < 1024 || runtime > period {
            return Err(ConfigError::DeadlineParams { runtime, period });
        }
        Ok((Some(runtime), Some(period)))
    } else {
        if req.dl_runtime.is_some() || req.dl_period.is_some() {
            return Err(ConfigError::DeadlineOptionsWithoutDeadline);
        }
        Ok((None, None))
    }
}

/// `--workload` and `--workload-deadline`, checked against the interval.
fn workload(req: &Request, interval: Nanos) -> Result<Option<Workload>, ConfigError> {
    let Some(runtime) = req.workload else {
        return match req.deadline {
            Some(_) => Err(ConfigError::DeadlineWithoutWorkload),
            None => Ok(None),
        };
    };
    if runtime < Nanos::MICROSECOND {
        return Err(ConfigError::WorkloadTooShort(runtime));
    }
    if runtime >= interval {
        return Err(ConfigError::WorkloadOverInterval(runtime, interval));
    }
    let deadline = req.deadline.unwrap_or(interval);
    if deadline == Nanos::ZERO || deadline > interval {
        return Err(ConfigError::DeadlineRange(deadline, interval));
    }
    Ok(Some(Workload { runtime, deadline }))
}

impl Config {
    /// Validates a request and fills in defaults: interval 1 ms, 60 s, fifo at 95, memory
    /// locked, cpu_dma_latency 0, 32 spikes per CPU, checkpoints every 10 s.
    pub fn from_request(req: &Request) -> Result<Config, ConfigError> {
        if req.cpus.is_empty() {
            return Err(ConfigError::NoCpus);
        }
        let interval = req.interval.unwrap_or(Nanos::MILLISECOND);
        if interval < MIN_INTERVAL {
            return Err(ConfigError::IntervalTooShort(interval));
        }
        if req.engine == Engine::Timerlat {
            timerlat_checks(req, interval)?;
        } else if req.user_threads {
            return Err(ConfigError::UserThreadsWithoutTimerlat);
        }
        let length = length(req, interval)?;
        let policy = req.policy.unwrap_or(Policy::Fifo);
        let priority = priority(req, policy)?;
        let (dl_runtime, dl_period) = deadline_params(req, policy, interval)?;
        if req.break_threshold == Some(Nanos::ZERO) {
            return Err(ConfigError::ZeroBreak);
        }
        let checkpoint = req.checkpoint.unwrap_or(Nanos::from_secs(10));
        if checkpoint < Nanos::SECOND {
            return Err(ConfigError::CheckpointTooShort(checkpoint));
        }
        if checkpoint > MAX_RUN {
            return Err(ConfigError::CheckpointTooLong(checkpoint));
        }
        let spikes = req.spikes.unwrap_or(32);
        if spikes > MAX_SPIKES {
            return Err(ConfigError::TooManySpikes(spikes));
        }
        let workload = workload(req, interval)?;
        Ok(Config {
            engine: req.engine,
            user_threads: req.user_threads,
            cpus: req.cpus.clone(),
            interval,
            length,
            aligned: req.aligned,
            policy,
            priority,
            dl_runtime,
            dl_period,
            main_cpus: req.main_cpus.clone(),
            mlock: !req.no_mlock,
            dma_latency_us: req.dma_latency_us.unwrap_or(Some(0)),
            break_threshold: req.break_threshold,
            spikes,
            checkpoint: Some(checkpoint),
            stack_bytes: DEFAULT_STACK_BYTES,
            trace: req.trace.clone(),
            workload,
        })
    }

    /// Periods (deadlines) each thread runs for.
    pub fn periods(&self) -> u64 {
        match self.length {
            RunLength::Duration(d) => (d.get() / self.interval.get()).max(1),
            RunLength::Cycles(n) => n,
        }
    }

    /// The planned length of the run.
    pub fn planned(&self) -> Nanos {
        Nanos(self.periods().saturating_mul(self.interval.get()))
    }

    /// Length of one slot of the maximum-over-time series: one second, or for runs longer
    /// than [`MAX_SERIES_SLOTS`] seconds the fewest whole seconds that keep the series within
    /// that many slots (the run's span includes the widest thread offset and one slot of
    /// slack).
    pub fn series_slot(&self) -> Nanos {
        let span_s = self
            .planned()
            .get()
            .saturating_add(self.interval.get())
            .div_ceil(Nanos::SECOND.get());
        let slots = MAX_SERIES_SLOTS as u64 - 2;
        Nanos::from_secs(span_s.div_ceil(slots).max(1))
    }

    /// Slots of the series each thread allocates (a bound, also for a run that is cut short).
    /// A run of `--cycles` wake-ups lasts longer than its plan by the periods it misses: it
    /// gets room for twice its plan (beyond that its last slot takes the rest).
    pub fn series_slots(&self) -> usize {
        let planned = match self.length {
            RunLength::Cycles(_) => self.planned().get().saturating_mul(2),
            RunLength::Duration(_) => self.planned().get(),
        };
        let span = planned.saturating_add(self.interval.get());
        let slots = span / self.series_slot().get() + 2;
        usize::try_from(slots).map_or(MAX_SERIES_SLOTS, |n| n.min(MAX_SERIES_SLOTS))
    }

    /// Offset of each thread's first deadline from the common start, in `cpus` order: zero
    /// when aligned, else spread evenly over one interval so the threads do not all wake
    /// together (and do not contend for the same timer interrupt).
    pub fn offsets(&self) -> Vec<Nanos> {
        let n = self.cpus.len() as u64;
        (0..n)
            .map(|i| {
                if self.aligned || n == 0 {
                    Nanos::ZERO
                } else {
                    Nanos(self.interval.get() * i / n)
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req() -> Request {
        Request {
            cpus: CpuSet::from_cpus([0, 1]),
            ..Request::default()
        }
    }

    #[test]
    fn defaults_match_the_documentation() {
        let c = Config::from_request(&req()).unwrap();
        assert_eq!(c.interval, Nanos::MILLISECOND);
        assert_eq!(c.length, RunLength::Duration(Nanos::from_secs(60)));
        assert_eq!(c.periods(), 60_000);
        assert_eq!((c.policy, c.priority), (Policy::Fifo, 95));
        assert!(c.mlock);
        assert_eq!(c.dma_latency_us, Some(0));
        assert_eq!(c.spikes, 32);
        assert_eq!(c.checkpoint, Some(Nanos::from_secs(10)));
        assert_eq!(c.offsets(), vec![Nanos::ZERO, Nanos::from_us(500)]);
    }

    #[test]
    fn refuses_what_would_mislead_or_harm() {
        let with = |f: &dyn Fn(&mut Request)| {
            let mut r = req();
            f(&mut r);
            Config::from_request(&r)
        };
        assert_eq!(
            with(&|r| r.interval = Some(Nanos::from_us(19))),
            Err(ConfigError::IntervalTooShort(Nanos::from_us(19)))
        );
        assert!(with(&|r| r.interval = Some(Nanos::from_us(20))).is_ok());
        assert_eq!(
            with(&|r| r.priority = Some(99)),
            Err(ConfigError::Priority99)
        );
        assert!(
            with(&|r| {
                r.priority = Some(99);
                r.allow_prio_99 = true;
            })
            .is_ok()
        );
        assert_eq!(
            with(&|r| r.priority = Some(0)),
            Err(ConfigError::PriorityRange(0))
        );
        assert_eq!(
            with(&|r| r.priority = Some(120)),
            Err(ConfigError::PriorityRange(120))
        );
        assert_eq!(
            with(&|r| {
                r.policy = Some(Policy::Other);
                r.priority = Some(10);
            }),
            Err(ConfigError::PriorityWithoutRt("other"))
        );
        assert_eq!(
            with(&|r| r.policy = Some(Policy::Deadline)),
            Err(ConfigError::DeadlineNeedsRuntime)
        );
        assert_eq!(
            with(&|r| r.dl_runtime = Some(Nanos::from_us(100))),
            Err(ConfigError::DeadlineOptionsWithoutDeadline)
        );
        assert!(matches!(
            with(&|r| {
                r.policy = Some(Policy::Deadline);
                r.dl_runtime = Some(Nanos::from_ms(2));
            }),
            Err(ConfigError::DeadlineParams { .. })
        ));
    }

    #[test]
    fn refuses_lengths_and_sizes_out_of_range() {
        let with = |f: &dyn Fn(&mut Request)| {
            let mut r = req();
            f(&mut r);
            Config::from_request(&r)
        };
        assert_eq!(with(&|r| r.cycles = Some(0)), Err(ConfigError::NoCycles));
        assert_eq!(
            with(&|r| {
                r.cycles = Some(5);
                r.duration = Some(Nanos::SECOND);
            }),
            Err(ConfigError::BothLengths)
        );
        assert_eq!(
            with(&|r| r.break_threshold = Some(Nanos::ZERO)),
            Err(ConfigError::ZeroBreak)
        );
        assert_eq!(with(&|r| r.cpus = CpuSet::new()), Err(ConfigError::NoCpus));
        // Issue 13: sizes from the command line are bounded before anything is allocated.
        assert_eq!(
            with(&|r| r.spikes = Some(4_000_000_000)),
            Err(ConfigError::TooManySpikes(4_000_000_000))
        );
        assert!(with(&|r| r.spikes = Some(MAX_SPIKES)).is_ok());
        assert!(matches!(
            with(&|r| r.duration = Some(Nanos::from_secs(20_000 * 86_400))),
            Err(ConfigError::TooLong(_))
        ));
        assert!(matches!(
            with(&|r| r.cycles = Some(u64::MAX)),
            Err(ConfigError::TooLong(_))
        ));
        assert!(matches!(
            with(&|r| r.checkpoint = Some(Nanos(u64::MAX))),
            Err(ConfigError::CheckpointTooLong(_))
        ));
        let msg = with(&|r| r.interval = Some(Nanos::from_us(10)))
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("--interval 10us") && msg.contains("20us"),
            "{msg}"
        );
    }

    #[test]
    fn long_runs_keep_a_bounded_series_with_longer_slots() {
        let with = |d: Nanos| {
            let mut r = req();
            r.duration = Some(d);
            Config::from_request(&r).unwrap()
        };
        let hour = with(Nanos::from_secs(3600));
        assert_eq!(hour.series_slot(), Nanos::SECOND);
        assert_eq!(hour.series_slots(), 3602);
        let month = with(Nanos::from_secs(30 * 86_400));
        assert_eq!(month.series_slot(), Nanos::from_secs(159));
        assert!(month.series_slots() <= MAX_SERIES_SLOTS);
        let year = with(MAX_RUN);
        assert!(year.series_slots() <= MAX_SERIES_SLOTS);
        assert!(year.planned().get() / year.series_slot().get() < MAX_SERIES_SLOTS as u64);
    }

    #[test]
    fn deadline_defaults_its_period_to_the_interval() {
        let mut r = req();
        r.policy = Some(Policy::Deadline);
        r.dl_runtime = Some(Nanos::from_us(100));
        let c = Config::from_request(&r).unwrap();
        assert_eq!(c.dl_period, Some(Nanos::MILLISECOND));
        assert_eq!(c.priority, 0);
    }

    #[test]
    fn periods_follow_the_length() {
        let mut r = req();
        r.cycles = Some(1234);
        assert_eq!(Config::from_request(&r).unwrap().periods(), 1234);
        let mut r = req();
        r.duration = Some(Nanos::from_ms(2500));
        r.interval = Some(Nanos::from_ms(1));
        assert_eq!(Config::from_request(&r).unwrap().periods(), 2500);
        r.aligned = true;
        assert_eq!(
            Config::from_request(&r).unwrap().offsets(),
            vec![Nanos::ZERO; 2]
        );
    }
}
