//! The run store end to end: `rtlab measure` saves (scripted clock, captured tree), then
//! `runs`, `show`, `label`, `rm` and `export` find the run by id, prefix, `last` or file.

mod common;

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use model::measure::MeasureRun;
use predicates::prelude::*;

fn fixture() -> PathBuf {
    testkit::fixture_root("vm-x86_64-2cpu").base().to_path_buf()
}

/// `rtlab` with its own store in `db`.
fn rtlab(db: &Path) -> Command {
    common::rtlab_with_store(db)
}

/// A scripted two-CPU measurement saved in `db`; returns its id and result.
fn measure(db: &Path, script: &str, label: Option<&str>) -> (String, MeasureRun) {
    let mut cmd = rtlab(db);
    cmd.arg("--root").arg(fixture()).args([
        "measure",
        "--format",
        "json",
        "--fake-clock",
        script,
        "--cycles",
        "50",
    ]);
    if let Some(l) = label {
        cmd.args(["--label", l]);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let id = stderr
        .split("saved as run ")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .unwrap_or_else(|| panic!("no saved line: {stderr}"))
        .to_string();
    let run = MeasureRun::from_json(&String::from_utf8_lossy(&out.stdout)).unwrap();
    (id, run)
}

fn show_json(db: &Path, spec: &str) -> MeasureRun {
    let out = rtlab(db)
        .args(["show", spec, "--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    MeasureRun::from_json(&String::from_utf8_lossy(&out.stdout)).unwrap()
}

#[test]
fn a_measurement_is_saved_and_shown_again_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sub/dir/rtlab.db");
    let (id, run) = measure(&db, "5us,7us,900us", Some("RT-#1"));
    assert_eq!(id.len(), 12, "{id}");
    assert!(db.is_file());
    // By id, by a prefix, as `last`: the same document as the run printed.
    assert_eq!(show_json(&db, &id), run);
    assert_eq!(show_json(&db, &id[..5]), run);
    assert_eq!(show_json(&db, "last"), run);
    rtlab(&db)
        .args(["show", "last"])
        .assert()
        .success()
        .stdout(predicate::str::contains("all"));
    rtlab(&db)
        .args(["runs"])
        .assert()
        .success()
        .stdout(predicate::str::contains(&id))
        .stdout(predicate::str::contains("RT-#1"))
        .stdout(predicate::str::contains("1 run"));
}

#[test]
fn runs_are_listed_filtered_labelled_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let (a, _) = measure(&db, "5us", None);
    let (b, _) = measure(&db, "9us", Some("tuned"));
    let list = |args: &[&str]| -> Vec<serde_json::Value> {
        let out = rtlab(&db)
            .arg("runs")
            .args(args)
            .args(["--format", "json"])
            .output()
            .unwrap();
        assert!(out.status.success());
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let all = list(&[]);
    assert_eq!(all.len(), 2);
    assert_eq!(all[0]["id"], b.as_str(), "newest first");
    assert_eq!(list(&["--label", "tun"]).len(), 1);
    assert_eq!(list(&["--host", "no-such-host"]).len(), 0);
    assert_eq!(list(&["-n", "1"]).len(), 1);

    rtlab(&db).args(["label", &a, "RT-#2"]).assert().success();
    assert_eq!(list(&["--label", "RT-#2"])[0]["id"], a.as_str());
    rtlab(&db).args(["label", &a, ""]).assert().success();
    assert_eq!(list(&["--label", "RT-#2"]).len(), 0);

    // rm says what it removed.
    rtlab(&db)
        .args(["rm", &a])
        .assert()
        .success()
        .stdout(predicate::str::starts_with(format!(
            "removed {a} (measure on "
        )));
    assert_eq!(list(&[]).len(), 1);
    // A RUN that matches nothing is one line and exit 2, and deletes nothing.
    let out = rtlab(&db).args(["rm", &b, "zzzzzz"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
    assert_eq!(list(&[]).len(), 1);
}

#[test]
fn exports_read_stored_runs_and_result_files() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let (id, run) = measure(&db, "5us,7us,250us", None);
    let file = dir.path().join("run.json");
    std::fs::write(&file, run.to_json()).unwrap();

    let csv = rtlab(&db)
        .args(["export", &id, "--format", "csv"])
        .output()
        .unwrap();
    assert!(csv.status.success());
    let csv = String::from_utf8(csv.stdout).unwrap();
    assert_eq!(csv.lines().count(), 1 + run.cpus.len() + 1, "{csv}");

    let junit = dir.path().join("junit.xml");
    // The export is written, and its failing test cases are its exit status too.
    rtlab(&db)
        .args([
            "export", "last", "--format", "junit", "--budget", "100us", "-o",
        ])
        .arg(&junit)
        .assert()
        .code(1);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("<testsuites") && xml.contains("failures=\"2\""),
        "{xml}"
    );

    let om = rtlab(&db)
        .arg("export")
        .arg(&file)
        .args(["--format", "openmetrics"])
        .output()
        .unwrap();
    let om = String::from_utf8(om.stdout).unwrap();
    assert!(om.trim_end().ends_with("# EOF"), "{om}");

    let json = rtlab(&db)
        .args(["export", &id, "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(
        MeasureRun::from_json(&String::from_utf8_lossy(&json.stdout)).unwrap(),
        run
    );
}

#[test]
fn no_store_and_bad_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    rtlab(&db)
        .arg("--root")
        .arg(fixture())
        .args([
            "measure",
            "-q",
            "--fake-clock",
            "5us",
            "--cycles",
            "5",
            "--no-store",
        ])
        .assert()
        .success();
    assert!(!db.exists(), "--no-store must not create the store");
    // Reading a store that does not exist yet says so and creates nothing.
    let out = rtlab(&db).args(["show", "last"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no run store at"));
    assert!(!db.exists());
    measure(&db, "5us", None);
    for spec in ["abcdef", "ab", "nonsense!"] {
        let out = rtlab(&db).args(["show", spec]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{spec}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{spec}: {err}");
    }
}

/// A PostgreSQL store is shared: `rm last` may name another host's run, so without a terminal
/// to ask on it needs --yes, and removes nothing without it.
#[test]
fn rm_on_a_shared_store_asks_first() {
    let Some(pg) = common::PostgresDb::create("rtlab_rm") else {
        return;
    };
    let url = PathBuf::from(&pg.url);
    let (id, _) = measure(&url, "5us,7us", None);
    let out = rtlab(&url)
        .args(["rm", "last"])
        .write_stdin("")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&id) && err.contains("add --yes"), "{err}");
    rtlab(&url).args(["show", &id]).assert().success();
    rtlab(&url)
        .args(["rm", "last", "--yes"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with(format!("removed {id}")));
    rtlab(&url).args(["show", &id]).assert().code(2);
}
