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

EXIT STATUS:
    0    shown; the run can be judged
    1    shown, but no gate may pass on the run: it did not finish (status running: the last
         checkpoint of an rtlab that was killed), stopped at --break, or has a CPU without
         samples; standard error says which
    2    bad input: a RUN that names nothing, a file that is not an rtlab result"
    )
}

/// What follows the options in `rtlab export --help`.
pub fn export_after() -> String {
    format!(
        "{RUN_HELP}

The export is written whatever the verdict: a CI step archives it, and its exit status gates.
CSV carries `status` and `judgeable` columns, OpenMetrics an `rtlab_run_judgeable` gauge, and
JUnit a first test case `run complete with samples` that is an error when the run cannot be
judged.

EXIT STATUS:
    0    written; the run can be judged and passed what the export judges (--budget when
         given; with --format junit every test case: a maximum over --budget, 100us by
         default, or overruns fail it)
    1    written, but the verdict failed: a CPU over --budget, a failing JUnit test case, or
         a run no gate may pass on (unfinished, stopped at --break, a CPU without samples)
    2    bad input: a RUN that names nothing, an unwritable --output"
    )
}

/// Options of `rtlab runs`.
#[derive(Debug, Args)]
pub struct RunsArgs {
    /// Only runs on this host (exact hostname).
    #[arg(long, value_name = "HOST", allow_hyphen_values = true)]
    pub host: Option<String>,
    /// Only runs whose kernel release contains TEXT (`--kernel -rt` finds the RT kernels).
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
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
    /// The store.
    #[command(flatten)]
    pub db: DbArgs,
}

/// Options of `rtlab export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The run (see RUN below).
    #[arg(value_name = "RUN")]
    pub run: String,
    /// The format.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// The latency budget each CPU's maximum is held to: the JUnit test cases' verdict
    /// (default 100us there) and, given with any format, the exit status.
    #[arg(long, value_name = "TIME", value_parser = super::values::parse_time)]
    pub budget: Option<Nanos>,
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
    /// JUnit XML, one test case per CPU against --budget, for CI systems.
    Junit,
    /// OpenMetrics text for the node-exporter textfile collector.
    Openmetrics,
}
