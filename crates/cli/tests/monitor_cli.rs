//! `rtlab monitor` for real on this machine (rtlab's own threads: the VM has no timerlat
//! tracer; the lab runs the tracer's engine on PREEMPT_RT): bad settings refused before any
//! work; a history of intervals that holds every wake-up measured and continues across a
//! restart; a burst of breaches kept as one incident; a planted FIFO hog named as the cause of
//! its incident; the OpenMetrics file read by the Prometheus client's own parsers; a signal
//! saving the interval so far and leaving no trace instance behind.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{live_skip, rtlab, serial, wait_for};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `rtlab monitor ARGS` with its store at `db`.
fn monitor(db: &Path, args: &[&str]) -> std::process::Output {
    rtlab()
        .arg("monitor")
        .args(args)
        .arg("--db")
        .arg(db)
        .output()
        .unwrap()
}

#[test]
fn bad_settings_are_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    for (args, says) in [
        (&["--every", "500ms"][..], "--every 500ms is out of range"),
        (&["--duty", "0"], "--duty 0% is out of range"),
        (&["--every", "10s", "--keep", "5s"], "--keep 5s is shorter"),
        (&["--on-incident", "shell,command=x"], "not an action"),
        (
            &["--on-incident", "signal:NOPE:1"],
            "'NOPE' is not a signal",
        ),
        (&["--trace-space", "10K"], "outside 1M to 1T"),
        (&["--cpus", "999"], "999"),
        (&["--burst-gap", "2h"], "--burst-gap 2h is out of range"),
        (&["--metrics", "/proc/rtlab-m.prom"], "/proc"),
    ] {
        let started = Instant::now();
        let out = monitor(&db, args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{args:?}: refused late"
        );
    }
    assert!(!db.exists(), "a refused monitor made no store");
}

/// Every wake-up over a 1 us budget: one burst from the first to the last, so one incident;
/// the history holds every interval and every wake-up, and a second run continues it.
#[test]
fn a_burst_is_one_incident_and_the_history_continues_across_a_restart() {
    if !common::monitor_live() {
        return;
    }
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let metrics = dir.path().join("rtlab.prom");
    let args = [
        "--cpus",
        "0",
        "-D",
        "3s",
        "--every",
        "1m",
        "--budget",
        "1us",
        "--burst-gap",
        "10s",
        "--metrics",
    ];
    let mut printed = 0u64;
    for run in 0..2 {
        let out = monitor(&db, &[&args[..], &[metrics.to_str().unwrap()]].concat());
        let stdout = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(1),
            "run {run}: incidents: {}",
            text(&out.stderr)
        );
        let incidents = stdout
            .lines()
            .filter(|l| l.starts_with("incident "))
            .count();
        assert_eq!(
            incidents, 1,
            "run {run}: one burst, one incident:\n{stdout}"
        );
        printed += stdout
            .lines()
            .filter_map(|l| l.split("  ").find(|f| f.ends_with(" wake-ups")))
            .map(|f| f.trim_end_matches(" wake-ups").parse::<u64>().unwrap())
            .sum::<u64>();
    }
    let history = common::monitor_kept(&db, "history");
    assert_eq!(history["schema"], "rtlab.monitor/1");
    let intervals = history["intervals"].as_array().unwrap();
    // Each run's 3 s lie in one interval, or straddle two.
    assert!(!intervals.is_empty() && intervals.len() <= 4, "{history}");
    let stored: u64 = intervals
        .iter()
        .map(|i| i["samples"].as_u64().unwrap())
        .sum();
    // Two runs in one or two minutes: the second merged into the first's interval, nothing lost.
    assert_eq!(stored, printed, "{history}");
    assert!(stored > 4_000, "about 6 s at 1 ms: {stored}");
    for i in intervals {
        assert_eq!(
            i["breaches"], i["samples"],
            "every wake-up is over 1 us: {i}"
        );
        assert!(i["measured_ns"].as_u64().unwrap() <= i["length_ns"].as_u64().unwrap());
        assert!(i["cost"]["measuring_ns"].as_u64().unwrap() > 0, "{i}");
    }
    incidents_kept_with_their_runs(&db);
    prometheus_reads(&metrics);
}

/// Each run's one incident, grown by its burst, and the breach's run kept with its trace.
fn incidents_kept_with_their_runs(db: &Path) {
    let incidents = common::monitor_kept(db, "incidents");
    let list = incidents["incidents"].as_array().unwrap();
    assert_eq!(list.len(), 2, "{incidents}");
    for x in list {
        assert!(
            x["breaches"].as_u64().unwrap() > 1_000,
            "the burst grew: {x}"
        );
        let run = x["run_id"]
            .as_str()
            .expect("the run with its trace is kept");
        // The run kept is the breach's, with its trace explained.
        let shown = text(
            &rtlab()
                .args(["show", run, "--db"])
                .arg(db)
                .output()
                .unwrap()
                .stdout,
        );
        assert!(shown.contains("broke-threshold"), "{shown}");
        assert!(shown.contains("why (from the kernel trace"), "{shown}");
    }
}

/// The metrics file through the Prometheus client's text parser (the textfile collector's
/// format) and its OpenMetrics parser.
fn prometheus_reads(path: &Path) {
    let script = r#"
import sys
from prometheus_client.parser import text_string_to_metric_families as text
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om
body = open(sys.argv[1]).read()
a = {f.name: f for f in text(body)}
b = {f.name: f for f in om(body)}
h = b["rtlab_monitor_latency_seconds"]
assert h.type == "histogram", h.type
buckets = [s for s in h.samples if s.name.endswith("_bucket")]
assert buckets[-1].labels["le"] == "+Inf"
count = [s for s in h.samples if s.name.endswith("_count")][0].value
assert buckets[-1].value == count > 0
assert all(x.value <= y.value for x, y in zip(buckets, buckets[1:]))
assert b["rtlab_monitor_incidents"].samples[0].value == 1
print(len(a), len(b))
"#;
    // Debian's python3, where apt-get put the client (a pyenv or venv python3 earlier on the
    // PATH does not see it).
    let python = ["/usr/bin/python3", "python3"]
        .into_iter()
        .find(|p| !p.starts_with('/') || Path::new(p).exists())
        .unwrap();
    match Command::new(python).args(["-c", script]).arg(path).output() {
        Ok(out) if out.status.success() => {}
        Ok(out) if text(&out.stderr).contains("No module named 'prometheus_client'") => {
            live_skip("python3-prometheus-client is not installed (apt-get install it)");
        }
        Ok(out) => panic!(
            "the metrics do not parse: {}\n{}",
            text(&out.stderr),
            std::fs::read_to_string(path).unwrap()
        ),
        Err(e) => live_skip(&format!("python3: {e}")),
    }
}

/// A SCHED_FIFO 98 hog running 40 ms bursts on the watched CPU, above the measuring thread's
/// 95: each burst is an incident, and its cause names the hog. The hog ends its own burst (a
/// `timeout` beside it at its priority on its CPU would never run).
#[test]
fn a_planted_fifo_hog_is_named_as_the_cause() {
    if !common::monitor_live() {
        return;
    }
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let cpu = common::last_cpu().unwrap_or_else(|| "0".into());
    let hog = Command::new("sh")
        .args([
            "-c",
            &format!(
                "sleep 1; for i in 1 2; do chrt -f 98 taskset -c {cpu} perl -MTime::HiRes=time -e '$e = time + 0.04; 1 while time < $e'; sleep 1.5; done"
            ),
        ])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let out = monitor(
        &db,
        &[
            "--cpus",
            &cpu,
            "-D",
            "5s",
            "--every",
            "1m",
            "--budget",
            "20ms",
            "--burst-gap",
            "500ms",
        ],
    );
    let mut hog = hog;
    wait_for(&mut hog, Duration::from_secs(10));
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    let incidents: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("incident "))
        .collect();
    assert_eq!(incidents.len(), 2, "two bursts, two incidents:\n{stdout}");
    for line in incidents {
        assert!(line.contains("higher-priority task"), "{line}");
        assert!(
            line.contains("real-time priority 98"),
            "the hog's priority: {line}"
        );
    }
}

/// SIGTERM: the interval so far is saved, exit 130, and no trace instance is left.
#[test]
fn a_signal_saves_the_interval_so_far_and_leaves_no_trace_instance() {
    if !common::monitor_live() {
        return;
    }
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let mut child = rtlab()
        .args([
            "monitor", "--cpus", "0", "--every", "1m", "--budget", "50ms", "--db",
        ])
        .arg(&db)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: kill with a child's pid and a valid signal.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = wait_for(&mut child, Duration::from_secs(20));
    assert_eq!(status.code(), Some(130));
    let history = common::monitor_kept(&db, "history");
    let samples = history["intervals"][0]["samples"].as_u64().unwrap();
    assert!(samples > 1_000, "about 2 s at 1 ms: {history}");
    let left: Vec<String> = std::fs::read_dir("/sys/kernel/tracing/instances")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.starts_with("rtlab"))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "trace instances left: {left:?}");
}

/// The service unit passes `systemd-analyze verify` and runs `rtlab monitor` on the store the
/// package's other units use.
#[test]
fn the_systemd_unit_verifies() {
    let analyze = Path::new("/usr/bin/systemd-analyze");
    if !analyze.exists() {
        live_skip("no systemd-analyze here");
        return;
    }
    let unit =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packaging/systemd/rtlab-monitor.service");
    let text_of = std::fs::read_to_string(&unit).unwrap();
    assert!(text_of.contains(
        "ExecStart=/usr/bin/rtlab monitor --db /var/lib/rtlab/rtlab.db $RTLAB_MONITOR_OPTS"
    ));
    let dir = tempfile::tempdir().unwrap();
    let exe = assert_cmd::cargo::cargo_bin("rtlab");
    let copy = dir.path().join("rtlab-monitor.service");
    std::fs::write(
        &copy,
        text_of.replace("/usr/bin/rtlab", &exe.to_string_lossy()),
    )
    .unwrap();
    // The man page is installed by the package, not here.
    let out = Command::new(analyze)
        .args(["verify", "--man=no"])
        .arg(&copy)
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}
