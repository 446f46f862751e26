//! Helpers every test binary of the cli shares: the rtlab binary (with the test store, no
//! colour), one live test at a time, root or not, waiting for a child with a limit; a real
//! `rtlab serve` in [`server`].

#![allow(
    dead_code,
    reason = "each test binary uses its own part of these helpers"
)]

pub(crate) mod campaign;
pub(crate) mod server;

use std::process::{Child, Command, ExitStatus};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

/// Holds the CPUs (and /dev/cpu_dma_latency) for one test at a time.
pub(crate) fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether the tests run as root (the live paths) or not (the fallbacks).
pub(crate) fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Skips a live test that cannot run here: a visible `SKIPPED` line, or under CI a failure
/// ([`testkit::live::skip`]).
#[track_caller]
pub(crate) fn live_skip(why: &str) {
    testkit::live::skip(why);
}

/// For a live monitor test: root (its SCHED_FIFO threads) and tracefs (an incident's
/// explanation); `false` after saying why it cannot run here.
#[track_caller]
pub(crate) fn monitor_live() -> bool {
    if !is_root() {
        live_skip("not root: the monitor measures with SCHED_FIFO threads");
        return false;
    }
    if !std::path::Path::new("/sys/kernel/tracing/trace_marker").exists() {
        live_skip("tracefs is not mounted: an incident's explanation needs it");
        return false;
    }
    true
}

/// What a monitor's store at `db` kept in the last hour: `rtlab monitor history|incidents
/// --format json` (`what`), parsed.
pub(crate) fn monitor_kept(db: &std::path::Path, what: &str) -> serde_json::Value {
    let out = rtlab()
        .args(["monitor", what, "--last", "1h", "--format", "json", "--db"])
        .arg(db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// For a live tune test: the online CPUs and the last of them (the RT CPU), or `None` after
/// saying why it cannot run here (not root, one CPU).
#[track_caller]
pub(crate) fn tune_cpus() -> Option<(String, String)> {
    if !is_root() {
        live_skip("not root: the live tune test needs to write /proc and /sys");
        return None;
    }
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let last = online.trim().rsplit(['-', ',']).next().unwrap().to_string();
    if last == "0" {
        live_skip("one CPU: nothing to isolate");
        return None;
    }
    Some((online, last))
}

/// A trace under `fixtures/traces`.
pub(crate) fn trace_fixture(rel: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/traces")
        .join(rel)
}

/// Runs rtlab with `args`, which must succeed: its standard output.
#[track_caller]
pub(crate) fn run_ok(args: &[&str]) -> String {
    let out = rtlab().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The rtlab binary under test, without colour.
pub(crate) fn rtlab() -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("rtlab"));
    cmd.env("NO_COLOR", "1");
    // Measurements are saved: into the test run's own store, not the user's.
    cmd.env(
        "RTLAB_DB",
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("rtlab-tests.db"),
    );
    cmd
}

/// The rtlab binary under test as an `assert_cmd` command: no colour, and saving into the test
/// run's own store (not the user's).
pub(crate) fn rtlab_checked() -> assert_cmd::Command {
    rtlab_with_store(&std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("rtlab-tests.db"))
}

/// As [`rtlab_checked`], with the run store at `db` (`RTLAB_DB`).
pub(crate) fn rtlab_with_store(db: &std::path::Path) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::new(assert_cmd::cargo::cargo_bin("rtlab"));
    cmd.env("NO_COLOR", "1").env("RTLAB_DB", db);
    cmd
}

/// Every run the store `db` (a path or a PostgreSQL URL) holds, newest first, as
/// `rtlab runs --format json` lists them.
pub(crate) fn stored_runs(db: impl AsRef<std::ffi::OsStr>) -> Vec<serde_json::Value> {
    let out = rtlab()
        .args(["runs", "--format", "json", "-n", "100000", "--db"])
        .arg(db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "rtlab runs: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Waits for `child` to exit, failing the test after `limit`.
pub(crate) fn wait_for(child: &mut Child, limit: Duration) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(
            start.elapsed() < limit,
            "rtlab did not finish within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The last online CPU (the one the live tune tests isolate), or `None` on a one-CPU machine.
pub(crate) fn last_cpu() -> Option<String> {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let online = online.trim();
    (online != "0").then(|| online.rsplit(['-', ',']).next().unwrap().to_string())
}

/// A thread's policy and real-time priority (`stat` fields 41 and 40) in `chrt`'s words:
/// `FIFO 50`, `RR 10`, `OTHER` (any other policy too).
pub(crate) fn thread_sched(proc_dir: &str) -> Option<String> {
    let stat = std::fs::read_to_string(format!("{proc_dir}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(") ")?.1.split(' ').collect();
    let (prio, policy) = (fields.get(37)?, fields.get(38)?);
    Some(match *policy {
        "1" => format!("FIFO {prio}"),
        "2" => format!("RR {prio}"),
        _ => "OTHER".to_string(),
    })
}

/// What every change of a tune plan (`rtlab.tune-plan/1` JSON) touches, as it is now: a file's
/// contents (none when absent), a thread's policy or allowed CPUs. Equal before apply and after
/// revert when revert put everything back.
pub(crate) fn plan_snapshot(plan: &serde_json::Value) -> Vec<(String, Option<String>)> {
    plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let path = c["path"].as_str().unwrap().to_string();
            let now = if c["action"] == "set-policy" {
                thread_sched(&path)
            } else if c["action"] == "set-affinity" {
                std::fs::read_to_string(format!("{path}/status"))
                    .ok()
                    .and_then(|s| {
                        s.lines()
                            .find(|l| l.starts_with("Cpus_allowed_list:"))
                            .map(str::to_string)
                    })
            } else {
                std::fs::read_to_string(&path).ok()
            };
            (path, now)
        })
        .collect()
}

/// A PostgreSQL database of its own on the test server (`RTLAB_TEST_POSTGRES`), dropped when
/// this goes; `None` after saying why it cannot be had ([`testkit::live::postgres_or_skip`]).
pub(crate) struct PostgresDb {
    admin: String,
    name: String,
    /// Its address, for `--db`.
    pub url: String,
}

impl PostgresDb {
    /// A new database named `prefix` and this process's id.
    pub(crate) fn create(prefix: &str) -> Option<PostgresDb> {
        let admin = testkit::live::postgres_or_skip()?;
        let name = format!("{prefix}_{}", std::process::id());
        let url = format!("{}/{name}", admin.rsplit_once('/').unwrap().0);
        let db = PostgresDb { admin, name, url };
        db.psql(&format!("CREATE DATABASE {}", db.name));
        Some(db)
    }

    fn psql(&self, sql: &str) {
        let out = Command::new("psql")
            .args([self.admin.as_str(), "-v", "ON_ERROR_STOP=1", "-Atc", sql])
            .output()
            .expect("psql runs (Debian's postgresql-client)");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for PostgresDb {
    fn drop(&mut self) {
        // Also while a failed test unwinds: a second panic here would abort the run.
        let _ = Command::new("psql")
            .arg(&self.admin)
            .args(["-Atc", &format!("DROP DATABASE {} WITH (FORCE)", self.name)])
            .output();
    }
}
