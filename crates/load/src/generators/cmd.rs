//! `cmd`: an external command line (stress-ng, a kernel build, the user's own application)
//! run by `/bin/sh -c` in a process group of its own, placed on the generator's CPUs, its
//! output kept in a log in the load's private directory, and stopped with the rest: SIGTERM to
//! the whole group, SIGKILL after a grace period. The guardian knows the group, so it dies
//! even if rtlab is killed.
//!
//! Achieved: the CPU time of every process in the group (including the children they reaped),
//! sampled from `/proc`. There is no operation count: what a command does is its own business.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use model::CpuSet;
use sys::Root;
use sys::process::StopSignal;

use crate::guardian::{Watched, Watcher};
use crate::{Counters, Generator, LoadError, StartContext};

/// How long a command may take to exit after SIGTERM before it is killed.
const GRACE: Duration = Duration::from_secs(2);

/// An external command run as load.
#[derive(Debug)]
pub struct CmdLoad {
    item: String,
    command: String,
    state: Option<Running>,
    notes: Vec<String>,
    final_cpu_ns: u64,
}

#[derive(Debug)]
struct Running {
    child: Child,
    pgid: u32,
    root: Root,
    cpus: CpuSet,
    log: PathBuf,
    started: Instant,
    /// The most CPU time seen for the group (it only shrinks when members leave unreaped).
    cpu_ns: Mutex<u64>,
    watched: Watched,
    watcher: Arc<Watcher>,
    exited: Option<(std::process::ExitStatus, Duration)>,
    /// When its shell was first seen ended, from its start.
    ended_after: Option<Duration>,
}

impl CmdLoad {
    /// A command line to run by `/bin/sh -c`.
    pub fn new(item: String, command: String) -> CmdLoad {
        CmdLoad {
            item,
            command,
            state: None,
            notes: Vec::new(),
            final_cpu_ns: 0,
        }
    }
}

impl Running {
    fn sample_cpu(&self) -> u64 {
        let (_, now) = sys::process::group_cpu_ns(&self.root, self.pgid);
        let mut best = self.cpu_ns.lock().unwrap_or_else(|e| e.into_inner());
        *best = (*best).max(now);
        *best
    }

    /// The last lines of the command's output, for a note.
    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let tail = lines[lines.len().saturating_sub(3)..].join(" | ");
        if tail.is_empty() {
            "no output".to_string()
        } else {
            format!("last output: {tail}")
        }
    }
}

impl Generator for CmdLoad {
    fn start(&mut self, ctx: &StartContext<'_>) -> Result<(), LoadError> {
        let log = ctx
            .workdir
            .join(format!("cmd-{}.log", ctx.seed & 0xffff_ffff));
        let out = File::create(&log)
            .map_err(|e| LoadError::setup(&self.item, format!("{}: {e}", log.display())))?;
        let err = out
            .try_clone()
            .map_err(|e| LoadError::setup(&self.item, e.to_string()))?;
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(&self.command)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0);
        sys::process::die_with_parent(&mut cmd);
        sys::sched::pin_command(&mut cmd, ctx.cpus).map_err(|e| LoadError::sys(&self.item, e))?;
        let child = cmd
            .spawn()
            .map_err(|e| LoadError::setup(&self.item, format!("cannot run /bin/sh -c: {e}")))?;
        let pgid = child.id();
        let watched = Watched::Group(pgid);
        ctx.watcher.watch(&watched);
        self.state = Some(Running {
            child,
            pgid,
            root: ctx.root.clone(),
            cpus: ctx.cpus.clone(),
            log,
            started: Instant::now(),
            cpu_ns: Mutex::new(0),
            watched,
            watcher: Arc::clone(ctx.watcher),
            exited: None,
            ended_after: None,
        });
        // A command that cannot start at all (not found, bad syntax) fails the load now
        // rather than leaving a measurement without the load it was asked for.
        std::thread::sleep(Duration::from_millis(100));
        let running = self.state.as_mut().expect("just set");
        if let Ok(Some(status)) = running.child.try_wait()
            && !status.success()
        {
            let tail = running.log_tail();
            let _ = sys::process::signal_group(pgid, StopSignal::Kill);
            ctx.watcher.release(&running.watched);
            self.state = None;
            return Err(LoadError::setup(
                &self.item,
                format!("the command failed at once ({status}); {tail}"),
            ));
        }
        Ok(())
    }

    fn achieved(&self) -> Counters {
        let cpu_ns = self
            .state
            .as_ref()
            .map_or(self.final_cpu_ns, Running::sample_cpu);
        Counters {
            ops: 0,
            bytes: 0,
            cpu_ns,
        }
    }

    fn describe(&self) -> String {
        match &self.state {
            Some(r) => format!(
                "`{}` (process group {}) on {}",
                self.command,
                r.pgid,
                r.cpus.with_noun()
            ),
            None => format!("`{}`", self.command),
        }
    }

    fn unit(&self) -> &'static str {
        "n/a"
    }

    fn tasks(&self) -> u32 {
        self.state
            .as_ref()
            .map_or(0, |r| sys::process::group_cpu_ns(&r.root, r.pgid).0)
            .max(1)
    }

    fn stop(&mut self) -> Counters {
        let Some(mut r) = self.state.take() else {
            return self.achieved();
        };
        // The group's time is sampled before anything is killed: killed members are not
        // reaped by their parents, so their time would vanish from /proc.
        let cpu_ns = r.sample_cpu();
        if let Ok(Some(status)) = r.child.try_wait() {
            // When it ended as first seen (once a tick), else now.
            let after = r.ended_after.unwrap_or_else(|| r.started.elapsed());
            r.exited = Some((status, after));
        }
        let _ = sys::process::signal_group(r.pgid, StopSignal::Terminate);
        let deadline = Instant::now() + GRACE;
        while sys::process::group_running(&r.root, r.pgid) > 0 && Instant::now() < deadline {
            let _ = r.child.try_wait();
            sys::process::reap_group(r.pgid);
            std::thread::sleep(Duration::from_millis(5));
        }
        if sys::process::group_running(&r.root, r.pgid) > 0 {
            let _ = sys::process::signal_group(r.pgid, StopSignal::Kill);
            self.notes
                .push(format!("did not exit within {GRACE:?} of SIGTERM; killed"));
        }
        let _ = r.child.wait();
        // Members orphaned by the shell's exit were re-parented to this process (the load
        // set makes it a subreaper); reap them so no zombie is left.
        let deadline = Instant::now() + Duration::from_millis(500);
        while sys::process::group_alive(r.pgid) && Instant::now() < deadline {
            sys::process::reap_group(r.pgid);
            std::thread::sleep(Duration::from_millis(2));
        }
        r.watcher.release(&r.watched);
        if let Some((status, after)) = r.exited {
            self.notes.push(format!(
                "the command ended by itself after {:.1} s ({status}) before the load stopped; \
                 {}",
                after.as_secs_f64(),
                r.log_tail()
            ));
        }
        self.final_cpu_ns = cpu_ns;
        Counters {
            ops: 0,
            bytes: 0,
            cpu_ns,
        }
    }

    fn ended(&mut self) -> bool {
        let Some(r) = self.state.as_mut() else {
            return false;
        };
        if r.ended_after.is_none() && sys_try_status(r).is_some() {
            r.ended_after = Some(r.started.elapsed());
        }
        r.ended_after.is_some()
    }

    fn notes(&self) -> Vec<String> {
        let mut notes = self.notes.clone();
        if let Some(r) = &self.state
            && let Some(status) = sys_try_status(r)
        {
            notes.push(format!(
                "the command has ended ({status}); {}",
                r.log_tail()
            ));
        }
        notes
    }
}

/// Whether the command's shell has exited, without reaping it (the stop reaps).
fn sys_try_status(r: &Running) -> Option<String> {
    (sys::process::state(&r.root, r.pgid)? == 'Z').then(|| "exited".to_string())
}
