//! `rtlab compare RUN RUN... [--format table|markdown|html|json] [--fail-if-worse PCT]`: talk
//! 000's comparison table over stored runs or result files, each later run's change against the
//! first, and a regression verdict.
//!
//! RUN arguments are resolved and named as `rtlab report` does it
//! ([`crate::runs::named`]: a stored run by its label, else its id; a file by its name);
//! this module makes the names unique, picks the rendering (`report::compare`), prints it, and
//! turns the verdict into the exit status, naming every figure that failed on standard error.

use anyhow::Result;
use model::measure::MeasureRun;
use report::compare::{self, Comparison};

use crate::console::{self, Console};
use crate::exit::{Exit, UsageError};
use crate::flags::{CompareArgs, CompareFormat};
use crate::runs::NamedRun;

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
        .map(|spec| crate::runs::named(spec, db))
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
    if args.worst && matches!(args.format, CompareFormat::Html | CompareFormat::Json) {
        return Err(UsageError(
            "--worst adds to the text and Markdown forms; for HTML or JSON run `rtlab worst RUN... --format html|json`".into(),
        )
        .into());
    }
    let verdict = args.fail_if_worse.map(|pct| comparison.judge(pct).clone());
    let text = match args.format {
        CompareFormat::Text => compare::compare_text(&comparison),
        CompareFormat::Markdown => compare::compare_markdown(&comparison),
        CompareFormat::Html => compare::compare_html_page(&comparison),
        CompareFormat::Json => comparison.to_json(),
    };
    console::print_stdout(&text)?;
    if args.worst {
        let settings = evt::Settings::all_cpus();
        let summary = report::worst::summary_text(&evt::analyse_each(&pairs, &settings));
        console::print_stdout(&format!(
            "\nWorst case (extreme-value estimate, all CPUs):\n{summary}"
        ))?;
    }
    let mut console = Console::new(false);
    let mut failed = false;
    // A comparison with a run that measured nothing, or did not finish, proves nothing:
    // it fails whether or not a threshold was given.
    for (label, run) in &pairs {
        let verdict = model::gate::judge(run, None);
        crate::verdict::say(&mut console, &verdict, Some(label), false);
        failed |= !verdict.passed();
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
