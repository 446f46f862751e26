//! `rtlab noise`: turns the arguments into a [`measure::noise::NoiseConfig`], runs it with
//! progress and crash-safe checkpoints, keeps the result (file, store), prints the chosen
//! format and decides the exit status.

use std::path::Path;

use anyhow::{Context, Result};
use measure::noise::{NoiseConfig, NoiseEngine};
use measure::{ClockChoice, Environment, Observer};
use model::CpuSpec;
use model::measure::{MeasureRun, Progress};
use sys::Root;
use sys::signals::TerminationSignals;

use crate::console::{self, Console};
use crate::exit::{Exit, UsageError};
use crate::flags::{NoiseArgs, NoiseEngineArg, NoiseFormat};

/// Runs `rtlab noise`.
pub fn run(args: &NoiseArgs, root: &Root) -> Result<Exit> {
    let signals = TerminationSignals::block().context("blocking SIGINT/SIGTERM")?;
    let online = sys::cpu::online(root).context("reading the online CPUs")?;
    let placed = crate::rt_placement::place(root, args.cpus.as_ref(), &online)?;
    // No --cpus, no tuning of rtlab's, CPUs isolated on the boot line: those are measured.
    let by_boot = placed
        .is_none()
        .then(|| crate::rt_placement::boot_isolated(root, args.cpus.as_ref()))
        .flatten();
    let spec = by_boot
        .as_ref()
        .map(|(cpus, _)| CpuSpec::List(cpus.clone()));
    let config = config_from_args(args, spec.as_ref(), root)?;
    crate::measured::check_outputs(&crate::measured::kept!(args), None)?;
    let mut pusher = crate::push_to::prepare(&args.push)?;
    let env = Environment {
        root: root.clone(),
        clock: ClockChoice::Real,
    };
    let mut console = Console::new(args.quiet);
    let format = if args.json {
        NoiseFormat::Json
    } else {
        args.format
    };
    let mut observer = CliObserver {
        console: &mut console,
        json: args.output.as_deref(),
        budget: args.budget,
        checkpoint_error: None,
    };
    let measured = measure::noise::run_noise(&config, &env, &mut observer);
    let checkpoint_error = observer.checkpoint_error.take();
    let mut run = measured.map_err(|e| UsageError(e.to_string()))?;
    run.params.budget_ns = args.budget;
    if let Some(p) = &placed {
        run.warnings.push(p.warning());
    }
    run.warnings.extend(by_boot.map(|(_, w)| w));
    console.clear_live();
    if let Some(e) = checkpoint_error {
        console.warn(&format!(
            "a checkpoint of the --output file could not be written: {e}"
        ));
    }
    let json_error = crate::runs::keep(
        &run,
        &crate::measured::kept!(args),
        pusher.as_mut(),
        &mut console,
    );
    let text = match format {
        NoiseFormat::Text => crate::runs::table_text(&run) + &crate::measured::summary_line(&run),
        NoiseFormat::Json => run.to_json(),
        NoiseFormat::Oslat => report::noise::oslat(&run),
    };
    console::print_stdout(&text).context("writing to standard output")?;
    let exit = crate::measured::verdict(&run, false, &mut console);
    let _ = signals.wait(std::time::Duration::ZERO);
    match json_error {
        Some(e) => Err(e),
        None => Ok(exit),
    }
}

/// Resolves the CPUs and builds and validates the configuration.
fn config_from_args(
    args: &NoiseArgs,
    chosen: Option<&CpuSpec>,
    root: &Root,
) -> Result<NoiseConfig> {
    let choice = crate::measured::CpuChoice::read(root, false)?;
    let spec = args.cpus.as_ref().or(chosen).unwrap_or(&CpuSpec::All);
    let mut config = NoiseConfig::new(choice.resolve(spec, "--cpus")?);
    config.main_cpus = args
        .main_cpu
        .as_ref()
        .map(|s| choice.resolve(s, "--main-cpu"))
        .transpose()?;
    config.duration = args.duration;
    config.threshold = args.threshold;
    config.period = args.period;
    config.runtime = args.runtime.unwrap_or(args.period);
    config.policy = match (args.policy, args.priority) {
        (Some(p), _) => p.into(),
        (None, Some(_)) => model::measure::Policy::Fifo,
        (None, None) => model::measure::Policy::Other,
    };
    config.priority = args.priority.unwrap_or(0);
    config.allow_prio_99 = args.allow_prio_99;
    config.attribute = !args.no_attribute;
    // Checkpoints are for the result file: without one, none is built.
    config.checkpoint = args.output.is_some().then_some(args.checkpoint);
    config.spikes = args.spikes;
    config.mlock = !args.no_mlock;
    config.engine = match args.engine {
        NoiseEngineArg::Auto => NoiseEngine::Auto,
        NoiseEngineArg::User => NoiseEngine::User,
        NoiseEngineArg::Kernel => NoiseEngine::Kernel,
    };
    config.validate().map_err(|e| UsageError(e.to_string()))?;
    Ok(config)
}

/// Progress on the terminal, checkpoints to the result file.
struct CliObserver<'a> {
    console: &'a mut Console,
    json: Option<&'a Path>,
    /// The --budget, recorded in every checkpoint as in the final result.
    budget: Option<model::Nanos>,
    checkpoint_error: Option<String>,
}

impl Observer for CliObserver<'_> {
    fn started(&mut self, run: &MeasureRun) {
        for w in &run.warnings {
            self.console.warn(&w.message);
        }
        if self.console.live() {
            self.console.note(&format!(
                "polling {} for {} ({}); Ctrl-C stops early and keeps the result",
                run.params.cpus.with_noun(),
                run.params.duration_ns.unwrap_or_default(),
                run.params.policy.as_str(),
            ));
        }
    }

    fn wants_progress(&self) -> bool {
        self.console.live()
    }

    fn progress(&mut self, progress: &Progress) {
        if self.console.live() {
            self.console
                .draw_live(&report::live::live_frame(progress, "rtlab noise"));
        }
    }

    fn checkpoint(&mut self, run: &MeasureRun) {
        let Some(path) = self.json else { return };
        let mut run = run.clone();
        run.params.budget_ns = self.budget;
        if let Err(e) = crate::measured::write_result(path, &run) {
            self.checkpoint_error.get_or_insert(format!("{e:#}"));
        }
    }
}
