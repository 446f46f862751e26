//! `rtlab exec`: its options, help and examples.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;
use model::{CpuSet, Nanos};

use super::measure::PolicyArg;
use super::values::{parse_cpu_list, parse_time};

pub const EXEC_LONG: &str = "\
Start a program set up for real time, as a real-time program should start: the scheduling \
policy and priority (--policy, --priority) or a SCHED_DEADLINE reservation (--deadline), the CPUs it \
may run on and RLIMIT_MEMLOCK are set in the child between fork and exec, so the program runs \
under them from its first instruction.

Placement: when `rtlab tune apply` made an RT cpuset (its journal names it; see `rtlab tune \
status`), the program joins it first, so it runs on the RT CPUs; --cpus then narrows it within \
them. --no-cpuset keeps it where rtlab runs. SCHED_DEADLINE needs an affinity that spans a \
whole root domain (the kernel accounts deadline bandwidth per root domain): with --deadline, \
leave --cpus out, or make the CPUs an exclusive cpuset partition of their own.

Priority: 99 is refused without --allow-prio-99 (the kernel's migration and watchdog threads run at \
99; a program there competes with them), and a priority at or above the IRQ threads' (50 on \
PREEMPT_RT by default) is warned about: their interrupts would wait for the program.

Memory: a memory lock does not survive exec, so the program must call mlockall itself. \
--check-after TIME after the start, rtlab reads its VmLck and VmRSS (/proc/PID/status) and \
says so on standard error if it locked nothing.

rtlab waits for the program, forwards SIGINT, SIGTERM and SIGHUP to it (except those the \
terminal sent to both: Ctrl-C reaches the program once), and exits with its status. If rtlab is killed, the program is killed too (a real-time program is not left \
running unattended).";

pub const EXEC_AFTER: &str = "\
EXAMPLES:
    rtlab exec --priority 49 -- ./my-rt-app --config app.toml   fifo, just below the IRQ threads
    rtlab exec --policy fifo -p 80 --cpus 3 --rlimit-memlock 64M -- ./control-loop
    rtlab exec --deadline 3ms/10ms/10ms -- ./worker   held to 30% of a CPU
    rtlab exec --dry-run --policy rr -p 10 -- sleep 1   what would be set, nothing started

PEER EQUIVALENTS:
    chrt -f 49 ./app                                   rtlab exec --policy fifo -p 49 -- ./app
    chrt -r 10 ./app                                   rtlab exec --policy rr -p 10 -- ./app
    taskset -c 3 chrt -f 80 ./app                      rtlab exec -p 80 --cpus 3 -- ./app
    chrt -d -T 3000000 -D 10000000 -P 10000000 0 ./w   rtlab exec --deadline 3ms/10ms/10ms -- ./w

EXIT STATUS:
    N    the program's own exit status; 128 + N when signal N ended it (130 for SIGINT)
    2    bad input, or the setup failed (privileges, admission control, CPUs): rtlab says
         which step and how to fix it, and the program was not started
    126  the program was found but could not be executed
    127  the program was not found";

/// Options of `rtlab exec`.
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The program's scheduling policy, as `rtlab measure --policy`. Default: fifo when
    /// --priority is given, deadline with --deadline; with neither, rtlab's own.
    #[arg(long, value_enum, help_heading = "Scheduling")]
    pub policy: Option<PolicyArg>,

    /// Real-time priority with --policy fifo or rr: 1-99, and 99 only with --allow-prio-99.
    #[arg(short, long, value_name = "PRIO", value_parser = clap::value_parser!(u8).range(1..=99), help_heading = "Scheduling")]
    pub priority: Option<u8>,

    /// The old spelling of --policy fifo --priority PRIO (renamed).
    #[arg(long, value_name = "PRIO", value_parser = clap::value_parser!(u8).range(1..=99), hide = true, conflicts_with_all = ["policy", "priority", "rr", "deadline"])]
    pub fifo: Option<u8>,

    /// The old spelling of --policy rr --priority PRIO (renamed).
    #[arg(long, value_name = "PRIO", value_parser = clap::value_parser!(u8).range(1..=99), hide = true, conflicts_with_all = ["policy", "priority", "deadline"])]
    pub rr: Option<u8>,

    /// Run under SCHED_DEADLINE: RUNTIME of CPU time every PERIOD, finished within DEADLINE
    /// of each period's start (`3ms/10ms/10ms`; `3ms/10ms` sets the deadline to the period).
    #[arg(long, value_name = "RUNTIME/DEADLINE/PERIOD", value_parser = parse_reservation, conflicts_with = "priority", help_heading = "Scheduling")]
    pub deadline: Option<Reservation>,

    /// Allow --priority 99, where the kernel's migration and watchdog threads run.
    #[arg(long, alias = "force", help_heading = "Scheduling")]
    pub allow_prio_99: bool,

    /// The CPUs the program may run on (`3`, `2-7`); within the RT cpuset when there is one.
    #[arg(short = 'a', long, value_name = "LIST", value_parser = parse_cpu_list, help_heading = "Placement")]
    pub cpus: Option<CpuSet>,

    /// Do not join the RT cpuset that `rtlab tune apply` made.
    #[arg(long, help_heading = "Placement")]
    pub no_cpuset: bool,

    /// The tuning journal that names the RT cpuset.
    #[arg(long, value_name = "PATH", default_value = tune::journal::DEFAULT_PATH, help_heading = "Placement")]
    pub journal: PathBuf,

    /// RLIMIT_MEMLOCK of the program, soft and hard: a size (`64M`, `1G`) or `unlimited`.
    #[arg(long, value_name = "SIZE", value_parser = parse_memlock, help_heading = "Limits")]
    pub rlimit_memlock: Option<MemlockLimit>,

    /// How long after the start to check that the program locked its memory (0: no check).
    #[arg(long, value_name = "TIME", value_parser = parse_time, default_value = "200ms", help_heading = "Checks")]
    pub check_after: Nanos,

    /// Print what would be set and start nothing.
    #[arg(long, help_heading = "Output")]
    pub dry_run: bool,

    /// No warnings or notes on standard error (errors are still printed).
    #[arg(short, long, help_heading = "Output")]
    pub quiet: bool,

    /// The program and its arguments.
    #[arg(required = true, trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

/// A SCHED_DEADLINE reservation as typed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reservation {
    /// CPU time per period.
    pub runtime: Nanos,
    /// Relative deadline.
    pub deadline: Nanos,
    /// Period.
    pub period: Nanos,
}

/// RLIMIT_MEMLOCK as typed: bytes, or no limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemlockLimit(pub Option<u64>);

/// `RUNTIME/DEADLINE/PERIOD` or `RUNTIME/PERIOD`, each a time with its unit.
pub fn parse_reservation(text: &str) -> Result<Reservation, String> {
    let parts: Vec<&str> = text.split('/').collect();
    let time = |t: &str, what: &str| {
        parse_time(t).map_err(|e| format!("the {what} '{t}' of '{text}': {e}"))
    };
    let (runtime, deadline, period) = match parts.as_slice() {
        [r, d, p] => (
            time(r, "runtime")?,
            time(d, "deadline")?,
            time(p, "period")?,
        ),
        [r, p] => {
            let period = time(p, "period")?;
            (time(r, "runtime")?, period, period)
        }
        _ => {
            return Err(format!(
                "'{text}' is not a reservation; write RUNTIME/DEADLINE/PERIOD like \
                 3ms/10ms/10ms, or RUNTIME/PERIOD"
            ));
        }
    };
    tune::launch::check_reservation(runtime, deadline, period)
        .map_err(|e| e.trim_start_matches("--deadline: ").to_string())?;
    Ok(Reservation {
        runtime,
        deadline,
        period,
    })
}

/// A size with a binary unit (`64M`), or `unlimited`.
pub fn parse_memlock(text: &str) -> Result<MemlockLimit, String> {
    if matches!(text.trim(), "unlimited" | "infinity") {
        return Ok(MemlockLimit(None));
    }
    model::load::spec::parse_size(text).map(|b| MemlockLimit(Some(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_parse_with_two_or_three_times() {
        let r = parse_reservation("3ms/10ms/10ms").unwrap();
        assert_eq!(r.runtime, Nanos(3_000_000));
        assert_eq!(r.deadline, Nanos(10_000_000));
        let r = parse_reservation("500us/2ms").unwrap();
        assert_eq!(r.deadline, r.period);
        assert!(parse_reservation("3ms").is_err());
        assert!(parse_reservation("3/10/10").is_err());
        let e = parse_reservation("20ms/10ms/5ms").unwrap_err();
        assert!(e.contains("exceeds the deadline"), "{e}");
    }

    #[test]
    fn memlock_sizes_and_unlimited() {
        assert_eq!(parse_memlock("64M").unwrap(), MemlockLimit(Some(64 << 20)));
        assert_eq!(parse_memlock("unlimited").unwrap(), MemlockLimit(None));
        assert!(parse_memlock("lots").is_err());
    }
}
