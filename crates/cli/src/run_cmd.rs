//! `rtlab run`: the one-command evaluation (the practice in docs/background.md) — checks its
//! outputs first, prints the audit's top findings, then hands the phases to
//! [`crate::run_session`] (or, with `--tuned`, to [`crate::run_tuned`]).

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use model::CpuSpec;
use model::audit::Status;
use model::measure::Engine;
use sys::Root;
use sys::signals::TerminationSignals;

use crate::console::{self, Console};
use crate::exit::{Exit, UsageError};
use crate::flags::{RunArgs, RunEngineArg, TextOrJson};
use crate::run_session::{Placement, Session};

/// Runs `rtlab run` (with `--tuned`: [`crate::run_tuned`]).
pub fn run(args: &RunArgs, root: &Root) -> Result<Exit> {
    let cpus = match &args.cpus {
        // Resolved against this machine's CPUs, as each phase's measure will: a CPU it lacks is
        // refused before the audit and the first phase, not by the first phase.
        Some(cpus) => {
            let spec =
                CpuSpec::parse(cpus).map_err(|e| UsageError(format!("--cpus {cpus}: {e}")))?;
            crate::measured::CpuChoice::read(root, args.fake_clock.is_some())?
                .resolve(&spec, "--cpus")?
        }
        None => model::CpuSet::from_cpus([0]),
    };
    check_phase_values(args, cpus)?;
    check_outputs(args)?;
    let mut pusher = crate::push_to::prepare(&args.push)?;
    let tuning = if args.tuned {
        Some(crate::run_tuned::prepare(args, root)?)
    } else {
        None
    };
    // Blocked before any thread or child exists: a signal stops the phase running (it is
    // passed on to its child) and the evaluation ends in order — compared, reported and,
    // with --tuned, reverted — instead of killing this process halfway.
    let signals = TerminationSignals::block().context("blocking SIGINT/SIGTERM")?;
    let audit = audit::run(
        root,
        &audit::Options::default(),
        &audit::Selection::default(),
    )
    .map_err(|e| UsageError(e.to_string()))?;
    let engine = engine(args, root)?;
    if args.format == TextOrJson::Text {
        console::print_stdout(&audit_brief(&audit))?;
        console::print_stdout(&format!(
            "engine: {}{}\n",
            engine.describe(),
            match (args.engine, engine) {
                (RunEngineArg::Auto, Engine::Timerlat) =>
                    " (this kernel has it; --engine user for rtlab's own threads)",
                (RunEngineArg::Auto, Engine::User) => " (this kernel has no timerlat tracer)",
                _ => "",
            }
        ))?;
    }

    let mut session = Session {
        args,
        root,
        id: session_id(),
        signals: &signals,
        console: Console::new(args.quiet),
        runs: Vec::new(),
        noise_runs: Vec::new(),
        stopped: None,
        warned: Vec::new(),
        audit: audit.counts,
        engine,
        judged: crate::run_tuned::judged_phases(tuning.is_some()),
    };
    let exit = match tuning {
        Some(tuning) => crate::run_tuned::run(&mut session, tuning),
        None => session
            .measure_phases(args.cpus.as_deref(), "", &Placement::default())
            .and_then(|()| session.finish("")),
    };
    // A second Ctrl-C may still be pending: taken here, it does not end the process as the
    // mask is restored.
    while signals.wait(Duration::ZERO).is_some() {}
    // Every phase is saved by its own rtlab: `--push` uploads them all at the end (or queues
    // them), with warnings only.
    if let (Some(pusher), Ok(_)) = (pusher.as_mut(), &exit) {
        for (label, run) in session.runs.iter().chain(&session.noise_runs) {
            pusher.push(
                run,
                None,
                Some(label),
                Some(&session.id),
                &mut session.console,
            );
        }
    }
    exit
}

/// Every output, checked before the first phase: the store every phase saves into, and the
/// report (named after the host and date in the current directory unless -o).
fn check_outputs(args: &RunArgs) -> Result<()> {
    if let Some(path) = &args.output {
        files::check_creatable(path)
            .map_err(|e| UsageError(format!("--output {}: {e}", path.display())))?;
    } else if !args.no_report {
        files::check_creatable(Path::new("rtlab-report.html")).map_err(|e| {
            UsageError(format!(
                "the report goes into the current directory, which cannot be written ({e}); give -o FILE or --no-report"
            ))
        })?;
    }
    crate::runs::check_usable(args.db.db.as_deref()).map_err(|e| {
        UsageError(format!(
            "the run store cannot be used: {e:#}; every phase is saved there, so give a writable --db PATH"
        ))
    })?;
    Ok(())
}

/// What each phase's `rtlab measure` and `rtlab noise` would refuse of the values `run` hands
/// them (a phase length, the noise phase's), refused here, before the audit and the first
/// phase: `run --noise 0` measured all three phases, then failed (issue #48).
fn check_phase_values(args: &RunArgs, cpus: model::CpuSet) -> Result<()> {
    let request = measure::Request {
        cpus: cpus.clone(),
        interval: Some(model::Nanos::MILLISECOND),
        duration: Some(args.duration),
        ..measure::Request::default()
    };
    measure::Config::from_request(&request).map_err(|e| UsageError(e.to_string()))?;
    if let Some(noise) = args.noise {
        let mut config = measure::noise::NoiseConfig::new(cpus);
        config.duration = noise;
        config.validate().map_err(|e| {
            UsageError(e.0.replacen(
                &format!("--duration {noise}"),
                &format!("--noise {noise}"),
                1,
            ))
        })?;
    }
    Ok(())
}

/// The engine of every phase: `--engine`, with `auto` resolved against this kernel (the
/// timerlat tracer where it is there, and the clock is not scripted).
fn engine(args: &RunArgs, root: &Root) -> Result<Engine> {
    let has_tracer = sys::timerlat::available(root).is_some();
    Ok(match args.engine {
        RunEngineArg::User => Engine::User,
        RunEngineArg::Auto if has_tracer && args.fake_clock.is_none() => Engine::Timerlat,
        RunEngineArg::Auto => Engine::User,
        RunEngineArg::Timerlat => {
            let env = measure::Environment {
                root: root.clone(),
                clock: measure::ClockChoice::Real,
            };
            measure::timerlat::available(&env).map_err(|e| UsageError(e.to_string()))?;
            Engine::Timerlat
        }
    })
}

/// The audit in a few lines: counts and the failing and warning findings with their first fix.
fn audit_brief(report: &model::audit::AuditReport) -> String {
    let mut out = format!("audit: {}\n", report::audit::summary_line(report));
    let mut shown = 0;
    // Failures first, then warnings, then advice.
    let with = |s: Status| report.findings.iter().filter(move |f| f.status == s);
    for f in with(Status::Fail)
        .chain(with(Status::Warn))
        .chain(with(Status::Info))
        .take(8)
    {
        out.push_str(&format!(
            "  {:<4}  {}: {}\n",
            report::audit::status_label(f),
            f.id,
            f.summary
        ));
        if let Some(fix) = f.fix.first() {
            out.push_str(&format!("        fix: {}\n", fix.render()));
        }
        shown += 1;
    }
    let problems = (report.counts.fail + report.counts.warn + report.counts.info) as usize;
    if problems > shown {
        out.push_str(&format!(
            "  ... and {} more: `rtlab audit` lists them all\n",
            problems - shown
        ));
    }
    out.push('\n');
    out
}

/// A session id: the start time and this process, enough to be unique on one machine.
fn session_id() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("run-{secs}-{}", std::process::id())
}
