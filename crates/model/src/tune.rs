//! A tuning plan (`rtlab tune plan`, schema `rtlab.tune-plan/1`): the boot parameters to add
//! and how to install them, and the runtime changes — each a kernel file with its current
//! value, the value it would get, and why. Pure data: the tune room builds it from the
//! machine, the report room renders it, `tune apply` (later) carries it out.

use serde::{Deserialize, Serialize};

use crate::CpuSet;
pub use crate::irq_rule::{IrqRule, ThreadSched};

/// Schema id of the plan's JSON.
pub const SCHEMA: &str = "rtlab.tune-plan/1";

/// How far a plan goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TuneProfile {
    /// What every real-time machine wants, keeping its safety nets (watchdogs, RT throttling)
    /// and idle states whose exit is quick.
    #[default]
    Balanced,
    /// Everything: no idle states beyond polling on RT CPUs, watchdogs off, RT throttling off,
    /// `nohz_full` on the RT CPUs.
    Strict,
}

impl TuneProfile {
    /// `balanced` or `strict`.
    pub fn as_str(self) -> &'static str {
        match self {
            TuneProfile::Balanced => "balanced",
            TuneProfile::Strict => "strict",
        }
    }
}

/// The plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TunePlan {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The profile.
    pub profile: TuneProfile,
    /// The CPUs for real-time work.
    pub rt_cpus: CpuSet,
    /// The CPUs everything else is moved to.
    pub housekeeping: CpuSet,
    /// Boot parameters: what to add to the kernel command line.
    pub boot: BootPlan,
    /// The IRQ rules the plan follows (`--irq-rule`), in order: the first that matches an IRQ
    /// decides.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<IrqRule>,
    /// Runtime changes, in the order they would be applied.
    pub changes: Vec<Change>,
    /// What the plan leaves as it is and why (managed IRQs, missing features, advice).
    pub notes: Vec<String>,
}

/// Kernel command-line parameters to add.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BootPlan {
    /// The command line the kernel booted with.
    pub current: String,
    /// Parameters to add or change, each with its reason; empty when the command line already
    /// has them all.
    pub params: Vec<BootParam>,
    /// The parameters as one line to paste.
    pub line: String,
    /// How to install that line, per boot loader (printed, never written).
    pub install: Vec<Install>,
}

/// One kernel parameter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BootParam {
    /// The parameter (`rcu_nocbs`).
    pub name: String,
    /// Its value (`2-7`), or none for a flag (`rcu_nocb_poll`).
    pub value: Option<String>,
    /// What the command line has now (`rcu_nocbs=3`), or none.
    pub current: Option<String>,
    /// Why.
    pub reason: String,
}

impl BootParam {
    /// `name=value` or `name`.
    pub fn text(&self) -> String {
        match &self.value {
            Some(v) => format!("{}={v}", self.name),
            None => self.name.clone(),
        }
    }
}

/// How to put the parameters on one boot loader's command line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Install {
    /// The loader: `grub`, `systemd-boot`, `raspberry-pi`.
    pub loader: String,
    /// Whether this machine looks like it uses it.
    pub detected: bool,
    /// The steps, as commands or edits a person carries out.
    pub steps: Vec<String>,
}

/// One runtime change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Change {
    /// What it is about: `irq`, `workqueue`, `cpufreq`, `cpuidle`, `sched`, `memory`,
    /// `watchdog`, `cpuset`.
    pub group: String,
    /// What is done.
    pub action: Action,
    /// The kernel path (a file to write, a directory to create).
    pub path: String,
    /// Its value now (none: the file or directory does not exist yet).
    pub current: Option<String>,
    /// The value it gets (none for a directory).
    pub new: Option<String>,
    /// Why.
    pub reason: String,
}

/// What a change does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// Write `new` to the file.
    Write,
    /// Create the directory (a cgroup).
    Mkdir,
    /// Move every movable task listed in `current`'s cgroup into `path`'s (`new`: the count).
    MoveTasks,
    /// Schedule the thread `/proc/<tid>` (`path`) as `new` (`FIFO 80`), from `current`.
    SetPolicy,
    /// Allow the thread `/proc/<tid>` (`path`) the CPUs `new` only, from `current`.
    SetAffinity,
    /// Set `new` (`KEY=value`) in the shell-style environment file `path` (a service's
    /// EnvironmentFile), replacing the key's line or adding one; `current`: the key's value
    /// there now. The file is journaled whole.
    SetEnv,
    /// Restart the systemd service `path` if it is running (`systemctl try-restart`), so it
    /// reads its changed environment file; revert restarts it again after the file is back.
    Restart,
}
