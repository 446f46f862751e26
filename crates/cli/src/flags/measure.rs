//! `rtlab measure`: its options, help and examples.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use model::load::LoadSpec;
use model::measure::Policy;
use model::{CpuSpec, Nanos};

use super::cyclictest::CyclictestHabits;
use super::load::LoadPlacementArgs;
use super::values::{
    DmaLatency, parse_cpu_spec, parse_dma_latency, parse_load_spec, parse_time, parse_time_or_s,
    parse_time_or_us,
};

pub const MEASURE_LONG: &str = "\
Measure how late a periodic real-time thread wakes up. One thread per measured CPU sleeps to \
an absolute deadline on CLOCK_MONOTONIC, every --interval, and records `wake-up time - \
deadline` in nanoseconds: minimum, mean, standard deviation, percentiles up to p99.999 and the \
exact maximum per CPU, a histogram that never drops a sample, the worst samples with their \
cycle numbers, and the per-second maximum over time.

The run holds /dev/cpu_dma_latency at 0, locks memory and pre-faults the threads' stacks, \
shows a live per-CPU view on a terminal, and ends with a per-CPU table. -o FILE keeps the \
whole result (schema rtlab.measure/1), rewritten atomically every --checkpoint so a crash or \
power loss loses at most one interval. SIGINT or SIGTERM ends the run early with status \
\"interrupted\"; nothing rtlab changed is left behind.

With --workload TIME each thread, once woken, computes until it has used TIME of its own CPU \
time (what the kernel accounts to it, so TIME of work whatever else runs) before sleeping to its \
next absolute period, as a control loop does: the samples are then \
response times (release to the end of the job), and every job that ends after --workload-deadline is \
counted and split into a late start (the wake-up used the slack), a long execution (the job \
was preempted or slowed while working) or both. The worst wake-up latency per CPU is kept \
apart, for `rtlab sched check --jitter-from`.

cyclictest's options read the same here where rtlab has them: -a, -p, -l, -q, --policy, \
--mainaffinity, --latency, and -i, -b and -h in microseconds and -D in seconds when given as a \
bare number (rtlab's own spelling has the unit: -i 1ms, -D 60s). -S, -m, -n, -t and \
--tracemark ask for what rtlab always does (a thread per CPU, locked memory, clock_nanosleep, \
a trace marker at a --break), so they change nothing. -h is cyclictest's histogram, not help \
(--help is). Any other cyclictest option is refused with what to type instead.

Needs root, or CAP_SYS_NICE (and CAP_IPC_LOCK for memory locking), for real-time policies.";

pub const MEASURE_AFTER: &str = "\
EXAMPLES:
    rtlab measure --load cpu:60%,timer-storm --duration 10m   measure under load
    rtlab measure                              every CPU, 1 ms, 60 s, SCHED_FIFO 95
    rtlab measure --cpus 2-7 --duration 10m -o run.json
    rtlab measure --cpus '!0' --break 150us    stop and freeze the kernel trace at a spike
    rtlab measure --duration 1h --budget 100us --quiet   gate a CI pipeline
    rtlab measure --format cyclictest --histogram 400us > hist.txt   OSADL-style plot input
    rtlab measure --cpus 1 --duration 5s --workload 300us --workload-deadline 500us   deadline misses
    rtlab measure --engine timerlat --cpus 1-3 --break 100us   the kernel's view, its stack at a spike

CYCLICTEST EQUIVALENTS:
    cyclictest -S -m -p 95 -i 1000 -D 60     rtlab measure -p 95 -i 1ms -D 60s
    cyclictest -b 150 --tracemark            rtlab measure --break 150us
    cyclictest -h 400 -q                     rtlab measure -h 400us -q
    cyclictest -t 4 -a 0-3                   rtlab measure -a 0-3
    cyclictest --json=run.json               rtlab measure -o run.json

EXIT STATUS:
    0    every CPU's maximum within --budget (or no budget given)
    1    --budget exceeded, --break fired, a --workload job missed its deadline, or a CPU
         measured no samples
    2    bad input or setup error, found before measuring (privileges, --output, --db,
         --trace-dir); or the result file could not be written at the end (the run is still
         stored and printed)
    130  interrupted by SIGINT/SIGTERM/SIGHUP: the run stops in order whatever more signals
         come, and its result (status \"interrupted\") is printed, written and stored; with
         --every, the status of a stop by signal when every run that ended passed (with
         --every, 1 when any run that ended failed or could not be judged)";

/// What `rtlab measure` prints to standard output at the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MeasureFormat {
    /// A per-CPU table with percentiles, in microseconds.
    #[value(alias = "table")]
    Text,
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
    #[value(alias = "normal")]
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

/// Which engine measures latency.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MeasureEngineArg {
    /// rtlab's own measuring threads in user space (cyclictest's method).
    User,
    /// The kernel's timerlat tracer: thread and IRQ latency, with the auto-analysis.
    Timerlat,
}

impl From<MeasureEngineArg> for model::measure::Engine {
    fn from(e: MeasureEngineArg) -> model::measure::Engine {
        match e {
            MeasureEngineArg::User => model::measure::Engine::User,
            MeasureEngineArg::Timerlat => model::measure::Engine::Timerlat,
        }
    }
}

/// Options of `rtlab measure`.
#[derive(Debug, Args)]
pub struct MeasureArgs {
    /// CPUs to measure: a list like 0-3,6, `all`, or `!0` (all but 0). Default: the RT CPUs
    /// of a machine `rtlab tune apply` set apart, else the CPUs the boot line isolates
    /// (isolcpus=, nohz_full=), else every CPU this process may run on. Offline or unknown
    /// CPUs are an error.
    #[arg(short = 'a', long, alias = "affinity", value_name = "LIST", value_parser = parse_cpu_spec, help_heading = "What to measure")]
    pub cpus: Option<CpuSpec>,

    /// Period of each measuring thread. At least 20us. A bare number is microseconds, as
    /// cyclictest's -i reads it.
    #[arg(short, long, value_name = "TIME", value_parser = parse_time_or_us, default_value = "1ms", help_heading = "What to measure")]
    pub interval: Nanos,

    /// How long to measure, e.g. 60s, 10m, 3h, 2d. Default 60s. A bare number is seconds,
    /// as cyclictest's -D reads it.
    #[arg(short = 'D', long, value_name = "TIME", value_parser = parse_time_or_s, conflicts_with = "cycles", help_heading = "What to measure")]
    pub duration: Option<Nanos>,

    /// Measure this many wake-ups per CPU instead of a duration, as cyclictest's -l counts
    /// its loops: a period a late wake-up missed is an overrun and does not count, so each CPU
    /// takes exactly N samples.
    #[arg(
        short = 'l',
        long,
        alias = "loops",
        value_name = "N",
        help_heading = "What to measure"
    )]
    pub cycles: Option<u64>,

    /// What measures. `user`: rtlab's threads, one per CPU. `timerlat`: the kernel's timerlat
    /// tracer (CONFIG_TIMERLAT_TRACER, in every PREEMPT_RT kernel Debian ships): how late the
    /// timer's IRQ ran and how late its thread ran after it, per CPU, with the auto-analysis
    /// of each CPU's worst activation; --break becomes the tracer's own stop, with the IRQ's
    /// stack. Its threads are the kernel's, so --policy, --priority, --aligned, --workload
    /// and --trace are the user engine's only.
    #[arg(
        long,
        value_enum,
        default_value = "user",
        help_heading = "What to measure"
    )]
    pub engine: MeasureEngineArg,

    /// With --engine timerlat: user-space threads (one per CPU, SCHED_FIFO 95, reading the
    /// CPU's timerlat_fd) measure instead of the kernel's, adding the return to user space,
    /// the figure closest to an application thread's (Linux 6.6 and later).
    #[arg(long, help_heading = "What to measure")]
    pub user_threads: bool,

    /// Wake all threads at the same instant. By default their deadlines are spread over the
    /// period so they do not all wake together.
    #[arg(long, help_heading = "What to measure")]
    pub aligned: bool,

    /// Real-time priority of the measuring threads (fifo and rr): 1-99, and 99 only with
    /// --allow-prio-99. Default 95.
    #[arg(short, long, value_name = "PRIO", value_parser = clap::value_parser!(u8).range(1..=99), help_heading = "Scheduling")]
    pub priority: Option<u8>,

    /// Allow --priority 99, where the kernel's migration and watchdog threads run.
    #[arg(long, help_heading = "Scheduling")]
    pub allow_prio_99: bool,

    /// Scheduling policy of the measuring threads.
    #[arg(
        short = 'y',
        long,
        value_enum,
        default_value = "fifo",
        help_heading = "Scheduling"
    )]
    pub policy: PolicyArg,

    /// SCHED_DEADLINE runtime reserved per period (with --policy deadline).
    #[arg(long, value_name = "TIME", value_parser = parse_time, help_heading = "Scheduling")]
    pub dl_runtime: Option<Nanos>,

    /// SCHED_DEADLINE period (with --policy deadline). Default: the interval.
    #[arg(long, value_name = "TIME", value_parser = parse_time, help_heading = "Scheduling")]
    pub dl_period: Option<Nanos>,

    /// Pin rtlab's other threads to these CPUs (cyclictest's --mainaffinity).
    #[arg(long, alias = "mainaffinity", value_name = "LIST", value_parser = parse_cpu_spec, help_heading = "Scheduling")]
    pub main_cpu: Option<CpuSpec>,

    /// Do not lock memory or pre-fault stacks (page faults may then land in measurements).
    #[arg(long, help_heading = "System state")]
    pub no_mlock: bool,

    /// Hold /dev/cpu_dma_latency at this value during the run (keeps CPUs out of deep idle
    /// states), or `off`. Recorded in the result.
    #[arg(short = 'e', long, alias = "latency", value_name = "TIME|off", value_parser = parse_dma_latency, default_value = "0", help_heading = "System state")]
    pub dma_latency: DmaLatency,

    /// The capture trigger: stop at the first wake-up later than TIME, write a marker naming
    /// the CPU, latency and cycle to tracefs trace_marker, and switch tracing off so the kernel
    /// trace around the spike is kept (cyclictest -b --tracemark; a bare number is
    /// microseconds, as there).
    #[arg(short = 'b', long = "break", value_name = "TIME", value_parser = parse_time_or_us, help_heading = "Verdicts")]
    pub break_threshold: Option<Nanos>,

    /// Record a kernel trace while measuring (a private tracefs instance with the scheduler,
    /// IRQ, softirq, timer, IPI and workqueue events; removed afterwards) and explain the
    /// worst spikes from it: which IRQ, task or section was in the way. With --break the trace
    /// is frozen at the breach; without, each new maximum sets the buffer aside (the kernel's
    /// snapshot buffer, CONFIG_TRACER_SNAPSHOT), so the run's worst spike is explained however
    /// long the run. The explanations and the trace around each spike are stored with the run
    /// (`rtlab explain RUN`).
    #[arg(long, help_heading = "Trace")]
    pub trace: bool,

    /// With --trace: ring buffer per CPU, such as 8M (a bare number is KiB; twice that once the buffer is set aside at
    /// a new maximum). Larger keeps older spikes explainable.
    #[arg(long, value_name = "SIZE", default_value_t = 4096, value_parser = super::values::parse_trace_buffer, requires = "trace", help_heading = "Trace")]
    pub trace_buffer: u64,

    /// With --trace: also keep the whole trace in DIR, as a trace.dat (`rtlab explain`,
    /// `trace-cmd report` and KernelShark read it), or as the kernel's text where the raw
    /// buffers cannot be read.
    #[arg(long, value_name = "DIR", requires = "trace", help_heading = "Trace")]
    pub trace_dir: Option<PathBuf>,

    /// After each wake-up, work for TIME of the thread's own CPU time (held to its CPU clock,
    /// so a busy machine stretches a job but never shortens it) before sleeping to the next period: the samples become response times (wake-up
    /// latency + execution), and each job that ends after --workload-deadline is counted, split into
    /// late starts and long executions.
    #[arg(long, value_name = "TIME", value_parser = parse_time, help_heading = "Workload")]
    pub workload: Option<Nanos>,

    /// With --workload: the deadline after each release (default: the interval). A miss
    /// makes the exit status 1.
    #[arg(long = "workload-deadline", alias = "deadline", value_name = "TIME", value_parser = parse_time, requires = "workload", help_heading = "Workload")]
    pub deadline: Option<Nanos>,

    /// Measure again and again, one run every TIME (start to start; back to back when a run
    /// takes longer), until SIGTERM or Ctrl-C: each run is stored, pushed and judged on its
    /// own. For a service or a Kubernetes DaemonSet; a setup error ends it (exit 2).
    #[arg(long, value_name = "TIME", value_parser = parse_time, help_heading = "What to measure")]
    pub every: Option<Nanos>,

    /// The latency budget: run to the end, then exit 1 if any CPU's maximum exceeded TIME.
    /// Recorded in the result as `params.budget_ns`.
    #[arg(long, alias = "fail-above", value_name = "TIME", value_parser = parse_time, help_heading = "Verdicts")]
    pub budget: Option<Nanos>,

    /// Keep the N worst samples per CPU, with their time and cycle number.
    #[arg(long, value_name = "N", default_value_t = 32, help_heading = "Output")]
    pub spikes: u32,

    /// Write the result document (JSON, schema rtlab.measure/1) to FILE, rewritten atomically
    /// every --checkpoint during the run.
    #[arg(short, long, value_name = "FILE", help_heading = "Output")]
    pub output: Option<PathBuf>,

    /// How often the --output FILE is rewritten during the run.
    #[arg(long, value_name = "TIME", value_parser = parse_time, default_value = "10s", help_heading = "Output")]
    pub checkpoint: Nanos,

    /// What to print on standard output at the end. Default: text, or cyclictest with
    /// --histogram.
    #[arg(long, value_enum, help_heading = "Output")]
    pub format: Option<MeasureFormat>,

    /// Print cyclictest's -h histogram layout (--format cyclictest) with one row per
    /// microsecond up to TIME (samples above it count as overflows); a bare number is
    /// microseconds, as cyclictest reads it.
    #[arg(short = 'h', long, value_name = "TIME", value_parser = parse_time_or_us, help_heading = "Output")]
    pub histogram: Option<Nanos>,

    /// No live view, progress or warnings on standard error; only the final output.
    #[arg(short, long, help_heading = "Output")]
    pub quiet: bool,

    /// Print help (`-h` is cyclictest's histogram here, as in cyclictest).
    #[arg(long, action = clap::ArgAction::HelpLong, help_heading = "Output")]
    pub help: Option<bool>,

    /// The run store the result is saved in: a SQLite file or a postgres:// address
    /// (default: $RTLAB_DB, else $XDG_DATA_HOME/rtlab/rtlab.db, else
    /// ~/.local/share/rtlab/rtlab.db).
    #[arg(long, value_name = "PATH|URL", help_heading = "Store")]
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

    /// Upload the result to an `rtlab serve` after saving it.
    #[command(flatten)]
    pub push: super::push::PushToArgs,

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

    /// Warnings (by code) the caller has shown already and that are not repeated on standard
    /// error (set by `rtlab run` for its later phases; the result keeps them all).
    #[arg(long, value_name = "CODES", value_delimiter = ',', hide = true)]
    pub shown_warnings: Vec<String>,

    /// Replace the clock with scripted latencies (testing only; nothing is measured).
    #[arg(long, value_name = "SCRIPT", hide = true)]
    pub fake_clock: Option<String>,

    /// cyclictest's options, accepted where rtlab does the same and refused otherwise.
    #[command(flatten)]
    pub cyclictest: CyclictestHabits,
}

impl MeasureArgs {
    /// What to print at the end: --format, else cyclictest's layout with --histogram (as
    /// cyclictest -h prints it), else the table.
    pub fn output_format(&self) -> MeasureFormat {
        match (self.format, self.histogram) {
            (Some(f), _) => f,
            (None, Some(_)) => MeasureFormat::Cyclictest,
            (None, None) => MeasureFormat::Text,
        }
    }
}
