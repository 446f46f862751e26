//! Starting a program set up for real-time work (`rtlab exec`): the child joins a cpuset
//! cgroup, takes its CPU affinity, its RLIMIT_MEMLOCK and its scheduling policy between fork
//! and exec, so the program runs under them from its first instruction; and what the parent
//! reads about it afterwards (locked and resident memory, the IRQ threads' priorities, a
//! cgroup's CPUs).
//!
//! Everything the child does is prepared before the fork (paths as C strings, masks, the
//! `sched_attr`); between fork and exec it only makes system calls (open, write, close,
//! sched_setaffinity, setrlimit, sched_setattr) and stores which step it reached in a page
//! shared with the parent, so a refusal is explained by the step that failed, not guessed.
//! This module launches and reads; what to launch, and whether a priority is wise, is the
//! caller's decision.

use std::ffi::{CString, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use model::CpuSet;

use crate::mem::SharedCounters;
use crate::sched::PreparedPolicy;
use crate::signals::Signal;
use crate::{Error, Result, Root};

/// What the child sets up before it becomes the program.
#[derive(Clone, Debug, Default)]
pub struct LaunchSetup {
    /// The cgroup directory (e.g. `/sys/fs/cgroup/rtlab-rt`) the child joins first.
    pub cgroup: Option<String>,
    /// The CPUs the child may run on (after joining the cgroup).
    pub cpus: Option<CpuSet>,
    /// RLIMIT_MEMLOCK, soft and hard: `Some(None)` is unlimited; `None` leaves it as it is.
    pub memlock: Option<Option<u64>>,
    /// The scheduling policy, applied last.
    pub policy: Option<PreparedPolicy>,
}

/// Why the program did not start.
#[derive(Debug)]
pub enum LaunchError {
    /// A setup step failed in the child; the error says which and how to fix it.
    Setup(Error),
    /// exec itself failed: the program is missing or cannot be run.
    Exec {
        /// The errno of execve.
        errno: i32,
        /// Whether the program was not found (ENOENT), rather than found and refused.
        not_found: bool,
        /// The kernel's word for it.
        message: String,
    },
}

/// The steps of the child, in order, as stored in the shared page.
const STEP_CGROUP: u64 = 1;
const STEP_AFFINITY: u64 = 2;
const STEP_MEMLOCK: u64 = 3;
const STEP_POLICY: u64 = 4;
const STEP_EXEC: u64 = 5;

/// Starts `command` (program and arguments) with `setup` applied in the child; returns its
/// pid. The child gets SIGKILL when the calling thread exits (so a killed rtlab does not leave
/// a real-time program running unattended) and starts with no signal blocked.
pub fn spawn(
    root: &Root,
    command: &[OsString],
    setup: &LaunchSetup,
) -> std::result::Result<u32, LaunchError> {
    let Some((program, args)) = command.split_first() else {
        return Err(LaunchError::Setup(Error::Unsupported {
            what: "starting a program".to_string(),
            why: "no command given".to_string(),
        }));
    };
    let step = Arc::new(SharedCounters::new(1).map_err(LaunchError::Setup)?);
    let mut cmd = Command::new(program);
    cmd.args(args);
    crate::process::die_with_parent(&mut cmd);
    let procs = match &setup.cgroup {
        Some(group) => Some(cgroup_procs_path(root, group).map_err(LaunchError::Setup)?),
        None => None,
    };
    mark(&mut cmd, &step, STEP_CGROUP, move || match &procs {
        Some(path) => join_cgroup(path),
        None => Ok(()),
    });
    if let Some(cpus) = &setup.cpus {
        mark(&mut cmd, &step, STEP_AFFINITY, || Ok(()));
        crate::sched::pin_command(&mut cmd, cpus).map_err(LaunchError::Setup)?;
    }
    let memlock = setup.memlock;
    mark(&mut cmd, &step, STEP_MEMLOCK, move || match memlock {
        Some(limit) => set_memlock(limit),
        None => Ok(()),
    });
    let policy = setup.policy;
    mark(&mut cmd, &step, STEP_POLICY, move || match &policy {
        Some(p) => p.apply().map_err(io::Error::from_raw_os_error),
        None => Ok(()),
    });
    mark(&mut cmd, &step, STEP_EXEC, || Ok(()));
    match cmd.spawn() {
        // The Child handle is dropped: the caller reaps the pid itself.
        Ok(child) => Ok(child.id()),
        Err(err) => Err(explain(
            root,
            setup,
            step.slot(0).load(Ordering::Acquire),
            err,
        )),
    }
}

/// Adds a between-fork-and-exec step that first records `number` in the shared page.
fn mark(
    cmd: &mut Command,
    step: &Arc<SharedCounters>,
    number: u64,
    body: impl FnMut() -> io::Result<()> + Send + Sync + 'static,
) {
    let step = Arc::clone(step);
    let mut body = body;
    // SAFETY: the closure runs between fork and exec; it stores to an atomic in a shared
    // mapping made before the fork and runs `body`, which only makes system calls on data
    // prepared before the fork (see the callers); nothing allocates.
    unsafe {
        cmd.pre_exec(move || {
            step.slot(0).store(number, Ordering::Release);
            body()
        });
    }
}

fn cgroup_procs_path(root: &Root, group: &str) -> Result<CString> {
    let path = root.path(format!("{group}/cgroup.procs"));
    CString::new(path.as_os_str().as_bytes()).map_err(|_| Error::Unsupported {
        what: format!("joining cgroup {group}"),
        why: "the path holds a NUL byte".to_string(),
    })
}

/// Moves the calling process into the cgroup whose `cgroup.procs` is `procs` ("0" is the
/// writer itself, on cgroup v1 and v2).
fn join_cgroup(procs: &CString) -> io::Result<()> {
    // SAFETY: `procs` is NUL-terminated; open, write and close are async-signal-safe and
    // touch only the buffers given.
    unsafe {
        let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, b"0".as_ptr().cast(), 1);
        let err = io::Error::last_os_error();
        libc::close(fd);
        if written != 1 {
            return Err(err);
        }
    }
    Ok(())
}

fn set_memlock(bytes: Option<u64>) -> io::Result<()> {
    // rlim_t is 32 bits wide on some 32-bit targets: a larger limit is unlimited there.
    #[allow(clippy::useless_conversion)]
    let value = bytes
        .and_then(|b| libc::rlim_t::try_from(b).ok())
        .unwrap_or(libc::RLIM_INFINITY);
    let limit = libc::rlimit {
        rlim_cur: value,
        rlim_max: value,
    };
    // SAFETY: `limit` is a valid rlimit the kernel only reads.
    if unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &limit) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Turns the spawn error into the failed step's explanation.
fn explain(root: &Root, setup: &LaunchSetup, step: u64, err: io::Error) -> LaunchError {
    let errno = err.raw_os_error().unwrap_or(0);
    let group = setup.cgroup.as_deref().unwrap_or("");
    let error = match step {
        STEP_CGROUP => Error::Unsupported {
            what: format!("joining the cpuset {group}"),
            why: format!(
                "{err}; check that `rtlab tune status` still shows the tuning, or run \
                 `rtlab tune apply` again (or pass --no-cpuset)"
            ),
        },
        STEP_AFFINITY => Error::Unsupported {
            what: format!(
                "sched_setaffinity(CPUs {})",
                setup
                    .cpus
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default()
            ),
            why: format!(
                "{err}: these CPUs are not online{}; pick CPUs from {}",
                if group.is_empty() {
                    String::new()
                } else {
                    format!(" or not in the cpuset {group}")
                },
                if group.is_empty() {
                    "the online set".to_string()
                } else {
                    cgroup_cpus(root, group).map_or("the cpuset".to_string(), |c| c.to_string())
                }
            ),
        },
        STEP_MEMLOCK => Error::PermissionDenied {
            path: format!(
                "setrlimit(RLIMIT_MEMLOCK, {})",
                crate::mem::format_limit(setup.memlock.flatten())
            )
            .into(),
            fix: "raising the hard limit needs CAP_SYS_RESOURCE: run as root, or ask for at \
                  most the hard limit (ulimit -H -l)"
                .to_string(),
        },
        STEP_POLICY => match &setup.policy {
            Some(policy) => policy.refusal(errno, allowed_cpus(root, setup)),
            None => Error::from_syscall("sched_setattr", err),
        },
        0 => Error::from_io("fork", err),
        _ => {
            return LaunchError::Exec {
                errno,
                not_found: errno == libc::ENOENT,
                message: crate::process::spawn_failure(&err),
            };
        }
    };
    LaunchError::Setup(error)
}

/// The CPUs the child could run on when it asked for its policy.
fn allowed_cpus(root: &Root, setup: &LaunchSetup) -> Option<CpuSet> {
    if let Some(cpus) = &setup.cpus {
        return Some(cpus.clone());
    }
    if let Some(group) = &setup.cgroup {
        return cgroup_cpus(root, group);
    }
    crate::sched::affinity().ok()
}

/// The CPUs a cpuset cgroup grants (`cpuset.cpus.effective`, else `cpuset.cpus`).
pub fn cgroup_cpus(root: &Root, group: &str) -> Option<CpuSet> {
    ["cpuset.cpus.effective", "cpuset.cpus"]
        .iter()
        .filter_map(|f| root.read_trimmed(format!("{group}/{f}")))
        .find(|text| !text.is_empty())
        .and_then(|text| CpuSet::parse_list(&text).ok())
}

/// A process's memory as `/proc/PID/status` gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryUse {
    /// Locked memory (VmLck), KiB.
    pub locked_kib: u64,
    /// Resident memory (VmRSS), KiB.
    pub rss_kib: u64,
}

/// The locked and resident memory of process `pid`; `None` once it is gone (or a zombie,
/// whose status has no memory lines).
pub fn memory_use(root: &Root, pid: u32) -> Option<MemoryUse> {
    let status = root.read(format!("/proc/{pid}/status")).ok()?;
    Some(MemoryUse {
        locked_kib: crate::mem::status_kib(&status, "VmLck")?,
        rss_kib: crate::mem::status_kib(&status, "VmRSS")?,
    })
}

/// The real-time priorities of the kernel's IRQ threads (`irq/N-name`), one per thread; empty
/// where interrupts are not threaded (no PREEMPT_RT, no `threadirqs`).
pub fn irq_thread_priorities(root: &Root) -> Result<Vec<u32>> {
    Ok(crate::tasks::all_threads(root)?
        .into_iter()
        .filter(|t| t.is_kernel_thread() && t.comm.starts_with("irq/") && t.is_realtime())
        .map(|t| t.rt_priority)
        .collect())
}

/// A termination signal rtlab took while waiting for its program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    /// Which.
    pub signal: Signal,
    /// The terminal sent it (Ctrl-C, a hang-up: `si_code` SI_KERNEL) to the whole foreground
    /// process group, so the program, in rtlab's group, has it already.
    pub from_terminal: bool,
}

/// Takes a pending SIGINT, SIGTERM or SIGHUP, waiting up to `timeout` (sigtimedwait with the
/// sender's details). The signals must be blocked in the calling thread
/// (`signals::TerminationSignals`), or they kill the process instead.
pub fn take_signal(timeout: std::time::Duration) -> Option<Received> {
    // SAFETY: an all-zero sigset_t and siginfo_t are valid storage; sigemptyset and sigaddset
    // initialise the set with valid signal numbers.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is valid storage.
    unsafe {
        libc::sigemptyset(&mut set);
        for signal in Signal::ALL {
            libc::sigaddset(&mut set, signal.number());
        }
    }
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i32::MAX as u64) as _,
        tv_nsec: timeout.subsec_nanos() as _,
    };
    // SAFETY: `set` is initialised, `info` and `ts` are valid for the call.
    let rc = unsafe { libc::sigtimedwait(&set, &mut info, &ts) };
    let signal = Signal::from_number(rc)?;
    Some(Received {
        signal,
        from_terminal: info.si_code == libc::SI_KERNEL,
    })
}

/// Sends `signal` to process `pid` (forwarding what rtlab received). A process already gone
/// is not an error.
pub fn forward_signal(pid: u32, signal: Signal) -> Result<()> {
    let target = libc::pid_t::try_from(pid).map_err(|_| Error::Unsupported {
        what: format!("kill({pid})"),
        why: "not a process id".to_string(),
    })?;
    // SAFETY: kill takes plain integers; `target` is a positive pid.
    let rc = unsafe { libc::kill(target, signal.number()) };
    let err = io::Error::last_os_error();
    if rc == 0 || err.raw_os_error() == Some(libc::ESRCH) {
        return Ok(());
    }
    Err(Error::from_io(format!("kill({pid}, {signal})"), err))
}

#[cfg(test)]
mod tests;
