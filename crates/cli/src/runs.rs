//! RUN arguments and the run store as every command meets them: where the store is, opening it
//! to save or to read, resolving a RUN (a result file, a stored run's id, a unique prefix of it,
//! or `last`), naming a run for tables and reports, and a run's text as `measure` and `show`
//! print it.

use std::path::Path;

use anyhow::Result;
use model::measure::MeasureRun;
use store::{Location, RunId, Store};

use crate::exit::UsageError;

/// Where the store is: `--db`, else the default (RTLAB_DB, XDG_DATA_HOME, HOME); a
/// `postgres://` address names a PostgreSQL database.
pub fn location(db: Option<&Path>) -> Result<Location> {
    if let Some(p) = db {
        return given(p);
    }
    let default = store::default_path(|k| std::env::var_os(k));
    if let Some(p) = default
        .as_ref()
        .filter(|p| p.to_string_lossy().contains("://"))
        && !store::is_postgres_address(&p.to_string_lossy())
    {
        return Err(UsageError(format!(
            "RTLAB_DB={}: an address rtlab cannot store in; give a SQLite file (PATH) or \
             postgres://USER@HOST/DB",
            p.display()
        ))
        .into());
    }
    default
        .map(|p| Location::parse(p.as_os_str()))
        .ok_or_else(|| {
            UsageError(
                "no place for the run store: HOME is not set; give --db PATH or set RTLAB_DB"
                    .into(),
            )
            .into()
        })
}

/// A `--db` as typed: an address rtlab stores in (`postgres://`), or a SQLite file in a
/// directory that exists. Another address (`http://server:8080`, `mysql://...`) was stored as
/// a directory named after it, and `--db /nonexistent/x.db` made `/nonexistent`: both are
/// refused, with the forms that work (issue #48). The default store's directory is still made.
fn given(p: &Path) -> Result<Location> {
    let location = Location::parse(p.as_os_str());
    let text = p.to_string_lossy();
    let refuse =
        |why: String| -> Result<Location> { Err(UsageError(format!("--db {text}: {why}")).into()) };
    match &location {
        Location::File(_) if text.contains("://") => refuse(
            "an address rtlab cannot store in; give a SQLite file (PATH) or \
             postgres://USER@HOST/DB"
                .into(),
        ),
        Location::File(path) => match path.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(dir) if !dir.is_dir() => refuse(format!(
                "the directory {} does not exist; create it, or name a file in one that does",
                dir.display()
            )),
            _ => Ok(location),
        },
        Location::Postgres(_) => Ok(location),
    }
}

/// Opens (creating if need be) the store, for saving.
pub fn open(db: Option<&Path>) -> Result<Store> {
    let location = location(db)?;
    Store::open_at(&location).map_err(|e| UsageError(e.to_string()).into())
}

/// Checks, before a run that will save into it, that the store can be used, creating nothing
/// on disk: an existing store is opened (its schema checked), a new file must be creatable
/// (its directory exists or can be made, the path is not a directory); a PostgreSQL database
/// is connected to (and its schema made or brought up to date).
pub fn check_usable(db: Option<&Path>) -> Result<()> {
    let path = match location(db)? {
        Location::File(path) => path,
        postgres @ Location::Postgres(_) => {
            return Store::open_at(&postgres)
                .map(drop)
                .map_err(|e| UsageError(e.to_string()).into());
        }
    };
    if path.exists() {
        if path.is_dir() {
            return Err(
                UsageError(format!("{} is a directory; name a file", path.display())).into(),
            );
        }
        return Store::open(&path)
            .map(drop)
            .map_err(|e| UsageError(e.to_string()).into());
    }
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => files::check_dir_creatable(parent),
        None => files::check_creatable(&path),
    }
    .map_err(|e| UsageError(format!("{}: {e}", path.display())).into())
}

/// Opens the store for reading: a store file that does not exist yet is an error, not a new
/// file.
pub fn open_existing(db: Option<&Path>) -> Result<Store> {
    let location = location(db)?;
    if let Location::File(path) = &location
        && !path.exists()
    {
        return Err(UsageError(format!(
            "no run store at {} yet: `rtlab measure` saves every run there (or give --db PATH)",
            path.display()
        ))
        .into());
    }
    Store::open_at(&location).map_err(|e| UsageError(e.to_string()).into())
}

/// Saves a finished measurement, with its label and the session it belongs to (the phases of
/// one `rtlab run`); returns its id.
pub fn save(
    run: &MeasureRun,
    db: Option<&Path>,
    label: Option<&str>,
    session: Option<&str>,
) -> Result<RunId> {
    let mut store = open(db)?;
    Ok(store.save_measure(run, label, session)?)
}

/// A RUN argument: a result file, or a stored run.
///
/// A RUN that reads as a path (it has a `/` or a file extension) and is not there is "no such
/// file", not a store lookup that fails for another reason.
pub fn load(spec: &str, db: Option<&Path>) -> Result<MeasureRun> {
    let path = Path::new(spec);
    if path.exists() {
        let text = files::read_input_text(path, model::limits::MAX_RESULT_BYTES)
            .map_err(|e| UsageError(format!("{}: {e}", path.display())))?;
        return MeasureRun::from_json(&text)
            .map_err(|e| UsageError(format!("{}: {e}", path.display())).into());
    }
    if looks_like_path(spec) {
        return Err(UsageError(format!(
            "{spec}: no such file; a RUN is a result file, a stored run's id (or a unique prefix of it), or `last`"
        ))
        .into());
    }
    let store = open_existing(db)?;
    let id = resolve(&store, spec)?;
    Ok(store.load_measure(&id)?)
}

/// The hardware-latency run in the file `spec` names (`rtlab hwlat -o FILE`), when it is one
/// (its `schema` is `rtlab.hwlat/1`); `None` for anything else, which [`load`] reads.
pub fn hwlat_file(spec: &str) -> Result<Option<model::hwlat::HwlatRun>> {
    let path = Path::new(spec);
    if !path.is_file() {
        return Ok(None);
    }
    let text = files::read_input_text(path, model::limits::MAX_RESULT_BYTES)
        .map_err(|e| UsageError(format!("{}: {e}", path.display())))?;
    // Parsed as a whole only when the schema's name is in it at all (a large latency result
    // is read once more by `load`, not parsed twice).
    if !text.contains(model::hwlat::HWLAT_SCHEMA) {
        return Ok(None);
    }
    let schema = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("schema").and_then(|s| s.as_str()).map(str::to_string));
    if schema.as_deref() != Some(model::hwlat::HWLAT_SCHEMA) {
        return Ok(None);
    }
    model::hwlat::HwlatRun::from_json(&text)
        .map(Some)
        .map_err(|e| UsageError(format!("{}: {e}", path.display())).into())
}

/// A stored run's id from a RUN argument: an id, a unique prefix of it, `last`, or else a
/// label that exactly one run has (`rtlab compare old-kernel new-kernel`).
pub fn resolve(store: &Store, spec: &str) -> Result<RunId> {
    let by_id = match store.resolve(spec) {
        Ok(id) => return Ok(id),
        Err(e) => e,
    };
    let filter = store::Filter {
        label: Some(spec.to_string()),
        ..store::Filter::default()
    };
    let labelled: Vec<RunId> = store
        .list(&filter)?
        .into_iter()
        .filter(|s| s.label.as_deref() == Some(spec))
        .map(|s| s.id)
        .collect();
    match labelled.as_slice() {
        [id] => Ok(id.clone()),
        [] => Err(UsageError(format!("{by_id}; no run is labelled \"{spec}\" either")).into()),
        many => Err(UsageError(format!(
            "{} runs are labelled \"{spec}\" ({}); name one by its id",
            many.len(),
            many.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .into()),
    }
}

/// Whether a RUN argument names a file rather than a stored run: ids and `last` have neither
/// a `/` nor a `.`.
fn looks_like_path(spec: &str) -> bool {
    spec.contains('/') || spec.contains('.')
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
    let run = load(spec, db)?;
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

/// The label of the stored run `spec` names (a run already found by [`load`]), if it has one.
pub fn stored_label(spec: &str, db: Option<&Path>) -> Result<Option<String>> {
    Ok(stored_names(spec, db)?.1)
}

/// The id, label and session (the `rtlab run` whose phase it was) of the stored run `spec`
/// names.
pub fn stored_names(
    spec: &str,
    db: Option<&Path>,
) -> Result<(RunId, Option<String>, Option<String>)> {
    let store = open_existing(db)?;
    let id = resolve(&store, spec)?;
    let (label, session) = store.names(&id)?;
    Ok((id, label, session))
}

/// The table a finished run prints (also `rtlab show`): the per-CPU table, the load achieved
/// and the audit's line.
/// A run as `rtlab measure` prints it at the end and `rtlab show` again: the per-CPU table,
/// then the load, the audit line and the trace capture when the run has them.
pub fn table_text(run: &MeasureRun) -> String {
    if run.noise.is_some() {
        return report::noise::table(run);
    }
    let mut text = report::table::measure_table(run);
    if let Some(load) = &run.load {
        text = text + "\n" + &report::load::run_load_table(load, run.status);
    }
    if let Some(line) = run
        .audit
        .as_ref()
        .and_then(report::audit::measure_audit_line)
    {
        text = text + &line + "\n";
    }
    if let Some(t) = &run.trace {
        text.push_str(&report::explain::capture_lines(t));
    }
    text
}

/// Where a finished run goes: the result file (`-o`) and the run store (unless `--no-store`).
pub struct Keep<'a> {
    /// The result file.
    pub output: Option<&'a std::path::Path>,
    /// Do not save in the store.
    pub no_store: bool,
    /// The store (`--db`).
    pub db: Option<&'a std::path::Path>,
    /// Its label.
    pub label: Option<&'a str>,
    /// Its session (`rtlab run`).
    pub session: Option<&'a str>,
}

/// Writes the result file and saves the run. The measurement is done and about to be printed
/// either way: a store that cannot be written is a warning; a result file that cannot be
/// written is returned, to be the command's error once everything else is done.
pub fn keep(
    run: &MeasureRun,
    to: &Keep<'_>,
    push: Option<&mut crate::push_to::Pusher>,
    console: &mut crate::console::Console,
) -> Option<anyhow::Error> {
    use anyhow::Context;
    let json_error = to.output.and_then(|path| {
        files::write_atomically(path, run.to_json().as_bytes())
            .with_context(|| format!("writing the result to {}", path.display()))
            .err()
    });
    let mut local_id = None;
    if !to.no_store {
        let what = if run.noise.is_some() {
            "noise run"
        } else {
            "run"
        };
        match save(run, to.db, to.label, to.session) {
            Ok(id) => {
                console.note(&format!(
                    "saved as {what} {id}; `rtlab show {id}` shows it again"
                ));
                local_id = Some(id.to_string());
            }
            Err(e) => console.warn(&format!(
                "the result was not saved in the run store: {e:#}; --no-store skips it"
            )),
        }
    }
    // After the run is kept here: `--push` uploads it (or queues it), never changing the
    // command's outcome.
    if let Some(pusher) = push {
        pusher.push(run, local_id.as_deref(), to.label, to.session, console);
    }
    json_error
}
