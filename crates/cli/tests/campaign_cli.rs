//! `rtlab campaign` end to end: bad plans and damaged states refused before anything runs;
//! a campaign killed (SIGKILL) at random moments and resumed until it finishes keeps every
//! phase exactly once, with its interrupted attempts kept as interrupted runs; a power loss
//! simulated by snapshotting the state directory and the store mid-campaign resumes from the
//! snapshot; reboots with a stand-in reboot command and a fixture root whose boot id changes;
//! status as text and JSON; the systemd unit passes `systemd-analyze verify`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use common::rtlab;

/// A small xorshift generator: the kill moments, reproducible from the printed seed.
struct Rng(u64);

impl Rng {
    fn seeded() -> Rng {
        let seed = std::env::var("RTLAB_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
                    | 1
            });
        println!("seed {seed} (RTLAB_TEST_SEED={seed} repeats this run)");
        Rng(seed)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

const PLAN: &str = r#"
name = "kill-test"
cpus = "0"
budget = "1ms"

[[phase]]
name = "Van-#1"
duration = "1s"

[[phase]]
name = "Van-#2-busy"
duration = "1s"
load = "cpu:10%"

[[phase]]
name = "RT-#3"
duration = "2s"
repeat = 2
"#;

/// The labels every finished campaign of [`PLAN`] has one complete run for.
const LABELS: [&str; 4] = ["Van-#1", "Van-#2-busy", "RT-#3#1", "RT-#3#2"];

fn write_plan(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn campaign(args: &[&str], db: &Path) -> Command {
    let mut cmd = rtlab();
    cmd.env("RTLAB_DB", db).arg("campaign").args(args);
    cmd
}

/// `campaign ARGS PLAN --state STATE` started in the background, its output discarded.
fn silent(args: &[&str], db: &Path, plan: &Path, state: &Path) -> std::process::Child {
    campaign(args, db)
        .arg(plan)
        .arg("--state")
        .arg(state)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\n{}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn stored(db: &Path) -> Vec<serde_json::Value> {
    common::stored_runs(db)
}

fn status_json(state: &Path) -> serde_json::Value {
    let out = rtlab()
        .args(["campaign", "status", "--format", "json", "--state"])
        .arg(state)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every label has exactly one complete run in the store, every interrupted attempt the
/// state records is stored as an interrupted run with its step's label, and nothing else is
/// stored.
fn check_exactly_once(state: &Path, db: &Path) {
    let runs = stored(db);
    let status = status_json(state);
    assert_eq!(status["schema"], "rtlab.campaign/1");
    assert_eq!(status["status"], "done", "{status:#}");
    for (label, step) in LABELS.iter().zip(status["steps"].as_array().unwrap()) {
        let complete = runs
            .iter()
            .filter(|r| r["label"] == *label && r["status"] == "complete")
            .count();
        // A step whose interrupted attempts measured its whole duration between them (killed
        // after its last checkpoint, before its final write) is done without a complete run.
        let covered = step["measured_ns"].as_u64() >= step["duration_ns"].as_u64();
        assert!(
            complete == 1 || (complete == 0 && covered),
            "{label}: {complete} complete runs: {runs:#?}"
        );
    }
    let mut recorded: Vec<String> = status["steps"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["attempts"].as_array().unwrap().clone())
        .filter_map(|a| a["run_id"].as_str().map(str::to_string))
        .collect();
    recorded.sort();
    let mut ids: Vec<String> = runs
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    assert_eq!(
        recorded, ids,
        "the store holds what the state records, once"
    );
    for r in &runs {
        assert!(LABELS.contains(&r["label"].as_str().unwrap()), "{r}");
        assert_eq!(r["session"], status["session"]);
        assert!(
            r["status"] == "complete" || r["status"] == "interrupted",
            "{r}"
        );
    }
}

/// No process of this campaign (a measure writing into `state`) is left.
fn none_left(state: &Path) {
    let needle = state.to_string_lossy().into_owned();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left: Vec<String> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .filter(|c| c.contains(&needle))
            .collect();
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "left running: {left:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits for `child` up to `limit`; its exit code, or none if it was still running (then it
/// is killed with SIGKILL).
fn kill_after(child: &mut Child, after: Duration) -> Option<i32> {
    let until = Instant::now() + after;
    while Instant::now() < until {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    None
}

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

/// Stops the campaign `pid` and its children (SIGSTOP) so that nothing writes, runs `f`,
/// then kills them all (SIGKILL): what `f` saw is what a power cut at that moment leaves.
fn frozen(pid: u32, f: impl FnOnce()) {
    let children = |pid: u32| -> Vec<u32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/stat"))
                    .ok()
                    .and_then(|s| {
                        s.rsplit_once(") ")
                            .and_then(|(_, rest)| rest.split(' ').nth(1)?.parse::<u32>().ok())
                    })
                    == Some(pid)
            })
            .collect()
    };
    // SAFETY: signals to processes this test started.
    unsafe { libc::kill(pid as i32, libc::SIGSTOP) };
    let kids = children(pid);
    for k in &kids {
        // SAFETY: as above.
        unsafe { libc::kill(*k as i32, libc::SIGSTOP) };
    }
    f();
    for k in kids.iter().chain([&pid]) {
        // SAFETY: as above.
        unsafe { libc::kill(*k as i32, libc::SIGKILL) };
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    let Ok(entries) = std::fs::read_dir(from) else {
        return; // not made yet
    };
    for e in entries.flatten() {
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
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

/// A copy of a fixture tree whose boot id the stand-in reboot command changes.
fn bootable_root(dir: &Path) -> PathBuf {
    let fixture = testkit::fixture_root("vm-x86_64-2cpu").base().to_path_buf();
    let root = dir.join("root");
    let status = Command::new("cp")
        .arg("-a")
        .arg(&fixture)
        .arg(&root)
        .status()
        .unwrap();
    assert!(status.success());
    let random = root.join("proc/sys/kernel/random");
    std::fs::create_dir_all(&random).unwrap();
    std::fs::write(random.join("boot_id"), "boot-0\n").unwrap();
    root
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
    let text = std::fs::read_to_string(&unit).unwrap();
    let exe = assert_cmd::cargo::cargo_bin("rtlab");
    let instance = dir.path().join("rtlab-campaign@lab.service");
    std::fs::write(
        &instance,
        text.replace("/usr/bin/rtlab", &exe.to_string_lossy()),
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
        text_of(&out)
    );
    assert!(
        text.contains(
            "ExecStart=/usr/bin/rtlab campaign resume --state /var/lib/rtlab/campaigns/%i"
        )
    );
}

fn text_of(out: &Output) -> String {
    text(out)
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
