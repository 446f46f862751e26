//! Live tests: real SCHED_FIFO threads on every CPU of this machine, real signals, a real
//! SIGKILL, real tracefs. They run as root in CI. Without root they check the fallback: the
//! privilege error and its exit status.
//!
//! Tests here share the CPUs and /dev/cpu_dma_latency, so they take a lock and run one at a time.

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{is_root, rtlab, serial, wait_for};
use model::measure::{MeasureRun, RunStatus};

fn online_cpus() -> usize {
    model::CpuSet::parse_list(&std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap())
        .unwrap()
        .len()
}

fn dma_latency_now() -> Option<i32> {
    let mut buf = [0u8; 4];
    std::fs::File::open("/dev/cpu_dma_latency")
        .ok()?
        .read_exact(&mut buf)
        .ok()?;
    Some(i32::from_ne_bytes(buf))
}

fn wait_until_file(path: &Path, limit: Duration) {
    let start = Instant::now();
    while !path.exists() {
        assert!(start.elapsed() < limit, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: kill with a valid pid of our own child and a valid signal number.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
}

#[test]
fn fifo_threads_on_every_cpu_count_every_period_and_restore_the_machine() {
    let _guard = serial();
    if !is_root() {
        let out = rtlab()
            .args(["measure", "--duration", "1s"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("root or CAP_SYS_NICE"), "{stderr}");
        testkit::live::skip("not root: measured nothing (only the privilege error was checked)");
        return;
    }
    let dma_before = dma_latency_now();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let out = rtlab()
        .args([
            "measure",
            "--duration",
            "3s",
            "--interval",
            "1ms",
            "--quiet",
            "--output",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = MeasureRun::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(run.status, RunStatus::Complete);
    assert_eq!(run.params.clock, "monotonic");
    assert_eq!(run.params.priority, 95);
    assert!(run.params.mlock);
    assert_eq!(run.cpus.len(), online_cpus(), "one thread per CPU");
    for cpu in &run.cpus {
        let s = &cpu.stats;
        eprintln!(
            "CPU {}: {} samples, {} overruns, min {:?} p99 {:?} max {:?} ns",
            cpu.cpu, s.count, s.overruns, s.min_ns, s.p99_ns, s.max_ns
        );
        assert_eq!(
            s.count + s.overruns,
            3_000,
            "every period is a sample or an overrun"
        );
        assert!(
            s.count >= 2_940,
            "CPU {}: {} samples, below 98% of 3000",
            cpu.cpu,
            s.count
        );
        assert!(cpu.tid.is_some());
        assert_eq!(cpu.series.count.iter().sum::<u64>(), s.count);
        assert!(
            s.min_ns.unwrap() > 0,
            "a real wake-up is never exactly on time"
        );
    }
    if dma_before.is_some() {
        assert!(
            run.params.dma_latency_us == Some(0),
            "cpu_dma_latency was held at 0"
        );
    }
    assert_eq!(
        dma_latency_now(),
        dma_before,
        "cpu_dma_latency released after the run"
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "no temporary files: {leftovers:?}");
}

/// Starts a 60-second measurement writing `json`, reads its standard output on a thread (the
/// document is larger than a pipe's buffer), and returns once the first checkpoint exists.
fn start_long_run(json: &Path, extra: &[&str]) -> (Child, std::thread::JoinHandle<String>) {
    let mut child = rtlab()
        .args(["measure", "--duration", "60s", "--quiet", "--output"])
        .arg(json)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut pipe = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text);
        text
    });
    wait_until_file(json, Duration::from_secs(10));
    (child, reader)
}

#[test]
fn sigint_and_sigterm_end_the_run_as_interrupted_and_keep_the_result() {
    let _guard = serial();
    if !is_root() {
        return common::live_skip("not root: measuring needs SCHED_FIFO");
    }
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let dma_before = dma_latency_now();
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("run.json");
        let (mut child, reader) = start_long_run(&json, &["--format", "json"]);
        std::thread::sleep(Duration::from_millis(1_500));
        signal(&child, sig);
        let status = wait_for(&mut child, Duration::from_secs(10));
        let stdout = reader.join().unwrap();
        assert_eq!(status.code(), Some(130), "signal {sig}");
        let printed = MeasureRun::from_json(&stdout).unwrap();
        let saved = MeasureRun::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
        for run in [&printed, &saved] {
            assert_eq!(run.status, RunStatus::Interrupted, "signal {sig}");
            assert!(run.all.stats.count > 0);
            assert!(run.elapsed_ns.get() < 10_000_000_000);
        }
        assert_eq!(
            dma_latency_now(),
            dma_before,
            "cpu_dma_latency released after signal {sig}"
        );
    }
}

#[test]
fn sigkill_leaves_a_valid_checkpoint() {
    let _guard = serial();
    if !is_root() {
        return common::live_skip("not root: measuring needs SCHED_FIFO");
    }
    let dma_before = dma_latency_now();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let (mut child, _reader) = start_long_run(&json, &["--checkpoint", "1s"]);
    std::thread::sleep(Duration::from_millis(3_500));
    signal(&child, libc::SIGKILL);
    wait_for(&mut child, Duration::from_secs(10));
    let run = MeasureRun::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(
        run.status,
        RunStatus::Running,
        "a checkpoint, not a finished run"
    );
    let elapsed = run.elapsed_ns.get();
    assert!(
        elapsed >= 1_000_000_000,
        "at least one checkpoint after the start: {elapsed} ns"
    );
    assert!(run.all.stats.count > 0);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "no temporary files: {leftovers:?}");
    // The kernel dropped the cpu_dma_latency request when the process died.
    assert_eq!(dma_latency_now(), dma_before);
}

#[test]
fn break_freezes_the_trace_with_a_marker() {
    let _guard = serial();
    if !is_root() {
        return common::live_skip("not root: measuring needs SCHED_FIFO");
    }
    let tracing = Path::new("/sys/kernel/tracing");
    let mounted_here = if tracing.join("trace_marker").exists() {
        false
    } else {
        let ok = Command::new("mount")
            .args(["-t", "tracefs", "nodev"])
            .arg(tracing)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !ok {
            // Without tracefs the run must still break, and say that no trace was frozen.
            let out = rtlab()
                .args([
                    "measure",
                    "--duration",
                    "5s",
                    "--break",
                    "1ns",
                    "--format",
                    "json",
                ])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(1));
            let run = MeasureRun::from_json(&String::from_utf8_lossy(&out.stdout)).unwrap();
            assert!(!run.break_event.unwrap().trace_frozen);
            assert!(run.warnings.iter().any(|w| w.code == "break-no-trace"));
            return common::live_skip(
                "tracefs could not be mounted: only the fallback (no trace frozen) was checked",
            );
        }
        true
    };
    let on_before = std::fs::read_to_string(tracing.join("tracing_on")).unwrap();
    std::fs::write(tracing.join("tracing_on"), "1").unwrap();
    let out = rtlab()
        .args([
            "measure",
            "--duration",
            "10s",
            "--break",
            "1ns",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let trace = std::fs::read_to_string(tracing.join("trace")).unwrap_or_default();
    let on_after = std::fs::read_to_string(tracing.join("tracing_on")).unwrap();
    std::fs::write(tracing.join("tracing_on"), on_before.trim()).unwrap();
    if mounted_here {
        let _ = Command::new("umount").arg(tracing).status();
    }
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = MeasureRun::from_json(&String::from_utf8_lossy(&out.stdout)).unwrap();
    assert_eq!(run.status, RunStatus::BrokeThreshold);
    let event = run.break_event.unwrap();
    assert!(event.trace_frozen);
    assert_eq!(on_after.trim(), "0", "tracing switched off at the spike");
    let marker = format!(
        "rtlab: break: CPU {} woke {} ns late",
        event.cpu, event.latency_ns
    );
    assert!(trace.contains(&marker), "trace lacks {marker:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("tracing is now off"));
}

#[test]
fn without_privileges_the_error_says_how_to_get_them() {
    let _guard = serial();
    let Some(setpriv) = ["/usr/bin/setpriv", "/bin/setpriv"]
        .into_iter()
        .find(|p| Path::new(p).exists())
    else {
        return common::live_skip(
            "setpriv (util-linux) not installed: cannot drop privileges here",
        );
    };
    if !is_root() {
        return common::live_skip("not root: dropping privileges needs root to start from");
    }
    // The binary must be reachable by an unprivileged user: copy it to a world-readable place.
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("rtlab");
    std::fs::copy(assert_cmd::cargo::cargo_bin("rtlab"), &bin).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = as_nobody(setpriv, &bin)
        .args(["measure", "--duration", "1s"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains("needs root or CAP_SYS_NICE") && stderr.contains("setcap"),
        "{stderr}"
    );
    // The same user can still measure how a normal task is scheduled.
    let out = as_nobody(setpriv, &bin)
        .args([
            "measure",
            "--duration",
            "1s",
            "--policy",
            "other",
            "--no-mlock",
            "--dma-latency",
            "off",
            "--quiet",
            "--format",
            "json",
            "--no-store",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = MeasureRun::from_json(&String::from_utf8_lossy(&out.stdout)).unwrap();
    assert_eq!(run.params.priority, 0);
    assert!(run.warnings.iter().any(|w| w.code == "policy-not-realtime"));
}

/// `bin` run as user nobody with every capability dropped.
fn as_nobody(setpriv: &str, bin: &Path) -> Command {
    let mut cmd = Command::new(setpriv);
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(["--inh-caps=-all", "--bounding-set=-all"])
        .arg(bin);
    cmd
}

/// The cyclictest formats against the real cyclictest (Debian rt-tests), installed by .ci/run.
#[test]
fn cyclictest_output_has_the_layout_of_real_cyclictest() {
    let _guard = serial();
    if !is_root() {
        return common::live_skip("not root: cyclictest and rtlab both need SCHED_FIFO");
    }
    let Ok(real) = Command::new("cyclictest")
        .args(["-S", "-p", "95", "-m", "-i", "1000", "-l", "300", "-q"])
        .output()
    else {
        return common::live_skip(
            "cyclictest is not installed (apt-get install rt-tests; .ci/run installs it)",
        );
    };
    let ours = rtlab()
        .args(["measure", "--cycles", "300", "--format", "cyclictest", "-q"])
        .output()
        .unwrap();
    assert_eq!(ours.status.code(), Some(0));
    let summary = regex_lite(
        r"^T:\s?\d+ \(\s*\d+\) P:\d+ I:\d+ C:[ \d]{7} Min:[ \d]{7} Act:[ \d]{5} Avg:[ \d]{5} Max:[ \d]{8}$",
    );
    for (who, out) in [("cyclictest", &real.stdout), ("rtlab", &ours.stdout)] {
        let text = String::from_utf8_lossy(out);
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("T:")).collect();
        assert_eq!(lines.len(), online_cpus(), "{who}: {text}");
        for line in lines {
            assert!(
                summary(line),
                "{who} line does not have cyclictest's layout: {line:?}"
            );
        }
        assert!(
            text.starts_with("# /dev/cpu_dma_latency set to 0us\n"),
            "{who}: {text}"
        );
    }
    let real = Command::new("cyclictest")
        .args([
            "-S", "-p", "95", "-m", "-i", "1000", "-l", "300", "-q", "-h", "40",
        ])
        .output()
        .unwrap();
    // The same command line: cyclictest's habits read the same at `rtlab measure`.
    let ours = rtlab()
        .args([
            "measure", "-S", "-p", "95", "-m", "-i", "1000", "-l", "300", "-q", "-h", "40",
        ])
        .output()
        .unwrap();
    assert_eq!(
        ours.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ours.stderr)
    );
    let shape = |out: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(out)
            .lines()
            .take_while(|l| !l.starts_with("# Thread"))
            .map(|l| {
                l.chars()
                    .map(|c| if c.is_ascii_digit() { '9' } else { c })
                    .collect()
            })
            .collect()
    };
    assert_eq!(
        shape(&ours.stdout),
        shape(&real.stdout),
        "histogram layout differs from cyclictest -h 40"
    );
}

/// A tiny matcher for the one pattern above, to avoid a regex dependency in tests.
fn regex_lite(pattern: &'static str) -> impl Fn(&str) -> bool {
    let re = predicates::str::is_match(pattern).unwrap();
    move |s: &str| predicates::Predicate::eval(&re, s)
}

#[test]
fn deadline_threads_pinned_to_one_cpu_get_the_root_domain_explanation() {
    let _guard = serial();
    if !is_root() {
        return common::live_skip("not root: SCHED_DEADLINE needs CAP_SYS_NICE");
    }
    let out = rtlab()
        .args([
            "measure",
            "--policy",
            "deadline",
            "--dl-runtime",
            "100us",
            "--duration",
            "1s",
            "--quiet",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if online_cpus() > 1 {
        // The kernel admits a deadline task only if its affinity spans its root domain.
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("root domain") && stderr.contains("cpuset"),
            "{stderr}"
        );
    } else {
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let run = MeasureRun::from_json(&String::from_utf8_lossy(&out.stdout)).unwrap();
        assert_eq!(run.params.dl_runtime_ns, Some(model::Nanos::from_us(100)));
    }
}
