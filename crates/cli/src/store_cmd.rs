//! The run store's commands: `rtlab runs`, `show`, `label`, `rm` and `export` (RUN arguments
//! are resolved by [`crate::runs`]).

use std::fmt::Write as _;

use anyhow::{Context, Result};
use model::gate::Verdict;
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
                "{:<12}  {:<19}  {:<16}  {:<22}  {:<15}  {:<12}  {:>9}  {:<16}  under",
                "id", "started (UTC)", "host", "kernel", "status", "verdict", "max us", "label"
            );
            for r in &list {
                let started: String = r.started_at.chars().take(19).collect();
                let _ = writeln!(
                    out,
                    "{:<12}  {:<19}  {:<16}  {:<22}  {:<15}  {:<12}  {:>9}  {:<16}  {}",
                    r.id,
                    started.replace('T', " "),
                    r.hostname,
                    r.kernel_release,
                    r.status,
                    r.verdict.word(),
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

/// What a run in `rtlab runs` was measured under: its load, "no load" ("not recorded" for an
/// imported run, whose file does not say), or that it is OS noise (a run of another quantity
/// than wake-up latency).
fn measured_under(r: &store::RunSummary) -> String {
    let none = if r.imported {
        "not recorded"
    } else {
        "no load"
    };
    let load = r.load.as_deref().unwrap_or(none);
    if r.os_noise {
        format!("{load} (OS noise, not latency)")
    } else {
        load.to_string()
    }
}

/// `rtlab show RUN`: the run and its verdict against the criteria it was measured with; exit
/// 1 when it failed or cannot be judged (standard error says why).
pub fn show(args: &ShowArgs) -> Result<Exit> {
    if let Some(run) = crate::runs::hwlat_file(&args.run)? {
        return show_hwlat(args, &run);
    }
    let run = load(&args.run, args.db.db.as_deref())?;
    let verdict = model::gate::judge(&run, None);
    let text = match args.format {
        ShowFormat::Json => run.to_json(),
        ShowFormat::Cyclictest => report::cyclictest::summary(&run),
        ShowFormat::Text => {
            crate::runs::table_text(&run) + &crate::verdict::summary_line(&verdict, false)
        }
    };
    console::print_stdout(&text)?;
    Ok(told(&verdict, Some(&args.run)))
}

/// `rtlab show FILE` of a hardware-latency run (`rtlab hwlat -o FILE`): its table and the
/// verdict against its own `--budget`, as `rtlab hwlat` printed them; exit by it.
fn show_hwlat(args: &ShowArgs, run: &model::hwlat::HwlatRun) -> Result<Exit> {
    let verdict = model::gate::judge_hwlat(run);
    let text = match args.format {
        ShowFormat::Json => run.to_json() + "\n",
        ShowFormat::Text => {
            // As many worst samples as `rtlab hwlat` lists by default.
            report::hwlat::table(run, crate::flags::HWLAT_SAMPLES_SHOWN)
                + &crate::verdict::summary_line(&verdict, false)
        }
        ShowFormat::Cyclictest => {
            return Err(UsageError(format!(
                "--format cyclictest: {} is a hardware-latency run (rtlab.hwlat/1), which has no cyclictest form; give --format text or json",
                args.run
            ))
            .into());
        }
    };
    console::print_stdout(&text)?;
    Ok(told(&verdict, Some(&args.run)))
}

/// A verdict on a run read back ([`crate::verdict::told`]).
fn told(verdict: &Verdict, who: Option<&str>) -> Exit {
    crate::verdict::told(&mut console::Console::new(false), verdict, who)
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
    let filter = store::Filter {
        ids: Some(ids.clone()),
        ..store::Filter::default()
    };
    let listed = store.list(&filter)?;
    // Each id with its line, in the order given (an id the list lacks is named by itself).
    let described: Vec<String> = ids
        .iter()
        .map(|id| {
            listed
                .iter()
                .find(|s| &s.id == id)
                .map_or_else(|| id.to_string(), describe)
        })
        .collect();
    let shared = matches!(
        crate::runs::location(args.db.db.as_deref())?,
        store::Location::Postgres(_)
    );
    if shared && !args.yes && !confirm(&described)? {
        console::print_stdout("nothing removed\n")?;
        return Ok(Exit::Ok);
    }
    for (id, what) in ids.iter().zip(&described) {
        store.remove(id)?;
        console::print_stdout(&format!("removed {what}\n"))?;
    }
    Ok(Exit::Ok)
}

/// A stored run in one line: id, label, host and when.
fn describe(s: &store::RunSummary) -> String {
    let label = s
        .label
        .as_ref()
        .map_or(String::new(), |l| format!(" \"{l}\""));
    format!(
        "{}{label} ({} on {}, {})",
        s.id, s.kind, s.hostname, s.started_at
    )
}

/// Asks on the terminal whether to remove `runs` from a shared store; a usage error without
/// one.
fn confirm(runs: &[String]) -> Result<bool> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() {
        return Err(UsageError(format!(
            "this store is shared (PostgreSQL): `rm` would remove {}; add --yes to remove \
             without asking",
            runs.join(", ")
        ))
        .into());
    }
    eprint!("Remove from the shared store: {}? [y/N] ", runs.join(", "));
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

/// `rtlab export RUN... --format ...`.
pub fn export(args: &ExportArgs) -> Result<Exit> {
    if let Some(path) = &args.output {
        files::check_creatable(path)
            .map_err(|e| UsageError(format!("--output {}: {e}", path.display())))?;
    }
    let lava = match args.format {
        ExportFormat::Lava => Some(report::export::lava::Form::Commands),
        ExportFormat::LavaResults => Some(report::export::lava::Form::Results),
        _ => None,
    };
    if let Some(form) = lava {
        return export_lava(args, form);
    }
    check_not_lava_only(args)?;
    let spec = &args.runs[0];
    let run = load(spec, args.db.db.as_deref())?;
    let label = match std::path::Path::new(spec).is_file() {
        true => None,
        false => crate::runs::stored_label(spec, args.db.db.as_deref())?,
    };
    // Every format and the exit status render one verdict: the run's own criteria, or the
    // --budget given now (a re-judgement the verdict says).
    let verdict = model::gate::judge(&run, args.budget);
    let text = match args.format {
        ExportFormat::Json => run.to_json(),
        ExportFormat::Csv => report::export::csv_labelled(&run, &verdict, label.as_deref()),
        ExportFormat::Junit => report::export::junit_labelled(&run, &verdict, label.as_deref()),
        ExportFormat::Openmetrics => report::export::openmetrics(&run, &verdict),
        ExportFormat::Lava | ExportFormat::LavaResults => unreachable!("handled above"),
    };
    write_export(args, &text)?;
    // The export is written either way; the exit status is its verdict, so a CI step that
    // only exports still fails on a run that failed or cannot be judged.
    Ok(told(&verdict, Some(spec)))
}

/// Several RUNs, --baseline and --prefix belong to the LAVA formats only.
fn check_not_lava_only(args: &ExportArgs) -> Result<()> {
    let refused = if args.runs.len() > 1 {
        Some(format!("{} RUNs", args.runs.len()))
    } else if args.baseline.is_some() {
        Some("--baseline".to_string())
    } else if args.prefix.is_some() {
        Some("--prefix".to_string())
    } else {
        None
    };
    match refused {
        Some(what) => Err(UsageError(format!(
            "{what}: only --format lava and lava-results take them; export other formats one run at a time"
        ))
        .into()),
        None => Ok(()),
    }
}

/// `rtlab export RUN... --format lava|lava-results`: every run's cases (named
/// iteration-K-... when there are several), then the baseline's; exit 1 when a run cannot
/// be judged, a maximum is over --budget or the baseline verdict fails.
fn export_lava(args: &ExportArgs, form: report::export::lava::Form) -> Result<Exit> {
    use report::export::lava;
    if let Some(p) = &args.prefix {
        lava::check_name(p).map_err(|e| UsageError(format!("--prefix {e}")))?;
    }
    let runs = args
        .runs
        .iter()
        .map(|spec| load(spec, args.db.db.as_deref()))
        .collect::<Result<Vec<_>>>()?;
    let verdict = match args.baseline {
        Some(given) => Some(lava::baseline(&runs, given).map_err(UsageError)?),
        None => None,
    };
    let verdicts: Vec<Verdict> = runs
        .iter()
        .map(|run| model::gate::judge(run, args.budget))
        .collect();
    let mut cases = Vec::new();
    for (i, (run, verdict)) in runs.iter().zip(&verdicts).enumerate() {
        let name = match (runs.len(), &args.prefix) {
            (1, p) => p.clone(),
            (_, Some(p)) => Some(format!("{p}-iteration-{}", i + 1)),
            (_, None) => Some(format!("iteration-{}", i + 1)),
        };
        cases.extend(lava::cases(run, verdict, name.as_deref()));
    }
    if let Some(b) = &verdict {
        cases.extend(b.cases(args.prefix.as_deref()));
    }
    write_export(args, &lava::render(&cases, form))?;
    let mut exit = Exit::Ok;
    for (verdict, spec) in verdicts.iter().zip(&args.runs) {
        if told(verdict, Some(spec)) != Exit::Ok {
            exit = Exit::VerdictFailed;
        }
    }
    if let Some(b) = verdict.filter(|b| !b.passed) {
        console::Console::new(false).verdict(&format!("baseline: {}", b.describe()));
        exit = Exit::VerdictFailed;
    }
    Ok(exit)
}

/// Writes the export to --output, else standard output.
fn write_export(args: &ExportArgs, text: &str) -> Result<()> {
    match &args.output {
        Some(path) => files::write_atomically(path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display())),
        None => Ok(console::print_stdout(text)?),
    }
}
