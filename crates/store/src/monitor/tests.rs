//! The monitor's history on both engines: intervals saved, merged and read by time, incidents
//! replaced as their burst grows, pruning by age.

use model::monitor::{BUCKET_BOUNDS_NS, Incident, Interval, IntervalCpu};

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
