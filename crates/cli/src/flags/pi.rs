//! `rtlab pi check`: its options, help and examples.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use model::{CpuSet, Nanos};

use super::values::{parse_cpu_list, parse_time};

pub const PI_CHECK_LONG: &str = "\
Check that priority inheritance works here, pi_stress-style. Each inversion group is three \
SCHED_FIFO threads pinned to one CPU: the low thread (FIFO 20) takes a lock and works with it \
for 1 ms of CPU time, the high thread (FIFO 40) then blocks on it, and the medium thread \
(FIFO 30) spins. With priority inheritance the low thread runs at the high one's priority \
while it holds the lock, so the high thread gets it after about 1 ms; without it the medium \
thread starves the low one and the high thread misses its 100 ms deadline.

The lock is a raw futex (FUTEX_LOCK_PI / FUTEX_UNLOCK_PI), so the answer does not depend on \
the C library. The check runs for --duration with PI, then a control of 3 rounds per group \
with a plain futex lock, which must show the inversion the PI run survives. The medium \
thread's spin ends when the high thread is done or at its watchdog (the deadline + 10 ms); \
real-time throttling (kernel.sched_rt_runtime_us) still applies. Every thread is joined \
before rtlab exits: none is left at a real-time priority.

One group per CPU (two on one CPU would starve each other): --groups is at most the number \
of --cpus. Needs root or CAP_SYS_NICE. The result is schema rtlab.pi/1.";

pub const PI_CHECK_AFTER: &str = "\
EXAMPLES:
    rtlab pi check --duration 2s                   one group on the first allowed CPU
    rtlab pi check --duration 10s --format json > pi.json
    rtlab pi check --cpus 1 --duration 5s -o pi.json

PEER EQUIVALENTS:
    pi_stress --groups=1 --duration=2              rtlab pi check --groups 1 --duration 2s

EXIT STATUS:
    0    every PI inversion was resolved within its deadline
    1    a high thread on a PI lock missed its deadline
    2    bad input or setup error (not root, no real-time scheduling, --cpus)
    130  interrupted by SIGINT/SIGTERM: no verdict";

/// `rtlab pi` commands.
#[derive(Debug, Subcommand)]
pub enum PiCommand {
    /// Check that priority inheritance holds: inversion groups with PI futexes, and a
    /// control with plain ones.
    #[command(long_about = PI_CHECK_LONG, after_long_help = PI_CHECK_AFTER)]
    Check(PiCheckArgs),
}

/// What `rtlab pi check` prints on standard output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PiFormat {
    /// The verdict and a row per group.
    #[value(alias = "table")]
    Text,
    /// The result document (schema rtlab.pi/1).
    Json,
}

/// Options of `rtlab pi check`.
#[derive(Debug, Args)]
pub struct PiCheckArgs {
    /// How long the PI run lasts (100ms to 1h); the control adds about 0.4 s.
    #[arg(short = 'D', long, value_name = "TIME", value_parser = parse_time, default_value = "5s")]
    pub duration: Nanos,

    /// How many inversion groups run at once, one per CPU.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub groups: u32,

    /// The CPUs for the groups, in order. Default: the CPUs rtlab may run on.
    #[arg(short = 'a', long, value_name = "LIST", value_parser = parse_cpu_list)]
    pub cpus: Option<CpuSet>,

    /// What to print on standard output.
    #[arg(long, value_enum, default_value = "text")]
    pub format: PiFormat,

    /// The old spelling of --format json (renamed).
    #[arg(long, hide = true, conflicts_with = "format")]
    pub json: bool,

    /// Write the result document (JSON, schema rtlab.pi/1) to FILE.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}
