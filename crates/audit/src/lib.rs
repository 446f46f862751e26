//! The real-time readiness audit: checks as data, each reading the machine through a
//! [`Root`](sys::Root) and returning a finding with evidence, the domain reason and the exact
//! fix.
//!
//! - [`check`]: what a check is and what it returns; selecting checks by id.
//! - [`context`]: the inputs the checks share, read once.
//! - [`checks`]: the catalogue, one module per group.
//! - [`kconfig_diff`]: the real-time-relevant differences between two kernel configs.
//! - [`capture`]: copying exactly the files an audit read into a fixture tree.
//! - [`inspect`]: `rtlab inspect PID`, one running program judged the same way.
//!
//! The audit never writes to the machine and never stops at a failing check: a check that
//! cannot read its input reports `unknown`, one that panics reports `error`, and the rest run.

pub mod capture;
pub mod check;
pub mod checks;
pub mod context;
pub mod inspect;
pub mod kconfig_diff;
pub mod outcome;
mod overlap;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

use model::audit::{AuditReport, Counts, Finding, SCHEMA};
use sys::Root;

pub use check::{Check, UnknownCheck};
pub use checks::catalogue;
pub use checks::placement::irq::{Kind as IrqKind, classify as classify_irq};
pub use checks::placement::irqbalance::{
    banned_by_vars as irqbalance_banned, env_file as irqbalance_env_file,
};
pub use context::{Ctx, Options};
pub use outcome::Outcome;

/// Which checks to run: ids, groups or `prefix*` patterns (see [`check::matches`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    /// Run only these (empty: all).
    pub only: Vec<String>,
    /// Skip these.
    pub skip: Vec<String>,
}

/// Why an audit could not run at all.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AuditError {
    /// A selection pattern that matches no check.
    #[error(transparent)]
    UnknownCheck(#[from] UnknownCheck),
    /// No kernel to read under the root: every check would read absence, and some would
    /// pass on it.
    #[error("{0}")]
    NoKernel(String),
}

/// Audits the machine under `root`.
///
/// Errors on a selection pattern that matches no check and on a root with no kernel tree
/// under it; everything else the machine lacks is a finding.
pub fn run(
    root: &Root,
    options: &Options,
    selection: &Selection,
) -> Result<AuditReport, AuditError> {
    let started = Instant::now();
    root.check_kernel_tree().map_err(AuditError::NoKernel)?;
    let catalogue = catalogue();
    let checks = check::select(&catalogue, &selection.only, &selection.skip)?;
    let ctx = Ctx::new(root.clone(), options.clone());
    let mut findings: Vec<Finding> = checks.iter().map(|c| run_one(c, &ctx)).collect();
    findings.sort_by_key(|f| f.group);
    overlap::count_once(&mut findings, options);
    if !root.is_host() {
        for f in &mut findings {
            unroot(f, root);
        }
    }
    let host = ctx.host();
    Ok(AuditReport {
        schema: SCHEMA.to_string(),
        rtlab_version: env!("CARGO_PKG_VERSION").to_string(),
        build: model::build::current().cloned(),
        kernel_release: host.kernel_release.clone(),
        arch: host.arch.clone(),
        profile: options.profile,
        rt_cpus: ctx.rt().clone(),
        elapsed_us: started.elapsed().as_micros() as u64,
        counts: Counts::of(&findings),
        findings,
    })
}

/// Rewrites paths under a fixture root as the kernel paths they stand for, so a captured
/// tree reads like the machine it came from (error texts carry the full path).
fn unroot(finding: &mut Finding, root: &Root) {
    let base = root.base().display().to_string();
    let base = base.trim_end_matches('/');
    if base.is_empty() {
        return;
    }
    let fix = |s: &mut String| {
        if s.contains(base) {
            *s = s.replace(base, "");
        }
    };
    fix(&mut finding.summary);
    for e in &mut finding.evidence {
        fix(&mut e.source);
        fix(&mut e.value);
    }
}

/// Runs one check; a panic becomes an `error` finding instead of ending the audit.
fn run_one(check: &Check, ctx: &Ctx) -> Finding {
    match catch_unwind(AssertUnwindSafe(|| (check.run)(ctx))) {
        Ok(outcome) => check.finding(outcome),
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".to_string());
            check::error_finding(check, &message)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::audit::{Group, Severity, Status};

    #[test]
    fn a_panicking_check_is_an_error_finding() {
        let c = Check {
            id: "x.boom",
            title: "t",
            group: Group::Kernel,
            severity: Severity::Warn,
            why: "w",
            run: |_| panic!("boom"),
        };
        let fake = testkit::FakeRoot::new().cpus(1);
        let ctx = Ctx::new(fake.root(), Options::default());
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let f = run_one(&c, &ctx);
        std::panic::set_hook(prev);
        assert_eq!(f.status, Status::Error);
        assert!(f.summary.contains("boom"), "{}", f.summary);
    }

    #[test]
    fn unknown_selections_are_refused() {
        let fake = testkit::FakeRoot::new().cpus(1);
        let err = run(
            &fake.root(),
            &Options::default(),
            &Selection {
                only: vec!["nope".into()],
                skip: vec![],
            },
        )
        .unwrap_err();
        assert!(err.to_string().contains("'nope'"));
    }
}
