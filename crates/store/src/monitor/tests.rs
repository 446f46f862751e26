//! The monitor's history on both engines: intervals saved, merged and read by time, incidents
//! replaced as their burst grows, pruning by age.

use model::monitor::{BUCKET_BOUNDS_NS, Incident, Interval, IntervalCpu};

use super::merge_intervals;

const MIN5: u64 = 300_000_000_000;

fn interval(host: &str, k: i64, max: u64, samples: u64) -> Interval {
    let mut buckets = vec![0; BUCKET_BOUNDS_NS.len() + 1];
    buckets[3] = samples;
    Interval {
        host: host.into(),
        start_ns: k * MIN5 as i64,
        length_ns: MIN5,
        measured_ns: MIN5 / 2,
        engine: "user".into(),
        cpus: model::CpuSet::parse_list("0-1").unwrap(),
        kernel_release: "6.12.0-rt".into(),
        budget_ns: Some(50_000),
        samples,
        max_ns: Some(max),
        p99_ns: Some(max / 2),
        sum_ns: samples * 7_000,
        breaches: u64::from(max > 50_000),
        buckets,
        per_cpu: vec![IntervalCpu {
            cpu: 1,
            samples,
            max_ns: Some(max),
            breaches: u64::from(max > 50_000),
        }],
        ..Interval::default()
    }
}

fn incident(host: &str, start: i64, breaches: u64) -> Incident {
    Incident {
        id: model::monitor::incident_id(host, start),
        host: host.into(),
        start_ns: start,
        end_ns: start + 5,
        cpu: 1,
        worst_ns: 90_000,
        breaches,
        budget_ns: 50_000,
        engine: "user".into(),
        kernel_release: "6.12.0-rt".into(),
        cause: "higher-priority task: hog (pid 5, real-time priority 90)".into(),
        run_id: Some("abcdefabcdef".into()),
        run_bytes: Some(4096),
    }
}

#[test]
fn two_parts_of_one_interval_merge_exactly_where_they_can() {
    let a = interval("h", 1, 30_000, 1000);
    let mut b = interval("h", 1, 70_000, 500);
    b.per_cpu[0].cpu = 0;
    let m = merge_intervals(a.clone(), &b);
    assert_eq!(m.samples, 1500);
    assert_eq!(m.measured_ns, MIN5, "two halves fill it, never more");
    assert_eq!(m.max_ns, Some(70_000));
    assert_eq!(
        m.p99_ns,
        Some(35_000),
        "the larger part's percentile, an upper bound"
    );
    assert_eq!(m.breaches, 1);
    assert_eq!(m.buckets[3], 1500);
    assert_eq!(m.per_cpu.iter().map(|c| c.cpu).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(m.sum_ns, a.sum_ns + b.sum_ns);
    m.check().unwrap();
}

mod sqlite {
    fn fresh() -> Option<crate::testdata::TestStore> {
        crate::testdata::TestStore::sqlite()
    }
    include!("engine_tests.rs");
}

mod postgres {
    fn fresh() -> Option<crate::testdata::TestStore> {
        crate::testdata::TestStore::postgres()
    }
    include!("engine_tests.rs");
}
