//! `rtlab sched check` end to end: task sets with known answers (fixtures/sched), exit
//! statuses, the JSON report, bad input as one line with exit 2, `--jitter-from` a measured
//! run, and — live, as root — the admission verdict against what `sched_setattr` really does
//! on this machine.

mod common;

use std::path::{Path, PathBuf};

use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sched")
        .join(name)
}

/// Runs `sched check` with `args`; exit code, stdout, stderr.
fn check(args: &[&str]) -> (i32, String, String) {
    let out = common::rtlab()
        .args(["sched", "check"])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn report(args: &[&str]) -> (i32, Value) {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    let (code, out, err) = check(&all);
    assert!(matches!(code, 0 | 1), "exit {code}: {err}");
    (code, serde_json::from_str(&out).unwrap())
}

fn fifo(report: &Value, partition: usize) -> &Value {
    report["partitions"][partition]["analyses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["policy"] == "fifo")
        .unwrap()
}

fn responses(report: &Value) -> Vec<(String, Option<u64>)> {
    fifo(report, 0)["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["response_ns"].as_u64(),
            )
        })
        .collect()
}

#[test]
fn known_sets_get_their_published_response_times() {
    let (code, r) = report(&[fixture("burns-wellings.json").to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(r["schema"], "rtlab.sched/1");
    assert_eq!(r["verdict"], "schedulable");
    assert_eq!(
        responses(&r),
        vec![
            ("a".into(), Some(3_000_000)),
            ("b".into(), Some(6_000_000)),
            ("c".into(), Some(20_000_000))
        ]
    );
    let (code, r) = report(&[fixture("robot.toml").to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(
        responses(&r),
        vec![
            ("control".into(), Some(1_150_000)),
            ("io".into(), Some(5_000_000)),
            ("log".into(), Some(47_000_000))
        ]
    );
    let slack: Vec<u64> = fifo(&r, 0)["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["slack_ns"].as_u64().unwrap())
        .collect();
    assert_eq!(slack, vec![2_850_000, 3_000_000, 53_000_000]);
}

#[test]
fn a_failing_order_exits_1_with_a_suggestion_and_edf_passes() {
    let set = fixture("inverted.toml");
    let set = set.to_str().unwrap();
    let (code, r) = report(&[set]);
    assert_eq!(code, 1);
    assert_eq!(r["verdict"], "not-schedulable");
    let f = fifo(&r, 0);
    let s = &f["suggestion"];
    assert_eq!(s["method"], "deadline-monotonic");
    assert_eq!(s["order"][0]["name"], "control");
    let (code, out, _) = check(&[set]);
    assert_eq!(code, 1);
    assert!(
        out.contains("a deadline-monotonic order meets every deadline: control 49, logger 48"),
        "{out}"
    );
    let (code, r) = report(&[set, "--policy", "edf"]);
    assert_eq!((code, r["verdict"].as_str()), (0, Some("schedulable")));
}

#[test]
fn bad_task_sets_are_one_line_naming_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &str); 9] = [
        (
            "[[task]]\nname = \"a\"\nperiod = \"4ms\"\nwcet = \"1ms\"\ncpu = 8000\n",
            "task \"a\" is on cpu = 8000, which this machine does not have",
        ),
        (
            "[[task]]\nname = \"a\"\nperiod = \"4ms\"\nwcte = \"1ms\"\n",
            "line 4",
        ),
        (
            "[[task]]\nname = \"a\"\nperiod = \"4ms\"\nwcet = \"5ms\"\n",
            "line 4: task \"a\": wcet 5ms",
        ),
        (
            "[[task]]\nname = \"a\"\nperiod = \"4ms\"\nwcet = \"1ms\"\ndeadline = \"6ms\"\n",
            "deadline 6ms is longer than the period",
        ),
        (
            "[[task]]\nname = \"a\"\nperiod = 4\nwcet = \"1ms\"\n",
            "period = 4 has no unit",
        ),
        (
            "[[task]]\nname = \"a\"\nperiod = \"4ms\"\nwcet = \"1ms\"\nruntime = \"5ms\"\n",
            "runtime 5ms",
        ),
        (
            "[[task]]\nname = \"a\"\nperiod = \"-4ms\"\nwcet = \"1ms\"\n",
            "period",
        ),
        ("", "it is empty"),
        ("\u{0}\u{1}binary", "t8.toml: line 1"),
    ];
    for (i, (text, expect)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("t{i}.toml"));
        std::fs::write(&path, text).unwrap();
        let (code, out, err) = check(&[path.to_str().unwrap()]);
        assert_eq!(code, 2, "{text:?}: {err}");
        assert!(out.is_empty(), "{out}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.starts_with("rtlab: error: "), "{err}");
        assert!(err.contains(expect), "{text:?}: {err}");
    }
    let (code, _, err) = check(&["/nonexistent/tasks.toml"]);
    assert_eq!(code, 2, "{err}");
    // Nothing is written when the input is bad.
    let out = dir.path().join("report.json");
    let bad = dir.path().join("t2.toml");
    let (code, _, _) = check(&[bad.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(!out.exists());
}

#[test]
fn jitter_comes_from_a_measured_run() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.json");
    let out = common::rtlab()
        .args([
            "measure",
            "--fake-clock",
            "5us,9us,40us",
            "--cycles",
            "300",
            "--cpus",
            "0",
            "--no-store",
            "-q",
            "-o",
        ])
        .arg(&run)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (code, r) = report(&[
        fixture("robot.toml").to_str().unwrap(),
        "--jitter-from",
        run.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    let control = &r["tasks"][0];
    assert_eq!(
        control["jitter"], 50_000,
        "the set's 50us is above the measured 40us"
    );
    let io = &r["tasks"][1];
    assert_eq!(io["jitter"], 40_000);
    assert!(
        io["jitter_source"]
            .as_str()
            .unwrap()
            .contains("max over CPUs")
    );
    // io now waits 40us longer: 5.04ms.
    assert_eq!(responses(&r)[1].1, Some(5_040_000));
    // A task on a CPU the run did not measure, and a run that does not exist.
    let dir2 = tempfile::tempdir().unwrap();
    let pinned = dir2.path().join("p.toml");
    std::fs::write(
        &pinned,
        "[[task]]\nperiod = \"1ms\"\nwcet = \"100us\"\ncpu = 1\n",
    )
    .unwrap();
    let (code, _, err) = check(&[
        pinned.to_str().unwrap(),
        "--jitter-from",
        run.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("CPU 1, which the run did not measure"),
        "{err}"
    );
    let (code, _, err) = check(&[pinned.to_str().unwrap(), "--jitter-from", "./missing.json"]);
    assert_eq!(code, 2, "{err}");
}

/// sched_attr as the kernel takes it (first version, 48 bytes).
#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

/// Makes one thread per (runtime, period) a SCHED_DEADLINE task, all alive at once; whether
/// every `sched_setattr` succeeded. The threads sleep, then end (which returns the bandwidth).
fn admit_for_real(tasks: &[(u64, u64)]) -> bool {
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(tasks.len() + 1));
    let (tx, rx) = std::sync::mpsc::channel();
    let mut handles = Vec::new();
    for &(runtime, period) in tasks {
        let barrier = barrier.clone();
        let tx = tx.clone();
        handles.push(std::thread::spawn(move || {
            let attr = SchedAttr {
                size: 48,
                policy: 6,
                runtime,
                deadline: period,
                period,
                ..SchedAttr::default()
            };
            // SAFETY: `attr` is a valid sched_attr of the size given, read by the kernel only.
            let rc =
                unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) };
            tx.send(rc == 0).unwrap();
            barrier.wait();
        }));
    }
    drop(tx);
    let results: Vec<bool> = (0..tasks.len()).map(|_| rx.recv().unwrap()).collect();
    barrier.wait();
    for h in handles {
        h.join().unwrap();
    }
    results.iter().all(|ok| *ok)
}

#[test]
fn deadline_admission_agrees_with_the_kernel() {
    if !common::is_root() {
        common::live_skip("SCHED_DEADLINE admission needs root");
        return;
    }
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    // What is free on this machine, from rtlab's own reading of it.
    let probe = dir.path().join("probe.toml");
    std::fs::write(&probe, "[[task]]\nperiod = \"10ms\"\nwcet = \"10us\"\n").unwrap();
    let (_, r) = report(&[probe.to_str().unwrap(), "--policy", "deadline"]);
    let bw = &r["bandwidth"];
    if bw["rt_runtime_us"].as_i64() == Some(-1) {
        common::live_skip("sched_rt_runtime_us is -1: the kernel admits everything");
        return;
    }
    let one = f64::from(1u32 << 20);
    let cpus = bw["online"]
        .as_str()
        .unwrap()
        .split(',')
        .map(|r| {
            r.split_once('-').map_or(1, |(a, b)| {
                b.parse::<u64>().unwrap() - a.parse::<u64>().unwrap() + 1
            })
        })
        .sum::<u64>() as f64;
    let per_cpu = bw["rt_runtime_us"].as_f64().unwrap() / bw["rt_period_us"].as_f64().unwrap();
    let free = cpus * (per_cpu - bw["server_bw"].as_f64().unwrap() / one)
        - bw["tasks_bw"].as_f64().unwrap() / one;
    // Sets just under and just over what is free, in tasks of at most 80 % each.
    for (share, expect) in [
        (free - 0.03, "schedulable"),
        (free + 0.03, "not-schedulable"),
    ] {
        let n = (share / 0.8).ceil().max(1.0) as usize;
        let each = share / n as f64;
        let period = 10_000_000u64;
        let runtime = (each * period as f64) as u64;
        let mut text = String::new();
        for i in 0..n {
            text +=
                &format!("[[task]]\nname = \"t{i}\"\nperiod = \"10ms\"\nwcet = \"{runtime}ns\"\n");
        }
        let set = dir.path().join("set.toml");
        std::fs::write(&set, text).unwrap();
        let (_, r) = report(&[set.to_str().unwrap(), "--policy", "deadline"]);
        let admission: Vec<&Value> = r["admission"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["name"].as_str().unwrap().starts_with("admission"))
            .collect();
        assert_eq!(admission[0]["verdict"], expect, "{:#}", r["admission"]);
        let real = admit_for_real(&vec![(runtime, period); n]);
        assert_eq!(
            real,
            expect == "schedulable",
            "rtlab said {expect} for {n} x {runtime}ns/10ms; sched_setattr {}: {:#}",
            if real { "admitted them" } else { "refused one" },
            r["admission"]
        );
    }
}
