//! What a check is ([`Check`]: fixed description plus a function from [`Ctx`] to
//! [`Outcome`]) and what one returns, plus selecting checks by id for `--only` / `--skip`.

use model::audit::{Evidence, Finding, Fix, Group, Severity, Status};

use crate::context::Ctx;

/// One check: data describing it, and the function that looks.
pub struct Check {
    /// Stable id, `group.name` (`kernel.preempt_rt`); never renamed once released.
    pub id: &'static str,
    /// What it looks at, in a few words.
    pub title: &'static str,
    /// The area of the machine.
    pub group: Group,
    /// How much a problem it finds weighs (an [`Outcome`] may override it).
    pub severity: Severity,
    /// Why it matters for real-time behaviour, one line.
    pub why: &'static str,
    /// The look itself: reads through the context, never writes, never panics on bad input.
    pub run: fn(&Ctx) -> Outcome,
}

impl std::fmt::Debug for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Check").field("id", &self.id).finish()
    }
}

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

    /// A lesser problem than the check's severity: status `warn` whatever the severity.
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

    /// Turns the outcome into the finding of `check`.
    pub fn into_finding(self, check: &Check) -> Finding {
        let severity = self.severity.unwrap_or(check.severity);
        let status = match self.verdict {
            Verdict::Pass => Status::Pass,
            Verdict::Problem => Status::of_problem(severity),
            Verdict::Warn => Status::Warn,
            Verdict::Unknown => Status::Unknown,
        };
        let fix = if status == Status::Pass {
            Vec::new()
        } else {
            self.fix
        };
        Finding {
            id: check.id.to_string(),
            title: check.title.to_string(),
            group: check.group,
            severity,
            status,
            summary: self.summary,
            evidence: self.evidence,
            why: check.why.to_string(),
            fix,
        }
    }
}

/// A finding for a check that panicked: a bug in rtlab, reported where it happened.
pub fn error_finding(check: &Check, message: &str) -> Finding {
    Finding {
        id: check.id.to_string(),
        title: check.title.to_string(),
        group: check.group,
        severity: check.severity,
        status: Status::Error,
        summary: format!("the check failed: {message} (a bug in rtlab; please report it)"),
        evidence: Vec::new(),
        why: check.why.to_string(),
        fix: Vec::new(),
    }
}

/// Whether `check` is selected by `pattern`: [`matches`] on its id, or the name of its
/// group (`placement` selects `irq.*`, `tasks.*`, `cpu.*` ...).
pub fn selects(pattern: &str, check: &Check) -> bool {
    matches(pattern, check.id) || pattern.trim() == check.group.name()
}

/// A bad `--only` / `--skip` pattern.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("no audit check matches '{pattern}'; `rtlab audit --list` shows the check ids")]
pub struct UnknownCheck {
    /// The pattern that matched nothing.
    pub pattern: String,
}

/// Whether `id` matches `pattern`: the id itself, its group (`kconfig` or `kconfig.*`), or a
/// prefix ending in `*` (`cmdline.rcu*`).
pub fn matches(pattern: &str, id: &str) -> bool {
    let pattern = pattern.trim();
    if let Some(prefix) = pattern.strip_suffix('*') {
        return id.starts_with(prefix);
    }
    id == pattern
        || id
            .strip_prefix(pattern)
            .is_some_and(|rest| rest.starts_with('.'))
}

/// The checks of `all` kept by `only` (empty: all) and not removed by `skip`, in order.
/// Every pattern must match at least one check.
pub fn select(
    all: &[&'static Check],
    only: &[String],
    skip: &[String],
) -> Result<Vec<&'static Check>, UnknownCheck> {
    for pattern in only.iter().chain(skip) {
        if !all.iter().any(|c| selects(pattern, c)) {
            return Err(UnknownCheck {
                pattern: pattern.clone(),
            });
        }
    }
    Ok(all
        .iter()
        .filter(|c| only.is_empty() || only.iter().any(|p| selects(p, c)))
        .filter(|c| !skip.iter().any(|p| selects(p, c)))
        .copied()
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(id: &'static str, severity: Severity) -> Check {
        Check {
            id,
            title: "t",
            group: Group::Kernel,
            severity,
            why: "w",
            run: |_| Outcome::pass("ok"),
        }
    }

    #[test]
    fn patterns_match_ids_groups_and_prefixes() {
        assert!(matches("kconfig.hz", "kconfig.hz"));
        assert!(matches("kconfig", "kconfig.hz"));
        assert!(matches("kconfig.*", "kconfig.hz"));
        assert!(matches("kconfig.h*", "kconfig.hz"));
        assert!(!matches("kconfig.h", "kconfig.hz"));
        assert!(!matches("kconf", "kconfig.hz"));
    }

    #[test]
    fn selection_keeps_order_and_rejects_unknown_patterns() {
        let all: Vec<&'static Check> = vec![
            Box::leak(Box::new(check("a.x", Severity::Warn))),
            Box::leak(Box::new(check("a.y", Severity::Warn))),
            Box::leak(Box::new(check("b.z", Severity::Fail))),
        ];
        let ids = |v: Vec<&Check>| v.iter().map(|c| c.id).collect::<Vec<_>>();
        assert_eq!(ids(select(&all, &[], &[]).unwrap()), ["a.x", "a.y", "b.z"]);
        assert_eq!(
            ids(select(&all, &["a".into()], &["a.y".into()]).unwrap()),
            ["a.x"]
        );
        // The group name selects every check of the group (all are Kernel here).
        assert_eq!(ids(select(&all, &["kernel".into()], &[]).unwrap()).len(), 3);
        assert_eq!(
            select(&all, &["c".into()], &[]).unwrap_err().pattern,
            "c".to_string()
        );
    }

    #[test]
    fn outcomes_become_findings_with_status_from_severity() {
        let c = check("a.x", Severity::Fail);
        let f = Outcome::problem("bad").fix_boot("x=1").into_finding(&c);
        assert_eq!((f.status, f.severity), (Status::Fail, Severity::Fail));
        let f = Outcome::problem("bad")
            .with_severity(Severity::Info)
            .into_finding(&c);
        assert_eq!((f.status, f.severity), (Status::Warn, Severity::Info));
        let f = Outcome::warn("meh").into_finding(&c);
        assert_eq!(f.status, Status::Warn);
        // A pass carries no fix even if one was attached.
        let f = Outcome::pass("fine").fix_boot("x=1").into_finding(&c);
        assert!(f.fix.is_empty());
        assert_eq!(
            Outcome::unknown("r").into_finding(&c).status,
            Status::Unknown
        );
    }
}
