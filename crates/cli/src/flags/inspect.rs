//! `rtlab inspect PID`: its options, help and examples.

use clap::{Args, ValueEnum};
use model::{CpuSet, Nanos};

use super::values::{parse_cpu_list, parse_time};

pub const INSPECT_LONG: &str = "\
Is this running program set up for real time? rtlab watches process PID for --duration and \
judges each thread as the real-time \"hello world\" would have it: a real-time policy \
(SCHED_FIFO, SCHED_RR or SCHED_DEADLINE) at a priority below 99 and below the IRQ threads it \
may wait for; pinned to real-time CPUs (isolcpus, nohz_full or cpuset partitions, as `rtlab \
audit` finds them, or --rt-cpus); its memory locked (VmLck against VmRSS); no page fault in a \
real-time thread during the window; no real-time thread blocked on a futex without priority \
inheritance (glibc's condition variables, semaphores and rwlocks have none); its run delay \
(time runnable but waiting for a CPU) within --run-delay-budget; and no migration.

Per thread, the table shows the policy, the allowed CPUs, minor and major page faults, \
voluntary and involuntary context switches, CPU time, run delay and its maximum, migrations \
and the futex waits seen, all counted over the window. The maximum run delay is the most \
accumulated in one sampling --interval (from /proc/PID/task/TID/schedstat); with --trace it \
is the longest single wait, from wake-up or preemption to running, measured from the \
scheduler's sched_wakeup and sched_switch tracepoints in a private tracefs instance.

Each finding has its evidence and the fix, as in `rtlab audit`. inspect changes nothing on \
the machine or in the process. Typical use: `rtlab inspect $(pidof myapp)`.";

pub const INSPECT_AFTER: &str = "\
EXAMPLES:
    rtlab inspect 4242                           process 4242 over ten seconds
    rtlab inspect 4242 --duration 2s --format json   the document (schema rtlab.inspect/1)
    rtlab inspect 4242 --duration 2s --trace     the longest single wait from the tracepoints
    rtlab inspect 4242 --rt-cpus 1 --run-delay-budget 50us

EXIT STATUS:
    0    no finding failed (warnings do not fail)
    1    a finding failed
    2    no such process, a thread id instead of a process id, the process exited during the
         window, bad flags, or a file that could not be read
    130  SIGINT or SIGTERM ended the window early: what was watched is judged and printed";

/// What `rtlab inspect` prints on standard output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum InspectFormat {
    /// The per-thread table and the findings.
    #[value(alias = "table")]
    Text,
    /// The full document (schema rtlab.inspect/1).
    Json,
}

/// Options of `rtlab inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The process to inspect (its process id, not a thread's).
    #[arg(value_name = "PID", value_parser = clap::value_parser!(u32).range(1..))]
    pub pid: u32,

    /// How long to watch it, e.g. 10s, 1m (10 ms to 1 h).
    #[arg(short = 'D', long, value_name = "TIME", value_parser = parse_time, default_value = "10s")]
    pub duration: Nanos,

    /// How often to sample schedstat and the real-time threads' system calls (1 ms to 1 s).
    #[arg(long, value_name = "TIME", value_parser = parse_time, default_value = "10ms")]
    pub interval: Nanos,

    /// Measure each wait exactly from the scheduler's tracepoints (needs root and tracefs).
    #[arg(long)]
    pub trace: bool,

    /// The real-time CPUs. Default: isolcpus=, else nohz_full=, else cpuset partitions.
    #[arg(long, value_name = "LIST", value_parser = parse_cpu_list)]
    pub rt_cpus: Option<CpuSet>,

    /// A real-time thread whose longest run delay exceeds TIME is a warning.
    #[arg(long, value_name = "TIME", value_parser = parse_time, default_value = "100us")]
    pub run_delay_budget: Nanos,

    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: InspectFormat,

    /// The old spelling of --format json (renamed).
    #[arg(long, hide = true, conflicts_with = "format")]
    pub json: bool,
}
