//! What can go wrong with the store, each error naming the database (its file, or its
//! PostgreSQL address without the password) and the run and column where one is at fault and,
//! where a person can act, what to type instead.

use std::path::PathBuf;

use crate::db::DbError;
use crate::id::{MIN_PREFIX, RunId};

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The directory that should hold the database could not be created.
    #[error("cannot create the directory {} for the rtlab database: {source}", path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The database engine refused an operation (also: the file is not a database, it is
    /// locked for longer than the busy timeout, or the server cannot be reached).
    #[error("rtlab database {db}: {source}")]
    Engine {
        /// The database (`:memory:` for an in-memory store).
        db: String,
        /// The engine's error.
        source: DbError,
    },
    /// A PostgreSQL address was given to an rtlab built without PostgreSQL support.
    #[error(
        "rtlab database {db}: this rtlab was built without PostgreSQL support (the `server` \
         feature; boards push to `rtlab serve` instead); give a SQLite file with --db PATH"
    )]
    NoPostgres {
        /// The address, without its password.
        db: String,
    },
    /// A database address that cannot be used.
    #[error("rtlab database '{db}': {why}")]
    BadAddress {
        /// The address as given, without its password.
        db: String,
        /// What is wrong and what to write.
        why: String,
    },
    /// A schema migration failed; the database is left at the version it had.
    #[error("rtlab database {db}: cannot bring the schema up to date: {why}")]
    Migrate {
        /// The database.
        db: String,
        /// The migration's error.
        why: String,
    },
    /// The database was written by a newer rtlab with a schema this one does not know.
    #[error(
        "rtlab database {db} has schema version {found}, written by a newer rtlab; this rtlab \
         knows schema versions up to {supported}. Upgrade rtlab, or give another database \
         with --db PATH or RTLAB_DB"
    )]
    TooNew {
        /// The database.
        db: String,
        /// Its schema version (SQLite's `user_version`).
        found: i64,
        /// The newest version this rtlab knows.
        supported: usize,
    },
    /// No stored run has this id (or the text is not a run id at all).
    #[error(
        "no run '{spec}' in {db}; `rtlab runs` lists the stored ids (give an id, a unique prefix \
         of at least {MIN_PREFIX} characters, or `last`)"
    )]
    NotFound {
        /// The database.
        db: String,
        /// What was asked for.
        spec: String,
    },
    /// `last` was asked for, but nothing is stored.
    #[error("no runs are stored in {db} yet, so `last` names nothing; `rtlab measure` saves one")]
    Empty {
        /// The database.
        db: String,
    },
    /// A prefix matches more than one run.
    #[error(
        "run id prefix '{prefix}' matches {} runs: {}; type more characters of the id \
         (`rtlab runs` lists ids)",
        candidates.len(),
        candidate_list(candidates)
    )]
    Ambiguous {
        /// The prefix given.
        prefix: String,
        /// Every run it matches, ascending.
        candidates: Vec<RunId>,
    },
    /// A prefix too short to name a run reliably.
    #[error(
        "run id '{spec}' is too short: give at least {MIN_PREFIX} characters of an id, the \
         whole id, or `last` (`rtlab runs` lists ids)"
    )]
    TooShort {
        /// What was given.
        spec: String,
    },
    /// A stored value that does not read back: the row was damaged or written by hand.
    #[error("run {run} in {db}: column {column} is damaged: {why}")]
    Corrupt {
        /// The database.
        db: String,
        /// The run's id as stored.
        run: String,
        /// The column (`params_json`, `run_cpus.raw_json` ...).
        column: String,
        /// What is wrong with it.
        why: String,
    },
    /// A stored monitor interval or incident that does not read back.
    #[error("rtlab database {db}: {what} is damaged: {why}")]
    History {
        /// The database.
        db: String,
        /// Which row (`the interval of board-1 at 1700000000000000000`).
        what: String,
        /// What is wrong with it.
        why: String,
    },
    /// The run exists but holds another kind of result.
    #[error("run {run} is a '{kind}' result, not a measurement")]
    WrongKind {
        /// The run.
        run: RunId,
        /// Its kind.
        kind: String,
    },
    /// A value could not be encoded for storage.
    #[error("cannot encode {column} of the run for the store: {why}")]
    Encode {
        /// The column it was meant for.
        column: &'static str,
        /// What the encoder said.
        why: String,
    },
    /// Every generated id was already taken (practically impossible with 48 random bits).
    #[error("rtlab database {db}: could not find a free run id; try again")]
    NoFreeId {
        /// The database.
        db: String,
    },
    /// A token name that cannot be used, or a token that does not exist.
    #[error("token '{name}' {why}")]
    Token {
        /// The name as given (at most 80 characters of it).
        name: String,
        /// What is wrong and what to do.
        why: String,
    },
    /// A list filter that cannot be applied.
    #[error("{field} '{value}' {expected}")]
    BadFilter {
        /// The filter (`since`, `until`, `status`).
        field: &'static str,
        /// The value given.
        value: String,
        /// What is expected instead.
        expected: String,
    },
}

/// At most ten ids, then a count of the rest.
fn candidate_list(ids: &[RunId]) -> String {
    const SHOWN: usize = 10;
    let mut text = ids
        .iter()
        .take(SHOWN)
        .map(RunId::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > SHOWN {
        text.push_str(&format!(" and {} more", ids.len() - SHOWN));
    }
    text
}
