//! What a run says of the machine it ran on — its audit, its warnings, its environment and
//! topology — and, over several runs, what they all share: said once in "The machine", so
//! each run's own section keeps only where it differs (then the difference is the point).

use model::audit::AuditSummary;
use serde::Serialize;

use super::facts::{Fact, TableCtx, fact};

/// A run's (or the runs' shared) machine sections; an empty part is not shown.
#[derive(Serialize, Default, PartialEq, Eq)]
pub(super) struct MachineCtx {
    pub(super) audit: Option<AuditCtx>,
    pub(super) warnings: Vec<Fact>,
    pub(super) environment: Vec<Fact>,
    pub(super) topology: Option<TableCtx>,
}

impl MachineCtx {
    /// Whether nothing is left to show.
    fn is_empty(&self) -> bool {
        self.audit.is_none()
            && self.warnings.is_empty()
            && self.environment.is_empty()
            && self.topology.is_none()
    }
}

#[derive(Serialize, PartialEq, Eq)]
pub(super) struct AuditCtx {
    profile: &'static str,
    rt_cpus: String,
    counts: Vec<Fact>,
    top: Vec<AuditItemCtx>,
}

#[derive(Serialize, PartialEq, Eq)]
struct AuditItemCtx {
    status: &'static str,
    id: String,
    summary: String,
    fix: Option<String>,
}

/// Takes what every run of several has in common out of each, and returns it; `None` for one
/// run, or when the runs share nothing. An audit or topology is shared only when every run's
/// is the same; warnings and environment facts one by one.
pub(super) fn split_shared(runs: &mut [&mut MachineCtx]) -> Option<MachineCtx> {
    let (first, rest) = runs.split_first()?;
    if rest.is_empty() {
        return None;
    }
    let all_same = |part: &dyn Fn(&MachineCtx) -> bool| rest.iter().all(|r| part(r));
    let audit_shared = first.audit.is_some() && all_same(&|r| r.audit == first.audit);
    let topology_shared = first.topology.is_some() && all_same(&|r| r.topology == first.topology);
    let in_all =
        |pick: fn(&MachineCtx) -> &Vec<Fact>, f: &Fact| rest.iter().all(|r| pick(r).contains(f));
    let warnings: Vec<Fact> = first
        .warnings
        .iter()
        .filter(|w| in_all(|m| &m.warnings, w))
        .cloned()
        .collect();
    let environment: Vec<Fact> = first
        .environment
        .iter()
        .filter(|f| in_all(|m| &m.environment, f))
        .cloned()
        .collect();
    let mut shared = MachineCtx {
        audit: None,
        warnings,
        environment,
        topology: None,
    };
    for (i, run) in runs.iter_mut().enumerate() {
        if audit_shared {
            let audit = run.audit.take();
            if i == 0 {
                shared.audit = audit;
            }
        }
        if topology_shared {
            let topology = run.topology.take();
            if i == 0 {
                shared.topology = topology;
            }
        }
        run.warnings.retain(|w| !shared.warnings.contains(w));
        run.environment.retain(|f| !shared.environment.contains(f));
    }
    (!shared.is_empty()).then_some(shared)
}

/// An audit summary as the page shows it.
pub(super) fn audit_ctx(summary: &AuditSummary) -> AuditCtx {
    let c = summary.counts;
    AuditCtx {
        profile: summary.profile.as_str(),
        rt_cpus: if summary.rt_cpus.cpus.is_empty() {
            format!("none set apart ({})", summary.rt_cpus.source)
        } else {
            format!("{} (from {})", summary.rt_cpus.cpus, summary.rt_cpus.source)
        },
        counts: vec![
            fact("fail", c.fail.to_string()),
            fact("warn", c.warn.to_string()),
            fact("info", c.info.to_string()),
            fact("pass", c.pass.to_string()),
            fact("unknown", c.unknown.to_string()),
            fact("error", c.error.to_string()),
        ],
        top: summary
            .top
            .iter()
            .map(|t| AuditItemCtx {
                status: t.status.as_str(),
                id: t.id.clone(),
                summary: t.summary.clone(),
                fix: t.fix.clone(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(warnings: &[&str], env: &[(&str, &str)]) -> MachineCtx {
        MachineCtx {
            audit: None,
            warnings: warnings.iter().map(|w| fact(w, "said")).collect(),
            environment: env.iter().map(|(k, v)| fact(k, *v)).collect(),
            topology: Some(TableCtx {
                head: vec!["CPU".into()],
                rows: vec![vec!["0".into()]],
                foot: Vec::new(),
            }),
        }
    }

    #[test]
    fn what_every_run_shares_is_said_once_and_a_difference_stays_with_its_run() {
        let mut a = machine(
            &["rt-throttling", "not-preempt-rt"],
            &[("Kernel", "6.12"), ("Isolated CPUs", "none")],
        );
        let mut b = machine(
            &["not-preempt-rt"],
            &[("Kernel", "6.12"), ("Isolated CPUs", "1")],
        );
        let shared = split_shared(&mut [&mut a, &mut b]).unwrap();
        assert_eq!(shared.warnings, vec![fact("not-preempt-rt", "said")]);
        assert_eq!(shared.environment, vec![fact("Kernel", "6.12")]);
        assert!(shared.topology.is_some() && a.topology.is_none() && b.topology.is_none());
        assert_eq!(a.warnings, vec![fact("rt-throttling", "said")]);
        assert_eq!(a.environment, vec![fact("Isolated CPUs", "none")]);
        assert_eq!(b.environment, vec![fact("Isolated CPUs", "1")]);
        assert!(b.warnings.is_empty());
    }

    #[test]
    fn one_run_keeps_everything_and_nothing_shared_is_no_section() {
        let mut a = machine(&["x"], &[("Kernel", "6.12")]);
        assert!(split_shared(&mut [&mut a]).is_none());
        assert_eq!(a.warnings.len(), 1);
        let mut a = machine(&["x"], &[("Kernel", "6.12")]);
        let mut b = machine(&["y"], &[("Kernel", "6.18")]);
        b.topology = None;
        assert!(split_shared(&mut [&mut a, &mut b]).is_none());
        assert!(a.topology.is_some());
    }

    #[test]
    fn a_report_over_runs_of_one_machine_says_the_machine_once() {
        use super::super::tests::full_run;
        use super::super::{ReportOptions, ReportRun, html_report};
        let a = full_run();
        let mut b = full_run();
        let page = |a: &model::measure::MeasureRun, b: &model::measure::MeasureRun| {
            let runs = [
                ("idle", "aaaaaaaaaaaa", a),
                ("full load", "bbbbbbbbbbbb", b),
            ];
            let runs: Vec<ReportRun> = runs
                .iter()
                .map(|(name, key, run)| ReportRun {
                    run,
                    name,
                    source: "stored run",
                    key,
                })
                .collect();
            html_report(&runs, &ReportOptions::default()).page
        };
        let same = page(&a, &b);
        assert_eq!(same.matches("<h2>The machine</h2>").count(), 1);
        assert_eq!(same.matches("class=\"audit\"").count(), 1);
        assert_eq!(same.matches("<h3>Environment").count(), 1);
        assert_eq!(same.matches("cpu-not-isolated").count(), 1);
        // A tuned run differs in its isolated CPUs: that stays with each run, said as such.
        b.host.isolated_cpus = model::CpuSet::from_cpus([1]);
        let differs = page(&a, &b);
        assert_eq!(differs.matches("<h2>The machine</h2>").count(), 1);
        assert_eq!(
            differs
                .matches("<h3>Environment where this run differs</h3>")
                .count(),
            2,
            "{differs}"
        );
        assert_eq!(differs.matches("<dt>Kernel release</dt>").count(), 1);
    }
}
