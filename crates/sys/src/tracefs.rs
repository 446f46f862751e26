//! The tracefs control files `measure --break` needs: finding the mount, reading and switching
//! `tracing_on`, and the [`BreakTrigger`] that marks the trace and stops it when a sample
//! crosses the threshold, so the trace ends at the spike (cyclictest's `--breaktrace`).
//!
//! The trigger's files are opened up front and [`BreakTrigger::fire`] neither allocates nor
//! formats through `std::fmt`: it may be called from a measuring thread right after its loop
//! noticed a spike. Sessions, instances and event enabling belong to the trace room; this module
//! must not enable events or change the tracer, and callers restore `tracing_on` themselves;
//! private instances with their own events are [`crate::trace_instance`].

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::{Error, Result, Root};

/// Where tracefs is looked for, in order.
const MOUNTS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// The command that mounts tracefs where rtlab looks first.
pub fn mount_hint() -> &'static str {
    "mount -t tracefs nodev /sys/kernel/tracing"
}

/// A tracefs directory: the top-level one, or an instance (`instances/NAME`), which has the same
/// control files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tracefs {
    dir: PathBuf,
}

impl Tracefs {
    /// The mounted tracefs under `root`: the first of `/sys/kernel/tracing` and
    /// `/sys/kernel/debug/tracing` that holds a `trace_marker`. `None` when neither does (see
    /// [`mount_hint`]).
    pub fn find(root: &Root) -> Option<Tracefs> {
        MOUNTS
            .iter()
            .map(|m| root.path(m))
            .find(|dir| dir.join("trace_marker").exists())
            .map(|dir| Tracefs { dir })
    }

    /// A tracefs directory at a known real path (an instance, or a fixture tree).
    pub fn at(dir: impl Into<PathBuf>) -> Tracefs {
        Tracefs { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether the ring buffer records (`tracing_on` is non-zero).
    pub fn is_on(&self) -> Result<bool> {
        let path = self.dir.join("tracing_on");
        let text = std::fs::read_to_string(&path).map_err(|e| Error::from_io(&path, e))?;
        match text.trim().parse::<u64>() {
            Ok(value) => Ok(value != 0),
            Err(_) => Err(Error::Parse {
                path,
                line: 1,
                what: "0 or 1".to_string(),
            }),
        }
    }

    /// Starts (`1`) or stops (`0`) recording into the ring buffer.
    pub fn set_on(&self, on: bool) -> Result<()> {
        let path = self.dir.join("tracing_on");
        OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .and_then(|mut f| f.write_all(if on { b"1" } else { b"0" }))
            .map_err(|e| Error::from_io(&path, e))
    }

    /// Opens `tracing_on` for writing now, so that stopping the trace later is one write(2)
    /// call and nothing else (the measuring threads stop their own instance's trace as the
    /// last of them finishes, so the buffer ends where the measurement did).
    pub fn stopper(&self) -> Result<TraceStop> {
        let path = self.dir.join("tracing_on");
        OpenOptions::new()
            .write(true)
            .open(&path)
            .map(|tracing_on| TraceStop { tracing_on })
            .map_err(|e| Error::from_io(&path, e))
    }

    /// Opens `trace_marker` and `tracing_on` for writing now, so that firing later is two
    /// write(2) calls and nothing else.
    pub fn break_trigger(&self) -> Result<BreakTrigger> {
        let open = |name: &str| {
            let path = self.dir.join(name);
            OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(|e| Error::from_io(&path, e))
        };
        Ok(BreakTrigger {
            marker: open("trace_marker")?,
            tracing_on: open("tracing_on")?,
        })
    }
}

/// Stops a trace with one write(2); shared by the measuring threads (it is `Send + Sync`).
#[derive(Debug)]
pub struct TraceStop {
    tracing_on: File,
}

impl TraceStop {
    /// Writes `0` to `tracing_on`; whether the kernel took it. No allocation.
    pub fn stop(&self) -> bool {
        matches!(self.tracing_on.write_at(b"0", 0), Ok(1))
    }
}

/// Marks the trace and stops it; shared by the measuring threads (it is `Send + Sync`).
#[derive(Debug)]
pub struct BreakTrigger {
    marker: File,
    tracing_on: File,
}

impl BreakTrigger {
    /// Writes `rtlab: break: CPU {cpu} woke {latency_ns} ns late (threshold {threshold_ns} ns)
    /// at cycle {cycle}` to `trace_marker`, then `0` to `tracing_on`: exactly two write(2)
    /// calls, no allocation. Returns whether tracing was stopped (the marker is best effort).
    pub fn fire(&self, cpu: u32, latency_ns: u64, threshold_ns: u64, cycle: u64) -> bool {
        let line = marker_line(cpu, latency_ns, threshold_ns, cycle);
        let _ = (&self.marker).write(line.as_bytes());
        matches!(self.tracing_on.write_at(b"0", 0), Ok(1))
    }
}

/// The marker text in a stack buffer (at most 129 bytes: every number at its widest).
struct Line {
    buf: [u8; 160],
    len: usize,
}

impl Line {
    fn push(&mut self, bytes: &[u8]) {
        let n = bytes.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&bytes[..n]);
        self.len += n;
    }

    fn push_u64(&mut self, mut value: u64) {
        let mut digits = [0u8; 20];
        let mut start = digits.len();
        loop {
            start -= 1;
            digits[start] = b'0' + (value % 10) as u8;
            value /= 10;
            if value == 0 {
                break;
            }
        }
        self.push(&digits[start..]);
    }

    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

fn marker_line(cpu: u32, latency_ns: u64, threshold_ns: u64, cycle: u64) -> Line {
    let mut line = Line {
        buf: [0; 160],
        len: 0,
    };
    line.push(b"rtlab: break: CPU ");
    line.push_u64(cpu.into());
    line.push(b" woke ");
    line.push_u64(latency_ns);
    line.push(b" ns late (threshold ");
    line.push_u64(threshold_ns);
    line.push(b" ns) at cycle ");
    line.push_u64(cycle);
    line.push(b"\n");
    line
}

#[cfg(test)]
mod tests {
    use std::ffi::CString;

    use super::*;

    #[test]
    fn formats_the_marker_without_std_fmt() {
        let line = marker_line(3, 123_456, 100_000, 0);
        assert_eq!(
            std::str::from_utf8(line.as_bytes()).unwrap(),
            "rtlab: break: CPU 3 woke 123456 ns late (threshold 100000 ns) at cycle 0\n"
        );
        let widest = marker_line(u32::MAX, u64::MAX, u64::MAX, u64::MAX);
        assert_eq!(widest.len, 129);
        assert!(
            widest
                .as_bytes()
                .ends_with(b"at cycle 18446744073709551615\n")
        );
    }

    #[test]
    fn is_shareable_between_measuring_threads() {
        fn shareable<T: Send + Sync>() {}
        shareable::<BreakTrigger>();
        shareable::<TraceStop>();
    }

    #[test]
    fn the_stopper_switches_tracing_off() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Tracefs::at(dir.path());
        assert!(fs.stopper().unwrap_err().is_not_found());
        std::fs::write(dir.path().join("tracing_on"), "1").unwrap();
        let stop = fs.stopper().unwrap();
        assert!(fs.is_on().unwrap());
        assert!(stop.stop());
        assert!(!fs.is_on().unwrap());
    }

    #[test]
    fn fires_into_a_fixture_tree() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        assert_eq!(Tracefs::find(&root), None);
        let tracing = root.path("/sys/kernel/debug/tracing");
        std::fs::create_dir_all(&tracing).unwrap();
        std::fs::write(tracing.join("trace_marker"), "").unwrap();
        std::fs::write(tracing.join("tracing_on"), "1\n").unwrap();
        let fs = Tracefs::find(&root).unwrap();
        assert_eq!(fs.dir(), tracing);
        assert!(fs.is_on().unwrap());
        assert!(fs.break_trigger().unwrap().fire(1, 50_000, 20_000, 42));
        assert!(!fs.is_on().unwrap());
        let marker = std::fs::read_to_string(tracing.join("trace_marker")).unwrap();
        assert_eq!(
            marker,
            "rtlab: break: CPU 1 woke 50000 ns late (threshold 20000 ns) at cycle 42\n"
        );
        std::fs::write(tracing.join("tracing_on"), "x\n").unwrap();
        assert!(matches!(fs.is_on(), Err(Error::Parse { .. })));
        std::fs::remove_file(tracing.join("tracing_on")).unwrap();
        let err = fs.break_trigger().unwrap_err();
        assert!(
            err.is_not_found() && err.to_string().contains("tracing_on"),
            "{err}"
        );
    }

    /// Mounts tracefs for the test when it is absent, and restores what it touched.
    struct Live {
        fs: Tracefs,
        was_on: bool,
        mounted: Option<CString>,
    }

    impl Drop for Live {
        fn drop(&mut self) {
            let _ = self.fs.set_on(self.was_on);
            if let Some(target) = &self.mounted {
                // SAFETY: `target` is a valid C string naming the mount this test made.
                unsafe { libc::umount(target.as_ptr()) };
            }
        }
    }

    fn live() -> Option<Live> {
        let root = Root::host();
        let mut mounted = None;
        if Tracefs::find(&root).is_none() {
            let target = CString::new(MOUNTS[0]).unwrap();
            // SAFETY: every argument is a valid C string; tracefs takes no mount data.
            let rc = unsafe {
                libc::mount(
                    c"nodev".as_ptr(),
                    target.as_ptr(),
                    c"tracefs".as_ptr(),
                    0,
                    std::ptr::null(),
                )
            };
            let err = std::io::Error::last_os_error();
            if rc != 0 && err.raw_os_error() == Some(libc::ENODEV) {
                testkit::live::skip(&format!("this kernel has no tracefs ({err})"));
                return None;
            }
            assert_eq!(rc, 0, "{}: {err}", mount_hint());
            mounted = Some(target);
        }
        let fs = Tracefs::find(&root).expect("tracefs mounted but no trace_marker");
        let was_on = fs.is_on().unwrap();
        Some(Live {
            fs,
            was_on,
            mounted,
        })
    }

    #[test]
    fn live_trigger_marks_the_trace_and_stops_it() {
        let Some(live) = live() else { return };
        live.fs.set_on(true).unwrap();
        assert!(live.fs.is_on().unwrap());
        let trigger = std::sync::Arc::new(live.fs.break_trigger().unwrap());
        let cycle = u64::from(std::process::id()) * 1000 + 7;
        let fired = std::thread::spawn({
            let trigger = trigger.clone();
            move || trigger.fire(1, 987_654, 100_000, cycle)
        });
        assert!(fired.join().unwrap());
        assert!(
            !live.fs.is_on().unwrap(),
            "tracing_on still set after firing"
        );
        let trace = std::fs::read_to_string(live.fs.dir().join("trace")).unwrap();
        let want = format!(
            "rtlab: break: CPU 1 woke 987654 ns late (threshold 100000 ns) at cycle {cycle}"
        );
        let found = trace.lines().find(|l| l.ends_with(&want));
        assert!(found.is_some(), "no marker line in the trace");
        eprintln!("{}", found.unwrap());
    }
}
