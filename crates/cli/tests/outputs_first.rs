//! Errors before the work: every command that writes a file, a directory or a store refuses
//! one it cannot write in under a second, with exit status 2, a line naming the path and
//! nothing on standard output, before it measures, loads, tunes, audits or plans anything.
//! (`rtlab measure -o /proc/x.json` measured its whole run and then failed to write it; `rtlab
//! run -o /proc/x.html` ran all three phases; issue #48.)
//!
//! The paths are under /proc, where no file can be created even by root (who passes every
//! permission check there). Which flags write is read from the command tree: a unit test in
//! `flags/outputs.rs` fails when a command gains one that is not in [`CASES`] nor listed there
//! as read-only.

mod common;

use std::time::{Duration, Instant};

/// A file no one can create.
const FILE: &str = "/proc/rtlab-outputs-first.out";
/// A directory no one can create.
const DIR: &str = "/proc/rtlab-outputs-first.d";

/// (command, flag, the command line with `{F}` or `{D}` for the unwritable path). Each line is
/// otherwise valid: without the bad path it would run.
const CASES: &[(&str, &str, &[&str])] = &[
    (
        "measure",
        "--output",
        &["measure", "-D", "1s", "--no-store", "-o", "{F}"],
    ),
    ("measure", "--db", &["measure", "-D", "1s", "--db", "{F}"]),
    (
        "measure",
        "--trace-dir",
        &[
            "measure",
            "-D",
            "1s",
            "--no-store",
            "--trace",
            "--trace-dir",
            "{D}",
        ],
    ),
    (
        "measure",
        "--load-dir",
        &[
            "measure",
            "-D",
            "1s",
            "--no-store",
            "--load",
            "io",
            "--load-dir",
            "{D}",
        ],
    ),
    (
        "noise",
        "--output",
        &["noise", "-D", "1s", "--no-store", "-o", "{F}"],
    ),
    ("noise", "--db", &["noise", "-D", "1s", "--db", "{F}"]),
    ("hwlat", "--output", &["hwlat", "-D", "1s", "-o", "{F}"]),
    (
        "load",
        "--output",
        &["load", "cpu", "-D", "1s", "-o", "{F}"],
    ),
    (
        "load",
        "--load-dir",
        &["load", "io", "-D", "1s", "--load-dir", "{D}"],
    ),
    ("run", "--output", &["run", "-D", "1s", "-o", "{F}"]),
    (
        "monitor",
        "--metrics",
        &["monitor", "-D", "2s", "--every", "1s", "--metrics", "{F}"],
    ),
    (
        "monitor",
        "--db",
        &["monitor", "-D", "2s", "--every", "1s", "--db", "{F}"],
    ),
    (
        "run",
        "--db",
        &["run", "-D", "1s", "--no-report", "--db", "{F}"],
    ),
    (
        "run",
        "--journal",
        &[
            "run",
            "-D",
            "1s",
            "--no-report",
            "--tuned",
            "--rt-cpus",
            "0",
            "--journal",
            "{F}",
        ],
    ),
    (
        "campaign",
        "--state",
        &["campaign", "--state", "{D}", "PLAN"],
    ),
    (
        "campaign",
        "--db",
        &["campaign", "--state", "NEW_STATE", "--db", "{F}", "PLAN"],
    ),
    (
        "campaign report",
        "--output",
        &["campaign", "report", "--state", "STATE", "-o", "{F}"],
    ),
    (
        "export",
        "--output",
        &["export", "last", "--format", "csv", "-o", "{F}"],
    ),
    ("report", "--output", &["report", "last", "-o", "{F}"]),
    (
        "report",
        "--svg",
        &["report", "last", "-o", "OUT.html", "--svg", "{D}"],
    ),
    ("import", "--db", &["import", "IMPORT", "--db", "{F}"]),
    (
        "sched check",
        "--output",
        &["sched", "check", "TASKSET", "-o", "{F}"],
    ),
    ("pi check", "--output", &["pi", "check", "-o", "{F}"]),
    (
        "tune apply",
        "--journal",
        &[
            "tune",
            "apply",
            "--rt-cpus",
            "0",
            "--yes",
            "--journal",
            "{F}",
        ],
    ),
    (
        "trace record",
        "--output",
        &["trace", "record", "-D", "1s", "-o", "{F}"],
    ),
    ("man", "--output", &["man", "-o", "{D}"]),
    ("audit capture", "DIR", &["audit", "capture", "{D}"]),
];

/// Arguments that name what this machine lacks, refused as early.
const BAD_ARGUMENTS: &[(&[&str], &str)] = &[
    (
        &["run", "--cpus", "4095", "-D", "1s", "--no-report"],
        "--cpus 4095",
    ),
    (
        &["measure", "--cpus", "4095", "-D", "1s", "--no-store"],
        "--cpus 4095",
    ),
    (
        &["noise", "--cpus", "4095", "-D", "1s", "--no-store"],
        "--cpus 4095",
    ),
];

/// Runs `line` and returns (exit status, stdout, stderr, how long it took).
fn run(dir: &std::path::Path, line: &[String]) -> (Option<i32>, String, String, Duration) {
    let start = Instant::now();
    let out = common::rtlab()
        .current_dir(dir)
        .env("RTLAB_DB", dir.join("store.sqlite"))
        .args(line)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        start.elapsed(),
    )
}

/// The inputs the cases name: a plan, a campaign's state, a file to import, a task set.
fn inputs(dir: &std::path::Path) -> Vec<(&'static str, String)> {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let plan = dir.join("plan.toml");
    std::fs::write(
        &plan,
        "name = \"first\"\ncpus = \"0\"\n\n[[phase]]\nname = \"idle\"\nduration = \"1s\"\n",
    )
    .unwrap();
    let state = dir.join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(state.join("state.json"), "{}").unwrap();
    let taskset = dir.join("tasks.toml");
    std::fs::write(
        &taskset,
        "[[task]]\nname = \"ctl\"\nperiod = \"1ms\"\nwcet = \"100us\"\npriority = 80\n",
    )
    .unwrap();
    let import = repo.join("fixtures/imports/local_cyclictest_2.40_v_q.txt.gz");
    let show = |p: &std::path::Path| p.to_string_lossy().into_owned();
    vec![
        ("PLAN", show(&plan)),
        ("STATE", show(&state)),
        ("TASKSET", show(&taskset)),
        ("IMPORT", show(&import)),
        ("OUT.html", show(&dir.join("out.html"))),
        ("NEW_STATE", show(&dir.join("new-state"))),
    ]
}

#[test]
fn every_output_that_cannot_be_written_is_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = inputs(dir.path());
    let mut failures = Vec::new();
    for (command, flag, line) in CASES {
        let line: Vec<String> = line
            .iter()
            .map(|w| {
                let w = w.replace("{F}", FILE).replace("{D}", DIR);
                inputs
                    .iter()
                    .find(|(k, _)| *k == w)
                    .map_or(w, |(_, v)| v.clone())
            })
            .collect();
        let bad = if line.iter().any(|w| w == DIR) {
            DIR
        } else {
            FILE
        };
        let (code, stdout, stderr, took) = run(dir.path(), &line);
        let one_line = stderr.trim().lines().count() == 1;
        if code != Some(2)
            || !stdout.is_empty()
            || !stderr.contains(bad)
            || !one_line
            || took > Duration::from_secs(1)
        {
            failures.push(format!(
                "{command} {flag}: exit {code:?} after {took:?}; stdout {} bytes; stderr: {stderr}",
                stdout.len()
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    // Nothing was left behind where the inputs are (a probe, a state directory).
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["plan.toml", "state", "tasks.toml"]);
}

#[test]
fn cpus_this_machine_lacks_are_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    for (line, says) in BAD_ARGUMENTS {
        let line: Vec<String> = line.iter().map(ToString::to_string).collect();
        let (code, stdout, stderr, took) = run(dir.path(), &line);
        assert_eq!(code, Some(2), "{line:?}: {stderr}");
        assert!(stdout.is_empty(), "{line:?} printed {stdout}");
        assert!(stderr.contains(says), "{line:?}: {stderr}");
        assert!(took < Duration::from_secs(1), "{line:?} took {took:?}");
    }
}
