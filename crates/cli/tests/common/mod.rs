//! Helpers the live test binaries share: one test at a time, root or not, the rtlab binary,
//! waiting for it with a limit.

#![allow(
    dead_code,
    reason = "each test binary uses its own part of these helpers"
)]

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
