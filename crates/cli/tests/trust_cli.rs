//! Issue 13, end to end: no verdict passes on an input rtlab did not read, no output is found
//! bad only after the work is done, and no number from outside can make rtlab allocate or
//! crash. Every case here is one a user met; each asserts the exit status (0 ok, 1 verdict
//! failed, 2 bad input) and the one line that says why.

mod common;

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use model::measure::{MeasureRun, RunStatus};

fn tree() -> PathBuf {
    testkit::fixture_root("vm-x86_64-2cpu").base().to_path_buf()
}

/// `rtlab` with its own store in `dir`.
fn rtlab(dir: &Path) -> Command {
    common::rtlab_with_store(&dir.join("rtlab.db"))
}

/// Runs `cmd` and returns (exit code, stdout, stderr).
fn run(cmd: &mut Command) -> (Option<i32>, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A scripted two-CPU result written to `dir/NAME`, changed by `edit`.
fn result_file(dir: &Path, name: &str, edit: impl FnOnce(&mut MeasureRun)) -> PathBuf {
    let json = dir.join("measured.json");
    let (code, _, err) = run(rtlab(dir)
        .arg("--root")
        .arg(tree())
        .args([
            "measure",
            "-q",
            "--fake-clock",
            "5us,7us",
            "--cycles",
            "20",
            "--no-store",
        ])
        .arg("--output")
        .arg(&json));
    assert_eq!(code, Some(0), "{err}");
    let mut result = MeasureRun::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    edit(&mut result);
    let path = dir.join(name);
    std::fs::write(&path, result.to_json()).unwrap();
    path
}

#[test]
fn audit_refuses_inputs_it_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "").unwrap();
    let cases: [(&[&str], &str); 6] = [
        (&["--root", "/nonexistent/tree", "audit"], "not a directory"),
        (&["--root", "/usr/share", "audit"], "holds no kernel tree"),
        (&["audit", "--kconfig", "/bin/ls"], "not a kernel config"),
        (
            &["audit", "--kconfig", empty.to_str().unwrap()],
            "it is empty",
        ),
        (
            &["audit", "--dmesg", dir.path().to_str().unwrap()],
            "directory",
        ),
        (&["audit", "--dmesg", empty.to_str().unwrap()], "empty"),
    ];
    for (args, why) in cases {
        let (code, out, err) = run(rtlab(dir.path()).args(args));
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?} printed a report: {out}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        assert!(err.contains(why), "{args:?}: {err}");
    }
}

/// An empty file is called empty, whichever command reads it.
#[test]
fn an_empty_file_is_called_empty() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "\n").unwrap();
    let e = empty.to_str().unwrap();
    let cases: [&[&str]; 5] = [
        &["import", e],
        &["sched", "check", e],
        &["audit", "--dmesg", e],
        &["kconfig", "diff", e, e],
        &["audit", "--kconfig", e],
    ];
    for args in cases {
        let (code, out, err) = run(rtlab(dir.path()).args(args));
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        assert!(err.contains("empty"), "{args:?}: {err}");
        assert!(!err.contains("not UTF-8"), "{args:?}: {err}");
    }
}

#[test]
fn a_run_that_measured_nothing_passes_no_gate() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let good = result_file(d, "good.json", |_| {});
    // What a measurement killed before its first checkpoint with samples leaves behind.
    let killed = result_file(d, "killed.json", |r| {
        r.status = RunStatus::Running;
        r.cpus.clear();
        r.all = model::measure::aggregate(&[]);
    });

    let (code, out, err) = run(rtlab(d).arg("show").arg(&killed));
    assert_eq!(code, Some(1), "show: {out}{err}");
    assert!(
        err.contains("cannot be judged") && err.contains("did not finish"),
        "{err}"
    );
    assert_eq!(run(rtlab(d).arg("show").arg(&good)).0, Some(0));

    let junit = d.join("junit.xml");
    let (code, _, err) = run(rtlab(d)
        .arg("export")
        .arg(&killed)
        .args(["--format", "junit", "-o"])
        .arg(&junit));
    assert_eq!(code, Some(1), "{err}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("tests=\"1\"") && xml.contains("errors=\"1\""),
        "{xml}"
    );
    assert!(xml.contains("type=\"unjudgeable\""), "{xml}");

    let (code, csv, _) = run(rtlab(d)
        .arg("export")
        .arg(&killed)
        .args(["--format", "csv"]));
    assert_eq!(code, Some(1));
    assert!(
        csv.lines().nth(1).unwrap().contains(",running,false,"),
        "{csv}"
    );
    let (code, om, _) = run(rtlab(d)
        .arg("export")
        .arg(&killed)
        .args(["--format", "openmetrics"]));
    assert_eq!(code, Some(1));
    assert!(
        om.contains("rtlab_run_judgeable{host=\"rtlab-host\"} 0"),
        "{om}"
    );

    for order in [[&good, &killed], [&killed, &good]] {
        let (code, _, err) = run(rtlab(d)
            .arg("compare")
            .args(order)
            .args(["--fail-if-worse", "10%"]));
        assert_eq!(code, Some(1), "{err}");
        assert!(err.contains("cannot be judged"), "{err}");
    }
    let (code, _, err) = run(rtlab(d).arg("compare").arg(&good).arg(&good));
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn export_says_in_its_exit_status_what_its_document_says() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let good = result_file(d, "good.json", |_| {});
    let junit = |budget: &str| {
        run(rtlab(d)
            .arg("export")
            .arg(&good)
            .args(["--format", "junit", "--budget", budget]))
    };
    // The fake clock scripts 5 us and 7 us wake-ups.
    let (code, xml, _) = junit("100us");
    assert_eq!(code, Some(0));
    assert!(xml.contains("failures=\"0\" errors=\"0\""), "{xml}");
    let (code, xml, err) = junit("6us");
    assert_eq!(code, Some(1), "{err}");
    assert!(xml.contains("failures=\"2\""), "{xml}");
    let (code, _, err) = run(rtlab(d)
        .arg("export")
        .arg(&good)
        .args(["--format", "csv", "--budget", "6us"]));
    assert_eq!(code, Some(1));
    assert!(
        err.contains("CPU 0: max latency 7.0us exceeds --budget 6us"),
        "{err}"
    );
}

#[test]
fn bad_outputs_are_refused_before_anything_is_measured() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let measure = |extra: &[&str]| {
        let start = std::time::Instant::now();
        let result = run(rtlab(d)
            .arg("--root")
            .arg(tree())
            // 20 s of scripted periods: a refusal must come before any of them.
            .args(["measure", "-q", "--fake-clock", "5us", "--duration", "20s"])
            .args(extra));
        assert!(start.elapsed().as_secs() < 10, "{extra:?} measured first");
        result
    };
    let here = d.to_str().unwrap();
    for (extra, why) in [
        (vec!["--db", here], "run store cannot be used"),
        (vec!["--output", here], "is a directory"),
        (
            vec!["--output", "/nonexistent/dir/run.json"],
            "/nonexistent/dir",
        ),
    ] {
        let (code, _, err) = measure(&extra);
        assert_eq!(code, Some(2), "{extra:?}: {err}");
        assert!(err.contains(why), "{extra:?}: {err}");
    }
    let (code, _, err) = run(rtlab(d).args(["trace", "record", "-D", "1h", "-o", here]));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("is a directory"), "{err}");
    // `rtlab run` saves every phase: a store it cannot write is refused before the first.
    let start = std::time::Instant::now();
    let (code, _, err) = run(rtlab(d).arg("--root").arg(tree()).args([
        "run",
        "--fake-clock",
        "5us",
        "--duration",
        "20s",
        "--no-report",
        "--db",
        here,
    ]));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("run store cannot be used"), "{err}");
    assert!(start.elapsed().as_secs() < 10, "a phase ran first");
}

#[test]
fn sizes_from_the_command_line_are_bounded_before_allocating() {
    let dir = tempfile::tempdir().unwrap();
    for (extra, why) in [
        (["--spikes", "4000000000"], "--spikes 4000000000"),
        (["--duration", "20000d"], "longer than the 366d"),
        (["--cycles", "18446744073709551615"], "longer than the 366d"),
        (["--checkpoint", "20000d"], "--checkpoint 20000d"),
    ] {
        let (code, _, err) = run(rtlab(dir.path())
            .arg("--root")
            .arg(tree())
            .args(["measure", "-q", "--fake-clock", "5us", "--no-store"])
            .args(extra));
        assert_eq!(code, Some(2), "{extra:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(why), "{extra:?}: {err}");
    }
}

#[test]
fn a_trace_with_an_impossible_cpu_number_is_read_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.txt");
    std::fs::write(
        &trace,
        "# tracer: nop\n\
         \x20         <idle>-0       [4000000000] d.h1. 100.000010: irq_handler_entry: irq=1 name=x\n\
         \x20         <idle>-0       [001] d.h1. 100.000020: irq_handler_entry: irq=1 name=x\n\
         \x20         <idle>-0       [001] d.h1. 100.000030: irq_handler_exit: irq=1 ret=handled\n",
    )
    .unwrap();
    for args in [
        &["explain", "irqs"][..],
        &["explain", "sched"],
        &["explain"],
    ] {
        let (code, out, err) = run(rtlab(dir.path()).args(args).arg(&trace));
        assert!(matches!(code, Some(0..=2)), "{args:?}: {code:?} {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        if code == Some(0) {
            assert!(!out.is_empty());
        }
    }
}

#[test]
fn a_result_file_from_elsewhere_is_checked_and_its_figures_derived_again() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A forged maximum in the derived figures: the gate judges the raw data.
    let forged = result_file(d, "forged.json", |r| {
        r.cpus[0].stats.max_ns = Some(1);
        r.all.stats.max_ns = Some(1);
    });
    let (code, _, err) = run(rtlab(d)
        .arg("export")
        .arg(&forged)
        .args(["--format", "csv", "--budget", "6us"]));
    assert_eq!(code, Some(1), "{err}");
    for (name, edit, why) in [
        (
            "cpu.json",
            Box::new(|r: &mut MeasureRun| r.cpus[0].cpu = 4_000_000_000)
                as Box<dyn Fn(&mut MeasureRun)>,
            "beyond the largest CPU",
        ),
        (
            "twice.json",
            Box::new(|r: &mut MeasureRun| r.cpus[1].cpu = r.cpus[0].cpu),
            "appears twice",
        ),
        (
            "counts.json",
            Box::new(|r: &mut MeasureRun| {
                r.cpus[0].raw.count = u64::MAX;
                r.cpus[1].raw.count = u64::MAX;
            }),
            "2^64",
        ),
    ] {
        let path = result_file(d, name, |r| edit(r));
        let (code, out, err) = run(rtlab(d).arg("show").arg(&path));
        assert_eq!(code, Some(2), "{name}: {out}{err}");
        assert!(err.contains(why), "{name}: {err}");
    }
    // A directory or a huge file named as a RUN is refused in one line.
    let (code, _, err) = run(rtlab(d).arg("show").arg(d));
    assert_eq!(code, Some(2), "{err}");
}

/// A trace of ordinary tasks only: nothing to explain, and the message names what is missing
/// (it used to tell of a priority-120 task "held up by a same-priority task").
#[test]
fn a_trace_without_a_real_time_thread_has_nothing_to_explain() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("normal.txt");
    let lines = [
        "             app-800     [001] d..1. 100.000000: hrtimer_start: hrtimer=00000000cccc function=hrtimer_wakeup expires=100001000000 softexpires=100001000000 mode=ABS",
        "             app-800     [001] d..2. 100.000001: sched_switch: prev_comm=app prev_pid=800 prev_prio=120 prev_state=S ==> next_comm=build next_pid=600 next_prio=120",
        "           build-600     [001] d.h1. 100.001002: hrtimer_expire_entry: hrtimer=00000000cccc function=hrtimer_wakeup now=100001002000",
        "           build-600     [001] dNh2. 100.001003: sched_wakeup: comm=app pid=800 prio=120 target_cpu=001",
        "           build-600     [001] d..2. 100.003000: sched_switch: prev_comm=build prev_pid=600 prev_prio=120 prev_state=R ==> next_comm=app next_pid=800 next_prio=120",
    ];
    std::fs::write(&trace, lines.join("\n") + "\n").unwrap();
    let (code, out, err) = run(rtlab(dir.path()).arg("explain").arg(&trace));
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(out.is_empty(), "no story: {out}");
    assert!(
        err.contains("no real-time thread's timer wake-up")
            && err.contains("kernel priority 120")
            && err.contains("rtlab measure --trace"),
        "{err}"
    );
    // The analyses still read what the trace has.
    let (code, out, _) = run(rtlab(dir.path()).args(["explain", "sched"]).arg(&trace));
    assert_eq!(code, Some(0));
    assert!(out.contains("app"), "{out}");
}

/// A usage error names the value and what it takes, in one line, and points to the help of the
/// command typed.
#[test]
fn usage_errors_say_what_is_taken_and_where_the_help_is() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &[&str]); 6] = [
        (
            &["measure", "--duration", "-5s"],
            &["--duration -5s: a negative value", "`rtlab measure --help`"],
        ),
        (
            &["measure", "--priority", "150"],
            &["--priority 150 is out of range; give 1 to 99"],
        ),
        (
            &["measure", "--trace", "--trace-buffer", "0"],
            &["'0' is outside 64K to 1G (a bare number is KiB)"],
        ),
        (
            &["export", "last", "--format", "xml"],
            &["'xml'", "it takes json, csv", "`rtlab export --help`"],
        ),
        (
            &["campaign", "status", "--bogus"],
            &["'--bogus'", "`rtlab campaign status --help`"],
        ),
        (&["noise", "--cpus", "-1"], &["--cpus -1: a negative value"]),
    ];
    for (args, said) in cases {
        let (code, out, err) = run(rtlab(dir.path()).args(args));
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        assert!(err.starts_with("rtlab: error: "), "{args:?}: {err}");
        for s in said {
            assert!(err.contains(s), "{args:?}: {s:?} in {err}");
        }
    }
}
