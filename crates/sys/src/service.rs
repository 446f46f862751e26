//! systemd services: restarting one that runs, for `rtlab tune` (irqbalance reads its banned
//! CPUs only when it starts). Runs `systemctl`; nothing else here.

use std::path::PathBuf;
use std::process::Command;

use crate::{Error, Result};

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
