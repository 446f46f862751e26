//! `rtlab report RUN... -o FILE [--svg DIR]`: the self-contained HTML report over stored runs
//! or result files, and each of its plots as an SVG file.
//!
//! RUN arguments are resolved as everywhere else ([`crate::store_cmd::load`]); this module
//! adds what names a run on the page (its label, else its id or file name) and writes the
//! files, each atomically. The page itself is rendered by `report::html`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use model::measure::MeasureRun;
use report::html::{ReportOptions, ReportRun, html_report};

use crate::console::Console;
use crate::exit::{Exit, UsageError};
use crate::store_args::DbArgs;

/// The long help of `rtlab report`.
pub const REPORT_LONG: &str = "\
Write one HTML file that shows, for each RUN: the run's header (host, kernel, preemption \
model, when, parameters, status), the per-CPU latency table, the latency histogram (samples \
per bin on a log scale against latency, one line per CPU: the OSADL latency plot), the \
exceedance plot (the fraction of samples at or above each latency, which makes tails \
comparable), the largest latency per second over the run, the load achieved, the audit \
summary, the warnings and the environment. With several RUNs the page opens with their \
all-CPU exceedance curves on one chart.

The page is self-contained: styles and plots are inline, there is no script, and viewing it \
fetches nothing from the network. --svg DIR writes each plot as an SVG file as well.

Example: rtlab report last -o report.html --budget 50us; rtlab report 3f2a 9c01 last -o compare.html --svg plots";

/// Options of `rtlab report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The runs to report on, in this order (see below). With several, the page opens with
    /// a chart comparing their tails.
    #[arg(value_name = "RUN", required = true)]
    pub runs: Vec<String>,
    /// The HTML file to write (replaced atomically; viewing it needs no network).
    #[arg(short, long, value_name = "FILE", required = true)]
    pub output: PathBuf,
    /// Also write every plot as an SVG file into DIR (created if missing):
    /// RUN-histogram.svg, RUN-exceedance.svg, RUN-max-over-time.svg (RUN being the run's
    /// id or file stem) and, for several runs, runs-exceedance.svg.
    #[arg(long, value_name = "DIR")]
    pub svg: Option<PathBuf>,
    /// The latency budget, drawn as a dashed line on every latency plot (`50us`, `1ms`).
    #[arg(long, value_name = "TIME", value_parser = crate::args::parse_time)]
    pub budget: Option<model::Nanos>,
    /// The store.
    #[command(flatten)]
    pub db: DbArgs,
}

/// A run with what names it in a report.
#[derive(Clone, Debug)]
pub struct NamedRun {
    /// The result.
    pub run: MeasureRun,
    /// Its label, else its id or file name.
    pub name: String,
    /// Where it came from, in words.
    pub source: String,
    /// Its id or file stem, for SVG file names.
    pub key: String,
}

/// Resolves a RUN argument as `rtlab show` does, and names it: a stored run by its label
/// (or id), a file by its name.
pub fn named(spec: &str, db: Option<&Path>) -> Result<NamedRun> {
    let run = crate::store_cmd::load(spec, db)?;
    let path = Path::new(spec);
    if path.is_file() {
        let file_name = path
            .file_name()
            .map_or_else(|| spec.to_string(), |n| n.to_string_lossy().into_owned());
        let stem = path
            .file_stem()
            .map_or_else(|| spec.to_string(), |n| n.to_string_lossy().into_owned());
        return Ok(NamedRun {
            run,
            name: file_name,
            source: format!("file {}", path.display()),
            key: stem,
        });
    }
    // `load` found it in the store, so the store exists and the spec resolves.
    let (id, label, session) = stored_names(spec, db)?;
    let source = match session {
        Some(session) => format!("stored run {id}, session {session}"),
        None => format!("stored run {id}"),
    };
    Ok(NamedRun {
        run,
        name: label.unwrap_or_else(|| id.to_string()),
        source,
        key: id.to_string(),
    })
}

/// The label of the stored run `spec` names (a run already found by
/// [`crate::store_cmd::load`]), if it has one.
pub fn stored_label(spec: &str, db: Option<&Path>) -> Result<Option<String>> {
    Ok(stored_names(spec, db)?.1)
}

/// The id, label and session (the `rtlab run` whose phase it was) of the stored run `spec`
/// names.
fn stored_names(
    spec: &str,
    db: Option<&Path>,
) -> Result<(store::RunId, Option<String>, Option<String>)> {
    let store = crate::store_cmd::open_existing(db)?;
    let id = store.resolve(spec).map_err(|e| UsageError(e.to_string()))?;
    let summary = store
        .list(&store::Filter::default())?
        .into_iter()
        .find(|s| s.id == id);
    let (label, session) = summary.map_or((None, None), |s| (s.label, s.session));
    Ok((id, label, session))
}

/// Renders the report over `runs` and writes it to `output`, and every plot into `svg_dir`
/// when given (created if missing). Returns how many SVG files were written.
pub fn write(
    runs: &[NamedRun],
    options: &ReportOptions,
    output: &Path,
    svg_dir: Option<&Path>,
) -> Result<usize> {
    let refs: Vec<ReportRun<'_>> = runs
        .iter()
        .map(|r| ReportRun {
            run: &r.run,
            name: &r.name,
            source: &r.source,
            key: &r.key,
        })
        .collect();
    let report = html_report(&refs, options);
    let mut written = 0;
    if let Some(dir) = svg_dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| UsageError(format!("--svg {}: {e}", dir.display())))?;
        for file in &report.svg_files {
            let path = dir.join(&file.name);
            sys::fs::write_atomically(&path, file.svg.as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
            written += 1;
        }
    }
    sys::fs::write_atomically(output, report.page.as_bytes())
        .with_context(|| format!("writing {}", output.display()))?;
    Ok(written)
}

/// `rtlab report`.
pub fn run(args: &ReportArgs) -> Result<Exit> {
    sys::fs::check_creatable(&args.output)
        .map_err(|e| UsageError(format!("--output {}: {e}", args.output.display())))?;
    if let Some(dir) = &args.svg
        && dir.exists()
        && !dir.is_dir()
    {
        return Err(UsageError(format!(
            "--svg {}: not a directory; give a directory for the SVG files",
            dir.display()
        ))
        .into());
    }
    let runs = args
        .runs
        .iter()
        .map(|spec| named(spec, args.db.db.as_deref()))
        .collect::<Result<Vec<_>>>()?;
    let options = ReportOptions {
        budget: args.budget,
    };
    let svgs = write(&runs, &options, &args.output, args.svg.as_deref())?;
    let mut message = format!(
        "report on {} run{} written to {}",
        runs.len(),
        if runs.len() == 1 { "" } else { "s" },
        args.output.display()
    );
    if let Some(dir) = &args.svg {
        message.push_str(&format!(
            "; {svgs} SVG file{} in {}",
            if svgs == 1 { "" } else { "s" },
            dir.display()
        ));
    }
    Console::new(false).note(&message);
    Ok(Exit::Ok)
}
