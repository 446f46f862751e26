//! What a check returns ([`Outcome`]): pass, a problem, a milder warning or unknown, with
//! the evidence read and the fixes; and how an outcome is judged against a check's severity.
//! It knows nothing of checks or of the context they read, so both can use it.

use model::audit::{Evidence, Fix, Severity, Status};

/// What a check saw. Build one with [`Outcome::pass`], [`Outcome::problem`] or
/// [`Outcome::unknown`], then add evidence and fixes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    verdict: Verdict,
    summary: String,
    evidence: Vec<Evidence>,
    fix: Vec<Fix>,
    severity: Option<Severity>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    Pass,
    /// A problem; its status follows the (possibly overridden) severity.
    Problem,
    /// A problem explicitly milder than the check's severity.
    Warn,
    Unknown,
}

impl Outcome {
    fn new(verdict: Verdict, summary: impl Into<String>) -> Outcome {
        Outcome {
            verdict,
            summary: summary.into(),
            evidence: Vec::new(),
            fix: Vec::new(),
            severity: None,
        }
    }

    /// Nothing to fix.
    pub fn pass(summary: impl Into<String>) -> Outcome {
        Outcome::new(Verdict::Pass, summary)
    }

    /// The problem this check looks for; status `fail` or `warn` by severity.
    pub fn problem(summary: impl Into<String>) -> Outcome {
        Outcome::new(Verdict::Problem, summary)
    }

    /// A lesser problem than the check's severity: status `warn` (or `info` for a check of
    /// `info` severity).
    pub fn warn(summary: impl Into<String>) -> Outcome {
        Outcome::new(Verdict::Warn, summary)
    }

    /// The input could not be read; `reason` says which and why.
    pub fn unknown(reason: impl Into<String>) -> Outcome {
        Outcome::new(Verdict::Unknown, reason)
    }

    /// Adds what was read (`source`) and seen (`value`).
    pub fn evidence(mut self, source: impl Into<String>, value: impl Into<String>) -> Outcome {
        self.evidence.push(Evidence {
            source: source.into(),
            value: value.into(),
        });
        self
    }

    /// Adds a fix.
    pub fn fix(mut self, fix: Fix) -> Outcome {
        self.fix.push(fix);
        self
    }

    /// Adds a `Write` fix.
    pub fn fix_write(self, path: impl Into<String>, value: impl Into<String>) -> Outcome {
        self.fix(Fix::Write {
            path: path.into(),
            value: value.into(),
        })
    }

    /// Adds a `BootParam` fix.
    pub fn fix_boot(self, param: impl Into<String>) -> Outcome {
        self.fix(Fix::BootParam {
            param: param.into(),
        })
    }

    /// Adds a `KernelConfig` fix.
    pub fn fix_config(self, setting: impl Into<String>) -> Outcome {
        self.fix(Fix::KernelConfig {
            setting: setting.into(),
        })
    }

    /// Adds a `Command` fix.
    pub fn fix_command(self, command: impl Into<String>) -> Outcome {
        self.fix(Fix::Command {
            command: command.into(),
        })
    }

    /// Adds an `Advice` fix.
    pub fn fix_advice(self, text: impl Into<String>) -> Outcome {
        self.fix(Fix::Advice { text: text.into() })
    }

    /// Adds several fixes, in order.
    pub fn with_fixes(self, fixes: impl IntoIterator<Item = Fix>) -> Outcome {
        fixes.into_iter().fold(self, Outcome::fix)
    }

    /// Overrides the check's severity for this machine (a profile that flips what is wanted).
    pub fn with_severity(mut self, severity: Severity) -> Outcome {
        self.severity = Some(severity);
        self
    }

    /// Whether this outcome passed (for tests).
    pub fn passed(&self) -> bool {
        self.verdict == Verdict::Pass
    }

    /// The one-line summary (for tests).
    pub fn summary(&self) -> &str {
        &self.summary
    }

    /// What this outcome makes of a check of `severity`: the finding's status and severity,
    /// with the summary, evidence and fixes (none when it passed).
    pub(crate) fn judge(self, severity: Severity) -> Judged {
        let severity = self.severity.unwrap_or(severity);
        let status = match self.verdict {
            Verdict::Pass => Status::Pass,
            Verdict::Problem => Status::of_problem(severity),
            // Milder than the severity, never graver: advice stays advice.
            Verdict::Warn => Status::of_problem(severity.max(Severity::Warn)),
            Verdict::Unknown => Status::Unknown,
        };
        let fix = if status == Status::Pass {
            Vec::new()
        } else {
            self.fix
        };
        Judged {
            status,
            severity,
            summary: self.summary,
            evidence: self.evidence,
            fix,
        }
    }
}

/// An outcome judged against its check's severity: what a finding carries besides the
/// check's own description.
pub(crate) struct Judged {
    pub status: Status,
    pub severity: Severity,
    pub summary: String,
    pub evidence: Vec<Evidence>,
    pub fix: Vec<Fix>,
}
