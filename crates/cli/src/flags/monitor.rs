//! `rtlab monitor`: its options, help and examples, and those of `monitor history` and
//! `monitor incidents`.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use model::{CpuSpec, Nanos};

use super::measure::PolicyArg;
use super::run::RunEngineArg;
use super::store::DbArgs;
use super::values::{parse_cpu_spec, parse_percent, parse_time, parse_time_or_us};

pub const MONITOR_LONG: &str = "\
Watch wake-up latency in production, for months: measure continuously on the chosen CPUs, keep \
a history of fixed intervals (by default 5 minutes, as OSADL's QA farm keeps cyclictest's \
maxima) in the run store, and turn every breach of --budget into an incident kept with its \
explanation.

What measures: the kernel's timerlat tracer where the kernel has it (the kernel samples; \
--engine auto), else rtlab's own threads. Each interval keeps its wake-ups, the exact maximum \
and percentiles, the wake-ups over the budget, coarse histogram buckets, each CPU's maximum, how \
much of the interval was measured and the CPU time the monitor itself used. Intervals start at \
multiples of --every since the Unix epoch, so the intervals of every machine line up; a monitor \
stopped and started again within one merges into it, so the history continues across restarts \
and reboots. --keep removes what is older.

A breach: the user engine records a private trace in a bounded ring buffer and stops at the \
first wake-up over the budget (measure --trace --break); the timerlat tracer stops itself there \
and records the IRQ's stack. The trace around the breach is explained, the explanation's main \
cause becomes the incident's cause line, and the run holding the trace is stored (`rtlab show \
ID`, `rtlab report ID`) while the stored incidents' runs fit in --trace-space (the oldest are \
removed first). Wake-ups over the budget within --burst-gap of the last one belong to the same \
incident; measuring goes on meanwhile without stopping, and the next breach after the gap opens \
a new one. Each new incident runs the --on-incident actions.

With --push URL, what it keeps goes to a fleet server (`rtlab serve`) from a thread of its own: \
each new incident at once with the run holding its trace, each interval when it ends. What the \
server cannot take now waits in the push queue. The server shows each host's long-term view and \
incidents at /hosts/NAME/monitor, and the fleet's at /monitor.

With --metrics FILE, an OpenMetrics text file is rewritten after every interval, for the node \
exporter's textfile collector: the latency histogram, the wake-ups over the budget and the \
incidents since the monitor started, and the last interval's maximum and coverage.

It runs until SIGTERM or Ctrl-C (or for --duration), then saves the interval so far and leaves \
the machine as it was. `rtlab monitor history` and `rtlab monitor incidents` read what it kept.";

pub const MONITOR_AFTER: &str = "\
EXAMPLES:
    rtlab monitor --cpus 2-3 --budget 100us      5-minute history, an incident per breach
    rtlab monitor --budget 80us --metrics /var/lib/node_exporter/textfile/rtlab.prom
    rtlab monitor --budget 100us --duty 20% --every 10m   measure 2 minutes of every 10
    rtlab monitor --budget 100us --on-incident 'exec:logger -t rtlab incident'
    rtlab monitor history --last 1d              the last day's intervals, one line each
    rtlab monitor incidents --last 7d            the last week's incidents and their causes

PEER EQUIVALENTS:
    rtla timerlat hist -T 100 --on-threshold trace   rtlab monitor --budget 100us
    OSADL's 5-minute cyclictest maxima               rtlab monitor history

EXIT STATUS:
    0    stopped by --duration, and no incident
    1    stopped by --duration, and at least one incident
    2    bad input or setup error (privileges, --db, --metrics, an engine this kernel lacks)
    130  stopped by SIGINT/SIGTERM: the interval so far is saved";

/// What `rtlab monitor` prints of a history or an incident list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum HistoryFormat {
    /// A line each.
    Text,
    /// The rtlab.monitor/1 documents.
    Json,
    /// A row each.
    Csv,
}

/// Options of `rtlab monitor`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct MonitorArgs {
    /// `history` or `incidents` (none: watch).
    #[command(subcommand)]
    pub action: Option<MonitorAction>,

    /// CPUs to watch: a list like 2-7, `all`, or `!0`. Default: the CPUs the boot line
    /// isolates (isolcpus=, nohz_full=), else every CPU.
    #[arg(short = 'a', long, value_name = "LIST", value_parser = parse_cpu_spec, help_heading = "What to measure")]
    pub cpus: Option<CpuSpec>,

    /// What measures: the kernel's timerlat tracer where this kernel has it, else rtlab's
    /// threads.
    #[arg(
        long,
        value_enum,
        default_value = "auto",
        help_heading = "What to measure"
    )]
    pub engine: RunEngineArg,

    /// Period of each measuring thread (or of the tracer's timer). A bare number is
    /// microseconds.
    #[arg(short, long, value_name = "TIME", value_parser = parse_time_or_us, default_value = "1ms", help_heading = "What to measure")]
    pub interval: Nanos,

    /// Scheduling policy of the measuring threads (user engine).
    #[arg(
        short = 'y',
        long,
        value_enum,
        default_value = "fifo",
        help_heading = "What to measure"
    )]
    pub policy: PolicyArg,

    /// Real-time priority of the measuring threads (user engine): 1-99, and 99 only with
    /// --allow-prio-99. Default 95.
    #[arg(short, long, value_name = "PRIO", value_parser = clap::value_parser!(u8).range(1..=99), help_heading = "What to measure")]
    pub priority: Option<u8>,

    /// Allow real-time priority 99 (where the kernel's own watchdog and migration threads run).
    #[arg(long, help_heading = "What to measure")]
    pub allow_prio_99: bool,

    /// The latency budget: a wake-up later than TIME is a breach, and opens an incident.
    /// Without it the history is kept and no incident is made.
    #[arg(long, value_name = "TIME", value_parser = parse_time, help_heading = "Incidents")]
    pub budget: Option<Nanos>,

    /// Breaches within TIME of the previous one belong to the same incident.
    #[arg(long, value_name = "TIME", value_parser = parse_time, default_value = "10s", help_heading = "Incidents")]
    pub burst_gap: Nanos,

    /// Disk space the stored incidents' runs (their traces) may take: the oldest are removed
    /// first, their incidents kept. With a unit: 100M, 1G.
    #[arg(long, value_name = "SIZE", value_parser = parse_space, default_value = "100M", help_heading = "Incidents")]
    pub trace_space: u64,

    /// With --budget: ring buffer per CPU of the user engine's trace (a size such as 1M; a bare
    /// number is KiB).
    #[arg(long, value_name = "SIZE", default_value_t = 1024, value_parser = super::values::parse_trace_buffer, help_heading = "Incidents")]
    pub trace_buffer: u64,

    /// On each new incident: `exec:COMMAND` runs COMMAND with /bin/sh (RTLAB_INCIDENT,
    /// RTLAB_CPU, RTLAB_LATENCY_NS and RTLAB_CAUSE in its environment; not waited for), or
    /// `signal:SIGNAL:PID` sends SIGNAL (a name such as USR1, or a number) to PID. Repeatable.
    #[arg(long, value_name = "ACTION", value_parser = parse_action, help_heading = "Incidents")]
    pub on_incident: Vec<IncidentAction>,

    /// The length of each interval of the history.
    #[arg(long, value_name = "TIME", value_parser = parse_time, default_value = "5m", help_heading = "History")]
    pub every: Nanos,

    /// Measure this share of each interval, from its start (the rest is idle): 100% watches
    /// all the time.
    #[arg(long, value_name = "PERCENT", value_parser = parse_percent, default_value = "100%", help_heading = "History")]
    pub duty: f64,

    /// Remove intervals and incidents older than TIME, checked after every interval.
    #[arg(long, value_name = "TIME", value_parser = parse_time, default_value = "400d", help_heading = "History")]
    pub keep: Nanos,

    /// Stop after TIME (default: run until SIGTERM or Ctrl-C).
    #[arg(short = 'D', long, value_name = "TIME", value_parser = parse_time, help_heading = "History")]
    pub duration: Option<Nanos>,

    /// Rewrite FILE after every interval with OpenMetrics text (the node exporter's textfile
    /// collector reads *.prom files).
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub metrics: Option<PathBuf>,

    /// No line per interval on standard output; incidents and errors only.
    #[arg(short, long, help_heading = "Output")]
    pub quiet: bool,

    /// The store.
    #[command(flatten)]
    pub db: DbArgs,

    /// Upload each new incident's run to the server at URL.
    #[command(flatten)]
    pub push: super::push::PushToArgs,
}

const HISTORY_AFTER: &str = "\
EXAMPLES:
    rtlab monitor history --last 1d              this machine's last day, a line per interval
    rtlab monitor history --host board-7 --last 30d --format csv > board-7.csv

EXIT STATUS:
    0    printed (an empty history says so)
    2    bad input: no store at --db, a damaged row";

const INCIDENTS_AFTER: &str = "\
EXAMPLES:
    rtlab monitor incidents --last 7d            every host's last week, newest first
    rtlab monitor incidents --host board-7 --format json

EXIT STATUS:
    0    printed (none says so)
    2    bad input: no store at --db, a damaged row";

/// Reading what `rtlab monitor` kept.
#[derive(Debug, Subcommand)]
pub enum MonitorAction {
    /// The intervals of a host's history, oldest first.
    #[command(after_long_help = HISTORY_AFTER)]
    History(HistoryArgs),
    /// The incidents, newest first, each with its cause.
    #[command(after_long_help = INCIDENTS_AFTER)]
    Incidents(HistoryArgs),
}

/// Options of `rtlab monitor history` and `incidents`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The host (default: this machine's hostname; for incidents, every host).
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// How far back: the last TIME.
    #[arg(long, value_name = "TIME", value_parser = parse_time, default_value = "1d")]
    pub last: Nanos,
    /// Output form.
    #[arg(long, value_enum, default_value = "text")]
    pub format: HistoryFormat,
    /// The store.
    #[command(flatten)]
    pub db: DbArgs,
}

/// One action on an incident.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IncidentAction {
    /// A shell command, not waited for.
    Exec(String),
    /// A signal to a process.
    Signal {
        /// The signal's number.
        signal: i32,
        /// The process.
        pid: i32,
    },
}

/// `exec:COMMAND` or `signal:SIGNAL:PID`.
fn parse_action(text: &str) -> Result<IncidentAction, String> {
    if let Some(command) = text.strip_prefix("exec:") {
        if command.trim().is_empty() {
            return Err("exec: names no command; write exec:COMMAND".into());
        }
        return Ok(IncidentAction::Exec(command.to_string()));
    }
    if let Some(rest) = text.strip_prefix("signal:") {
        let (sig, pid) = rest
            .split_once(':')
            .ok_or_else(|| format!("'{text}': write signal:SIGNAL:PID, e.g. signal:USR1:1234"))?;
        let signal = sys::signals::number(sig).ok_or_else(|| {
            format!("'{sig}' is not a signal; give a name such as USR1 or a number")
        })?;
        let pid = pid
            .trim()
            .parse::<i32>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("'{pid}' is not a process id"))?;
        return Ok(IncidentAction::Signal { signal, pid });
    }
    Err(format!(
        "'{text}' is not an action; give exec:COMMAND or signal:SIGNAL:PID"
    ))
}

/// A disk space: a size with a unit, from 1 MiB to 1 TiB.
fn parse_space(text: &str) -> Result<u64, String> {
    let bytes = model::load::spec::parse_size(text)?;
    if !(1 << 20..=1 << 40).contains(&bytes) {
        return Err(format!("'{text}' is outside 1M to 1T"));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_read_as_written_and_the_rest_is_refused_with_the_forms() {
        assert_eq!(
            parse_action("exec:logger -t rtlab a:b").unwrap(),
            IncidentAction::Exec("logger -t rtlab a:b".into())
        );
        assert_eq!(
            parse_action("signal:USR1:42").unwrap(),
            IncidentAction::Signal {
                signal: 10,
                pid: 42
            }
        );
        assert_eq!(
            parse_action("signal:9:42").unwrap(),
            IncidentAction::Signal { signal: 9, pid: 42 }
        );
        for bad in [
            "exec:",
            "signal:USR1",
            "signal:NOPE:1",
            "signal:USR1:0",
            "shell,command=x",
        ] {
            assert!(parse_action(bad).is_err(), "{bad}");
        }
        assert!(parse_space("100M").is_ok());
        assert!(parse_space("10K").is_err());
    }
}
