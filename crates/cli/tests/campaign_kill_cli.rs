//! `rtlab campaign` killed: at random moments (SIGKILL) and resumed until it finishes, it keeps
//! every phase exactly once, with its interrupted attempts kept as interrupted runs; a power
//! loss simulated by snapshotting the state directory and the store mid-campaign resumes from
//! the snapshot; a tuned campaign killed leaves the machine as it was; a real phase killed
//! midway continues for what is left.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::campaign::*;
use common::rtlab;

#[test]
fn a_campaign_killed_at_random_moments_keeps_every_phase_exactly_once() {
    // Its load runs on CPU 0 as the other tests' do: one at a time.
    let _guard = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), PLAN);
    let state = dir.path().join("state");
    let db = dir.path().join("runs.db");
    let mut rng = Rng::seeded();
    let mut kills = 0;
    let mut finished = None;
    for round in 0..200 {
        // Until the campaign's state exists (a kill may land before it is written), the
        // campaign is started again, as its user would; after, it is resumed.
        let mut cmd = if !state.join("state.json").exists() {
            let mut c = campaign(&["--quiet", "--fake-clock", "5us,7us,40us"], &db);
            c.arg(&plan).arg("--state").arg(&state);
            c
        } else {
            let mut c = campaign(&["resume", "--quiet", "--state"], &db);
            c.arg(&state);
            c
        };
        let log = std::fs::File::create(dir.path().join("last.log")).unwrap();
        let mut child = cmd
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        // Most kills land early, where the state and the store are written.
        let after = Duration::from_millis(rng.below(if round < 40 { 400 } else { 4000 }));
        match kill_after(&mut child, after) {
            None => kills += 1,
            Some(code) => {
                finished = Some(code);
                if code != 130 {
                    break;
                }
            }
        }
        none_left(&state);
        if finished.is_some_and(|c| c != 130) {
            break;
        }
    }
    println!("{kills} kills");
    assert_eq!(
        finished,
        Some(0),
        "the campaign did not finish: {}",
        std::fs::read_to_string(dir.path().join("last.log")).unwrap()
    );
    assert!(kills > 0, "no kill landed");
    check_exactly_once(&state, &db);
    // Resumed once more, a finished campaign runs and stores nothing again.
    let before = stored(&db).len();
    let out = run(campaign(&["resume", "--quiet", "--state"], &db).arg(&state));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(stored(&db).len(), before);
}

#[test]
fn a_power_cut_mid_write_resumes_from_what_the_disk_held() {
    let _guard = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), PLAN);
    let mut rng = Rng::seeded();
    for cut in 0..4 {
        let live = dir.path().join(format!("live-{cut}"));
        let state = live.join("state");
        let db = live.join("db").join("runs.db");
        std::fs::create_dir_all(db.parent().unwrap()).unwrap();
        let mut child = silent(
            &["--quiet", "--fake-clock", "5us,7us,40us"],
            &db,
            &plan,
            &state,
        );
        std::thread::sleep(Duration::from_millis(100 + rng.below(1500)));
        let disk = dir.path().join(format!("disk-{cut}"));
        frozen(child.id(), || {
            copy_dir(&state, &disk.join("state"));
            copy_dir(db.parent().unwrap(), &disk.join("db"));
        });
        let _ = child.wait();
        // What the disk held is what is there after the power cut: the snapshot back in
        // place of everything written since (the state names the store by its path).
        for (what, at) in [
            ("state", state.clone()),
            ("db", db.parent().unwrap().to_path_buf()),
        ] {
            let _ = std::fs::remove_dir_all(&at);
            std::fs::rename(disk.join(what), &at).unwrap();
        }
        if !state.join("state.json").exists() {
            continue; // cut before the campaign had written anything: nothing to resume
        }
        let out = run(campaign(&["resume", "--quiet", "--state"], &db).arg(&state));
        assert_eq!(out.status.code(), Some(0), "cut {cut}: {}", text(&out));
        check_exactly_once(&state, &db);
    }
}

#[test]
fn a_tuned_campaign_killed_at_random_moments_leaves_the_machine_as_it_was() {
    let _guard = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let root = bootable_root(dir.path());
    let original = dir.path().join("original");
    assert!(
        Command::new("cp")
            .arg("-a")
            .arg(&root)
            .arg(&original)
            .status()
            .unwrap()
            .success()
    );
    let db = dir.path().join("runs.db");
    let plan = write_plan(
        dir.path(),
        "name = \"tuned\"\nrt_cpus = \"1\"\ncpus = \"1\"\n\n[[phase]]\nname = \"Van\"\nduration = \"1s\"\n\n[[phase]]\nname = \"RT\"\nduration = \"1s\"\nload = \"cpu:10%\"\ntuned = true\nrepeat = 2\n",
    );
    let state = dir.path().join("state");
    let mut rng = Rng::seeded();
    let mut finished = None;
    let mut kills = 0;
    for round in 0..13 {
        let mut cmd = rtlab();
        cmd.env("RTLAB_DB", &db).arg("--root").arg(&root);
        if round == 0 {
            cmd.args(["campaign", "--quiet", "--fake-clock", "5us"])
                .arg(&plan)
                .arg("--state")
                .arg(&state);
        } else {
            cmd.args(["campaign", "resume", "--quiet", "--state"])
                .arg(&state);
        }
        let log = std::fs::File::create(dir.path().join("last.log")).unwrap();
        let mut child = cmd
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        // Twelve kills at random moments, then it is left to finish.
        let after = if round < 12 { rng.below(3000) } else { 120_000 };
        match kill_after(&mut child, Duration::from_millis(after)) {
            None => kills += 1,
            Some(130) => {}
            Some(code) => {
                finished = Some(code);
                break;
            }
        }
    }
    println!("{kills} kills");
    assert_eq!(
        finished,
        Some(0),
        "{}",
        std::fs::read_to_string(dir.path().join("last.log")).unwrap()
    );
    let status = status_json(&state);
    assert_eq!(status["tuning_applied"], false);
    assert_eq!(status["steps_done"], 3);
    // Every change the tunings made was reverted: the tree is as it was (the boot id aside,
    // which is the same file).
    let out = Command::new("diff")
        .arg("-r")
        .arg(&original)
        .arg(&root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn a_real_phase_killed_midway_continues_for_what_is_left() {
    if !common::is_root() {
        common::live_skip("measuring needs root");
        return;
    }
    let _guard = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let plan = write_plan(
        dir.path(),
        "name = \"real\"\ncpus = \"0\"\nbudget = \"1s\"\n[[phase]]\nname = \"Van-#1\"\nduration = \"4s\"\n",
    );
    let state = dir.path().join("state");
    let mut child = campaign(&["--quiet"], &db)
        .arg(&plan)
        .arg("--state")
        .arg(&state)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed once the measurement has checkpointed at least once (every second).
    let deadline = Instant::now() + Duration::from_secs(30);
    let file = state.join("step-001-attempt-1.json");
    loop {
        let elapsed = std::fs::read_to_string(&file)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v["elapsed_ns"].as_u64())
            .unwrap_or(0);
        if elapsed >= 1_000_000_000 {
            break;
        }
        assert!(Instant::now() < deadline, "no checkpoint came");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let out = run(campaign(&["resume", "--quiet", "--state"], &db).arg(&state));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    none_left(&state);
    let status = status_json(&state);
    let attempts = status["steps"][0]["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{status:#}");
    assert_eq!(attempts[0]["outcome"], "interrupted");
    assert_eq!(attempts[1]["outcome"], "complete");
    let first = attempts[0]["elapsed_ns"].as_u64().unwrap();
    assert!((1_000_000_000..4_000_000_000).contains(&first), "{first}");
    // The second attempt measured what was left, not the whole phase again.
    assert_eq!(
        attempts[1]["duration_ns"].as_u64().unwrap(),
        4_000_000_000 - first
    );
    let runs = stored(&db);
    let mut statuses: Vec<&str> = runs.iter().map(|r| r["status"].as_str().unwrap()).collect();
    statuses.sort_unstable();
    assert_eq!(statuses, ["complete", "interrupted"]);
    assert!(runs.iter().all(|r| r["label"] == "Van-#1"));
}
