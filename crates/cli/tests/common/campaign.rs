//! What the campaign tests share: a kill-test plan and the labels it stores, running
//! `rtlab campaign` (in the foreground or silent in the background), reading its status and
//! store, killing it at a moment (SIGKILL, or a power cut: everything stopped, then killed),
//! and a fixture root whose boot id a stand-in reboot changes.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

/// A small xorshift generator: the kill moments, reproducible from the printed seed.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn seeded() -> Rng {
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

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

pub(crate) const PLAN: &str = r#"
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
pub(crate) const LABELS: [&str; 4] = ["Van-#1", "Van-#2-busy", "RT-#3#1", "RT-#3#2"];

pub(crate) fn write_plan(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    path
}

pub(crate) fn campaign(args: &[&str], db: &Path) -> Command {
    let mut cmd = super::rtlab();
    cmd.env("RTLAB_DB", db).arg("campaign").args(args);
    cmd
}

/// `campaign ARGS PLAN --state STATE` started in the background, its output discarded.
pub(crate) fn silent(args: &[&str], db: &Path, plan: &Path, state: &Path) -> std::process::Child {
    campaign(args, db)
        .arg(plan)
        .arg("--state")
        .arg(state)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

pub(crate) fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap()
}

pub(crate) fn text(out: &Output) -> String {
    format!(
        "exit {:?}\n{}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub(crate) fn stored(db: &Path) -> Vec<serde_json::Value> {
    super::stored_runs(db)
}

pub(crate) fn status_json(state: &Path) -> serde_json::Value {
    let out = super::rtlab()
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
pub(crate) fn check_exactly_once(state: &Path, db: &Path) {
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
pub(crate) fn none_left(state: &Path) {
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
pub(crate) fn kill_after(child: &mut Child, after: Duration) -> Option<i32> {
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

/// Stops the campaign `pid` and its children (SIGSTOP) so that nothing writes, runs `f`,
/// then kills them all (SIGKILL): what `f` saw is what a power cut at that moment leaves.
pub(crate) fn frozen(pid: u32, f: impl FnOnce()) {
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

pub(crate) fn copy_dir(from: &Path, to: &Path) {
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

/// A copy of a fixture tree whose boot id the stand-in reboot command changes.
pub(crate) fn bootable_root(dir: &Path) -> PathBuf {
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
