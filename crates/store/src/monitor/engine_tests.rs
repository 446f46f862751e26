// The monitor's history on one engine; included by `tests.rs` in `mod sqlite` and `mod
// postgres`, each defining `fresh()`.

use super::{MIN5, incident, interval};

#[test]
fn intervals_read_back_by_host_and_time_and_a_restart_merges_into_its_interval() {
    let Some(mut store) = fresh() else { return };
    for k in 0..5 {
        store.save_interval(&interval("a", k, 10_000 + k as u64, 100)).unwrap();
    }
    store.save_interval(&interval("b", 2, 99_000, 7)).unwrap();
    let got = store.intervals("a", MIN5 as i64, 4 * MIN5 as i64).unwrap();
    assert_eq!(
        got.iter().map(|i| i.start_ns / MIN5 as i64).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert_eq!(got[0], interval("a", 1, 10_001, 100));
    // The monitor restarted within interval 2: its second part merges into the first.
    store.save_interval(&interval("a", 2, 60_000, 50)).unwrap();
    let two = store.intervals("a", 2 * MIN5 as i64, 3 * MIN5 as i64).unwrap();
    assert_eq!(two.len(), 1);
    assert_eq!((two[0].samples, two[0].max_ns, two[0].measured_ns), (150, Some(60_000), MIN5));
    assert_eq!(
        store.monitored_hosts().unwrap(),
        [("a".to_string(), 4 * MIN5 as i64), ("b".to_string(), 2 * MIN5 as i64)]
    );
}

#[test]
fn an_incident_is_replaced_as_its_burst_grows_and_listed_newest_first() {
    let Some(mut store) = fresh() else { return };
    store.save_incident(&incident("a", 100, 1)).unwrap();
    store.save_incident(&incident("a", 100, 9)).unwrap();
    store.save_incident(&incident("a", 300, 1)).unwrap();
    store.save_incident(&incident("b", 200, 1)).unwrap();
    let a = store.incidents(Some("a"), 0, i64::MAX, 10).unwrap();
    assert_eq!(a.iter().map(|x| (x.start_ns, x.breaches)).collect::<Vec<_>>(), [(300, 1), (100, 9)]);
    assert_eq!(a[1], incident("a", 100, 9));
    let all = store.incidents(None, 0, i64::MAX, 2).unwrap();
    assert_eq!(all.iter().map(|x| x.start_ns).collect::<Vec<_>>(), [300, 200]);
}

#[test]
fn pruning_removes_what_began_before_the_cut_and_names_the_runs_it_kept() {
    let Some(mut store) = fresh() else { return };
    for k in 0..4 {
        store.save_interval(&interval("a", k, 1_000, 1)).unwrap();
    }
    store.save_interval(&interval("b", 0, 1_000, 1)).unwrap();
    store.save_incident(&incident("a", 10, 1)).unwrap();
    store.save_incident(&incident("a", 3 * MIN5 as i64, 1)).unwrap();
    let (intervals, incidents, runs) = store.prune_history("a", 2 * MIN5 as i64).unwrap();
    assert_eq!((intervals, incidents), (2, 1));
    assert_eq!(runs, ["abcdefabcdef"]);
    assert_eq!(store.intervals("a", 0, i64::MAX).unwrap().len(), 2);
    assert_eq!(store.intervals("b", 0, i64::MAX).unwrap().len(), 1, "another host's stays");
    assert_eq!(store.incidents(Some("a"), 0, i64::MAX, 10).unwrap().len(), 1);
}

#[test]
fn a_damaged_interval_is_named_not_read_as_figures() {
    let Some(mut store) = fresh() else { return };
    store.save_interval(&interval("a", 0, 1_000, 1)).unwrap();
    crate::testdata::exec(&store, "UPDATE monitor_intervals SET interval_json = '{\"host\": 1}'", &[]);
    let e = store.intervals("a", 0, i64::MAX).unwrap_err().to_string();
    assert!(e.contains("an interval is damaged"), "{e}");
}

#[test]
fn a_pushed_history_replaces_what_it_names_and_the_same_push_twice_changes_nothing() {
    let Some(mut store) = fresh() else { return };
    let doc = model::monitor::HistoryDoc::new(
        "a",
        vec![interval("a", 0, 1_000, 10), interval("a", 1, 70_000, 20)],
        vec![incident("a", MIN5 as i64 + 5, 1)],
    );
    assert_eq!(store.put_history(&doc).unwrap(), (2, 1));
    assert_eq!(store.put_history(&doc).unwrap(), (0, 0), "the same push again");
    // The board merged a restart's part into interval 1 and pushed it again: replaced, not
    // added to (a push is the board's whole interval).
    let again = model::monitor::HistoryDoc::new(
        "a",
        vec![interval("a", 1, 80_000, 30)],
        vec![incident("a", MIN5 as i64 + 5, 4)],
    );
    assert_eq!(store.put_history(&again).unwrap(), (1, 1));
    let got = store.intervals("a", 0, i64::MAX).unwrap();
    assert_eq!(got, [interval("a", 0, 1_000, 10), interval("a", 1, 80_000, 30)]);
    assert_eq!(store.incidents(Some("a"), 0, i64::MAX, 9).unwrap()[0].breaches, 4);
}

#[test]
fn the_long_term_view_reads_the_columns_as_the_documents_say() {
    let Some(mut store) = fresh() else { return };
    let mut k2 = interval("a", 2, 90_000, 40);
    k2.kernel_release = "6.12.9-rt".into();
    k2.budget_ns = None;
    for i in [interval("a", 0, 1_000, 10), interval("a", 1, 70_000, 20), k2.clone()] {
        store.save_interval(&i).unwrap();
    }
    store.save_interval(&interval("b", 1, 5, 1)).unwrap();
    let points = store.history_points("a", 0, i64::MAX).unwrap();
    let docs = store.intervals("a", 0, i64::MAX).unwrap();
    assert_eq!(points.len(), 3);
    for (p, d) in points.iter().zip(&docs) {
        assert_eq!(
            (p.start_ns, p.length_ns, p.max_ns, p.samples, p.breaches),
            (d.start_ns, d.length_ns, d.max_ns, d.samples, d.breaches)
        );
        assert_eq!(
            (&p.kernel_release, &p.engine, &p.cpus, p.budget_ns),
            (&d.kernel_release, &d.engine, &d.cpus.to_string(), d.budget_ns)
        );
    }
    assert_eq!(store.history_points("a", MIN5 as i64, 2 * MIN5 as i64).unwrap().len(), 1);
    store.save_incident(&incident("a", MIN5 as i64 + 1, 3)).unwrap();
    store.save_incident(&incident("b", 0, 3)).unwrap();
    let overview = store.monitor_overview(MIN5 as i64).unwrap();
    assert_eq!(
        overview,
        [
            model::monitor::MonitorHost {
                host: "a".into(),
                last_ns: 2 * MIN5 as i64,
                intervals: 2,
                worst_ns: Some(90_000),
                breaches: 2,
                incidents: 1,
            },
            model::monitor::MonitorHost {
                host: "b".into(),
                last_ns: MIN5 as i64,
                intervals: 1,
                worst_ns: Some(5),
                breaches: 0,
                incidents: 0,
            },
        ]
    );
}

/// The fleet's overview, read from day summaries and the first day's points, against the
/// same figures added up from the intervals themselves, for starts on, around and between day
/// boundaries; after saves, merges, pushes that replace, and pruning by age.
#[test]
fn the_fleet_overview_of_any_range_is_what_the_intervals_add_up_to() {
    let Some(mut store) = fresh() else { return };
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    // About 3.5 days of 5-minute slots, some of them filled, for three hosts.
    let mut pushed = Vec::new();
    for _ in 0..150 {
        let host = ["a", "b", "c"][next(3) as usize];
        let mut i = interval(host, next(1_000) as i64 + 200, 1_000 + next(90_000), 1 + next(50));
        if next(10) == 0 {
            (i.samples, i.max_ns, i.breaches, i.buckets[3]) = (0, None, 0, 0);
        }
        if host == "c" {
            pushed.push(i);
        } else {
            store.save_interval(&i).unwrap();
        }
    }
    store
        .put_history(&model::monitor::HistoryDoc::new("c", pushed.clone(), vec![]))
        .unwrap();
    // Some pushed again with other figures: replaced.
    let again: Vec<_> = pushed
        .iter()
        .step_by(3)
        .map(|i| interval("c", i.start_ns / MIN5 as i64, 99_999, 7))
        .collect();
    store
        .put_history(&model::monitor::HistoryDoc::new("c", again, vec![]))
        .unwrap();
    let day = crate::monitor::compact::DAY_NS;
    store.prune_history("a", day + 12_345 * MIN5 as i64 / 100).unwrap();
    let mut sinces = vec![0, i64::MIN, 10 * day];
    for d in 0..6 {
        sinces.extend([d * day - 1, d * day, d * day + 1, d * day + MIN5 as i64 * 7]);
    }
    for _ in 0..20 {
        sinces.push(next(5 * day as u64) as i64);
    }
    for since in sinces {
        let mut want = Vec::new();
        for host in ["a", "b", "c"] {
            let docs = store.intervals(host, since, i64::MAX).unwrap();
            if docs.is_empty() {
                continue;
            }
            want.push(model::monitor::MonitorHost {
                host: host.into(),
                last_ns: docs.iter().map(|i| i.start_ns).max().unwrap(),
                intervals: docs.len() as u64,
                worst_ns: docs.iter().filter_map(|i| i.max_ns).max(),
                breaches: docs.iter().map(|i| i.breaches).sum(),
                incidents: 0,
            });
        }
        assert_eq!(store.monitor_overview(since).unwrap(), want, "since {since}");
    }
    let hosts = store.monitored_hosts().unwrap();
    assert_eq!(hosts.len(), 3);
    for (host, last) in hosts {
        let docs = store.intervals(&host, i64::MIN, i64::MAX).unwrap();
        assert_eq!(Some(last), docs.iter().map(|i| i.start_ns).max(), "{host}");
        let points = store.history_points(&host, i64::MIN, i64::MAX).unwrap();
        assert_eq!(
            points.iter().map(|p| (p.start_ns, p.max_ns, p.samples)).collect::<Vec<_>>(),
            docs.iter().map(|i| (i.start_ns, i.max_ns, i.samples)).collect::<Vec<_>>(),
            "{host}"
        );
    }
}

/// A server drops the intervals' documents after a while and keeps what the long-term views
/// read: the points, the days, the overview.
#[test]
fn pruning_the_documents_keeps_the_long_term_figures() {
    let Some(mut store) = fresh() else { return };
    for k in 0..6 {
        store.save_interval(&interval("a", k, 1_000 * (k as u64 + 1), 5)).unwrap();
        store.save_interval(&interval("b", k, 7, 5)).unwrap();
    }
    let before = (
        store.history_points("a", 0, i64::MAX).unwrap(),
        store.monitor_overview(0).unwrap(),
    );
    assert_eq!(store.prune_detail(Some("a"), 2 * MIN5 as i64).unwrap(), 2);
    assert_eq!(store.prune_detail(None, 4 * MIN5 as i64).unwrap(), 6);
    assert_eq!(store.intervals("a", 0, i64::MAX).unwrap().len(), 2);
    assert_eq!(store.intervals("b", 0, i64::MAX).unwrap().len(), 2);
    let after = (
        store.history_points("a", 0, i64::MAX).unwrap(),
        store.monitor_overview(0).unwrap(),
    );
    assert_eq!(before, after);
    assert_eq!(after.0.len(), 6);
    assert!(store.history_points("nobody", 0, i64::MAX).unwrap().is_empty());
}
