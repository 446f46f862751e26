//! `rtlab report` from the command line: runs named by label, id or file, what is written
//! where, and bad input as one line with exit status 2. (The page in a real browser:
//! report_browser.rs.)

mod common;

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;

fn fixture() -> PathBuf {
    testkit::fixture_root("vm-x86_64-2cpu").base().to_path_buf()
}

fn rtlab(db: &Path) -> Command {
    common::rtlab_with_store(db)
}

/// A short scripted run saved in `db`, also written as a result file `json`; returns its id.
fn measure(db: &Path, label: Option<&str>, json: &Path) -> String {
    let mut cmd = rtlab(db);
    cmd.arg("--root").arg(fixture()).args([
        "measure",
        "--fake-clock",
        "5us,9us,70us",
        "--cycles",
        "1500",
        "--format",
        "json",
    ]);
    if let Some(l) = label {
        cmd.args(["--label", l]);
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    std::fs::write(json, &out.stdout).unwrap();
    stderr
        .split("saved as run ")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .unwrap_or_else(|| panic!("no saved line: {stderr}"))
        .to_string()
}

#[test]
fn runs_are_named_by_label_id_or_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let labelled = measure(&db, Some("<b>RT-#2</b>"), &dir.path().join("a.json"));
    let plain = measure(&db, None, &dir.path().join("b.json"));
    let page = dir.path().join("out.html");
    rtlab(&db)
        .current_dir(dir.path())
        .args(["report", &labelled, "last", "b.json", "-o", "out.html"])
        .assert()
        .success()
        .stdout("")
        .stderr(predicate::eq(
            "rtlab: report on 3 runs written to out.html\n",
        ));
    let html = std::fs::read_to_string(&page).unwrap();
    // The title names where the runs were measured, as far as they share it.
    assert!(html.contains("<title>rtlab report: 3 runs on "), "{html}");
    // The label, escaped; the unlabelled run by its id; the file by its name.
    assert!(html.contains(&format!(
        "<a href=\"#run-{labelled}\">&lt;b&gt;RT-#2&lt;&#x2f;b&gt;</a>"
    )));
    assert!(!html.contains("<b>RT"));
    assert!(html.contains(&format!("<a href=\"#run-{plain}\">{plain}</a>")));
    assert!(html.contains("<a href=\"#run-b\">b.json</a>"));
    assert!(html.contains("file b.json"));
    assert!(html.contains(&format!("stored run {labelled}")));
    // No --svg: nothing but the page was written.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a.json", "b.json", "out.html", "rtlab.db"]);
}

#[test]
fn svg_files_go_into_a_new_directory_and_a_page_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let id = measure(&db, None, &dir.path().join("a.json"));
    let page = dir.path().join("report.html");
    std::fs::write(&page, "old").unwrap();
    let svgs = dir.path().join("plots/deeper");
    rtlab(&db)
        .args(["report", "last", "--svg"])
        .arg(&svgs)
        .arg("-o")
        .arg(&page)
        .assert()
        .success()
        .stderr(predicate::str::contains("; 3 SVG files in "));
    assert!(
        std::fs::read_to_string(&page)
            .unwrap()
            .starts_with("<!DOCTYPE html>")
    );
    for kind in ["histogram", "exceedance", "max-over-time"] {
        let svg = std::fs::read_to_string(svgs.join(format!("{id}-{kind}.svg"))).unwrap();
        assert!(
            svg.starts_with("<svg ") && svg.contains("<polyline"),
            "{kind}"
        );
    }
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let one_line = |args: &[&str], expected: &str| {
        let out = rtlab(&db)
            .current_dir(dir.path())
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    };
    // Before any run is stored.
    one_line(&["report", "last", "-o", "r.html"], "no run store at");
    measure(&db, None, &dir.path().join("a.json"));
    one_line(&["report", "last"], "--output <FILE>");
    one_line(&["report", "-o", "r.html"], "<RUN>");
    one_line(&["report", "nosuch", "-o", "r.html"], "no run 'nosuch' in");
    one_line(
        &["report", "last", "-o", "missing/dir/r.html"],
        "--output missing/dir/r.html:",
    );
    one_line(
        &["report", "last", "-o", "r.html", "--svg", "a.json"],
        "--svg a.json: writing into a.json: not supported: a.json is not a directory",
    );
    std::fs::write(dir.path().join("bad.json"), "{\"schema\": \"other/1\"}").unwrap();
    one_line(
        &["report", "bad.json", "-o", "r.html"],
        "bad.json: result schema is 'other/1'",
    );
    assert!(!dir.path().join("r.html").exists());
}

#[test]
fn a_budget_is_a_line_on_every_latency_plot_and_noise_runs_get_their_own_chart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let id = measure(&db, Some("RT"), &dir.path().join("a.json"));
    let oslat =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/imports/local_oslat_2cpu.txt");
    let out = rtlab(&db).arg("import").arg(&oslat).output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let noise_id = said
        .split("as run ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no run id: {said}"))
        .to_string();
    let svgs = dir.path().join("svgs");
    rtlab(&db)
        .current_dir(dir.path())
        .args([
            "report", &id, &noise_id, "-o", "out.html", "--budget", "50us", "--svg",
        ])
        .arg(&svgs)
        .assert()
        // Written, and its verdict is the exit status: both runs are over 50us.
        .code(1)
        .stderr(predicate::str::contains(
            "RT: CPU 0: max latency 70.0us exceeds --budget 50us",
        ));
    let read = |name: &str| std::fs::read_to_string(svgs.join(name)).unwrap();
    for kind in ["histogram", "exceedance", "max-over-time"] {
        let svg = read(&format!("{id}-{kind}.svg"));
        assert!(svg.contains(">budget 50 us</text>"), "{kind}: {svg}");
    }
    // The noise run is not drawn against the latency budget, nor on the latency chart.
    let page = std::fs::read_to_string(dir.path().join("out.html")).unwrap();
    assert!(page.contains("not drawn on one chart"), "{page}");
    assert!(!svgs.join("runs-exceedance.svg").exists());
    let noise: Vec<String> = std::fs::read_dir(&svgs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with("-histogram.svg") && n.starts_with(&noise_id))
        .collect();
    assert_eq!(noise.len(), 1, "{noise:?}");
    let svg = read(&noise[0]);
    assert!(svg.contains("OS noise histogram"), "{svg}");
    assert!(!svg.contains("budget"), "{svg}");

    rtlab(&db)
        .args(["report", &id, "-o"])
        .arg(dir.path().join("x.html"))
        .args(["--budget", "fast"])
        .assert()
        .code(2);
}

#[test]
fn csv_and_junit_exports_carry_the_runs_label() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let json = dir.path().join("a.json");
    let id = measure(&db, Some("idle, tuned"), &json);
    let out = rtlab(&db)
        .args(["export", &id, "--format", "csv"])
        .output()
        .unwrap();
    let csv = String::from_utf8(out.stdout).unwrap();
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .ends_with(",overruns,label,load,verdict")
    );
    assert!(
        csv.lines()
            .skip(1)
            .all(|l| l.ends_with(",\"idle, tuned\",,pass")),
        "{csv}"
    );
    let out = rtlab(&db)
        .args(["export", &id, "--format", "junit"])
        .output()
        .unwrap();
    let xml = String::from_utf8(out.stdout).unwrap();
    assert!(xml.contains(": idle, tuned\""), "{xml}");
    assert!(xml.contains("<property name=\"label\" value=\"idle, tuned\"/>"));
    // The report names the session a stored run was a phase of.
    let mut cmd = rtlab(&db);
    cmd.arg("--root").arg(fixture()).args([
        "measure",
        "--fake-clock",
        "5us",
        "--cycles",
        "10",
        "--label",
        "idle",
        "--session",
        "s-42",
    ]);
    cmd.assert().success();
    let page = dir.path().join("p.html");
    rtlab(&db)
        .args(["report", "last", "-o"])
        .arg(&page)
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains(", session s-42</p>"), "{html}");

    // A result file has no label.
    let out = rtlab(&db)
        .arg("export")
        .arg(&json)
        .args(["--format", "csv"])
        .output()
        .unwrap();
    let csv = String::from_utf8(out.stdout).unwrap();
    assert!(csv.lines().skip(1).all(|l| l.ends_with(",,,pass")), "{csv}");
}
