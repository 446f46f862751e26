//! `rtlab worst` end to end: a scripted measurement's result file given a per-second series
//! drawn from a known GEV (trusted, the true levels inside the intervals), the same series
//! shifted halfway (flagged: not trusted, exit 1), a budget gate, and bad input (exit 2).

mod common;

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

fn fixture() -> PathBuf {
    testkit::fixture_root("arm64-8cpu-rt-tuned")
        .base()
        .to_path_buf()
}

/// A result file of a scripted measurement of CPU 0.
fn result_file(dir: &Path) -> Value {
    let out = dir.join("base.json");
    let status = common::rtlab_with_store(&dir.join("db.sqlite"))
        .arg("--root")
        .arg(fixture())
        .args([
            "measure",
            "--fake-clock",
            "5us,7us",
            "--cycles",
            "20",
            "--cpus",
            "0",
            "--no-store",
        ])
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap()
}

/// GEV(mu 20 us, sigma 2 us, xi -0.15) per-second maxima, from a fixed SplitMix64 stream.
fn gev_series(n: usize, seed: u64) -> Vec<u64> {
    let mut rng = testkit::SplitMix(seed);
    (0..n)
        .map(|_| {
            let u = rng.open01();
            let xi = -0.15;
            (20_000.0 + 2_000.0 * ((-u.ln()).powf(-xi) - 1.0) / xi) as u64
        })
        .collect()
}

fn with_series(base: &Value, maxima: &[u64], path: &Path) {
    let mut run = base.clone();
    let series = serde_json::json!({
        "slot_ns": 1_000_000_000u64,
        "max_ns": maxima,
        "count": vec![1000u64; maxima.len()],
    });
    run["all"]["series"] = series.clone();
    run["cpus"][0]["series"] = series;
    let max = maxima.iter().copied().max().unwrap();
    run["all"]["raw"]["max_ns"] = max.into();
    run["cpus"][0]["raw"]["max_ns"] = max.into();
    std::fs::write(path, serde_json::to_string(&run).unwrap()).unwrap();
}

fn worst(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::cargo_bin("rtlab")
        .unwrap()
        .env("RTLAB_DB", dir.join("db.sqlite"))
        .arg("worst")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The true once-per-`hours` level of the per-second maxima.
fn true_level(hours: f64) -> f64 {
    let q = 1.0 / (3600.0 * hours);
    let xi = -0.15;
    20_000.0 + 2_000.0 * ((-(-q).ln_1p()).powf(-xi) - 1.0) / xi
}

#[test]
fn a_known_tail_is_trusted_and_its_levels_covered() {
    let dir = tempfile::tempdir().unwrap();
    let base = result_file(dir.path());
    let file = dir.path().join("gev.json");
    with_series(&base, &gev_series(7200, 1), &file);
    let (code, stdout, stderr) = worst(dir.path(), &[file.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["schema"], "rtlab.worst/1");
    let all = &doc["groups"][0]["cpus"][0];
    assert!(all["cpu"].is_null());
    assert_eq!(all["verdict"]["trusted"], true);
    for method in ["block_maxima", "peaks_over_threshold"] {
        let fit = &all[method];
        assert_eq!(fit["trusted"], true, "{method}: {fit}");
        for level in fit["return_levels"].as_array().unwrap() {
            let e = &level["level_ns"];
            let want = true_level(level["hours"].as_f64().unwrap());
            let (lo, hi) = (e["lower"].as_f64().unwrap(), e["upper"].as_f64().unwrap());
            assert!(
                lo <= want && want <= hi,
                "{method} {}: {want} not in [{lo}, {hi}]",
                level["per"]
            );
        }
        let xi = &fit["shape"];
        assert!(
            xi["lower"].as_f64().unwrap() < -0.15 + 0.1
                && xi["upper"].as_f64().unwrap() > -0.15 - 0.1
        );
    }
    // The text form: verdict first, then the fits with their checks.
    let (code, text, _) = worst(dir.path(), &[file.to_str().unwrap(), "--budget", "40us"]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("all CPUs [PASS]") && text.contains("once per day"),
        "{text}"
    );
    assert!(
        text.contains("probability per hour of exceeding 40.0 us"),
        "{text}"
    );
    // The tail is bounded (shape -0.15): the verdict may say so, or that these data cannot
    // tell (block maxima's interval reaches 0), never that it is unbounded.
    assert!(
        text.contains("the latency has an upper bound")
            || text.contains("cannot tell a bounded tail from an unbounded one"),
        "{text}"
    );
    assert!(!text.contains("the tail has no upper bound"), "{text}");
    // The first line is what to expect.
    assert!(text.starts_with("expect up to "), "{text}");
    // A budget inside the observed range is exceeded every hour: the gate fails.
    let (code, text, _) = worst(dir.path(), &[file.to_str().unwrap(), "--budget", "27us"]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("not bounded below the target"), "{text}");
}

#[test]
fn a_change_halfway_is_flagged_not_fitted_silently() {
    let dir = tempfile::tempdir().unwrap();
    let base = result_file(dir.path());
    let mut maxima = gev_series(7200, 2);
    for v in &mut maxima[3600..] {
        *v = *v * 13 / 10;
    }
    let file = dir.path().join("shift.json");
    with_series(&base, &maxima, &file);
    let (code, text, _) = worst(dir.path(), &[file.to_str().unwrap()]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("no fit may be trusted"), "{text}");
    assert!(text.contains("split-half"), "{text}");
}

#[test]
fn too_short_a_run_says_why_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let base = result_file(dir.path());
    let file = dir.path().join("short.json");
    with_series(&base, &gev_series(20, 3), &file);
    let (code, text, _) = worst(dir.path(), &[file.to_str().unwrap()]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("not fitted: block maxima: 20 blocks of 1 s; a GEV needs at least 30"),
        "{text}"
    );
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (vec!["nothing/here.json"], "no such file"),
        (
            vec!["x.json", "--per-hour", "2"],
            "is not a probability between 0 and 1",
        ),
        (vec!["x.json", "--budget", "fast"], "fast"),
    ] {
        let (code, _, stderr) = worst(dir.path(), &args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

#[test]
fn a_histogram_alone_gives_an_estimate_never_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = testkit::fixtures_dir().join("../imports/analisi_imx8mp_baseline.json");
    let out = Command::cargo_bin("rtlab")
        .unwrap()
        .env("RTLAB_DB", dir.path().join("db.sqlite"))
        .arg("import")
        .arg(&fixture)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (code, stdout, stderr) = worst(dir.path(), &["last", "--format", "json"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    let all = &doc["groups"][0]["cpus"][0];
    assert_eq!(all["verdict"]["trusted"], false);
    let pot = &all["peaks_over_threshold"];
    assert_eq!(pot["trusted"], false);
    assert!(
        pot["data"].as_str().unwrap().contains("no time order"),
        "{pot}"
    );
    assert!(
        pot["checks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "chi-squared")
    );
    assert!(all["block_maxima"].is_null());
    assert!(
        all["not_fitted"][0]
            .as_str()
            .unwrap()
            .contains("no per-second series")
    );
}

#[test]
fn every_form_for_machines_and_people() {
    let dir = tempfile::tempdir().unwrap();
    let base = result_file(dir.path());
    let file = dir.path().join("gev.json");
    with_series(&base, &gev_series(3600, 4), &file);
    let f = file.to_str().unwrap();
    let (code, html, _) = worst(dir.path(), &[f, "--format", "html", "--budget", "40us"]);
    assert_eq!(code, 0, "{html}");
    assert!(
        html.starts_with("<!DOCTYPE html>") && html.contains("<svg"),
        "{html}"
    );
    assert!(
        html.contains("Return levels")
            && html.contains("QQ plot")
            && html.contains("Threshold choice")
    );
    assert!(!html.contains("<script"));
    let (_, om, _) = worst(
        dir.path(),
        &[f, "--format", "openmetrics", "--budget", "40us"],
    );
    assert!(
        om.contains("rtlab_worst_return_level_seconds{cpu=\"all\""),
        "{om}"
    );
    assert!(om.contains("rtlab_worst_trusted{cpu=\"cpu0\"} 1"), "{om}");
    assert!(om.contains("rtlab_worst_budget_risk_per_hour"), "{om}");
    assert!(om.trim_end().ends_with("# EOF"), "{om}");
    let (_, junit, _) = worst(dir.path(), &[f, "--format", "junit"]);
    assert!(
        junit.contains("<testsuite name=\"rtlab worst\" tests=\"2\" failures=\"0\""),
        "{junit}"
    );
    let (_, lava, _) = worst(dir.path(), &[f, "--format", "lava"]);
    assert!(
        lava.contains("lava-test-case worst-all --result pass"),
        "{lava}"
    );
    assert!(
        lava.contains("lava-test-case worst-cpu0-day-level --result pass --measurement"),
        "{lava}"
    );
    let (_, lines, _) = worst(dir.path(), &[f, "--format", "lava-results"]);
    assert!(
        lines
            .lines()
            .any(|l| l.starts_with("worst-all-shape pass ")),
        "{lines}"
    );
}

#[test]
fn compare_adds_each_runs_worst_case() {
    let dir = tempfile::tempdir().unwrap();
    let base = result_file(dir.path());
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    with_series(&base, &gev_series(3600, 5), &a);
    let mut shifted = gev_series(3600, 6);
    shifted[1800..].iter_mut().for_each(|v| *v = *v * 13 / 10);
    with_series(&base, &shifted, &b);
    let out = Command::cargo_bin("rtlab")
        .unwrap()
        .env("RTLAB_DB", dir.path().join("db.sqlite"))
        .args([
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--worst-case",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Worst case (extreme-value estimate, all CPUs):"),
        "{text}"
    );
    assert!(
        text.contains("trusted") && text.contains("NOT TRUSTED"),
        "{text}"
    );
    let refused = Command::cargo_bin("rtlab")
        .unwrap()
        .env("RTLAB_DB", dir.path().join("db.sqlite"))
        .args([
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--worst-case",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
}

/// Issue #43: the criteria travel with the run. A trusted tail measured with a budget has its
/// risk estimated against that budget with none given; the same run unfinished passes no gate,
/// whatever its fit says.
#[test]
fn the_runs_own_budget_is_judged_and_a_run_that_cannot_be_judged_fails() {
    let dir = tempfile::tempdir().unwrap();
    let mut base = result_file(dir.path());
    base["params"]["budget_ns"] = 40_000.into();
    let file = dir.path().join("gev.json");
    with_series(&base, &gev_series(7200, 1), &file);
    let (code, text, err) = worst(dir.path(), &[file.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}{err}");
    assert!(
        text.contains("probability per hour of exceeding 40.0 us"),
        "{text}"
    );
    base["status"] = "running".into();
    with_series(&base, &gev_series(7200, 1), &file);
    let (code, text, err) = worst(dir.path(), &[file.to_str().unwrap()]);
    assert_eq!(code, 1, "{text}{err}");
    assert!(
        err.contains("the run cannot be judged: the run did not finish"),
        "{err}"
    );
}

/// Issue #43: an estimate within its budget and one over it, in every form `rtlab worst
/// --help` lists: each form shows the verdict its exit status stands for (the text's mark, the
/// JSON's budget check, the page's mark, JUnit's failures, LAVA's `worst-all` case, the
/// OpenMetrics `rtlab_worst_passed` gauge).
#[test]
fn every_form_shows_the_verdict_of_the_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    let base = result_file(dir.path());
    let file = dir.path().join("gev.json");
    with_series(&base, &gev_series(3600, 4), &file);
    let f = file.to_str().unwrap();
    let help = common::run_ok(&["worst", "--help"]);
    let formats: Vec<&str> = help
        .split("Possible values:")
        .nth(1)
        .expect("the formats listed in worst --help")
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .map(|l| l.split(':').next().unwrap().trim())
        .collect();
    assert!(formats.len() >= 7, "{formats:?}");
    // 40us: rarely exceeded, within the risk target; 27us: inside the observed range.
    for (budget, passed) in [("40us", true), ("27us", false)] {
        for format in &formats {
            let (code, out, err) = worst(dir.path(), &[f, "--format", format, "--budget", budget]);
            assert_eq!(code, if passed { 0 } else { 1 }, "{budget} {format}: {err}");
            let shown = match *format {
                "text" => !out.contains("FAIL"),
                "html" => !out.contains("<span class=\"fail\">FAIL"),
                "json" => {
                    let doc: Value = serde_json::from_str(&out).unwrap();
                    doc["groups"][0]["cpus"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .all(|c| {
                            c["verdict"]["budget_met"] != false && c["verdict"]["trusted"] == true
                        })
                }
                "junit" => out.contains("failures=\"0\""),
                "lava" => out.contains("lava-test-case worst-all --result pass"),
                "lava-results" => out.lines().any(|l| l.starts_with("worst-all pass")),
                "openmetrics" => {
                    let line = out
                        .lines()
                        .find(|l| l.starts_with("rtlab_worst_passed{cpu=\"all\"}"))
                        .unwrap_or_else(|| panic!("no verdict gauge: {out}"));
                    line.ends_with(" 1")
                }
                other => panic!("worst --format {other} has no verdict reader here"),
            };
            assert_eq!(shown, passed, "{budget} {format}: {out}");
        }
    }
}
