//! The CPU latency PM QoS request (`/dev/cpu_dma_latency`): holding it keeps every CPU out of
//! idle states whose exit latency exceeds the requested microseconds, so the measurement is
//! not dominated by wake-ups from deep C-states.
//!
//! The kernel ties a request to an open file descriptor (Documentation/power/pm_qos_interface.rst):
//! it holds while the fd is open and is dropped when it closes — on [`Drop`], on exit, and
//! even on SIGKILL, so a killed rtlab never leaves the machine pinned out of idle. This module
//! opens, writes and reads the device; it must not decide whether a request is wanted, nor
//! write any other power-management knob.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::PathBuf;

use crate::{Error, Result, Root};

/// The device, as a kernel path under a [`Root`].
const DEVICE: &str = "/dev/cpu_dma_latency";

/// A held CPU latency request. The request lasts as long as this value: dropping it closes the
/// fd and the kernel removes the request.
#[derive(Debug)]
pub struct DmaLatencyRequest {
    /// Never read: holding it open is the request.
    _fd: File,
    path: PathBuf,
    requested_us: u32,
}

impl DmaLatencyRequest {
    /// Opens `/dev/cpu_dma_latency` under `root` read-write and requests a CPU wake-up latency
    /// of at most `us` microseconds (0 = stay out of every idle state but polling). The value
    /// goes as a native-endian `i32`, the 4-byte binary form the device takes.
    ///
    /// A missing device is [`Error::NotFound`] (a kernel without CONFIG_CPU_IDLE's PM QoS, or a
    /// container without `/dev`): callers degrade with a warning.
    pub fn hold(root: &Root, us: u32) -> Result<DmaLatencyRequest> {
        let path = root.path(DEVICE);
        let value = i32::try_from(us).map_err(|_| Error::Unsupported {
            what: format!("{}: requesting {us} us", path.display()),
            why: "the kernel takes a signed 32-bit number of microseconds (at most 2147483647)"
                .to_string(),
        })?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| Error::from_io(&path, e))?;
        let written = file
            .write(&value.to_ne_bytes())
            .map_err(|e| Error::from_io(&path, e))?;
        if written != 4 {
            return Err(Error::Io {
                path,
                source: std::io::Error::other(format!("wrote {written} of 4 bytes")),
            });
        }
        Ok(DmaLatencyRequest {
            _fd: file,
            path,
            requested_us: us,
        })
    }

    /// The latency this request asked for, in microseconds.
    pub fn requested_us(&self) -> u32 {
        self.requested_us
    }

    /// The device this request holds open.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The aggregate CPU latency limit now in force (the smallest of all requests, or the
    /// kernel's default, 2000000000 us, when none), in microseconds.
    pub fn current_us(root: &Root) -> Result<i32> {
        let path = root.path(DEVICE);
        let mut bytes = [0u8; 4];
        File::open(&path)
            .and_then(|mut f| f.read_exact(&mut bytes))
            .map_err(|e| Error::from_io(&path, e))?;
        Ok(i32::from_ne_bytes(bytes))
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    #[test]
    fn writes_the_binary_value_into_a_fixture_device() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        let err = DmaLatencyRequest::hold(&root, 0).unwrap_err();
        assert!(err.is_not_found(), "{err}");
        assert!(err.to_string().contains("dev/cpu_dma_latency"), "{err}");
        std::fs::create_dir(dir.path().join("dev")).unwrap();
        std::fs::write(root.path(DEVICE), 2_000_000_000i32.to_ne_bytes()).unwrap();
        let held = DmaLatencyRequest::hold(&root, 7).unwrap();
        assert_eq!(held.requested_us(), 7);
        assert_eq!(DmaLatencyRequest::current_us(&root).unwrap(), 7);
        let err = DmaLatencyRequest::hold(&root, u32::MAX).unwrap_err();
        assert!(err.to_string().contains("signed 32-bit"), "{err}");
    }

    #[test]
    fn live_request_holds_until_dropped() {
        let root = Root::host();
        let before = match DmaLatencyRequest::current_us(&root) {
            Err(e) if e.is_not_found() => {
                return testkit::live::skip(&format!(
                    "{e}: this kernel has no CPU latency QoS device"
                ));
            }
            other => other.unwrap(),
        };
        eprintln!("cpu_dma_latency before: {before} us");
        let held = DmaLatencyRequest::hold(&root, 0).unwrap();
        // The aggregate is the minimum of all requests: 0 wins over any other holder.
        assert_eq!(DmaLatencyRequest::current_us(&root).unwrap(), 0);
        drop(held);
        // Another process may hold or release a request meanwhile: allow it a moment to settle
        // back to what it was.
        let start = Instant::now();
        let mut after = DmaLatencyRequest::current_us(&root).unwrap();
        while after != before && start.elapsed() < Duration::from_secs(1) {
            std::thread::sleep(Duration::from_millis(10));
            after = DmaLatencyRequest::current_us(&root).unwrap();
        }
        assert_eq!(
            after, before,
            "another process may hold /dev/cpu_dma_latency"
        );
    }
}
