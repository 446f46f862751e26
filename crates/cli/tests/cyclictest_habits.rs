//! cyclictest's options typed at `rtlab measure` by habit (rt-tests' `cyclictest --help`):
//! each one either does what it does in cyclictest or is refused, before anything runs, with
//! one line naming what to type instead. `-h` is the histogram, never help. Scripted
//! latencies (`--fake-clock`) on a captured tree make the runs exact.

mod common;

use assert_cmd::Command;
use model::measure::MeasureRun;

/// `rtlab measure` on the captured 2-CPU tree with a scripted clock, storing nothing.
fn measure(args: &[&str]) -> std::process::Output {
    let mut cmd: Command = common::rtlab_checked();
    cmd.arg("--root")
        .arg(testkit::fixture_root("vm-x86_64-2cpu").base())
        .args(["measure", "--fake-clock", "5us,7us,40us", "--no-store"])
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn dash_h_is_cyclictests_histogram_not_help() {
    let out = measure(&["-h", "400", "-l", "30", "-a", "0", "-q"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stdout.contains("Usage:"), "{stdout}");
    // cyclictest -h: one row per microsecond up to 400, then the summary lines.
    assert!(stdout.starts_with("# Histogram\n"), "{stdout}");
    assert!(stdout.contains("\n000399 "), "{stdout}");
    assert!(!stdout.contains("\n000400 "), "{stdout}");
    assert!(stdout.contains("# Max Latencies: 00040"), "{stdout}");
    // --help stays help.
    let help = measure(&["--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(text(&help.stdout).contains("Usage: rtlab measure"));
    assert!(text(&help.stdout).contains("CYCLICTEST EQUIVALENTS"));
}

#[test]
fn bare_numbers_read_in_cyclictests_units() {
    let out = measure(&[
        "-i", "500", "-D", "1", "-b", "1000", "-a", "0", "-q", "--format", "json",
    ]);
    let stdout = text(&out.stdout);
    let run = MeasureRun::from_json(&stdout)
        .unwrap_or_else(|e| panic!("{e}\n{stdout}\n{}", text(&out.stderr)));
    let p = &run.params;
    assert_eq!(p.interval_ns.get(), 500_000, "-i is microseconds");
    assert_eq!(
        p.duration_ns.map(|d| d.get()),
        Some(1_000_000_000),
        "-D is seconds"
    );
    assert_eq!(
        p.break_ns.map(|b| b.get()),
        Some(1_000_000),
        "-b is microseconds"
    );
}

#[test]
fn what_rtlab_always_does_is_accepted_and_changes_nothing() {
    for given in [
        &["-S"][..],
        &["-m"],
        &["-n"],
        &["-t"],
        &["--threads"],
        &["--tracemark"],
        &["-c", "0"],
        &["--policy", "normal"],
        &["--mainaffinity", "1"],
        &["--latency", "0"],
        &["-e", "0"],
        &["-y", "fifo"],
        &["--smp", "--mlockall"],
    ] {
        let out = measure(&[&["-l", "10", "-a", "0", "-q"][..], given].concat());
        assert_eq!(
            out.status.code(),
            Some(0),
            "{given:?}: {}",
            text(&out.stderr)
        );
        assert!(text(&out.stdout).contains("CPU"), "{given:?}");
    }
}

/// cyclictest's long names of the options rtlab has: --affinity and --loops.
#[test]
fn cyclictests_long_names_are_rtlabs_options() {
    let out = measure(&["--loops", "10", "--affinity", "0", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("CPU"));
}

#[test]
fn other_cyclictest_options_are_refused_with_what_to_type() {
    let cases: &[(&[&str], &str, &str)] = &[
        (&["-A", "100"], "-A/--aligned", "--aligned"),
        (&["-d", "0"], "-d/--distance", "--aligned"),
        (&["--distance=0"], "-d/--distance", "--aligned"),
        (&["-F", "/tmp/pipe"], "-F/--fifo", "-o FILE"),
        (&["-H", "100"], "-H/--histofall", "-h/--histogram"),
        (&["--histfile", "/tmp/h"], "--histfile", "-h US > FILE"),
        // cyclictest's layout is not rtlab's: refused, never written as rtlab's result.
        (
            &["--json=/tmp/c.json"],
            "--json=FILE",
            "-o FILE writes rtlab's result",
        ),
        (&["--json", "/tmp/c.json"], "--json=FILE", "rtlab import"),
        (&["--laptop"], "--laptop", "--dma-latency off"),
        (
            &["--default-system"],
            "--default-system",
            "--dma-latency off",
        ),
        (&["-M"], "-M/--refresh_on_max", "-q"),
        (&["-N"], "-N/--nsecs", "--format json"),
        (&["--priospread"], "--priospread", "--priority"),
        (&["-r"], "-r/--relative", "absolute"),
        (&["-R"], "-R/--resolution", "rtlab audit"),
        (&["--secaligned"], "--secaligned", "--aligned"),
        (&["--secaligned", "100"], "--secaligned", "--aligned"),
        (&["-s"], "-s/--system", "clock_nanosleep"),
        (&["--spike", "100"], "--spike", "--spikes N"),
        (&["--spike-nodes", "10"], "--spike-nodes", "--spikes N"),
        (&["--smi"], "--smi", "rtlab hwlat"),
        (&["-u"], "-u/--unbuffered", "-o FILE"),
        (&["-v"], "-v/--verbose", "-o FILE"),
        (
            &["--dbg_cyclictest"],
            "--dbg_cyclictest",
            "rtlab measure --help",
        ),
        (&["-x"], "-x/--posix_timers", "clock_nanosleep"),
        (&["-t", "4"], "-t 4", "-a/--cpus"),
        (&["--threads=4"], "-t 4", "-a/--cpus"),
        (&["-c", "1"], "-c 1", "CLOCK_MONOTONIC"),
        (&["-o", "10"], "-o 10", "-o ./10"),
        (
            &["--deepest-idle-state=1"],
            "--deepest-idle-state",
            "-e/--dma-latency",
        ),
        (&["--numa"], "--numa", "-a/--cpus"),
        (&["--oscope=5"], "-o/--oscope", "-o FILE"),
    ];
    for (given, flag, instead) in cases {
        let out = measure(&[&["-l", "10", "-a", "0"][..], given].concat());
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{given:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{given:?}: nothing is measured");
        assert_eq!(stderr.lines().count(), 1, "{given:?}: one line: {stderr}");
        assert!(stderr.contains(flag), "{given:?}: names {flag}: {stderr}");
        assert!(
            stderr.contains(instead),
            "{given:?}: says {instead}: {stderr}"
        );
    }
}

#[test]
fn dash_l_takes_that_many_samples_as_cyclictest_counts_its_loops() {
    // A 3.5-ms stall every ten wake-ups at 1 ms misses three periods each time: cyclictest's
    // -l 100 still takes 100 samples (its `Total:`), the missed periods are overruns on top.
    let out = common::rtlab_checked()
        .arg("--root")
        .arg(testkit::fixture_root("vm-x86_64-2cpu").base())
        .args([
            "measure",
            "--fake-clock",
            "5us,5us,5us,5us,5us,5us,5us,5us,5us,3500us",
        ])
        .args([
            "--no-store",
            "-l",
            "100",
            "-a",
            "0",
            "-q",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    let run = MeasureRun::from_json(&stdout)
        .unwrap_or_else(|e| panic!("{e}\n{stdout}\n{}", text(&out.stderr)));
    let c = &run.cpus[0];
    assert_eq!(c.raw.count, 100, "samples");
    assert_eq!(
        c.raw.overruns, 30,
        "three missed periods after each of ten stalls"
    );
}
