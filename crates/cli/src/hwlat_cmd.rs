//! `rtlab hwlat`: measures with the kernel's hwlat tracer or the user-space screen, or reads
//! a hwlatdetect report or hwlat trace (`--from`), prints the chosen format, writes the
//! result file and exits 1 at the hard limit.

use anyhow::{Context, Result};
use measure::hwlat::{HwlatChoice, HwlatConfig};
use measure::{ClockChoice, Environment};
use model::CpuSpec;
use model::hwlat::HwlatRun;
use sys::Root;

use crate::console::{self, Console};
use crate::exit::{Exit, UsageError};
use crate::flags::{HwlatArgs, HwlatEngineArg, HwlatFormat};

/// Runs `rtlab hwlat`.
pub fn run(args: &HwlatArgs, root: &Root) -> Result<Exit> {
    let mut console = Console::new(args.quiet);
    if let Some(path) = &args.output {
        files::check_creatable(path)
            .map_err(|e| UsageError(format!("--output {}: {e}", path.display())))?;
    }
    let mut run = match &args.from {
        Some(path) => read_from(path)?,
        None => measure(args, root, &mut console)?,
    };
    if args.from.is_some() && args.hardlimit.is_some() {
        run.params.hardlimit_ns = args.hardlimit;
    }
    if let Some(path) = &args.output {
        files::write_atomically(path, run.to_json().as_bytes())
            .with_context(|| format!("writing the result to {}", path.display()))?;
    }
    let format = if args.json {
        HwlatFormat::Json
    } else {
        args.format
    };
    let verdict = model::gate::judge_hwlat(&run);
    let interrupted = run.status == model::measure::RunStatus::Interrupted;
    let text = match format {
        // The text ends with the verdict line, as `measure`'s, `noise`'s and `show`'s do.
        HwlatFormat::Text => {
            report::hwlat::table(&run, args.samples)
                + &crate::verdict::summary_line(&verdict, interrupted)
        }
        HwlatFormat::Json => run.to_json() + "\n",
        HwlatFormat::Hwlatdetect => report::hwlat::hwlatdetect(&run),
    };
    console::print_stdout(&text).context("writing to standard output")?;
    crate::verdict::say(&mut console, &verdict, None, false);
    if !verdict.passed() {
        return Ok(Exit::VerdictFailed);
    }
    Ok(match run.status {
        model::measure::RunStatus::Interrupted => Exit::Interrupted,
        _ => Exit::Ok,
    })
}

/// A measured run.
fn measure(args: &HwlatArgs, root: &Root, console: &mut Console) -> Result<HwlatRun> {
    let cpus = crate::measured::CpuChoice::read(root, false)?
        .resolve(args.cpus.as_ref().unwrap_or(&CpuSpec::All), "--cpus")?;
    let mut config = HwlatConfig::new(cpus);
    config.duration = args.duration;
    config.threshold = args.threshold;
    config.window = args.window;
    config.width = args.width;
    config.hardlimit = args.hardlimit;
    config.engine = match args.engine {
        HwlatEngineArg::Auto => HwlatChoice::Auto,
        HwlatEngineArg::Kernel => HwlatChoice::Kernel,
        HwlatEngineArg::User => HwlatChoice::User,
    };
    config.validate().map_err(UsageError)?;
    let env = Environment {
        root: root.clone(),
        clock: ClockChoice::Real,
    };
    console.note(&format!(
        "sampling {} for {} ({} of every {}); Ctrl-C stops early and keeps the samples",
        config.cpus.with_noun(),
        config.duration,
        config.width,
        config.window
    ));
    let run = measure::hwlat::run_hwlat(&config, &env).map_err(|e| UsageError(e.to_string()))?;
    Ok(run)
}

/// A hwlatdetect report or a hwlat tracer trace from a file, as a result.
fn read_from(path: &std::path::Path) -> Result<HwlatRun> {
    let name = path.display().to_string();
    if crate::explain_stats::is_dat(path) {
        return read_dat(path);
    }
    let bytes = files::read_input(path, model::limits::MAX_IMPORT_BYTES)
        .map_err(|e| UsageError(format!("--from {name}: {e}")))?;
    let bytes = import::decompress(&name, &bytes, model::limits::MAX_IMPORT_BYTES)
        .map_err(|e| UsageError(format!("--from {e}")))?
        .unwrap_or(bytes);
    let text = std::str::from_utf8(&bytes).map_err(|_| {
        UsageError(format!(
            "--from {name}: not a text file (it is not UTF-8); give a hwlatdetect report or a hwlat tracer trace"
        ))
    })?;
    // A report that does not say when it ran is dated by its file, as `rtlab import` does.
    let modified = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| std::time::SystemTime::now());
    import::hwlat::import_hwlat(&name, text, modified)
        .map_err(|e| UsageError(format!("--from {e}")).into())
}

/// A trace-cmd recording of the hwlat tracer (`trace-cmd record -p hwlat`), as a result.
fn read_dat(path: &std::path::Path) -> Result<HwlatRun> {
    let name = path.display().to_string();
    let crate::explain_stats::Opened::Dat(dat) = crate::explain_stats::open(path)? else {
        return Err(UsageError(format!("--from {name}: not a trace-cmd recording")).into());
    };
    let text = trace::dat::tracer::hwlat_text(&dat)
        .map_err(|e| UsageError(format!("--from {name}: {e}")))?;
    let modified = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| std::time::SystemTime::now());
    import::hwlat::import_hwlat(&name, &text, modified)
        .map_err(|e| UsageError(format!("--from {e}")).into())
}
