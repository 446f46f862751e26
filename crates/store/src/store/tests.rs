//! Opening, migrations, saving and loading, labels, removal, atomicity and damaged rows: what
//! every engine must do in `engine_tests.rs` (run on SQLite and on PostgreSQL), what only a
//! SQLite file does here.

use std::path::Path;

use model::Nanos;
use model::load::LoadReport;
use model::load::report::CpuBusy;
use proptest::prelude::*;
use rusqlite::Connection;

use crate::db::Arg;
use crate::schema::SCHEMA_VERSION;
use crate::testdata::{TestStore, exec, realistic, scalar, small};
use crate::{Filter, RunId, Saved, Store, StoreError};

fn id(text: &str) -> RunId {
    RunId::parse(text).unwrap()
}

mod sqlite {
    use super::*;

    fn fresh() -> Option<TestStore> {
        TestStore::sqlite()
    }

    include!("engine_tests.rs");
}

mod postgres {
    use super::*;

    fn fresh() -> Option<TestStore> {
        TestStore::postgres()
    }

    include!("engine_tests.rs");

    #[test]
    fn many_writers_saving_the_same_runs_store_each_once() {
        let Some(store) = fresh() else { return };
        let url = store.url().unwrap();
        many_writers(move || Store::open_postgres(&url).unwrap(), &store, false);
    }

    #[test]
    fn many_writers_saving_the_same_run_at_the_same_moment_store_it_once() {
        for _ in 0..5 {
            let Some(store) = fresh() else { return };
            let url = store.url().unwrap();
            many_writers(move || Store::open_postgres(&url).unwrap(), &store, true);
        }
    }

    #[test]
    fn a_database_from_a_newer_rtlab_is_refused_untouched() {
        let Some(store) = fresh() else { return };
        exec(&store, "UPDATE rtlab_schema SET version = 99", &[]);
        let err = Store::open_postgres(&store.url().unwrap()).unwrap_err();
        assert!(
            matches!(err, StoreError::TooNew { found: 99, .. }),
            "{err:?}"
        );
        assert_eq!(store.schema_version().unwrap(), 99);
    }

    #[test]
    fn many_connections_creating_the_schema_at_once_all_succeed() {
        let Some(store) = fresh() else { return };
        // An empty database: the schema is made by whichever of eight openers comes first.
        store
            .db
            .batch(
                "DROP TABLE run_cpus; DROP TABLE runs; DROP TABLE tokens; DROP TABLE rtlab_schema;
                 DROP TABLE monitor_intervals; DROP TABLE monitor_incidents;
                 DROP TABLE monitor_hosts; DROP TABLE monitor_setups; DROP TABLE monitor_points;
                 DROP TABLE monitor_days",
            )
            .unwrap();
        let url = store.url().unwrap();
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let url = url.clone();
                std::thread::spawn(move || {
                    let mut s = Store::open_postgres(&url)?;
                    s.save_measure(
                        &small("a", "6.1", &format!("2026-01-01T00:00:0{i}Z"), &[5]),
                        None,
                        None,
                    )
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap().unwrap();
        }
        assert_eq!(store.count().unwrap(), 8);
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION as i64);
    }

    #[test]
    fn an_unreachable_server_is_an_error_naming_it_without_the_password() {
        let err = Store::open_postgres("postgres://rtlab:hunter2@127.0.0.1:1/none").unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("postgres://rtlab:***@127.0.0.1:1/none"),
            "{text}"
        );
        assert!(!text.contains("hunter2"), "{text}");
        // The reason, not only the driver's "error connecting to server", and said once.
        assert!(text.contains("Connection refused"), "{text}");
        assert_eq!(text.matches("Connection refused").count(), 1, "{text}");
    }
}

/// Eight writers, each with its own connection, save the same twenty runs: every run is
/// stored exactly once, with all its CPU rows, and every writer gets its id. With `lockstep`
/// they save the runs in the same order and meet at a barrier before each, so that all eight
/// insert the same row at the same moment (the race a fleet of `rtlab push` clients makes);
/// otherwise each goes through the runs in its own order.
fn many_writers(open: impl Fn() -> Store + Send + Sync + 'static, check: &Store, lockstep: bool) {
    let runs: Vec<_> = (0..20)
        .map(|i| {
            small(
                "board",
                "6.1",
                &format!("2026-02-01T00:00:{i:02}Z"),
                &[1_000 + i],
            )
        })
        .collect();
    const WRITERS: usize = 8;
    let open = std::sync::Arc::new(open);
    let runs = std::sync::Arc::new(runs);
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(WRITERS));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (open, runs, barrier) = (open.clone(), runs.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut store = open();
                // An error is kept, not unwrapped: a writer that panicked would leave the
                // others waiting at the barrier for ever.
                let mut ids: Vec<Option<Result<RunId, String>>> = vec![None; runs.len()];
                for k in 0..runs.len() {
                    let i = if lockstep {
                        barrier.wait();
                        k
                    } else {
                        (k * 7 + w * 3) % runs.len()
                    };
                    let saved = store.save(&runs[i], None, None);
                    ids[i] = Some(saved.map(|s| s.id).map_err(|e| format!("run {i}: {e:?}")));
                }
                ids
            })
        })
        .collect();
    let all: Vec<Vec<RunId>> = writers
        .into_iter()
        .map(|t| {
            let ids = t.join().unwrap().into_iter().map(|id| id.unwrap());
            ids.collect::<Result<_, _>>().unwrap()
        })
        .collect();
    assert_eq!(check.count().unwrap(), 20);
    assert_eq!(scalar(check, "SELECT count(*) FROM run_cpus", &[]), 40);
    for i in 0..20 {
        let first = all[0][i].clone();
        assert!(all.iter().all(|w| w[i] == first));
        assert_eq!(check.load_measure(&first).unwrap(), runs[i]);
    }
}

#[test]
fn many_writers_on_one_sqlite_file_store_each_run_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fleet.db");
    let check = Store::open(&path).unwrap();
    let p = path.clone();
    many_writers(move || Store::open(&p).unwrap(), &check, false);
}

#[test]
fn many_writers_saving_the_same_run_at_the_same_moment_on_one_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fleet.db");
    let check = Store::open(&path).unwrap();
    let p = path.clone();
    many_writers(move || Store::open(&p).unwrap(), &check, true);
}

/// A run whose load figures are `busy` and `rate`, saved and read back.
fn load_round_trip(busy: f64, rate: f64) -> (Option<LoadReport>, Option<LoadReport>) {
    let mut run = realistic();
    let load = run.load.as_mut().unwrap();
    load.cpu_busy = vec![CpuBusy {
        cpu: 0,
        busy_percent: busy,
        steal_percent: rate / 7.0,
    }];
    load.generators[0].ops_per_sec = rate;
    let mut store = Store::open_in_memory().unwrap();
    let id = store.save_measure(&run, None, None).unwrap();
    let back = store.load_measure(&id).unwrap();
    assert_eq!(back.cpus, run.cpus);
    (back.load, run.load)
}

#[test]
fn a_float_that_needs_exact_parsing_survives() {
    // serde_json's default (fast) float parser reads this one back 1 ulp off.
    let (back, saved) = load_round_trip(0.0, 905_182_839_978.584_1);
    assert_eq!(back, saved);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn floating_point_figures_survive_exactly(
        busy in proptest::num::f64::NORMAL | proptest::num::f64::SUBNORMAL | proptest::num::f64::ZERO,
        rate in 0.0f64..1e12,
    ) {
        let (back, saved) = load_round_trip(busy, rate);
        prop_assert_eq!(back, saved);
    }
}

#[test]
fn a_fresh_file_is_created_migrated_and_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deeper/still/rtlab.db");
    let run = realistic();
    let saved = {
        let mut store = Store::open(&path).unwrap();
        assert_eq!(store.name(), path.display().to_string());
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION as i64);
        let mode = store.db.query("PRAGMA journal_mode", &[]).unwrap()[0]
            .text(0)
            .unwrap();
        assert_eq!(mode, "wal");
        store.save_measure(&run, Some("vanilla"), None).unwrap()
    };
    assert!(path.is_file());
    // Reopening applies nothing and keeps everything.
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION as i64);
    assert_eq!(store.count().unwrap(), 1);
    assert_eq!(store.load_measure(&saved).unwrap(), run);
    let store = Store::open(&path).unwrap();
    assert_eq!(store.count().unwrap(), 1);
}

fn set_user_version(path: &Path, version: i64) {
    let conn = Connection::open(path).unwrap();
    conn.pragma_update(None, "user_version", version).unwrap();
}

#[test]
fn a_database_from_a_newer_rtlab_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rtlab.db");
    drop(Store::open(&path).unwrap());
    let newer = SCHEMA_VERSION as i64 + 3;
    set_user_version(&path, newer);
    let err = Store::open(&path).unwrap_err();
    assert!(
        matches!(err, StoreError::TooNew { found, supported, .. }
            if found == newer && supported == SCHEMA_VERSION),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(
        message.contains(&format!("schema version {newer}")),
        "{message}"
    );
    assert!(
        message.contains(&format!("up to {SCHEMA_VERSION}")),
        "{message}"
    );
    let conn = Connection::open(&path).unwrap();
    let kept: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(kept, newer);
}

#[test]
fn a_file_that_is_not_a_database_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "this is not a database, just some text ".repeat(40)).unwrap();
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::Engine { .. }), "{err:?}");
    assert!(err.to_string().contains("notes.txt"), "{err}");
}

#[test]
fn connections_opening_a_fresh_database_at_once_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rtlab.db");
    for round in 0..5 {
        let path = path.with_extension(format!("{round}.db"));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let mut store = Store::open(&path)?;
                    let run = small("a", "6.1", "2026-01-01T00:00:00Z", &[5]);
                    store.save(&run, None, None)
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap().unwrap();
        }
        // The same run from eight writers is stored once; the others get its id.
        assert_eq!(Store::open(&path).unwrap().count().unwrap(), 1);
    }
}

#[test]
fn a_version_1_store_gains_the_import_trace_build_noise_and_workload_columns_and_keeps_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    let mut conn = Connection::open(&path).unwrap();
    crate::schema::MIGRATIONS.to_version(&mut conn, 1).unwrap();
    drop(conn);
    let mut store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION as i64);
    let run = realistic();
    assert!(run.import.is_some() && run.trace.is_some() && run.build.is_some());
    let saved = store.save_measure(&run, None, None).unwrap();
    assert_eq!(store.load_measure(&saved).unwrap(), run);
    let mut measured = small("h", "6.1", "2026-01-01T00:00:00Z", &[5_000]);
    measured.import = None;
    measured.trace = None;
    measured.build = None;
    let saved = store.save_measure(&measured, None, None).unwrap();
    let back = store.load_measure(&saved).unwrap();
    assert_eq!((back.import, back.trace, back.build), (None, None, None));
    assert_eq!(back.workload, None);
    // A run measured with --workload keeps its workload section (version 6).
    measured.workload = Some(model::workload::WorkloadInfo {
        runtime_ns: model::Nanos::from_us(300),
        deadline_ns: model::Nanos::from_us(500),
        cpus: vec![model::workload::WorkloadCpu {
            cpu: 0,
            iterations: 123_456,
            nominal_ns: 300_100,
            jobs: 1,
            misses: 1,
            late_start: 1,
            max_latency_ns: 5_000,
            min_execution_ns: 300_100,
            max_execution_ns: 300_100,
            ..Default::default()
        }],
    });
    let saved = store.save_measure(&measured, None, None).unwrap();
    assert_eq!(store.load_measure(&saved).unwrap(), measured);
}
