//! `rtlab run --tuned` end to end: bad input changes nothing (one line, exit 2, no journal);
//! as root on this machine, the last CPU measured before and after tuning with very short
//! phases — the tuned phases measured on the RT CPU with their load on the housekeeping CPUs —
//! and every file the plan touched back afterwards, also when SIGTERM stops a tuned phase.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{is_root, last_cpu, plan_snapshot, rtlab, serial, thread_sched, wait_for};

/// The cpuset hierarchy `tune apply` uses here: v1's `cpuset` mount, else a cgroup v2 root
/// whose controllers include cpuset; `None` when neither exists.
fn cpuset_dir() -> Option<PathBuf> {
    let v1 = Path::new("/sys/fs/cgroup/cpuset");
    if v1.join("cpuset.cpus").exists() {
        return Some(v1.to_path_buf());
    }
    ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
        .into_iter()
        .map(PathBuf::from)
        .find(|d| {
            std::fs::read_to_string(d.join("cgroup.controllers"))
                .is_ok_and(|c| c.split_whitespace().any(|c| c == "cpuset"))
        })
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/roots")
        .join(name)
}

/// rtlab's cgroups in the cpuset hierarchy (none when there is none).
fn rtlab_cpusets() -> Vec<String> {
    let Some(dir) = cpuset_dir() else {
        return Vec::new();
    };
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("rtlab-rt") || n.starts_with("rtlab-housekeeping"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn bad_input_is_one_line_exit_2_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("root");
    testkit::copy_tree(&fixture("x86-8cpu-rt-untuned"), &copy);
    let journal = dir.path().join("journal.jsonl");
    let unreverted = dir.path().join("unreverted.jsonl");
    let entry = r#"{"step":"mkdir","path":"/sys/fs/cgroup/cpuset/rtlab-rt"}"#;
    std::fs::write(&unreverted, format!("{entry}\n")).unwrap();
    let j = journal.to_str().unwrap();
    let cases: [(Vec<&str>, &str); 6] = [
        (vec!["--tuned"], "--rt-cpus"),
        (vec!["--rt-cpus", "1"], "--tuned"),
        (
            vec!["--tuned", "--rt-cpus", "all", "--journal", j],
            "no housekeeping CPU",
        ),
        (
            vec![
                "--tuned",
                "--rt-cpus",
                "2-7",
                "--cpus",
                "1-2",
                "--journal",
                j,
            ],
            "not an RT CPU",
        ),
        (
            vec!["--tuned", "--rt-cpus", "2-7", "--journal"],
            "has not been reverted",
        ),
        (
            vec![
                "--tuned",
                "--rt-cpus",
                "2-7",
                "--journal",
                j,
                "--duration",
                "1",
            ],
            "--duration",
        ),
    ];
    let before = testkit::tree_contents(&copy);
    let cpusets = rtlab_cpusets();
    for (args, says) in &cases {
        let mut cmd = rtlab();
        cmd.arg("--root").arg(&copy).arg("run").args(args);
        if args.last() == Some(&"--journal") {
            cmd.arg(&unreverted);
        }
        let out = cmd.arg("--db").arg(dir.path().join("db")).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?} printed results");
    }
    assert_eq!(testkit::tree_contents(&copy), before, "the tree changed");
    assert!(!journal.exists(), "a journal was made for bad input");
    assert_eq!(
        std::fs::read_to_string(&unreverted).unwrap(),
        format!("{entry}\n"),
        "the unreverted journal was touched"
    );
    assert!(!dir.path().join("db").exists(), "nothing stored");
    assert_eq!(rtlab_cpusets(), cpusets, "cpusets changed on this machine");
}

/// Whether this machine can run the live tuned evaluation; says why not in the output.
fn live_ready() -> bool {
    let why = if !is_root() {
        "not root: --tuned changes the machine"
    } else if last_cpu().is_none() {
        "one CPU: nothing to split"
    } else if cpuset_dir().is_none() {
        "no cpuset controller here (neither a v1 cpuset mount nor cpuset in a v2 root's cgroup.controllers)"
    } else {
        return true;
    };
    common::live_skip(why);
    false
}

/// What a live test starts from: the last CPU, its plan, the plan's files now, a store and a
/// journal in a temporary directory.
struct Live {
    rt: String,
    plan: serde_json::Value,
    before: Vec<(String, Option<String>)>,
    dir: tempfile::TempDir,
    db: PathBuf,
    journal: PathBuf,
}

impl Live {
    fn new() -> Live {
        let rt = last_cpu().unwrap();
        let plan = plan(&rt);
        let before = plan_snapshot(&plan);
        let dir = tempfile::tempdir().unwrap();
        let (db, journal) = (
            dir.path().join("rtlab.db"),
            dir.path().join("journal.jsonl"),
        );
        Live {
            rt,
            plan,
            before,
            dir,
            db,
            journal,
        }
    }
}

/// The plan this machine gets for `rt`, as JSON.
fn plan(rt: &str) -> serde_json::Value {
    let out = rtlab()
        .args(["tune", "plan", "--rt-cpus", rt, "--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every stored run of the store at `db`, newest first, as full results.
fn stored(db: &Path) -> Vec<serde_json::Value> {
    let out = rtlab()
        .args(["runs", "--format", "json", "--db"])
        .arg(db)
        .output()
        .unwrap();
    assert!(out.status.success());
    let runs: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    runs.iter()
        .map(|r| {
            let id = r["id"].as_str().unwrap();
            let out = rtlab()
                .args(["show", id, "--format", "json", "--db"])
                .arg(db)
                .output()
                .unwrap();
            assert!(out.status.success());
            let mut run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            run["stored_label"] = r["label"].clone();
            run
        })
        .collect()
}

/// The machine is as it was: the plan's files, no rtlab cpuset, the journal closed. `said` is
/// what rtlab printed, shown when it is not.
fn assert_reverted(
    before: &[(String, Option<String>)],
    plan: &serde_json::Value,
    journal: &Path,
    said: &str,
) {
    assert_eq!(
        plan_snapshot(plan),
        before,
        "a file the plan touched is not back: {said}"
    );
    assert_eq!(
        rtlab_cpusets(),
        Vec::<String>::new(),
        "cpusets left behind: {said}"
    );
    assert!(!journal.exists(), "the journal is still open");
    assert!(
        journal.with_extension("jsonl.reverted").exists(),
        "the journal was not closed"
    );
}

#[test]
fn a_tuned_evaluation_as_root_measures_before_and_after_and_reverts() {
    let _guard = serial();
    if !live_ready() {
        return;
    }
    let Live {
        rt,
        plan,
        before,
        dir,
        db,
        journal,
    } = Live::new();
    let html = dir.path().join("report.html");
    let out = rtlab()
        .args(["run", "--tuned", "--rt-cpus", &rt, "--duration", "300ms"])
        .args(["--warmup", "100ms", "--budget", "10s", "--quiet"])
        .args(["--irq-rule", "irq/*=fifo:61"])
        .arg("--journal")
        .arg(&journal)
        .arg("--db")
        .arg(&db)
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_reverted(&before, &plan, &journal, &stderr);
    // The rule (every IRQ thread FIFO 61 while tuned) is taken back with the rest.
    let journal_lines = std::fs::read_to_string(journal.with_extension("jsonl.reverted")).unwrap();
    for line in journal_lines
        .lines()
        .filter(|l| l.contains(r#""step":"policy""#))
    {
        let e: serde_json::Value = serde_json::from_str(line).unwrap();
        let now = thread_sched(&format!("/proc/{}", e["tid"]));
        assert_eq!(e["original"].as_str(), now.as_deref(), "not back: {line}");
    }
    assert!(stderr.contains("tuned: "), "{stderr}");
    assert!(stderr.contains("reverted: "), "{stderr}");
    assert!(stdout.contains("rtlab compare: 6 runs"), "{stdout}");
    assert!(stdout.contains("what tuning bought"), "{stdout}");

    let runs = stored(&db);
    let labels: Vec<&str> = runs
        .iter()
        .rev()
        .map(|r| r["stored_label"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "idle",
            "cpu:60%",
            "full load",
            "idle, tuned",
            "cpu:60%, tuned",
            "full load, tuned"
        ]
    );
    let rt_cpu: u64 = rt.parse().unwrap();
    for run in &runs {
        let label = run["stored_label"].as_str().unwrap();
        let cpus: Vec<u64> = run["cpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["cpu"].as_u64().unwrap())
            .collect();
        assert_eq!(cpus, [rt_cpu], "{label} measured CPUs {cpus:?}");
        let Some(load) = run.get("load").filter(|l| !l.is_null()) else {
            continue;
        };
        if !label.ends_with(", tuned") {
            continue;
        }
        // After tuning, the load ran in the housekeeping cpuset, on housekeeping CPUs only.
        let cgroup = load["cgroup"].as_str().unwrap_or_default();
        assert!(cgroup.ends_with("/rtlab-housekeeping"), "{label}: {load}");
        for g in load["generators"].as_array().unwrap() {
            let on: model_cpus::Cpus = g["cpus"].as_str().unwrap().parse().unwrap();
            assert!(!on.0.contains(&rt_cpu), "{label}: load on the RT CPU: {g}");
        }
    }
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("full load, tuned"),
        "report lacks the tuned phases"
    );
}

#[test]
fn sigterm_during_a_tuned_phase_still_reverts() {
    let _guard = serial();
    if !live_ready() {
        return;
    }
    let Live {
        rt,
        plan,
        before,
        dir: _dir,
        db,
        journal,
    } = Live::new();
    let mut child = rtlab()
        .args(["run", "--tuned", "--rt-cpus", &rt, "--duration", "1s"])
        .args(["--warmup", "100ms", "--quiet", "--no-report"])
        .arg("--journal")
        .arg(&journal)
        .arg("--db")
        .arg(&db)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A tuned phase runs once a process is in the RT cpuset: then stop the evaluation.
    let procs = cpuset_dir().unwrap().join("rtlab-rt/cgroup.procs");
    let start = Instant::now();
    while !std::fs::read_to_string(&procs).is_ok_and(|p| !p.trim().is_empty()) {
        assert!(
            start.elapsed() < Duration::from_secs(60) && child.try_wait().unwrap().is_none(),
            "no tuned phase started"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: kill takes plain integers; the pid is our child's.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let status = wait_for(&mut child, Duration::from_secs(60));
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("SIGTERM"), "{stderr}");
    assert_reverted(&before, &plan, &journal, &stderr);
    let labels: Vec<String> = stored(&db)
        .iter()
        .rev()
        .map(|r| r["stored_label"].as_str().unwrap().to_string())
        .collect();
    assert!(labels.len() >= 3 && labels.len() < 6, "{labels:?}");
    assert_eq!(labels[..3], ["idle", "cpu:60%", "full load"]);
}

/// CPU lists in results (`0-1,3`), for the load placement check.
mod model_cpus {
    /// The CPUs of a list.
    pub(crate) struct Cpus(pub(crate) Vec<u64>);

    impl std::str::FromStr for Cpus {
        type Err = String;
        fn from_str(s: &str) -> Result<Cpus, String> {
            let mut out = Vec::new();
            for part in s.split(',').filter(|p| !p.is_empty()) {
                let (a, b) = part.split_once('-').unwrap_or((part, part));
                let (a, b): (u64, u64) = (
                    a.trim().parse().map_err(|_| s.to_string())?,
                    b.trim().parse().map_err(|_| s.to_string())?,
                );
                out.extend(a..=b);
            }
            Ok(Cpus(out))
        }
    }
}
