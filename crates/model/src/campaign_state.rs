//! A campaign's state on disk (`state.json` in its state directory, schema
//! `rtlab.campaign-state/1`) and its status document (`rtlab campaign status --format json`,
//! schema `rtlab.campaign/1`): which step is pending, running (which attempt, since when, in
//! which boot) or done (its runs), the tuning it has applied, the boots it has seen and the
//! reboot it asked for.
//!
//! Data only: the CLI writes the state atomically and decides what a state means on resume.

use serde::{Deserialize, Serialize};

/// The state file's schema.
pub const STATE_SCHEMA: &str = "rtlab.campaign-state/1";
/// The status document's schema.
pub const STATUS_SCHEMA: &str = "rtlab.campaign/1";
/// The largest state file read.
pub const MAX_STATE_BYTES: u64 = 16 << 20;
/// The most attempts one step may take (each a crash or interruption): past it the campaign
/// stops and says so instead of looping.
pub const MAX_ATTEMPTS: u32 = 1000;
/// The most boots recorded.
pub const MAX_BOOTS: usize = 10_000;

/// A campaign's state.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CampaignState {
    /// [`STATE_SCHEMA`].
    pub schema: String,
    /// The plan's name.
    pub name: String,
    /// The session every run is stored under.
    pub session: String,
    /// When the campaign started (RFC 3339).
    pub created_at: String,
    /// The options it was started with; resume uses them.
    pub options: Options,
    /// A tuning is applied (journal `tune-journal.jsonl` in the state directory).
    pub tuning_applied: bool,
    /// One per step of the plan, in order.
    pub steps: Vec<StepState>,
    /// Every boot the campaign has run in, in order.
    pub boots: Vec<Boot>,
    /// A reboot asked for and not yet seen.
    pub reboot: Option<RebootRequest>,
    /// When the last step was done.
    pub finished_at: Option<String>,
}

/// The options a campaign was started with.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// The run store (a file path or a postgres:// address), resolved at the start.
    pub db: String,
    /// The `rtlab serve` every run is pushed to.
    pub push: Option<String>,
    /// A scripted clock for the measurements (tests only).
    pub fake_clock: Option<String>,
}

/// Where a step is.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Not started.
    Pending,
    /// Started, not done: an attempt is running or was interrupted.
    Running,
    /// Done: its run is stored (or its reboots are done).
    Done,
}

/// One step's state.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct StepState {
    /// The label of its runs.
    pub label: String,
    /// Where it is.
    pub status: StepStatus,
    /// Its measuring attempts, in order.
    pub attempts: Vec<Attempt>,
    /// A reboot test's check at every boot.
    pub checks: Vec<BootCheck>,
}

/// What became of an attempt.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// It measured its whole duration: the step's run.
    Complete,
    /// Stopped early (a signal, a kill, a power cut): what it measured is stored as an
    /// interrupted run, and the step goes on for the rest of its duration.
    Interrupted,
    /// It left nothing measured (killed before its first checkpoint).
    Lost,
}

/// One attempt at a measuring step.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Attempt {
    /// 1, 2, …
    pub n: u32,
    /// When it started (RFC 3339).
    pub started_at: String,
    /// The boot it ran in.
    pub boot_id: String,
    /// How long it was asked to measure (ns).
    pub duration_ns: u64,
    /// Its result file, in the state directory.
    pub file: String,
    /// Its measuring process (its own process group).
    pub pid: Option<u32>,
    /// What became of it; none while it runs.
    pub outcome: Option<Outcome>,
    /// The stored run's id.
    pub run_id: Option<String>,
    /// How long it measured (ns).
    pub elapsed_ns: u64,
    /// Its worst latency over all CPUs (ns).
    pub max_ns: Option<u64>,
}

/// A boot the campaign ran in.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Boot {
    /// The kernel's boot id.
    pub boot_id: String,
    /// When the campaign first ran in it (RFC 3339).
    pub first_seen_at: String,
    /// The kernel release.
    pub kernel: String,
}

/// A reboot the campaign asked for.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RebootRequest {
    /// The boot it was asked in: a resume in another boot means it happened.
    pub from_boot: String,
    /// When (RFC 3339).
    pub at: String,
    /// The step after which it was asked.
    pub after_step: usize,
}

/// A reboot test's check in one boot.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct BootCheck {
    /// The boot.
    pub boot_id: String,
    /// When (RFC 3339).
    pub at: String,
    /// `rtlab audit`'s exit status, when the test runs it.
    pub audit_exit: Option<i32>,
    /// The state file and the plan read back intact.
    pub state_ok: bool,
    /// The run store opened and listed its runs.
    pub store_ok: bool,
    /// What failed, if anything.
    pub problem: Option<String>,
}

impl CampaignState {
    /// Reads a state file's text; the error says what is wrong in one line.
    pub fn from_json(text: &str) -> Result<CampaignState, String> {
        let state: CampaignState =
            serde_json::from_str(text).map_err(|e| format!("not a campaign state ({e})"))?;
        if state.schema != STATE_SCHEMA {
            return Err(format!(
                "schema \"{}\" is not {STATE_SCHEMA}",
                state.schema.escape_debug()
            ));
        }
        if state.boots.len() > MAX_BOOTS
            || state
                .steps
                .iter()
                .any(|s| s.attempts.len() > MAX_ATTEMPTS as usize || s.checks.len() > MAX_BOOTS)
        {
            return Err("more attempts or boots than a campaign records".into());
        }
        Ok(state)
    }

    /// The state as written to disk.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a state serializes");
        text.push('\n');
        text
    }
}

/// `rtlab campaign status --format json`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct CampaignStatus {
    /// [`STATUS_SCHEMA`].
    pub schema: String,
    /// The plan's name.
    pub name: String,
    /// The session its runs are stored under.
    pub session: String,
    /// pending, running, done.
    pub status: StepStatus,
    /// How many steps are done, of how many.
    pub steps_done: usize,
    /// How many steps.
    pub steps_total: usize,
    /// The step being run (or to run next), 1-based.
    pub current: Option<usize>,
    /// Every step.
    pub steps: Vec<StepStatusDoc>,
    /// Every boot.
    pub boots: Vec<Boot>,
    /// A reboot asked for and not yet seen.
    pub reboot: Option<RebootRequest>,
    /// A tuning is applied now.
    pub tuning_applied: bool,
}

/// One step in the status document.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct StepStatusDoc {
    /// Its label.
    pub label: String,
    /// `measure` or `reboot-test`.
    pub kind: String,
    /// Where it is.
    pub status: StepStatus,
    /// Its planned duration (ns), for a measuring step.
    pub duration_ns: Option<u64>,
    /// How long its attempts measured so far (ns).
    pub measured_ns: u64,
    /// What is left of its duration (ns).
    pub remaining_ns: Option<u64>,
    /// Its budget (ns).
    pub budget_ns: Option<u64>,
    /// Its worst latency over all its attempts (ns).
    pub max_ns: Option<u64>,
    /// `pass`, `fail` or `unjudgeable` (the gate's words, `model::gate::Outcome::as_str`), or
    /// none until done.
    pub verdict: Option<String>,
    /// Why it did not pass, in words (`attempt 1: CPU 0: max latency 60.0us exceeds --budget
    /// 50us`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    /// Its attempts.
    pub attempts: Vec<Attempt>,
    /// A reboot test's checks.
    pub checks: Vec<BootCheck>,
    /// Whether the step's open attempt has no process any more (killed, or the power went):
    /// the next `rtlab campaign run` resumes it. Only `campaign status` looks.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
}
