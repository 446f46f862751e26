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
use crate::flags::ImportArgs;

/// One parsed file.
struct Parsed {
    file: String,
    format: &'static str,
    run: MeasureRun,
}

/// `rtlab import`.
pub fn run(args: &ImportArgs) -> Result<Exit> {
    let mut pusher = crate::push_to::prepare(&args.push)?;
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
        let run =
            import::import_bytes(&name, &bytes, modified).map_err(|e| UsageError(e.to_string()))?;
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
    let mut store = crate::runs::open(args.db.db.as_deref())?;
    let label = args.label.as_deref();
    let mut saved = Vec::with_capacity(parsed.len());
    for p in &parsed {
        match store.save(&p.run, label, None) {
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
    let mut text = String::new();
    for (p, s) in parsed.iter().zip(&saved) {
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
        // Lines the importer did not know and skipped are said here, not only in the notes.
        let notes = p.run.import.as_ref().map_or(&[][..], |i| &i.notes[..]);
        for note in notes.iter().filter(|n| n.starts_with(import::SKIPPED_NOTE)) {
            text.push_str(&format!("  note: {note}\n"));
        }
    }
    console::print_stdout(&text)?;
    // Every run is saved: `--push` uploads them (or queues them), with warnings only.
    if let Some(pusher) = pusher.as_mut() {
        let mut console = console::Console::new(false);
        for (p, s) in parsed.iter().zip(&saved) {
            pusher.push(&p.run, Some(s.id.as_str()), label, None, &mut console);
        }
    }
    Ok(Exit::Ok)
}
