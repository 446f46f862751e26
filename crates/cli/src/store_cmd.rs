//! The run store's commands: `rtlab runs`, `show`, `label`, `rm` and `export` (RUN arguments
//! are resolved by [`crate::runs`]).

use std::fmt::Write as _;

use anyhow::{Context, Result};
use model::measure::MeasureRun;
use store::Filter;

use crate::console;
use crate::exit::{Exit, UsageError};
use crate::flags::{
    ExportArgs, ExportFormat, LabelArgs, ListFormat, RmArgs, RunsArgs, ShowArgs, ShowFormat,
};
use crate::runs::{load, open_existing, resolve};

/// `rtlab runs`.
pub fn runs(args: &RunsArgs) -> Result<Exit> {
    let store = open_existing(args.db.db.as_deref())?;
    let filter = Filter {
        host: args.host.clone(),
        kernel: args.kernel.clone(),
        label: args.label.clone(),
        status: args.status.clone(),
        since: args.since.clone(),
        until: args.until.clone(),
        session: None,
        limit: args.limit,
        ..Filter::default()
    };
    let list = store.list(&filter)?;
    let text = match args.format {
        ListFormat::Json => serde_json::to_string_pretty(&list)? + "\n",
        ListFormat::Text => {
            let mut out = String::new();
            let _ = writeln!(
                out,
                "{:<12}  {:<19}  {:<16}  {:<22}  {:<15}  {:>9}  {:<16}  under",
                "id", "started (UTC)", "host", "kernel", "status", "max us", "label"
            );
            for r in &list {
                let started: String = r.started_at.chars().take(19).collect();
                let _ = writeln!(
                    out,
                    "{:<12}  {:<19}  {:<16}  {:<22}  {:<15}  {:>9}  {:<16}  {}",
                    r.id,
                    started.replace('T', " "),
                    r.hostname,
                    r.kernel_release,
                    r.status,
                    r.max_ns
                        .map(report::format_us)
                        .unwrap_or_else(|| "-".into()),
                    r.label.as_deref().unwrap_or("-"),
                    measured_under(r)
                );
            }
            let _ = writeln!(
                out,
                "{} run{}",
                list.len(),
                if list.len() == 1 { "" } else { "s" }
            );
            out
        }
    };
    console::print_stdout(&text)?;
    Ok(Exit::Ok)
}

/// What a run in `rtlab runs` was measured under: its load, "no load", or that it is OS noise
/// (a run of another quantity than wake-up latency).
fn measured_under(r: &store::RunSummary) -> String {
    let load = r.load.as_deref().unwrap_or("no load");
    if r.os_noise {
        format!("{load} (OS noise, not latency)")
    } else {
        load.to_string()
    }
}

/// `rtlab show RUN`: exit 1 when the run cannot be judged (standard error says why).
pub fn show(args: &ShowArgs) -> Result<Exit> {
    let run = load(&args.run, args.db.db.as_deref())?;
    let text = match args.format {
        ShowFormat::Json => run.to_json(),
        ShowFormat::Cyclictest => report::cyclictest::summary(&run),
        ShowFormat::Text => crate::runs::table_text(&run),
    };
    console::print_stdout(&text)?;
    Ok(unjudgeable_verdict(&run, &args.run))
}

/// Exit 1, with the reason on standard error, for a run no gate may pass on; else exit 0.
fn unjudgeable_verdict(run: &MeasureRun, spec: &str) -> Exit {
    match run.unjudgeable() {
        Some(why) => {
            console::Console::new(false).verdict(&format!("{spec}: cannot be judged: {why}"));
            Exit::VerdictFailed
        }
        None => Exit::Ok,
    }
}

/// `rtlab label RUN LABEL`.
pub fn label(args: &LabelArgs) -> Result<Exit> {
    let mut store = open_existing(args.db.db.as_deref())?;
    let id = resolve(&store, &args.run)?;
    let label = Some(args.label.as_str()).filter(|l| !l.is_empty());
    store.set_label(&id, label)?;
    Ok(Exit::Ok)
}

/// `rtlab rm RUN...`: every RUN is resolved before any is deleted.
pub fn rm(args: &RmArgs) -> Result<Exit> {
    let mut store = open_existing(args.db.db.as_deref())?;
    let ids = args
        .runs
        .iter()
        .map(|r| resolve(&store, r))
        .collect::<Result<Vec<_>>>()?;
    for id in &ids {
        store.remove(id)?;
    }
    Ok(Exit::Ok)
}

/// `rtlab export RUN --format ...`.
pub fn export(args: &ExportArgs) -> Result<Exit> {
    if let Some(path) = &args.output {
        sys::fs::check_creatable(path)
            .map_err(|e| UsageError(format!("--output {}: {e}", path.display())))?;
    }
    let run = load(&args.run, args.db.db.as_deref())?;
    let label = match std::path::Path::new(&args.run).is_file() {
        true => None,
        false => crate::runs::stored_label(&args.run, args.db.db.as_deref())?,
    };
    let junit_budget = args.budget.unwrap_or(DEFAULT_BUDGET);
    let text = match args.format {
        ExportFormat::Json => run.to_json(),
        ExportFormat::Csv => report::export::csv_labelled(&run, label.as_deref()),
        ExportFormat::Junit => report::export::junit_labelled(&run, junit_budget, label.as_deref()),
        ExportFormat::Openmetrics => report::export::openmetrics(&run),
    };
    match &args.output {
        Some(path) => sys::fs::write_atomically(path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?,
        None => console::print_stdout(&text)?,
    }
    // The export is written either way; the exit status is its verdict, so a CI step that
    // only exports still fails on a run that failed or cannot be judged.
    let unjudged = unjudgeable_verdict(&run, &args.run);
    let exceeded: model::CpuSet = args
        .budget
        .map(|b| run.exceeded(b))
        .unwrap_or_default()
        .into_iter()
        .collect();
    if !exceeded.is_empty() {
        console::Console::new(false).verdict(&format!(
            "CPU {exceeded}: maximum latency over --budget {junit_budget}"
        ));
        return Ok(Exit::VerdictFailed);
    }
    if args.format == ExportFormat::Junit && !report::export::junit_passes(&run, junit_budget) {
        if unjudged == Exit::Ok {
            console::Console::new(false).verdict(&format!(
                "the JUnit document has failing test cases (a maximum over {junit_budget}, or overruns)"
            ));
        }
        return Ok(Exit::VerdictFailed);
    }
    Ok(unjudged)
}

/// The budget JUnit test cases are judged against when --budget is not given.
const DEFAULT_BUDGET: model::Nanos = model::Nanos::from_us(100);
