//! Per-thread files under `/proc/PID/task/TID/`: the `stat` line (name, state, flags,
//! scheduling policy and real-time priority), the `Cpus_allowed_list` of `status`, and the
//! NUL-separated `environ` and `cmdline` of a process.
//!
//! Field numbers follow proc(5) (1-based): 1 pid, 2 comm, 3 state, 4 ppid, 9 flags, 19 nice,
//! 39 processor, 40 rt_priority, 41 policy. The name is printed in parentheses as-is, so it
//! may hold spaces and `)`; the *last* `)` of the line ends it (the kernel prints nothing after
//! the name that could contain one).

/// `PF_KTHREAD` in the flags field: the task is a kernel thread (include/linux/sched.h).
pub const PF_KTHREAD: u64 = 0x0020_0000;
/// `PF_NO_SETAFFINITY`: user space may not change the task's affinity (per-CPU kernel
/// threads bound with `kthread_bind`, workqueue workers).
pub const PF_NO_SETAFFINITY: u64 = 0x0400_0000;
/// `PF_WQ_WORKER`: the task is a workqueue worker (`kworker/...`).
pub const PF_WQ_WORKER: u64 = 0x0000_0020;

/// What one `stat` line says about a thread.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskStat {
    /// Field 1: the thread id (the process id for `/proc/PID/stat`).
    pub id: u32,
    /// Field 2: the command name, without the parentheses (at most 15 bytes in the kernel).
    pub comm: String,
    /// Field 3: `R`, `S`, `D`, `Z`, `I`, ...
    pub state: char,
    /// Field 4: the parent process id.
    pub ppid: u32,
    /// Field 9: the `PF_*` flags.
    pub flags: u64,
    /// Field 19: the nice value (-20 to 19).
    pub nice: i32,
    /// Field 39: the CPU the thread last ran on.
    pub processor: Option<u32>,
    /// Field 40: the real-time priority (1 to 99 for SCHED_FIFO and SCHED_RR, else 0).
    pub rt_priority: u32,
    /// Field 41: the policy number (0 OTHER, 1 FIFO, 2 RR, 3 BATCH, 5 IDLE, 6 DEADLINE).
    pub policy: u32,
}

/// Parses a `stat` line (a one-line file); `None` when it is truncated or malformed, and the
/// reader ([`crate::tasks`]) names the file.
pub fn parse_stat(line: &str) -> Option<TaskStat> {
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    if close < open {
        return None;
    }
    let id = line[..open].trim().parse().ok()?;
    let comm = line[open + 1..close].to_string();
    // Fields from 3 (state) on; field N is at index N - 3.
    let rest: Vec<&str> = line[close + 1..].split_ascii_whitespace().collect();
    let field = |n: usize| rest.get(n - 3).copied();
    let state = field(3)?.chars().next()?;
    let ppid = field(4)?.parse().ok()?;
    let flags = field(9)?.parse().ok()?;
    let nice = field(19)?.parse().ok()?;
    let processor = field(39).and_then(|f| f.parse().ok());
    let rt_priority = field(40)?.parse().ok()?;
    let policy = field(41)?.parse().ok()?;
    Some(TaskStat {
        id,
        comm,
        state,
        ppid,
        flags,
        nice,
        processor,
        rt_priority,
        policy,
    })
}

/// The value of a `Key:\tvalue` line of a `status` file (`Cpus_allowed_list`), trimmed.
pub fn status_field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k == key).then(|| v.trim())
    })
}

/// The `NAME=value` pairs of an `environ` file (NUL-separated), in order. Entries without `=`
/// are skipped on purpose: a process may write anything into its environment block, and
/// the readers ask for named variables only.
pub fn environ(text: &str) -> Vec<(&str, &str)> {
    text.split('\0')
        .filter_map(|entry| entry.split_once('='))
        .filter(|(name, _)| !name.is_empty())
        .collect()
}

/// The arguments of a `cmdline` file (NUL-separated, usually NUL-terminated). A process that
/// rewrote its command line into one space-separated string yields that one string.
pub fn cmdline_args(text: &str) -> Vec<&str> {
    let text = text.strip_suffix('\0').unwrap_or(text);
    if text.is_empty() {
        return Vec::new();
    }
    text.split('\0').collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel thread's line from this machine (kthreadd, 6.18 x86_64).
    const KTHREADD: &str = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 25 0 0 \
        18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";

    #[test]
    fn kernel_thread_line() {
        let s = parse_stat(KTHREADD).unwrap();
        assert_eq!(s.id, 2);
        assert_eq!(s.comm, "kthreadd");
        assert_eq!(s.state, 'S');
        assert_eq!(s.ppid, 0);
        assert_ne!(s.flags & PF_KTHREAD, 0);
        assert_eq!(s.nice, 0);
        assert_eq!(s.processor, Some(0));
        assert_eq!((s.policy, s.rt_priority), (0, 0));
    }

    #[test]
    fn names_with_spaces_and_parentheses() {
        // A FIFO 80 user thread named "my ) (app" whose name hides the field separators.
        let line = "4242 (my ) (app) R 1 4242 4242 0 -1 4194560 10 0 0 0 5 3 0 0 -81 0 3 0 \
            100 1000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 80 1 0 0 0";
        let s = parse_stat(line).unwrap();
        assert_eq!(s.comm, "my ) (app");
        assert_eq!(s.state, 'R');
        assert_eq!(s.ppid, 1);
        assert_eq!(s.flags & PF_KTHREAD, 0);
        assert_eq!(s.processor, Some(3));
        assert_eq!((s.policy, s.rt_priority), (1, 80));
    }

    #[test]
    fn malformed_stat_lines_are_none() {
        for bad in [
            "",
            "garbage",
            "12 (x",
            "12 x) S 1",
            "x (y) S 1 2 3",
            ")( 1 (",
            "12 (short) S 1 2 3 4 5 6",
            "12 (bad) S x 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1",
        ] {
            assert_eq!(parse_stat(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn status_fields() {
        let status = "Name:\tcat\nState:\tR (running)\nCpus_allowed:\tff\n\
            Cpus_allowed_list:\t0-7\nMems_allowed_list:\t0\n";
        assert_eq!(status_field(status, "Cpus_allowed_list"), Some("0-7"));
        assert_eq!(status_field(status, "Cpus_allowed"), Some("ff"));
        assert_eq!(status_field(status, "Nope"), None);
        assert_eq!(status_field("", "Name"), None);
        assert_eq!(status_field("Name", "Name"), None);
    }

    #[test]
    fn environ_and_cmdline_are_nul_separated() {
        let env = "PATH=/usr/bin\0IRQBALANCE_BANNED_CPULIST=2-7\0EMPTY=\0junk\0=x\0A=b=c\0";
        assert_eq!(
            environ(env),
            [
                ("PATH", "/usr/bin"),
                ("IRQBALANCE_BANNED_CPULIST", "2-7"),
                ("EMPTY", ""),
                ("A", "b=c"),
            ]
        );
        assert!(environ("").is_empty());
        assert_eq!(
            cmdline_args("/usr/sbin/irqbalance\0--foreground\0"),
            ["/usr/sbin/irqbalance", "--foreground"]
        );
        assert_eq!(cmdline_args("sshd: root [priv]"), ["sshd: root [priv]"]);
        assert!(cmdline_args("").is_empty());
        assert!(cmdline_args("\0").is_empty());
    }
}
