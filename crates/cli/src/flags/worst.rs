//! `rtlab worst`: extreme-value estimates of the worst case over stored runs and result files.

use clap::{Args, ValueEnum};
use model::Nanos;

use super::store::DbArgs;
use super::values::parse_time;

/// The long help of `rtlab worst`.
pub const WORST_LONG: &str = "\
Estimate how bad the latency can get, beyond what the runs measured, with extreme-value \
statistics, and say whether the data support the estimate.

The first line says what to do: \"expect up to X once per day (95 %: A to B)\" from a trusted \
fit (with how often --budget is exceeded), \"not enough evidence: measure about T more under \
the same load\" (T from the fit's goals, else at least 100 s in all and four times what was \
measured), or \"over budget already\" when a run exceeded --budget: tune first. A level the \
data do not support (the fit at a bound of its parameters, an interval without width, more \
than 100 times the largest latency measured) is printed as \"no estimate\" with why.

cyclictest's verbose stream (-v, plain or compressed, imported with `rtlab import`) is \
time-ordered like rtlab's own runs: its per-second maxima are fitted the same way.

Two methods run on each CPU's per-second maxima, and on all CPUs together. Peaks over \
threshold fits a generalised Pareto distribution (GPD) to the largest value of each cluster of \
consecutive seconds above a threshold; the threshold is chosen by a stated rule (the lowest \
percentile above which the shape estimate is stable). Block maxima fits a generalised extreme \
value distribution (GEV) to the maxima of blocks of 1 to 60 s. Both give maximum-likelihood \
estimates with profile-likelihood 95 % intervals for the shape and for the latency exceeded \
once per hour, per day and per year of operation, and, with --budget, the probability per \
hour of exceeding the budget.

A fit is trusted only when every check passes at the 1 % level: Ljung-Box and a runs test \
(independence), a split-half Kolmogorov-Smirnov test and KPSS (stationarity), Anderson-Darling \
and Cramér-von Mises with parametric-bootstrap p-values (goodness of fit), and a back-test \
(a fit to the first half must predict the second half's maximum). A failed check is named, \
with what it means, and no figure from that fit is the verdict. A shape above 0 with its \
interval is said plainly: the tail has no upper bound.

\"Run longer\" says how much measuring the once-per-day level's interval needs to be narrower \
than --interval-width, and the budget's risk to be bounded below --per-hour.

Runs of different conditions (host, kernel, engine, load, period) are analysed separately \
unless --pool is given. The method, its assumptions and where it fails: docs/worst-case.md.";

/// What follows the options in `rtlab worst --help`.
pub fn worst_after() -> String {
    format!(
        "{}

EXAMPLES:
    rtlab worst last                              the newest stored run
    rtlab worst vanilla.json rt.json              runs of one set of conditions are joined in time order
    rtlab worst last --budget 100us --per-hour 1e-9   gate: is 100 us exceeded less than once in 10^9 hours?
    rtlab worst last --format json > worst.json
    rtlab worst last --format html > worst.html   the plots: return levels with their band, QQ, threshold

EXIT STATUS:
    0    every CPU (and all together) has a trusted fit, and with --budget its risk per hour
         is bounded below --per-hour
    1    a fit is not trusted (a check failed, or too little data), the budget's risk is not
         bounded below --per-hour, or a run cannot be judged (unfinished, stopped at --break, a
         CPU without samples)
    2    bad input: a RUN that names nothing or cannot be read, a bad value",
        super::store::RUN_HELP
    )
}

/// Options of `rtlab worst`.
#[derive(Debug, Args)]
pub struct WorstArgs {
    /// The runs; runs of one set of conditions are joined in time order.
    #[arg(value_name = "RUN", required = true)]
    pub runs: Vec<String>,
    /// The latency budget whose probability of being exceeded per hour is estimated (`100us`);
    /// without it, the budget the runs were all measured with, if they share one.
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub budget: Option<Nanos>,
    /// The highest acceptable probability per hour of operation of exceeding --budget.
    #[arg(long, value_name = "PROB", default_value = "1e-6", value_parser = parse_probability)]
    pub per_hour: f64,
    /// The width the once-per-day level's 95 % interval should have, for "run longer"
    /// (default: a tenth of the level).
    #[arg(long = "interval-width", alias = "width", value_name = "TIME", value_parser = parse_time)]
    pub width: Option<Nanos>,
    /// Analyse runs of different conditions together (a different host, kernel, engine, load
    /// or period): the result describes their mixture, not any one of them.
    #[arg(long)]
    pub pool: bool,
    /// Output form.
    #[arg(long, value_enum, default_value = "text")]
    pub format: WorstFormat,
    /// The store.
    #[command(flatten)]
    pub db: DbArgs,
}

/// `--format` of `rtlab worst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum WorstFormat {
    /// The verdict first, then each fit with its checks.
    Text,
    /// A self-contained HTML page: the verdicts, the return-level plot with its band and the
    /// values fitted, the QQ plot, and the threshold choice.
    Html,
    /// Everything as JSON (schema rtlab.worst/1).
    Json,
    /// JUnit XML, a test case per CPU (fails when no fit is trusted or the budget's risk is
    /// over the target).
    Junit,
    /// OpenMetrics gauges: return levels with their bounds, shape, trusted, budget risk.
    Openmetrics,
    /// LAVA's `lava-test-case` commands: a verdict and the figures per CPU.
    Lava,
    /// The same LAVA test cases as result-file lines, for send-to-lava.sh.
    LavaResults,
}

/// A probability strictly between 0 and 1 (`1e-6`, `0.001`).
pub fn parse_probability(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p < 1.0 => Ok(p),
        _ => Err(format!(
            "'{text}' is not a probability between 0 and 1; give one such as 1e-6"
        )),
    }
}
