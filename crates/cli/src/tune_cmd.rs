//! `rtlab tune plan|apply|revert|status`: what to change so the RT CPUs are left to real-time
//! work — the boot parameters with how to install them, and the runtime changes with current
//! and new values — as text, JSON (`rtlab.tune-plan/1`) or a shell script; carrying the
//! runtime part out with a journal of every original, taking it back, and showing what is
//! applied now.

use std::io::IsTerminal;

use anyhow::Result;
use sys::Root;

use crate::console;
use crate::exit::{Exit, UsageError};
use crate::flags::{ApplyArgs, JournalArgs, PlanArgs, PlanFormat, RunInArgs, TuneCommand};
use crate::tuning::make_plan;

/// `rtlab tune`.
pub fn run(command: &TuneCommand, root: &Root) -> Result<Exit> {
    match command {
        TuneCommand::Plan(args) => plan(args, root),
        TuneCommand::Apply(args) => apply(args, root),
        TuneCommand::Revert(args) => revert(&args.journal, root),
        TuneCommand::Status(args) => status(args, root),
        TuneCommand::Run(args) => run_in(args, root),
        TuneCommand::Irqd(args) => crate::irqd_cmd::run(args, root),
    }
}

/// Joins the RT cpuset the journal created, then becomes `args.command`.
fn run_in(args: &RunInArgs, root: &Root) -> Result<Exit> {
    use std::os::unix::process::CommandExt;
    let group = tune::rt_group(&args.journal.journal).map_err(UsageError)?;
    let procs = format!("{group}/cgroup.procs");
    root.write(&procs, &std::process::id().to_string())
        .map_err(|e| UsageError(format!("joining {group}: {e}")))?;
    let err = std::process::Command::new(&args.command[0])
        .args(&args.command[1..])
        .exec();
    Err(UsageError(format!("{}: {err}", args.command[0])).into())
}

fn apply(args: &ApplyArgs, root: &Root) -> Result<Exit> {
    // The journal is written before the first change: a place it cannot go is refused before
    // the plan is made and shown.
    let journal = &args.journal.journal;
    files::check_creatable_with_dirs(journal)
        .map_err(|e| UsageError(format!("--journal {}: {e}", journal.display())))?;
    let plan = make_plan(&args.plan.split, root)?;
    let mut text = report::tune::plan_text(&plan);
    console::print_stdout(&text)?;
    if plan.changes.is_empty() {
        return Ok(Exit::Ok);
    }
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            return Err(UsageError(
                "rtlab tune apply: standard input is not a terminal to confirm on; read the plan \
                 above and add --yes"
                    .to_string(),
            )
            .into());
        }
        eprint!("Apply these {} runtime changes? [y/N] ", plan.changes.len());
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            console::print_stdout("nothing applied\n")?;
            return Ok(Exit::Ok);
        }
    }
    let out =
        tune::apply(root, &plan, &args.journal.journal, args.crash_after).map_err(UsageError)?;
    text = outcome_text("applied", &out);
    text.push_str(&format!(
        "journal: {} (`rtlab tune revert` puts it all back)\n",
        args.journal.journal.display()
    ));
    console::print_stdout(&text)?;
    Ok(if out.refused.is_empty() {
        Exit::Ok
    } else {
        Exit::VerdictFailed
    })
}

fn revert(args: &JournalArgs, root: &Root) -> Result<Exit> {
    if !args.journal.exists() {
        return Err(UsageError(format!(
            "{}: no tuning journal here; nothing was applied (or give --journal)",
            args.journal.display()
        ))
        .into());
    }
    let out = tune::revert(root, &args.journal).map_err(UsageError)?;
    let mut text = outcome_text("reverted", &out);
    if !out.refused.is_empty() {
        text.push_str(
            "the journal is kept: fix what was refused and run `rtlab tune revert` again\n",
        );
    }
    console::print_stdout(&text)?;
    Ok(if out.refused.is_empty() {
        Exit::Ok
    } else {
        Exit::VerdictFailed
    })
}

fn status(args: &JournalArgs, root: &Root) -> Result<Exit> {
    if !args.journal.exists() {
        console::print_stdout("nothing applied: no tuning journal\n")?;
        return Ok(Exit::Ok);
    }
    let standing = tune::status(root, &args.journal).map_err(UsageError)?;
    let mut text = String::new();
    let drifted = standing.iter().filter(|s| s.state == "drifted").count();
    for s in &standing {
        text.push_str(&format!(
            "{:<9} {}{}\n",
            s.state,
            s.path,
            s.now.as_ref().map_or(String::new(), |n| format!(" = {n}"))
        ));
    }
    text.push_str(&format!(
        "{} steps applied from {}; {drifted} drifted since\n",
        standing.len(),
        args.journal.display()
    ));
    console::print_stdout(&text)?;
    Ok(if drifted == 0 {
        Exit::Ok
    } else {
        Exit::VerdictFailed
    })
}

fn outcome_text(verb: &str, out: &tune::Outcome) -> String {
    let mut text = format!(
        "{verb}: {} done, {} skipped, {} refused\n",
        out.done.len(),
        out.skipped.len(),
        out.refused.len()
    );
    for r in &out.refused {
        text.push_str(&format!("  refused: {r}\n"));
    }
    for s in &out.skipped {
        if s.contains("refuses to move") {
            text.push_str(&format!("  left: {s}\n"));
        } else {
            text.push_str(&format!("  skipped: {s}\n"));
        }
    }
    text
}

fn plan(args: &PlanArgs, root: &Root) -> Result<Exit> {
    let plan = make_plan(&args.split, root)?;
    let text = match args.format {
        PlanFormat::Text => report::tune::plan_text(&plan),
        PlanFormat::Json => serde_json::to_string_pretty(&plan)? + "\n",
        PlanFormat::Shell => report::tune::plan_shell(&plan),
    };
    console::print_stdout(&text)?;
    Ok(Exit::Ok)
}
