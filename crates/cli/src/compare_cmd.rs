//! `rtlab compare RUN RUN... [--format table|markdown|html|json] [--fail-if-worse PCT]`: talk
//! 000's comparison table over stored runs or result files, each later run's change against the
//! first, and a regression verdict.
//!
//! RUN arguments are resolved and named as `rtlab report` does it
//! ([`crate::report_cmd::named`]: a stored run by its label, else its id; a file by its name);
//! this module makes the names unique, picks the rendering (`report::compare`), prints it, and
//! turns the verdict into the exit status, naming every figure that failed on standard error.

use anyhow::Result;
use clap::{Args, ValueEnum};
use model::measure::MeasureRun;
use report::compare::{self, Comparison};

use crate::console::{self, Console};
use crate::exit::{Exit, UsageError};
use crate::report_cmd::NamedRun;
use crate::store_args::{DbArgs, RUN_HELP};

/// The long help of `rtlab compare`.
pub const COMPARE_LONG: &str = "\
Print the comparison table of talk 000 for two or more runs: one row per run (its label, else \
its id or file name), column groups Min, Avg, p99.9 and Max in microseconds, one column per \
CPU, the CPUs grouped by cluster under a header naming each (\"4x Cortex-A55\") when the \
machine mixes kinds of core (big.LITTLE, hybrid), and under every later run a row with its \
change against the first run (+12% is 12% higher: worse). A CPU a run did not measure shows \
'-'.

In a terminal the four column groups are stacked, one section each, so that eight CPUs fit in \
about 100 columns. --format markdown and --format html give the talk's single wide table \
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

EXIT STATUS:
    0    printed; no figure worse than --fail-if-worse (or none given), and every run can be
         judged
    1    a later run's p99.9 or max is worse than the first run's by more than
         --fail-if-worse, or a run cannot be judged: it did not finish (status running: a
         checkpoint left by a killed rtlab), stopped at --break, or has a CPU without samples
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
    #[arg(long, value_enum, default_value = "table")]
    pub format: CompareFormat,
    /// Exit 1 when a later run's p99.9 or maximum latency on any CPU is worse than the first
    /// run's by more than PCT percent (`10%` or `10`; exactly PCT passes).
    #[arg(long, value_name = "PCT", value_parser = parse_percent)]
    pub fail_if_worse: Option<f64>,
    /// The store.
    #[command(flatten)]
    pub db: DbArgs,
}

/// `--format` of `rtlab compare`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    /// One section per figure, for a terminal.
    Table,
    /// Talk 000's wide table in Markdown, for tickets and pull requests.
    Markdown,
    /// A self-contained HTML page with the wide table.
    Html,
    /// The figures and verdict as JSON (schema rtlab.compare/1).
    Json,
}

/// A percentage as typed: `10%`, `10`, `2.5%`; finite and not negative.
pub fn parse_percent(text: &str) -> Result<f64, String> {
    let number = text.trim().strip_suffix('%').unwrap_or(text.trim()).trim();
    match number.parse::<f64>() {
        Ok(pct) if pct.is_finite() && pct >= 0.0 => Ok(pct),
        _ => Err(format!(
            "'{text}' is not a percentage; give one such as 10% or 2.5"
        )),
    }
}

/// `rtlab compare`.
pub fn run(args: &CompareArgs) -> Result<Exit> {
    if args.runs.len() < 2 {
        return Err(UsageError(format!(
            "compare needs at least two RUNs, the first being the baseline; only '{}' was given",
            args.runs.join(" ")
        ))
        .into());
    }
    let db = args.db.db.as_deref();
    let named = args
        .runs
        .iter()
        .map(|spec| crate::report_cmd::named(spec, db))
        .collect::<Result<Vec<_>>>()?;
    let labels = labels(&named);
    let pairs: Vec<(String, &MeasureRun)> = labels
        .into_iter()
        .zip(named.iter().map(|n| &n.run))
        .collect();
    let mut comparison = Comparison::new(&pairs);
    if let (Some(_), Some(warning)) = (args.fail_if_worse, comparison.mixed_warning()) {
        return Err(UsageError(format!(
            "--fail-if-worse cannot judge these runs: {warning}; compare runs of one kind"
        ))
        .into());
    }
    let verdict = args.fail_if_worse.map(|pct| comparison.judge(pct).clone());
    let text = match args.format {
        CompareFormat::Table => compare::compare_text(&comparison),
        CompareFormat::Markdown => compare::compare_markdown(&comparison),
        CompareFormat::Html => compare::compare_html_page(&comparison),
        CompareFormat::Json => comparison.to_json(),
    };
    console::print_stdout(&text)?;
    let mut console = Console::new(false);
    let mut failed = false;
    // A comparison with a run that measured nothing, or did not finish, proves nothing:
    // it fails whether or not a threshold was given.
    for (label, run) in &pairs {
        if let Some(why) = run.unjudgeable() {
            console.verdict(&format!("{label}: cannot be judged: {why}"));
            failed = true;
        }
    }
    if let Some(v) = verdict.filter(|v| !v.passed) {
        for line in v.messages() {
            console.verdict(&line);
        }
        failed = true;
    }
    Ok(if failed {
        Exit::VerdictFailed
    } else {
        Exit::Ok
    })
}

/// The terminal table over runs already named (for commands that compare what they measured).
pub fn render_table(runs: &[(String, &MeasureRun)]) -> String {
    compare::compare_text(&Comparison::new(runs))
}

/// One unique row label per run: its name (`run N` when it has none); a name several runs
/// share gets the run's id or file stem added, and the same run given twice its position.
fn labels(named: &[NamedRun]) -> Vec<String> {
    let names: Vec<String> = named
        .iter()
        .enumerate()
        .map(|(i, n)| match n.name.trim() {
            "" => format!("run {}", i + 1),
            name => name.to_string(),
        })
        .collect();
    let mut labels: Vec<String> = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let twins: Vec<usize> = (0..names.len()).filter(|&j| names[j] == *name).collect();
        let key = &named[i].key;
        let same_run = twins.iter().filter(|&&j| named[j].key == *key).count() > 1;
        let mut label = match (twins.len(), same_run) {
            (1, _) => name.clone(),
            (_, false) if key != name => format!("{name} ({key})"),
            _ => format!("{name} (run {})", i + 1),
        };
        if labels.contains(&label) {
            label = format!("{label} (run {})", i + 1);
        }
        labels.push(label);
    }
    labels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_with_or_without_the_sign() {
        assert_eq!(parse_percent("10%"), Ok(10.0));
        assert_eq!(parse_percent("10"), Ok(10.0));
        assert_eq!(parse_percent(" 2.5 % "), Ok(2.5));
        assert_eq!(parse_percent("0"), Ok(0.0));
        for bad in ["-5%", "ten", "", "%", "inf", "NaN"] {
            let err = parse_percent(bad).unwrap_err();
            assert!(err.contains("is not a percentage"), "{bad}: {err}");
        }
    }
}
