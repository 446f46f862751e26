//! Running a campaign from its state directory: the lock, the state read and written
//! atomically, the boots recorded, and the steps driven in order until every one is done —
//! each measuring step by [`step`], reboots and the reboot test by [`reboot`]; `status` by
//! [`status`]. What a state means on resume (a step marked running, a tuning left applied, a
//! reboot asked for) is decided here and in those modules, so that a finished step is never
//! run or stored twice.

pub(crate) mod judge;
pub(crate) mod reboot;
pub(crate) mod status;
pub(crate) mod step;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use model::campaign::{MAX_PLAN_BYTES, PhaseKind, Plan, Step};
use model::campaign_state::{Boot, CampaignState, MAX_BOOTS, MAX_STATE_BYTES, StepStatus};
use sys::Root;
use sys::signals::TerminationSignals;

use crate::console::Console;
use crate::exit::{Exit, UsageError};

/// The plan, as copied into the state directory.
pub(crate) const PLAN_FILE: &str = "plan.toml";
/// The state.
pub(crate) const STATE_FILE: &str = "state.json";
/// The lock.
const LOCK_FILE: &str = "lock";
/// The tuning journal of tuned phases.
pub(crate) const JOURNAL_FILE: &str = "tune-journal.jsonl";

/// A campaign being run: its directory (locked), plan, state and this boot.
pub(crate) struct Ctx<'a> {
    pub dir: PathBuf,
    pub root: &'a Root,
    pub plan: Plan,
    pub steps: Vec<Step>,
    pub state: CampaignState,
    pub console: Console,
    pub quiet: bool,
    /// This boot's id ("unknown" where the kernel has none).
    pub boot: String,
    pub signals: Option<TerminationSignals>,
    _lock: File,
}

/// How long a start or resume waits for the processes of an earlier campaign in the same
/// directory (a killed campaign's children end within moments).
const LOCK_WAIT: Duration = Duration::from_secs(20);

/// Locks `dir` for this process and its children: two campaigns never run one state
/// directory at once, and a resume starts only once every process of a killed campaign (its
/// measurement, a tuning being reverted) has ended.
pub(crate) fn lock(dir: &Path) -> Result<File> {
    let path = dir.join(LOCK_FILE);
    let until = std::time::Instant::now() + LOCK_WAIT;
    loop {
        match files::try_lock(&path, true) {
            Ok(Some(file)) => return Ok(file),
            Ok(None) if std::time::Instant::now() < until => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Ok(None) => {
                return Err(UsageError(format!(
                    "another rtlab campaign is running {} (it holds {}); wait for it, or `rtlab campaign status --state {}`",
                    dir.display(),
                    path.display(),
                    dir.display()
                ))
                .into());
            }
            Err(e) => return Err(UsageError(format!("--state {}: {e}", dir.display())).into()),
        }
    }
}

/// Writes the state atomically (temporary file, fsync, the file system synced, rename,
/// directory fsync): it survives a power cut on ext2 and vfat too, and the run store's writes
/// before it are then on disk as well.
pub(crate) fn write_state(dir: &Path, state: &CampaignState) -> Result<()> {
    let path = dir.join(STATE_FILE);
    files::write_atomically(&path, state.to_json().as_bytes())
        .with_context(|| format!("writing the campaign state {}", path.display()))
}

/// A plan file as read once: the plan checked and the text it was checked from (what the state
/// directory keeps, so the stored plan is the plan that runs).
pub(crate) struct PlanFile {
    /// The plan.
    pub plan: Plan,
    /// Its text.
    pub text: String,
}

/// Reads (bounded) and checks a plan file.
pub(crate) fn read_plan(path: &Path) -> Result<PlanFile> {
    let text = files::read_input_text(path, MAX_PLAN_BYTES)
        .map_err(|e| UsageError(format!("{}: {e}", path.display())))?;
    let plan = Plan::parse(&text, &path.display().to_string()).map_err(|e| UsageError(e.0))?;
    Ok(PlanFile { plan, text })
}

/// Reads the state and the plan of `dir`, checking that they belong together.
pub(crate) fn read(dir: &Path) -> Result<(Plan, CampaignState)> {
    let plan = read_plan(&dir.join(PLAN_FILE))?.plan;
    let path = dir.join(STATE_FILE);
    let text = files::read_input_text(&path, MAX_STATE_BYTES)
        .map_err(|e| UsageError(format!("{}: {e}", path.display())))?;
    let damaged = |why: String| {
        UsageError(format!(
            "{}: {why}; the campaign state is damaged: keep the directory for the runs already stored and start the plan again with another --state DIR",
            path.display()
        ))
    };
    let state = CampaignState::from_json(&text).map_err(damaged)?;
    let steps = plan.steps();
    if steps.len() != state.steps.len()
        || steps
            .iter()
            .zip(&state.steps)
            .any(|(a, b)| a.label != b.label)
    {
        return Err(damaged(format!("its steps are not those of {PLAN_FILE}")).into());
    }
    Ok((plan, state))
}

impl<'a> Ctx<'a> {
    /// Opens the locked directory's campaign.
    pub fn open(dir: &Path, root: &'a Root, quiet: bool, lock: File) -> Result<Ctx<'a>> {
        let (plan, state) = read(dir)?;
        let boot = sys::host::boot(root);
        let mut ctx = Ctx {
            dir: dir.to_path_buf(),
            root,
            steps: plan.steps(),
            plan,
            state,
            console: Console::new(quiet),
            quiet,
            boot: boot
                .as_ref()
                .map_or("unknown".to_string(), |(id, _)| id.clone()),
            signals: None,
            _lock: lock,
        };
        if ctx.state.boots.last().map(|b| b.boot_id.as_str()) != Some(ctx.boot.as_str())
            && ctx.state.boots.len() < MAX_BOOTS
        {
            ctx.state.boots.push(Boot {
                boot_id: ctx.boot.clone(),
                first_seen_at: now(),
                kernel: boot.map(|(_, k)| k).unwrap_or_default(),
            });
            ctx.save()?;
        }
        Ok(ctx)
    }

    /// Writes the state.
    pub fn save(&self) -> Result<()> {
        write_state(&self.dir, &self.state)
    }

    /// A note on standard error (not with --quiet).
    pub fn note(&mut self, text: &str) {
        self.console.note(text);
    }

    /// The signals, blocked.
    pub fn signals(&self) -> &TerminationSignals {
        self.signals.as_ref().expect("blocked in drive")
    }

    /// The tuning journal.
    pub fn journal(&self) -> PathBuf {
        self.dir.join(JOURNAL_FILE)
    }
}

/// What a step came to.
pub(crate) enum StepEnd {
    /// Done: on to the next.
    Done,
    /// Stopped: a signal, or a reboot asked for.
    Stopped,
}

/// Runs the campaign's steps that are not done, in order; the exit status.
pub(crate) fn drive(mut ctx: Ctx<'_>) -> Result<Exit> {
    // Blocked before any child exists: a signal stops the step running (passed on to its
    // child) and the campaign ends in order, its state saying where.
    ctx.signals = Some(TerminationSignals::block().context("blocking SIGINT/SIGTERM")?);
    if let Some(end) = reboot::after_boot(&mut ctx)? {
        return Ok(end);
    }
    if ctx.state.tuning_applied {
        ctx.note("a tuning was left applied when the campaign stopped: reverting it first");
        reboot::revert(&mut ctx)?;
    }
    for i in 0..ctx.steps.len() {
        if ctx.state.steps[i].status == StepStatus::Done {
            continue;
        }
        let phase = ctx.steps[i].phase;
        ctx.note(&format!(
            "step {} of {}: {}",
            i + 1,
            ctx.steps.len(),
            ctx.steps[i].label
        ));
        let end = match ctx.plan.phases[phase].kind.clone() {
            PhaseKind::Measure(m) => step::run(&mut ctx, i, &m)?,
            PhaseKind::RebootTest { reboots, audit } => reboot::test(&mut ctx, i, reboots, audit)?,
        };
        if let StepEnd::Stopped = end {
            return Ok(Exit::Interrupted);
        }
        if ctx.steps[i].reboot_after {
            return reboot::ask(&mut ctx, i);
        }
    }
    if ctx.state.finished_at.is_none() {
        ctx.state.finished_at = Some(now());
        ctx.save()?;
    }
    // A signal that came at the very end is taken here.
    let _ = ctx.signals().wait(Duration::ZERO);
    Ok(status::verdict(&mut ctx))
}

/// Now, as RFC 3339 (seconds).
pub(crate) fn now() -> String {
    humantime::format_rfc3339_seconds(sys::clock::wall_now()).to_string()
}

/// The `--push` options of a campaign (the token from $RTLAB_TOKEN).
pub(crate) fn push_args(url: Option<String>) -> crate::flags::PushToArgs {
    crate::flags::PushToArgs {
        push: url,
        token_file: None,
        push_retry_for: model::Nanos::from_secs(10),
    }
}
