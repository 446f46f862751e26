//! systemd services: whether systemd is the init system (so a `systemctl` command or a
//! service restart can work at all), and restarting a service that runs, for `rtlab tune`
//! (irqbalance reads its banned CPUs only when it starts). Runs `systemctl`; nothing else here.

use std::path::PathBuf;
use std::process::Command;

use crate::{Error, Result, Root};

/// Whether PID 1 is systemd: its name in `/proc/1/comm`, else in `/proc/1/task/1/stat` (a
/// captured tree may hold only that). A container's PID 1 is its own entry point, so inside
/// one this is false even when the host runs systemd, and `systemctl` would not reach it.
pub fn systemd_is_init(root: &Root) -> bool {
    if let Ok(comm) = root.read("/proc/1/comm") {
        return comm.trim() == "systemd";
    }
    root.read("/proc/1/task/1/stat").is_ok_and(|stat| {
        stat.split_once('(')
            .and_then(|(_, rest)| rest.rsplit_once(')'))
            .is_some_and(|(comm, _)| comm == "systemd")
    })
}

/// `systemctl try-restart UNIT`: restarts the unit if it is running, else does nothing.
pub fn try_restart(unit: &str) -> Result<()> {
    let what = format!("systemctl try-restart {unit}");
    let out = Command::new("systemctl")
        .args(["try-restart", unit])
        .output()
        .map_err(|e| Error::Io {
            path: PathBuf::from(&what),
            source: e,
        })?;
    if out.status.success() {
        return Ok(());
    }
    Err(Error::Unsupported {
        what,
        why: String::from_utf8_lossy(&out.stderr).trim().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::tree;

    #[test]
    fn systemd_is_read_from_pid_1s_name() {
        let (_d, r) = tree(&[("/proc/1/comm", "systemd\n")]);
        assert!(systemd_is_init(&r));
        let (_d, r) = tree(&[("/proc/1/comm", "init\n")]);
        assert!(!systemd_is_init(&r));
        let (_d, r) = tree(&[("/proc/1/task/1/stat", "1 (systemd) S 0 1 1 0 -1")]);
        assert!(systemd_is_init(&r));
        let (_d, r) = tree(&[("/proc/1/task/1/stat", "1 (process_api) S 0 0 0")]);
        assert!(!systemd_is_init(&r));
        let (_d, r) = tree(&[]);
        assert!(!systemd_is_init(&r));
    }
}
