//! `rtlab report RUN... -o FILE [--svg DIR]`: the self-contained HTML report over stored runs
//! or result files, and each of its plots as an SVG file.
//!
//! RUN arguments are resolved and named by [`crate::runs`]; this module writes the files, each
//! atomically. The page itself is rendered by `report::html`.

use std::path::Path;

use anyhow::{Context, Result};
use report::html::{ReportOptions, ReportRun, html_report};

use crate::console::Console;
use crate::exit::{Exit, UsageError};
use crate::flags::ReportArgs;
use crate::runs::{NamedRun, named};

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
            files::write_atomically(&path, file.svg.as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
            written += 1;
        }
    }
    files::write_atomically(output, report.page.as_bytes())
        .with_context(|| format!("writing {}", output.display()))?;
    Ok(written)
}

/// `rtlab report`.
pub fn run(args: &ReportArgs) -> Result<Exit> {
    files::check_creatable(&args.output)
        .map_err(|e| UsageError(format!("--output {}: {e}", args.output.display())))?;
    if let Some(dir) = &args.svg {
        files::check_dir_creatable(dir).map_err(|e| {
            UsageError(format!(
                "--svg {}: {e}; give a directory for the SVG files",
                dir.display()
            ))
        })?;
    }
    let runs = args
        .runs
        .iter()
        .map(|spec| named(spec, args.db.db.as_deref()))
        .collect::<Result<Vec<_>>>()?;
    let options = ReportOptions {
        budget: args.budget,
        timeline: false,
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
    let mut console = Console::new(false);
    console.note(&message);
    // The report is written either way; the exit status is its verdict, as `export`'s is: 1
    // when a run failed or cannot be judged, each reason on standard error.
    let mut exit = Exit::Ok;
    for r in &runs {
        let verdict = model::gate::judge(&r.run, args.budget);
        if crate::verdict::told(&mut console, &verdict, Some(&r.name)) != Exit::Ok {
            exit = Exit::VerdictFailed;
        }
    }
    Ok(exit)
}
