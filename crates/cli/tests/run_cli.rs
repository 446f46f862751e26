//! `rtlab run` end to end: three short phases under a scripted clock (any user), and for real
//! as root (with a noise phase); the phases are stored under one session, compared, judged and reported; a SIGINT
//! to `rtlab run` stops the phase and the run ends in order (exit 130).

mod common;

use std::path::Path;

use common::{is_root, rtlab, serial};

fn stored(db: &Path) -> Vec<serde_json::Value> {
    common::stored_runs(db)
}

/// `rtlab run` of 1-s phases on the captured 2-CPU tree with the scripted clock, saving into
/// `db`, with `args`.
fn scripted_run(db: &Path, args: &[&str]) -> std::process::Output {
    rtlab()
        .arg("--root")
        .arg(testkit::fixture_root("vm-x86_64-2cpu").base())
        .args(["run", "--duration", "1s", "--quiet"])
        .args(args)
        .arg("--db")
        .arg(db)
        .output()
        .unwrap()
}

#[test]
fn three_phases_are_stored_compared_judged_and_reported() {
    let _guard = serial();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let html = dir.path().join("report.html");
    let out = scripted_run(
        &db,
        &[
            "--fake-clock",
            "5us,7us,900us",
            "-o",
            html.to_str().unwrap(),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // 900 us is over the default 100 us budget in every phase.
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.starts_with("audit: "), "{stdout}");
    assert!(stdout.contains("rtlab compare: 3 runs"), "{stdout}");
    // A line per phase as it ends (standard output is not a terminal here), and the verdict
    // and the report's path at the end of standard output, where a script keeps them.
    for (n, label) in ["1 of 3: idle", "2 of 3: cpu:60%", "3 of 3: full load"]
        .iter()
        .enumerate()
    {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("phase {label}: max 900.0 us")))
            .unwrap_or_else(|| panic!("phase {n}: {stdout}"));
        assert!(line.contains(" samples"), "{line}");
    }
    let tail: Vec<&str> = stdout.trim_end().lines().rev().take(2).collect();
    assert_eq!(
        tail[0],
        "verdict: FAIL: over the 100us budget: idle max 900.0 us, cpu:60% max 900.0 us, full load max 900.0 us",
        "{stdout}"
    );
    assert_eq!(tail[1], format!("report: {}", html.display()), "{stdout}");
    let runs = stored(&db);
    assert_eq!(runs.len(), 3);
    let labels: Vec<&str> = runs.iter().map(|r| r["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["full load", "cpu:60%", "idle"]);
    let session = runs[0]["session"].as_str().unwrap();
    assert!(runs.iter().all(|r| r["session"] == session), "{runs:?}");
    let page = std::fs::read_to_string(&html).unwrap();
    for label in ["idle", "cpu:60%", "full load"] {
        assert!(page.contains(label), "report lacks {label}");
    }
    // Each phase was measured with the budget it is judged against (issue #43): the stored
    // run fails on its own, where `show` and the report look at it.
    assert_eq!(
        page.matches("<td>budget 100us, as measured</td>").count(),
        3
    );
    let shown = rtlab()
        .args(["show", "last", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&shown.stdout);
    assert_eq!(shown.status.code(), Some(1), "{text}");
    assert!(
        text.contains("verdict: FAIL: CPU 0: max latency 900.0us exceeds --budget 100us"),
        "{text}"
    );
}

/// `run --label TEXT` labels every phase, as `measure --label` labels a run.
#[test]
fn a_label_names_every_phase() {
    let _guard = serial();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let out = scripted_run(
        &db,
        &["--no-report", "--label", "RT-#2", "--fake-clock", "5us,7us"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let labels: Vec<String> = stored(&db)
        .iter()
        .map(|r| r["label"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(labels, ["RT-#2 full load", "RT-#2 cpu:60%", "RT-#2 idle"]);
}

#[test]
fn format_json_prints_only_the_evaluation_document() {
    let _guard = serial();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let html = dir.path().join("report.html");
    let root = testkit::fixture_root("vm-x86_64-2cpu").base().to_path_buf();
    let evaluate = |clock: &str, budget: &str| {
        let out = rtlab()
            .arg("--root")
            .arg(&root)
            .args([
                "run", "-D", "1s", "-q", "--format", "json", "--budget", budget,
            ])
            .args(["--fake-clock", clock, "--db"])
            .arg(&db)
            .arg("-o")
            .arg(&html)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let doc: serde_json::Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("{e}: {stdout}{}", String::from_utf8_lossy(&out.stderr)));
        (out.status.code(), doc)
    };
    let (code, doc) = evaluate("5us,7us,900us", "100us");
    assert_eq!(code, Some(1), "{doc}");
    assert_eq!(doc["schema"], "rtlab.evaluation/1");
    assert_eq!(doc["verdict"], "fail");
    assert_eq!(doc["budget_ns"], 100_000);
    assert_eq!(doc["report"], html.display().to_string());
    assert!(doc["audit"]["fail"].is_u64(), "{doc}");
    let phases = doc["phases"].as_array().unwrap();
    let labels: Vec<&str> = phases
        .iter()
        .map(|p| p["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["idle", "cpu:60%", "full load"]);
    for p in phases {
        assert_eq!(p["verdict"], "fail", "{p}");
        assert_eq!(p["max_ns"], 900_000, "{p}");
        let reason = p["reasons"][0].as_str().unwrap();
        assert!(reason.contains("exceeds --budget 100us"), "{reason}");
    }
    let (code, doc) = evaluate("5us,7us", "1ms");
    assert_eq!(code, Some(0), "{doc}");
    assert_eq!(doc["verdict"], "pass");
    assert!(
        doc["phases"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["verdict"] == "pass")
    );
}

#[test]
fn a_warning_is_printed_once_not_once_per_phase() {
    let _guard = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = rtlab()
        .args([
            "run",
            "--duration",
            "1s",
            "--no-report",
            "--fake-clock",
            "5us,7us",
            "--db",
        ])
        .arg(dir.path().join("rtlab.db"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("warning:")).collect();
    assert!(!warnings.is_empty(), "{stderr}");
    for w in &warnings {
        assert_eq!(
            warnings.iter().filter(|x| *x == w).count(),
            1,
            "{w} repeated:\n{stderr}"
        );
    }
    // The phases still record every warning in their results.
    let db = dir.path().join("rtlab.db");
    for summary in stored(&db) {
        let id = summary["id"].as_str().unwrap();
        let shown = rtlab()
            .args(["show", id, "--format", "json", "--db"])
            .arg(&db)
            .output()
            .unwrap();
        let run: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
        assert!(
            run["warnings"].as_array().is_some_and(|w| !w.is_empty()),
            "{id}"
        );
    }
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        vec!["run", "--duration", "1"],
        vec!["run", "--cpus", "x-"],
        vec!["run", "-o", "/nonexistent/dir/report.html"],
    ] {
        let out = rtlab()
            .args(&args)
            .arg("--db")
            .arg(dir.path().join("db"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr).lines().count(),
            1,
            "{args:?}"
        );
    }
    assert!(
        !dir.path().join("db").exists(),
        "nothing stored for bad input"
    );
}

#[test]
fn a_real_evaluation_as_root() {
    let _guard = serial();
    if !is_root() {
        return common::live_skip("not root: the phases cannot measure for real");
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let evaluate = |extra: &[&str]| {
        rtlab()
            .current_dir(dir.path())
            .args([
                "run",
                "--duration",
                "1s",
                "--quiet",
                "--budget",
                "10s",
                "--db",
            ])
            .arg(&db)
            .args(extra)
            .output()
            .unwrap()
    };
    let reports = || {
        std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("rtlab-report-"))
            .count()
    };
    // With a noise phase (a `rtlab noise` child after the latency phases).
    let out = evaluate(&["--noise", "1s"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // The three latency phases and the noise phase.
    assert_eq!(stored(&db).len(), 4);
    // The report lands in the working directory under its default name.
    assert_eq!(reports(), 1, "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.trim_end().ends_with("stayed within the 10s budget"),
        "{stdout}"
    );
    assert!(stdout.contains("\nnoise: OS noise: "), "{stdout}");
    // A second evaluation the same day keeps the first's report.
    let again = evaluate(&[]);
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(reports(), 2, "{}", String::from_utf8_lossy(&again.stdout));
}

/// `rtlab run` with `budget`, sent SIGINT 1.5 s into its 30-s idle phase: (exit status,
/// stdout, stderr).
fn interrupted_run(budget: &str) -> (Option<i32>, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut child = rtlab()
        .current_dir(dir.path())
        .args([
            "run",
            "--duration",
            "30s",
            "--quiet",
            "--no-report",
            "--budget",
            budget,
        ])
        .arg("--db")
        .arg(dir.path().join("rtlab.db"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Any moment of the 30 s idle phase will do.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // SAFETY: kill takes plain integers; the pid is our child's.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let status = common::wait_for(&mut child, std::time::Duration::from_secs(20));
    let out = child.wait_with_output().unwrap();
    (
        status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn sigint_stops_the_phase_and_the_run_survives_to_compare() {
    let _guard = serial();
    if !is_root() {
        return common::live_skip("not root: the phases cannot measure for real");
    }
    let (code, stdout, stderr) = interrupted_run("10s");
    // The run process itself got the signal: it stopped its phase and ended in order.
    assert_eq!(code, Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted during the idle phase"),
        "{stderr}"
    );
    assert!(stdout.contains("verdict: INTERRUPTED"), "{stdout}");
}

#[test]
fn a_phase_over_budget_fails_the_run_a_signal_cut_short() {
    let _guard = serial();
    if !is_root() {
        return common::live_skip("not root: the phases cannot measure for real");
    }
    // No wake-up takes under a nanosecond: the idle phase is over budget when it is stopped.
    let (code, stdout, stderr) = interrupted_run("1ns");
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(
        stdout
            .contains("interrupted: not every phase was measured, and one that was already fails")
            && stdout.contains("verdict: FAIL: over the 1ns budget: idle max"),
        "{stdout}"
    );
}
