//! What a check is ([`Check`]: fixed description plus a function from [`Ctx`] to
//! [`Outcome`]), the finding it makes of an outcome, and selecting checks by id for
//! `--only` / `--skip`.

use model::audit::{Finding, Group, Severity, Status};

use crate::context::Ctx;
use crate::outcome::{Judged, Outcome};

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

impl Check {
    /// The finding this check makes of `outcome`: the check's description, the outcome's
    /// status (from the check's severity unless the outcome overrides it) and evidence.
    pub fn finding(&self, outcome: Outcome) -> Finding {
        let Judged {
            status,
            severity,
            summary,
            evidence,
            fix,
        } = outcome.judge(self.severity);
        Finding {
            id: self.id.to_string(),
            title: self.title.to_string(),
            group: self.group,
            severity,
            status,
            summary,
            evidence,
            why: self.why.to_string(),
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
        let f = c.finding(Outcome::problem("bad").fix_boot("x=1"));
        assert_eq!((f.status, f.severity), (Status::Fail, Severity::Fail));
        let f = c.finding(Outcome::problem("bad").with_severity(Severity::Info));
        assert_eq!((f.status, f.severity), (Status::Info, Severity::Info));
        let f = c.finding(Outcome::warn("meh"));
        assert_eq!(f.status, Status::Warn);
        let advice = check("a.y", Severity::Info);
        assert_eq!(advice.finding(Outcome::warn("meh")).status, Status::Info);
        // A pass carries no fix even if one was attached.
        let f = c.finding(Outcome::pass("fine").fix_boot("x=1"));
        assert!(f.fix.is_empty());
        assert_eq!(c.finding(Outcome::unknown("r")).status, Status::Unknown);
    }
}
