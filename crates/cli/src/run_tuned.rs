//! `rtlab run --tuned`: the Linaro 2023 talk's before-and-after on the user's own machine, in one session.
//! The three phases are measured on the RT CPUs as the machine is; the runtime part of `rtlab
//! tune`'s plan is applied (no confirmation: `--tuned` asked for it); the phases are measured
//! again from inside the RT cpuset the tuning made, with their load started in the
//! housekeeping cpuset on the housekeeping CPUs; the tuning is reverted — always, also when a
//! phase fails or a signal stops the evaluation — and the report shows what tuning bought.
//!
//! This module owns the checks before anything changes, the apply/revert bracket around the
//! tuned phases, and the before → after lines. Measuring, comparing, reporting and the verdict
//! are [`crate::run_cmd`]'s; planning and journalling are the `tune` room's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use model::measure::MeasureRun;
use model::tune::{Action, TunePlan};
use model::{CpuSet, CpuSpec};
use sys::Root;

use crate::console;
use crate::exit::{Exit, UsageError};
use crate::flags::{ProfileArg, RunArgs, SplitArgs};
use crate::run_session::{Placement, Session};

/// What the labels of the tuned phases end with (`idle, tuned`).
pub(crate) const TUNED: &str = ", tuned";

/// Which phases (by label) the verdict is on: `run --tuned`'s, those after tuning; `run`'s,
/// every latency phase.
pub(crate) fn judged_phases(tuned: bool) -> fn(&str) -> bool {
    if tuned {
        |label| label.ends_with(TUNED)
    } else {
        |_| true
    }
}

/// A tuning checked and ready to apply.
pub(crate) struct Tuning {
    plan: TunePlan,
    journal: PathBuf,
    /// The CPUs every phase measures (--cpus, else the RT CPUs).
    cpus: String,
}

/// Checks everything `--tuned` needs before anything is measured or changed: the split (the
/// plan), the journal (none unreverted), a cpuset controller to isolate with, root, and that
/// the CPUs to measure are RT CPUs. Each problem is a usage error (one line, exit 2).
pub(crate) fn prepare(args: &RunArgs, root: &Root) -> Result<Tuning> {
    let rt = args.rt_cpus.clone().ok_or_else(|| {
        UsageError("--tuned needs --rt-cpus LIST: the CPUs to tune for real-time work".into())
    })?;
    let mut split = SplitArgs::new(
        rt,
        args.housekeeping.clone(),
        args.profile.unwrap_or(ProfileArg::Balanced),
    );
    split.irq_rules.clone_from(&args.irq_rules);
    let plan = crate::tuning::make_plan(&split, root)?;
    let journal = args
        .journal
        .clone()
        .unwrap_or_else(|| PathBuf::from(tune::journal::DEFAULT_PATH));
    files::check_creatable_with_dirs(&journal)
        .map_err(|e| UsageError(format!("--journal {}: {e}", journal.display())))?;
    if tune::journal::read(&journal).is_ok_and(|e| !e.is_empty()) {
        return Err(UsageError(format!(
            "{} records a tuning that has not been reverted; run `rtlab tune revert --journal {}` \
             first (or give another --journal)",
            journal.display(),
            journal.display()
        ))
        .into());
    }
    let Some(rt_dir) = plan
        .changes
        .iter()
        .find(|c| c.action == Action::Mkdir && c.path.ends_with("/rtlab-rt"))
        .map(|c| c.path.clone())
    else {
        return Err(UsageError(
            "--tuned measures inside the RT cpuset the tuning makes, and this machine has no \
             cgroup cpuset controller to make it with (`rtlab tune plan` says more)"
                .into(),
        )
        .into());
    };
    if root.exists(&rt_dir) {
        return Err(UsageError(format!(
            "{rt_dir} exists already, without a journal at {}: remove it (rmdir), or give \
             the --journal of the tuning that made it",
            journal.display()
        ))
        .into());
    }
    if root.is_host() && sys::privilege::Privileges::current().euid != 0 {
        return Err(UsageError(
            "--tuned changes the machine (IRQ affinity, workqueues, cpusets) and reverts it: \
             run it as root"
                .into(),
        )
        .into());
    }
    let cpus = match &args.cpus {
        None => plan.rt_cpus.to_string(),
        Some(list) => {
            let chosen = resolve(list, root)?;
            let outside = chosen.difference(&plan.rt_cpus);
            if !outside.is_empty() {
                return Err(UsageError(format!(
                    "--cpus {list}: CPU {outside} is not an RT CPU ({}); after tuning only the \
                     RT CPUs can be measured",
                    plan.rt_cpus
                ))
                .into());
            }
            chosen.to_string()
        }
    };
    Ok(Tuning {
        plan,
        journal,
        cpus,
    })
}

/// Runs the evaluation before and after tuning; the verdict is on the tuned phases.
pub(crate) fn run(s: &mut Session<'_>, t: Tuning) -> Result<Exit> {
    s.measure_phases(Some(&t.cpus), "", &Placement::default())?;
    if s.stopped.is_some() {
        s.console
            .verdict("stopped before tuning: nothing was changed");
        return s.finish("");
    }
    s.console.verdict(&plan_summary(&t.plan));
    let applied = Applied::new(s.root, &t.journal);
    let outcome = match tune::apply(s.root, &t.plan, &t.journal, None) {
        Ok(outcome) => outcome,
        Err(e) => {
            // The journal may hold the first steps: they are taken back by `applied`.
            drop(applied);
            return Err(UsageError(format!("tuning failed: {e}")).into());
        }
    };
    s.console.verdict(&format!(
        "tuned: {} changes made, {} skipped, {} refused; journal {} (if this run dies before \
         it reverts, `rtlab tune revert --journal {}` puts everything back)",
        outcome.done.len(),
        outcome.skipped.len(),
        outcome.refused.len(),
        t.journal.display(),
        t.journal.display()
    ));
    for r in &outcome.refused {
        s.console.verdict(&format!("  refused: {r}"));
    }
    if !outcome.refused.is_empty() {
        s.console
            .verdict("a partial tuning: the tuned phases show what the changes that took bought");
    }
    let measured = match groups(s.root, &t.journal) {
        Err(e) => Err(e),
        Ok(_) if s.signals_pending() => Ok(()),
        Ok((_, housekeeping)) => {
            let placement = Placement {
                journal: Some(t.journal.clone()),
                load_cpus: Some(t.plan.housekeeping.to_string()),
                load_join: Some(housekeeping),
            };
            s.measure_phases(Some(&t.cpus), TUNED, &placement)
        }
    };
    let reverted = applied.revert();
    let left = match &reverted {
        Ok(out) if out.refused.is_empty() => {
            s.console.verdict(&format!(
                "reverted: {} steps back, the journal closed ({})",
                out.done.len(),
                t.journal.with_extension("jsonl.reverted").display()
            ));
            false
        }
        Ok(out) => {
            for r in &out.refused {
                s.console.verdict(&format!("  revert refused: {r}"));
            }
            true
        }
        Err(e) => {
            s.console.verdict(&format!("revert failed: {e}"));
            true
        }
    };
    let revert_hint = format!(
        "the tuning is not fully reverted: fix what was refused and run `rtlab tune revert \
         --journal {}`",
        t.journal.display()
    );
    if let Err(e) = measured {
        if left {
            s.console.verdict(&revert_hint);
        }
        return Err(e);
    }
    let exit = s.finish(&bought(&s.runs, &t.cpus))?;
    if left {
        return Err(UsageError(revert_hint).into());
    }
    Ok(exit)
}

/// The RT cpuset and its housekeeping sibling that the tuning in `journal` made, both present.
fn groups(root: &Root, journal: &Path) -> Result<(String, String)> {
    let rt = tune::rt_group(journal).map_err(UsageError)?;
    let housekeeping = match rt.rsplit_once('/') {
        Some((parent, _)) => format!("{parent}/rtlab-housekeeping"),
        None => String::new(),
    };
    for dir in [&rt, &housekeeping] {
        if !root.exists(format!("{dir}/cgroup.procs")) {
            return Err(UsageError(format!(
                "{dir} was not made (refused above): the tuned phases cannot run; reverting"
            ))
            .into());
        }
    }
    Ok((rt, housekeeping))
}

impl Session<'_> {
    /// Takes a signal that came while nothing was running (during the apply), if one did.
    fn signals_pending(&mut self) -> bool {
        if let Some(signal) = self.signals.wait(Duration::ZERO) {
            self.stopped = Some(signal);
            self.console
                .verdict(&format!("{signal} while tuning: reverting, no tuned phase"));
        }
        self.stopped.is_some()
    }
}

/// The tuning applied, reverted by [`revert`](Applied::revert) — or, if that is never
/// reached (an early return, a panic), when dropped.
struct Applied<'a> {
    root: &'a Root,
    journal: &'a Path,
    reverted: bool,
}

impl<'a> Applied<'a> {
    fn new(root: &'a Root, journal: &'a Path) -> Applied<'a> {
        Applied {
            root,
            journal,
            reverted: false,
        }
    }

    fn revert(mut self) -> Result<tune::Outcome, String> {
        self.reverted = true;
        if !self.journal.exists() {
            return Ok(tune::Outcome::default());
        }
        tune::revert(self.root, self.journal)
    }
}

impl Drop for Applied<'_> {
    fn drop(&mut self) {
        if self.reverted || !self.journal.exists() {
            return;
        }
        match tune::revert(self.root, self.journal) {
            Ok(out) if out.refused.is_empty() => {
                eprintln!("rtlab: the tuning was reverted");
            }
            _ => console::error(&format!(
                "the tuning is not fully reverted: run `rtlab tune revert --journal {}`",
                self.journal.display()
            )),
        }
    }
}

/// One line on what is about to change.
fn plan_summary(p: &TunePlan) -> String {
    let mut groups: BTreeMap<&str, usize> = BTreeMap::new();
    for c in &p.changes {
        *groups.entry(c.group.as_str()).or_default() += 1;
    }
    let groups: Vec<String> = groups.iter().map(|(g, n)| format!("{g} {n}")).collect();
    let boot = if p.boot.params.is_empty() {
        String::new()
    } else {
        format!(
            "; the boot parameters ({}) need a reboot and are left out",
            p.boot.line
        )
    };
    format!(
        "tuning ({}): RT {}, housekeeping {}: {} runtime changes ({}){boot}",
        p.profile.as_str(),
        p.rt_cpus.with_noun(),
        p.housekeeping.with_noun(),
        p.changes.len(),
        groups.join(", ")
    )
}

/// Per phase measured both ways: max and p99.9 before → after, and where the load ran.
fn bought(runs: &[(String, MeasureRun)], cpus: &str) -> String {
    let mut out = String::new();
    for (label, before) in runs.iter().filter(|(l, _)| !l.ends_with(TUNED)) {
        let tuned = format!("{label}{TUNED}");
        let Some((_, after)) = runs.iter().find(|(l, _)| *l == tuned) else {
            continue;
        };
        let (b, a) = (&before.all.stats, &after.all.stats);
        out.push_str(&format!(
            "  {label:<10} max {}, p99.9 {}{}\n",
            change(b.max_ns, a.max_ns),
            change(b.p99_9_ns, a.p99_9_ns),
            match (load_place(before), load_place(after)) {
                (Some(b), Some(a)) => format!("; load {b} -> {a}"),
                _ => String::new(),
            }
        ));
    }
    if out.is_empty() {
        return out;
    }
    let on = CpuSet::parse_list(cpus).map_or_else(|_| format!("CPUs {cpus}"), |s| s.with_noun());
    format!("\nwhat tuning bought on {on} (before -> after):\n{out}")
}

/// `85.3 -> 12.1 us (7.0x lower)`.
fn change(before: Option<u64>, after: Option<u64>) -> String {
    let (Some(b), Some(a)) = (before, after) else {
        return "not measured both ways".to_string();
    };
    // Within 5% either way is noise, not something tuning bought.
    let ratio = match (b, a) {
        (0, _) | (_, 0) => "-".to_string(),
        (b, a) if a.abs_diff(b) * 20 <= b.max(a) => "about the same".to_string(),
        (b, a) if a < b => format!("{:.1}x lower", b as f64 / a as f64),
        (b, a) => format!("{:.1}x higher", a as f64 / b as f64),
    };
    format!(
        "{} -> {} us ({ratio})",
        report::format_us(b),
        report::format_us(a)
    )
}

/// Where a phase's load ran: `on CPUs 0-1`, `on CPUs 0 in cgroup DIR`.
fn load_place(run: &MeasureRun) -> Option<String> {
    let load = run.load.as_ref()?;
    let cpus = load
        .generators
        .iter()
        .fold(CpuSet::new(), |acc, g| acc.union(&g.cpus));
    Some(format!(
        "on {}{}",
        cpus.with_noun(),
        load.cgroup
            .as_ref()
            .map_or(String::new(), |cg| format!(" in cgroup {cg}"))
    ))
}

/// `--cpus LIST` as CPUs of this machine.
fn resolve(list: &str, root: &Root) -> Result<CpuSet> {
    let spec = CpuSpec::parse(list).map_err(|e| UsageError(format!("--cpus {list}: {e}")))?;
    let possible = sys::cpu::possible(root)?;
    let online = sys::cpu::online(root)?;
    Ok(spec
        .resolve(&possible, &online, &online)
        .map_err(|e| UsageError(format!("--cpus {list}: {e}")))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_says_how_many_times_lower_or_higher() {
        assert_eq!(
            change(Some(85_300), Some(12_100)),
            "85.3 -> 12.1 us (7.0x lower)"
        );
        assert_eq!(
            change(Some(10_000), Some(25_000)),
            "10.0 -> 25.0 us (2.5x higher)"
        );
        assert_eq!(
            change(Some(4_405_200), Some(4_361_200)),
            "4405.2 -> 4361.2 us (about the same)"
        );
        assert_eq!(change(Some(1_000), None), "not measured both ways");
    }
}
