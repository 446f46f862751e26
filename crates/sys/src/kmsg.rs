//! The kernel log ring buffer, read from `/dev/kmsg` without blocking and without consuming it
//! (unlike `dmesg -c`, reading `/dev/kmsg` leaves the buffer as it was for everyone else).
//!
//! On the live machine each `read()` returns one record, `PRI,SEQ,TIMESTAMP_US,FLAGS;text`,
//! followed by ` KEY=value` continuation lines; the end of the buffer is `EAGAIN`. In a fixture
//! tree `/dev/kmsg` is a regular file holding the same records, read whole. Turning records
//! into messages is [`crate::parse::klog`]'s job.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;

use crate::{Error, Result, Root};

/// The kernel log device.
pub const KMSG: &str = "/dev/kmsg";

/// The largest record the kernel hands out in one read (`CONSOLE_EXT_LOG_MAX` is 8 KiB).
const RECORD_MAX: usize = 8192;

/// Reads every record now in the kernel log, oldest first, as `/dev/kmsg` text.
///
/// Errors: `NotFound` when the device is absent, `PermissionDenied` when `dmesg_restrict`
/// keeps it from this user (the fix says so).
pub fn read_all(root: &Root) -> Result<String> {
    root.note(KMSG);
    let path = root.path(KMSG);
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&path)
        .map_err(|e| match Error::from_io(&path, e) {
            Error::PermissionDenied { path, .. } => Error::PermissionDenied {
                path,
                fix: "run as root, or allow it with `sysctl kernel.dmesg_restrict=0`".to_string(),
            },
            other => other,
        })?;
    let is_regular = file.metadata().map(|m| m.is_file()).unwrap_or(false);
    let mut text = String::new();
    if is_regular {
        file.read_to_string(&mut text)
            .map_err(|e| Error::from_io(&path, e))?;
        return Ok(text);
    }
    let mut buf = vec![0u8; RECORD_MAX];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                text.push_str(&String::from_utf8_lossy(&buf[..n]));
                if !text.ends_with('\n') {
                    text.push('\n');
                }
            }
            Err(e) => match e.raw_os_error() {
                Some(libc::EAGAIN) => break,
                // The record was overwritten while we read: the next read resumes at the
                // oldest record still there.
                Some(libc::EPIPE) => continue,
                Some(libc::EINTR) => continue,
                _ => return Err(Error::from_io(&path, e)),
            },
        }
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixture_log_is_read_whole_and_noted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("dev")).unwrap();
        let root = Root::at(dir.path()).recording();
        let text = "6,1,100,-;first\n SUBSYSTEM=x\n4,2,200,-;second\n";
        root.write(KMSG, text).unwrap();
        assert_eq!(read_all(&root).unwrap(), text);
        assert_eq!(root.recorded(), vec![std::path::PathBuf::from(KMSG)]);
    }

    #[test]
    fn a_missing_log_is_not_found() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_all(&Root::at(dir.path())).unwrap_err().is_not_found());
    }

    #[test]
    fn the_live_log_ends_instead_of_blocking() {
        // As root the live buffer is readable; as another user dmesg_restrict may refuse.
        match read_all(&Root::host()) {
            Ok(text) => {
                for line in text.lines().filter(|l| !l.starts_with(' ')) {
                    assert!(line.contains(';'), "not a kmsg record: {line:?}");
                }
            }
            Err(Error::PermissionDenied { fix, .. }) => assert!(fix.contains("dmesg_restrict")),
            Err(e) => panic!("{e}"),
        }
    }
}
