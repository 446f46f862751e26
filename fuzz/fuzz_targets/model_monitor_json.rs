//! Fuzz target `model_monitor_json`: arbitrary bytes as a monitor history document
//! (`rtlab.monitor/1`: intervals and incidents, as the store keeps them and a server will be
//! sent them). Each interval that passes `Interval::check` is rendered (its line, the CSV, the
//! metrics with the totals), keeps a coverage between 0 and 1, and merges with the next one
//! into an interval that still passes the check; each incident is rendered. The same bytes go
//! through `HistoryDoc::from_json`, the parser `rtlab serve` takes pushed histories with: a
//! document it accepts has only checked rows, renders on the server's pages, and reads back
//! the same from its own JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use model::monitor::{
    HistoryDoc, Incident, Interval, MAX_INTERVAL_CPUS, Totals, merge, plot_points, spans,
};

#[derive(serde::Deserialize)]
struct Doc {
    #[serde(default)]
    intervals: Vec<Interval>,
    #[serde(default)]
    incidents: Vec<Incident>,
}

fuzz_target!(|data: &[u8]| {
    let Some(text) = rtlab_fuzz::strict(data) else {
        return;
    };
    if let Ok(pushed) = HistoryDoc::from_json(text) {
        assert!(pushed.intervals.iter().all(|i| i.check().is_ok()));
        assert!(pushed.incidents.iter().all(|x| x.check().is_ok()));
        assert_eq!(HistoryDoc::from_json(&pushed.to_json()).as_ref(), Ok(&pushed));
        let points: Vec<model::monitor::HistoryPoint> = pushed
            .intervals
            .iter()
            .map(|i| model::monitor::HistoryPoint {
                start_ns: i.start_ns,
                length_ns: i.length_ns,
                max_ns: i.max_ns,
                samples: i.samples,
                breaches: i.breaches,
                kernel_release: i.kernel_release.clone(),
                engine: i.engine.clone(),
                cpus: i.cpus.to_string(),
                budget_ns: i.budget_ns,
            })
            .collect();
        let _ = spans(&points);
        let _ = plot_points(&points, 900);
        let kept = std::collections::HashSet::new();
        let _ = report::html::monitor::host_monitor_page(&report::html::monitor::HostHistory {
            host: "fuzz",
            last: "30d",
            points: &points,
            incidents: &pushed.incidents,
            runs_kept: &kept,
        });
    }
    let Ok(doc) = serde_json::from_str::<Doc>(text) else {
        return;
    };
    let good: Vec<&Interval> = doc.intervals.iter().filter(|i| i.check().is_ok()).collect();
    let mut totals = Totals::default();
    for i in &good {
        let c = i.coverage();
        assert!((0.0..=1.0).contains(&c), "coverage {c}");
        let _ = report::monitor::interval_line(i);
        totals.add(i);
    }
    let _ = report::monitor::history_csv(&doc.intervals);
    let _ = report::monitor::metrics("fuzz", &totals, good.last().copied());
    for pair in good.windows(2) {
        let m = merge(pair[0].clone(), pair[1]);
        let cpus = m.per_cpu.len();
        if cpus <= MAX_INTERVAL_CPUS {
            assert!(m.check().is_ok(), "{:?}", m.check());
        }
        assert!(m.measured_ns <= m.length_ns);
    }
    for x in &doc.incidents {
        let _ = report::monitor::incident_line(x);
    }
    let _ = report::monitor::incidents_csv(&doc.incidents);
});
