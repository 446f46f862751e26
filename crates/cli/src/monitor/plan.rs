//! What `rtlab monitor` will do, decided and checked before it measures anything: the engine
//! (`auto` resolved against this kernel), the CPUs, the segment settings every interval's runs
//! use, the store, the metrics file and the push target. Every refusal is one line naming the
//! value, exit 2, and nothing changed on the machine.

use anyhow::Result;
use measure::{Config, Request, TraceOptions};
use model::measure::Engine;
use model::{CpuSet, CpuSpec, Nanos};
use sys::Root;

use crate::exit::UsageError;
use crate::flags::{MonitorArgs, RunEngineArg};

/// The time now, Unix ns.
pub(crate) fn wall_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// The shortest interval of the history.
const MIN_EVERY: Nanos = Nanos::from_secs(1);
/// The longest interval of the history.
const MAX_EVERY: Nanos = Nanos::from_secs(86_400);
/// The longest burst gap.
const MAX_BURST_GAP: Nanos = Nanos::from_secs(3_600);
/// Worst samples each CPU keeps per segment: enough for every breach of an ordinary burst to
/// be counted exactly (`model::monitor::breaches`).
const SPIKES: u32 = model::limits::MAX_SPIKES;
/// Spikes a breach's trace explains: the breach, and a few around it.
const EXPLAINED: usize = 4;

/// The monitor's settings, checked.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// This machine's name, as intervals and incidents record it.
    pub host: String,
    /// What measures.
    pub engine: Engine,
    /// The CPUs watched.
    pub cpus: CpuSet,
    /// The wake-up period.
    pub interval: Nanos,
    /// The measuring threads' priority (user engine), when given.
    pub priority: Option<u8>,
    /// `--allow-prio-99`.
    pub allow_prio_99: bool,
    /// The measuring threads' policy (user engine).
    pub policy: model::measure::Policy,
    /// The budget; none: no incidents.
    pub budget: Option<Nanos>,
    /// The length of each interval of the history.
    pub every: Nanos,
    /// How much of each interval is measured, from its start.
    pub measure_for: Nanos,
    /// Breaches this close to the previous one are its incident's.
    pub burst_gap: Nanos,
    /// What is older is removed.
    pub keep: Nanos,
    /// Bytes the stored incidents' runs may take.
    pub trace_space: u64,
    /// The user engine's trace buffer per CPU, KiB.
    pub trace_buffer_kb: u64,
    /// Stop after this long; none: at a signal.
    pub stop_after: Option<Nanos>,
}

impl Plan {
    /// The plan of `args`, or the first thing wrong with them.
    pub(crate) fn new(args: &MonitorArgs, root: &Root) -> Result<Plan> {
        let refuse = |m: String| -> anyhow::Error { UsageError(m).into() };
        if args.every < MIN_EVERY || args.every > MAX_EVERY {
            return Err(refuse(format!(
                "--every {} is out of range: give {MIN_EVERY} to {MAX_EVERY} (5m keeps OSADL's intervals)",
                args.every
            )));
        }
        if !(args.duty > 0.0 && args.duty <= 100.0) {
            return Err(refuse(format!(
                "--duty {}% is out of range: give more than 0% and at most 100%",
                args.duty
            )));
        }
        let measure_for = Nanos((args.every.get() as f64 * args.duty / 100.0) as u64);
        if measure_for < Nanos(args.interval.get().saturating_mul(100)) {
            return Err(refuse(format!(
                "--duty {}% of --every {} measures {measure_for}, under 100 wake-ups at --interval {}; give a larger --duty or --every",
                args.duty, args.every, args.interval
            )));
        }
        if args.burst_gap.get() == 0 || args.burst_gap > MAX_BURST_GAP {
            return Err(refuse(format!(
                "--burst-gap {} is out of range: give more than 0s, up to {MAX_BURST_GAP}",
                args.burst_gap
            )));
        }
        if args.keep < args.every {
            return Err(refuse(format!(
                "--keep {} is shorter than one interval (--every {}): nothing would be kept",
                args.keep, args.every
            )));
        }
        if let Some(d) = args.duration
            && d < Nanos(args.interval.get().saturating_mul(100))
        {
            return Err(refuse(format!(
                "--duration {d} is under 100 wake-ups at --interval {}; give a longer one, or none to run until stopped",
                args.interval
            )));
        }
        let engine = engine(args.engine, root)?;
        let cpus = cpus(args.cpus.as_ref(), root)?;
        let plan = Plan {
            host: sys::host::host_info(root).hostname,
            engine,
            cpus,
            interval: args.interval,
            priority: args.priority,
            allow_prio_99: args.allow_prio_99,
            policy: args.policy.into(),
            budget: args.budget,
            every: args.every,
            measure_for,
            burst_gap: args.burst_gap,
            keep: args.keep,
            trace_space: args.trace_space,
            trace_buffer_kb: args.trace_buffer,
            stop_after: args.duration,
        };
        // The settings every segment uses, validated as measure validates them: a refusal
        // here (a period the tracer cannot take, a priority) comes before anything runs.
        let config = plan.config(plan.measure_for, plan.budget.is_some())?;
        measure::check_privileges(&config).map_err(|e| refuse(e.to_string()))?;
        if let Some(path) = &args.metrics {
            files::check_creatable(path)
                .map_err(|e| refuse(format!("--metrics {}: {e}", path.display())))?;
        }
        crate::runs::check_usable(args.db.db.as_deref()).map_err(|e| {
            refuse(format!(
                "the run store cannot be used: {e:#}; the history is kept there, so give a writable --db PATH"
            ))
        })?;
        Ok(plan)
    }

    /// The configuration of one segment of `length`; `armed`: it stops at the first wake-up
    /// over the budget, with the user engine's trace around it.
    pub(crate) fn config(&self, length: Nanos, armed: bool) -> Result<Config> {
        let user = self.engine == Engine::User;
        let request = Request {
            engine: self.engine,
            cpus: self.cpus.clone(),
            interval: Some(self.interval),
            duration: Some(length.max(self.interval)),
            priority: self.priority.filter(|_| user),
            allow_prio_99: self.allow_prio_99,
            policy: user.then_some(self.policy),
            // The monitor watches what production sees: it holds no idle-state request.
            dma_latency_us: Some(None),
            break_threshold: self.budget.filter(|_| armed),
            spikes: Some(SPIKES),
            trace: (armed && user).then_some(TraceOptions {
                buffer_kb: self.trace_buffer_kb,
                keep_dir: None,
                explain: EXPLAINED,
                at_break_only: true,
            }),
            ..Request::default()
        };
        Config::from_request(&request).map_err(|e| UsageError(e.to_string()).into())
    }
}

/// `--engine`, with `auto` resolved against this kernel: the timerlat tracer where it is.
fn engine(arg: RunEngineArg, root: &Root) -> Result<Engine> {
    let env = || measure::Environment {
        root: root.clone(),
        clock: measure::ClockChoice::Real,
    };
    Ok(match arg {
        RunEngineArg::User => Engine::User,
        RunEngineArg::Auto if sys::timerlat::available(root).is_some() => Engine::Timerlat,
        RunEngineArg::Auto => Engine::User,
        RunEngineArg::Timerlat => {
            measure::timerlat::available(&env()).map_err(|e| UsageError(e.to_string()))?;
            Engine::Timerlat
        }
    })
}

/// `--cpus`, else the CPUs the boot line isolates, else every CPU.
fn cpus(spec: Option<&CpuSpec>, root: &Root) -> Result<CpuSet> {
    let choice = crate::measured::CpuChoice::read(root, false)?;
    let by_boot = crate::rt_placement::boot_isolated(root, spec).map(|(c, _)| CpuSpec::List(c));
    let spec = spec.or(by_boot.as_ref()).unwrap_or(&CpuSpec::All);
    choice.resolve(spec, "--cpus")
}
