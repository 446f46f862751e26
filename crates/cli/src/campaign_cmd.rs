//! `rtlab campaign`: starts a campaign from its plan (or continues the one its state
//! directory holds), resumes one, or says where one is. Setting up — the plan read and
//! checked, the state directory made, locked and compared — is here; running the steps is
//! [`crate::campaign`]'s.

use std::path::Path;

use anyhow::Result;
use model::campaign::Plan;
use model::campaign_state::{CampaignState, Options, STATE_SCHEMA, StepState, StepStatus};
use sys::Root;

use crate::campaign::{self, Ctx, PLAN_FILE, STATE_FILE};
use crate::exit::{Exit, UsageError};
use crate::flags::{CampaignAction, CampaignArgs};

/// Where campaigns keep their state unless --state says otherwise.
pub const STATE_BASE: &str = "/var/lib/rtlab/campaigns";

/// Runs `rtlab campaign`.
pub fn run(args: &CampaignArgs, root: &Root) -> Result<Exit> {
    match &args.action {
        Some(CampaignAction::Resume { state, quiet }) => resume(state, *quiet, root),
        Some(CampaignAction::Status { state, format }) => {
            campaign::status::run(state, *format, root)
        }
        Some(CampaignAction::Report(args)) => campaign::status::report(args),
        None => start(args, root),
    }
}

/// `rtlab campaign PLAN.toml`: a new campaign, or the one in its state directory continued
/// when it was started with the same plan.
fn start(args: &CampaignArgs, root: &Root) -> Result<Exit> {
    let path = args.plan.as_deref().expect("clap requires PLAN");
    let file = campaign::read_plan(path)?;
    let dir = match &args.state {
        Some(dir) => dir.clone(),
        None => Path::new(STATE_BASE).join(dir_name(&file.plan.name)),
    };
    // A new campaign's store and push target are checked before its state directory is made:
    // a refusal leaves nothing behind.
    let early = match dir.join(STATE_FILE).exists() {
        true => None,
        false => Some(new_options(args)?),
    };
    files::check_dir_creatable(&dir)
        .map_err(|e| UsageError(format!("--state {}: {e}", dir.display())))?;
    files::create_dir_all(&dir)
        .map_err(|e| UsageError(format!("--state {}: {e}", dir.display())))?;
    let lock = campaign::lock(&dir)?;
    if dir.join(STATE_FILE).exists() {
        check_same_campaign(args, &dir, &file.plan)?;
        let mut ctx = Ctx::open(&dir, root, args.quiet, lock)?;
        ctx.note(&format!("continuing the campaign in {}", dir.display()));
        return campaign::drive(ctx);
    }
    let options = match early {
        Some(options) => options,
        None => new_options(args)?,
    };
    // The text kept is the text that was checked: the plan stored is the plan that runs.
    files::write_atomically(&dir.join(PLAN_FILE), file.text.as_bytes())
        .map_err(|e| UsageError(format!("--state {}: {e}", dir.display())))?;
    campaign::write_state(&dir, &new_state(&file.plan, options))?;
    let mut ctx = Ctx::open(&dir, root, args.quiet, lock)?;
    if reboots(&file.plan) {
        let name = dir_name(&file.plan.name);
        ctx.note(&format!(
            "this campaign reboots: it continues at boot only with `systemctl enable rtlab-campaign@{name}.service` (state in {STATE_BASE}/{name}), or by `rtlab campaign resume --state {}`",
            dir.display()
        ));
    }
    campaign::drive(ctx)
}

/// A state directory that holds a campaign already is continued only with the plan it was
/// started with, and with its own store and push settings.
fn check_same_campaign(args: &CampaignArgs, dir: &Path, plan: &Plan) -> Result<()> {
    let before = campaign::read_plan(&dir.join(PLAN_FILE))?.plan;
    if before != *plan {
        return Err(UsageError(format!(
            "{} holds a campaign started with another plan ({}); give another --state DIR, or `rtlab campaign resume --state {}` to finish that one",
            dir.display(),
            dir.join(PLAN_FILE).display(),
            dir.display()
        ))
        .into());
    }
    if args.db.is_some() || args.push.is_some() {
        return Err(UsageError(format!(
            "{} holds this campaign already, with its own store and push settings; continue it without --db and --push",
            dir.display()
        ))
        .into());
    }
    Ok(())
}

/// A new campaign's options, its store and push checked before anything is written.
fn new_options(args: &CampaignArgs) -> Result<Options> {
    crate::runs::check_usable(args.db.as_deref()).map_err(|e| {
        UsageError(format!(
            "the run store cannot be used: {e:#}; every phase is saved there, so give a writable --db PATH"
        ))
    })?;
    crate::push_to::prepare(&campaign::push_args(args.push.clone()))?;
    let db = match crate::runs::location(args.db.as_deref())? {
        store::Location::File(p) => std::path::absolute(&p)
            .unwrap_or(p)
            .to_string_lossy()
            .into_owned(),
        store::Location::Postgres(url) => url,
    };
    Ok(Options {
        db,
        push: args.push.clone(),
        fake_clock: args.fake_clock.clone(),
    })
}

/// The state of a campaign not started yet: every step pending.
fn new_state(plan: &Plan, options: Options) -> CampaignState {
    let now = campaign::now();
    CampaignState {
        schema: STATE_SCHEMA.to_string(),
        name: plan.name.clone(),
        session: format!(
            "campaign-{}-{}",
            dir_name(&plan.name),
            now.replace([':', '-'], "")
        ),
        created_at: now,
        options,
        tuning_applied: false,
        steps: plan
            .steps()
            .into_iter()
            .map(|s| StepState {
                label: s.label,
                status: StepStatus::Pending,
                attempts: Vec::new(),
                checks: Vec::new(),
            })
            .collect(),
        boots: Vec::new(),
        reboot: None,
        finished_at: None,
    }
}

/// Whether the plan reboots the machine.
fn reboots(plan: &Plan) -> bool {
    plan.reboot_between
        || plan.phases.iter().any(|p| {
            p.reboot_after || matches!(p.kind, model::campaign::PhaseKind::RebootTest { .. })
        })
}

/// `rtlab campaign resume --state DIR`.
fn resume(dir: &Path, quiet: bool, root: &Root) -> Result<Exit> {
    if !dir.join(STATE_FILE).exists() {
        return Err(UsageError(format!(
            "{}: no campaign here (no {STATE_FILE}); start one with `rtlab campaign PLAN.toml --state {}`",
            dir.display(),
            dir.display()
        ))
        .into());
    }
    let lock = campaign::lock(dir)?;
    let ctx = Ctx::open(dir, root, quiet, lock)?;
    campaign::drive(ctx)
}

/// A plan name as a directory name: letters, digits, `-`, `_` and `.`; others become `_`.
fn dir_name(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    match clean.trim_start_matches('.') {
        "" => "campaign".to_string(),
        s => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_name_becomes_a_safe_directory_name() {
        assert_eq!(dir_name("van-vs-rt"), "van-vs-rt");
        assert_eq!(dir_name("RT #2/busy"), "RT__2_busy");
        assert_eq!(dir_name("../.."), "_..");
        assert_eq!(dir_name("..."), "campaign");
    }
}
