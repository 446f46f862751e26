//! `rtlab noise`: its options, help and examples.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use model::{CpuSpec, Nanos};

use super::measure::PolicyArg;
use super::values::{parse_cpu_spec, parse_time};

pub const NOISE_LONG: &str = "\
Measure operating-system noise: how much of each CPU's time is taken from a thread that never \
sleeps. One thread per measured CPU reads the CPU's own counter back to back (an invariant TSC \
on x86-64, cntvct_el0 on arm64, else CLOCK_MONOTONIC_RAW through the vDSO); every gap between \
two reads is a sample (oslat's quantity), and a gap at or above --threshold is an \
interruption. Per CPU: the noise in total, the share of the CPU left (% available), the \
longest single interruption, the most noise in one --period, the count, a histogram with 1 ns \
resolution below 2 us that never drops a gap, the worst interruptions with their time, and the \
longest gap per second.

Each interruption is attributed, on any kernel, from a private tracefs instance recording the \
ordinary irq, softirq, nmi, sched_switch and x86 irq_vectors events: to an IRQ handler, a \
softirq, an NMI, another thread (named, with its priority) — rtla osnoise's HW/NMI/IRQ/Softirq/\
Thread columns — or to nothing the kernel saw: hardware, firmware (SMI) or, on a virtual \
machine, the hypervisor, whose steal time from /proc/stat is given beside it. The kernel's \
osnoise tracer is not needed.

The detector runs at SCHED_OTHER by default, as oslat does: it never starves the CPU's kernel \
threads, and a real-time thread that preempts it is measured as thread noise. With --policy \
fifo, give --runtime below --period so kernel threads get their time.

Where the kernel has the osnoise tracer, --engine auto (the default) lets it measure instead, with rtla osnoise's semantics: its kernel threads poll for --runtime of every --period, its counters give the HW/NMI/IRQ/softirq/thread columns and its noise events the culprits; the tracer's options are restored afterwards. It gives no distribution of gaps. --engine user always uses rtlab's detector; every result names the engine that measured.

The result (schema rtlab.noise/1) is saved in the run store as a noise run: `rtlab runs`, \
`show`, `compare` (noise against noise only), `report` and `export` work on it. SIGINT or \
SIGTERM ends the run early with status \"interrupted\"; the trace instance is removed.";

pub const NOISE_AFTER: &str = "\
EXAMPLES:
    rtlab noise --cpus 1 --duration 5s           one CPU, each interruption attributed
    rtlab noise --cpus 2-7 --duration 10m -o noise.json
    rtlab noise --cpus 1 --duration 3s --policy fifo --priority 1 --runtime 900ms --period 1s
    rtlab noise --cpus 1 --duration 60s --format oslat > oslat.txt   oslat's layout
    rtlab noise --cpus 1 --duration 1h --budget 50us --quiet   gate on the longest interruption

PEER EQUIVALENTS:
    oslat --cpu-list 1 -D 60                     rtlab noise --cpus 1 --duration 60s --format oslat
    rtla osnoise top -c 1 -d 60s                 rtlab noise --cpus 1 --duration 60s
    rtla osnoise top -c 1 -P f:1 -r 900000       rtlab noise --cpus 1 --policy fifo --priority 1 --runtime 900ms

EXIT STATUS:
    0    the run finished and, with --budget, no CPU's longest interruption exceeded it
    1    --budget exceeded, or a CPU was not measured
    2    bad input or setup error (privileges, --output, --db)
    130  interrupted by SIGINT/SIGTERM: the result so far is printed, written and stored";

/// What `rtlab noise` prints on standard output at the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum NoiseFormat {
    /// The per-CPU table with rtla osnoise's columns and the culprits.
    #[value(alias = "table")]
    Text,
    /// The full result document (schema rtlab.noise/1).
    Json,
    /// oslat's text report (rt-tests 2.x layout), for scripts that read it.
    Oslat,
}

/// Which engine measures noise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum NoiseEngineArg {
    /// The kernel's osnoise tracer where it exists, else rtlab's detector.
    Auto,
    /// rtlab's user-space detector (attributed from a trace of ordinary events).
    User,
    /// The kernel's osnoise tracer (an error without it).
    Kernel,
}

/// `--policy` of a polling detector: measure's policies less `deadline` (a detector that polls
/// for its whole runtime is what a reservation is not for), with their help and aliases.
fn detector_policy() -> impl clap::builder::TypedValueParser<Value = PolicyArg> {
    use clap::builder::{PossibleValuesParser, TypedValueParser};
    let values = PolicyArg::value_variants()
        .iter()
        .filter(|p| **p != PolicyArg::Deadline)
        .filter_map(ValueEnum::to_possible_value);
    PossibleValuesParser::new(values).try_map(|name| {
        PolicyArg::from_str(&name, true)
            .map_err(|e| clap::Error::raw(clap::error::ErrorKind::InvalidValue, e))
    })
}

/// Options of `rtlab noise`.
#[derive(Debug, Args)]
pub struct NoiseArgs {
    /// CPUs to measure: a list like 2-7, `all`, or `!0`. Default: the RT CPUs of a machine
    /// `rtlab tune apply` set apart, else the CPUs the boot line isolates (isolcpus=,
    /// nohz_full=), else every CPU this process may run on.
    #[arg(short = 'a', long, value_name = "LIST", value_parser = parse_cpu_spec, help_heading = "What to measure")]
    pub cpus: Option<CpuSpec>,

    /// How long to measure, e.g. 10s, 10m, 3h.
    #[arg(short = 'D', long, value_name = "TIME", value_parser = parse_time, default_value = "10s", help_heading = "What to measure")]
    pub duration: Nanos,

    /// A gap between two counter reads at or above TIME is an interruption (100ns to 1s).
    #[arg(short = 'T', long, value_name = "TIME", value_parser = parse_time, default_value = "1us", help_heading = "What to measure")]
    pub threshold: Nanos,

    /// Poll for TIME of every --period and sleep the rest (the duty cycle).
    #[arg(short = 'r', long, value_name = "TIME", value_parser = parse_time, help_heading = "What to measure")]
    pub runtime: Option<Nanos>,

    /// The duty cycle's period, and the period of the `Max Noise` column.
    #[arg(long, value_name = "TIME", value_parser = parse_time, default_value = "1s", help_heading = "What to measure")]
    pub period: Nanos,

    /// Which engine measures. `auto` takes the osnoise tracer where the kernel has it (and
    /// --policy is not given), else rtlab's detector; every result says which measured.
    #[arg(
        long,
        value_enum,
        default_value = "auto",
        help_heading = "What to measure"
    )]
    pub engine: NoiseEngineArg,

    /// Scheduling policy of the detector threads. Default: other, or fifo when --priority is
    /// given.
    #[arg(long, value_parser = detector_policy(), help_heading = "Scheduling")]
    pub policy: Option<PolicyArg>,

    /// Real-time priority with --policy fifo or rr: 1-99, and 99 only with --allow-prio-99.
    #[arg(short, long, value_name = "PRIO", value_parser = clap::value_parser!(u8).range(1..=99), help_heading = "Scheduling")]
    pub priority: Option<u8>,

    /// Allow --priority 99, where the kernel's migration and watchdog threads run.
    #[arg(long, help_heading = "Scheduling")]
    pub allow_prio_99: bool,

    /// Pin rtlab's main thread to these CPUs. Default: the CPUs not measured (where there are
    /// any), as oslat keeps its main thread off the measured CPUs.
    #[arg(long, value_name = "LIST", value_parser = parse_cpu_spec, help_heading = "Scheduling")]
    pub main_cpu: Option<CpuSpec>,

    /// Do not lock memory or pre-fault stacks.
    #[arg(long, help_heading = "System state")]
    pub no_mlock: bool,

    /// Do not record a kernel trace: interruptions are measured but not attributed.
    #[arg(long, help_heading = "Trace")]
    pub no_attribute: bool,

    /// The noise budget: run to the end, then exit 1 if any CPU's longest interruption
    /// exceeded TIME.
    #[arg(long, value_name = "TIME", value_parser = parse_time, help_heading = "Verdicts")]
    pub budget: Option<Nanos>,

    /// Keep the N longest interruptions per CPU, with their time.
    #[arg(long, value_name = "N", default_value_t = 64, help_heading = "Output")]
    pub spikes: u32,

    /// Write the result document (JSON, schema rtlab.noise/1) to FILE, rewritten atomically
    /// every --checkpoint during the run.
    #[arg(short, long, value_name = "FILE", help_heading = "Output")]
    pub output: Option<PathBuf>,

    /// How often the --output FILE is rewritten during the run.
    #[arg(long, value_name = "TIME", value_parser = parse_time, default_value = "10s", help_heading = "Output")]
    pub checkpoint: Nanos,

    /// What to print on standard output at the end.
    #[arg(long, value_enum, default_value = "text", help_heading = "Output")]
    pub format: NoiseFormat,

    /// The old spelling of --format json (renamed).
    #[arg(long, hide = true, conflicts_with = "format", help_heading = "Output")]
    pub json: bool,

    /// No progress or warnings on standard error; only the final output.
    #[arg(short, long, help_heading = "Output")]
    pub quiet: bool,

    /// The run store the result is saved in: a SQLite file or a postgres:// address
    /// (default: $RTLAB_DB, else $XDG_DATA_HOME/rtlab/rtlab.db, else
    /// ~/.local/share/rtlab/rtlab.db).
    #[arg(long, value_name = "PATH|URL", help_heading = "Store")]
    pub db: Option<PathBuf>,

    /// Save the result with this label.
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

    /// Save the result as part of this session (set by `rtlab run`).
    #[arg(long, value_name = "ID", hide = true, conflicts_with = "no_store")]
    pub session: Option<String>,

    /// Upload the result to an `rtlab serve` after saving it.
    #[command(flatten)]
    pub push: super::push::PushToArgs,
}
