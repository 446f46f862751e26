//! The result of `rtlab audit`: findings with evidence and fixes, the document behind the JSON
//! schema `rtlab.audit/2`, and the short [`AuditSummary`] a measurement result carries.
//!
//! A finding pairs a check's fixed description (id, title, why it matters, severity) with what
//! the check saw on this machine (status, evidence, the fix). Severity says how much a problem
//! found by that check weighs; status says what was found: a check that finds its problem
//! reports the status of its severity (`fail`, `warn` or `info`), unless the check itself
//! judges the problem milder (`warn`).

use serde::{Deserialize, Serialize};

use crate::cpuset::CpuSet;

/// The schema id written into every audit report.
pub const SCHEMA: &str = "rtlab.audit/2";

/// How much a problem found by a check weighs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Breaks real-time behaviour: latency is unbounded or the setup is invalid.
    Fail,
    /// Costs latency or hides trouble; worth fixing.
    Warn,
    /// Worth knowing; a matter of the workload or of taste.
    Info,
}

impl Severity {
    /// The name as written in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Fail => "fail",
            Severity::Warn => "warn",
            Severity::Info => "info",
        }
    }
}

/// What a check found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// A problem of `fail` severity.
    Fail,
    /// A problem of `warn` severity (or one its check judged milder than its severity).
    Warn,
    /// A problem of `info` severity: advice, a matter of the workload or of taste.
    Info,
    /// The check could not read what it needs (the reason is in the finding).
    Unknown,
    /// The check itself went wrong (a bug in rtlab, reported rather than hidden).
    Error,
    /// Nothing to fix.
    Pass,
}

impl Status {
    /// The name as written in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Info => "info",
            Status::Fail => "fail",
            Status::Unknown => "unknown",
            Status::Error => "error",
        }
    }

    /// The status of a problem found by a check of `severity`.
    pub fn of_problem(severity: Severity) -> Status {
        match severity {
            Severity::Fail => Status::Fail,
            Severity::Warn => Status::Warn,
            Severity::Info => Status::Info,
        }
    }
}

/// The area of the machine a check looks at; reports group findings by it, in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Group {
    /// The running kernel and its build configuration.
    Kernel,
    /// Boot parameters.
    Cmdline,
    /// Where IRQs, workqueues and tasks may run, and at what priority.
    Placement,
    /// Frequency scaling and idle states.
    Power,
    /// Scheduler, memory management and watchdog settings.
    Sched,
    /// Clock sources.
    Time,
    /// What the kernel log says.
    Log,
}

impl Group {
    /// Every group, in report order.
    pub const ALL: [Group; 7] = [
        Group::Kernel,
        Group::Cmdline,
        Group::Placement,
        Group::Power,
        Group::Sched,
        Group::Time,
        Group::Log,
    ];

    /// The name as written in JSON and accepted by `--only`/`--skip` (`placement`).
    pub fn name(self) -> &'static str {
        match self {
            Group::Kernel => "kernel",
            Group::Cmdline => "cmdline",
            Group::Placement => "placement",
            Group::Power => "power",
            Group::Sched => "sched",
            Group::Time => "time",
            Group::Log => "log",
        }
    }

    /// The heading used in reports.
    pub fn title(self) -> &'static str {
        match self {
            Group::Kernel => "Kernel",
            Group::Cmdline => "Boot command line",
            Group::Placement => "Runtime placement",
            Group::Power => "CPU power",
            Group::Sched => "Scheduler and memory",
            Group::Time => "Time",
            Group::Log => "Kernel log",
        }
    }
}

/// One thing seen: where it was read and what it said.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    /// The file read (`/proc/cmdline`), or the source named in words (`kernel log`).
    pub source: String,
    /// The value seen, trimmed to what matters.
    pub value: String,
}

/// How to fix a finding: one exact action.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Fix {
    /// Write `value` to the kernel file `path` (takes effect now, lost at reboot).
    Write {
        /// The file.
        path: String,
        /// What to write.
        value: String,
    },
    /// Add (or change) a boot parameter.
    BootParam {
        /// The parameter as it should appear on the command line (`rcu_nocbs=2-7`).
        param: String,
    },
    /// Set a kernel configuration option and rebuild.
    KernelConfig {
        /// `CONFIG_X=y`, or `# CONFIG_X is not set`.
        setting: String,
    },
    /// Run a command.
    Command {
        /// The command line.
        command: String,
    },
    /// What to do, in words, when no single command does it.
    Advice {
        /// The advice.
        text: String,
    },
}

impl Fix {
    /// The fix as one line a person can type or paste.
    pub fn render(&self) -> String {
        match self {
            Fix::Write { path, value } => format!("echo {} > {path}", shell_word(value)),
            Fix::BootParam { param } => format!("boot parameter: {param}"),
            Fix::KernelConfig { setting } => format!("kernel config: {setting}"),
            Fix::Command { command } => command.clone(),
            Fix::Advice { text } => text.clone(),
        }
    }
}

/// `value` quoted for a shell when it needs it.
fn shell_word(value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.,:/+=@%".contains(&b));
    if plain {
        value.to_string()
    } else {
        format!("'{}'", value.replace('\'', r"'\''"))
    }
}

/// One check's result on one machine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Finding {
    /// Stable identifier (`kernel.preempt_rt`, `irq.affinity`).
    pub id: String,
    /// What the check looks at, in a few words.
    pub title: String,
    /// The area it belongs to.
    pub group: Group,
    /// How much a problem found by this check weighs.
    pub severity: Severity,
    /// What was found.
    pub status: Status,
    /// One line saying what was found, in this machine's terms.
    pub summary: String,
    /// What was read and seen.
    pub evidence: Vec<Evidence>,
    /// Why it matters for real-time behaviour (one line, the domain reason).
    pub why: String,
    /// How to fix it; empty when it passes or when nothing can be done from here.
    pub fix: Vec<Fix>,
}

/// Which CPUs the audit treated as the real-time ones, and how it knew.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RtCpus {
    /// The CPUs; empty when none are set apart.
    pub cpus: CpuSet,
    /// Where they came from: `--rt-cpus`, `isolcpus`, `nohz_full`, `cpuset partition` or
    /// `none`.
    pub source: String,
}

/// What the audit was asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// A production kernel: debug options cost latency and are flagged.
    Production,
    /// A validation kernel: the debug options that catch RT bugs are wanted.
    Debug,
}

impl Profile {
    /// The name as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Production => "production",
            Profile::Debug => "debug",
        }
    }
}

/// Counts of findings by status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Counts {
    /// Findings that passed.
    pub pass: u32,
    /// Warnings.
    pub warn: u32,
    /// Advice: problems of `info` severity. Absent (0) in summaries written before
    /// `rtlab.audit/2`, which counted them as warnings.
    #[serde(default)]
    pub info: u32,
    /// Failures.
    pub fail: u32,
    /// Checks that could not read their input.
    pub unknown: u32,
    /// Checks that went wrong.
    pub error: u32,
}

impl Counts {
    /// Counts `findings` by status.
    pub fn of(findings: &[Finding]) -> Counts {
        let mut c = Counts::default();
        for f in findings {
            match f.status {
                Status::Pass => c.pass += 1,
                Status::Warn => c.warn += 1,
                Status::Info => c.info += 1,
                Status::Fail => c.fail += 1,
                Status::Unknown => c.unknown += 1,
                Status::Error => c.error += 1,
            }
        }
        c
    }

    /// All findings counted.
    pub fn total(&self) -> u32 {
        self.pass + self.warn + self.info + self.fail + self.unknown + self.error
    }
}

/// The whole audit of one machine: the document behind `rtlab.audit/2`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditReport {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The rtlab version that ran the audit.
    pub rtlab_version: String,
    /// The rtlab binary that ran it; absent in older reports and where no binary set it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<crate::build::Build>,
    /// Kernel release of the audited machine.
    pub kernel_release: String,
    /// Architecture of the audited machine.
    pub arch: String,
    /// The profile the kernel was judged against.
    pub profile: Profile,
    /// The real-time CPUs the placement checks used.
    pub rt_cpus: RtCpus,
    /// How long the audit took, in microseconds.
    pub elapsed_us: u64,
    /// Counts by status.
    pub counts: Counts,
    /// Every finding, grouped and in check order.
    pub findings: Vec<Finding>,
}

impl AuditReport {
    /// Whether any finding failed (`rtlab audit` then exits 1).
    pub fn failed(&self) -> bool {
        self.counts.fail > 0
    }

    /// The short form a measurement result carries.
    pub fn summary(&self) -> AuditSummary {
        let mut problems: Vec<&Finding> = self
            .findings
            .iter()
            .filter(|f| matches!(f.status, Status::Fail | Status::Warn))
            .collect();
        problems.sort_by_key(|f| (f.status, f.severity));
        AuditSummary {
            schema: SCHEMA.to_string(),
            profile: self.profile,
            rt_cpus: self.rt_cpus.clone(),
            counts: self.counts,
            top: problems
                .into_iter()
                .take(AuditSummary::TOP)
                .map(|f| SummaryItem {
                    id: f.id.clone(),
                    status: f.status,
                    summary: f.summary.clone(),
                    fix: f.fix.first().map(Fix::render),
                })
                .collect(),
        }
    }
}

/// One problem named in an [`AuditSummary`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SummaryItem {
    /// The check id.
    pub id: String,
    /// `fail` or `warn`.
    pub status: Status,
    /// What was found.
    pub summary: String,
    /// The first fix, rendered; `None` when there is none.
    pub fix: Option<String>,
}

/// The audit in brief, as embedded in a measurement result: counts and the worst findings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditSummary {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The profile used.
    pub profile: Profile,
    /// The real-time CPUs the audit used.
    pub rt_cpus: RtCpus,
    /// Counts by status.
    pub counts: Counts,
    /// The worst findings, failures first (at most [`AuditSummary::TOP`]).
    pub top: Vec<SummaryItem>,
}

impl AuditSummary {
    /// How many findings a summary names.
    pub const TOP: usize = 10;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixes_render_as_lines_to_type() {
        let w = Fix::Write {
            path: "/proc/sys/kernel/timer_migration".into(),
            value: "0".into(),
        };
        assert_eq!(w.render(), "echo 0 > /proc/sys/kernel/timer_migration");
        let w = Fix::Write {
            path: "/sys/kernel/mm/transparent_hugepage/enabled".into(),
            value: "never ever".into(),
        };
        assert_eq!(
            w.render(),
            "echo 'never ever' > /sys/kernel/mm/transparent_hugepage/enabled"
        );
        let b = Fix::BootParam {
            param: "rcu_nocbs=2-7".into(),
        };
        assert_eq!(b.render(), "boot parameter: rcu_nocbs=2-7");
    }

    #[test]
    fn group_names_match_their_json() {
        for g in Group::ALL {
            assert_eq!(
                serde_json::to_string(&g).unwrap(),
                format!("\"{}\"", g.name())
            );
        }
    }

    #[test]
    fn problems_take_their_status_from_severity() {
        assert_eq!(Status::of_problem(Severity::Fail), Status::Fail);
        assert_eq!(Status::of_problem(Severity::Warn), Status::Warn);
        assert_eq!(Status::of_problem(Severity::Info), Status::Info);
    }

    #[test]
    fn fixes_round_trip_through_json() {
        let f = Fix::KernelConfig {
            setting: "CONFIG_PREEMPT_RT=y".into(),
        };
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(
            json,
            r#"{"kind":"kernel-config","setting":"CONFIG_PREEMPT_RT=y"}"#
        );
        assert_eq!(serde_json::from_str::<Fix>(&json).unwrap(), f);
    }
}
