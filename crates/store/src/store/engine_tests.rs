// The store's behaviour on one engine. Included twice by `tests.rs`: in `mod sqlite` and in
// `mod postgres`, each defining `fresh()`, so every test here runs on both.

fn cpu_rows(store: &Store, run: &RunId) -> i64 {
    scalar(
        store,
        "SELECT count(*) FROM run_cpus WHERE run_id = ?1",
        &[Arg::Text(run.as_str())],
    )
}

fn at(started_at: &str) -> model::measure::MeasureRun {
    small("a", "6.1", started_at, &[1_000])
}

/// Saves `run` under the first free id of `ids`.
fn save_as(store: &mut Store, run: &model::measure::MeasureRun, ids: &[&str]) -> Result<RunId, StoreError> {
    let encoded = crate::digest::Encoded::of(run)?;
    let ids: Vec<RunId> = ids.iter().map(|t| id(t)).collect();
    store.save_with_ids(&encoded, None, None, ids).map(|s| s.id)
}

#[test]
fn a_realistic_run_comes_back_equal() {
    let Some(mut store) = fresh() else { return };
    let run = realistic();
    assert!(run.load.is_some() && run.audit.is_some() && run.break_event.is_some());
    assert!(
        run.cpus
            .iter()
            .all(|c| !c.spikes.is_empty() && !c.series.max_ns.is_empty())
    );
    assert_eq!(run.all.histogram.above_range(), 1);
    let id = store.save_measure(&run, Some("RT-#2"), Some("s1")).unwrap();
    assert_eq!(store.load_measure(&id).unwrap(), run);
    // Three CPUs and the aggregate.
    assert_eq!(cpu_rows(&store, &id), 4);
}

#[test]
fn statistics_are_derived_on_read_not_stored() {
    let Some(mut store) = fresh() else { return };
    let run = realistic();
    let mut doctored = run.clone();
    doctored.cpus[1].stats.p99_ns = Some(1);
    doctored.cpus[1].regions.clear();
    doctored.all.stats.max_ns = Some(2);
    let id = store.save_measure(&doctored, None, None).unwrap();
    assert_eq!(store.load_measure(&id).unwrap(), run);
}

#[test]
fn the_same_run_saved_twice_is_kept_once_under_its_digest_id() {
    let Some(mut store) = fresh() else { return };
    let run = realistic();
    let first = store.save(&run, Some("first"), None).unwrap();
    assert!(first.new);
    let digest = crate::digest::Encoded::of(&run).unwrap().digest;
    assert_eq!(first.id.as_str(), &digest[..12]);
    // A label or session does not make it another run; the stored label stays.
    let again = store.save(&run, Some("second"), Some("s")).unwrap();
    assert_eq!(again, Saved { id: first.id.clone(), new: false });
    assert_eq!(store.count().unwrap(), 1);
    assert_eq!(cpu_rows(&store, &first.id), 4);
    let listed = store.list(&Filter::default()).unwrap();
    assert_eq!(listed[0].label.as_deref(), Some("first"));
    // What was read back and saved again is the same run.
    let back = store.load_measure(&first.id).unwrap();
    assert!(!store.save(&back, None, None).unwrap().new);
    // Another run is another row.
    let mut other = run;
    other.started_at.push('x');
    assert!(store.save(&other, None, None).unwrap().new);
    assert_eq!(store.count().unwrap(), 2);
}

#[test]
fn foreign_keys_are_enforced() {
    let Some(store) = fresh() else { return };
    let orphan = store.db.execute(
        "INSERT INTO run_cpus (run_id, cpu, raw_json, histogram_json, series_json)
         VALUES ('000000000000', 0, '{}', '{}', '{}')",
        &[],
    );
    assert!(orphan.is_err());
}

#[test]
fn a_save_that_fails_midway_leaves_nothing() {
    let Some(mut store) = fresh() else { return };
    let mut run = realistic();
    // CPU 2 twice: the second insert breaks the primary key after the runs row and two
    // run_cpus rows were written.
    run.cpus.push(run.cpus[1].clone());
    let err = store.save_measure(&run, Some("broken"), None).unwrap_err();
    let text = err.to_string().to_lowercase();
    assert!(text.contains("unique") || text.contains("duplicate key"), "{err}");
    assert_eq!(store.count().unwrap(), 0);
    assert_eq!(scalar(&store, "SELECT count(*) FROM run_cpus", &[]), 0);
    // The store is still usable afterwards.
    let ok = store.save_measure(&realistic(), None, None).unwrap();
    assert_eq!(store.count().unwrap(), 1);
    assert_eq!(cpu_rows(&store, &ok), 4);
}

#[test]
fn a_taken_id_is_skipped() {
    let Some(mut store) = fresh() else { return };
    let first = save_as(&mut store, &at("2026-01-01T00:00:00Z"), &["aaaaaaaaaaaa"]).unwrap();
    let second = save_as(
        &mut store,
        &at("2026-01-01T00:00:01Z"),
        &["aaaaaaaaaaaa", "bbbbbbbbbbbb"],
    )
    .unwrap();
    assert_eq!(
        (first.as_str(), second.as_str()),
        ("aaaaaaaaaaaa", "bbbbbbbbbbbb")
    );
    let err = save_as(
        &mut store,
        &at("2026-01-01T00:00:02Z"),
        &["aaaaaaaaaaaa", "bbbbbbbbbbbb"],
    )
    .unwrap_err();
    assert!(matches!(err, StoreError::NoFreeId { .. }), "{err:?}");
    assert_eq!(store.count().unwrap(), 2);
}

#[test]
fn labels_are_set_and_cleared() {
    let Some(mut store) = fresh() else { return };
    let id = store
        .save_measure(&at("2026-01-01T00:00:00Z"), Some(""), Some(""))
        .unwrap();
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
    let Some(mut store) = fresh() else { return };
    let keep = store.save_measure(&realistic(), None, None).unwrap();
    let mut other = realistic();
    other.started_at = "2026-01-12T12:00:00.000000Z".into();
    let gone = store.save_measure(&other, None, None).unwrap();
    assert_eq!(scalar(&store, "SELECT count(*) FROM run_cpus", &[]), 8);
    store.remove(&gone).unwrap();
    assert_eq!(store.count().unwrap(), 1);
    assert_eq!(cpu_rows(&store, &gone), 0);
    assert_eq!(cpu_rows(&store, &keep), 4);
    let again = store.remove(&gone).unwrap_err();
    assert!(matches!(again, StoreError::NotFound { .. }), "{again:?}");
    let load = store.load_measure(&gone).unwrap_err();
    assert!(load.to_string().contains(gone.as_str()), "{load}");
    assert_eq!(store.load_measure(&keep).unwrap(), realistic());
    // A removed run can be saved again.
    assert!(store.save(&other, None, None).unwrap().new);
}

#[test]
fn damaged_columns_are_errors_naming_run_and_column() {
    let Some(mut store) = fresh() else { return };
    let id = store.save_measure(&realistic(), None, None).unwrap();
    let arg = [Arg::Text(id.as_str())];
    exec(&store, "UPDATE runs SET params_json = '{\"cpus\":' WHERE id = ?1", &arg);
    let message = store.load_measure(&id).unwrap_err().to_string();
    assert!(
        message.contains(id.as_str()) && message.contains("params_json"),
        "{message}"
    );
    exec(&store, "DELETE FROM runs WHERE id = ?1", &arg);

    let id2 = store.save_measure(&realistic(), None, None).unwrap();
    let arg = [Arg::Text(id2.as_str())];
    exec(
        &store,
        "UPDATE run_cpus SET raw_json = 'garbage' WHERE run_id = ?1 AND cpu = 2",
        &arg,
    );
    let message = store.load_measure(&id2).unwrap_err().to_string();
    assert!(message.contains("run_cpus.raw_json (cpu 2)"), "{message}");
    exec(
        &store,
        "UPDATE run_cpus SET histogram_json = '[]' WHERE run_id = ?1 AND cpu = -1",
        &arg,
    );
    let message = store.list(&Filter::default()).unwrap_err().to_string();
    assert!(message.contains(&format!("run {id2}")), "{message}");
    assert!(
        message.contains("histogram_json (all-CPU row)"),
        "{message}"
    );
    exec(&store, "DELETE FROM runs WHERE id = ?1", &arg);

    let id3 = store.save_measure(&realistic(), None, None).unwrap();
    let arg = [Arg::Text(id3.as_str())];
    exec(&store, "UPDATE runs SET status = 'exploded' WHERE id = ?1", &arg);
    let message = store.load_measure(&id3).unwrap_err().to_string();
    assert!(message.contains("column status"), "{message}");
    exec(&store, "DELETE FROM run_cpus WHERE run_id = ?1 AND cpu = -1", &arg);
    exec(&store, "UPDATE runs SET status = 'complete' WHERE id = ?1", &arg);
    let message = store.load_measure(&id3).unwrap_err().to_string();
    assert!(message.contains("all-CPU row is missing"), "{message}");
}

#[test]
fn a_run_of_another_kind_is_not_loaded_as_a_measurement() {
    let Some(mut store) = fresh() else { return };
    let id = store.save_measure(&realistic(), None, None).unwrap();
    exec(
        &store,
        "UPDATE runs SET kind = 'import' WHERE id = ?1",
        &[Arg::Text(id.as_str())],
    );
    let err = store.load_measure(&id).unwrap_err();
    assert!(matches!(err, StoreError::WrongKind { .. }), "{err:?}");
}

#[test]
fn values_no_engine_can_hold_are_refused_before_writing() {
    let Some(mut store) = fresh() else { return };
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
    let mut run = realistic();
    run.host.kernel_release = "6.1\0-rt".into();
    let err = store.save_measure(&run, None, None).unwrap_err();
    assert!(err.to_string().contains("kernel_release"), "{err}");
    assert_eq!(store.count().unwrap(), 0);
}

#[test]
fn a_hostile_hostname_or_label_is_stored_as_text() {
    let Some(mut store) = fresh() else { return };
    let mut run = realistic();
    run.host.hostname = "<script>alert(1)</script>'; DROP TABLE runs; --".into();
    let id = store
        .save_measure(&run, Some("'); DELETE FROM runs; --"), None)
        .unwrap();
    assert_eq!(store.load_measure(&id).unwrap(), run);
    let listed = store
        .list(&Filter {
            host: Some(run.host.hostname.clone()),
            label: Some("delete from".into()),
            ..Filter::default()
        })
        .unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(store.count().unwrap(), 1);
}

/// A run stored before `rtlab.explain/2` — its explanations with the sentences of the time
/// (`story`) and caveats in words — still loads, and keeps them to be told as they were.
#[test]
fn a_trace_stored_before_explain_2_still_loads() {
    let Some(mut store) = fresh() else { return };
    let id = store.save_measure(&realistic(), None, None).unwrap();
    let old = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/explanations/trace_capture_before_explain2.json"
    ))
    .unwrap();
    exec(
        &store,
        "UPDATE runs SET trace_json = ?1 WHERE id = ?2",
        &[Arg::Text(&old), Arg::Text(id.as_str())],
    );
    let trace = store.load_measure(&id).unwrap().trace.expect("the trace");
    assert_eq!(trace.explanations.len(), 8);
    let x = &trace.explanations[0];
    assert_eq!(x.phases, None);
    let story = x.old_story.as_deref().unwrap_or_default();
    assert!(
        story.starts_with("CPU 1: rtlab/1 (pid 12876) woke 7128 us late at cycle 1657."),
        "{story}"
    );
    let caveats = &trace.explanations[1].caveats;
    assert!(
        matches!(&caveats[0], model::explain::Caveat::Said(c) if c.contains("inferred")),
        "{caveats:?}"
    );
}
