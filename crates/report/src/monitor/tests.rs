//! The incident's cause line from explanations whose cause is known (the explain corpus's hog
//! and interrupt, a timerlat stop behind a blocking thread), the lines and CSV of a history,
//! and the metrics' families.

use model::explain::{Explanation, TraceCapture};
use model::measure::BreakEvent;
use model::monitor::{BUCKET_BOUNDS_NS, Incident, IntervalBuilder, Totals};
use model::timerlat::{Context, TimerlatInfo, TimerlatStop};

use super::*;
use crate::testdata::two_cpus_broken;

fn told() -> Vec<Explanation> {
    let path = format!(
        "{}/../../fixtures/explanations/told.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let told: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    told.as_array()
        .unwrap()
        .iter()
        .map(|c| serde_json::from_value(c["explanation"].clone()).unwrap())
        .collect()
}

fn caught(explanations: Vec<Explanation>, cpu: u32) -> MeasureRun {
    let mut run = two_cpus_broken();
    run.break_event = Some(BreakEvent {
        cpu,
        latency_ns: 3_100_000,
        cycle: 7,
        trace_frozen: true,
        tracefs: None,
    });
    run.trace = Some(TraceCapture {
        instance: "rtlab-1".into(),
        clock: "mono".into(),
        buffer_kb: 1024,
        events: vec![],
        missing: vec![],
        frozen_by: "break".into(),
        window: String::new(),
        lost_events: 0,
        explanations,
        notes: vec![],
    });
    run
}

#[test]
fn the_cause_names_the_task_that_held_the_cpu_in_the_breach() {
    let all = told();
    let hog = all
        .iter()
        .find(|x| {
            x.parts
                .first()
                .is_some_and(|p| format!("{:?}", p.what).contains("29010"))
        })
        .unwrap()
        .clone();
    let mut other = all[0].clone();
    other.cpu = 0;
    // The breach's CPU is 1: its explanation is told, not CPU 0's listed first.
    let line = cause(&caught(vec![other, hog], 1));
    assert!(line.starts_with("higher-priority task (100 %)"), "{line}");
    assert!(line.contains("hog (pid 29010"), "{line}");
}

#[test]
fn each_planted_cause_of_the_corpus_is_the_one_named() {
    for x in told() {
        let kind = crate::story::agent::main_cause(&x);
        let line = cause(&caught(vec![x.clone()], x.cpu));
        assert!(line.starts_with(&kind), "{line} should name {kind}");
    }
}

#[test]
fn without_an_explanation_the_line_says_why() {
    let mut run = caught(vec![], 1);
    run.trace.as_mut().unwrap().notes = vec!["the ring buffer lost the breach's events".into()];
    assert_eq!(
        cause(&run),
        "not explained: the ring buffer lost the breach's events"
    );
    run.trace = None;
    assert_eq!(cause(&run), "not explained: no trace was recorded");
}

#[test]
fn a_timerlat_stop_is_told_by_its_blocking_thread() {
    let mut run = two_cpus_broken();
    // CPU 3 blocked by a SCHED_FIFO cyclictest thread: 124.3 us of its 133.5 us.
    let analysis = crate::timerlat::tests::blocked();
    let mut other = analysis.clone();
    other.cpu = 1;
    other.blocking = None;
    run.timerlat = Some(TimerlatInfo {
        stop: Some(TimerlatStop {
            cpu: 3,
            context: Context::Thread,
            activation: 4211,
            latency_ns: 133_500,
            stack: vec![],
            window: String::new(),
        }),
        analyses: vec![other, analysis],
        period_ns: model::Nanos::MILLISECOND,
        in_instance: true,
        user_threads: false,
        stop_ns: Some(model::Nanos::from_us(100)),
        stack_ns: None,
        trace_clock: "local".into(),
        irq: vec![],
        user: vec![],
        lost_events: 0,
    });
    assert_eq!(cause(&run), "blocking thread cyclictest:8937 (93 %)");
}

fn interval() -> Interval {
    let mut b = IntervalBuilder::new();
    b.add(&two_cpus_broken(), Some(100_000));
    b.incident();
    b.finish(
        "rt-1",
        1_764_464_400_000_000_000,
        300_000_000_000,
        Some(100_000),
    )
}

#[test]
fn an_interval_and_an_incident_read_in_one_line_each() {
    let i = interval();
    let line = interval_line(&i);
    assert!(line.starts_with("2025-11-30T01:00:00Z  max "), "{line}");
    assert!(line.contains(&format!("{} wake-ups", i.samples)), "{line}");
    let x = Incident {
        id: "0123456789ab".into(),
        host: "rt-1".into(),
        start_ns: i.start_ns + 7_000_000_000,
        end_ns: i.start_ns + 8_200_000_000,
        cpu: 2,
        worst_ns: 480_100,
        breaches: 3,
        budget_ns: 100_000,
        cause: "blocking thread hog:812 (96 %)".into(),
        run_id: Some("9f8e7d6c5b4a".into()),
        ..Incident::default()
    };
    assert_eq!(
        incident_line(&x),
        "incident 0123456789ab 2025-11-30T01:00:07Z  CPU 2  480.1 us (budget 100.0 us)  3 late \
         in 1.2 s: blocking thread hog:812 (96 %)  [run 9f8e7d6c5b4a]"
    );
    let csv = incidents_csv(&[x]);
    assert!(
        csv.lines()
            .nth(1)
            .unwrap()
            .ends_with(",3,blocking thread hog:812 (96 %),9f8e7d6c5b4a"),
        "{csv}"
    );
    let h = history_csv(&[i.clone(), i]);
    assert_eq!(h.lines().count(), 3);
    assert!(h.starts_with("host,start,start_ns,"), "{h}");
}

#[test]
fn the_metrics_hold_the_histogram_and_totals_of_every_interval() {
    let i = interval();
    let mut t = Totals::default();
    t.add(&i);
    t.add(&i);
    let text = metrics("rt-1", &t, Some(&i));
    assert!(text.ends_with("# EOF\n"), "{text}");
    assert!(
        text.contains("# TYPE rtlab_monitor_latency_seconds histogram"),
        "{text}"
    );
    let count = format!(
        "rtlab_monitor_latency_seconds_count{{host=\"rt-1\"}} {}",
        2 * i.samples
    );
    assert!(text.contains(&count), "{text}");
    let inf = format!(
        "rtlab_monitor_latency_seconds_bucket{{le=\"+Inf\",host=\"rt-1\"}} {}",
        2 * i.samples
    );
    assert!(text.contains(&inf), "{text}");
    assert_eq!(
        text.matches("rtlab_monitor_latency_seconds_bucket").count(),
        BUCKET_BOUNDS_NS.len() + 1
    );
    assert!(
        text.contains("rtlab_monitor_incidents{host=\"rt-1\"} 2"),
        "{text}"
    );
}
