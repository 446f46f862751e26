// Resolving RUN specs and listing with filters on one engine. Included twice by `tests.rs`:
// in `mod sqlite` and in `mod postgres`, each defining `fresh()`.

fn id(text: &str) -> RunId {
    RunId::parse(text).unwrap()
}

/// Saves `run` with `label` and `session` under the id `run_id`.
fn save_as(
    store: &mut Store,
    run: &model::measure::MeasureRun,
    label: Option<&str>,
    session: Option<&str>,
    run_id: &str,
) {
    let encoded = crate::digest::Encoded::of(run).unwrap();
    store
        .save_with_ids(&encoded, label, session, [id(run_id)])
        .unwrap();
}

/// Three runs under chosen ids; the newest (by start) is saved first.
fn three() -> Option<TestStore> {
    let mut store = fresh()?;
    let runs = [
        ("abcd00000001", "2026-03-01T09:00:00Z"),
        ("abcd00000002", "2026-01-01T09:00:00Z"),
        ("ffff00000000", "2026-02-01T09:00:00Z"),
    ];
    for (run_id, started) in runs {
        let run = small("box", "6.1.0-rt", started, &[1_000]);
        save_as(&mut store, &run, None, None, run_id);
    }
    Some(store)
}

#[test]
fn a_whole_id_or_a_unique_prefix_resolves() {
    let Some(store) = three() else { return };
    assert_eq!(store.resolve("abcd00000002").unwrap(), id("abcd00000002"));
    assert_eq!(store.resolve("ffff").unwrap(), id("ffff00000000"));
    assert_eq!(store.resolve("abcd00000001").unwrap(), id("abcd00000001"));
    assert_eq!(store.resolve(" FFFF0 ").unwrap(), id("ffff00000000"));
}

#[test]
fn last_is_the_newest_by_start_time() {
    let Some(store) = three() else { return };
    assert_eq!(store.resolve("last").unwrap(), id("abcd00000001"));
    assert_eq!(store.resolve("LAST").unwrap(), id("abcd00000001"));
    let Some(empty) = fresh() else { return };
    let err = empty.resolve("last").unwrap_err();
    assert!(matches!(err, StoreError::Empty { .. }), "{err:?}");
    assert!(err.to_string().contains("rtlab measure"), "{err}");
}

#[test]
fn an_ambiguous_prefix_lists_the_candidates() {
    let Some(store) = three() else { return };
    let err = store.resolve("abcd").unwrap_err();
    match &err {
        StoreError::Ambiguous { prefix, candidates } => {
            assert_eq!(prefix, "abcd");
            assert_eq!(candidates, &[id("abcd00000001"), id("abcd00000002")]);
        }
        other => panic!("{other:?}"),
    }
    let message = err.to_string();
    assert!(message.contains("abcd00000001, abcd00000002"), "{message}");
    assert!(message.contains("rtlab runs"), "{message}");
}

#[test]
fn short_missing_and_malformed_specs_say_what_to_type() {
    let Some(store) = three() else { return };
    let short = store.resolve("ab").unwrap_err();
    assert!(matches!(short, StoreError::TooShort { .. }), "{short:?}");
    assert!(short.to_string().contains("at least 4"), "{short}");
    assert!(matches!(
        store.resolve(""),
        Err(StoreError::TooShort { .. })
    ));
    for missing in ["1234", "abcd00000003", "abcd000000010", "run-1", "lastt"] {
        let err = store.resolve(missing).unwrap_err();
        assert!(
            matches!(err, StoreError::NotFound { .. }),
            "{missing}: {err:?}"
        );
        let message = err.to_string();
        assert!(
            message.contains(missing) && message.contains("rtlab runs"),
            "{message}"
        );
    }
}

#[test]
fn list_is_newest_first_with_ties_in_saving_order() {
    let Some(mut store) = three() else { return };
    // Started at the same time as abcd00000001, but another run (another sample).
    let tie = small("box", "6.1.0-rt", "2026-03-01T09:00:00Z", &[1_001]);
    save_as(&mut store, &tie, None, None, "0000000000ee");
    let ids: Vec<String> = store
        .list(&Filter::default())
        .unwrap()
        .into_iter()
        .map(|s| s.id.to_string())
        .collect();
    assert_eq!(
        ids,
        [
            "0000000000ee",
            "abcd00000001",
            "ffff00000000",
            "abcd00000002"
        ]
    );
    assert_eq!(store.resolve("last").unwrap(), id("0000000000ee"));
    let newest_two = Filter {
        limit: Some(2),
        ..Filter::default()
    };
    assert_eq!(store.list(&newest_two).unwrap().len(), 2);
}

#[test]
fn a_summary_carries_figures_from_the_aggregate() {
    let Some(mut store) = fresh() else { return };
    let run = realistic();
    let saved = store
        .save_measure(&run, Some("RT-#2"), Some("phase-run-1"))
        .unwrap();
    let summary = store.list(&Filter::default()).unwrap().remove(0);
    assert_eq!(summary.id, saved);
    assert_eq!(summary.kind, "measure");
    assert_eq!(summary.started_at, run.started_at);
    assert_eq!(summary.hostname, "rk3588-board");
    assert_eq!(summary.kernel_release, "6.6.30-rt30-arm64");
    assert_eq!(summary.label.as_deref(), Some("RT-#2"));
    assert_eq!(summary.session.as_deref(), Some("phase-run-1"));
    assert_eq!(summary.status, "broke-threshold");
    assert_eq!(summary.cpus, CpuSet::from_cpus([0, 2, 3]));
    assert_eq!(summary.elapsed_ns, run.elapsed_ns);
    assert_eq!(summary.max_ns, run.all.stats.max_ns);
    assert_eq!(summary.p99_ns, run.all.stats.p99_ns);
    assert!(summary.p99_ns.is_some());
    let json = serde_json::to_value(&summary).unwrap();
    assert_eq!(json["id"], saved.as_str());
    assert_eq!(json["cpus"], "0,2-3");

    let empty = small("idle", "6.1", "2026-01-01T00:00:00Z", &[]);
    store.save_measure(&empty, None, None).unwrap();
    let idle = &store
        .list(&Filter {
            host: Some("idle".into()),
            ..Filter::default()
        })
        .unwrap()[0];
    assert_eq!((idle.max_ns, idle.p99_ns), (None, None));
}

/// Runs on two hosts and kernels over three days, with labels and a session.
fn varied() -> Option<TestStore> {
    let mut store = fresh()?;
    let runs = [
        (
            "000000000001",
            "pi",
            "6.6.0-vanilla",
            "2026-01-10T08:00:00Z",
            Some("vanilla"),
            None,
        ),
        (
            "000000000002",
            "pi",
            "6.6.0-rt15",
            "2026-01-11T08:00:00.5Z",
            Some("RT"),
            None,
        ),
        (
            "000000000003",
            "pi",
            "6.6.0-rt15",
            "2026-01-11T20:00:00Z",
            Some("RT-#2"),
            Some("s"),
        ),
        (
            "000000000004",
            "x86",
            "6.12.1-rt1",
            "2026-01-12T08:00:00Z",
            None,
            Some("s"),
        ),
    ];
    for (run_id, host, kernel, started, label, session) in runs {
        let mut run = small(host, kernel, started, &[2_000, 3_000]);
        if run_id == "000000000002" {
            run.status = model::measure::RunStatus::Interrupted;
        }
        save_as(&mut store, &run, label, session, run_id);
    }
    Some(store)
}

fn ids(store: &Store, filter: Filter) -> Vec<String> {
    store
        .list(&filter)
        .unwrap()
        .into_iter()
        .map(|s| s.id.as_str()[9..].to_string())
        .collect()
}

#[test]
fn filters_select_by_host_kernel_label_and_status() {
    let Some(store) = varied() else { return };
    let f = Filter::default;
    assert_eq!(ids(&store, f()), ["004", "003", "002", "001"]);
    let host = Filter {
        host: Some("pi".into()),
        ..f()
    };
    assert_eq!(ids(&store, host), ["003", "002", "001"]);
    assert!(
        ids(
            &store,
            Filter {
                host: Some("p".into()),
                ..f()
            }
        )
        .is_empty()
    );
    let kernel = Filter {
        kernel: Some("-rt".into()),
        ..f()
    };
    assert_eq!(ids(&store, kernel), ["004", "003", "002"]);
    let label = Filter {
        label: Some("rt".into()),
        ..f()
    };
    assert_eq!(ids(&store, label), ["003", "002"]);
    let label = Filter {
        label: Some("#2".into()),
        ..f()
    };
    assert_eq!(ids(&store, label), ["003"]);
    let status = Filter {
        status: Some("interrupted".into()),
        ..f()
    };
    assert_eq!(ids(&store, status), ["002"]);
    let sessions: Vec<_> = store
        .list(&f())
        .unwrap()
        .into_iter()
        .map(|s| s.session)
        .collect();
    assert_eq!(sessions, [Some("s".into()), Some("s".into()), None, None]);
    let session = Filter {
        session: Some("s".into()),
        ..f()
    };
    assert_eq!(ids(&store, session).len(), 2);
    let combined = Filter {
        host: Some("pi".into()),
        kernel: Some("rt".into()),
        status: Some("complete".into()),
        ..f()
    };
    assert_eq!(ids(&store, combined), ["003"]);
}

#[test]
fn dates_filter_by_prefix_of_the_start_time() {
    let Some(store) = varied() else { return };
    let f = Filter::default;
    let day = Filter {
        since: Some("2026-01-11".into()),
        until: Some("2026-01-11".into()),
        ..f()
    };
    assert_eq!(ids(&store, day), ["003", "002"]);
    let since = Filter {
        since: Some("2026-01-11T12".into()),
        ..f()
    };
    assert_eq!(ids(&store, since), ["004", "003"]);
    let until = Filter {
        until: Some("2026-01-11t08:00:00".into()),
        ..f()
    };
    assert_eq!(ids(&store, until), ["002", "001"]);
    let month = Filter {
        since: Some("2026-01".into()),
        until: Some("2026".into()),
        ..f()
    };
    assert_eq!(ids(&store, month).len(), 4);
    let exact = Filter {
        since: Some("2026-01-12T08:00:00Z".into()),
        ..f()
    };
    assert_eq!(ids(&store, exact), ["004"]);
    let none = Filter {
        until: Some("2025-12-31".into()),
        ..f()
    };
    assert!(ids(&store, none).is_empty());
}

#[test]
fn bad_filters_are_refused_with_the_expected_form() {
    let Some(store) = varied() else { return };
    for (since, until) in [
        (Some("yesterday"), None),
        (None, Some("12.01.2026")),
        (Some("2026-01-11T08:00+02:00"), None),
        (Some("26"), None),
    ] {
        let filter = Filter {
            since: since.map(String::from),
            until: until.map(String::from),
            ..Filter::default()
        };
        let err = store.list(&filter).unwrap_err();
        assert!(matches!(err, StoreError::BadFilter { .. }), "{err:?}");
        assert!(err.to_string().contains("2026-01-12T11:52"), "{err}");
    }
    let status = Filter {
        status: Some("done".into()),
        ..Filter::default()
    };
    let err = store.list(&status).unwrap_err().to_string();
    assert!(
        err.contains("'done'") && err.contains("broke-threshold"),
        "{err}"
    );
}

#[test]
fn a_summary_names_the_load_and_whether_it_is_noise() {
    let Some(mut store) = fresh() else { return };
    let loaded = realistic();
    let spec = loaded.load.as_ref().unwrap().spec.clone();
    store.save_measure(&loaded, None, None).unwrap();
    let mut noise = small("box", "6.1.0-rt", "2026-01-01T09:00:00Z", &[1_000]);
    noise.load = None;
    noise.import = realistic().import.map(|mut i| {
        i.quantity = model::imported::Quantity::OsNoise;
        i
    });
    store.save_measure(&noise, None, None).unwrap();
    let mut idle = small("box", "6.1.0-rt", "2025-01-01T09:00:00Z", &[1_000]);
    idle.load = None;
    store.save_measure(&idle, None, None).unwrap();
    let list = store.list(&Filter::default()).unwrap();
    let seen: Vec<(Option<&str>, bool)> = list
        .iter()
        .map(|s| (s.load.as_deref(), s.os_noise))
        .collect();
    assert_eq!(
        seen,
        [(Some(spec.as_str()), false), (None, true), (None, false)]
    );
}

#[test]
fn each_run_is_listed_with_the_gates_verdict_by_its_own_criteria() {
    use model::gate::Outcome;
    let Some(mut store) = fresh() else { return };
    let mut within = small("box", "6.1.0-rt", "2026-01-01T09:00:00Z", &[1_000, 40_000]);
    within.params.budget_ns = Some(model::Nanos::from_us(50));
    let mut over = within.clone();
    over.started_at = "2026-01-02T09:00:00Z".into();
    over.params.budget_ns = Some(model::Nanos::from_us(30));
    let mut unfinished = within.clone();
    unfinished.started_at = "2026-01-03T09:00:00Z".into();
    unfinished.status = model::measure::RunStatus::Running;
    save_as(&mut store, &within, None, None, "aaaa00000001");
    save_as(&mut store, &over, None, None, "aaaa00000002");
    save_as(&mut store, &unfinished, None, None, "aaaa00000003");
    let verdicts = |store: &Store| -> Vec<(String, Outcome)> {
        store
            .list(&Filter::default())
            .unwrap()
            .into_iter()
            .map(|s| (s.id.to_string(), s.verdict))
            .collect()
    };
    let want = vec![
        ("aaaa00000003".to_string(), Outcome::CannotJudge),
        ("aaaa00000002".to_string(), Outcome::Fail),
        ("aaaa00000001".to_string(), Outcome::Pass),
    ];
    assert_eq!(verdicts(&store), want);
    for run in [&within, &over, &unfinished] {
        assert_eq!(
            want.iter().filter(|w| w.1 == model::gate::judge(run, None).outcome()).count(),
            1,
            "the stored verdicts are the gate's"
        );
    }
    // Runs saved before the column (NULL) are judged when read, alike.
    crate::testdata::exec(&store, "UPDATE runs SET verdict = NULL", &[]);
    assert_eq!(verdicts(&store), want);
    // A value no rtlab writes is named as corrupt, not read as a pass.
    crate::testdata::exec(&store, "UPDATE runs SET verdict = 'PASSED'", &[]);
    let err = store.list(&Filter::default()).unwrap_err();
    assert!(err.to_string().contains("verdict"), "{err}");
}
