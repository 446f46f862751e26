//! Findings that restate another finding's failure, so one missing thing fails once.
//!
//! `kernel.preempt_rt` asks whether the running kernel is PREEMPT_RT; `kconfig.preempt_rt`
//! asks whether the kernel config builds one. On a machine audited with its own config (no
//! `--kconfig`), both fail for the one fact that the kernel lacks PREEMPT_RT. The running
//! kernel is what a real-time engineer must change, so `kernel.preempt_rt` keeps the failure
//! and `kconfig.preempt_rt` becomes `info`, naming it and keeping its build advice (which
//! option, the mainline release or patch set). With `--kconfig FILE` the config is judged as
//! the kernel to be built and fails on its own; without `kernel.preempt_rt` in the selection
//! (`--only kconfig`) nothing restates it and `kconfig.preempt_rt` fails as before.

use model::audit::{Finding, Status};

use crate::context::Options;

/// `(kept, restating)`: check ids where a failure of the second restates one of the first.
const RESTATED: &[(&str, &str)] = &[("kernel.preempt_rt", "kconfig.preempt_rt")];

/// Turns each failure that restates another failure into `info`, pointing at the one kept.
pub(crate) fn count_once(findings: &mut [Finding], options: &Options) {
    if options.kconfig.is_some() {
        return;
    }
    for &(kept, restating) in RESTATED {
        let kept_failed = findings
            .iter()
            .any(|f| f.id == kept && f.status == Status::Fail);
        if !kept_failed {
            continue;
        }
        for f in findings
            .iter_mut()
            .filter(|f| f.id == restating && f.status == Status::Fail)
        {
            f.status = Status::Info;
            f.summary = format!(
                "{}; the running kernel's own config, so {kept} counts the failure",
                f.summary
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::audit::{Group, Severity};

    fn finding(id: &str, status: Status) -> Finding {
        Finding {
            id: id.into(),
            title: "t".into(),
            group: Group::Kernel,
            severity: Severity::Fail,
            status,
            summary: "not RT".into(),
            evidence: Vec::new(),
            why: "w".into(),
            fix: Vec::new(),
        }
    }

    #[test]
    fn a_missing_preempt_rt_fails_once() {
        let mut f = vec![
            finding("kernel.preempt_rt", Status::Fail),
            finding("kconfig.preempt_rt", Status::Fail),
        ];
        count_once(&mut f, &Options::default());
        assert_eq!(f[0].status, Status::Fail);
        assert_eq!(f[1].status, Status::Info);
        assert_eq!(
            f[1].summary,
            "not RT; the running kernel's own config, so kernel.preempt_rt counts the failure"
        );
    }

    #[test]
    fn the_config_fails_alone_when_nothing_else_does() {
        // The running kernel is RT (or unknown, or not audited): the config's failure stands.
        for kernel in [Status::Pass, Status::Unknown] {
            let mut f = vec![
                finding("kernel.preempt_rt", kernel),
                finding("kconfig.preempt_rt", Status::Fail),
            ];
            count_once(&mut f, &Options::default());
            assert_eq!(f[1].status, Status::Fail);
        }
        let mut f = vec![finding("kconfig.preempt_rt", Status::Fail)];
        count_once(&mut f, &Options::default());
        assert_eq!(f[0].status, Status::Fail);
    }

    #[test]
    fn a_config_given_with_kconfig_is_judged_on_its_own() {
        let mut f = vec![
            finding("kernel.preempt_rt", Status::Fail),
            finding("kconfig.preempt_rt", Status::Fail),
        ];
        let options = Options {
            kconfig: Some(crate::context::Source {
                text: String::new(),
                path: "next.config".into(),
            }),
            ..Options::default()
        };
        count_once(&mut f, &options);
        assert_eq!(f[1].status, Status::Fail);
    }
}
