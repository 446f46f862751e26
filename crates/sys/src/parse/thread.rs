//! What a running thread has done, from the files under `/proc/PID/task/TID/`: its fault and
//! CPU-time counters (`stat`), scheduler statistics (`schedstat`, `sched`), memory locking and
//! context switches (`status`), and the system call it is blocked in (`syscall`), with the
//! futex operations among them told apart by priority inheritance.
//!
//! Field numbers of `stat` follow proc(5) (1-based): 10 minflt, 12 majflt, 14 utime, 15 stime
//! (clock ticks), 22 starttime, 39 processor. `schedstat` is three numbers (Documentation/
//! scheduler/sched-stats.rst): time on the CPU (ns), time runnable but waiting for a CPU (the
//! *run delay*, ns) and the number of time slices run. `syscall` is `running`, `-1 SP PC` (not
//! in a system call) or `NR ARG1 ... ARG6 SP PC` with the arguments in hex (proc(5)).

use super::task::status_field;

/// The counters of one `stat` line that grow while a thread runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatCounters {
    /// Field 10: minor page faults (no disk read).
    pub minor_faults: u64,
    /// Field 12: major page faults (a page read from disk or swap).
    pub major_faults: u64,
    /// Field 14: user CPU time, clock ticks.
    pub utime_ticks: u64,
    /// Field 15: system CPU time, clock ticks.
    pub stime_ticks: u64,
    /// Field 22: when the thread started, clock ticks after boot (tells a reused id apart).
    pub start_ticks: u64,
    /// Field 39: the CPU it last ran on.
    pub processor: Option<u32>,
}

/// The counters of a `stat` line; `None` when it is truncated or malformed.
pub fn stat_counters(line: &str) -> Option<StatCounters> {
    // The name (field 2) may hold spaces and `)`: the last `)` ends it.
    let close = line.rfind(')')?;
    line[..close].find('(')?;
    let rest: Vec<&str> = line[close + 1..].split_ascii_whitespace().collect();
    let field = |n: usize| -> Option<u64> { rest.get(n - 3)?.parse().ok() };
    Some(StatCounters {
        minor_faults: field(10)?,
        major_faults: field(12)?,
        utime_ticks: field(14)?,
        stime_ticks: field(15)?,
        start_ticks: field(22)?,
        processor: field(39).and_then(|p| u32::try_from(p).ok()),
    })
}

/// A thread's `schedstat`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedStat {
    /// Time spent on a CPU, ns.
    pub cpu_ns: u64,
    /// Time spent runnable but waiting for a CPU (run delay), ns.
    pub run_delay_ns: u64,
    /// Time slices run on a CPU.
    pub timeslices: u64,
}

/// Parses a `schedstat` line; `None` unless it is three unsigned numbers.
pub fn schedstat(text: &str) -> Option<SchedStat> {
    let mut fields = text.split_ascii_whitespace();
    let mut next = || -> Option<u64> { fields.next()?.parse().ok() };
    let s = SchedStat {
        cpu_ns: next()?,
        run_delay_ns: next()?,
        timeslices: next()?,
    };
    fields.next().is_none().then_some(s)
}

/// `se.nr_migrations` of a `sched` file (`se.nr_migrations   :   12`): how often the thread
/// moved to another CPU. `None` when the line is absent (kernels without CONFIG_SCHED_DEBUG
/// have no `sched` file at all) or not a number.
pub fn nr_migrations(text: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "se.nr_migrations")
            .then(|| value.trim().parse().ok())
            .flatten()
    })
}

/// A `status` value in kB (`VmLck:\t    1024 kB`); `None` when absent or malformed.
pub fn status_kb(text: &str, key: &str) -> Option<u64> {
    let value = status_field(text, key)?;
    value.strip_suffix("kB")?.trim().parse().ok()
}

/// A plain numeric `status` value (`voluntary_ctxt_switches:\t12`, `Tgid:\t42`).
pub fn status_number(text: &str, key: &str) -> Option<u64> {
    status_field(text, key)?.parse().ok()
}

/// What a thread's `syscall` file says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syscall {
    /// The thread was running (the kernel does not stop it to look).
    Running,
    /// Blocked, but not in a system call (a page fault, or just preempted).
    NotInSyscall,
    /// Blocked in system call `nr` with these six arguments.
    In {
        /// The system call number (of the thread's architecture).
        nr: u64,
        /// Its arguments.
        args: [u64; 6],
    },
}

/// Parses a `syscall` file; `None` when it has none of the three forms.
pub fn syscall(text: &str) -> Option<Syscall> {
    let text = text.trim();
    if text == "running" {
        return Some(Syscall::Running);
    }
    let fields: Vec<&str> = text.split_ascii_whitespace().collect();
    let hex = |f: &str| u64::from_str_radix(f.strip_prefix("0x")?, 16).ok();
    match fields.as_slice() {
        ["-1", sp, pc] => {
            hex(sp)?;
            hex(pc)?;
            Some(Syscall::NotInSyscall)
        }
        [nr, rest @ ..] if rest.len() == 8 => {
            let nr = nr.parse().ok()?;
            let mut args = [0u64; 6];
            for (slot, f) in args.iter_mut().zip(rest) {
                *slot = hex(f)?;
            }
            hex(rest[6])?;
            hex(rest[7])?;
            Some(Syscall::In { nr, args })
        }
        _ => None,
    }
}

/// The system call numbering of the inspected threads (that of the machine rtlab runs on: a
/// 32-bit program on a 64-bit kernel uses its own numbers and is not recognised).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyscallAbi {
    /// x86-64: `futex` is 202.
    X86_64,
    /// The generic table (arm64, riscv64, loongarch): `futex` is 98.
    Generic,
    /// 32-bit arm and x86: `futex` is 240, `futex_time64` 422.
    Legacy32,
}

impl SyscallAbi {
    /// The numbering of the machine rtlab was built for.
    pub fn host() -> SyscallAbi {
        if cfg!(target_arch = "x86_64") {
            SyscallAbi::X86_64
        } else if cfg!(any(target_arch = "arm", target_arch = "x86")) {
            SyscallAbi::Legacy32
        } else {
            SyscallAbi::Generic
        }
    }

    /// Whether `nr` is the multiplexed `futex` call (or `futex_time64`).
    fn is_futex(self, nr: u64) -> bool {
        match self {
            SyscallAbi::X86_64 => nr == 202,
            SyscallAbi::Generic => nr == 98,
            SyscallAbi::Legacy32 => nr == 240 || nr == 422,
        }
    }
}

/// `futex_waitv` (Linux 5.16) and `futex_wait` (6.7), numbered alike on every architecture;
/// neither has priority inheritance.
const FUTEX2_WAITS: [(u64, &str); 2] = [(449, "futex_waitv"), (455, "futex_wait")];

/// A thread blocked waiting on a futex.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FutexWait {
    /// The operation (`FUTEX_WAIT_BITSET|FUTEX_PRIVATE_FLAG`, `FUTEX_LOCK_PI`).
    pub op: &'static str,
    /// Whether the owner of the lock inherits the waiter's priority.
    pub priority_inheritance: bool,
    /// The futex word's address in the process.
    pub uaddr: u64,
}

/// The futex flags masked off the command (include/uapi/linux/futex.h).
const FUTEX_PRIVATE_FLAG: u64 = 128;
const FUTEX_CLOCK_REALTIME: u64 = 256;

/// The futex wait a blocked thread is in, when it is in one: `FUTEX_WAIT` and
/// `FUTEX_WAIT_BITSET` (what glibc's condition variables, semaphores, rwlocks and normal
/// mutexes wait with) have no priority inheritance; `FUTEX_LOCK_PI`, `FUTEX_LOCK_PI2` and
/// `FUTEX_WAIT_REQUEUE_PI` (PTHREAD_PRIO_INHERIT mutexes) boost the owner. Other futex
/// operations (wakes, requeues) do not block and are `None`.
pub fn futex_wait(abi: SyscallAbi, call: &Syscall) -> Option<FutexWait> {
    let Syscall::In { nr, args } = *call else {
        return None;
    };
    if let Some((_, name)) = FUTEX2_WAITS.iter().find(|(n, _)| *n == nr) {
        return Some(FutexWait {
            op: name,
            priority_inheritance: false,
            uaddr: args[0],
        });
    }
    if !abi.is_futex(nr) {
        return None;
    }
    let op = args[1];
    let private = op & FUTEX_PRIVATE_FLAG != 0;
    let (base, pi) = match op & !(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME) {
        0 => ("FUTEX_WAIT", false),
        9 => ("FUTEX_WAIT_BITSET", false),
        6 => ("FUTEX_LOCK_PI", true),
        11 => ("FUTEX_WAIT_REQUEUE_PI", true),
        13 => ("FUTEX_LOCK_PI2", true),
        _ => return None,
    };
    let op = match (base, private) {
        (name, false) => name,
        ("FUTEX_WAIT", true) => "FUTEX_WAIT|FUTEX_PRIVATE_FLAG",
        ("FUTEX_WAIT_BITSET", true) => "FUTEX_WAIT_BITSET|FUTEX_PRIVATE_FLAG",
        ("FUTEX_LOCK_PI", true) => "FUTEX_LOCK_PI|FUTEX_PRIVATE_FLAG",
        ("FUTEX_WAIT_REQUEUE_PI", true) => "FUTEX_WAIT_REQUEUE_PI|FUTEX_PRIVATE_FLAG",
        (_, true) => "FUTEX_LOCK_PI2|FUTEX_PRIVATE_FLAG",
    };
    Some(FutexWait {
        op,
        priority_inheritance: pi,
        uaddr: args[0],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A FIFO 80 thread's `stat` line in the 6.18 layout, its name holding `) (`.
    const STAT: &str = "4243 (rt ) (loop) S 1 4242 4242 34816 4242 1077936192 5123 0 2 0 \
        151 37 0 0 -81 0 3 0 3155861 10715136 342 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 \
        0 -1 1 80 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n";

    #[test]
    fn stat_counters_by_field_number() {
        let c = stat_counters(STAT).unwrap();
        assert_eq!((c.minor_faults, c.major_faults), (5123, 2));
        assert_eq!((c.utime_ticks, c.stime_ticks), (151, 37));
        assert_eq!(c.start_ticks, 3155861);
        assert_eq!(c.processor, Some(1));
    }

    #[test]
    fn malformed_stat_counters_are_none() {
        for bad in [
            "",
            "1 (x) S 1 2 3",
            "1 x S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20",
            &STAT.replace(" 5123 ", " -5 "),
        ] {
            assert_eq!(stat_counters(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn schedstat_is_three_numbers() {
        assert_eq!(
            schedstat("1530842 95281 21\n"),
            Some(SchedStat {
                cpu_ns: 1530842,
                run_delay_ns: 95281,
                timeslices: 21
            })
        );
        for bad in ["", "1 2", "1 2 3 4", "1 -2 3", "a b c"] {
            assert_eq!(schedstat(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn migrations_from_the_sched_file() {
        let text = "rt (4243, #threads: 3)\n----------------\nse.exec_start    :   \
            8151271.504612\nse.nr_migrations                             :                   17\n\
            nr_switches                                  :                  209\n";
        assert_eq!(nr_migrations(text), Some(17));
        assert_eq!(nr_migrations("nr_switches : 3\n"), None);
        assert_eq!(nr_migrations("se.nr_migrations : x\n"), None);
    }

    #[test]
    fn status_values() {
        let status = "Name:\trt\nTgid:\t4242\nVmLck:\t   10240 kB\nVmRSS:\t    3372 kB\n\
            voluntary_ctxt_switches:\t1000\nnonvoluntary_ctxt_switches:\t3\n";
        assert_eq!(status_kb(status, "VmLck"), Some(10240));
        assert_eq!(status_kb(status, "VmRSS"), Some(3372));
        assert_eq!(status_kb(status, "Tgid"), None);
        assert_eq!(status_number(status, "voluntary_ctxt_switches"), Some(1000));
        assert_eq!(status_number(status, "nonvoluntary_ctxt_switches"), Some(3));
        assert_eq!(status_number(status, "Tgid"), Some(4242));
        assert_eq!(status_number(status, "VmLck"), None);
    }

    #[test]
    fn syscall_forms() {
        assert_eq!(syscall("running\n"), Some(Syscall::Running));
        assert_eq!(
            syscall("-1 0x7ffd1b2c3d40 0x7f12a3b4c5d6\n"),
            Some(Syscall::NotInSyscall)
        );
        // A thread in pthread_cond_wait (glibc 2.36, x86_64), read on this machine.
        let cond = "202 0x5576610b6128 0x189 0x0 0x0 0x0 0xffffffff 0x7fb2c77d2dc0 \
            0x7fb2c806df16\n";
        let Some(Syscall::In { nr, args }) = syscall(cond) else {
            panic!("not parsed")
        };
        assert_eq!(
            (nr, args[0], args[1], args[5]),
            (202, 0x5576610b6128, 0x189, 0xffffffff)
        );
        for bad in [
            "",
            "-1",
            "-1 0x1",
            "202 0x1 0x2",
            "x 1 2 3 4 5 6 7 8",
            "202 1 2 3 4 5 6 7 8",
        ] {
            assert_eq!(syscall(bad), None, "{bad:?}");
        }
    }

    fn call(nr: u64, op: u64) -> Syscall {
        Syscall::In {
            nr,
            args: [0x1000, op, 0, 0, 0, 0],
        }
    }

    #[test]
    fn futex_waits_with_and_without_inheritance() {
        let x86 = SyscallAbi::X86_64;
        // glibc's condition variable: FUTEX_WAIT_BITSET | PRIVATE | CLOCK_REALTIME.
        let w = futex_wait(x86, &call(202, 0x189)).unwrap();
        assert_eq!(w.op, "FUTEX_WAIT_BITSET|FUTEX_PRIVATE_FLAG");
        assert!(!w.priority_inheritance);
        assert_eq!(w.uaddr, 0x1000);
        assert_eq!(futex_wait(x86, &call(202, 0)).unwrap().op, "FUTEX_WAIT");
        let pi = futex_wait(x86, &call(202, 6 | 128)).unwrap();
        assert_eq!(pi.op, "FUTEX_LOCK_PI|FUTEX_PRIVATE_FLAG");
        assert!(pi.priority_inheritance);
        assert!(
            futex_wait(x86, &call(202, 11))
                .unwrap()
                .priority_inheritance
        );
        assert!(
            futex_wait(x86, &call(202, 13 | 128))
                .unwrap()
                .priority_inheritance
        );
        // Wakes do not block; other calls are not futexes.
        assert_eq!(futex_wait(x86, &call(202, 1 | 128)), None);
        assert_eq!(futex_wait(x86, &call(230, 0)), None);
        assert_eq!(futex_wait(x86, &Syscall::Running), None);
        // The number differs by architecture.
        assert_eq!(futex_wait(SyscallAbi::Generic, &call(202, 0)), None);
        assert!(futex_wait(SyscallAbi::Generic, &call(98, 0)).is_some());
        assert!(futex_wait(SyscallAbi::Legacy32, &call(422, 9)).is_some());
        // futex2 waits have no inheritance.
        let v = futex_wait(SyscallAbi::Generic, &call(449, 0)).unwrap();
        assert_eq!((v.op, v.priority_inheritance), ("futex_waitv", false));
    }
}
