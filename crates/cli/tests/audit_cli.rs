//! `rtlab audit`, `rtlab audit capture` and `rtlab kconfig diff` end to end on the fixture
//! trees: output forms, exit statuses, bad input, and the audit summary in measurement results.

mod common;

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use model::audit::{AuditReport, Status};
use model::measure::MeasureRun;
use predicates::prelude::*;

fn tree(name: &str) -> PathBuf {
    testkit::fixture_root(name).base().to_path_buf()
}

fn rtlab() -> Command {
    common::rtlab_checked()
}

fn audit_json(root: &Path, args: &[&str]) -> (AuditReport, std::process::Output) {
    let out = rtlab()
        .arg("--root")
        .arg(root)
        .args(["audit", "--format", "json"])
        .args(args)
        .output()
        .unwrap();
    let report: AuditReport = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}\nstderr: {}", String::from_utf8_lossy(&out.stderr)));
    (report, out)
}

#[test]
fn exit_status_follows_failures() {
    let (tuned, out) = audit_json(&tree("arm64-8cpu-rt-tuned"), &[]);
    assert_eq!(tuned.counts.fail, 0);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(tuned.schema, "rtlab.audit/2");

    let (untuned, out) = audit_json(&tree("x86-8cpu-rt-untuned"), &[]);
    assert!(untuned.counts.fail > 0);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn selections_profiles_and_rt_cpus_shape_the_audit() {
    let root = tree("x86-8cpu-rt-untuned");
    let (r, _) = audit_json(
        &root,
        &["--only", "kconfig,cmdline.rcu*", "--skip", "kconfig.hz"],
    );
    assert!(
        r.findings
            .iter()
            .all(|f| f.id.starts_with("kconfig.") || f.id.starts_with("cmdline.rcu"))
    );
    assert!(r.findings.iter().any(|f| f.id == "cmdline.rcu_nocbs"));
    assert!(!r.findings.iter().any(|f| f.id == "kconfig.hz"));

    let (r, _) = audit_json(&root, &["--rt-cpus", "2-3", "--only", "irq.irqbalance"]);
    assert_eq!(r.rt_cpus.source, "--rt-cpus");
    assert_eq!(r.findings[0].status, Status::Fail);

    let (prod, _) = audit_json(&root, &["--only", "kconfig.debug"]);
    let (debug, _) = audit_json(&root, &["--only", "kconfig.debug", "--profile", "debug"]);
    assert_eq!(prod.profile.as_str(), "production");
    assert_eq!(debug.profile.as_str(), "debug");
    assert_ne!(prod.findings[0].summary, debug.findings[0].summary);
}

#[test]
fn table_and_markdown_forms() {
    rtlab()
        .arg("--root")
        .arg(tree("rpi4-4cpu-isolcpu3"))
        .arg("audit")
        .assert()
        .code(1)
        .stdout(predicate::str::contains("Runtime placement"))
        .stdout(predicate::str::contains("FAIL  irq.effective_affinity"))
        .stdout(predicate::str::contains("fix: "))
        .stdout(
            predicate::str::is_match(r"\d+ fail, \d+ warn.*\d+ pass.*checks in \d+ ms").unwrap(),
        );
    rtlab()
        .arg("--root")
        .arg(tree("rpi4-4cpu-isolcpu3"))
        .args(["audit", "--format", "markdown"])
        .assert()
        .code(1)
        .stdout(predicate::str::starts_with("# Real-time readiness audit"))
        .stdout(predicate::str::contains("| status | check | finding |"))
        .stdout(predicate::str::contains("```sh"));
    let out = rtlab().args(["audit", "--list"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.lines().count() >= 40, "{text}");
    assert!(text.contains("kernel.preempt_rt"));
}

#[test]
fn saved_logs_and_configs_are_judged() {
    let root = tree("arm64-8cpu-rt-tuned");
    let dmesg = testkit::fixtures_dir().join("../dmesg/lkp_soft_lockup_interleaved.log");
    let (r, out) = audit_json(
        &root,
        &["--only", "log", "--dmesg", dmesg.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1));
    let f = r
        .findings
        .iter()
        .find(|f| f.id == "log.soft_lockup")
        .unwrap();
    assert_eq!(f.status, Status::Fail);
    assert!(
        f.evidence[0]
            .source
            .ends_with("lkp_soft_lockup_interleaved.log")
    );

    let kconfig = testkit::fixtures_dir().join("../kconfig/config-6.1.0-56-amd64");
    let (r, _) = audit_json(
        &root,
        &[
            "--only",
            "kconfig.preempt_rt",
            "--kconfig",
            kconfig.to_str().unwrap(),
        ],
    );
    assert_eq!(r.findings[0].status, Status::Fail);
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let root = tree("arm64-8cpu-rt-tuned");
    for (args, needle) in [
        (vec!["audit", "--only", "nope"], "'nope'"),
        (
            vec!["audit", "--skip", "kconfig.nothing"],
            "'kconfig.nothing'",
        ),
        (
            vec!["audit", "--kconfig", "/nonexistent/config"],
            "--kconfig /nonexistent/config",
        ),
        (
            vec!["audit", "--dmesg", "/nonexistent/log"],
            "--dmesg /nonexistent/log",
        ),
        (vec!["audit", "--rt-cpus", "2-x"], "'2-x'"),
        (
            vec!["audit", "--rt-cpus", "6-9"],
            "CPU 8 does not exist on this machine (CPUs: 0-7)",
        ),
        (vec!["audit", "--profile", "fast"], "fast"),
        (
            vec!["kconfig", "diff", "/nonexistent/a", "/nonexistent/b"],
            "/nonexistent/a",
        ),
    ] {
        let out = rtlab()
            .arg("--root")
            .arg(&root)
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn a_capture_replays_the_same_findings() {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("pi");
    let source = tree("rpi4-4cpu-isolcpu3");
    rtlab()
        .arg("--root")
        .arg(&source)
        .args(["audit", "capture"])
        .arg(&dest)
        .assert()
        .success()
        .stderr(predicate::str::contains("captured"));
    assert!(dest.join("MANIFEST.toml").is_file());
    let (a, _) = audit_json(&source, &[]);
    let (b, _) = audit_json(&dest, &[]);
    let view = |r: &AuditReport| {
        r.findings
            .iter()
            .map(|f| (f.id.clone(), f.status, f.summary.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(view(&a), view(&b));
    // A second capture into the same place is refused, leaving it as it was.
    rtlab()
        .arg("--root")
        .arg(&source)
        .args(["audit", "capture"])
        .arg(&dest)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not empty"));
}

#[test]
fn kconfig_diff_lists_the_rt_changes_first() {
    let k = testkit::fixtures_dir().join("../kconfig");
    let out = rtlab()
        .args(["kconfig", "diff"])
        .arg(k.join("config-6.1.0-56-amd64"))
        .arg(k.join("config-6.1.0-50-rt-arm64"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let first = text.lines().nth(3).unwrap();
    assert!(
        first.starts_with("critical") && first.contains("voluntary -> rt"),
        "{text}"
    );
    assert!(text.contains("other options changed"));
    assert!(
        text.ends_with(
            "warning: the configs are for different architectures (x86 -> arm64): options that \
             exist on one only show as set or unset, so compare configs of one architecture\n"
        ),
        "{text}"
    );

    let out = rtlab()
        .args(["kconfig", "diff", "--format", "json"])
        .arg(k.join("config-6.1.0-56-amd64"))
        .arg(k.join("config-6.1.0-50-rt-arm64"))
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema"], "rtlab.kconfig-diff/1");
    assert!(v["changes"].as_array().unwrap().len() >= 5);
    assert!(v["other_changed"].as_u64().unwrap() > 100);

    // A file that is not a config is refused.
    let out = rtlab()
        .args(["kconfig", "diff"])
        .arg(k.join("README.md"))
        .arg(k.join("config-6.1.0-50-rt-arm64"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn measurement_results_carry_the_audit_summary() {
    let out = rtlab()
        .arg("--root")
        .arg(tree("x86-8cpu-rt-untuned"))
        .args([
            "measure",
            "--quiet",
            "--format",
            "json",
            "--fake-clock",
            "5us",
            "--cycles",
            "10",
            "--cpus",
            "0",
        ])
        .output()
        .unwrap();
    let run = MeasureRun::from_json(&String::from_utf8_lossy(&out.stdout))
        .unwrap_or_else(|e| panic!("{e}\nstderr: {}", String::from_utf8_lossy(&out.stderr)));
    let audit = run.audit.expect("audit summary");
    assert_eq!(audit.schema, "rtlab.audit/2");
    assert!(audit.counts.fail > 0);
    assert_eq!(audit.top[0].status, Status::Fail);
    assert!(audit.top.len() <= 10);
}
