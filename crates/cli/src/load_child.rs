//! The load process of `rtlab measure --load`: rtlab runs its own `load --control` as a child
//! so the load never shares an address space, memory locks or allocator with the measuring
//! threads (a page-fault storm in the same process would send TLB-shootdown IPIs to the
//! measured CPUs). The child is in its own process group (Ctrl-C reaches only the measuring
//! rtlab, which stops it in order), dies by SIGKILL if the measuring rtlab dies, and has its
//! own guardian.
//!
//! Protocol: the child prints `ready JSON` once every generator runs; `mark` on its stdin
//! opens the reporting window; end of its stdin stops it, and it prints the final report.
//!
//! With `--load-join CGROUP` the child starts inside that existing cgroup while rtlab measures
//! from its own (after `rtlab tune apply`: the load on the housekeeping CPUs, the measurement
//! in the RT cpuset): rtlab steps into CGROUP to spawn the child, so the child and everything
//! it starts (the guardian, worker processes) begin there, and steps back at once. The
//! report's `cgroup` names CGROUP.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use anyhow::{Context, Result};
use model::load::{LoadReport, LoadSpec};
use sys::Root;

use crate::exit::UsageError;
use crate::flags::LoadPlacementArgs;

/// A running load child.
pub struct LoadChild {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// The report it gave when ready (spec, placement, tasks; no window yet).
    pub initial: LoadReport,
    /// The cgroup it was started in (`--load-join`).
    joined: Option<String>,
}

impl LoadChild {
    /// Starts `rtlab load SPEC --control ...` (inside the cgroup directory `join`, when given)
    /// and waits until it is ready (or failed: its own error line is already on standard error
    /// then).
    pub fn start(
        spec: &LoadSpec,
        placement: &LoadPlacementArgs,
        join: Option<&str>,
        root: &Root,
    ) -> Result<LoadChild> {
        let exe = std::env::current_exe().context("finding rtlab's own executable")?;
        let mut cmd = Command::new(exe);
        if !root.is_host() {
            cmd.arg("--root").arg(root.base());
        }
        cmd.arg("load").arg(spec.to_string()).arg("--control");
        if let Some(cpus) = &placement.load_cpus {
            cmd.arg("--load-cpus").arg(cpus.to_string());
        }
        if placement.load_cgroup {
            cmd.arg("--load-cgroup");
        }
        if let Some(dir) = &placement.load_dir {
            cmd.arg("--load-dir").arg(dir);
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        sys::process::die_with_parent(&mut cmd);
        let mut child = match join {
            Some(dir) if root.is_host() => spawn_in(&mut cmd, dir, root)?,
            _ => cmd.spawn().context("starting the load process")?,
        };
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout was piped"));
        let mut line = String::new();
        stdout
            .read_line(&mut line)
            .context("reading from the load process")?;
        let Some(json) = line.strip_prefix("ready ") else {
            let status = child.wait().context("waiting for the load process")?;
            return Err(UsageError(format!(
                "the load did not start ({status}); nothing was measured"
            ))
            .into());
        };
        let mut initial = embedded(json)?;
        let joined = join.map(str::to_string);
        if joined.is_some() {
            initial.cgroup.clone_from(&joined);
        }
        Ok(LoadChild {
            child,
            stdin,
            stdout,
            initial,
            joined,
        })
    }

    /// Opens the reporting window now.
    pub fn mark(&mut self) {
        if let Some(stdin) = &mut self.stdin {
            let _ = stdin.write_all(b"mark\n").and_then(|()| stdin.flush());
        }
    }

    /// Closes the reporting window and stops the load (its input ends); the report is read
    /// by [`finish`](LoadChild::finish).
    pub fn end(&mut self) {
        drop(self.stdin.take());
    }

    /// Stops the load (if [`end`](LoadChild::end) did not) and returns what it achieved
    /// since [`mark`](LoadChild::mark).
    pub fn finish(mut self) -> Result<LoadReport> {
        drop(self.stdin.take());
        let mut text = String::new();
        let read = self.stdout.read_to_string(&mut text);
        let status = self.child.wait().context("waiting for the load process")?;
        read.context("reading the load report")?;
        if !status.success() {
            anyhow::bail!("the load process ended with {status}");
        }
        let mut report = embedded(&text)?;
        if self.joined.is_some() {
            report.cgroup = self.joined;
        }
        Ok(report)
    }
}

/// A report of the load process, to be embedded in the measurement result: without `build`,
/// which the result records once for itself (the child is this same binary).
fn embedded(text: &str) -> Result<LoadReport> {
    let mut report = LoadReport::from_json(text.trim()).context("the load process's report")?;
    report.build = None;
    Ok(report)
}

/// Spawns `cmd` inside the cgroup directory `dir`: this process steps into `dir`
/// ([`sys::cgroup::move_process`]), spawns, and steps back into the cgroup it came from in the
/// same hierarchy. If the way back fails the child is killed and that is the error: rtlab would
/// otherwise measure from the load's cgroup.
fn spawn_in(cmd: &mut Command, dir: &str, root: &Root) -> Result<Child> {
    let target = Path::new(dir);
    let home = sys::cgroup::own_cgroup(root, target)
        .map_err(|e| UsageError(format!("--load-join {dir}: {e}")))?
        .ok_or_else(|| {
            UsageError(format!(
                "--load-join {dir}: not in a mounted cgroup hierarchy"
            ))
        })?;
    let pid = sys::process::current_pid();
    sys::cgroup::move_process(root, target, pid)
        .map_err(|e| UsageError(format!("--load-join {dir}: {e}")))?;
    let spawned = cmd.spawn().context("starting the load process");
    if let Err(e) = sys::cgroup::move_process(root, &home, pid) {
        if let Ok(mut child) = spawned {
            let _ = child.kill();
            let _ = child.wait();
        }
        return Err(UsageError(format!(
            "--load-join {dir}: could not step back into {} after starting the load: {e}",
            home.display()
        ))
        .into());
    }
    spawned
}
