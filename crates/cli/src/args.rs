//! The command line, defined once: clap derives `--help`, the man pages and the shell
//! completions from these structs. Values are parsed into typed form here (time values with
//! units, CPU selectors); what combinations make sense is decided by the rooms.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use model::load::LoadSpec;
use model::measure::Policy;
use model::nanos::parse_nanos;
use model::{CpuSpec, Nanos};

const ABOUT: &str = "Make a Linux machine's real-time behaviour visible, explainable and fixable";

const LONG_ABOUT: &str = "\
rtlab audits a machine's real-time readiness, measures how late real-time threads wake up on \
every CPU under built-in load, and will tune, trace and explain what gets in their way. It is \
one tool for the work that otherwise takes cyclictest, rtla, rteval, tuned and tuna together.";

const EXIT_STATUS: &str = "\
EXIT STATUS:
    0    the command ran and every verdict passed
    1    the command ran and a verdict failed (latency over --fail-above, --break fired, an
         audit finding failed, a run that cannot be judged: unfinished or without samples)
    2    bad input or a setup error (the message says which value and how to fix it); an
         input that could not be read never passes
    130  interrupted by SIGINT or SIGTERM (the result is kept, with status \"interrupted\")

Each command's help and man page (`rtlab help COMMAND`, rtlab-COMMAND(1)) lists its own.";

/// rtlab's command line.
#[derive(Debug, Parser)]
#[command(name = "rtlab", version, about = ABOUT, long_about = LONG_ABOUT, after_long_help = EXIT_STATUS)]
pub struct Cli {
    /// Read kernel files (procfs, sysfs, tracefs) under DIR instead of / — for captured trees
    /// and tests.
    #[arg(long, global = true, value_name = "DIR", hide = true)]
    pub root: Option<PathBuf>,

    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Measure wake-up latency on every CPU, cyclictest-style, with exact tails.
    #[command(long_about = MEASURE_LONG, after_long_help = MEASURE_AFTER)]
    Measure(Box<MeasureArgs>),
    /// Run built-in stress loads alone, with a live line of what they achieve.
    #[command(long_about = LOAD_LONG, after_long_help = LOAD_AFTER)]
    Load(Box<LoadArgs>),
    /// Check this machine's real-time readiness: every finding with evidence and the fix.
    #[command(long_about = crate::audit_args::AUDIT_LONG, after_long_help = crate::audit_args::AUDIT_AFTER)]
    Audit(Box<crate::audit_args::AuditArgs>),
    /// Kernel configuration tools: the real-time-relevant differences between two configs.
    #[command(long_about = crate::audit_args::KCONFIG_LONG, after_long_help = crate::exit::help::GROUP)]
    Kconfig(crate::audit_args::KconfigArgs),
    /// Evaluate the machine in one command: audit, measure idle / 60% / full load, compare,
    /// report.
    #[command(long_about = crate::run_cmd::RUN_LONG, after_long_help = crate::run_cmd::RUN_AFTER)]
    Run(crate::run_cmd::RunArgs),
    /// List the stored runs, newest first.
    #[command(after_long_help = crate::store_args::STORE_EXIT)]
    Runs(crate::store_args::RunsArgs),
    /// Show a stored run (or a result file) again: table, JSON or cyclictest lines.
    #[command(after_long_help = crate::store_args::show_after())]
    Show(crate::store_args::ShowArgs),
    /// Label a stored run ("RT-#2"); an empty label removes it.
    #[command(after_long_help = format!("{}\n\n{}", crate::store_args::RUN_HELP, crate::store_args::STORE_EXIT))]
    Label(crate::store_args::LabelArgs),
    /// Delete stored runs.
    #[command(after_long_help = format!("{}\n\n{}", crate::store_args::RUN_HELP, crate::store_args::STORE_EXIT))]
    Rm(crate::store_args::RmArgs),
    /// Export a run as JSON, CSV, JUnit XML (per-CPU verdicts against --budget) or
    /// OpenMetrics; exits 1 when the exported verdict fails.
    #[command(after_long_help = crate::store_args::export_after())]
    Export(crate::store_args::ExportArgs),
    /// Compare runs side by side (talk 000's table): per-CPU min/avg/p99.9/max by cluster,
    /// changes against the first run, and a regression verdict (--fail-if-worse).
    #[command(long_about = crate::compare_cmd::COMPARE_LONG, after_long_help = crate::compare_cmd::compare_after())]
    Compare(crate::compare_cmd::CompareArgs),
    /// Write an HTML report with latency plots over one or more runs (self-contained; --svg
    /// writes the plots as SVG files too).
    #[command(long_about = crate::report_cmd::REPORT_LONG, after_long_help = format!("{}\n\n{}", crate::store_args::RUN_HELP, crate::exit::help::REPORT))]
    Report(crate::report_cmd::ReportArgs),
    /// Import results other tools wrote (cyclictest JSON, histograms, summary lines; rtla
    /// timerlat hist) as stored runs.
    #[command(long_about = crate::import_cmd::IMPORT_LONG, after_long_help = crate::exit::help::IMPORT)]
    Import(crate::import_cmd::ImportArgs),
    /// Explain why threads woke late: from a run measured with --trace or a trace file, the
    /// timer, IRQs, softirqs and tasks that stood in the way; `irqs`, `sched` and `wakeups`
    /// analyse a whole trace.
    #[command(long_about = crate::explain_cmd::EXPLAIN_LONG, after_long_help = crate::explain_cmd::EXPLAIN_AFTER)]
    Explain(crate::explain_cmd::ExplainArgs),
    /// Tune the machine for real-time CPUs: `rtlab tune plan --rt-cpus 2-7` says what to
    /// change (boot parameters, IRQs, workqueues, governors, idle states, cpusets) and why.
    #[command(subcommand, after_long_help = crate::exit::help::GROUP)]
    Tune(crate::tune_cmd::TuneCommand),
    /// Record kernel traces (`rtlab trace record -o trace.txt`) for `rtlab explain`.
    #[command(subcommand, after_long_help = crate::exit::help::GROUP)]
    Trace(crate::trace_cmd::TraceCommand),
    /// Clean up after a load whose rtlab died (started by rtlab itself; internal).
    #[command(hide = true)]
    Guardian,
    /// Print a shell completion script to standard output.
    #[command(
        after_long_help = crate::exit::help::DONE,
        long_about = "Print a completion script for SHELL to standard output, e.g.\n\n    \
        rtlab completions bash > /etc/bash_completion.d/rtlab\n    \
        rtlab completions zsh > \"${fpath[1]}/_rtlab\""
    )]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write man pages (rtlab.1 and one per command) into a directory.
    #[command(after_long_help = crate::exit::help::DONE)]
    Man {
        /// Directory to write into (created if missing).
        #[arg(long, short, value_name = "DIR")]
        out: PathBuf,
    },
}

const MEASURE_LONG: &str = "\
Measure how late a periodic real-time thread wakes up. One thread per measured CPU sleeps to \
an absolute deadline on CLOCK_MONOTONIC, every --interval, and records `wake-up time - \
deadline` in nanoseconds: minimum, mean, standard deviation, percentiles up to p99.999 and the \
exact maximum per CPU, a histogram that never drops a sample, the worst samples with their \
cycle numbers, and the per-second maximum over time.

The run holds /dev/cpu_dma_latency at 0, locks memory and pre-faults the threads' stacks, \
shows a live per-CPU view on a terminal, and ends with a per-CPU table. --json FILE keeps the \
whole result (schema rtlab.measure/1), rewritten atomically every --checkpoint so a crash or \
power loss loses at most one interval. SIGINT or SIGTERM ends the run early with status \
\"interrupted\"; nothing rtlab changed is left behind.

Needs root, or CAP_SYS_NICE (and CAP_IPC_LOCK for memory locking), for real-time policies.";

const MEASURE_AFTER: &str = "\
EXAMPLES:
    rtlab measure --load cpu:60%,timer-storm --duration 10m   measure under load
    rtlab measure                              every CPU, 1 ms, 60 s, SCHED_FIFO 95
    rtlab measure --cpus 2-7 --duration 10m --json run.json
    rtlab measure --cpus '!0' --break 150us    stop and freeze the kernel trace at a spike
    rtlab measure --duration 1h --fail-above 100us --quiet   gate a CI pipeline
    rtlab measure --format cyclictest --histogram 400us > hist.txt   OSADL-style plot input

CYCLICTEST EQUIVALENTS:
    cyclictest -S -m -p 95 -i 1000 -D 60     rtlab measure -p 95 -i 1ms -D 60s
    cyclictest -b 150 --tracemark            rtlab measure --break 150us
    cyclictest -h 400 -q                     rtlab measure --format cyclictest --histogram 400us

EXIT STATUS:
    0    every CPU's maximum within --fail-above (or no threshold given)
    1    --fail-above exceeded, --break fired, or a CPU measured no samples
    2    bad input or setup error, found before measuring (privileges, --json, --db,
         --trace-dir); or the result file could not be written at the end (the run is still
         stored and printed)
    130  interrupted by SIGINT/SIGTERM/SIGHUP: the run stops in order whatever more signals
         come, and its result (status \"interrupted\") is printed, written and stored";

/// What `rtlab measure` prints to standard output at the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MeasureFormat {
    /// A per-CPU table with percentiles, in microseconds.
    Table,
    /// The full result document (schema rtlab.measure/1).
    Json,
    /// cyclictest's summary lines, or its -h histogram layout with --histogram.
    Cyclictest,
}

/// Scheduling policies as typed on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PolicyArg {
    /// SCHED_FIFO: run until done or preempted by a higher priority.
    Fifo,
    /// SCHED_RR: like fifo with a time slice among equal priorities.
    Rr,
    /// SCHED_OTHER: the normal fair scheduler (not real-time).
    Other,
    /// SCHED_BATCH: fair scheduler, treated as CPU-bound.
    Batch,
    /// SCHED_IDLE: runs only when nothing else wants the CPU.
    Idle,
    /// SCHED_DEADLINE: earliest-deadline-first with a reserved runtime per period.
    Deadline,
}

impl From<PolicyArg> for Policy {
    fn from(p: PolicyArg) -> Policy {
        match p {
            PolicyArg::Fifo => Policy::Fifo,
            PolicyArg::Rr => Policy::Rr,
            PolicyArg::Other => Policy::Other,
            PolicyArg::Batch => Policy::Batch,
            PolicyArg::Idle => Policy::Idle,
            PolicyArg::Deadline => Policy::Deadline,
        }
    }
}

/// Options of `rtlab measure`.
#[derive(Debug, Args)]
pub struct MeasureArgs {
    /// CPUs to measure: a list like 0-3,6, `all`, or `!0` (all but 0). Default: every CPU this
    /// process may run on. Offline or unknown CPUs are an error.
    #[arg(short = 'a', long, value_name = "LIST", value_parser = parse_cpu_spec, help_heading = "What to measure")]
    pub cpus: Option<CpuSpec>,

    /// Period of each measuring thread (ns, us, ms, s). At least 20us.
    #[arg(short, long, value_name = "TIME", value_parser = parse_time, default_value = "1ms", help_heading = "What to measure")]
    pub interval: Nanos,

    /// How long to measure (s, m, h, d), e.g. 60s, 10m, 3h, 2d. Default 60s.
    #[arg(short = 'D', long, value_name = "TIME", value_parser = parse_time, conflicts_with = "cycles", help_heading = "What to measure")]
    pub duration: Option<Nanos>,

    /// Measure this many periods per CPU instead of a duration (a period missed by a late
    /// wake-up counts as an overrun).
    #[arg(short = 'l', long, value_name = "N", help_heading = "What to measure")]
    pub cycles: Option<u64>,

    /// Wake all threads at the same instant. By default their deadlines are spread over the
    /// period so they do not all wake together.
    #[arg(long, help_heading = "What to measure")]
    pub aligned: bool,

    /// Real-time priority of the measuring threads, 1-98 (fifo and rr).
    #[arg(short, long, value_name = "PRIO", value_parser = clap::value_parser!(u8).range(0..=99), help_heading = "Scheduling")]
    pub priority: Option<u8>,

    /// Allow --priority 99, which starves kernel threads that need it (migration, watchdogs).
    #[arg(long, help_heading = "Scheduling")]
    pub allow_prio_99: bool,

    /// Scheduling policy of the measuring threads.
    #[arg(long, value_enum, default_value = "fifo", help_heading = "Scheduling")]
    pub policy: PolicyArg,

    /// SCHED_DEADLINE runtime reserved per period (with --policy deadline).
    #[arg(long, value_name = "TIME", value_parser = parse_time, help_heading = "Scheduling")]
    pub dl_runtime: Option<Nanos>,

    /// SCHED_DEADLINE period (with --policy deadline). Default: the interval.
    #[arg(long, value_name = "TIME", value_parser = parse_time, help_heading = "Scheduling")]
    pub dl_period: Option<Nanos>,

    /// Pin rtlab's other threads to these CPUs (cyclictest's --mainaffinity).
    #[arg(long, value_name = "LIST", value_parser = parse_cpu_spec, help_heading = "Scheduling")]
    pub main_cpu: Option<CpuSpec>,

    /// Do not lock memory or pre-fault stacks (page faults may then land in measurements).
    #[arg(long, help_heading = "System state")]
    pub no_mlock: bool,

    /// Hold /dev/cpu_dma_latency at this value during the run (keeps CPUs out of deep idle
    /// states), or `off`. Recorded in the result.
    #[arg(long, value_name = "TIME|off", value_parser = parse_dma_latency, default_value = "0", help_heading = "System state")]
    pub dma_latency: DmaLatency,

    /// Stop at the first wake-up later than TIME, write a marker naming the CPU, latency and
    /// cycle to tracefs trace_marker, and switch tracing off so the kernel trace around the
    /// spike is kept (cyclictest -b --tracemark).
    #[arg(short = 'b', long = "break", value_name = "TIME", value_parser = parse_time, help_heading = "Verdicts")]
    pub break_threshold: Option<Nanos>,

    /// Record a kernel trace while measuring (a private tracefs instance with the scheduler,
    /// IRQ, softirq, timer, IPI and workqueue events; removed afterwards) and explain the
    /// worst spikes from it: which IRQ, task or section was in the way. With --break the trace
    /// is frozen at the breach. The explanations and the trace around each spike are stored
    /// with the run (`rtlab explain RUN`).
    #[arg(long, help_heading = "Trace")]
    pub trace: bool,

    /// With --trace: ring buffer per CPU, in KiB. Larger keeps older spikes explainable.
    #[arg(long, value_name = "KIB", default_value_t = 4096, value_parser = clap::value_parser!(u64).range(64..=1_048_576), requires = "trace", help_heading = "Trace")]
    pub trace_buffer: u64,

    /// With --trace: also keep the whole trace as text in DIR.
    #[arg(long, value_name = "DIR", requires = "trace", help_heading = "Trace")]
    pub trace_dir: Option<PathBuf>,

    /// Run to the end, then exit 1 if any CPU's maximum exceeded TIME.
    #[arg(long, value_name = "TIME", value_parser = parse_time, help_heading = "Verdicts")]
    pub fail_above: Option<Nanos>,

    /// Keep the N worst samples per CPU, with their time and cycle number.
    #[arg(long, value_name = "N", default_value_t = 32, help_heading = "Output")]
    pub spikes: u32,

    /// Write the result document (JSON, schema rtlab.measure/1) to FILE, rewritten atomically
    /// every --checkpoint during the run.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub json: Option<PathBuf>,

    /// How often --json FILE is rewritten during the run.
    #[arg(long, value_name = "TIME", value_parser = parse_time, default_value = "10s", help_heading = "Output")]
    pub checkpoint: Nanos,

    /// What to print on standard output at the end.
    #[arg(long, value_enum, default_value = "table", help_heading = "Output")]
    pub format: MeasureFormat,

    /// With --format cyclictest: print cyclictest's -h histogram layout with one row per
    /// microsecond up to TIME (samples above it count as overflows).
    #[arg(long, value_name = "TIME", value_parser = parse_time, help_heading = "Output")]
    pub histogram: Option<Nanos>,

    /// No live view, progress or warnings on standard error; only the final output.
    #[arg(short, long, help_heading = "Output")]
    pub quiet: bool,

    /// The run store the result is saved in (default: $RTLAB_DB, else
    /// $XDG_DATA_HOME/rtlab/rtlab.db, else ~/.local/share/rtlab/rtlab.db).
    #[arg(long, value_name = "PATH", help_heading = "Store")]
    pub db: Option<PathBuf>,

    /// Save the result with this label (e.g. "RT-#2"), as `rtlab label` would.
    #[arg(
        long,
        value_name = "TEXT",
        conflicts_with = "no_store",
        help_heading = "Store"
    )]
    pub label: Option<String>,

    /// Do not save the result in the run store.
    #[arg(long, help_heading = "Store")]
    pub no_store: bool,

    /// Save the result as part of this session (set by `rtlab run` for its phases).
    #[arg(long, value_name = "ID", hide = true, conflicts_with = "no_store")]
    pub session: Option<String>,

    /// Run this load during the measurement (see `rtlab load --help` for the spec): it
    /// starts first, settles for --warmup, is stopped after the run, and what it achieved
    /// over the measured window is recorded in the result.
    #[arg(long, value_name = "SPEC", value_parser = parse_load_spec, help_heading = "Load")]
    pub load: Option<LoadSpec>,

    /// How long the load runs before measuring starts. Default 2s with --load.
    #[arg(long, value_name = "TIME", value_parser = parse_time, requires = "load", help_heading = "Load")]
    pub warmup: Option<Nanos>,

    /// Where and how the load runs.
    #[command(flatten)]
    pub placement: LoadPlacementArgs,

    /// Start the load inside this existing cgroup directory while rtlab measures from its own:
    /// rtlab steps into CGROUP to start the load process, and steps back. After `rtlab tune
    /// apply`, with `rtlab tune run -- rtlab measure ...`, this keeps the load on the
    /// housekeeping CPUs (`.../rtlab-housekeeping`) instead of following rtlab into the RT
    /// cpuset. The cgroup is left as it was.
    #[arg(
        long,
        value_name = "CGROUP",
        conflicts_with = "load_cgroup",
        help_heading = "Load"
    )]
    pub load_join: Option<String>,

    /// Replace the clock with scripted latencies (testing only; nothing is measured).
    #[arg(long, value_name = "SCRIPT", hide = true)]
    pub fake_clock: Option<String>,
}

const LOAD_LONG: &str = "\
Run rtlab's built-in loads: the stress a latency figure must be measured under, started, \
measured and stopped by one tool. Each generator reports what it actually achieved (operations \
and bytes per second, the CPU share it consumed) and the busy share of every CPU is read from \
/proc/stat over the same window, so a result says what load it was taken under.

SPEC is a comma-separated list of generators, each NAME[:ARG...][@CPULIST]:

    cpu[:PERCENT%]        one worker per CPU, busy PERCENT of each ~10 ms slice (default 100%)
    timer-storm[:N]       N SCHED_OTHER threads sleeping a random 0-1 ms, over and over (200)
    messaging[:GxF][:socket|pipe][:thread|process]
                          hackbench-like: G groups of F senders and F receivers (4x10)
    memory[:SIZE|auto][:WORKERS]
                          streaming copies over SIZE (default 4x the last-level cache, at
                          least 64M) and an mmap/munmap page-fault storm
    io[:SIZE][:WORKERS]   64 KiB writes, fsync every MiB, at most SIZE on disk per worker (64M)
    net[:tcp|udp][:FLOWS] TCP streams and/or UDP datagrams over 127.0.0.1 (both, 1)
    fork[:WORKERS]        fork, exec /bin/true, reap, as fast as possible (1)
    cmd:\"COMMAND\"         any command line, run by /bin/sh -c in its own process group

Sizes take binary units (K, M, G). @CPULIST places a generator (a CPU list like 0-1,3); \
--load-cpus places the others; by default they may use every online CPU. Quote a command \
that contains a comma or @.

Nothing outlives the load: threads end with rtlab, child processes get SIGKILL when rtlab \
dies, and a small guardian process kills command process groups and removes the temporary \
directory and cgroup even if rtlab itself is killed with SIGKILL. Without --duration the load \
runs until Ctrl-C.";

const LOAD_AFTER: &str = "\
EXAMPLES:
    rtlab load cpu:60% --duration 1m                 60% busy on every CPU for a minute
    rtlab load 'cpu:100%@0-1,timer-storm:500@2-3'    placed per generator
    rtlab load messaging:10x20:process,io:256M --load-cpus 0-3 --load-cgroup
    rtlab load 'cmd:\"stress-ng --vm 2 --vm-bytes 1G\"' --duration 10m --json load.json
    rtlab measure --load cpu:60%,timer-storm --warmup 5s   measure under load

EQUIVALENTS:
    stress-ng --cpu 0 --cpu-load 60                  rtlab load cpu:60%
    hackbench -g 10 -f 20 -l 100000000               rtlab load messaging:10x20:socket:process
    stress-ng --hdd 1 --hdd-bytes 64M                rtlab load io:64M

EXIT STATUS:
    0    the load ran for --duration, or until Ctrl-C without --duration
    2    bad spec or setup error (nothing is left running)
    130  interrupted by SIGINT/SIGTERM before --duration";

/// Options of `rtlab load`.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// The load: generators like cpu:60%,timer-storm:200,io:64M (see above).
    #[arg(value_name = "SPEC", value_parser = parse_load_spec)]
    pub spec: LoadSpec,

    /// How long to run (s, m, h, d). Default: until Ctrl-C.
    #[arg(short = 'D', long, value_name = "TIME", value_parser = parse_time)]
    pub duration: Option<Nanos>,

    /// Let the load run this long before its figures start counting.
    #[arg(long, value_name = "TIME", value_parser = parse_time, default_value = "0")]
    pub warmup: Nanos,

    /// Where and how the load runs.
    #[command(flatten)]
    pub placement: LoadPlacementArgs,

    /// Write the achieved figures (JSON, schema rtlab.load/1) to FILE.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub json: Option<PathBuf>,

    /// What to print on standard output at the end.
    #[arg(long, value_enum, default_value = "table", help_heading = "Output")]
    pub format: LoadFormat,

    /// No live line or notes on standard error; only the final output.
    #[arg(short, long, help_heading = "Output")]
    pub quiet: bool,

    /// Driven by `rtlab measure --load`: `ready` and the figures on stdout, `mark` on stdin
    /// opens the window, end of stdin stops.
    #[arg(long, hide = true)]
    pub control: bool,
}

/// Placement options shared by `rtlab load` and `rtlab measure --load`.
#[derive(Clone, Debug, Args)]
pub struct LoadPlacementArgs {
    /// CPUs for generators without their own @CPULIST. Default: every online CPU.
    #[arg(long, value_name = "LIST", value_parser = parse_cpu_spec, help_heading = "Load")]
    pub load_cpus: Option<CpuSpec>,

    /// Run the load in a cpuset cgroup of its own (cgroup v2 when it offers the cpuset
    /// controller, else v1), limited to the load's CPUs and removed afterwards.
    #[arg(long, help_heading = "Load")]
    pub load_cgroup: bool,

    /// Directory in which the load makes its private working directory (io files, command
    /// output). Default /var/tmp. Use a disk, not a tmpfs, for io load.
    #[arg(long, value_name = "DIR", help_heading = "Load")]
    pub load_dir: Option<PathBuf>,
}

/// What `rtlab load` prints on standard output at the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LoadFormat {
    /// A table of achieved figures per generator and the busy share per CPU.
    Table,
    /// The achieved figures as JSON (schema rtlab.load/1).
    Json,
}

/// `--dma-latency`: a request in microseconds, or off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaLatency(pub Option<u32>);

pub fn parse_time(text: &str) -> Result<Nanos, String> {
    parse_nanos(text).map_err(|e| e.to_string())
}

fn parse_load_spec(text: &str) -> Result<LoadSpec, String> {
    LoadSpec::parse(text).map_err(|e| e.to_string())
}

fn parse_cpu_spec(text: &str) -> Result<CpuSpec, String> {
    CpuSpec::parse(text).map_err(|e| e.to_string())
}

fn parse_dma_latency(text: &str) -> Result<DmaLatency, String> {
    if text.trim().eq_ignore_ascii_case("off") {
        return Ok(DmaLatency(None));
    }
    let value = parse_time(text)?;
    if value.get() % 1_000 != 0 {
        return Err(format!(
            "'{text}' is not a whole number of microseconds (the kernel takes us)"
        ));
    }
    let us = u32::try_from(value.get() / 1_000)
        .ok()
        .filter(|&us| us <= i32::MAX as u32)
        .ok_or_else(|| format!("'{text}' is too large for /dev/cpu_dma_latency"))?;
    Ok(DmaLatency(Some(us)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn dma_latency_values() {
        assert_eq!(parse_dma_latency("off"), Ok(DmaLatency(None)));
        assert_eq!(parse_dma_latency("0"), Ok(DmaLatency(Some(0))));
        assert_eq!(parse_dma_latency("10us"), Ok(DmaLatency(Some(10))));
        assert!(parse_dma_latency("10").is_err());
        assert!(parse_dma_latency("1500ns").is_err());
    }
}
