//! `rtlab measure`: turns the arguments into a [`measure::Config`], runs it with a live view
//! and crash-safe checkpoints, prints the chosen format, and decides the exit status; with
//! `--every`, again and again until a signal.

use std::path::Path;

use anyhow::{Context, Result};
use measure::{ClockChoice, Config, Environment, FakeScript, Observer, Request};
use model::measure::{MeasureRun, Progress, RunStatus};
use model::{CpuSpec, Nanos};
use sys::Root;

use model::load::LoadReport;
use sys::signals::TerminationSignals;

use crate::console::{self, Console};
use crate::exit::{Exit, UsageError};
use crate::flags::{MeasureArgs, MeasureFormat};
use crate::load_child::LoadChild;

/// How long a load runs before measuring starts, unless --warmup says otherwise.
const DEFAULT_WARMUP: Nanos = Nanos::from_secs(2);

/// Runs `rtlab measure`: once, or with `--every` again and again until a signal.
pub fn run(args: &MeasureArgs, root: &Root) -> Result<Exit> {
    if let Some(refusal) = args.cyclictest.refusal(args.output.as_deref()) {
        return Err(UsageError(refusal).into());
    }
    match args.every {
        None => run_once(args, root),
        Some(every) => repeat(args, root, every),
    }
}

/// `--every`: a run, then a wait until `every` after its start, and again, until a signal.
/// Each run's verdict is printed as it ends; the exit status at the signal is 1 when any run
/// that ended failed or could not be judged (a repeated check must not read green for a
/// failure it printed hours ago), else 130. A run that cannot start ends it with its error.
/// Signals stay blocked throughout, so one that comes between two runs ends the wait in order
/// instead of killing the process.
fn repeat(args: &MeasureArgs, root: &Root, every: Nanos) -> Result<Exit> {
    if every == Nanos::ZERO {
        return Err(UsageError("--every 0: give the time between runs, e.g. 6h".into()).into());
    }
    let signals = TerminationSignals::block().context("blocking SIGINT/SIGTERM")?;
    let mut console = Console::new(args.quiet);
    let mut failed = 0u64;
    let stopped = |failed: u64| {
        if failed > 0 {
            Exit::VerdictFailed
        } else {
            Exit::Interrupted
        }
    };
    loop {
        let started = std::time::Instant::now();
        match run_once(args, root)? {
            Exit::Interrupted => return Ok(stopped(failed)),
            Exit::VerdictFailed => failed += 1,
            _ => {}
        }
        let left = every.to_duration().saturating_sub(started.elapsed());
        // Shown to the second: the wait's own precision does not matter to a reader.
        let secs = Nanos::from_secs(left.as_secs());
        let so_far = match failed {
            0 => String::new(),
            n => format!(" ({n} run{} failed so far)", if n == 1 { "" } else { "s" }),
        };
        console.note(&format!(
            "--every {every}: the next run starts in {secs}{so_far}"
        ));
        if signals.wait(left).is_some() {
            return Ok(stopped(failed));
        }
    }
}

/// One run: prepare, start the load and let it warm up, measure, stop the load, keep the
/// result (file, store, push), print it, judge it.
fn run_once(args: &MeasureArgs, root: &Root) -> Result<Exit> {
    // Blocked first, before any thread, child or slow step: from here on a signal is a
    // request for an orderly stop (the result saved and printed), never a sudden death.
    // measure::run blocks them again for itself.
    let signals = TerminationSignals::block().context("blocking SIGINT/SIGTERM")?;
    let (config, env, placed, by_boot) = prepare(args, root)?;
    let mut pusher = crate::push_to::prepare(&args.push)?;
    let mut console = Console::new(args.quiet);
    // The audit summary goes into the result: what a reader of the figures must know about
    // the machine. It reads, never writes, and takes milliseconds.
    let audit_summary = audit::run(
        root,
        &audit::Options::default(),
        &audit::Selection::default(),
    )
    .ok()
    .map(|r| r.summary());
    let load_join = args.load_join.clone().or_else(|| {
        placed
            .as_ref()
            .and_then(|p| p.housekeeping.clone())
            .filter(|_| !args.placement.load_cgroup && args.placement.load_cpus.is_none())
    });
    let (mut load, stopped_early) =
        start_load(args, load_join.as_deref(), root, &mut console, &signals)?;
    let mut observer = CliObserver {
        console: &mut console,
        json: args.output.as_deref(),
        table: args.output_format() == MeasureFormat::Text,
        checkpoint_error: None,
        load: load.as_mut(),
        audit: audit_summary.clone(),
        budget: args.budget,
        shown_warnings: &args.shown_warnings,
    };
    let measured = match stopped_early {
        // Stopped during the warm-up: nothing measured, and still a result to keep.
        Some(signal) => {
            observer.finished();
            observer.console.verdict(&format!(
                "{signal} during the load warm-up: nothing was measured"
            ));
            Ok(measure::not_started(&config, &env))
        }
        None => measure::run(&config, &env, &mut observer),
    };
    let checkpoint_error = observer.checkpoint_error.take();
    let (load_report, load_lost) = stop_load(load);
    let mut run = measured.map_err(|e| UsageError(e.to_string()))?;
    if let Some(reason) = load_lost {
        run.warnings.push(model::measure::Warning::new(
            "load-lost",
            format!("the load process failed, so its achieved figures are missing: {reason}"),
        ));
    }
    run.load = load_report;
    run.audit = audit_summary;
    run.params.budget_ns = args.budget;
    if let Some(p) = &placed {
        run.warnings.push(p.warning());
    }
    run.warnings.extend(by_boot);
    console.clear_live();
    if let Some(e) = checkpoint_error {
        console.warn(&format!(
            "a checkpoint of {} could not be written: {e}",
            display(args.output.as_deref())
        ));
    }
    let json_error = crate::runs::keep(
        &run,
        &crate::measured::kept!(args),
        pusher.as_mut(),
        &mut console,
    );
    let mut text = output_text(args, &run);
    if args.output_format() == MeasureFormat::Text {
        text += &crate::measured::summary_line(&run);
    }
    console::print_stdout(&text).context("writing to standard output")?;
    let exit = verdict(&run, &mut console);
    // A signal that came after the measurement ended (while saving) is taken here, so it
    // cannot end the process between this and the exit status.
    let _ = signals.wait(std::time::Duration::ZERO);
    match json_error {
        Some(e) => Err(e),
        None => Ok(exit),
    }
}

/// Everything checked before anything starts: the clock, the configuration, privileges,
/// the outputs, the load options; on a tuned machine, the RT cpuset joined
/// ([`crate::rt_placement`]).
#[allow(clippy::type_complexity)]
fn prepare(
    args: &MeasureArgs,
    root: &Root,
) -> Result<(
    Config,
    Environment,
    Option<crate::rt_placement::Placed>,
    Option<model::measure::Warning>,
)> {
    let fake = args
        .fake_clock
        .as_deref()
        .map(FakeScript::parse)
        .transpose()
        .map_err(UsageError)?;
    let placed = if fake.is_none() {
        let online = sys::cpu::online(root).context("reading the online CPUs")?;
        crate::rt_placement::place(root, args.cpus.as_ref(), &online)?
    } else {
        None
    };
    // No --cpus, no tuning of rtlab's, CPUs isolated on the boot line: those are measured.
    let by_boot = if fake.is_none() && placed.is_none() {
        crate::rt_placement::boot_isolated(root, args.cpus.as_ref())
    } else {
        None
    };
    let spec = by_boot
        .as_ref()
        .map(|(cpus, _)| CpuSpec::List(cpus.clone()));
    let config = config_from_args(args, spec.as_ref(), root, fake.is_some())?;
    if config.engine == model::measure::Engine::Timerlat {
        // The tracer first: without it nothing else matters.
        let env = Environment {
            root: root.clone(),
            clock: ClockChoice::Real,
        };
        measure::timerlat::available(&env).map_err(|e| UsageError(e.to_string()))?;
        if fake.is_some() {
            return Err(UsageError(
                "--fake-clock scripts rtlab's own threads; --engine timerlat measures with the kernel's tracer"
                    .into(),
            )
            .into());
        }
    }
    if fake.is_none() {
        measure::check_privileges(&config).map_err(|e| UsageError(e.to_string()))?;
    }
    crate::measured::check_outputs(&crate::measured::kept!(args), args.trace_dir.as_deref())?;
    if args.histogram.is_some() && args.output_format() != MeasureFormat::Cyclictest {
        return Err(UsageError(
            "--histogram shapes --format cyclictest output; give --format cyclictest, or \
             leave --format out"
                .into(),
        )
        .into());
    }
    check_load_flags(args, root)?;
    if let Some(spec) = &args.load {
        crate::load_cmd::options(spec, &args.placement, root)?;
    }
    let env = Environment {
        root: root.clone(),
        clock: fake.map_or(ClockChoice::Real, ClockChoice::Fake),
    };
    Ok((config, env, placed, by_boot.map(|(_, w)| w)))
}

/// Starts `--load` and lets it warm up; returns it, and the signal that ended the warm-up
/// early, if one did.
fn start_load(
    args: &MeasureArgs,
    load_join: Option<&str>,
    root: &Root,
    console: &mut Console,
    signals: &TerminationSignals,
) -> Result<(Option<LoadChild>, Option<sys::signals::Signal>)> {
    let Some(spec) = &args.load else {
        return Ok((None, None));
    };
    let child = LoadChild::start(spec, &args.placement, load_join, root)?;
    let warmup = args.warmup.unwrap_or(DEFAULT_WARMUP);
    console.note(&format!(
        "load {} running{}; warming up for {warmup}",
        child.initial.spec,
        child
            .initial
            .cgroup
            .as_ref()
            .map_or(String::new(), |cg| format!(" in cgroup {cg}"))
    ));
    let stopped_early = signals.wait(warmup.to_duration());
    // The observer opens the load's window when the measuring threads start and closes it
    // when they stop.
    Ok((Some(child), stopped_early))
}

/// Stops the load and takes its report; a load process that failed leaves its figures as they
/// were at the start (status "lost") and the reason.
fn stop_load(load: Option<LoadChild>) -> (Option<LoadReport>, Option<String>) {
    let mut lost = None;
    let report = load.map(|child| {
        let initial = child.initial.clone();
        child.finish().unwrap_or_else(|e| {
            lost = Some(format!("{e:#}"));
            LoadReport {
                status: "lost".to_string(),
                ..initial
            }
        })
    });
    (report, lost)
}

/// What standard output gets, in the chosen `--format`.
fn output_text(args: &MeasureArgs, run: &MeasureRun) -> String {
    match args.output_format() {
        MeasureFormat::Text => crate::runs::table_text(run),
        MeasureFormat::Json => run.to_json(),
        MeasureFormat::Cyclictest => match args.histogram {
            Some(limit) => {
                let rows = limit.get().div_ceil(1_000).max(1);
                let head = report::cyclictest::dma_latency_line(run)
                    .map(|l| l + "\n")
                    .unwrap_or_default();
                head + &report::cyclictest::histogram(run, rows, false)
            }
            None => report::cyclictest::summary(run),
        },
    }
}

/// Exit status from the finished run: the gate's verdict (with the `--break` event told first).
fn verdict(run: &MeasureRun, console: &mut Console) -> Exit {
    if let Some(event) = &run.break_event {
        console.verdict(&format!(
            "--break: CPU {} woke {} late at cycle {}{}",
            event.cpu,
            us(event.latency_ns),
            event.cycle,
            match (&event.tracefs, &run.trace) {
                _ if run.timerlat.is_some() => "; the timerlat tracer stopped itself there, and the trace of that moment and the IRQ's stack are in the result (`rtlab explain last` analyses it)".to_string(),
                (_, Some(_)) if event.trace_frozen => "; the kernel trace was frozen at it and the spike is explained above (`rtlab explain last` tells the whole story)".to_string(),
                (Some(dir), _) => format!("; tracing is now off to keep the trace: read {dir}/trace, then `echo 1 > {dir}/tracing_on`"),
                _ => "; no trace was frozen".to_string(),
            }
        ));
    }
    // Broken, the --break line above said why it cannot be judged.
    crate::measured::verdict(run, run.status == RunStatus::BrokeThreshold, console)
}

/// Load placement flags mean nothing without a load; --load-join needs a cgroup.
fn check_load_flags(args: &MeasureArgs, root: &Root) -> Result<()> {
    if args.load.is_some() {
        return match &args.load_join {
            Some(dir) if !root.exists(format!("{dir}/cgroup.procs")) => Err(UsageError(format!(
                "--load-join {dir}: not a cgroup directory (it has no cgroup.procs)"
            ))
            .into()),
            _ => Ok(()),
        };
    }
    let p = &args.placement;
    let stray = [
        (p.load_cpus.is_some(), "--load-cpus"),
        (p.load_cgroup, "--load-cgroup"),
        (p.load_dir.is_some(), "--load-dir"),
        (args.load_join.is_some(), "--load-join"),
    ];
    if let Some((_, flag)) = stray.iter().find(|(given, _)| *given) {
        return Err(UsageError(format!("{flag} places a load; add --load SPEC")).into());
    }
    Ok(())
}

/// Resolves CPU selectors against the machine and validates the combination.
fn config_from_args(
    args: &MeasureArgs,
    chosen: Option<&CpuSpec>,
    root: &Root,
    fake: bool,
) -> Result<Config> {
    let choice = crate::measured::CpuChoice::read(root, fake)?;
    let spec = args.cpus.as_ref().or(chosen).unwrap_or(&CpuSpec::All);
    let cpus = choice.resolve(spec, "--cpus")?;
    let main_cpus = args
        .main_cpu
        .as_ref()
        .map(|s| choice.resolve(s, "--main-cpu"))
        .transpose()?;
    let request = Request {
        engine: args.engine.into(),
        user_threads: args.user_threads,
        cpus,
        interval: Some(args.interval),
        duration: args.duration,
        cycles: args.cycles,
        aligned: args.aligned,
        policy: Some(args.policy.into()),
        priority: args.priority,
        allow_prio_99: args.allow_prio_99,
        dl_runtime: args.dl_runtime,
        dl_period: args.dl_period,
        main_cpus,
        no_mlock: args.no_mlock,
        dma_latency_us: Some(args.dma_latency.0),
        break_threshold: args.break_threshold,
        spikes: Some(args.spikes),
        checkpoint: Some(args.checkpoint),
        trace: args.trace.then(|| measure::TraceOptions {
            buffer_kb: args.trace_buffer,
            keep_dir: args.trace_dir.clone(),
            ..measure::TraceOptions::default()
        }),
        workload: args.workload,
        deadline: args.deadline,
    };
    Config::from_request(&request).map_err(|e| UsageError(e.to_string()).into())
}

fn display(path: Option<&Path>) -> String {
    path.map_or_else(
        || "the result file".to_string(),
        |p| p.display().to_string(),
    )
}

/// Live view on the terminal, checkpoints to the result file.
struct CliObserver<'a> {
    console: &'a mut Console,
    json: Option<&'a Path>,
    table: bool,
    checkpoint_error: Option<String>,
    /// The load process: its window follows the measurement, and the load as it was when it
    /// started is recorded in checkpoints.
    load: Option<&'a mut LoadChild>,
    /// The audit summary, recorded in checkpoints too.
    audit: Option<model::audit::AuditSummary>,
    /// `--budget`, recorded in checkpoints too.
    budget: Option<Nanos>,
    /// Warning codes not to print again (`--shown-warnings`).
    shown_warnings: &'a [String],
}

impl Observer for CliObserver<'_> {
    fn started(&mut self, run: &MeasureRun) {
        let new: Vec<&model::measure::Warning> = run
            .warnings
            .iter()
            .filter(|w| !self.shown_warnings.contains(&w.code))
            .collect();
        if self.table && !new.is_empty() {
            // The table repeats them in full at the end; name them now, early.
            let codes: Vec<&str> = new.iter().map(|w| w.code.as_str()).collect();
            self.console.warn(&format!(
                "{} condition{} affect{} these figures ({}); details follow the table",
                codes.len(),
                if codes.len() == 1 { "" } else { "s" },
                if codes.len() == 1 { "s" } else { "" },
                codes.join(", ")
            ));
        } else {
            for w in new {
                self.console.warn(&w.message);
            }
        }
        if self.console.live() {
            self.console.note(&format!(
                "measuring {} {} every {} for {} ({}{}); Ctrl-C stops early and keeps the result",
                if run.params.cpus.len() == 1 {
                    "CPU"
                } else {
                    "CPUs"
                },
                run.params.cpus,
                run.params.interval_ns,
                Nanos(run.params.periods * run.params.interval_ns.get()),
                run.params.policy.as_str(),
                if run.params.priority > 0 {
                    format!(":{}", run.params.priority)
                } else {
                    String::new()
                },
            ));
        }
        if let Some(load) = self.load.as_deref_mut() {
            load.mark();
        }
        self.checkpoint(run);
    }

    fn finished(&mut self) {
        if let Some(load) = self.load.as_deref_mut() {
            load.end();
        }
    }

    fn wants_progress(&self) -> bool {
        self.console.live()
    }

    fn progress(&mut self, progress: &Progress) {
        if self.console.live() {
            self.console
                .draw_live(&report::live::live_frame(progress, "rtlab measure"));
        }
    }

    fn checkpoint(&mut self, run: &MeasureRun) {
        let Some(path) = self.json else { return };
        let mut with_extras = MeasureRun {
            load: self.load.as_deref().map(|l| l.initial.clone()),
            audit: self.audit.clone(),
            ..run.clone()
        };
        with_extras.params.budget_ns = self.budget;
        let run = &with_extras;
        if let Err(e) = crate::measured::write_result(path, run) {
            self.checkpoint_error.get_or_insert(format!("{e:#}"));
        }
    }
}

/// A latency as people read it in rtlab's tables: microseconds with one decimal.
fn us(ns: u64) -> String {
    format!("{}us", model::nanos::format_us(Nanos(ns), 1))
}
