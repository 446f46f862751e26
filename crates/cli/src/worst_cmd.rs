//! `rtlab worst RUN...`: loads the runs, asks `evt` for the extreme-value analysis, prints it
//! verdict first (or as JSON) and turns the verdicts into the exit status.

use anyhow::Result;

use crate::console;
use crate::exit::Exit;
use crate::flags::{WorstArgs, WorstFormat};

/// `rtlab worst`.
pub fn run(args: &WorstArgs) -> Result<Exit> {
    let db = args.db.db.as_deref();
    let named = args
        .runs
        .iter()
        .map(|spec| crate::runs::named(spec, db))
        .collect::<Result<Vec<_>>>()?;
    let pairs: Vec<(String, &model::measure::MeasureRun)> =
        named.iter().map(|n| (n.name.clone(), &n.run)).collect();
    // The budget the risk is judged against: --budget, or the one every run was measured with.
    let own: Vec<Option<model::Nanos>> = named.iter().map(|n| n.run.params.budget_ns).collect();
    let shared = own
        .first()
        .copied()
        .flatten()
        .filter(|b| own.iter().all(|o| *o == Some(*b)));
    let settings = evt::Settings {
        budget_ns: args.budget.or(shared).map(|b| b.0),
        per_hour: args.per_hour,
        width_ns: args.width.map(|w| w.0),
        pool: args.pool,
        per_cpu: true,
        ..evt::Settings::all_cpus()
    };
    let doc = evt::analyse(&pairs, &settings);
    let text = match args.format {
        WorstFormat::Text => report::worst::worst_text(&doc),
        WorstFormat::Html => report::worst::html::worst_html_page(&doc),
        WorstFormat::Json => doc.to_json(),
        WorstFormat::Junit => report::worst::export::junit(&doc),
        WorstFormat::Openmetrics => report::worst::export::openmetrics(&doc),
        WorstFormat::Lava | WorstFormat::LavaResults => {
            let form = if args.format == WorstFormat::Lava {
                report::export::lava::Form::Commands
            } else {
                report::export::lava::Form::Results
            };
            report::export::lava::render(&report::worst::export::lava_cases(&doc), form)
        }
    };
    console::print_stdout(&text)?;
    // An estimate from a run that cannot be judged (unfinished, stopped at --break, a CPU
    // without samples) passes no gate, whatever its fit says: the gate's reason is told.
    let mut console = console::Console::new(false);
    let mut judgeable = true;
    for n in &named {
        let verdict = model::gate::judge(&n.run, None);
        if let Some(why) = verdict.unjudgeable() {
            console.verdict(&format!("{}: the run cannot be judged: {why}", n.name));
            judgeable = false;
        }
    }
    let passed = judgeable
        && doc
            .groups
            .iter()
            .flat_map(|g| &g.cpus)
            .all(|c| c.verdict.passed());
    Ok(if passed {
        Exit::Ok
    } else {
        Exit::VerdictFailed
    })
}
