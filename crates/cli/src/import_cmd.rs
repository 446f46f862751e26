//! `rtlab import FILE... [--label TEXT] [--db PATH]`: results other tools wrote (cyclictest
//! JSON, histograms, summary lines and -v samples; rtla timerlat and osnoise hist; oslat text
//! and JSON), plain or compressed, read by the `import` room, stored as runs.
//!
//! All or nothing: every file is read and parsed before anything is saved; the first file that
//! does not parse is the one error line (exit 2) and the store is not touched. A save that fails
//! part way removes the runs this command already saved. A file whose run is already stored
//! (imported before) is said so, and its stored run is left as it was.

use std::time::SystemTime;

use anyhow::{Context, Result};
use model::measure::MeasureRun;

use crate::console;
use crate::exit::{Exit, UsageError};
use crate::flags::{ImportArgs, TextOrJson};

/// One parsed file.
struct Parsed {
    file: String,
    format: &'static str,
    run: MeasureRun,
}

/// `rtlab import`.
pub fn run(args: &ImportArgs) -> Result<Exit> {
    let mut pusher = crate::push_to::prepare(&args.push)?;
    let parsed = parse_all(args)?;
    // A label names one run (`rtlab compare imx8 last`): several files get it numbered.
    let labels: Vec<Option<String>> = match (&args.label, parsed.len()) {
        (Some(l), 1) => vec![Some(l.clone())],
        (Some(l), n) => (1..=n).map(|i| Some(format!("{l}-{i}"))).collect(),
        (None, n) => vec![None; n],
    };
    let saved = save_all(args, &parsed, &labels)?;
    let out = match args.format {
        TextOrJson::Text => said(&parsed, &saved, &labels),
        TextOrJson::Json => said_json(&parsed, &saved, &labels)?,
    };
    console::print_stdout(&out)?;
    let nameless = parsed
        .iter()
        .filter(|p| p.run.host.hostname == "unknown")
        .count();
    if nameless > 0 {
        eprintln!(
            "rtlab: note: {} names no machine; `--host NAME` names it, so `runs` and `compare` \
             can tell machines apart",
            if nameless == 1 {
                "the file"
            } else {
                "some files"
            }
        );
    }
    // Every run is saved: `--push` uploads them (or queues them), with warnings only.
    if let Some(pusher) = pusher.as_mut() {
        let mut console = console::Console::new(false);
        for ((p, s), label) in parsed.iter().zip(&saved).zip(&labels) {
            pusher.push(
                &p.run,
                Some(s.id.as_str()),
                label.as_deref(),
                None,
                &mut console,
            );
        }
    }
    Ok(Exit::Ok)
}

/// Every file read and parsed, before anything is saved; the first that does not parse is
/// the error.
fn parse_all(args: &ImportArgs) -> Result<Vec<Parsed>> {
    let mut parsed = Vec::with_capacity(args.files.len());
    for path in &args.files {
        let name = path.display().to_string();
        // A compressed file is read up to the same bound; its decompressed size is bounded
        // again by the import room.
        let bytes = files::read_input(path, model::limits::MAX_IMPORT_BYTES)
            .map_err(|e| UsageError(format!("{name}: {e}")))?;
        let modified = std::fs::metadata(path)
            .and_then(|m| m.modified())
            .unwrap_or_else(|_| SystemTime::now());
        let mut run =
            import::import_bytes(&name, &bytes, modified).map_err(|e| UsageError(e.to_string()))?;
        name_machine(&mut run, args);
        run.params.budget_ns = args.budget;
        let format = run
            .import
            .as_ref()
            .and_then(|i| import::Format::from_name(&i.format))
            .map_or("import", import::Format::describe);
        parsed.push(Parsed {
            file: name,
            format,
            run,
        });
    }
    Ok(parsed)
}

/// `--host` and `--kernel` where the file did not say (a file that names them keeps its own).
fn name_machine(run: &mut MeasureRun, args: &ImportArgs) {
    let unsaid = |s: &str| s.is_empty() || s == "unknown";
    if let Some(host) = &args.host
        && unsaid(&run.host.hostname)
    {
        run.host.hostname = host.clone();
    }
    if let Some(kernel) = &args.kernel
        && unsaid(&run.host.kernel_release)
    {
        run.host.kernel_release = kernel.clone();
    }
}

/// Every run saved with its label; a save that fails takes back what this command stored.
fn save_all(
    args: &ImportArgs,
    parsed: &[Parsed],
    labels: &[Option<String>],
) -> Result<Vec<store::Saved>> {
    let mut store = crate::runs::open(args.db.db.as_deref())?;
    let mut saved = Vec::with_capacity(parsed.len());
    for (p, label) in parsed.iter().zip(labels) {
        match store.save(&p.run, label.as_deref(), None) {
            Ok(s) => saved.push(s),
            Err(e) => {
                // Only what this command stored is taken back: a run that was already there
                // (the same file imported before) stays.
                for s in saved.iter().filter(|s| s.new) {
                    let _ = store.remove(&s.id);
                }
                return Err(e).with_context(|| format!("saving {}", p.file));
            }
        }
    }
    Ok(saved)
}

/// What was imported as JSON (`--format json`): per file its run id, whether it is new, its
/// label, the format it was read as, and what it holds.
fn said_json(
    parsed: &[Parsed],
    saved: &[store::Saved],
    labels: &[Option<String>],
) -> Result<String> {
    let rows: Vec<serde_json::Value> = parsed
        .iter()
        .zip(saved)
        .zip(labels)
        .map(|((p, s), label)| {
            serde_json::json!({
                "file": p.file,
                "id": s.id,
                "new": s.new,
                "label": label,
                "format": p.run.import.as_ref().map(|i| i.format.as_str()),
                "kind": if p.run.noise.is_some() { "noise" } else { "latency" },
                "cpus": p.run.cpus.len(),
                "samples": p.run.all.raw.count,
            })
        })
        .collect();
    Ok(serde_json::to_string_pretty(&rows)? + "\n")
}

/// What was imported, a line per file (and its label and skipped lines under it).
fn said(parsed: &[Parsed], saved: &[store::Saved], labels: &[Option<String>]) -> String {
    let mut text = String::new();
    for ((p, s), label) in parsed.iter().zip(saved).zip(labels) {
        let id = &s.id;
        if !s.new {
            text.push_str(&format!(
                "{} is already stored as run {id}; nothing new was stored\n",
                p.file
            ));
            continue;
        }
        let cpus = p.run.cpus.len();
        let what = match &p.run.noise {
            // A top table or tracer trace has no distribution: say what it does have.
            Some(n) if p.run.all.raw.count == 0 => {
                let all = n.total();
                format!(
                    "{} interruptions, {} us of noise in {} us",
                    all.interruptions,
                    all.noise_ns / 1000,
                    all.runtime_ns / 1000
                )
            }
            _ => format!("{} samples", p.run.all.raw.count),
        };
        text.push_str(&format!(
            "imported {} as {}run {id} ({}, {cpus} CPU{}, {what})\n",
            p.file,
            if p.run.noise.is_some() { "noise " } else { "" },
            p.format,
            if cpus == 1 { "" } else { "s" },
        ));
        if let Some(label) = label {
            text.push_str(&format!("  labelled \"{label}\"\n"));
        }
        // Lines the importer did not know and skipped are said here, not only in the notes.
        let notes = p.run.import.as_ref().map_or(&[][..], |i| &i.notes[..]);
        for note in notes.iter().filter(|n| n.starts_with(import::SKIPPED_NOTE)) {
            text.push_str(&format!("  note: {note}\n"));
        }
        if let Some(line) = time_order(&p.run, &id.to_string()) {
            text.push_str(&line);
        }
    }
    text
}

/// What the run keeps of its time order, and what `rtlab worst` can do with it: the per-second
/// maxima of a time-ordered output (cyclictest -v), or none (a histogram, a summary), with the
/// format that would keep one. Nothing for a noise report.
fn time_order(run: &MeasureRun, id: &str) -> Option<String> {
    if run.noise.is_some() || run.all.raw.count == 0 {
        return None;
    }
    let s = &run.all.series;
    Some(if s.count.iter().any(|c| *c > 0) {
        let seconds = (s.max_ns.len() as f64) * s.slot_ns.0 as f64;
        format!(
            "  time order kept: per-second maxima over {}; `rtlab worst {id}` estimates the worst case\n",
            evt::verdict::fmt_duration(seconds)
        )
    } else {
        "  no time order in this format: `rtlab worst` can fit it but not check the fit \
         (`rtlab measure`, also with `--engine timerlat`, or cyclictest -v keeps one)\n"
            .to_string()
    })
}
