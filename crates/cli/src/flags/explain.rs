//! `rtlab explain` and its analyses (`irqs`, `sched`, `wakeups`).

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use model::Nanos;

use super::store::DbArgs;
use super::values::parse_time;

/// The long help of `rtlab explain`.
pub const EXPLAIN_LONG: &str = "\
Explain why threads woke late: for each spike, the timeline on its CPU from the timer's expiry \
to the thread running, and the delay split into parts — the timer interrupt's own delay (and \
what kept it off: a handler, an idle CPU, or a stretch with no event at all — interrupts \
off, or a stall the trace cannot tell apart from it without the preemptirq tracepoints), \
interrupt handlers and softirqs with what the trace shows inside them (the hrtimers a timer \
interrupt expired, the tasks they woke, the softirqs raised, and the pattern that fits, such \
as concurrent hrtimer expiries of ordinary tasks, with its fix), the task that held the CPU \
(higher priority, same priority, or a lower-priority one that could not be preempted, or an \
IRQ thread), the scheduler's switch — with a story, a table of parts with their share, and \
what limits the explanation. A trace without a real-time thread's wake-up has nothing to \
explain, and rtlab says so rather than tell a story.

SOURCE is a run measured with --trace (its id, a unique prefix, `last`, or its result file), \
or a trace file: a trace-cmd recording (trace.dat, read directly: no `trace-cmd report` \
needed), the kernel's trace or trace_pipe text (any trace clock), `trace-cmd report` output, a latency tracer's report (irqsoff, preemptoff, preemptirqsoff, wakeup, wakeup_rt, \
wakeup_dl), the timerlat tracer's trace, or hwlat output. From a trace file, the worst timer \
wake-ups of real-time tasks are explained (cyclictest's, rtlab's, your application's), breach \
markers first; it needs the sched_switch, sched_waking/sched_wakeup and timer:hrtimer_* events \
(trace-cmd record -e sched -e irq -e timer).

The analyses read the same events over the whole trace: `irqs` (each handler's durations, the \
slow top halves), `sched` (each task's wake-up to run delay and migrations) and `wakeups` \
(each CPU's wake-up latency of real-time tasks, from tracepoints).";

/// Examples and exit status of `rtlab explain`.
pub const EXPLAIN_AFTER: &str = "\
EXAMPLES:
    rtlab measure --trace --break 200us        measure; freeze and explain the first spike
    rtlab explain last                          the explanations stored with the newest run
    rtlab explain trace.txt --spikes 5           the five worst wake-ups in a saved trace
    trace-cmd record -e sched -e irq -e timer; rtlab explain trace.dat
    rtlab explain irqs trace.txt --budget 20us       handlers slower than 20 us
    rtlab explain sched trace.txt               each task's maximum wake-up-to-run delay
    rtlab explain /sys/kernel/tracing/trace     an irqsoff/wakeup_rt report, or the live buffer

EXIT STATUS:
    0    explained (or analysed)
    2    nothing to explain, and the message names what is missing: the run has no trace, the
         file holds no usable events, or no real-time thread's timer wake-up (a trace of normal
         tasks only: their delays are the fair scheduler's sharing, not a missed deadline)";

/// Options of `rtlab explain`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct ExplainArgs {
    /// An analysis over a whole trace instead of spike explanations.
    #[command(subcommand)]
    pub analysis: Option<Analysis>,
    /// A run measured with --trace or with --engine timerlat (id, prefix, `last`, or result
    /// file), or a trace file.
    #[arg(value_name = "SOURCE", required = true)]
    pub source: Option<String>,
    /// From a trace file: how many of the worst wake-ups (spikes) to explain; from a
    /// timerlat run, how many CPUs' worst activations to analyse.
    #[arg(
        long = "spikes",
        alias = "worst",
        value_name = "N",
        default_value_t = 3
    )]
    pub worst: usize,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: ExplainFormat,
    /// The store.
    #[command(flatten)]
    pub db: DbArgs,
}

/// The analyses.
#[derive(Debug, Subcommand)]
pub enum Analysis {
    /// Interrupt handler and softirq durations per handler: count, mean, p99, maximum, and
    /// the handlers slower than --budget (slow top halves).
    #[command(after_long_help = super::help::ANALYSIS)]
    Irqs(AnalysisArgs),
    /// Each task's delay from wake-up to running (the maximum run delay) and its migrations.
    #[command(after_long_help = super::help::ANALYSIS)]
    Sched(AnalysisArgs),
    /// Each CPU's wake-up latency of real-time tasks' timer wake-ups, from tracepoints.
    #[command(after_long_help = super::help::ANALYSIS)]
    Wakeups(AnalysisArgs),
}

/// Options of the analyses.
#[derive(Debug, Args)]
pub struct AnalysisArgs {
    /// The trace file.
    #[arg(value_name = "TRACEFILE")]
    pub trace: PathBuf,
    /// The budget: flag handlers and tasks whose maximum is above TIME (flagged rows do not
    /// change the exit status).
    #[arg(long = "budget", alias = "threshold", value_name = "TIME", value_parser = parse_time, default_value = "50us")]
    pub threshold: Nanos,
    /// Rows to show at most (as `rtlab runs --limit`).
    #[arg(long = "limit", alias = "top", value_name = "N", default_value_t = 20)]
    pub top: usize,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: ExplainFormat,
}

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExplainFormat {
    /// Stories and tables.
    Text,
    /// JSON (`rtlab.explain/2`; the analyses `rtlab.trace-stats/1`).
    Json,
}
