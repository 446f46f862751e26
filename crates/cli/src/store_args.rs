//! The command line of the run store: `rtlab runs`, `show`, `label`, `rm`, `export`, and the
//! `--db` option they share with `rtlab measure`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use model::Nanos;

/// Where the run store is.
#[derive(Clone, Debug, Default, Args)]
pub struct DbArgs {
    /// The run store (SQLite). Default: $RTLAB_DB, else $XDG_DATA_HOME/rtlab/rtlab.db, else
    /// ~/.local/share/rtlab/rtlab.db.
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

pub const RUN_HELP: &str = "\
RUN is a stored run's id, a unique prefix of it (at least 4 characters), `last` for the newest \
run, or the path of a result file written by `rtlab measure --json`.";

/// Options of `rtlab runs`.
#[derive(Debug, Args)]
pub struct RunsArgs {
    /// Only runs on this host (exact hostname).
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// Only runs whose kernel release contains TEXT (`-rt` finds the RT kernels).
    #[arg(long, value_name = "TEXT")]
    pub kernel: Option<String>,
    /// Only runs whose label contains TEXT.
    #[arg(long, value_name = "TEXT")]
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
    #[arg(long, value_enum, default_value = "table")]
    pub format: ListFormat,
    /// The store.
    #[command(flatten)]
    pub db: DbArgs,
}

/// `--format` of `rtlab runs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    /// One line per run.
    Table,
    /// A JSON array of run summaries.
    Json,
}

/// Options of `rtlab show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The run (see above).
    #[arg(value_name = "RUN")]
    pub run: String,
    /// Output form: the per-CPU table, the whole result (rtlab.measure/1), or cyclictest's
    /// summary lines.
    #[arg(long, value_enum, default_value = "table")]
    pub format: ShowFormat,
    /// The store.
    #[command(flatten)]
    pub db: DbArgs,
}

/// `--format` of `rtlab show`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ShowFormat {
    /// The per-CPU table of `rtlab measure`.
    Table,
    /// The whole result (schema rtlab.measure/1).
    Json,
    /// cyclictest's summary lines.
    Cyclictest,
}

/// Options of `rtlab label`.
#[derive(Debug, Args)]
pub struct LabelArgs {
    /// The run (see above; a stored run, not a file).
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
    /// The run (see above).
    #[arg(value_name = "RUN")]
    pub run: String,
    /// The format.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// With --format junit: the latency budget each CPU's maximum is held to.
    #[arg(long, value_name = "TIME", value_parser = crate::args::parse_time, default_value = "100us")]
    pub budget: Nanos,
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
