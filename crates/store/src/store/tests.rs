//! Opening, migrations, saving and loading, labels, removal, atomicity and damaged rows.

use std::path::Path;

use model::Nanos;
use model::load::LoadReport;
use model::load::report::CpuBusy;
use proptest::prelude::*;
use rusqlite::Connection;

use crate::schema::SCHEMA_VERSION;
use crate::testdata::{realistic, small};
use crate::{Filter, RunId, Store, StoreError};

fn id(text: &str) -> RunId {
    RunId::parse(text).unwrap()
}

fn rows(store: &Store, sql: &str) -> i64 {
    store.conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

fn cpu_rows(store: &Store, run: &RunId) -> i64 {
    store
        .conn
        .query_row(
            "SELECT count(*) FROM run_cpus WHERE run_id = ?1",
            [run.as_str()],
            |r| r.get(0),
        )
        .unwrap()
}

#[test]
fn a_realistic_run_comes_back_equal() {
    let run = realistic();
    assert!(run.load.is_some() && run.audit.is_some() && run.break_event.is_some());
    assert!(
        run.cpus
            .iter()
            .all(|c| !c.spikes.is_empty() && !c.series.max_ns.is_empty())
    );
    assert_eq!(run.all.histogram.above_range(), 1);
    let mut store = Store::open_in_memory().unwrap();
    let id = store.save_measure(&run, Some("RT-#2"), Some("s1")).unwrap();
    assert_eq!(store.load_measure(&id).unwrap(), run);
    // Three CPUs and the aggregate.
    assert_eq!(cpu_rows(&store, &id), 4);
}

#[test]
fn statistics_are_derived_on_read_not_stored() {
    let run = realistic();
    let mut doctored = run.clone();
    doctored.cpus[1].stats.p99_ns = Some(1);
    doctored.cpus[1].regions.clear();
    doctored.all.stats.max_ns = Some(2);
    let mut store = Store::open_in_memory().unwrap();
    let id = store.save_measure(&doctored, None, None).unwrap();
    assert_eq!(store.load_measure(&id).unwrap(), run);
    let columns: Vec<String> = store
        .conn
        .prepare("SELECT name FROM pragma_table_info('run_cpus')")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(columns.iter().all(|c| !c.contains("stats")), "{columns:?}");
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
        assert_eq!(store.path(), path);
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION as i64);
        let mode: String = store
            .conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
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

#[test]
fn foreign_keys_are_enforced() {
    let store = Store::open_in_memory().unwrap();
    let orphan = store.conn.execute(
        "INSERT INTO run_cpus (run_id, cpu, raw_json, histogram_json, series_json)
         VALUES ('000000000000', 0, '{}', '{}', '{}')",
        [],
    );
    assert!(orphan.is_err());
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
    assert!(matches!(err, StoreError::Sqlite { .. }), "{err:?}");
    assert!(err.to_string().contains("notes.txt"), "{err}");
}

#[test]
fn a_save_that_fails_midway_leaves_nothing() {
    let mut store = Store::open_in_memory().unwrap();
    let mut run = realistic();
    // CPU 2 twice: the second insert breaks the primary key after the runs row and two
    // run_cpus rows were written.
    run.cpus.push(run.cpus[1].clone());
    let err = store.save_measure(&run, Some("broken"), None).unwrap_err();
    assert!(err.to_string().contains("UNIQUE"), "{err}");
    assert_eq!(store.count().unwrap(), 0);
    assert_eq!(rows(&store, "SELECT count(*) FROM run_cpus"), 0);
    // The store is still usable afterwards.
    let ok = store.save_measure(&realistic(), None, None).unwrap();
    assert_eq!(store.count().unwrap(), 1);
    assert_eq!(cpu_rows(&store, &ok), 4);
}

#[test]
fn a_taken_id_is_skipped() {
    let mut store = Store::open_in_memory().unwrap();
    let run = small("a", "6.1", "2026-01-01T00:00:00Z", &[1_000]);
    let first = store
        .save_with_ids(&run, None, None, [id("aaaaaaaaaaaa")])
        .unwrap();
    let second = store
        .save_with_ids(&run, None, None, [id("aaaaaaaaaaaa"), id("bbbbbbbbbbbb")])
        .unwrap();
    assert_eq!(
        (first.as_str(), second.as_str()),
        ("aaaaaaaaaaaa", "bbbbbbbbbbbb")
    );
    let err = store
        .save_with_ids(&run, None, None, [id("aaaaaaaaaaaa"), id("bbbbbbbbbbbb")])
        .unwrap_err();
    assert!(matches!(err, StoreError::NoFreeId { .. }), "{err:?}");
    assert_eq!(store.count().unwrap(), 2);
}

#[test]
fn labels_are_set_and_cleared() {
    let mut store = Store::open_in_memory().unwrap();
    let run = small("a", "6.1", "2026-01-01T00:00:00Z", &[1_000]);
    let id = store.save_measure(&run, Some(""), Some("")).unwrap();
    let label = |store: &Store| store.list(&Filter::default()).unwrap()[0].label.clone();
    let session = store.list(&Filter::default()).unwrap()[0].session.clone();
    assert_eq!((label(&store), session), (None, None));
    store.set_label(&id, Some("RT-#2")).unwrap();
    assert_eq!(label(&store).as_deref(), Some("RT-#2"));
    store.set_label(&id, Some("RT after step 3")).unwrap();
    assert_eq!(label(&store).as_deref(), Some("RT after step 3"));
    store.set_label(&id, None).unwrap();
    assert_eq!(label(&store), None);
    store.set_label(&id, Some("x")).unwrap();
    store.set_label(&id, Some("")).unwrap();
    assert_eq!(label(&store), None);
    let missing = store.set_label(&RunId::parse("0123456789ab").unwrap(), Some("y"));
    assert!(
        matches!(missing, Err(StoreError::NotFound { .. })),
        "{missing:?}"
    );
}

#[test]
fn removing_a_run_removes_its_cpu_rows() {
    let mut store = Store::open_in_memory().unwrap();
    let keep = store.save_measure(&realistic(), None, None).unwrap();
    let gone = store.save_measure(&realistic(), None, None).unwrap();
    assert_eq!(rows(&store, "SELECT count(*) FROM run_cpus"), 8);
    store.remove(&gone).unwrap();
    assert_eq!(store.count().unwrap(), 1);
    assert_eq!(cpu_rows(&store, &gone), 0);
    assert_eq!(cpu_rows(&store, &keep), 4);
    let again = store.remove(&gone).unwrap_err();
    assert!(matches!(again, StoreError::NotFound { .. }), "{again:?}");
    let load = store.load_measure(&gone).unwrap_err();
    assert!(load.to_string().contains(gone.as_str()), "{load}");
    assert_eq!(store.load_measure(&keep).unwrap(), realistic());
}

#[test]
fn damaged_columns_are_errors_naming_run_and_column() {
    let mut store = Store::open_in_memory().unwrap();
    let id = store.save_measure(&realistic(), None, None).unwrap();
    let damage = |store: &Store, sql: &str| {
        store.conn.execute(sql, [id.as_str()]).unwrap();
        store.load_measure(&id).unwrap_err().to_string()
    };
    let message = damage(
        &store,
        "UPDATE runs SET params_json = '{\"cpus\":' WHERE id = ?1",
    );
    assert!(
        message.contains(id.as_str()) && message.contains("params_json"),
        "{message}"
    );

    let mut store2 = Store::open_in_memory().unwrap();
    let id2 = store2.save_measure(&realistic(), None, None).unwrap();
    store2
        .conn
        .execute(
            "UPDATE run_cpus SET raw_json = 'garbage' WHERE run_id = ?1 AND cpu = 2",
            [id2.as_str()],
        )
        .unwrap();
    let message = store2.load_measure(&id2).unwrap_err().to_string();
    assert!(message.contains("run_cpus.raw_json (cpu 2)"), "{message}");
    store2
        .conn
        .execute(
            "UPDATE run_cpus SET histogram_json = '[]' WHERE run_id = ?1 AND cpu = -1",
            [id2.as_str()],
        )
        .unwrap();
    let message = store2.list(&Filter::default()).unwrap_err().to_string();
    assert!(message.contains(&format!("run {id2}")), "{message}");
    assert!(
        message.contains("histogram_json (all-CPU row)"),
        "{message}"
    );

    let mut store3 = Store::open_in_memory().unwrap();
    let id3 = store3.save_measure(&realistic(), None, None).unwrap();
    store3
        .conn
        .execute(
            "UPDATE runs SET status = 'exploded' WHERE id = ?1",
            [id3.as_str()],
        )
        .unwrap();
    let message = store3.load_measure(&id3).unwrap_err().to_string();
    assert!(message.contains("column status"), "{message}");
    store3
        .conn
        .execute(
            "DELETE FROM run_cpus WHERE run_id = ?1 AND cpu = -1",
            [id3.as_str()],
        )
        .unwrap();
    store3
        .conn
        .execute(
            "UPDATE runs SET status = 'complete' WHERE id = ?1",
            [id3.as_str()],
        )
        .unwrap();
    let message = store3.load_measure(&id3).unwrap_err().to_string();
    assert!(message.contains("all-CPU row is missing"), "{message}");
    store.remove(&id).unwrap();
}

#[test]
fn a_run_of_another_kind_is_not_loaded_as_a_measurement() {
    let mut store = Store::open_in_memory().unwrap();
    let id = store.save_measure(&realistic(), None, None).unwrap();
    store
        .conn
        .execute(
            "UPDATE runs SET kind = 'import' WHERE id = ?1",
            [id.as_str()],
        )
        .unwrap();
    let err = store.load_measure(&id).unwrap_err();
    assert!(matches!(err, StoreError::WrongKind { .. }), "{err:?}");
}

#[test]
fn an_elapsed_time_beyond_sqlite_integers_is_refused_before_writing() {
    let mut store = Store::open_in_memory().unwrap();
    let mut run = realistic();
    run.elapsed_ns = Nanos(u64::MAX);
    let err = store.save_measure(&run, None, None).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Encode {
                column: "elapsed_ns",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(store.count().unwrap(), 0);
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
                    store.save_measure(&small("a", "6.1", "2026-01-01T00:00:00Z", &[5]), None, None)
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap().unwrap();
        }
        assert_eq!(Store::open(&path).unwrap().count().unwrap(), 8);
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
    assert_eq!(store.schema_version().unwrap(), 6);
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
