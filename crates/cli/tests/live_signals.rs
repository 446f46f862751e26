//! Issue 13, live: two signals in a row — what `timeout -s INT`, a process-group signal and an
//! impatient double Ctrl-C send — at several moments of `rtlab measure`, plain, under load and
//! tracing. Every time rtlab must stop in order: exit 130, the result printed, written and
//! stored with status `interrupted`, and every sample taken kept.

mod common;

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use common::{is_root, live_skip, rtlab, serial, wait_for};
use model::measure::{MeasureRun, RunStatus};

/// Sends `sig` to `pid` (a negative pid: the process group).
fn kill(pid: i32, sig: i32) {
    // SAFETY: kill with a pid of our own child (or its group) and a valid signal number.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "kill({pid}, {sig})");
}

/// Starts `rtlab measure` for a minute in its own process group, with `extra` options, its
/// result in `dir`; the standard output is read on a thread (it is larger than a pipe).
fn start(dir: &Path, extra: &[&str]) -> (Child, std::thread::JoinHandle<String>) {
    let mut child = rtlab()
        .env("RTLAB_DB", dir.join("rtlab.db"))
        .args(["measure", "--duration", "60s", "--format", "json", "-q"])
        .arg("--output")
        .arg(dir.join("run.json"))
        .args(extra)
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text);
        text
    });
    (child, reader)
}

/// One case: start, wait `after`, send two signals `gap` apart (to the process, or to its
/// group), and check what was left.
fn double_signal(extra: &[&str], after: Duration, gap: Duration, group: bool) {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, reader) = start(dir.path(), extra);
    std::thread::sleep(after);
    let pid = child.id() as i32;
    let target = if group { -pid } else { pid };
    kill(target, libc::SIGINT);
    std::thread::sleep(gap);
    kill(target, libc::SIGINT);
    let status = wait_for(&mut child, Duration::from_secs(30));
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let stdout = reader.join().unwrap();
    let case = format!("{extra:?} after {after:?}, gap {gap:?}, group {group}");
    assert_eq!(status.code(), Some(130), "{case}: {status:?}\n{stderr}");
    let printed = MeasureRun::from_json(&stdout)
        .unwrap_or_else(|e| panic!("{case}: printed result: {e}\n{stderr}"));
    let saved =
        MeasureRun::from_json(&std::fs::read_to_string(dir.path().join("run.json")).unwrap())
            .unwrap_or_else(|e| panic!("{case}: --json file: {e}"));
    for run in [&printed, &saved] {
        assert_eq!(run.status, RunStatus::Interrupted, "{case}");
    }
    assert_eq!(printed.all.raw.count, saved.all.raw.count, "{case}");
    // Stored too: `rtlab show last` in the run's own store gives the same samples.
    let shown = rtlab()
        .env("RTLAB_DB", dir.path().join("rtlab.db"))
        .args(["show", "last", "--format", "json"])
        .output()
        .unwrap();
    let stored = MeasureRun::from_json(&String::from_utf8_lossy(&shown.stdout))
        .unwrap_or_else(|e| panic!("{case}: stored run: {e}"));
    assert_eq!(stored.all.raw.count, printed.all.raw.count, "{case}");
    // Past the first checkpoint the samples taken are all there.
    if after >= Duration::from_millis(2500) {
        assert!(printed.all.raw.count > 0, "{case}: no samples kept");
    }
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(
        leftovers.is_empty(),
        "{case}: temporary files {leftovers:?}"
    );
}

#[test]
fn two_sigints_at_any_moment_still_save_the_result() {
    let _guard = serial();
    if !is_root() {
        return live_skip("not root: measuring needs SCHED_FIFO");
    }
    let moments = [
        Duration::from_millis(150),
        Duration::from_millis(1200),
        Duration::from_millis(2600),
    ];
    let gaps = [Duration::ZERO, Duration::from_millis(30)];
    for (i, after) in moments.into_iter().enumerate() {
        double_signal(&[], after, gaps[i % 2], i == 1);
    }
}

#[test]
fn two_sigints_under_load_still_save_the_result_and_stop_the_load() {
    let _guard = serial();
    if !is_root() {
        return live_skip("not root: measuring needs SCHED_FIFO");
    }
    let load = ["--load", "cpu:30%,timer-storm:50", "--warmup", "1s"];
    // During the warm-up (nothing measured yet), just after measuring starts, and later.
    for (after, group) in [(500, true), (1400, false), (3000, true)] {
        double_signal(
            &load,
            Duration::from_millis(after),
            Duration::from_millis(10),
            group,
        );
    }
    // No load process outlived its measurement.
    let ps = std::process::Command::new("pgrep")
        .args(["-f", "rtlab load .*--control"])
        .output()
        .unwrap();
    assert!(
        ps.stdout.is_empty(),
        "load left running: {}",
        String::from_utf8_lossy(&ps.stdout)
    );
}

#[test]
fn two_sigints_while_tracing_still_save_the_result_and_remove_the_instance() {
    let _guard = serial();
    if !is_root() {
        return live_skip("not root: tracing needs root");
    }
    let instances = Path::new("/sys/kernel/tracing/instances");
    if !instances.exists() {
        return live_skip("tracefs is not mounted at /sys/kernel/tracing (.ci/run mounts it)");
    }
    for after in [300, 2600] {
        double_signal(
            &["--trace"],
            Duration::from_millis(after),
            Duration::ZERO,
            false,
        );
    }
    let mine: Vec<_> = std::fs::read_dir(instances)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("rtlab-"))
        .collect();
    assert!(mine.is_empty(), "trace instances left: {mine:?}");
}

/// The first checkpoint with samples comes within about a second, whatever --checkpoint says:
/// an rtlab killed early (SIGKILL, a lost machine) still leaves figures behind.
#[test]
fn a_kill_two_seconds_in_leaves_a_checkpoint_with_samples() {
    let _guard = serial();
    if !is_root() {
        return live_skip("not root: measuring needs SCHED_FIFO");
    }
    let dir = tempfile::tempdir().unwrap();
    let (mut child, _reader) = start(dir.path(), &[]);
    std::thread::sleep(Duration::from_millis(2500));
    kill(child.id() as i32, libc::SIGKILL);
    wait_for(&mut child, Duration::from_secs(10));
    let run = MeasureRun::from_json(&std::fs::read_to_string(dir.path().join("run.json")).unwrap())
        .unwrap();
    assert_eq!(run.status, RunStatus::Running);
    assert!(run.all.raw.count > 0, "the checkpoint holds no samples");
    assert!(
        run.unjudgeable().is_some(),
        "an unfinished run passes no gate"
    );
}
