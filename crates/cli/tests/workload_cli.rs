//! `rtlab measure --workload`: response times and deadline misses split by cause — scripted
//! (exact figures on the fake clock) and live (a runtime over a tight deadline must miss every
//! job by its execution); bad combinations refused; the run feeding `sched check
//! --jitter-from` with its wake-up latency, not its response times.

mod common;

use serde_json::Value;

fn measure(args: &[&str]) -> (i32, Value, String) {
    let out = common::rtlab()
        .arg("measure")
        .args(args)
        .args(["--no-store", "-q", "--format", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let code = out.status.code().unwrap_or(-1);
    let doc = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (code, doc, stderr)
}

#[test]
fn scripted_jobs_give_exact_response_times_and_late_starts() {
    // 1 ms period, 200 us of work, 1 ms deadline; wake-ups 5, 9 and 900 us late in turn. On
    // the scripted clock a job takes exactly its calibration, so the 900 us wake-up ends at
    // 1.1 ms: a late start, and its next period is an overrun.
    let (code, doc, err) = measure(&[
        "--cpus",
        "0",
        "--cycles",
        "9",
        "--fake-clock",
        "5us,9us,900us",
        "--workload",
        "200us",
        "--deadline",
        "1ms",
    ]);
    assert_eq!(code, 1, "a missed deadline fails the run: {err}");
    assert!(
        err.contains("CPU 0: 2 of 7 jobs missed the deadline 1ms (2 late start"),
        "{err}"
    );
    let w = &doc["workload"];
    assert_eq!(w["runtime_ns"], 200_000);
    assert_eq!(w["deadline_ns"], 1_000_000);
    let c = &w["cpus"][0];
    assert_eq!(c["jobs"], 7);
    assert_eq!(
        (c["misses"].as_u64(), c["late_start"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(c["max_latency_ns"], 900_000);
    assert_eq!(c["nominal_ns"], 200_000);
    let stats = &doc["cpus"][0]["stats"];
    assert_eq!(stats["min_ns"], 205_000);
    assert_eq!(stats["max_ns"], 1_100_000);
    assert_eq!(stats["overruns"], 2);
    // Within the deadline: exit 0.
    let (code, doc, err) = measure(&[
        "--cpus",
        "0",
        "--cycles",
        "9",
        "--fake-clock",
        "5us,9us",
        "--workload",
        "200us",
        "--deadline",
        "1ms",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(doc["workload"]["cpus"][0]["misses"], 0);
}

#[test]
fn bad_workloads_are_refused_before_measuring() {
    for (args, expect) in [
        (
            vec!["--workload", "2ms", "--interval", "1ms"],
            "--workload 2ms is not shorter than --interval 1ms",
        ),
        (
            vec!["--workload", "100us", "--deadline", "2ms"],
            "--deadline 2ms must be above zero and at most --interval 1ms",
        ),
        (vec!["--workload", "500ns"], "shorter than 1us"),
        (vec!["--deadline", "1ms"], "--workload"),
    ] {
        let mut all = vec!["--cpus", "0", "--cycles", "5", "--fake-clock", "5us"];
        all.extend(args.iter());
        let (code, _, err) = measure(&all);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
}

#[test]
fn a_runtime_over_a_tight_deadline_misses_every_job_by_its_execution() {
    if !common::is_root() {
        common::live_skip("measuring at SCHED_FIFO needs root");
        return;
    }
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("wl.json");
    let (code, doc, err) = measure(&[
        "--cpus",
        "0",
        "--interval",
        "10ms",
        "--duration",
        "1s",
        "--workload",
        "2ms",
        "--deadline",
        "1ms",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    let c = &doc["workload"]["cpus"][0];
    let jobs = c["jobs"].as_u64().unwrap();
    assert!(jobs >= 50, "{c}");
    assert_eq!(c["misses"].as_u64(), Some(jobs), "{c}");
    assert_eq!(c["long_execution"].as_u64(), Some(jobs), "{c}");
    // The calibrated job takes about its runtime; every response time is at least it.
    let nominal = c["nominal_ns"].as_u64().unwrap();
    assert!((1_600_000..2_600_000).contains(&nominal), "{c}");
    assert!(
        doc["cpus"][0]["stats"]["min_ns"].as_u64().unwrap()
            >= c["min_execution_ns"].as_u64().unwrap()
    );
    // The run's wake-up latency, not its response time, is the jitter `sched check` takes.
    let set = dir.path().join("t.toml");
    std::fs::write(
        &set,
        "[[task]]\nname = \"a\"\nperiod = \"10ms\"\nwcet = \"1ms\"\ncpu = 0\n",
    )
    .unwrap();
    let out = common::rtlab()
        .args(["sched", "check", "--format", "json", "--jitter-from"])
        .arg(&file)
        .arg(&set)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["tasks"][0]["jitter"], c["max_latency_ns"]);
}
