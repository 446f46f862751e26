//! `rtlab run`: the one-command evaluation's options, help and examples.

use std::path::PathBuf;

use clap::Args;
use model::tune::IrqRule;
use model::{CpuSpec, Nanos};

use super::store::DbArgs;
use super::tune::ProfileArg;
use super::values::{TextOrJson, parse_cpu_spec_text, parse_rule, parse_time};

pub const RUN_LONG: &str = "\
Evaluate this machine's real-time behaviour in one command, the way engineers evaluate a \
PREEMPT_RT machine by hand: print the audit's top findings and their fixes; measure wake-up latency on every CPU in three \
phases of --duration each — idle, under `cpu:60%` load, and under full load (`cpu:100%`, \
`timer-storm` and `messaging` together); save the three runs in the run store under one \
session; print the comparison table of the phases (Min / Avg / p99.9 / Max per CPU) with the \
verdict against --budget; and write an HTML report with the latency plots. The phases are \
measured by the kernel's timerlat tracer where this kernel has one (--engine), else by \
rtlab's own threads.

With --tuned the evaluation shows what tuning buys: the three phases are measured on the RT \
CPUs (--rt-cpus) as the machine is; then the runtime part of `rtlab tune plan`'s plan for \
--rt-cpus and --housekeeping is applied, without asking (IRQ affinity, workqueues, cpusets and \
the rest; boot parameters are left out: they need a reboot); the phases are measured again \
(labelled `idle, tuned` and so on) from inside the RT cpuset, with their load started in the \
housekeeping cpuset on the housekeeping CPUs, where tuning puts everything else; and the \
tuning is reverted — also when a phase fails or Ctrl-C or SIGTERM stops the evaluation. The \
comparison has all six phases and a line per phase on what tuning bought (max and p99.9, \
before and after); the verdict is on the tuned phases. A change the kernel refuses is reported \
and the evaluation goes on with a partial tuning. The journal of originals (--journal) is \
closed when the revert is done; if rtlab is killed before that, `rtlab tune revert` puts \
everything back.

Standard output ends with the report's path and the verdict (`verdict: PASS`, `FAIL`, `CANNOT \
JUDGE` or `INTERRUPTED`, with the reason), so a script that keeps it keeps them; when it is not \
a terminal each phase also prints one line as it ends.

Run it as root (SCHED_FIFO threads, /dev/cpu_dma_latency, the kernel log, and with --tuned the \
tuning). Ctrl-C or SIGTERM stops the phase being measured and ends the evaluation; the phases \
measured so far are kept and compared.";

pub const RUN_AFTER: &str = "\
EXAMPLES:
    sudo rtlab run                               three 20 s phases, report in this directory
    sudo rtlab run --duration 1m --budget 50us      longer phases, a tighter budget
    sudo rtlab run --cpus 2-7 -o tuned.html      only the RT CPUs
    sudo rtlab run --noise 1m                    the three phases, then a minute of OS noise
    sudo rtlab run --tuned --rt-cpus 2-7         before and after tuning CPUs 2-7, reverted
    sudo rtlab run --tuned --rt-cpus 3 --profile strict --duration 1m --budget 50us

EXIT STATUS:
    0    every phase's worst wake-up latency is within --budget (with --tuned: every tuned
         phase's)
    1    a phase went over --budget, or a phase cannot be judged (it measured no samples on
         some CPU, or did not finish)
    2    bad input or setup error; with --tuned also a tuning that could not be fully
         reverted (the message says so: run `rtlab tune revert`)
    130  interrupted: the phases measured so far are kept (and the tuning reverted)";

/// Which engine `rtlab run` measures its phases with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RunEngineArg {
    /// The kernel's timerlat tracer where this kernel has it, else rtlab's threads.
    Auto,
    /// rtlab's own measuring threads (`rtlab measure --engine user`).
    User,
    /// The kernel's timerlat tracer (an error without it).
    Timerlat,
}

/// Options of `rtlab run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// What measures the phases. `auto`: the kernel's timerlat tracer where the kernel has
    /// it (thread and IRQ latency, and the auto-analysis of the worst activation), else
    /// rtlab's own threads; the evaluation says which at its start and every run records it.
    #[arg(long, value_enum, default_value = "auto")]
    pub engine: RunEngineArg,

    /// How long each phase measures, e.g. 20s, 5m, 1h (the whole evaluation takes about
    /// three times as long, six with --tuned).
    #[arg(short = 'D', long, alias = "phase", value_name = "TIME", value_parser = parse_time, default_value = "20s")]
    pub duration: Nanos,
    /// The latency budget: a phase whose worst wake-up is later fails the evaluation.
    #[arg(long, value_name = "TIME", value_parser = parse_time,
          default_value_t = model::gate::DEFAULT_BUDGET)]
    pub budget: Nanos,
    /// CPUs to measure (as for `rtlab measure --cpus`). Default: every CPU rtlab may run on.
    #[arg(short = 'a', long, value_name = "LIST", value_parser = parse_cpu_spec_text)]
    pub cpus: Option<String>,
    /// Where to write the HTML report. Default: rtlab-report-<host>-<date>.html here (with
    /// -2, -3 and on added when that exists: a report is never overwritten unasked).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// What standard output ends with: the comparison and the verdict lines (text), or only
    /// the evaluation's verdict as a JSON document (schema rtlab.evaluation/1).
    #[arg(long, value_enum, default_value = "text")]
    pub format: TextOrJson,
    /// Write no HTML report.
    #[arg(long, conflicts_with = "output")]
    pub no_report: bool,
    /// Label every phase with TEXT before its own name (`RT-#2 idle`, `RT-#2 full load`), as
    /// `rtlab measure --label` labels a run.
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// No live view or notes on standard error; only the results.
    #[arg(short, long)]
    pub quiet: bool,
    /// After the latency phases, measure OS noise for TIME on the same CPUs (`rtlab noise`,
    /// each interruption attributed): for polling workloads, whose trouble is noise, not
    /// wake-up latency. Off by default: it adds TIME to the evaluation. The noise run is
    /// stored in the session and shown in the report, and not judged against --budget.
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub noise: Option<Nanos>,

    /// How long each load runs before its phase measures (as `rtlab measure --warmup`).
    /// Default 2s.
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub warmup: Option<Nanos>,
    /// Measure the phases, tune the machine for real-time work on --rt-cpus (`rtlab tune
    /// apply`, without asking), measure them again, and revert the tuning: the report shows
    /// what tuning bought. --cpus defaults to the RT CPUs.
    #[arg(long, requires = "rt_cpus", help_heading = "Tuning")]
    pub tuned: bool,
    /// With --tuned: the CPUs to tune for real-time work (`2-7`, `3`).
    #[arg(long, value_name = "LIST", requires = "tuned", help_heading = "Tuning")]
    pub rt_cpus: Option<CpuSpec>,
    /// With --tuned: the CPUs for everything else (default: every other online CPU).
    #[arg(long, value_name = "LIST", requires = "tuned", help_heading = "Tuning")]
    pub housekeeping: Option<CpuSpec>,
    /// With --tuned: how far to tune (as `rtlab tune plan --profile`). Default balanced.
    #[arg(
        long,
        value_enum,
        value_name = "PROFILE",
        requires = "tuned",
        help_heading = "Tuning"
    )]
    pub profile: Option<ProfileArg>,
    /// With --tuned: an IRQ rule, as for `rtlab tune plan --irq-rule` (repeatable):
    /// `irq/*-eth0=fifo:80@0-1`.
    #[arg(
        long = "irq-rule",
        value_name = "RULE",
        value_parser = parse_rule,
        requires = "tuned",
        help_heading = "Tuning"
    )]
    pub irq_rules: Vec<IrqRule>,
    /// With --tuned: the journal of originals the revert reads (default
    /// /var/lib/rtlab/tune-journal.jsonl).
    #[arg(long, value_name = "PATH", requires = "tuned", help_heading = "Tuning")]
    pub journal: Option<PathBuf>,
    /// Drive the phases with a scripted clock instead of real sleeps (tests only).
    #[arg(long, value_name = "SCRIPT", hide = true)]
    pub fake_clock: Option<String>,
    /// The store.
    #[command(flatten)]
    pub db: DbArgs,
    /// Upload every phase's run to an `rtlab serve` at the end.
    #[command(flatten)]
    pub push: super::push::PushToArgs,
}
