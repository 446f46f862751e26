//! `rtlab load`: its options, and the load placement options `rtlab measure --load` shares.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use model::load::LoadSpec;
use model::{CpuSpec, Nanos};

use super::values::{parse_cpu_spec, parse_load_spec, parse_time};

pub const LOAD_LONG: &str = "\
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
--load-cpus places the others; by default they may use every online CPU that rtlab's cpuset \
allows (in a container, its CPUs). Quote a command that contains a comma or @.

Nothing outlives the load: threads end with rtlab, child processes get SIGKILL when rtlab \
dies, and a small guardian process kills command process groups and removes the temporary \
directory and cgroup even if rtlab itself is killed with SIGKILL. Without --duration the load \
runs until Ctrl-C.";

pub const LOAD_AFTER: &str = "\
EXAMPLES:
    rtlab load cpu:60% --duration 1m                 60% busy on every CPU for a minute
    rtlab load 'cpu:100%@0-1,timer-storm:500@2-3'    placed per generator
    rtlab load messaging:10x20:process,io:256M --load-cpus 0-3 --load-cgroup
    rtlab load 'cmd:\"stress-ng --vm 2 --vm-bytes 1G\"' --duration 10m -o load.json
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
    /// The load: generators like cpu:60%,timer-storm:200,io:64M (SPEC is described above the
    /// options).
    #[arg(value_name = "SPEC", value_parser = parse_load_spec)]
    pub spec: LoadSpec,

    /// How long to run, e.g. 30s, 10m, 2h. Default: until Ctrl-C.
    #[arg(short = 'D', long, value_name = "TIME", value_parser = parse_time)]
    pub duration: Option<Nanos>,

    /// Let the load run this long before its figures start counting.
    #[arg(long, value_name = "TIME", value_parser = parse_time, default_value = "0")]
    pub warmup: Nanos,

    /// Where and how the load runs.
    #[command(flatten)]
    pub placement: LoadPlacementArgs,

    /// Write the achieved figures (JSON, schema rtlab.load/1) to FILE.
    #[arg(
        short,
        long,
        alias = "json",
        value_name = "FILE",
        help_heading = "Output"
    )]
    pub output: Option<PathBuf>,

    /// What to print on standard output at the end.
    #[arg(long, value_enum, default_value = "text", help_heading = "Output")]
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
    /// CPUs for generators without their own @CPULIST. Default: every online CPU this cpuset allows.
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
    #[value(alias = "table")]
    Text,
    /// The achieved figures as JSON (schema rtlab.load/1).
    Json,
}
