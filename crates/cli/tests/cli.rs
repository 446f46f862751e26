//! The command line, end to end, with deterministic inputs: a captured kernel tree (`--root`)
//! and scripted latencies (`--fake-clock`), so statistics, overruns and exit codes are exact.
//! Live measurements on this machine are in `live.rs`.

mod common;

use std::path::PathBuf;

use assert_cmd::Command;
use model::measure::{MeasureRun, RunStatus};
use predicates::prelude::*;

fn fixture() -> PathBuf {
    testkit::fixture_root("vm-x86_64-2cpu").base().to_path_buf()
}

/// `rtlab` on the captured 2-CPU tree.
fn rtlab() -> Command {
    let mut cmd = common::rtlab_checked();
    cmd.arg("--root").arg(fixture());
    cmd.env_remove("NO_COLOR");
    cmd
}

fn fake_json(args: &[&str]) -> (MeasureRun, std::process::Output) {
    let out = rtlab()
        .args(["measure", "--quiet", "--format", "json"])
        .args(args)
        .output()
        .unwrap();
    let run = MeasureRun::from_json(&String::from_utf8_lossy(&out.stdout))
        .unwrap_or_else(|e| panic!("{e}\nstderr: {}", String::from_utf8_lossy(&out.stderr)));
    (run, out)
}

#[test]
fn statistics_from_a_scripted_clock_are_exact() {
    let (run, out) = fake_json(&["--fake-clock", "5us,7us,900us", "--cycles", "300"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(run.status, RunStatus::Complete);
    assert_eq!(run.params.clock, "fake");
    assert_eq!(run.cpus.len(), 2);
    for cpu in &run.cpus {
        let s = &cpu.stats;
        assert_eq!(s.count, 300);
        assert_eq!(s.min_ns, Some(5_000));
        assert_eq!(s.max_ns, Some(900_000));
        assert_eq!(s.mean_ns, Some(304_000.0));
        assert_eq!(s.overruns, 0);
        // 7000 ns lies in the 4 ns bucket [7000, 7003]: percentiles report a bucket's highest
        // value, so they never understate.
        assert_eq!(s.p50_ns, Some(7_003));
        // 900_000 lies in a 512 ns bucket [899_584, 900_095]; clamped to the exact maximum.
        assert_eq!(s.p99_ns, Some(900_000));
        assert_eq!(cpu.regions.iter().map(|r| r.count).sum::<u64>(), 300);
        assert_eq!(cpu.series.count.iter().sum::<u64>(), 300);
        assert_eq!(cpu.spikes.len(), 32);
        assert!(cpu.spikes.iter().all(|s| s.latency_ns == 900_000));
    }
    assert_eq!(run.all.stats.count, 600);
    assert!(run.warnings.iter().any(|w| w.code == "fake-clock"));
}

#[test]
fn late_wake_ups_become_overruns() {
    // 1 ms period, every other wake-up 3.5 ms late: each late one misses three periods. As
    // cyclictest's -l, --cycles counts wake-ups: 100 samples, the missed periods on top.
    let (run, _) = fake_json(&[
        "--fake-clock",
        "10us,3500us",
        "--cycles",
        "100",
        "--cpus",
        "0",
    ]);
    let s = &run.cpus[0].stats;
    assert_eq!(s.count, 100, "every wake-up asked for is a sample");
    assert_eq!(
        s.overruns, 150,
        "fifty late wake-ups, three missed periods each"
    );
    assert_eq!(s.max_ns, Some(3_500_000));
    // A run of a duration counts every period as a sample or an overrun.
    let (run, _) = fake_json(&[
        "--fake-clock",
        "10us,3500us",
        "--duration",
        "100ms",
        "--cpus",
        "0",
    ]);
    let s = &run.cpus[0].stats;
    assert_eq!(
        s.count + s.overruns,
        100,
        "every period is a sample or an overrun"
    );
    assert_eq!(s.count, 40);
}

/// Issue #27: one gate. `measure --budget`, its JUnit export and its plain exports give one
/// verdict on the same run, missed periods included, and the run records its budget.
#[test]
fn measure_and_its_exports_give_one_verdict_on_a_run_with_overruns() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    let out = out.to_str().unwrap();
    let measure = |budget: &str, code: i32| {
        rtlab()
            .args(["measure", "--quiet", "--cpus", "0", "--interval", "1ms"])
            .args(["--cycles", "10", "--fake-clock", "5us,1500us,9us"])
            .args(["--budget", budget, "-o", out])
            .assert()
            .code(code)
    };
    let export = |format: &str, budget: &str, code: i32| {
        rtlab()
            .args(["export", out, "--format", format, "--budget", budget])
            .assert()
            .code(code)
    };
    // Late by 1.5 ms on a 1 ms period: each late wake-up (three of the ten) misses a period,
    // within a 2 ms budget.
    measure("2ms", 0);
    let run = MeasureRun::from_json(&std::fs::read_to_string(out).unwrap()).unwrap();
    assert_eq!(run.params.budget_ns, Some(model::Nanos::from_ms(2)));
    assert_eq!(run.cpus[0].stats.overruns, 3);
    for format in ["junit", "json", "csv", "openmetrics", "lava"] {
        export(format, "2ms", 0);
        export(format, "1ms", 1).stderr(predicate::str::contains(
            "CPU 0: max latency 1500.0us exceeds --budget 1ms",
        ));
    }
    measure("1ms", 1).stderr(predicate::str::contains("max latency 1500.0us exceeds"));
    // Without --budget every export holds the run to the budget it was measured with (1ms,
    // measured last): each fails alike (issue #43; JUnit used to hold it to 100us).
    for format in ["csv", "junit", "lava"] {
        rtlab()
            .args(["export", out, "--format", format])
            .assert()
            .code(1)
            .stderr(predicate::str::contains("exceeds --budget 1ms"));
    }
}

#[test]
fn fail_above_exits_1_and_names_the_cpu() {
    rtlab()
        .args([
            "measure",
            "--fake-clock",
            "5us;1=5us,250us",
            "--cycles",
            "50",
            "--budget",
            "100us",
        ])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "CPU 1: max latency 250.0us exceeds --budget 100us",
        ))
        .stderr(predicate::str::contains("CPU 0:").not());
    rtlab()
        .args([
            "measure",
            "--quiet",
            "--fake-clock",
            "5us",
            "--cycles",
            "50",
            "--budget",
            "100us",
        ])
        .assert()
        .code(0);
}

#[test]
fn break_stops_at_the_first_sample_over_the_threshold() {
    let (run, out) = fake_json(&[
        "--fake-clock",
        "5us;1=5us,5us,500us",
        "--cycles",
        "1000",
        "--break",
        "100us",
        "--cpus",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(run.status, RunStatus::BrokeThreshold);
    let event = run.break_event.expect("a break event");
    assert_eq!((event.cpu, event.latency_ns, event.cycle), (1, 500_000, 2));
    assert!(!event.trace_frozen, "a fake clock never touches tracefs");
    assert_eq!(
        run.cpus[0].stats.count, 3,
        "the breaching sample is the last one"
    );
}

#[test]
fn json_file_round_trips_and_refuses_unknown_fields() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    rtlab()
        .args([
            "measure",
            "--quiet",
            "--fake-clock",
            "3us,4us",
            "--cycles",
            "20",
            "--output",
        ])
        .arg(&path)
        .assert()
        .code(0);
    let text = std::fs::read_to_string(&path).unwrap();
    let run = MeasureRun::from_json(&text).unwrap();
    assert_eq!(run.schema, "rtlab.measure/1");
    assert_eq!(
        serde_json::to_string(&run).unwrap(),
        serde_json::to_string(&MeasureRun::from_json(&run.to_json()).unwrap()).unwrap()
    );
    let tampered = text.replacen("\"status\"", "\"surprise\": 1, \"status\"", 1);
    assert!(MeasureRun::from_json(&tampered).is_err());
    let other = text.replacen("rtlab.measure/1", "rtlab.measure/9", 1);
    assert!(
        MeasureRun::from_json(&other)
            .unwrap_err()
            .to_string()
            .contains("rtlab.measure/9")
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "no temporary files left: {leftovers:?}");
}

#[test]
fn cyclictest_formats() {
    rtlab()
        .args(["measure", "--fake-clock", "12us,13us", "--cycles", "100", "--format", "cyclictest", "-q"])
        .assert()
        .code(0)
        .stdout(predicate::str::is_match(r"(?m)^T: 0 \(\s*\d+\) P:95 I:1000 C:\s+100 Min:\s+12 Act:\s+13 Avg:\s+12 Max:\s+13$").unwrap());
    rtlab()
        .args([
            "measure",
            "--fake-clock",
            "12us,13us",
            "--cycles",
            "100",
            "--format",
            "cyclictest",
            "--histogram",
            "20us",
            "-q",
        ])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "# Histogram\n000000 000000\t000000\n",
        ))
        .stdout(predicate::str::contains("000012 000050\t000050\n"))
        .stdout(predicate::str::contains("# Max Latencies: 00013 00013"));
}

#[test]
fn table_is_the_default_output() {
    rtlab()
        .args(["measure", "--fake-clock", "2us", "--cycles", "10", "-q"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("p99.999"))
        .stdout(predicate::str::is_match(r"(?m)^\s*all\s").unwrap());
}

/// Bad input: one line naming the value and the fix, exit 2, nothing written.
#[test]
fn bad_input_is_one_actionable_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let cases: &[(&[&str], &str)] = &[
        (&["--interval", "1.5"], "'1.5' has no unit"),
        (&["--interval", "10us"], "below the 20us minimum"),
        (&["--duration", "1.5"], "'1.5' has no unit"),
        (&["--duration", "1h30"], "unknown unit"),
        (&["--cpus", "7"], "CPU 7 does not exist"),
        (&["--cpus", "0-1,x"], "'x' in CPU list"),
        (&["--cpus", "!0-1"], "selects no CPU"),
        (&["--priority", "99"], "--allow-prio-99"),
        (
            &["--priority", "0"],
            "--priority 0 is out of range; give 1 to 99",
        ),
        (
            &["--policy", "other", "--priority", "10"],
            "fifo and rr only",
        ),
        (&["--policy", "deadline"], "--dl-runtime"),
        (&["--cycles", "0"], "--cycles 0"),
        (
            &["--histogram", "100us", "--format", "json"],
            "--format cyclictest",
        ),
        (&["--fake-clock", "5"], "no unit"),
    ];
    for (args, expected) in cases {
        let mut cmd = rtlab();
        cmd.args(["measure", "--output"]).arg(&json).args(*args);
        if !args.contains(&"--fake-clock") {
            cmd.args(["--fake-clock", "1us"]);
        }
        if !args.iter().any(|a| *a == "--cycles" || *a == "--duration") {
            cmd.args(["--cycles", "5"]);
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(
            stderr.lines().count(),
            1,
            "{args:?}: one line, got {stderr}"
        );
        assert!(stderr.starts_with("rtlab: error: "), "{args:?}: {stderr}");
        assert!(
            stderr.contains(expected),
            "{args:?}: expected {expected:?} in {stderr}"
        );
        assert!(!json.exists(), "{args:?} left a file behind");
    }
    // A result file in a missing directory is refused before anything runs.
    rtlab()
        .args([
            "measure",
            "--fake-clock",
            "1us",
            "--cycles",
            "5",
            "--output",
            "/nonexistent/dir/run.json",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("/nonexistent/dir"));
}

#[test]
fn help_reads_like_a_man_page_and_docs_generate() {
    rtlab()
        .args(["measure", "--help"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("EXAMPLES:"))
        .stdout(predicate::str::contains("--dma-latency"));
    rtlab()
        .args(["completions", "bash"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("rtlab"));
    let dir = tempfile::tempdir().unwrap();
    rtlab()
        .args(["man", "--out"])
        .arg(dir.path())
        .assert()
        .code(0);
    let page = std::fs::read_to_string(dir.path().join("rtlab-measure.1")).unwrap();
    assert!(page.contains("interval"), "{page}");
    // Issue 13: every command and subcommand documents its exit statuses, in its help and
    // its man page.
    let pages: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    for sub in [
        "tune-apply",
        "tune-revert",
        "explain-irqs",
        "trace-record",
        "kconfig-diff",
    ] {
        assert!(
            pages.iter().any(|p| p.ends_with(format!("rtlab-{sub}.1"))),
            "no page for {sub}"
        );
    }
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        assert!(text.contains("EXIT STATUS"), "{}", page.display());
    }
    for args in [
        &["measure"][..],
        &["show"],
        &["export"],
        &["compare"],
        &["import"],
        &["report"],
        &["tune", "apply"],
        &["tune", "status"],
        &["explain", "sched"],
        &["trace", "record"],
        &["audit", "capture"],
    ] {
        rtlab()
            .args(args)
            .arg("--help")
            .assert()
            .code(0)
            .stdout(predicate::str::contains("EXIT STATUS"));
    }
}
