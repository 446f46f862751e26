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
    M::up(STEP_13),
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

/// The statements that fill [`STEP_13`]'s tables from the intervals kept (both engines).
macro_rules! fill_13 {
    () => {
        r#"
INSERT INTO monitor_hosts (name) SELECT DISTINCT host FROM monitor_intervals ORDER BY host;
INSERT INTO monitor_setups (kernel_release, engine, cpus, budget_ns, length_ns)
    SELECT DISTINCT kernel_release, engine, cpus, COALESCE(budget_ns, 0), length_ns
    FROM monitor_intervals;
INSERT INTO monitor_points (host_id, start_ns, setup_id, max_ns, samples, breaches)
    SELECT h.id, i.start_ns, s.id, i.max_ns, i.samples, i.breaches
    FROM monitor_intervals i
    JOIN monitor_hosts h ON h.name = i.host
    JOIN monitor_setups s ON s.kernel_release = i.kernel_release AND s.engine = i.engine
        AND s.cpus = i.cpus AND s.budget_ns = COALESCE(i.budget_ns, 0)
        AND s.length_ns = i.length_ns;
INSERT INTO monitor_days (host_id, day, intervals, worst_ns, breaches, last_ns)
    SELECT host_id, day, COUNT(*), MAX(max_ns), CAST(SUM(breaches) AS BIGINT), MAX(start_ns)
    FROM (SELECT host_id, max_ns, breaches, start_ns,
              (start_ns - ((start_ns % 86400000000000) + 86400000000000) % 86400000000000)
                  / 86400000000000 AS day
          FROM monitor_points) p
    GROUP BY host_id, day;
"#
    };
}

/// 13: the compact layout of the monitor's history (issue #49, `monitor/compact.rs`): hosts and
/// setups (kernel release, engine, CPUs, budget or 0, interval length) by number, one narrow
/// point per interval kept in (host, start) order, and a summary per host and UTC day; filled
/// from the intervals kept. A day is `start_ns` divided by
/// 86 400 s, rounded down.
const STEP_13: &str = concat!(
    r#"
CREATE TABLE monitor_hosts (
    id   INTEGER NOT NULL PRIMARY KEY,
    name TEXT    NOT NULL UNIQUE
) STRICT;
CREATE TABLE monitor_setups (
    id             INTEGER NOT NULL PRIMARY KEY,
    kernel_release TEXT    NOT NULL,
    engine         TEXT    NOT NULL,
    cpus           TEXT    NOT NULL,
    budget_ns      INTEGER NOT NULL,
    length_ns      INTEGER NOT NULL,
    UNIQUE (kernel_release, engine, cpus, budget_ns, length_ns)
) STRICT;
CREATE TABLE monitor_points (
    host_id   INTEGER NOT NULL,
    start_ns  INTEGER NOT NULL,
    setup_id  INTEGER NOT NULL,
    max_ns    INTEGER,
    samples   INTEGER NOT NULL,
    breaches  INTEGER NOT NULL,
    PRIMARY KEY (host_id, start_ns)
) STRICT, WITHOUT ROWID;
CREATE TABLE monitor_days (
    host_id   INTEGER NOT NULL,
    day       INTEGER NOT NULL,
    intervals INTEGER NOT NULL,
    worst_ns  INTEGER,
    breaches  INTEGER NOT NULL,
    last_ns   INTEGER NOT NULL,
    PRIMARY KEY (host_id, day)
) STRICT, WITHOUT ROWID;
"#,
    fill_13!()
);

/// [`STEP_13`] in PostgreSQL's types. The points' key index carries every column the views
/// read, so that a host's range is an index-only scan; and the table is vacuumed after every
/// 100 000 new rows (PostgreSQL 13 and later), not after a fifth of its size, so that what
/// the index says is visible stays current as a fleet writes into a large table.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
const POSTGRES_STEP_13: &str = concat!(
    r#"
CREATE TABLE monitor_hosts (
    id   SERIAL  NOT NULL PRIMARY KEY,
    name TEXT    NOT NULL UNIQUE
);
CREATE TABLE monitor_setups (
    id             SERIAL  NOT NULL PRIMARY KEY,
    kernel_release TEXT    NOT NULL,
    engine         TEXT    NOT NULL,
    cpus           TEXT    NOT NULL,
    budget_ns      BIGINT  NOT NULL,
    length_ns      BIGINT  NOT NULL,
    UNIQUE (kernel_release, engine, cpus, budget_ns, length_ns)
);
CREATE TABLE monitor_points (
    host_id   INTEGER NOT NULL,
    setup_id  INTEGER NOT NULL,
    start_ns  BIGINT  NOT NULL,
    max_ns    BIGINT,
    samples   BIGINT  NOT NULL,
    breaches  BIGINT  NOT NULL,
    PRIMARY KEY (host_id, start_ns) INCLUDE (setup_id, max_ns, samples, breaches)
);
CREATE TABLE monitor_days (
    host_id   INTEGER NOT NULL,
    day       BIGINT  NOT NULL,
    intervals BIGINT  NOT NULL,
    worst_ns  BIGINT,
    breaches  BIGINT  NOT NULL,
    last_ns   BIGINT  NOT NULL,
    PRIMARY KEY (host_id, day)
);
"#,
    fill_13!(),
    r#"
DO $$
BEGIN
    IF current_setting('server_version_num')::int >= 130000 THEN
        EXECUTE 'ALTER TABLE monitor_points SET (autovacuum_vacuum_insert_scale_factor = 0,
            autovacuum_vacuum_insert_threshold = 100000)';
    END IF;
END
$$;
"#
);

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
pub(crate) const POSTGRES_STEPS: &[&str] = &[
    STEP_8,
    STEP_9,
    POSTGRES_STEP_10,
    STEP_11,
    POSTGRES_STEP_12,
    POSTGRES_STEP_13,
];

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
        assert_eq!(SCHEMA_VERSION, 13);
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

    /// Step 13 gives the intervals kept their points and day summaries: hosts and setups by
    /// number, a missing budget as 0, days rounded down (before 1970 too).
    #[test]
    fn step_13_fills_points_and_days_from_the_intervals_kept() {
        let mut c = rusqlite::Connection::open_in_memory().unwrap();
        MIGRATIONS.to_version(&mut c, 12).unwrap();
        let day = 86_400_000_000_000i64;
        for (host, start, max, breaches, budget) in [
            ("a", 0, Some(5), 0, Some(100)),
            ("a", day - 1, Some(9), 2, Some(100)),
            ("a", day, None, 0, None),
            ("b", -1, Some(7), 1, Some(100)),
        ] {
            c.execute(
                "INSERT INTO monitor_intervals (host, start_ns, length_ns, max_ns, breaches,
                     kernel_release, interval_json, samples, engine, cpus, budget_ns)
                 VALUES (?1, ?2, 1, ?3, ?4, 'k', '{}', 3, 'user', '1', ?5)",
                rusqlite::params![host, start, max, breaches, budget],
            )
            .unwrap();
        }
        MIGRATIONS.to_latest(&mut c).unwrap();
        let rows = |sql: &str| -> Vec<String> {
            let mut stmt = c.prepare(sql).unwrap();
            stmt.query_map([], |r| {
                (0..r.as_ref().column_count())
                    .map(|i| {
                        r.get::<_, rusqlite::types::Value>(i)
                            .map(|v| format!("{v:?}"))
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map(|v| v.join(" "))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect()
        };
        assert_eq!(
            rows("SELECT budget_ns FROM monitor_setups ORDER BY budget_ns").len(),
            2
        );
        assert_eq!(
            rows(
                "SELECT h.name, d.day, d.intervals, d.worst_ns, d.breaches, d.last_ns
                 FROM monitor_days d JOIN monitor_hosts h ON h.id = d.host_id
                 ORDER BY h.name, d.day"
            ),
            [
                "Text(\"a\") Integer(0) Integer(2) Integer(9) Integer(2) Integer(86399999999999)",
                "Text(\"a\") Integer(1) Integer(1) Null Integer(0) Integer(86400000000000)",
                "Text(\"b\") Integer(-1) Integer(1) Integer(7) Integer(1) Integer(-1)",
            ]
        );
        assert_eq!(
            rows(
                "SELECT p.start_ns, p.max_ns, s.budget_ns + s.length_ns FROM monitor_points p
                 JOIN monitor_setups s ON s.id = p.setup_id ORDER BY p.start_ns"
            ),
            [
                "Integer(-1) Integer(7) Integer(101)",
                "Integer(0) Integer(5) Integer(101)",
                "Integer(86399999999999) Integer(9) Integer(101)",
                "Integer(86400000000000) Null Integer(1)",
            ]
        );
    }

    #[test]
    fn postgres_reaches_the_same_version_by_the_same_later_steps() {
        let base = usize::try_from(POSTGRES_BASE_VERSION).unwrap();
        assert_eq!(base + POSTGRES_STEPS.len(), SCHEMA_VERSION);
    }
}
