//! `rtlab compare` end to end: scripted measurements of the captured 8-CPU arm64 board saved in
//! a store of the test's own, then compared by id, label-named, from a file; the verdict's exit
//! statuses and the one-line errors.

mod common;

use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn fixture() -> PathBuf {
    testkit::fixture_root("arm64-8cpu-rt-tuned")
        .base()
        .to_path_buf()
}

/// `rtlab` with its own store in `db`.
fn rtlab(db: &Path) -> Command {
    common::rtlab_with_store(db)
}

/// A scripted measurement of the board saved in `db` with `label`; returns its id.
fn measure(db: &Path, script: &str, label: &str) -> String {
    let out = scripted(db, script)
        .args(["--label", label])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    stderr
        .split("saved as run ")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .unwrap_or_else(|| panic!("no saved line: {stderr}"))
        .to_string()
}

/// `rtlab measure` of the board with the scripted clock.
fn scripted(db: &Path, script: &str) -> Command {
    let mut cmd = rtlab(db);
    cmd.arg("--root")
        .arg(fixture())
        .args(["measure", "--fake-clock", script, "--cycles", "20"]);
    cmd
}

struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
}

fn compare(db: &Path, args: &[&str]) -> Outcome {
    let out = rtlab(db).arg("compare").args(args).output().unwrap();
    Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The baseline: every CPU 5, 7, 100 us.
const BASE: &str = "5us,7us,100us";

#[test]
fn runs_are_compared_by_cluster_and_judged() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let base = measure(&db, BASE, "Van-#1");
    // CPU 3 9% worse, CPU 7 11% worse.
    let worse = measure(
        &db,
        "5us,7us,100us;3=5us,7us,109us;7=5us,7us,111us",
        "RT-#1",
    );

    // 9% passes a 10% limit, 11% does not: exit 1, CPU 7's figures named on stderr.
    let out = compare(&db, &[&base, &worse, "--fail-if-worse", "10%"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(
        lines,
        [
            "rtlab: RT-#1 CPU 7: p99.9 111.0 us is 11.0% worse than Van-#1's 100.0 us (limit 10%)",
            "rtlab: RT-#1 CPU 7: max 111.0 us is 11.0% worse than Van-#1's 100.0 us (limit 10%)",
        ]
    );
    // The table: labels from the store, the board's three kinds of core, the change row.
    let text = &out.stdout;
    assert!(
        text.starts_with("rtlab compare: 2 runs, latencies in us, changes against Van-#1\n"),
        "{text}"
    );
    assert!(text.contains(
        "Max          4x Kryo 4xx Silver          |  3x Cortex-A77 (2.42 GHz)  |  1x Cortex-A77 (2.84 GHz)\n"
    ), "{text}");
    assert!(
        text.contains("\n  vs Van-#1     0%     0%     0%    +9%  |"),
        "{text}"
    );
    assert!(text.ends_with("\nverdict: FAIL: 2 figures are more than 10% worse than Van-#1's\n"));

    // A 12% limit passes (`12` without the sign is the same); no limit, no verdict.
    let out = compare(&db, &[&base, &worse, "--fail-if-worse", "12"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    assert!(out.stdout.contains("verdict: PASS"));
    let out = compare(&db, &[&base[..6], "last"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stdout.contains("verdict"));
}

#[test]
fn every_format_and_a_result_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let file = dir.path().join("vanilla.json");
    let file_arg = file.to_str().unwrap();
    let made = scripted(&db, BASE)
        .args(["--output", file_arg, "--no-store"])
        .output()
        .unwrap();
    assert!(made.status.success());
    let stored = measure(&db, "5us,7us,50us", "RT-#2");

    let out = compare(
        &db,
        &[
            file_arg,
            &stored,
            "--format",
            "json",
            "--fail-if-worse",
            "0",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let json: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["schema"], "rtlab.compare/1");
    assert_eq!(json["heterogeneous"], true);
    assert_eq!(json["runs"][0]["label"], "vanilla.json");
    assert_eq!(json["runs"][1]["label"], "RT-#2");
    assert_eq!(json["runs"][1]["cpus"][7]["max_ns"], 50_000);
    assert_eq!(json["verdict"]["passed"], true);
    assert_eq!(json["clusters"].as_array().unwrap().len(), 3);

    let out = compare(&db, &[file_arg, &stored, "--format", "markdown"]);
    assert_eq!(out.code, 0);
    assert!(out.stdout.starts_with("## Latency comparison\n"));
    assert!(
        out.stdout
            .contains("| **Cluster** | **4x Kryo 4xx Silver** |")
    );
    assert!(out.stdout.contains("| *vs vanilla.json* | *0%* |"));

    let out = compare(&db, &[file_arg, &stored, "--format", "html"]);
    assert_eq!(out.code, 0);
    assert!(out.stdout.starts_with("<!DOCTYPE html>\n"));
    assert!(out.stdout.contains("<th scope=\"row\">RT-#2</th>"));

    // The same run twice is told apart.
    let out = compare(&db, &[&stored, &stored, "--format", "json"]);
    let json: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["runs"][0]["label"], "RT-#2 (run 1)");
    assert_eq!(json["runs"][1]["label"], "RT-#2 (run 2)");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let id = measure(&db, BASE, "Van-#1");
    let one_line = |out: &Outcome, needle: &str| {
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(out.stderr.starts_with("rtlab: error: "), "{}", out.stderr);
        assert!(out.stderr.contains(needle), "{}", out.stderr);
        assert!(out.stdout.is_empty());
    };
    one_line(&compare(&db, &[&id, "feedbeef"]), "no run 'feedbeef'");
    one_line(&compare(&db, &[&id]), "at least two RUNs");
    one_line(
        &compare(&db, &[&id, "last", "--fail-if-worse", "ten"]),
        "'ten' is not a percentage",
    );
    one_line(&compare(&db, &[]), "RUN");
    let missing = dir.path().join("elsewhere.db");
    one_line(
        &compare(&db, &[&id, "last", "--db", missing.to_str().unwrap()]),
        "no run store at",
    );
}
