//! `rtlab campaign` end to end: bad plans and damaged states refused before anything runs;
//! reboots with a stand-in reboot command and a fixture root whose boot id changes; status as
//! text and JSON, also of an attempt still measuring or whose process is gone; the systemd unit
//! passes `systemd-analyze verify`. Kills and power cuts: `campaign_kill_cli.rs`.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::campaign::*;
use common::rtlab;

#[test]
fn bad_plans_and_damaged_states_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let good = "[[phase]]\nname = \"a\"\nduration = \"1s\"\n";
    let cases = [
        (
            "[[phase]]\nname = \"a\"\nduration = \"1s\"\nloda = \"cpu\"\n",
            "line 4",
        ),
        (
            "[[phase]]\nname = \"a\"\nduration = \"ten minutes\"\n",
            "duration",
        ),
        (
            "[[phase]]\nname = \"a\"\nduration = \"1s\"\nload = \"cpu:300%\"\n",
            "load",
        ),
        ("", "no phase"),
        (
            &"[[phase]]\nname = \"a\"\nduration = \"1s\"\n".repeat(300),
            "more than the 256",
        ),
    ];
    for (i, (plan, expect)) in cases.iter().enumerate() {
        let p = dir.path().join(format!("bad-{i}.toml"));
        std::fs::write(&p, plan).unwrap();
        let state = dir.path().join(format!("bad-{i}"));
        let out = run(campaign(&["--fake-clock", "5us"], &db)
            .arg(&p)
            .arg("--state")
            .arg(&state));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(expect), "{stderr}");
        assert!(!state.join("state.json").exists());
    }
    assert!(!db.exists(), "nothing was stored");

    // A state directory started with another plan.
    let state = dir.path().join("st");
    let p = write_plan(dir.path(), good);
    let out = run(campaign(&["--quiet", "--fake-clock", "5us"], &db)
        .arg(&p)
        .arg("--state")
        .arg(&state));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let other = dir.path().join("other.toml");
    std::fs::write(&other, good.replace("1s", "2s")).unwrap();
    let out = run(campaign(&["--fake-clock", "5us"], &db)
        .arg(&other)
        .arg("--state")
        .arg(&state));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("another plan"));

    // A state file that is garbage or cut short.
    let full = std::fs::read_to_string(state.join("state.json")).unwrap();
    for damaged in ["garbage".to_string(), full[..full.len() / 2].to_string()] {
        std::fs::write(state.join("state.json"), damaged).unwrap();
        for args in [vec!["resume", "--state"], vec!["status", "--state"]] {
            let out = run(campaign(&args, &db).arg(&state));
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{}", text(&out));
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
            assert!(stderr.contains("damaged"), "{stderr}");
        }
    }
    assert_eq!(stored(&db).len(), 1);

    // No campaign in the directory.
    let out = run(campaign(&["resume", "--state"], &db).arg(dir.path().join("none")));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn reboots_are_asked_recorded_and_resumed_as_the_unit_would() {
    let dir = tempfile::tempdir().unwrap();
    let root = bootable_root(dir.path());
    let db = dir.path().join("runs.db");
    // The stand-in reboot: a new boot id, and the campaign dies as in a reboot.
    let reboot = dir.path().join("reboot.sh");
    std::fs::write(
        &reboot,
        format!(
            "#!/bin/sh\nn=$(cat {c} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {c}\necho boot-$n > {b}\nkill -9 $RTLAB_CAMPAIGN_PID\n",
            c = dir.path().join("count").display(),
            b = root.join("proc/sys/kernel/random/boot_id").display()
        ),
    )
    .unwrap();
    let plan = write_plan(
        dir.path(),
        &format!(
            "name = \"reboots\"\nreboot_command = \"sh {}\"\n\n[[phase]]\nname = \"before\"\nduration = \"1s\"\nreboot_after = true\n\n[[phase]]\nname = \"reboot-test\"\nreboots = 2\naudit = true\n\n[[phase]]\nname = \"after\"\nduration = \"1s\"\n",
            reboot.display()
        ),
    );
    let state = dir.path().join("state");
    let mut cmd = rtlab();
    cmd.env("RTLAB_DB", &db)
        .arg("--root")
        .arg(&root)
        .args(["campaign", "--quiet", "--fake-clock", "5us"])
        .arg(&plan)
        .arg("--state")
        .arg(&state);
    let out = run(&mut cmd);
    assert_eq!(
        out.status.code(),
        None,
        "killed by the reboot: {}",
        text(&out)
    );
    let status = status_json(&state);
    assert_eq!(status["steps_done"], 1, "{status:#}");
    assert!(status["reboot"].is_object(), "{status:#}");
    let mut last = None;
    for _ in 0..6 {
        let mut cmd = rtlab();
        cmd.env("RTLAB_DB", &db)
            .arg("--root")
            .arg(&root)
            .args(["campaign", "resume", "--quiet", "--state"])
            .arg(&state);
        let out = run(&mut cmd);
        last = Some(text(&out));
        if out.status.code() == Some(0) {
            break;
        }
    }
    let status = status_json(&state);
    assert_eq!(status["status"], "done", "{}\n{status:#}", last.unwrap());
    let boots: Vec<&str> = status["boots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["boot_id"].as_str().unwrap())
        .collect();
    assert_eq!(boots, ["boot-0", "boot-1", "boot-2", "boot-3"]);
    let test = &status["steps"][1];
    assert_eq!(test["checks"].as_array().unwrap().len(), 3, "{test:#}");
    for check in test["checks"].as_array().unwrap() {
        assert_eq!(check["problem"], serde_json::Value::Null, "{check}");
        assert_eq!(check["state_ok"], true);
        assert_eq!(check["store_ok"], true);
    }
    assert_eq!(stored(&db).len(), 2);
}

#[test]
fn status_says_where_the_campaign_is() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let plan = write_plan(
        dir.path(),
        "name = \"st\"\n[[phase]]\nname = \"one\"\nduration = \"1s\"\n[[phase]]\nname = \"two\"\nduration = \"2s\"\nbudget = \"10us\"\n",
    );
    let state = dir.path().join("state");
    // Started, then stopped at once (SIGKILL before it measured anything much).
    let mut child = campaign(&["--quiet", "--fake-clock", "5us,7us,20us"], &db)
        .arg(&plan)
        .arg("--state")
        .arg(&state)
        .spawn()
        .unwrap();
    let _ = kill_after(&mut child, Duration::from_millis(0));
    let deadline = Instant::now() + Duration::from_secs(20);
    // The state exists once `campaign` wrote it; a kill before that is started again.
    while !state.join("state.json").exists() {
        assert!(Instant::now() < deadline);
        let out = run(campaign(&["--quiet", "--fake-clock", "5us,7us,20us"], &db)
            .arg(&plan)
            .arg("--state")
            .arg(&state));
        assert!(matches!(out.status.code(), Some(1)), "{}", text(&out));
    }
    let out = run(campaign(&["resume", "--quiet", "--state"], &db).arg(&state));
    assert_eq!(
        out.status.code(),
        Some(1),
        "two is over its 10us budget: {}",
        text(&out)
    );
    let out = run(campaign(&["status", "--state"], &db).arg(&state));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("2 of 2 steps done"), "{stdout}");
    assert!(stdout.contains("done, pass, max 20.0 us"), "{stdout}");
    assert!(stdout.contains("done, fail"), "{stdout}");
    let doc = status_json(&state);
    assert_eq!(doc["steps_total"], 2);
    assert_eq!(doc["steps"][1]["verdict"], "fail");
    assert_eq!(doc["steps"][1]["budget_ns"], 10_000);
    assert_eq!(doc["steps"][0]["max_ns"], 20_000);
    assert_eq!(doc["steps"][0]["remaining_ns"], 0);

    let html = dir.path().join("campaign.html");
    let out = run(campaign(&["report", "--state"], &db)
        .arg(&state)
        .arg("-o")
        .arg(&html));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<svg"), "the phases' plots");
    for label in [
        "one",
        "two",
        "step 1 of campaign st",
        "step 2 of campaign st",
    ] {
        assert!(page.contains(label), "{label}");
    }
}

#[test]
fn the_systemd_unit_verifies() {
    let analyze = Path::new("/usr/bin/systemd-analyze");
    if !analyze.exists() {
        common::live_skip("no systemd-analyze here");
        return;
    }
    let unit = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../packaging/systemd/rtlab-campaign@.service");
    let dir = tempfile::tempdir().unwrap();
    // An instance of the template, as `systemctl enable rtlab-campaign@lab.service` makes it;
    // its ExecStart must exist, so it names the binary under test.
    let template = std::fs::read_to_string(&unit).unwrap();
    let exe = assert_cmd::cargo::cargo_bin("rtlab");
    let instance = dir.path().join("rtlab-campaign@lab.service");
    std::fs::write(
        &instance,
        template.replace("/usr/bin/rtlab", &exe.to_string_lossy()),
    )
    .unwrap();
    let out = Command::new(analyze)
        .arg("verify")
        .arg(&instance)
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{}",
        text(&out)
    );
    assert!(
        template.contains(
            "ExecStart=/usr/bin/rtlab campaign resume --state /var/lib/rtlab/campaigns/%i"
        )
    );
}

/// Issue #45: `campaign status` reads what the open attempt's checkpoints measured (the state
/// file records an attempt's time only once it ends), during the run and after a SIGKILL, and
/// says when no process is left (it said "running, attempt 1, measured 0s, 10s left").
#[test]
fn status_tells_what_an_open_attempt_measured_and_whether_it_still_runs() {
    let _guard = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(
        dir.path(),
        "name = \"status-test\"\ncpus = \"0\"\nbudget = \"10ms\"\n\n[[phase]]\nname = \"long\"\nduration = \"20s\"\n",
    );
    let state = dir.path().join("state");
    let db = dir.path().join("runs.db");
    let mut child = silent(&["--quiet"], &db, &plan, &state);
    let measured = |doc: &serde_json::Value| doc["steps"][0]["measured_ns"].as_u64().unwrap();
    let until = std::time::Instant::now() + Duration::from_secs(15);
    let mut doc = serde_json::Value::Null;
    while std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(500));
        if state.join("state.json").exists() {
            doc = status_json(&state);
            if measured(&doc) >= 2_000_000_000 {
                break;
            }
        }
    }
    assert!(measured(&doc) >= 2_000_000_000, "{doc:#}");
    assert_eq!(
        doc["steps"][0]["stopped"],
        serde_json::Value::Null,
        "{doc:#}"
    );
    let left = doc["steps"][0]["remaining_ns"].as_u64().unwrap();
    assert_eq!(left, 20_000_000_000 - measured(&doc));
    // A power cut: the campaign and its measuring child gone at once.
    frozen(child.id(), || {});
    let _ = child.wait();
    let out = rtlab()
        .args(["campaign", "status", "--state"])
        .arg(&state)
        .output()
        .unwrap();
    let said = text(&out);
    assert!(said.contains("stopped (no process"), "{said}");
    assert!(!said.contains("measured 0s"), "{said}");
    let doc = status_json(&state);
    assert_eq!(doc["steps"][0]["stopped"], true, "{doc:#}");
    assert!(measured(&doc) >= 2_000_000_000, "{doc:#}");
}
