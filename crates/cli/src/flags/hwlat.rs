//! `rtlab hwlat`: its options, help and examples.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use model::{CpuSpec, Nanos};

use super::values::{parse_cpu_spec, parse_time};

/// The worst samples a hardware-latency run's table lists unless `--spikes` says otherwise.
pub const HWLAT_SAMPLES_SHOWN: usize = 10;

pub const HWLAT_LONG: &str = "\
Measure the latency the hardware or firmware adds — system management interrupts (SMIs), bus \
and memory stalls, a hypervisor taking the CPU — as hwlatdetect does. Every --window, for \
--width, a sampler reads the clock back to back; the longest gap of each window at or above \
--threshold is a sample, with its inner latency (between two reads of one pair) and outer \
latency (between two pairs), its time and CPU.

With the kernel's hwlat tracer (CONFIG_HWLAT_TRACER) the sampler is the kernel's, with \
interrupts off (--engine kernel, the default where it exists): the tracer's threshold, window, \
width and CPUs are set for the run and every setting is restored afterwards. It takes the \
top-level trace buffer, so it refuses to run while another tracer is set. Like hwlatdetect, \
do not run it beside real work: a sampling CPU is unavailable for --width of every --window.

Without the tracer (--engine user, the default where it is missing) rtlab's noise detector \
polls at SCHED_FIFO 99 for --width of every --window and keeps only gaps no kernel event \
explains (no IRQ, softirq, NMI or other thread overlaps them, from a private trace). A \
user-space thread cannot turn interrupts off, so these figures are a screen, not \
hwlatdetect's; the result says so.

SMI counts are read from MSR 0x34 through /dev/cpu/N/msr on Intel CPUs before and after the \
run (load the msr driver); elsewhere the result says they are not available.

--from FILE reads a hwlatdetect report or the hwlat tracer's trace from another machine \
instead of measuring, into the same result (schema rtlab.hwlat/1).";

pub const HWLAT_AFTER: &str = "\
EXAMPLES:
    rtlab hwlat --cpus 2-7 --duration 10m --threshold 5us
    rtlab hwlat --duration 1h --budget 20us           exit 1 at a sample of 20 us or more
    rtlab hwlat --engine user --cpus 1 --duration 5s --format json   the screen, where no tracer is
    rtlab hwlat --from hwlatdetect-report.txt         a report from another machine

HWLATDETECT EQUIVALENTS:
    hwlatdetect --duration=600s --cpu-list=2-7 --threshold=5
                    rtlab hwlat --duration 600s --cpus 2-7 --threshold 5us
    hwlatdetect --window=1000000 --width=500000 --hardlimit=20
                    rtlab hwlat --window 1s --width 500ms --budget 20us

EXIT STATUS:
    0    no sample at or above --budget (or none given)
    1    a sample reached --budget
    2    bad input or setup error (no tracer for --engine kernel, another tracer in use,
         privileges, an unreadable --from file)
    130  interrupted by SIGINT/SIGTERM: the samples so far are printed and written";

/// What `rtlab hwlat` prints on standard output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum HwlatFormat {
    /// A per-CPU summary and the worst samples.
    #[value(alias = "table")]
    Text,
    /// The result document (schema rtlab.hwlat/1).
    Json,
    /// hwlatdetect's report layout.
    Hwlatdetect,
}

/// Which engine samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum HwlatEngineArg {
    /// The kernel's hwlat tracer where it exists, else the user-space screen.
    Auto,
    /// The kernel's hwlat tracer (an error without it).
    Kernel,
    /// rtlab's user-space screen.
    User,
}

/// Options of `rtlab hwlat`.
#[derive(Debug, Args)]
pub struct HwlatArgs {
    /// CPUs to sample: a list like 2-7, `all`, or `!0`. Default: every CPU.
    #[arg(short = 'a', long, value_name = "LIST", value_parser = parse_cpu_spec, help_heading = "What to measure")]
    pub cpus: Option<CpuSpec>,

    /// How long to sample.
    #[arg(short = 'D', long, value_name = "TIME", value_parser = parse_time, default_value = "60s", help_heading = "What to measure")]
    pub duration: Nanos,

    /// A gap at or above TIME is a sample (1us to 1s).
    #[arg(short = 'T', long, value_name = "TIME", value_parser = parse_time, default_value = "10us", help_heading = "What to measure")]
    pub threshold: Nanos,

    /// The sampling window.
    #[arg(long, value_name = "TIME", value_parser = parse_time, default_value = "1s", help_heading = "What to measure")]
    pub window: Nanos,

    /// Time sampled in each window.
    #[arg(long, value_name = "TIME", value_parser = parse_time, default_value = "500ms", help_heading = "What to measure")]
    pub width: Nanos,

    /// Which sampler.
    #[arg(
        long,
        value_enum,
        default_value = "auto",
        help_heading = "What to measure"
    )]
    pub engine: HwlatEngineArg,

    /// Read a hwlatdetect report or a hwlat tracer trace instead of measuring.
    #[arg(long, value_name = "FILE", help_heading = "What to measure")]
    pub from: Option<PathBuf>,

    /// The latency budget: exit 1 when a sample reaches TIME (hwlatdetect's --hardlimit).
    #[arg(long = "budget", alias = "hardlimit", value_name = "TIME", value_parser = parse_time, help_heading = "Verdicts")]
    pub hardlimit: Option<Nanos>,

    /// Write the result document (JSON, schema rtlab.hwlat/1) to FILE.
    #[arg(short, long, value_name = "FILE", help_heading = "Output")]
    pub output: Option<PathBuf>,

    /// What to print on standard output.
    #[arg(long, value_enum, default_value = "text", help_heading = "Output")]
    pub format: HwlatFormat,

    /// The old spelling of --format json (renamed).
    #[arg(long, hide = true, conflicts_with = "format", help_heading = "Output")]
    pub json: bool,

    /// How many of the worst samples (spikes) the table lists.
    #[arg(long = "spikes", alias = "samples", value_name = "N", default_value_t = HWLAT_SAMPLES_SHOWN, help_heading = "Output")]
    pub samples: usize,

    /// No notes or warnings on standard error; only the final output.
    #[arg(short, long, help_heading = "Output")]
    pub quiet: bool,
}
