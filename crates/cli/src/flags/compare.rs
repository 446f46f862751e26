//! `rtlab compare` and `rtlab report`: the commands that put runs side by side.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use model::Nanos;

use super::store::{DbArgs, RUN_HELP};
use super::values::{parse_percent, parse_time};

/// The long help of `rtlab compare`.
pub const COMPARE_LONG: &str = "\
Print the comparison table for two or more runs: one row per run (its label, else \
its id or file name), column groups Min, Avg, p99.9 and Max in microseconds, one column per \
CPU, the CPUs grouped by cluster under a header naming each (\"4x Cortex-A55\") when the \
machine mixes kinds of core (big.LITTLE, hybrid), and under every later run a row with its \
change against the first run (+12% is 12% higher: worse). A CPU a run did not measure shows \
'-'.

In a terminal the four column groups are stacked, one section each, so that eight CPUs fit in \
about 100 columns. --format markdown and --format html give one wide table, a row per run and a column per CPU in each group \
(HTML as a self-contained page), --format json the data (schema rtlab.compare/1).

--fail-if-worse PCT makes the comparison a regression gate, for a kernel upgrade or a tuning \
change: rtlab exits 1 when any later run's p99.9 or maximum on any CPU is more than PCT \
percent above the first run's, and names each such figure on standard error.";

/// What follows the options in `rtlab compare --help`.
pub fn compare_after() -> String {
    format!(
        "{RUN_HELP}

EXAMPLES:
    rtlab compare 3f2a 9c01 last             9c01 and the newest run against 3f2a
    rtlab compare vanilla.json rt.json --format markdown > table.md
    rtlab compare old-kernel new-kernel --fail-if-worse 10%   gate a kernel upgrade
    rtlab compare vanilla.json rt.json --worst-case   and each run's extreme-value estimate

EXIT STATUS:
    0    printed; no figure worse than --fail-if-worse (or none given), and every run passes
         its own criteria
    1    a later run's p99.9 or max is worse than the first run's by more than
         --fail-if-worse, or a run fails its own criteria (over the budget it was measured
         with), or cannot be judged: it did not finish (status running: a checkpoint left by
         a killed rtlab), was interrupted, stopped at --break, or has a CPU without samples
         (the table is printed all the same; standard error names the run and why)
    2    bad input: a RUN that names nothing or cannot be read, fewer than two RUNs, a bad
         percentage"
    )
}

/// Options of `rtlab compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The runs, in row order; the first is the baseline that the others' changes and the
    /// verdict are measured against.
    #[arg(value_name = "RUN", required = true)]
    pub runs: Vec<String>,
    /// Output form.
    #[arg(long, value_enum, default_value = "text")]
    pub format: CompareFormat,
    /// Exit 1 when a later run's p99.9 or maximum latency on any CPU is worse than the first
    /// run's by more than PCT percent (`10%` or `10`; exactly PCT passes).
    #[arg(long, value_name = "PCT", value_parser = parse_percent)]
    pub fail_if_worse: Option<f64>,
    /// Under the table, each run's worst-case estimate (as `rtlab worst`, all CPUs together):
    /// the once-per-day level with its 95 % interval, the shape and whether the fit may be
    /// trusted (text and Markdown forms).
    #[arg(long = "worst-case", alias = "worst")]
    pub worst: bool,
    /// The store.
    #[command(flatten)]
    pub db: DbArgs,
}

/// `--format` of `rtlab compare`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    /// One section per figure, for a terminal.
    #[value(alias = "table")]
    Text,
    /// The wide table in Markdown, for tickets and pull requests.
    Markdown,
    /// A self-contained HTML page with the wide table.
    Html,
    /// The figures and verdict as JSON (schema rtlab.compare/1).
    Json,
}

/// The long help of `rtlab report`.
pub const REPORT_LONG: &str = "\
Write one HTML file that shows, for each RUN: the run's header (host, kernel, preemption \
model, when, parameters, status), the per-CPU latency table, the latency histogram (samples \
per bin on a log scale against latency, one line per CPU: the OSADL latency plot), the \
exceedance plot (the fraction of samples at or above each latency, which makes tails \
comparable), the largest latency per second over the run, the load achieved, the audit \
summary, the warnings and the environment. With several RUNs the page opens with their \
all-CPU exceedance curves on one chart.

The page is self-contained: styles and plots are inline, there is no script, and viewing it \
fetches nothing from the network. --svg DIR writes each plot as an SVG file as well.

Example: rtlab report last -o report.html --budget 50us; rtlab report 3f2a 9c01 last -o compare.html --svg plots";

/// Options of `rtlab report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The runs to report on, in this order (see below). With several, the page opens with
    /// a chart comparing their tails.
    #[arg(value_name = "RUN", required = true)]
    pub runs: Vec<String>,
    /// The HTML file to write (replaced atomically; viewing it needs no network).
    #[arg(short, long, value_name = "FILE", required = true)]
    pub output: PathBuf,
    /// Also write every plot as an SVG file into DIR (created if missing):
    /// RUN-histogram.svg, RUN-exceedance.svg, RUN-max-over-time.svg (RUN being the run's
    /// id or file stem) and, for several runs, runs-exceedance.svg.
    #[arg(long, value_name = "DIR")]
    pub svg: Option<PathBuf>,
    /// Re-judge every run against this budget instead of the one it was measured with (the
    /// page says so), drawn as a dashed line on every latency plot (`50us`, `1ms`). Without it,
    /// each run is judged against its own.
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub budget: Option<Nanos>,
    /// The store.
    #[command(flatten)]
    pub db: DbArgs,
}
