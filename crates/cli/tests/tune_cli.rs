//! `rtlab tune plan` end to end: a fixture tree's plan as JSON, a refused split (one line,
//! exit 2), this machine's plan, and the shell script's syntax (`sh -n`).

mod common;

use std::path::PathBuf;

use common::rtlab;

fn tree(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/roots")
        .join(name)
}

#[test]
fn a_fixture_tree_plans_as_json() {
    let out = rtlab()
        .arg("--root")
        .arg(tree("x86-8cpu-rt-untuned"))
        .args(["tune", "plan", "--rt-cpus", "2-7", "--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["schema"], "rtlab.tune-plan/1");
    assert_eq!(plan["housekeeping"], "0-1");
    assert!(
        plan["boot"]["line"]
            .as_str()
            .unwrap()
            .contains("rcu_nocbs=2-7")
    );
    assert!(plan["changes"].as_array().unwrap().len() > 20);
}

#[test]
fn a_split_without_housekeeping_is_one_line_and_exit_2() {
    let out = rtlab()
        .arg("--root")
        .arg(tree("x86-8cpu-rt-untuned"))
        .args(["tune", "plan", "--rt-cpus", "all"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("leaves no housekeeping CPU"), "{err}");
}

#[test]
fn this_machine_plans_and_its_script_parses() {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    if online.trim() == "0" {
        eprintln!("one CPU: nothing to split");
        return;
    }
    let last = online.trim().rsplit(['-', ',']).next().unwrap().to_string();
    let out = rtlab()
        .args(["tune", "plan", "--rt-cpus", &last, "--format", "shell"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("plan.sh");
    std::fs::write(&script, &out.stdout).unwrap();
    let check = std::process::Command::new("sh")
        .arg("-n")
        .arg(&script)
        .status()
        .unwrap();
    assert!(check.success(), "sh -n rejects the script");
    let text = rtlab()
        .args(["tune", "plan", "--rt-cpus", &last])
        .output()
        .unwrap();
    assert!(text.status.success());
    assert!(String::from_utf8_lossy(&text.stdout).starts_with("rtlab tune plan (balanced)"));
}
