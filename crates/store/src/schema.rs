//! The database schema, written down as the list of migrations that build it.
//!
//! The schema version is SQLite's `user_version`, kept by `rusqlite_migration`: version `n`
//! means the first `n` migrations below have been applied. Migrations are only ever appended;
//! a released one is never edited, so every database reaches the same schema by the same steps.
//!
//! What is stored is raw: run metadata, and per CPU the exact accumulator, the sparse histogram,
//! the worst samples and the per-second series, each as the JSON of its `rtlab-model` type.
//! Statistics (percentiles, mean, standard deviation) and region counts are derived from those
//! when a run is read, so a better estimator never needs a migration (docs/decisions/0010).
//!
//! PostgreSQL (a shared fleet store) came at version 7: a new PostgreSQL database is created at
//! that version in one step ([`POSTGRES_BASELINE`], the same tables and columns in PostgreSQL's
//! types), and every later migration is written once, in SQL both engines accept
//! ([`POSTGRES_STEPS`] repeats SQLite's steps after 7, which a test checks). PostgreSQL keeps
//! the version in the one-row table `rtlab_schema`.
//!
//! `runs` has one row per stored result; `hostname`, `kernel_release`, `arch`, `status`,
//! `started_at`, `label` and `session` are plain columns so that listing and filtering need no
//! JSON. `run_cpus` has one row per measured CPU and one for the all-CPU aggregate
//! ([`ALL_CPUS`]).

use rusqlite_migration::{M, Migrations};

/// The `run_cpus.cpu` value of the all-CPU aggregate row.
pub const ALL_CPUS: i64 = -1;

/// The `runs.kind` of a measurement (`rtlab measure`).
pub const KIND_MEASURE: &str = "measure";

/// The `runs.kind` of a noise run (`rtlab noise`, schema `rtlab.noise/1`).
pub const KIND_NOISE: &str = "noise";

/// Every migration, oldest first.
const STEPS: &[M<'static>] = &[
    M::up(
        // 1: runs and per-CPU raw data (issue #5).
        r#"
CREATE TABLE runs (
    id             TEXT    NOT NULL PRIMARY KEY CHECK (length(id) = 12),
    kind           TEXT    NOT NULL,
    schema         TEXT    NOT NULL,
    rtlab_version  TEXT    NOT NULL,
    status         TEXT    NOT NULL,
    started_at     TEXT    NOT NULL,
    ended_at       TEXT    NOT NULL,
    elapsed_ns     INTEGER NOT NULL,
    hostname       TEXT    NOT NULL,
    kernel_release TEXT    NOT NULL,
    arch           TEXT    NOT NULL,
    label          TEXT,
    session        TEXT,
    host_json      TEXT    NOT NULL,
    params_json    TEXT    NOT NULL,
    break_json     TEXT,
    warnings_json  TEXT    NOT NULL,
    load_json      TEXT,
    audit_json     TEXT,
    created_at     TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
) STRICT;
CREATE INDEX runs_started_at ON runs (started_at);
CREATE INDEX runs_hostname ON runs (hostname);
CREATE INDEX runs_label ON runs (label);
CREATE INDEX runs_session ON runs (session);

CREATE TABLE run_cpus (
    run_id         TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    cpu            INTEGER NOT NULL CHECK (cpu >= -1),
    tid            INTEGER,
    raw_json       TEXT    NOT NULL,
    histogram_json TEXT    NOT NULL,
    spikes_json    TEXT,
    series_json    TEXT    NOT NULL,
    PRIMARY KEY (run_id, cpu)
) STRICT;
"#,
    )
    .foreign_key_check(),
    M::up(
        // 2: where an imported run came from (`rtlab import`, issue #5); NULL for measured runs.
        "ALTER TABLE runs ADD COLUMN import_json TEXT;",
    ),
    M::up(
        // 3: the trace window and explanations of `measure --trace` (issue #6); NULL without.
        "ALTER TABLE runs ADD COLUMN trace_json TEXT;",
    ),
    M::up(
        // 4: the rtlab binary that wrote the run (issue #15); NULL for runs stored before.
        "ALTER TABLE runs ADD COLUMN build_json TEXT;",
    ),
    M::up(
        // 5: the noise section of a noise run (issue #16); NULL for latency runs.
        "ALTER TABLE runs ADD COLUMN noise_json TEXT;",
    ),
    M::up(
        // 6: the workload section of a run measured with --workload (issue #17); NULL
        // otherwise.
        "ALTER TABLE runs ADD COLUMN workload_json TEXT;",
    ),
    M::up(
        // 7: a fleet store (issue #18). `digest` is the SHA-256 of what a run stored (not its
        // label or session): the same run saved or uploaded twice is kept once. NULL for runs
        // stored before. `tokens` holds the upload and read tokens of `rtlab serve`, hashed.
        r#"
ALTER TABLE runs ADD COLUMN digest TEXT;
CREATE UNIQUE INDEX runs_digest ON runs (digest);
CREATE TABLE tokens (
    name       TEXT NOT NULL PRIMARY KEY,
    hash       TEXT NOT NULL UNIQUE,
    role       TEXT NOT NULL CHECK (role IN ('push', 'read')),
    created_at TEXT NOT NULL,
    revoked_at TEXT
) STRICT;
"#,
    ),
    M::up(STEP_8),
    M::up(STEP_9),
    M::up(STEP_10),
    M::up(STEP_11),
    M::up(STEP_12),
];

/// 8: the timerlat section of a run the kernel's timerlat tracer measured (issue #29); NULL
/// otherwise.
const STEP_8: &str = "ALTER TABLE runs ADD COLUMN timerlat_json TEXT;";

/// 9: the gate's verdict on the run by its own criteria when it was saved (`pass`, `fail`,
/// `unjudgeable`; issue #43), so that listings and the fleet's pages show it without loading
/// every run. NULL for runs saved before: those are judged when read. A change to the gate's
/// rules comes with a migration setting the column back to NULL, so no stale verdict is shown.
const STEP_9: &str = "ALTER TABLE runs ADD COLUMN verdict TEXT;";

/// 10: `rtlab monitor`'s history (issue #49): one row per host and interval, one per
/// incident. The figures are the interval's JSON (`rtlab.monitor/1`); the columns beside it are
/// what queries select and order by.
const STEP_10: &str = r#"
CREATE TABLE monitor_intervals (
    host           TEXT    NOT NULL,
    start_ns       INTEGER NOT NULL,
    length_ns      INTEGER NOT NULL,
    max_ns         INTEGER,
    breaches       INTEGER NOT NULL,
    kernel_release TEXT    NOT NULL,
    interval_json  TEXT    NOT NULL,
    PRIMARY KEY (host, start_ns)
) STRICT;
CREATE TABLE monitor_incidents (
    id             TEXT    NOT NULL PRIMARY KEY,
    host           TEXT    NOT NULL,
    start_ns       INTEGER NOT NULL,
    worst_ns       INTEGER NOT NULL,
    run_id         TEXT,
    incident_json  TEXT    NOT NULL
) STRICT;
CREATE INDEX monitor_incidents_host ON monitor_incidents (host, start_ns);
"#;

/// 11: an interrupted run is no longer judged on what it measured but cannot be judged (issue
/// #48: a CI timeout's SIGTERM must not leave a passing run): the verdicts saved for
/// interrupted runs are set back to NULL, so they are judged again when read.
const STEP_11: &str = "UPDATE runs SET verdict = NULL WHERE status = 'interrupted';";

/// 12: the figures of an interval the long-term view reads (wake-ups, engine, CPUs, budget)
/// as columns beside its JSON, filled from it for the intervals already kept, so that a year of
/// a host's history is read without a document parsed (`rtlab serve`'s monitor pages, issue
/// #49); and an index on the start alone for the fleet's latest intervals.
const STEP_12: &str = r#"
ALTER TABLE monitor_intervals ADD COLUMN samples INTEGER NOT NULL DEFAULT 0;
ALTER TABLE monitor_intervals ADD COLUMN engine TEXT NOT NULL DEFAULT '';
ALTER TABLE monitor_intervals ADD COLUMN cpus TEXT NOT NULL DEFAULT '';
ALTER TABLE monitor_intervals ADD COLUMN budget_ns INTEGER;
UPDATE monitor_intervals SET
    samples = COALESCE(json_extract(interval_json, '$.samples'), 0),
    engine = COALESCE(json_extract(interval_json, '$.engine'), ''),
    cpus = COALESCE(json_extract(interval_json, '$.cpus'), ''),
    budget_ns = json_extract(interval_json, '$.budget_ns');
CREATE INDEX monitor_intervals_start ON monitor_intervals (start_ns);
"#;

/// [`STEP_12`] in PostgreSQL's types and JSON operators.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
const POSTGRES_STEP_12: &str = r#"
ALTER TABLE monitor_intervals ADD COLUMN samples BIGINT NOT NULL DEFAULT 0;
ALTER TABLE monitor_intervals ADD COLUMN engine TEXT NOT NULL DEFAULT '';
ALTER TABLE monitor_intervals ADD COLUMN cpus TEXT NOT NULL DEFAULT '';
ALTER TABLE monitor_intervals ADD COLUMN budget_ns BIGINT;
UPDATE monitor_intervals SET
    samples = COALESCE((interval_json::jsonb ->> 'samples')::bigint, 0),
    engine = COALESCE(interval_json::jsonb ->> 'engine', ''),
    cpus = COALESCE(interval_json::jsonb ->> 'cpus', ''),
    budget_ns = (interval_json::jsonb ->> 'budget_ns')::bigint;
CREATE INDEX monitor_intervals_start ON monitor_intervals (start_ns);
"#;

/// [`STEP_10`] in PostgreSQL's types.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
const POSTGRES_STEP_10: &str = r#"
CREATE TABLE monitor_intervals (
    host           TEXT    NOT NULL,
    start_ns       BIGINT  NOT NULL,
    length_ns      BIGINT  NOT NULL,
    max_ns         BIGINT,
    breaches       BIGINT  NOT NULL,
    kernel_release TEXT    NOT NULL,
    interval_json  TEXT    NOT NULL,
    PRIMARY KEY (host, start_ns)
);
CREATE TABLE monitor_incidents (
    id             TEXT    NOT NULL PRIMARY KEY,
    host           TEXT    NOT NULL,
    start_ns       BIGINT  NOT NULL,
    worst_ns       BIGINT  NOT NULL,
    run_id         TEXT,
    incident_json  TEXT    NOT NULL
);
CREATE INDEX monitor_incidents_host ON monitor_incidents (host, start_ns);
"#;

/// The schema version a new PostgreSQL database is created at.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) const POSTGRES_BASE_VERSION: i64 = 7;

/// The schema at version 7 in PostgreSQL's types: integers are `bigint`, SQLite's rowid is the
/// `seq` column (the order runs were saved in).
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) const POSTGRES_BASELINE: &str = r#"
CREATE TABLE runs (
    seq            BIGSERIAL NOT NULL UNIQUE,
    id             TEXT    NOT NULL PRIMARY KEY CHECK (length(id) = 12),
    kind           TEXT    NOT NULL,
    schema         TEXT    NOT NULL,
    rtlab_version  TEXT    NOT NULL,
    status         TEXT    NOT NULL,
    started_at     TEXT    NOT NULL,
    ended_at       TEXT    NOT NULL,
    elapsed_ns     BIGINT  NOT NULL,
    hostname       TEXT    NOT NULL,
    kernel_release TEXT    NOT NULL,
    arch           TEXT    NOT NULL,
    label          TEXT,
    session        TEXT,
    host_json      TEXT    NOT NULL,
    params_json    TEXT    NOT NULL,
    break_json     TEXT,
    warnings_json  TEXT    NOT NULL,
    load_json      TEXT,
    audit_json     TEXT,
    created_at     TEXT    NOT NULL
        DEFAULT (to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
    import_json    TEXT,
    trace_json     TEXT,
    build_json     TEXT,
    noise_json     TEXT,
    workload_json  TEXT,
    digest         TEXT
);
CREATE INDEX runs_started_at ON runs (started_at);
CREATE INDEX runs_hostname ON runs (hostname);
CREATE INDEX runs_label ON runs (label);
CREATE INDEX runs_session ON runs (session);
CREATE UNIQUE INDEX runs_digest ON runs (digest);

CREATE TABLE run_cpus (
    run_id         TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    cpu            BIGINT  NOT NULL CHECK (cpu >= -1),
    tid            BIGINT,
    raw_json       TEXT    NOT NULL,
    histogram_json TEXT    NOT NULL,
    spikes_json    TEXT,
    series_json    TEXT    NOT NULL,
    PRIMARY KEY (run_id, cpu)
);

CREATE TABLE tokens (
    name       TEXT NOT NULL PRIMARY KEY,
    hash       TEXT NOT NULL UNIQUE,
    role       TEXT NOT NULL CHECK (role IN ('push', 'read')),
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
"#;

/// The migrations after [`POSTGRES_BASE_VERSION`], oldest first: the same SQL as SQLite's.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) const POSTGRES_STEPS: &[&str] =
    &[STEP_8, STEP_9, POSTGRES_STEP_10, STEP_11, POSTGRES_STEP_12];

/// The schema version this rtlab writes and reads: the number of migrations.
pub const SCHEMA_VERSION: usize = STEPS.len();

/// The migrations, for `rusqlite_migration`.
pub(crate) const MIGRATIONS: Migrations<'static> = Migrations::from_slice(STEPS);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_valid() {
        MIGRATIONS.validate().unwrap();
        assert_eq!(SCHEMA_VERSION, 12);
    }

    /// The intervals kept before step 12 get their new columns from their documents.
    #[test]
    fn step_12_fills_the_new_columns_from_the_intervals_kept() {
        let mut c = rusqlite::Connection::open_in_memory().unwrap();
        MIGRATIONS.to_version(&mut c, 11).unwrap();
        let json = r#"{"host":"a","start_ns":0,"length_ns":10,"measured_ns":5,"engine":"timerlat","cpus":"2-3","kernel_release":"k","budget_ns":50000,"samples":77,"buckets":[],"per_cpu":[]}"#;
        c.execute(
            "INSERT INTO monitor_intervals (host, start_ns, length_ns, max_ns, breaches,
                 kernel_release, interval_json) VALUES ('a', 0, 10, 5, 1, 'k', ?1)",
            [json],
        )
        .unwrap();
        MIGRATIONS.to_latest(&mut c).unwrap();
        let row: (i64, String, String, Option<i64>) = c
            .query_row(
                "SELECT samples, engine, cpus, budget_ns FROM monitor_intervals",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .unwrap();
        assert_eq!(row, (77, "timerlat".into(), "2-3".into(), Some(50_000)));
    }

    #[test]
    fn postgres_reaches_the_same_version_by_the_same_later_steps() {
        let base = usize::try_from(POSTGRES_BASE_VERSION).unwrap();
        assert_eq!(base + POSTGRES_STEPS.len(), SCHEMA_VERSION);
    }
}
