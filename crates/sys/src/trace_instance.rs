//! A private tracefs instance (`instances/rtlab-<pid>`): its own ring buffer, clock, events and
//! on/off switch, so rtlab's trace never disturbs a trace someone else is taking. Created with
//! [`Instance::create`], removed when dropped (tracing stopped, then `rmdir`), and instances
//! left by an rtlab that was killed are removed by [`remove_stale`] before a new one is made.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::tracefs::Tracefs;
use crate::{Error, Result};

/// Name prefix of rtlab's instances; the owner's pid follows.
pub const PREFIX: &str = "rtlab-";

/// One CPU's ring-buffer statistics (`per_cpu/cpuN/stats`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuStats {
    /// Events in the buffer.
    pub entries: u64,
    /// Events overwritten (the buffer wrapped).
    pub overrun: u64,
    /// Events dropped (buffer full in non-overwrite mode).
    pub dropped: u64,
    /// Timestamp of the oldest event still in the buffer, ns of the trace clock.
    pub oldest_ns: Option<u64>,
}

/// A tracefs instance this process owns.
#[derive(Debug)]
pub struct Instance {
    fs: Tracefs,
    name: String,
    removed: bool,
}

impl Instance {
    /// Creates `instances/rtlab-<pid>` under `top` (removing stale rtlab instances first).
    pub fn create(top: &Tracefs) -> Result<Instance> {
        let instances = top.dir().join("instances");
        remove_stale(&instances);
        let name = format!("{PREFIX}{}", std::process::id());
        let dir = instances.join(&name);
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(Error::from_io(&dir, e)),
        }
        Ok(Instance {
            fs: Tracefs::at(dir),
            name,
            removed: false,
        })
    }

    /// The instance's name (`rtlab-4242`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The instance as a tracefs directory (for its break trigger).
    pub fn tracefs(&self) -> &Tracefs {
        &self.fs
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        self.fs.dir()
    }

    /// The clocks the kernel offers (`trace_clock`), the selected one first.
    pub fn clocks(&self) -> Result<Vec<String>> {
        let text = self.read("trace_clock")?;
        let mut clocks: Vec<String> = Vec::new();
        for word in text.split_whitespace() {
            match word.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
                Some(selected) => clocks.insert(0, selected.to_string()),
                None => clocks.push(word.to_string()),
            }
        }
        Ok(clocks)
    }

    /// Selects the trace clock.
    pub fn set_clock(&self, clock: &str) -> Result<()> {
        self.write("trace_clock", clock)
    }

    /// Sets each CPU's ring buffer to `kb` KiB.
    pub fn set_buffer_kb(&self, kb: u64) -> Result<()> {
        self.write("buffer_size_kb", &kb.to_string())
    }

    /// Records only on `cpus` (a hex mask as `tracing_cpumask` takes it).
    pub fn set_cpumask(&self, mask_hex: &str) -> Result<()> {
        self.write("tracing_cpumask", mask_hex)
    }

    /// Whether the kernel has `group/event`, or the event group `group` (a name without `/`).
    pub fn has_event(&self, event: &str) -> bool {
        let dir = self.dir().join("events").join(event);
        dir.join("enable").exists() || (!event.contains('/') && dir.is_dir())
    }

    /// Enables `group/event` (or a whole `group`).
    pub fn enable_event(&self, event: &str) -> Result<()> {
        self.write(&format!("events/{event}/enable"), "1")
    }

    /// Records `group/event` only when `filter` holds (the kernel's filter syntax,
    /// Documentation/trace/events.rst: `pid == 42 || pid == 43`).
    pub fn set_event_filter(&self, event: &str, filter: &str) -> Result<()> {
        self.write(&format!("events/{event}/filter"), filter)
    }

    /// Starts or stops recording.
    pub fn set_on(&self, on: bool) -> Result<()> {
        self.fs.set_on(on)
    }

    /// Whether the kernel keeps a snapshot buffer for the instance (`CONFIG_TRACER_SNAPSHOT`:
    /// its `snapshot` file).
    pub fn has_snapshot(&self) -> bool {
        self.dir().join("snapshot").exists()
    }

    /// Empties the snapshot buffer (`2` to `snapshot`; nothing before the first
    /// [`Instance::snapshot`] allocates it). It can take a while (the kernel waits for an RCU
    /// grace period); the recording buffer is not touched.
    pub fn clear_snapshot(&self) -> Result<()> {
        self.write("snapshot", "2")
    }

    /// Keeps what the recording buffer holds now: it is swapped with the snapshot buffer (`1`,
    /// which allocates that the first time, as large as the recording buffer), so recording
    /// goes on into the old snapshot buffer (empty after [`Instance::clear_snapshot`]) and the
    /// snapshot holds everything up to now. Recording is not stopped or paused.
    pub fn snapshot(&self) -> Result<()> {
        self.write("snapshot", "1")
    }

    /// Empties the ring buffer.
    pub fn clear(&self) -> Result<()> {
        self.write("trace", "")
    }

    /// The `trace` file to read the buffer from (open it, read it, close it before the
    /// instance is dropped: an open file keeps the instance busy).
    pub fn trace_path(&self) -> PathBuf {
        self.dir().join("trace")
    }

    /// The `trace` file of one CPU's buffer.
    pub fn cpu_trace_path(&self, cpu: u32) -> PathBuf {
        self.dir().join(format!("per_cpu/cpu{cpu}/trace"))
    }

    /// The `trace` file, opened for reading (drop the reader before the instance: an open file
    /// keeps the instance busy).
    pub fn open_trace(&self) -> std::io::Result<std::io::BufReader<std::fs::File>> {
        std::fs::File::open(self.trace_path()).map(std::io::BufReader::new)
    }

    /// One CPU's `trace` file, opened for reading (drop it before the instance).
    pub fn open_cpu_trace(&self, cpu: u32) -> std::io::Result<std::io::BufReader<std::fs::File>> {
        std::fs::File::open(self.cpu_trace_path(cpu)).map(std::io::BufReader::new)
    }

    /// Copies the buffer's text into the user file `to`, whole or not at all: it goes into
    /// `to` with the extension `partial` first, is synced, and is renamed into place; on any
    /// error the partial file is removed. Returns the bytes written. With `as_is` (a device,
    /// FIFO or descriptor) it is appended to `to` as it is instead.
    pub fn copy_trace(&self, to: &Path, as_is: bool) -> std::io::Result<u64> {
        let tmp = to.with_extension("partial");
        if as_is {
            // A device, FIFO or descriptor: copied into as it is, never replaced.
            let mut from = std::fs::File::open(self.trace_path())?;
            let mut into = std::fs::OpenOptions::new().append(true).open(to)?;
            return std::io::copy(&mut from, &mut into);
        }
        let written = (|| {
            let mut from = std::fs::File::open(self.trace_path())?;
            let mut file = std::fs::File::create(&tmp)?;
            let n = std::io::copy(&mut from, &mut file)?;
            file.sync_all()?;
            std::fs::rename(&tmp, to)?;
            Ok(n)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }

    /// The CPUs the instance has a buffer for (its `per_cpu/cpuN` directories).
    pub fn buffer_cpus(&self) -> Vec<u32> {
        let Ok(dir) = std::fs::read_dir(self.dir().join("per_cpu")) else {
            return Vec::new();
        };
        let mut cpus: Vec<u32> = dir
            .filter_map(|e| {
                e.ok()?
                    .file_name()
                    .to_str()?
                    .strip_prefix("cpu")?
                    .parse()
                    .ok()
            })
            .collect();
        cpus.sort_unstable();
        cpus
    }

    /// Ring-buffer statistics of `cpu`.
    pub fn cpu_stats(&self, cpu: u32) -> Result<CpuStats> {
        let text = self.read(&format!("per_cpu/cpu{cpu}/stats"))?;
        Ok(parse_stats(&text))
    }

    /// Stops tracing and removes the instance; what [`Drop`] does, with the error.
    pub fn remove(mut self) -> Result<()> {
        self.removed = true;
        let _ = self.fs.set_on(false);
        std::fs::remove_dir(self.dir()).map_err(|e| Error::from_io(self.dir(), e))
    }

    fn read(&self, file: &str) -> Result<String> {
        let path = self.dir().join(file);
        std::fs::read_to_string(&path).map_err(|e| Error::from_io(&path, e))
    }

    fn write(&self, file: &str, value: &str) -> Result<()> {
        let path = self.dir().join(file);
        OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .and_then(|mut f| f.write_all(value.as_bytes()))
            .map_err(|e| Error::from_io(&path, e))
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if !self.removed {
            let _ = self.fs.set_on(false);
            let _ = std::fs::remove_dir(self.dir());
        }
    }
}

/// Removes `rtlab-<pid>` instances under `instances` whose process is gone (an rtlab killed
/// while tracing). Best effort.
pub fn remove_stale(instances: &Path) {
    let Ok(entries) = std::fs::read_dir(instances) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// The hex mask `tracing_cpumask` takes for `cpus` (`3` for CPUs 0-1; comma-separated 32-bit
/// groups past CPU 31, as the kernel prints it).
pub fn cpumask_hex(cpus: impl IntoIterator<Item = u32>) -> String {
    let mut words: Vec<u32> = Vec::new();
    for cpu in cpus {
        let w = (cpu / 32) as usize;
        if words.len() <= w {
            words.resize(w + 1, 0);
        }
        words[w] |= 1 << (cpu % 32);
    }
    if words.is_empty() {
        return "0".to_string();
    }
    let mut out = format!("{:x}", words[words.len() - 1]);
    for w in words.iter().rev().skip(1) {
        out.push_str(&format!(",{w:08x}"));
    }
    out
}

/// Parses `per_cpu/cpuN/stats`.
pub fn parse_stats(text: &str) -> CpuStats {
    let mut s = CpuStats::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            "entries" => s.entries = value.parse().unwrap_or(0),
            "overrun" => s.overrun = value.parse().unwrap_or(0),
            "dropped events" => s.dropped = value.parse().unwrap_or(0),
            "oldest event ts" => {
                s.oldest_ns = value.split_once('.').and_then(|(secs, frac)| {
                    let secs: u64 = secs.trim().parse().ok()?;
                    let digits = frac.len().min(9) as u32;
                    let frac: u64 = frac.get(..digits as usize)?.parse().ok()?;
                    Some(secs * 1_000_000_000 + frac * 10u64.pow(9 - digits))
                });
            }
            _ => {}
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_and_stats() {
        assert_eq!(cpumask_hex([0, 1]), "3");
        assert_eq!(cpumask_hex([1]), "2");
        assert_eq!(cpumask_hex([0, 33]), "2,00000001");
        assert_eq!(cpumask_hex([]), "0");
        let s = parse_stats(
            "entries: 1786\noverrun: 5\ncommit overrun: 0\nbytes: 70372\noldest event ts: 13555.496016\nnow ts: 13555.776367\ndropped events: 2\nread events: 0\n",
        );
        assert_eq!(
            s,
            CpuStats {
                entries: 1786,
                overrun: 5,
                dropped: 2,
                oldest_ns: Some(13_555_496_016_000)
            }
        );
    }

    #[test]
    fn events_and_groups_are_found_in_a_fixture_tree() {
        let tree = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tree.path().join("instances")).unwrap();
        let inst = Instance::create(&Tracefs::at(tree.path())).unwrap();
        for d in ["events/sched/sched_switch", "events/ipi"] {
            std::fs::create_dir_all(inst.dir().join(d)).unwrap();
        }
        std::fs::write(inst.dir().join("events/sched/sched_switch/enable"), "0\n").unwrap();
        assert!(inst.has_event("sched/sched_switch"));
        assert!(inst.has_event("ipi"), "a group without its own enable file");
        assert!(!inst.has_event("sched/sched_waking"));
        assert!(!inst.has_event("irq"));
        inst.enable_event("sched/sched_switch").unwrap();
        assert_eq!(
            std::fs::read_to_string(inst.dir().join("events/sched/sched_switch/enable")).unwrap(),
            "1"
        );
    }

    #[test]
    fn live_instance_is_private_and_removed() {
        let root = crate::Root::host();
        let Some(top) = Tracefs::find(&root) else {
            return testkit::live::skip("tracefs is not mounted here (.ci/run mounts it)");
        };
        let was_on = top.is_on().unwrap();
        let inst = Instance::create(&top).unwrap();
        let dir = inst.dir().to_path_buf();
        assert!(dir.ends_with(format!("instances/rtlab-{}", std::process::id())));
        assert!(inst.clocks().unwrap().iter().any(|c| c == "mono"));
        inst.set_clock("mono").unwrap();
        assert_eq!(inst.clocks().unwrap()[0], "mono");
        inst.set_buffer_kb(256).unwrap();
        assert!(inst.has_event("sched/sched_switch"));
        assert!(!inst.has_event("sched/no_such_event"));
        assert!(inst.has_event("sched"));
        inst.enable_event("sched/sched_switch").unwrap();
        inst.set_on(true).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        inst.set_on(false).unwrap();
        let text = std::fs::read_to_string(inst.trace_path()).unwrap();
        assert!(text.contains("sched_switch:"), "no switch in 20 ms?");
        let stats = inst.cpu_stats(0).unwrap();
        assert!(stats.oldest_ns.is_some() || stats.entries == 0);
        // The top-level switch is untouched.
        assert_eq!(top.is_on().unwrap(), was_on);
        drop(inst);
        assert!(!dir.exists(), "instance left behind");
    }
}
