//! One process's threads as `rtlab inspect` samples them: the thread list, each thread's
//! scheduling (through [`crate::tasks`]), fault and CPU-time counters, context switches,
//! scheduler statistics and migrations, the process's locked and resident memory, and the
//! system call a thread is blocked in.
//!
//! Everything here only reads. A thread or process that is gone reads as
//! [`Error::NotFound`](crate::Error), or as `ESRCH` when it exits while its file is read:
//! [`is_gone`] tells both from other failures. The
//! `syscall` file needs ptrace access to the process (root, or the same user with
//! `kernel.yama.ptrace_scope` 0).

use crate::parse::thread::{
    SchedStat, StatCounters, Syscall, nr_migrations, schedstat, stat_counters, status_kb,
    status_number, syscall,
};
use crate::tasks::{Task, read_thread};
use crate::{Error, Result, Root};

/// A process as its `status` describes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcessStatus {
    /// `Name`.
    pub name: String,
    /// `Tgid`: the process this id belongs to (differs from the id for a thread).
    pub tgid: u32,
    /// `VmLck`, kB: memory locked with `mlock`/`mlockall`; `None` for kernel threads.
    pub locked_kb: Option<u64>,
    /// `VmRSS`, kB: memory resident; `None` for kernel threads.
    pub rss_kb: Option<u64>,
}

/// One thread read once: its scheduling and every counter the inspection compares.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadSample {
    /// Name, state, policy, priority and allowed CPUs.
    pub task: Task,
    /// Faults, CPU time, start time, last CPU (`stat`).
    pub counters: StatCounters,
    /// `voluntary_ctxt_switches` of `status`.
    pub voluntary_switches: Option<u64>,
    /// `nonvoluntary_ctxt_switches` of `status`.
    pub involuntary_switches: Option<u64>,
    /// `schedstat`; `None` on kernels without CONFIG_SCHED_INFO.
    pub schedstat: Option<SchedStat>,
    /// `se.nr_migrations` of `sched`; `None` without CONFIG_SCHED_DEBUG.
    pub migrations: Option<u64>,
}

/// Whether `err` means the thread or process read is gone (its directory vanished, or it
/// exited while the file was open: `ESRCH`).
pub fn is_gone(err: &Error) -> bool {
    match err {
        Error::NotFound { .. } => true,
        Error::Io { source, .. } => source.raw_os_error() == Some(libc::ESRCH),
        _ => false,
    }
}

/// Reads `path` whole as text (lossily: a thread's name may be any bytes).
fn read_text(root: &Root, path: &str) -> Result<String> {
    root.read_bytes(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

fn unparsable(root: &Root, path: &str, what: &str) -> Error {
    Error::Parse {
        path: root.path(path),
        line: 1,
        what: what.to_string(),
    }
}

/// The thread ids of process `pid`, ascending.
pub fn thread_ids(root: &Root, pid: u32) -> Result<Vec<u32>> {
    let mut ids: Vec<u32> = root
        .list_dir(format!("/proc/{pid}/task"))?
        .iter()
        .filter_map(|n| n.parse().ok())
        .collect();
    ids.sort_unstable();
    Ok(ids)
}

/// The `status` of process (or thread) `pid`.
pub fn process_status(root: &Root, pid: u32) -> Result<ProcessStatus> {
    let path = format!("/proc/{pid}/status");
    let text = read_text(root, &path)?;
    let tgid = status_number(&text, "Tgid")
        .and_then(|t| u32::try_from(t).ok())
        .ok_or_else(|| unparsable(root, &path, "a `Tgid:` line"))?;
    Ok(ProcessStatus {
        name: crate::parse::task::status_field(&text, "Name")
            .unwrap_or_default()
            .to_string(),
        tgid,
        locked_kb: status_kb(&text, "VmLck"),
        rss_kb: status_kb(&text, "VmRSS"),
    })
}

/// The `stat` counters of thread `tid` of `pid` (`tid == pid`: the main thread, whose
/// start time is the process's).
pub fn thread_counters(root: &Root, pid: u32, tid: u32) -> Result<StatCounters> {
    let path = format!("/proc/{pid}/task/{tid}/stat");
    let text = read_text(root, &path)?;
    stat_counters(&text).ok_or_else(|| unparsable(root, &path, "a stat line (proc(5))"))
}

/// Thread `tid` of `pid`, every counter read now.
pub fn thread_sample(root: &Root, pid: u32, tid: u32) -> Result<ThreadSample> {
    let dir = format!("/proc/{pid}/task/{tid}");
    let task = read_thread(root, pid, tid).ok_or_else(|| Error::NotFound {
        path: root.path(format!("{dir}/stat")),
    })?;
    let counters = thread_counters(root, pid, tid)?;
    let status = read_text(root, &format!("{dir}/status"))?;
    let schedstat = match thread_schedstat(root, pid, tid) {
        Ok(s) => Some(s),
        Err(e) if e.is_not_found() && root.exists(&dir) => None,
        Err(e) => return Err(e),
    };
    let migrations = root
        .read_opt(format!("{dir}/sched"))
        .ok()
        .flatten()
        .and_then(|t| nr_migrations(&t));
    Ok(ThreadSample {
        task,
        counters,
        voluntary_switches: status_number(&status, "voluntary_ctxt_switches"),
        involuntary_switches: status_number(&status, "nonvoluntary_ctxt_switches"),
        schedstat,
        migrations,
    })
}

/// Thread `tid`'s `schedstat`: the file sampled most often (each interval).
pub fn thread_schedstat(root: &Root, pid: u32, tid: u32) -> Result<SchedStat> {
    let path = format!("/proc/{pid}/task/{tid}/schedstat");
    let text = root.read(&path)?;
    schedstat(&text).ok_or_else(|| unparsable(root, &path, "three numbers (schedstat)"))
}

/// The system call thread `tid` is blocked in now.
pub fn thread_syscall(root: &Root, pid: u32, tid: u32) -> Result<Syscall> {
    let path = format!("/proc/{pid}/task/{tid}/syscall");
    let text = root.read(&path)?;
    syscall(&text)
        .ok_or_else(|| unparsable(root, &path, "`running`, `-1 SP PC` or `NR ARGS SP PC`"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn write(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    const STAT: &str = "501 (worker) S 1 500 500 0 -1 1077936192 40 0 3 0 7 2 0 0 -50 0 2 0 \
        900 1000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 49 1 0 0 0\n";

    #[test]
    fn a_thread_and_its_process_from_a_tree() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(
            d,
            "proc/500/status",
            "Name:\tapp\nTgid:\t500\nVmLck:\t  2048 kB\nVmRSS:\t  1900 kB\n",
        );
        write(d, "proc/500/task/501/stat", STAT);
        write(
            d,
            "proc/500/task/501/status",
            "Cpus_allowed_list:\t1\nvoluntary_ctxt_switches:\t90\nnonvoluntary_ctxt_switches:\t4\n",
        );
        write(d, "proc/500/task/501/schedstat", "7000000 31000 91\n");
        write(d, "proc/500/task/501/sched", "se.nr_migrations : 0\n");
        write(
            d,
            "proc/500/task/501/syscall",
            "230 0x1 0x1 0x7ffd0 0x0 0x0 0x0 0x7ffd 0x7f\n",
        );
        std::fs::create_dir_all(d.join("proc/500/task/500")).unwrap();
        let root = Root::at(d);
        assert_eq!(thread_ids(&root, 500).unwrap(), [500, 501]);
        let p = process_status(&root, 500).unwrap();
        assert_eq!((p.name.as_str(), p.tgid), ("app", 500));
        assert_eq!((p.locked_kb, p.rss_kb), (Some(2048), Some(1900)));
        let t = thread_sample(&root, 500, 501).unwrap();
        assert_eq!(t.task.sched_label(), "FIFO 49");
        assert_eq!(
            t.task.cpus_allowed.as_ref().map(|c| c.to_string()),
            Some("1".into())
        );
        assert_eq!((t.counters.minor_faults, t.counters.major_faults), (40, 3));
        assert_eq!(
            (t.voluntary_switches, t.involuntary_switches),
            (Some(90), Some(4))
        );
        assert_eq!(t.schedstat.map(|s| s.run_delay_ns), Some(31000));
        assert_eq!(t.migrations, Some(0));
        assert!(matches!(
            thread_syscall(&root, 500, 501).unwrap(),
            Syscall::In { nr: 230, .. }
        ));
        // The main thread exited between listing and reading.
        assert!(thread_sample(&root, 500, 500).unwrap_err().is_not_found());
        assert!(process_status(&root, 77).unwrap_err().is_not_found());
    }

    #[test]
    fn garbage_is_a_parse_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "proc/9/status", "Name:\tx\n");
        write(dir.path(), "proc/9/task/9/schedstat", "1 2\n");
        write(dir.path(), "proc/9/task/9/syscall", "what\n");
        let root = Root::at(dir.path());
        let e = process_status(&root, 9).unwrap_err().to_string();
        assert!(e.contains("proc/9/status") && e.contains("Tgid"), "{e}");
        let e = thread_schedstat(&root, 9, 9).unwrap_err().to_string();
        assert!(e.contains("schedstat"), "{e}");
        assert!(thread_syscall(&root, 9, 9).is_err());
    }

    /// This process, live: its counters read and its main thread found.
    #[test]
    fn reads_this_process() {
        let root = Root::host();
        let me = std::process::id();
        let Ok(ids) = thread_ids(&root, me) else {
            return testkit::live::skip("no /proc here");
        };
        assert!(ids.contains(&me));
        let p = process_status(&root, me).unwrap();
        assert_eq!(p.tgid, me);
        assert!(p.rss_kb.is_some_and(|r| r > 0));
        let t = thread_sample(&root, me, me).unwrap();
        assert!(t.counters.start_ticks > 0);
        assert!(t.voluntary_switches.is_some());
    }
}
