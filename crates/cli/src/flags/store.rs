//! The run store's commands: `rtlab runs`, `show`, `label`, `rm`, `export`, and the `--db`
//! option every command that reads or saves runs shares.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use model::Nanos;

/// Where the run store is.
#[derive(Clone, Debug, Default, Args)]
pub struct DbArgs {
    /// The run store: a SQLite file, or a PostgreSQL database as
    /// postgres://USER[:PASSWORD]@HOST[:PORT]/DB. Default: $RTLAB_DB, else
    /// $XDG_DATA_HOME/rtlab/rtlab.db, else ~/.local/share/rtlab/rtlab.db.
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<PathBuf>,
}

pub const RUN_HELP: &str = "\
RUN is a stored run's id, a unique prefix of it (at least 4 characters), `last` for the newest \
run, the label of exactly one stored run, or the path of a result file written by `rtlab \
measure -o`.";

/// The exit status of commands that only read or change the store.
pub const STORE_EXIT: &str = "\
EXIT STATUS:
    0    done
    2    bad input: a RUN that names nothing, an unreadable store or file";

/// What follows the options in `rtlab show --help`.
pub fn show_after() -> String {
    format!(
        "{RUN_HELP}

The text ends with the run's verdict, the same every command and page gives it: against the
budget the run was measured with (`verdict: PASS: every CPU within --budget 50us`), or, for a
run measured without one, on completeness and deadlines only.

EXIT STATUS:
    0    shown; the run passed
    1    shown, but the run failed (a CPU over the budget it was measured with, a missed
         --workload deadline) or no gate may pass on it: it did not finish (status running: the
         last checkpoint of an rtlab that was killed), stopped at --break, or has a CPU without
         samples; standard error says which
    2    bad input: a RUN that names nothing, a file that is not an rtlab result"
    )
}

/// What follows the options in `rtlab export --help`.
pub fn export_after() -> String {
    format!(
        "{RUN_HELP}

The export is written whatever the verdict: a CI step archives it, and its exit status gates.
Every format renders the run's one verdict: against the budget it was measured with, or a
--budget given now (a re-judgement, which JUnit's rtlab.criteria property says in words). JUnit
has a test case per CPU and per CPU's --workload jobs, and an rtlab.verdict property; LAVA a
last `verdict` case; each fails exactly when the exit status is 1. CSV carries `status` and `judgeable` columns, OpenMetrics an `rtlab_run_judgeable` gauge, and
JUnit a first test case `run complete with samples` that is an error when the run cannot be
judged.

LAVA: --format lava prints one `lava-test-case NAME --result R --measurement V --units U`
command per figure, for a LAVA test shell to run (`rtlab export last --format lava | sh`);
--format lava-results prints the same cases as `NAME R V U` lines, the result file
test-definitions' send-to-lava.sh reads. The names, as test-definitions give rt-tests' figures:
`run-status` (pass when the run can be judged, else fail), then per CPU and for `all`:
cpuN-min-latency, -avg-, -p99-, -p99.99-, -max-latency (us), cpuN-samples, cpuN-overruns
(count), with -response for a run with --workload and -noise for an imported oslat; a noise
run has cpuN-max-noise, -max-period-noise (us), cpuN-noise (% of the CPU taken),
cpuN-interruptions; with --workload, cpuN-deadline-misses (fails on a miss); last, `verdict`.
Figures are reported, not gated: `pass` from a run that can be judged, `unknown` from one that
cannot; each maximum fails above the budget (the run's own, or --budget). Several
RUNs are named iteration-1-..., iteration-2-..., in the order given. --baseline (three or
more RUNs) adds baseline-max-latency, the lowest maximum (or --baseline=TIME), and
runs-over-baseline, which fails when runs / 2 (rounded down) or more runs are over it: the rule
of test-definitions' repeated rt-tests runs. A run that cannot be judged counts as over.

EXAMPLES:
    rtlab export last --format junit -o rtlab.xml           per-CPU verdicts for CI
    rtlab export last --format lava --budget 100us          LAVA test cases, maxima judged
    rtlab export last --format lava-results > result.txt    lines for send-to-lava.sh
    rtlab export vanilla.json rt.json traced.json --format lava --baseline   three runs

EXIT STATUS:
    0    written; every run passed (the budget it was measured with, or --budget; its
         --workload deadlines) and, with --baseline, the baseline verdict did
    1    written, but a verdict failed: a CPU over the budget, a missed deadline, a failing
         baseline, or a run no gate may pass on (unfinished, stopped at --break, a CPU without
         samples)
    2    bad input: a RUN that names nothing, an unwritable --output, several RUNs,
         --baseline or --prefix without a LAVA format, --baseline with fewer than three RUNs"
    )
}

/// Options of `rtlab runs`.
#[derive(Debug, Args)]
pub struct RunsArgs {
    /// Only runs on this host (exact hostname).
    #[arg(long, value_name = "HOST", allow_hyphen_values = true)]
    pub host: Option<String>,
    /// Only runs whose kernel release contains RELEASE (`--kernel -rt` finds the RT kernels).
    #[arg(long, value_name = "RELEASE", allow_hyphen_values = true)]
    pub kernel: Option<String>,
    /// Only runs whose label contains TEXT.
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub label: Option<String>,
    /// Only runs with this status (complete, interrupted, broke-threshold, running).
    #[arg(long, value_name = "STATUS")]
    pub status: Option<String>,
    /// Only runs started on or after DATE, a UTC date or time prefix (2026-11-23,
    /// 2026-11-23T10:00).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Only runs started up to DATE, inclusive of all it covers (2026-11-23 keeps that
    /// whole day).
    #[arg(long, value_name = "DATE")]
    pub until: Option<String>,
    /// At most N runs, newest first.
    #[arg(short = 'n', long, value_name = "N")]
    pub limit: Option<usize>,
    /// Output form.
    #[arg(long, value_enum, default_value = "text")]
    pub format: ListFormat,
    /// The store.
    #[command(flatten)]
    pub db: DbArgs,
}

/// `--format` of `rtlab runs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    /// One line per run.
    #[value(alias = "table")]
    Text,
    /// A JSON array of run summaries.
    Json,
}

/// Options of `rtlab show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The run (see RUN below).
    #[arg(value_name = "RUN")]
    pub run: String,
    /// Output form: the per-CPU table, the whole result (rtlab.measure/1), or cyclictest's
    /// summary lines.
    #[arg(long, value_enum, default_value = "text")]
    pub format: ShowFormat,
    /// The store.
    #[command(flatten)]
    pub db: DbArgs,
}

/// `--format` of `rtlab show`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ShowFormat {
    /// The per-CPU table of `rtlab measure`.
    #[value(alias = "table")]
    Text,
    /// The whole result (schema rtlab.measure/1).
    Json,
    /// cyclictest's summary lines.
    Cyclictest,
}

/// Options of `rtlab label`.
#[derive(Debug, Args)]
pub struct LabelArgs {
    /// The run (see RUN below; a stored run, not a file).
    #[arg(value_name = "RUN")]
    pub run: String,
    /// The label, e.g. "RT-#2"; an empty string removes it.
    #[arg(value_name = "LABEL")]
    pub label: String,
    /// The store.
    #[command(flatten)]
    pub db: DbArgs,
}

/// Options of `rtlab rm`.
#[derive(Debug, Args)]
pub struct RmArgs {
    /// The runs to delete (ids, unique prefixes or `last`).
    #[arg(value_name = "RUN", required = true)]
    pub runs: Vec<String>,
    /// Delete without asking. A PostgreSQL store is shared: there `last` or a label may name
    /// another host's run, so `rm` shows the runs and asks first, and without a terminal to
    /// ask on it needs --yes.
    #[arg(long)]
    pub yes: bool,
    /// The store.
    #[command(flatten)]
    pub db: DbArgs,
}

/// Options of `rtlab export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The run (see RUN below); several only with --format lava or lava-results.
    #[arg(value_name = "RUN", required = true)]
    pub runs: Vec<String>,
    /// The format.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Re-judge the runs against this budget instead of the one they were measured with: each
    /// CPU's maximum is held to it in every format and in the exit status. Without it, each
    /// run is held to its own (none: judged on completeness and deadlines only).
    #[arg(long, value_name = "TIME", value_parser = super::values::parse_time)]
    pub budget: Option<Nanos>,
    /// With --format lava or lava-results and three or more RUNs: the repeated-runs verdict.
    /// The baseline is the lowest maximum of the runs, or TIME when given (--baseline=50us);
    /// the verdict fails when runs / 2 (rounded down) or more runs exceed it.
    #[arg(
        long,
        value_name = "TIME",
        num_args = 0..=1,
        require_equals = true,
        value_parser = super::values::parse_time
    )]
    pub baseline: Option<Option<Nanos>>,
    /// With --format lava or lava-results: put NAME- before every test case name (several
    /// runs or tests in one LAVA job); letters, digits, '.', '_' and '-'.
    #[arg(long, value_name = "NAME")]
    pub prefix: Option<String>,
    /// Write to FILE (atomically) instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The store.
    #[command(flatten)]
    pub db: DbArgs,
}

/// `--format` of `rtlab export`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// The whole result (schema rtlab.measure/1).
    Json,
    /// One row per CPU and an `all` row.
    Csv,
    /// JUnit XML, one test case per CPU against the budget, for CI systems.
    Junit,
    /// OpenMetrics text for the node-exporter textfile collector.
    Openmetrics,
    /// LAVA's `lava-test-case` commands, one per figure (a script for a LAVA test shell).
    Lava,
    /// The same test cases as result-file lines (`NAME RESULT [MEASUREMENT UNITS]`) for
    /// test-definitions' send-to-lava.sh.
    LavaResults,
}
