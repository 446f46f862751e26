//! `rtlab sched check`: reads the task set, applies `--jitter-from`, reads this machine's
//! deadline bandwidth, has the `sched` room analyse, prints and writes the report, and exits
//! 0 only when the set is proven schedulable under the chosen policy.

use anyhow::{Context, Result};
use model::sched::{SchedPolicy, SchedReport};
use sys::Root;

use crate::console;
use crate::exit::{Exit, UsageError};
use crate::flags::{SchedCheckArgs, SchedCommand, SchedFormat, SchedPolicyArg};
use crate::runs;

/// Runs an `rtlab sched` subcommand.
pub fn run(command: &SchedCommand, root: &Root) -> Result<Exit> {
    match command {
        SchedCommand::Check(args) => check(args, root),
    }
}

/// The analysis is for this machine (its deadline bandwidth is read here): a task placed on a
/// CPU it does not have is refused, not proven schedulable.
fn check_cpus(set: &model::sched::TaskSet, name: &str, root: &Root) -> Result<()> {
    let online = sys::cpu::online(root).context("reading the online CPUs")?;
    match set
        .tasks
        .iter()
        .find(|t| t.cpu.is_some_and(|c| !online.contains(c)))
    {
        Some(t) => Err(UsageError(format!(
            "{name}: task \"{}\" is on cpu = {}, which this machine does not have (CPUs {online}); \
             place it on one of those",
            t.name,
            t.cpu.unwrap_or_default()
        ))
        .into()),
        None => Ok(()),
    }
}

fn check(args: &SchedCheckArgs, root: &Root) -> Result<Exit> {
    if let Some(path) = &args.output {
        files::check_creatable(path)
            .map_err(|e| UsageError(format!("--output {}: {e}", path.display())))?;
    }
    let name = args.taskset.display().to_string();
    let text = files::read_input_text(&args.taskset, model::sched::MAX_TASKSET_BYTES)
        .map_err(|e| UsageError(format!("{name}: {e}")))?;
    let mut set = sched::parse(&text, &name).map_err(|e| UsageError(e.0))?;
    check_cpus(&set, &name, root)?;
    let mut notes = Vec::new();
    if let Some(spec) = &args.jitter_from {
        let run = runs::load(spec, args.db.db.as_deref())
            .map_err(|e| UsageError(format!("--jitter-from {spec}: {e:#}")))?;
        notes = sched::jitter::apply(&mut set, &run, spec).map_err(|e| UsageError(e.0))?;
    }
    let policy = match args.policy {
        Some(SchedPolicyArg::Fifo) => SchedPolicy::Fifo,
        Some(SchedPolicyArg::Edf) => SchedPolicy::Edf,
        Some(SchedPolicyArg::Deadline) => SchedPolicy::Deadline,
        None => set.policy.unwrap_or_default(),
    };
    let bandwidth = sys::dl_bandwidth::deadline_bandwidth(root);
    let mut report: SchedReport = sched::check(&set, &name, policy, bandwidth.as_ref().ok());
    if let Err(e) = &bandwidth {
        report
            .notes
            .push(format!("reading the deadline bandwidth: {e}"));
    }
    report.notes.extend(notes);
    let json = serde_json::to_string_pretty(&report).context("serializing the report")? + "\n";
    if let Some(path) = &args.output {
        files::write_atomically(path, json.as_bytes())
            .with_context(|| format!("writing the report to {}", path.display()))?;
    }
    let format = if args.json {
        SchedFormat::Json
    } else {
        args.format
    };
    let out = match format {
        SchedFormat::Text => report::sched::table(&report),
        SchedFormat::Json => json,
    };
    console::print_stdout(&out).context("writing to standard output")?;
    Ok(if report.passes() {
        Exit::Ok
    } else {
        Exit::VerdictFailed
    })
}
