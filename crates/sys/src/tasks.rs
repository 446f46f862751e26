//! Every thread of the machine (`/proc/PID/task/TID/`): name, kernel-thread flag, scheduling
//! policy, real-time priority and the CPUs it may run on; and a process's environment and
//! command line.
//!
//! One pass reads `stat` and the `Cpus_allowed_list` of `status` per thread. On the live
//! machine the affinity comes from `sched_getaffinity(TID)` instead, the same mask without
//! the kernel formatting a whole `status` file: that halves the walk (about 15 ms per
//! thousand threads on a 2-vCPU guest); the `status` path is still noted, so a capture copies
//! it. Threads and processes that exit during the walk are skipped. Files are read as bytes
//! and decoded lossily: a thread name can be any bytes (`prctl(PR_SET_NAME)`), and one odd
//! name must not hide the thread.

use std::io::Read;

use model::CpuSet;
use model::measure::Policy;

use crate::parse::task::{
    PF_KTHREAD, PF_NO_SETAFFINITY, PF_WQ_WORKER, cmdline_args, environ, parse_stat, status_field,
};
use crate::{Error, Result, Root};

/// One thread.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Task {
    /// The process (thread group) id.
    pub pid: u32,
    /// The thread id (equal to `pid` for the main thread).
    pub tid: u32,
    /// The thread's name (`comm`, at most 15 bytes).
    pub comm: String,
    /// The state letter (`R`, `S`, `D`, `I`, `Z`, ...).
    pub state: char,
    /// The `PF_*` flags.
    pub flags: u64,
    /// The nice value.
    pub nice: i32,
    /// The real-time priority (1-99 under SCHED_FIFO and SCHED_RR, else 0).
    pub rt_priority: u32,
    /// The raw policy number (`stat` field 41).
    pub policy: u32,
    /// `Cpus_allowed_list` of `status`; `None` when unreadable.
    pub cpus_allowed: Option<CpuSet>,
}

impl Task {
    /// Whether this is a kernel thread (`PF_KTHREAD`).
    pub fn is_kernel_thread(&self) -> bool {
        self.flags & PF_KTHREAD != 0
    }

    /// Whether user space may change its affinity (no `PF_NO_SETAFFINITY`).
    pub fn affinity_settable(&self) -> bool {
        self.flags & PF_NO_SETAFFINITY == 0
    }

    /// Whether this is a workqueue worker (`kworker/...`), placed by its workqueue's cpumask.
    pub fn is_workqueue_worker(&self) -> bool {
        self.flags & PF_WQ_WORKER != 0
    }

    /// A kernel thread bound to exactly one CPU (`ksoftirqd/N`, `migration/N`, `cpuhp/N`,
    /// `kworker/N:M`, `rcuc/N`, `ktimers/N`): it cannot be moved and belongs to its CPU.
    pub fn is_per_cpu_kernel_thread(&self) -> bool {
        self.is_kernel_thread() && self.cpus_allowed.as_ref().is_some_and(|c| c.len() == 1)
    }

    /// The scheduling policy; `None` for a number rtlab does not know.
    pub fn policy(&self) -> Option<Policy> {
        Some(match self.policy {
            0 => Policy::Other,
            1 => Policy::Fifo,
            2 => Policy::Rr,
            3 => Policy::Batch,
            5 => Policy::Idle,
            6 => Policy::Deadline,
            _ => return None,
        })
    }

    /// Whether it runs under a real-time policy (FIFO, RR or DEADLINE).
    pub fn is_realtime(&self) -> bool {
        matches!(
            self.policy(),
            Some(Policy::Fifo | Policy::Rr | Policy::Deadline)
        )
    }

    /// Policy and priority as `chrt` would say it: `FIFO 50`, `RR 10`, `DEADLINE`,
    /// `OTHER nice 0`.
    pub fn sched_label(&self) -> String {
        match self.policy() {
            Some(Policy::Fifo) => format!("FIFO {}", self.rt_priority),
            Some(Policy::Rr) => format!("RR {}", self.rt_priority),
            Some(Policy::Deadline) => "DEADLINE".to_string(),
            Some(Policy::Other) => format!("OTHER nice {}", self.nice),
            Some(Policy::Batch) => format!("BATCH nice {}", self.nice),
            Some(Policy::Idle) => "IDLE".to_string(),
            None => format!("policy {}", self.policy),
        }
    }

    /// Whether the thread is gone but not reaped (`Z`, `X`).
    pub fn is_dead(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Reads a kernel file as bytes until EOF, decoded lossily, noting the path on the root.
fn read_lossy(root: &Root, path: &str) -> Result<String> {
    read_into(root, path, &mut Vec::new()).map(str::to_string)
}

/// Like [`read_lossy`] into a reused buffer (no size probe, no allocation per file: the walk
/// opens thousands of small files).
fn read_into<'a>(root: &Root, path: &str, buf: &'a mut Vec<u8>) -> Result<&'a str> {
    root.note(path);
    let full = root.path(path);
    buf.clear();
    std::fs::File::open(&full)
        .and_then(|mut f| f.read_to_end(buf))
        .map_err(|e| Error::from_io(&full, e))?;
    if std::str::from_utf8(buf).is_err() {
        let fixed = String::from_utf8_lossy(buf).into_owned();
        *buf = fixed.into_bytes();
    }
    Ok(std::str::from_utf8(buf).unwrap_or_default())
}

/// The numeric entries of a `/proc` directory, ascending.
fn numeric_entries(root: &Root, dir: &str) -> Result<Vec<u32>> {
    let mut ids: Vec<u32> = root
        .list_dir(dir)?
        .iter()
        .filter_map(|n| n.parse().ok())
        .collect();
    ids.sort_unstable();
    Ok(ids)
}

/// Every thread of every process, by process then thread id. Fails only when `/proc` cannot
/// be listed; a thread whose `stat` cannot be read or parsed is skipped (it exited), one
/// whose `status` cannot be read keeps `cpus_allowed: None`. Skipping is the intent: a thread
/// exiting while the walk reads it leaves its files unreadable or empty, and one vanished
/// thread must not fail the walk over the thousands that remain.
pub fn all_threads(root: &Root) -> Result<Vec<Task>> {
    let mut tasks = Vec::new();
    let mut buf = Vec::with_capacity(4096);
    for pid in numeric_entries(root, "/proc")? {
        let Ok(tids) = numeric_entries(root, &format!("/proc/{pid}/task")) else {
            continue;
        };
        for tid in tids {
            if let Some(task) = read_thread_with(root, pid, tid, &mut buf) {
                tasks.push(task);
            }
        }
    }
    Ok(tasks)
}

/// One thread, or `None` when it is gone or its `stat` is malformed.
pub fn read_thread(root: &Root, pid: u32, tid: u32) -> Option<Task> {
    read_thread_with(root, pid, tid, &mut Vec::new())
}

fn read_thread_with(root: &Root, pid: u32, tid: u32, buf: &mut Vec<u8>) -> Option<Task> {
    let dir = format!("/proc/{pid}/task/{tid}");
    let stat = parse_stat(read_into(root, &format!("{dir}/stat"), buf).ok()?)?;
    let status = format!("{dir}/status");
    let from_syscall = if root.is_host() {
        root.note(&status);
        affinity_of(tid)
    } else {
        None
    };
    let cpus_allowed = from_syscall.or_else(|| {
        read_into(root, &status, buf)
            .ok()
            .and_then(|s| status_field(s, "Cpus_allowed_list").and_then(|v| v.parse().ok()))
    });
    Some(Task {
        pid,
        tid,
        comm: stat.comm,
        state: stat.state,
        flags: stat.flags,
        nice: stat.nice,
        rt_priority: stat.rt_priority,
        policy: stat.policy,
        cpus_allowed,
    })
}

/// The CPUs thread `tid` may run on, from `sched_getaffinity`; `None` when the call fails
/// (the thread exited, or `/proc` shows another PID namespace).
fn affinity_of(tid: u32) -> Option<CpuSet> {
    const WORDS: usize = 8192 / 64;
    let mut mask = [0u64; WORDS];
    let pid = libc::pid_t::try_from(tid).ok()?;
    // SAFETY: `mask` is writable for `size_of_val(&mask)` bytes, the size passed; the kernel
    // writes at most that many bytes.
    let rc = unsafe {
        libc::sched_getaffinity(
            pid,
            std::mem::size_of_val(&mask),
            mask.as_mut_ptr().cast::<libc::cpu_set_t>(),
        )
    };
    if rc != 0 {
        return None;
    }
    let mut cpus = CpuSet::new();
    for (i, word) in mask.iter().enumerate() {
        let mut w = *word;
        while w != 0 {
            let bit = w.trailing_zeros();
            cpus.insert(i as u32 * 64 + bit);
            w &= w - 1;
        }
    }
    Some(cpus)
}

/// The environment a process started with (`/proc/PID/environ`) as `NAME=value` pairs.
/// Reading another user's environment needs root (or the same user and ptrace access).
pub fn process_environ(root: &Root, pid: u32) -> Result<Vec<(String, String)>> {
    let text = read_lossy(root, &format!("/proc/{pid}/environ"))?;
    Ok(environ(&text)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect())
}

/// A process's arguments (`/proc/PID/cmdline`); empty for kernel threads.
pub fn process_cmdline(root: &Root, pid: u32) -> Result<Vec<String>> {
    let text = read_lossy(root, &format!("/proc/{pid}/cmdline"))?;
    Ok(cmdline_args(&text)
        .into_iter()
        .map(str::to_string)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn write(dir: &Path, rel: &str, text: &[u8]) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn stat(tid: u32, comm: &str, flags: u64, prio: u32, policy: u32) -> String {
        format!(
            "{tid} ({comm}) S 2 0 0 0 -1 {flags} 0 0 0 0 0 0 0 0 20 0 1 0 25 0 0 \
             18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 17 1 {prio} {policy} 0 0 0\n"
        )
    }

    #[test]
    fn threads_of_processes_with_flags_policies_and_affinity() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(
            d,
            "proc/2/task/2/stat",
            stat(2, "kthreadd", 0x208040, 0, 0).as_bytes(),
        );
        write(
            d,
            "proc/2/task/2/status",
            b"Name:\tkthreadd\nCpus_allowed_list:\t0-1\n",
        );
        write(
            d,
            "proc/18/task/18/stat",
            stat(18, "migration/0", 0x4208040, 99, 1).as_bytes(),
        );
        write(d, "proc/18/task/18/status", b"Cpus_allowed_list:\t0\n");
        // A user process with two threads, one with a name that is not UTF-8.
        write(
            d,
            "proc/700/task/700/stat",
            stat(700, "app", 0x400100, 0, 0).as_bytes(),
        );
        write(d, "proc/700/task/700/status", b"Cpus_allowed_list:\t0-7\n");
        let mut odd = b"701 (rt\xff) S".to_vec();
        odd.extend_from_slice(
            stat(701, "x", 0x400040, 80, 1)
                .split_once(") S")
                .unwrap()
                .1
                .as_bytes(),
        );
        write(d, "proc/700/task/701/stat", &odd);
        // A thread that exited between listing and reading, and a non-process entry.
        std::fs::create_dir_all(d.join("proc/700/task/702")).unwrap();
        std::fs::create_dir_all(d.join("proc/sys")).unwrap();
        write(
            d,
            "proc/700/environ",
            b"A=1\0IRQBALANCE_BANNED_CPULIST=2-7\0",
        );
        write(
            d,
            "proc/700/cmdline",
            b"/usr/sbin/irqbalance\0--foreground\0",
        );

        let root = Root::at(d);
        let tasks = all_threads(&root).unwrap();
        assert_eq!(
            tasks.iter().map(|t| (t.pid, t.tid)).collect::<Vec<_>>(),
            [(2, 2), (18, 18), (700, 700), (700, 701)]
        );
        let kthreadd = &tasks[0];
        assert!(kthreadd.is_kernel_thread() && kthreadd.affinity_settable());
        assert!(!kthreadd.is_per_cpu_kernel_thread());
        assert_eq!(kthreadd.sched_label(), "OTHER nice 0");
        let migration = &tasks[1];
        assert!(migration.is_per_cpu_kernel_thread() && !migration.affinity_settable());
        assert_eq!(migration.sched_label(), "FIFO 99");
        assert!(migration.is_realtime());
        let app = &tasks[2];
        assert!(!app.is_kernel_thread());
        assert_eq!(app.cpus_allowed, Some(CpuSet::parse_list("0-7").unwrap()));
        let rt = &tasks[3];
        assert_eq!(rt.comm, "rt\u{fffd}");
        assert_eq!(rt.cpus_allowed, None);
        assert_eq!(rt.policy(), Some(Policy::Fifo));
        assert_eq!(
            process_environ(&root, 700).unwrap()[1],
            ("IRQBALANCE_BANNED_CPULIST".to_string(), "2-7".to_string())
        );
        assert_eq!(process_cmdline(&root, 700).unwrap()[1], "--foreground");
        assert!(process_environ(&root, 2).unwrap_err().is_not_found());
    }

    #[test]
    fn policies_and_labels() {
        let t = |policy, rt_priority| Task {
            policy,
            rt_priority,
            ..Task::default()
        };
        assert_eq!(t(2, 10).sched_label(), "RR 10");
        assert_eq!(t(6, 0).sched_label(), "DEADLINE");
        assert!(t(6, 0).is_realtime());
        assert_eq!(t(3, 0).sched_label(), "BATCH nice 0");
        assert_eq!(t(5, 0).sched_label(), "IDLE");
        assert_eq!(t(4, 0).sched_label(), "policy 4");
        assert!(!t(0, 0).is_realtime());
        assert!(
            Task {
                state: 'Z',
                ..Task::default()
            }
            .is_dead()
        );
    }

    #[test]
    fn no_proc_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(all_threads(&Root::at(dir.path())).is_err());
    }

    /// This machine: kthreadd is pid 2 and a kernel thread, the test's own threads are there,
    /// and the walk is quick.
    #[test]
    fn reads_this_host() {
        let root = Root::host();
        let started = std::time::Instant::now();
        let Ok(tasks) = all_threads(&root) else {
            return testkit::live::skip("no /proc here");
        };
        let elapsed = started.elapsed();
        assert!(tasks.len() > 10, "{} threads", tasks.len());
        if let Some(kthreadd) = tasks.iter().find(|t| t.pid == 2) {
            assert_eq!(kthreadd.comm, "kthreadd");
            assert!(kthreadd.is_kernel_thread());
        } else {
            eprintln!("no pid 2: a PID namespace without kernel threads");
        }
        let me = std::process::id();
        let mine: Vec<&Task> = tasks.iter().filter(|t| t.pid == me).collect();
        assert!(!mine.is_empty());
        assert!(
            mine.iter()
                .all(|t| !t.is_kernel_thread() && t.cpus_allowed.is_some())
        );
        eprintln!("{} threads in {elapsed:?}", tasks.len());
    }
}
