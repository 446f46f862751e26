//! The result of `rtlab inspect PID`: how one running program is set up for real time, per
//! thread over a window, with findings in the audit's form ([`crate::audit::Finding`]); the
//! document behind the JSON schema `rtlab.inspect/1`.
//!
//! Figures are what the kernel counted during the window (the growth of its counters between
//! the first and the last sample), except the scheduling, the allowed CPUs and the memory,
//! which are as last read.

use serde::{Deserialize, Serialize};

use crate::audit::{Counts, Finding, RtCpus};
use crate::cpuset::CpuSet;

/// The schema id written into every inspection.
pub const SCHEMA: &str = "rtlab.inspect/1";

/// How run delay was measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunDelaySource {
    /// `/proc/PID/task/TID/schedstat` sampled every interval: the total is exact, the
    /// maximum is the most run delay accumulated in one interval (an upper bound of the
    /// longest single wait inside it, and at least the longest wait that fits in one).
    Schedstat,
    /// The scheduler's `sched_wakeup`/`sched_switch` tracepoints: every wait from wake-up
    /// (or preemption) to running, exactly; the totals still come from schedstat, and a
    /// thread that started during the window (not in the trace's filter) keeps the
    /// per-interval figure.
    Trace,
}

/// The priorities a group of kernel threads runs at.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelThreads {
    /// How many there are.
    pub count: u32,
    /// The lowest real-time priority among them (0: some run at SCHED_OTHER).
    pub lowest: u32,
    /// The highest real-time priority among them (0: none is real-time).
    pub highest: u32,
}

/// The futex waits one thread was seen blocked in during the window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FutexSeen {
    /// The operation (`FUTEX_WAIT_BITSET|FUTEX_PRIVATE_FLAG`).
    pub op: String,
    /// Whether it inherits priority (`FUTEX_LOCK_PI` and kin).
    pub priority_inheritance: bool,
    /// The futex word's address in the process, hex.
    pub uaddr: String,
    /// In how many of the samples the thread was blocked in it.
    pub samples: u32,
}

/// One thread over the window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadReport {
    /// The thread id.
    pub tid: u32,
    /// Its name (`comm`).
    pub name: String,
    /// Policy and priority as `chrt` says it (`FIFO 49`, `OTHER nice 0`).
    pub sched: String,
    /// Whether it runs under SCHED_FIFO, SCHED_RR or SCHED_DEADLINE.
    pub realtime: bool,
    /// Its real-time priority (0 outside FIFO and RR).
    pub rt_priority: u32,
    /// The CPUs it may run on; `None` when unreadable.
    pub cpus_allowed: Option<CpuSet>,
    /// The CPU it last ran on.
    pub last_cpu: Option<u32>,
    /// Minor page faults during the window.
    pub minor_faults: u64,
    /// Major page faults (disk or swap reads) during the window.
    pub major_faults: u64,
    /// Voluntary context switches (it blocked) during the window.
    pub voluntary_switches: Option<u64>,
    /// Involuntary context switches (it was preempted) during the window.
    pub involuntary_switches: Option<u64>,
    /// CPU time used during the window, ns (schedstat; else user+system ticks).
    pub cpu_ns: u64,
    /// Time runnable but waiting for a CPU during the window, ns; `None` without schedstat.
    pub run_delay_ns: Option<u64>,
    /// The longest run delay: per interval from schedstat, or per wait with `--trace` (see
    /// [`Inspection::run_delay_source`]), ns.
    pub max_run_delay_ns: Option<u64>,
    /// Wake-ups seen in the trace (`--trace` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wakeups: Option<u64>,
    /// Migrations to another CPU during the window; `None` without CONFIG_SCHED_DEBUG.
    pub migrations: Option<u64>,
    /// The futex waits it was seen blocked in (real-time threads only are sampled).
    pub futex_waits: Vec<FutexSeen>,
    /// Whether its `/proc/PID/task/TID/syscall` could be read (`false` for a real-time
    /// thread without ptrace access to it: its futex waits are unknown).
    pub syscall_readable: bool,
    /// Whether the thread started after the window began.
    pub started_during: bool,
    /// Whether the thread ended before the window did (its figures stop there).
    pub ended_during: bool,
}

/// The whole inspection of one process: the document behind `rtlab.inspect/1`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inspection {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The rtlab version that inspected.
    pub rtlab_version: String,
    /// The rtlab binary that inspected; absent where no binary set it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<crate::build::Build>,
    /// Kernel release of the machine.
    pub kernel_release: String,
    /// The process id.
    pub pid: u32,
    /// The process's name.
    pub name: String,
    /// Its command line.
    pub command: Vec<String>,
    /// The window, ns, as it was (from the first sample to the last).
    pub window_ns: u64,
    /// The sampling interval, ns.
    pub interval_ns: u64,
    /// How many samples were taken.
    pub samples: u32,
    /// Whether a signal (SIGINT, SIGTERM) ended the window early; the figures cover what
    /// was watched.
    pub interrupted: bool,
    /// How `max_run_delay_ns` was measured.
    pub run_delay_source: RunDelaySource,
    /// The online CPUs.
    pub online_cpus: CpuSet,
    /// The real-time CPUs, as the audit finds them.
    pub rt_cpus: RtCpus,
    /// The IRQ threads (`irq/*`); `None` when the kernel has none (handlers not threaded).
    pub irq_threads: Option<KernelThreads>,
    /// The softirq threads (`ksoftirqd/N`, and `ktimers/N` on PREEMPT_RT).
    pub softirq_threads: Option<KernelThreads>,
    /// `VmLck` of the process, kB.
    pub locked_kb: Option<u64>,
    /// `VmRSS` of the process, kB.
    pub rss_kb: Option<u64>,
    /// Every thread seen, by id.
    pub threads: Vec<ThreadReport>,
    /// Counts by status.
    pub counts: Counts,
    /// The findings, in check order.
    pub findings: Vec<Finding>,
}

impl Inspection {
    /// Whether any finding failed (`rtlab inspect` then exits 1).
    pub fn failed(&self) -> bool {
        self.counts.fail > 0
    }
}
