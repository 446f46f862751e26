//! Child processes that cannot outlive rtlab: fork and exec with a parent-death signal, process
//! groups, signals to a process or a group, and reaping with the child's CPU time.
//!
//! The kernel sends the parent-death signal when the *thread* that forked the child exits, not
//! the process: fork from a thread that lives as long as the children should (rtlab's main
//! thread). This module makes processes and reports on them; which ones to make, and when to
//! stop them, is the load room's decision.

use std::ffi::CStr;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

use crate::{Error, Result, Root};

/// A signal rtlab sends to its own children.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopSignal {
    /// SIGTERM: ask politely (the child may clean up).
    Terminate,
    /// SIGKILL: end it now.
    Kill,
}

impl StopSignal {
    fn number(self) -> libc::c_int {
        match self {
            StopSignal::Terminate => libc::SIGTERM,
            StopSignal::Kill => libc::SIGKILL,
        }
    }
}

/// How a reaped child ended, and the CPU it used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChildExit {
    /// The exit code, when it exited normally.
    pub code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    /// User plus system CPU time of the child and of the descendants it waited for.
    pub cpu_ns: u64,
}

impl ChildExit {
    /// Whether it exited with status 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

/// Why the kernel refused to start `program`, for a one-line error: ENOEXEC (a binary for
/// another CPU, started from a process that qemu-user emulates, without binfmt_misc to run it)
/// says so and what to do; anything else is the kernel's word.
pub fn spawn_failure(err: &io::Error) -> String {
    if err.raw_os_error() == Some(libc::ENOEXEC) {
        format!(
            "{err}: the kernel cannot run this binary, built for another CPU, as a new process; \
             under qemu-user register it with binfmt_misc (apt-get install qemu-user-binfmt), \
             or run rtlab natively"
        )
    } else {
        err.to_string()
    }
}

/// This process's id.
pub fn current_pid() -> u32 {
    std::process::id()
}

/// Makes the child of `cmd` receive SIGKILL when the thread spawning it exits (prctl
/// PR_SET_PDEATHSIG), so a SIGKILLed rtlab takes it along. A child whose parent died before the
/// prctl took effect exits at once instead of running orphaned. The child also starts with no
/// signal blocked: rtlab blocks SIGINT/SIGTERM/SIGHUP to collect them in one thread, and a
/// blocked mask survives exec, which would make the command deaf to a polite stop.
pub fn die_with_parent(cmd: &mut Command) -> &mut Command {
    let parent = current_pid() as libc::pid_t;
    // SAFETY: the closure runs between fork and exec and calls only prctl, getppid,
    // sigemptyset and sigprocmask, which are async-signal-safe; it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            if libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        })
    }
}

/// Makes the child of `cmd` start with no signal blocked (rtlab blocks SIGINT/SIGTERM/SIGHUP
/// to collect them in one thread, and a blocked mask survives exec); unlike
/// [`die_with_parent`] the child outlives rtlab: a command run on an incident finishes its
/// work even when the monitor stops meanwhile.
pub fn unblocked(cmd: &mut Command) -> &mut Command {
    // SAFETY: the closure runs between fork and exec and calls only sigemptyset and
    // sigprocmask, which are async-signal-safe; it allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            if libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

/// Forks a worker process that runs `body` and exits with its return value; returns the
/// child's pid. The child gets SIGKILL when the calling thread exits (see the module note) and
/// exits at once if rtlab is already gone.
///
/// `body` runs in a copy of a multi-threaded process in which only the calling thread exists:
/// it must not wait for a lock another thread might have held at fork time (std mutexes,
/// stdout). glibc's allocator is safe to use after fork; preallocating is still wiser. The
/// child never returns into the caller's code and never runs destructors or atexit handlers.
pub fn fork_worker(body: impl FnOnce() -> i32) -> Result<u32> {
    let parent = current_pid() as libc::pid_t;
    // SAFETY: fork has no memory-safety preconditions; the child below only runs `body` and
    // `_exit`, never returning into code that assumes other threads exist.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(Error::Io {
            path: "fork()".into(),
            source: io::Error::last_os_error(),
        });
    }
    if pid == 0 {
        // SAFETY: prctl and getppid are plain system calls.
        let orphan = unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0
                || libc::getppid() != parent
        };
        let code = if orphan {
            1
        } else {
            // A panic must not unwind into the parent's copy of the stack.
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or(101)
        };
        // SAFETY: _exit ends the child without running the parent's atexit handlers or
        // flushing its stdio buffers twice.
        unsafe { libc::_exit(code) };
    }
    Ok(pid as u32)
}

/// Replaces the calling (forked) process with `program`, run with no arguments but its name;
/// exits with status 127 if it cannot be executed. For use inside [`fork_worker`].
pub fn exec_or_exit(program: &CStr) -> ! {
    let argv = [program.as_ptr(), std::ptr::null()];
    // SAFETY: `program` is NUL-terminated and `argv` is a NULL-terminated array of valid
    // pointers that outlive the call; on success execv does not return.
    unsafe {
        libc::execv(program.as_ptr(), argv.as_ptr());
        libc::_exit(127)
    }
}

/// Makes this process the "subreaper" of its descendants (PR_SET_CHILD_SUBREAPER): a
/// descendant whose parent exits is re-parented here instead of to init, so rtlab can reap
/// it (see [`reap_group`]) rather than leave a zombie behind on systems whose init is slow
/// to reap.
pub fn become_subreaper() -> Result<()> {
    // SAFETY: prctl with an integer flag touches no memory.
    let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong) };
    if rc == 0 {
        return Ok(());
    }
    Err(Error::from_io(
        PathBuf::from("prctl(PR_SET_CHILD_SUBREAPER)"),
        io::Error::last_os_error(),
    ))
}

/// Reaps every child of this process in process group `pgid` that has exited, without
/// waiting; returns how many it reaped. Children in other groups are left to their owners.
pub fn reap_group(pgid: u32) -> u32 {
    let mut reaped = 0;
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: `status` is valid storage; a negative pid selects the process group.
        let rc = unsafe { libc::waitpid(-(pgid as libc::pid_t), &mut status, libc::WNOHANG) };
        if rc <= 0 {
            return reaped;
        }
        reaped += 1;
    }
}

/// Sends `signal` to process `pid`. A process that is already gone is not an error.
pub fn signal_process(pid: u32, signal: StopSignal) -> Result<()> {
    // SAFETY: kill takes plain integers.
    let rc = unsafe { libc::kill(pid as libc::pid_t, signal.number()) };
    check_kill(rc, format!("kill({pid})"))
}

/// Sends `signal` to every process in process group `pgid`. A group that is already empty is
/// not an error.
pub fn signal_group(pgid: u32, signal: StopSignal) -> Result<()> {
    if pgid <= 1 {
        return Err(Error::Unsupported {
            what: format!("signal to process group {pgid}"),
            why: "rtlab only signals groups it created".into(),
        });
    }
    // SAFETY: killpg takes plain integers; pgid > 1 rules out "every process".
    let rc = unsafe { libc::killpg(pgid as libc::pid_t, signal.number()) };
    check_kill(rc, format!("killpg({pgid})"))
}

fn check_kill(rc: libc::c_int, what: String) -> Result<()> {
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::ESRCH) {
        return Ok(());
    }
    Err(Error::from_io(PathBuf::from(what), err))
}

/// Whether any process of group `pgid` is still alive (zombies included).
pub fn group_alive(pgid: u32) -> bool {
    // SAFETY: signal 0 only checks for existence and permission.
    pgid > 1 && unsafe { libc::killpg(pgid as libc::pid_t, 0) } == 0
}

/// Reaps child `pid`: waits for it when `block`, otherwise returns `None` if it is still
/// running. The CPU time comes from wait4's resource usage.
pub fn reap(pid: u32, block: bool) -> Result<Option<ChildExit>> {
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero rusage is valid storage for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let flags = if block { 0 } else { libc::WNOHANG };
    loop {
        // SAFETY: `status` and `usage` are valid, writable storage.
        let rc = unsafe { libc::wait4(pid as libc::pid_t, &mut status, flags, &mut usage) };
        if rc == 0 {
            return Ok(None);
        }
        if rc < 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(Error::from_io(PathBuf::from(format!("wait4({pid})")), err));
        }
        let cpu = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1_000;
        return Ok(Some(ChildExit {
            code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
            signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
            cpu_ns: cpu(usage.ru_utime) + cpu(usage.ru_stime),
        }));
    }
}

/// CPU time a live process has used, itself plus the children it has waited for, from
/// `/proc/PID/stat` (clock-tick resolution). `None` once it is gone.
pub fn process_cpu_ns(root: &Root, pid: u32) -> Option<u64> {
    let line = root.read(format!("/proc/{pid}/stat")).ok()?;
    let ticks = crate::parse::stat::process_ticks(&line)?;
    Some(ticks * (1_000_000_000 / clock_ticks_per_second()))
}

/// The state letter of process `pid` (`R`, `S`, `D`, `Z` for a zombie, ...) from
/// `/proc/PID/stat`; `None` when it is gone or the line is malformed.
pub fn state(root: &Root, pid: u32) -> Option<char> {
    let line = root.read(format!("/proc/{pid}/stat")).ok()?;
    crate::parse::stat::process_state(&line)
}

/// The members of process group `pgid` now: how many are still running (not zombies) and the
/// CPU time all of them have used, each member's own time plus what its reaped children used
/// (a member's exited children are counted once, in their parent). From `/proc/*/stat`,
/// clock-tick resolution.
pub fn group_cpu_ns(root: &Root, pgid: u32) -> (u32, u64) {
    let mut running = 0;
    let mut ticks = 0;
    for name in root.list_dir("/proc").unwrap_or_default() {
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(line) = root.read(format!("/proc/{name}/stat")) else {
            continue;
        };
        if crate::parse::stat::process_group(&line) == Some(pgid) {
            if !matches!(crate::parse::stat::process_state(&line), Some('Z' | 'X')) {
                running += 1;
            }
            ticks += crate::parse::stat::process_ticks(&line).unwrap_or(0);
        }
    }
    (running, ticks * (1_000_000_000 / clock_ticks_per_second()))
}

/// How many processes of group `pgid` are still running: zombies waiting for a parent (or an
/// init) to reap them have ended and do not count.
pub fn group_running(root: &Root, pgid: u32) -> u32 {
    if !group_alive(pgid) {
        return 0;
    }
    group_cpu_ns(root, pgid).0
}

/// CPU time (user plus system, nanoseconds) process `pid` has used so far, all its threads
/// together, from its CPU-time clock (`clock_getcpuclockid`): exact, unlike the clock ticks of
/// `/proc/PID/stat`, and it excludes children. `None` once the process is gone or reaped.
pub fn cpu_time_of(pid: u32) -> Option<u64> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: `clock` is valid storage for the clock id.
    if unsafe { libc::clock_getcpuclockid(pid as libc::pid_t, &mut clock) } != 0 {
        return None;
    }
    crate::clock::read_ns(clock)
}

/// Raises this process's soft limit on open files (RLIMIT_NOFILE) to its hard limit, for
/// loads that hold thousands of sockets; returns the limit now in force.
pub fn raise_open_files_limit() -> Result<u64> {
    // SAFETY: an all-zero rlimit is valid storage for getrlimit to fill.
    let mut limit: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: `limit` is valid, writable storage.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(Error::from_io(
            PathBuf::from("getrlimit(RLIMIT_NOFILE)"),
            io::Error::last_os_error(),
        ));
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: `raised` is a valid rlimit; raising the soft limit up to the hard one is
        // always allowed.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit = raised;
        }
    }
    Ok(limit.rlim_cur as u64)
}

/// USER_HZ, the unit of `/proc` CPU times (100 on every common configuration).
pub fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf takes a constant and has no side effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 { hz as u64 } else { 100 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn a_binary_for_another_cpu_is_named_with_the_fix() {
        let text = spawn_failure(&io::Error::from_raw_os_error(libc::ENOEXEC));
        assert!(text.contains("built for another CPU"), "{text}");
        assert!(
            text.contains("binfmt_misc") && !text.contains('\n'),
            "{text}"
        );
        let other = spawn_failure(&io::Error::from_raw_os_error(libc::ENOENT));
        assert!(!other.contains("binfmt_misc"), "{other}");
    }

    #[test]
    fn forked_worker_exit_code_and_cpu_time() {
        let pid = fork_worker(|| {
            // Spin until this process has used 15 ms of CPU (wall time is no measure of CPU
            // time on a loaded machine).
            let me = current_pid();
            let mut x = 0u64;
            while cpu_time_of(me).unwrap_or(u64::MAX) < 15_000_000 {
                for _ in 0..10_000 {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            }
            7
        })
        .unwrap();
        let exit = reap(pid, true).unwrap().unwrap();
        assert_eq!(exit.code, Some(7));
        assert_eq!(exit.signal, None);
        assert!(exit.cpu_ns >= 10_000_000, "{exit:?}");
    }

    #[test]
    fn signals_and_nonblocking_reap() {
        let pid = fork_worker(|| {
            std::thread::sleep(Duration::from_secs(30));
            0
        })
        .unwrap();
        assert_eq!(reap(pid, false).unwrap(), None);
        signal_process(pid, StopSignal::Kill).unwrap();
        let exit = reap(pid, true).unwrap().unwrap();
        assert_eq!(exit.signal, Some(libc::SIGKILL));
        assert!(!exit.success());
        // Gone: signalling again is not an error.
        signal_process(pid, StopSignal::Terminate).unwrap();
        assert!(signal_group(1, StopSignal::Kill).is_err());
    }

    #[test]
    fn spawned_commands_start_with_no_signal_blocked() {
        let signals = crate::signals::TerminationSignals::block().unwrap();
        let mut cmd = Command::new("grep");
        cmd.args(["^SigBlk", "/proc/self/status"])
            .stdout(std::process::Stdio::piped());
        let out = die_with_parent(&mut cmd).output().unwrap();
        drop(signals);
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(text.trim(), "SigBlk:\t0000000000000000");
    }

    #[test]
    fn exec_and_process_group() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30").process_group(0);
        let mut child = die_with_parent(&mut cmd).spawn().unwrap();
        let pid = child.id();
        assert!(group_alive(pid));
        assert!(process_cpu_ns(&Root::host(), pid).is_some());
        assert_eq!(group_cpu_ns(&Root::host(), pid).0, 1);
        assert_eq!(group_running(&Root::host(), pid), 1);
        assert_eq!(reap_group(pid), 0);
        assert!(matches!(state(&Root::host(), pid), Some('S' | 'R')));
        signal_group(pid, StopSignal::Terminate).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while state(&Root::host(), pid) != Some('Z') && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(
            state(&Root::host(), pid),
            Some('Z'),
            "killed, not yet reaped"
        );
        let status = child.wait().unwrap();
        assert!(!status.success());
        assert!(!group_alive(pid));
        assert_eq!(process_cpu_ns(&Root::host(), pid), None);
        assert_eq!(state(&Root::host(), pid), None);
    }

    #[test]
    fn exec_or_exit_reports_127_for_a_missing_program() {
        let pid = fork_worker(|| exec_or_exit(c"/nonexistent/rtlab-test-program")).unwrap();
        assert_eq!(reap(pid, true).unwrap().unwrap().code, Some(127));
    }

    #[test]
    fn cpu_clock_of_a_child_is_exact_and_ends_with_it() {
        let pid = fork_worker(|| {
            // Spin until this process has used 40 ms of CPU (not of wall time: on a loaded
            // machine 40 ms of wall time can hold much less CPU time).
            let me = current_pid();
            let mut x = 0u64;
            while cpu_time_of(me).unwrap_or(u64::MAX) < 40_000_000 {
                for _ in 0..10_000 {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            }
            // Wait to be killed, without using CPU.
            std::thread::sleep(Duration::from_secs(30));
            0
        })
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while cpu_time_of(pid).unwrap_or(0) < 30_000_000 {
            assert!(
                Instant::now() < deadline,
                "the child never used 30 ms of CPU"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(cpu_time_of(current_pid()).unwrap() > 0);
        signal_process(pid, StopSignal::Kill).unwrap();
        reap(pid, true).unwrap();
        assert_eq!(cpu_time_of(pid), None);
    }

    #[test]
    fn open_files_limit_is_raised_to_the_hard_limit() {
        let limit = raise_open_files_limit().unwrap();
        let text = std::fs::read_to_string("/proc/self/limits").unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("Max open files"))
            .unwrap();
        let soft: u64 = line.split_whitespace().nth(3).unwrap().parse().unwrap();
        assert_eq!(soft, limit);
    }
}
