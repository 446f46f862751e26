//! `rtlab export --format lava` on its own: the LAVA test commands of stored runs and result
//! files (`lava-test-case` lines), the baseline judged by `compare`'s rule, the exit status set
//! by the baseline and the budget, and bad input refused. `lava_cli.rs` runs the LAVA test
//! definition that calls it as LAVA does.

mod common;

use std::path::Path;
use std::process::{Output, Stdio};

use common::rtlab;

fn export(args: &[&str], dir: &Path) -> Output {
    rtlab()
        .arg("export")
        .args(args)
        .arg("--db")
        .arg(dir.join("rtlab.db"))
        .current_dir(dir)
        .output()
        .unwrap()
}

fn measure_file(dir: &Path, name: &str, script: &str) {
    let out = rtlab()
        .args([
            "measure",
            "--fake-clock",
            script,
            "--cycles",
            "100",
            "--cpus",
            "0",
            "-q",
        ])
        .arg("--db")
        .arg(dir.join("rtlab.db"))
        .arg("-o")
        .arg(dir.join(name))
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A directory with a store and three measured runs, saved as files too: `a.json` (max
/// 20 us), `b.json` and `c.json` (max 30 us).
fn three_runs() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    measure_file(d, "a.json", "5us,20us");
    measure_file(d, "b.json", "5us,30us");
    measure_file(d, "c.json", "5us,30us");
    dir
}

#[test]
fn export_lava_of_the_last_stored_run_is_commands() {
    let dir = three_runs();
    // One stored run by label-free `last`: commands, exit 0.
    let out = export(
        &["last", "--format", "lava", "--prefix", "nightly"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("lava-test-case nightly-run-status --result pass\n"),
        "{text}"
    );
    assert!(
        text.contains("lava-test-case nightly-cpu0-max-latency --result pass --measurement 30.000 --units us\n"),
        "{text}"
    );
}

#[test]
fn export_lava_baseline_of_three_runs_fails_with_two_over_it() {
    let dir = three_runs();
    // The baseline: 20 us; two of three runs over it, 3 / 2 = 1, so it fails: exit 1.
    let out = export(
        &[
            "a.json",
            "b.json",
            "c.json",
            "--format",
            "lava-results",
            "--baseline",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("iteration-1-cpu0-max-latency pass 20.000 us\n"),
        "{text}"
    );
    assert!(
        text.ends_with("baseline-max-latency pass 20.000 us\nruns-over-baseline fail 2 runs\n"),
        "{text}"
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("2 of 3 runs over the baseline 20.000 us"),
        "{stderr}"
    );
}

#[test]
fn export_lava_given_baseline_and_budget_set_the_exit_status() {
    let dir = three_runs();
    let d = dir.path();
    // A given baseline none exceeds: exit 0; a budget under a maximum: exit 1.
    let out = export(
        &[
            "a.json",
            "b.json",
            "c.json",
            "--format",
            "lava",
            "--baseline=30us",
        ],
        d,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = export(&["a.json", "--format", "lava", "--budget", "25us"], d);
    assert_eq!(out.status.code(), Some(0));
    let out = export(&["b.json", "--format", "lava", "--budget", "25us"], d);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn export_lava_refuses_bad_input() {
    let dir = three_runs();
    // Bad input: one line, exit 2, nothing on standard output.
    for (args, says) in [
        (vec!["nosuchrun", "--format", "lava"], "nosuchrun"),
        (
            vec!["missing.json", "--format", "lava"],
            "missing.json: no such file",
        ),
        (
            vec!["a.json", "--format", "lava", "--baseline"],
            "at least 3 runs, got 1",
        ),
        (
            vec!["a.json", "b.json", "--format", "lava", "--baseline"],
            "at least 3 runs, got 2",
        ),
        (
            vec!["a.json", "b.json", "--format", "csv"],
            "2 RUNs: only --format lava",
        ),
        (
            vec!["a.json", "--format", "junit", "--baseline"],
            "--baseline: only --format lava",
        ),
        (
            vec!["a.json", "--format", "lava", "--prefix", "two words"],
            "--prefix 'two words'",
        ),
    ] {
        let out = export(&args, dir.path());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}
