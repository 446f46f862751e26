//! The fleet as the server shows it first: per host its kernel, RT CPUs, newest run and its
//! verdict, worst maximum, last audit, and whether its newest latency run regressed against
//! its baseline. Hosts with a regression come first.
//!
//! A host's baseline is its newest complete run labelled `baseline` (any case), else its
//! oldest complete latency run. Whether the newest latency run regressed is decided by the one
//! regression rule, `rtlab compare --fail-if-worse`'s ([`report::compare::Verdict`]): each
//! CPU's p99.9 and maximum against the baseline's, worse by more than the server's threshold
//! (`--regression`, 20 % by default). A run measured otherwise than its baseline (another
//! interval, another quantity) is not compared: the page says why instead of a percentage.

use serde::Serialize;
use std::collections::HashMap;

use report::compare::Comparison;
use store::{Filter, RunId, RunSummary, Store, StoreError};

/// One host's line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FleetHost {
    /// The hostname.
    pub hostname: String,
    /// Runs stored.
    pub runs: u64,
    /// Runs that did not complete.
    pub not_complete: u64,
    /// The worst latency maximum of all its latency runs, ns.
    pub worst_max_ns: Option<u64>,
    /// Its newest run (any kind), with the gate's verdict on it.
    pub last: Option<RunSummary>,
    /// Its newest latency run.
    pub last_latency: Option<RunSummary>,
    /// The run its newest latency run is judged against.
    pub baseline: Option<RunSummary>,
    /// What got worse against the baseline, in words; empty when nothing did.
    pub regressions: Vec<String>,
    /// Why the newest latency run was not compared with its baseline (measured otherwise),
    /// when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_compared: Option<String>,
    /// The newest audit: when, its RT CPUs, its counts.
    pub audit: Option<AuditLine>,
}

/// A host's newest audit, in short.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AuditLine {
    /// When the run carrying it started.
    pub started_at: String,
    /// The RT CPUs it found, as a CPU list (`2-3`).
    pub rt_cpus: String,
    /// Checks that failed.
    pub fail: u32,
    /// Checks that warned.
    pub warn: u32,
    /// Checks that passed.
    pub pass: u32,
}

/// The whole fleet, regressions first, then by name: four queries whatever the number of
/// hosts (the aggregates, the picked runs, their summaries, their audits), and the two runs
/// of each host whose newest latency run has a baseline, loaded to be compared.
pub(crate) fn fleet(
    store: &mut Store,
    regression_percent: f64,
) -> Result<Vec<FleetHost>, StoreError> {
    let rows = store.hosts()?;
    let picks = store.fleet_picks()?;
    let mut wanted: Vec<RunId> = picks
        .values()
        .flat_map(|p| {
            [&p.newest, &p.newest_latency, &p.oldest_latency, &p.baseline]
                .into_iter()
                .flatten()
                .cloned()
        })
        .collect();
    wanted.sort();
    wanted.dedup();
    let mut summaries: HashMap<RunId, RunSummary> = HashMap::new();
    for chunk in wanted.chunks(store::MAX_IDS) {
        for s in store.list(&Filter {
            ids: Some(chunk.to_vec()),
            limit: None,
            ..Filter::default()
        })? {
            summaries.insert(s.id.clone(), s);
        }
    }
    let audited: Vec<RunId> = picks.values().filter_map(|p| p.audited.clone()).collect();
    let audits: HashMap<RunId, AuditLine> = store
        .audits(&audited)?
        .into_iter()
        .map(|(id, started_at, a)| {
            (
                id,
                AuditLine {
                    started_at,
                    rt_cpus: a.rt_cpus.cpus.to_string(),
                    fail: a.counts.fail,
                    warn: a.counts.warn,
                    pass: a.counts.pass,
                },
            )
        })
        .collect();
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let p = picks.get(&row.hostname).cloned().unwrap_or_default();
        let get = |id: &Option<RunId>| id.as_ref().and_then(|id| summaries.get(id)).cloned();
        let last_latency = get(&p.newest_latency);
        let baseline = get(&p.baseline).or_else(|| get(&p.oldest_latency));
        let against = match (&baseline, &last_latency) {
            (Some(b), Some(l)) if b.id != l.id => {
                against_baseline(store, &b.id, &l.id, regression_percent)?
            }
            _ => Against::default(),
        };
        out.push(FleetHost {
            last: get(&p.newest),
            audit: p.audited.as_ref().and_then(|id| audits.get(id)).cloned(),
            hostname: row.hostname,
            runs: row.runs,
            not_complete: row.not_complete,
            worst_max_ns: row.worst_max_ns,
            last_latency,
            baseline,
            regressions: against.regressions,
            not_compared: against.not_compared,
        });
    }
    // Hosts with a regression first (false sorts before true), then by name.
    out.sort_by(|a, b| {
        (a.regressions.is_empty(), &a.hostname).cmp(&(b.regressions.is_empty(), &b.hostname))
    });
    Ok(out)
}

/// What the newest latency run showed against the baseline.
#[derive(Default)]
struct Against {
    regressions: Vec<String>,
    not_compared: Option<String>,
}

/// The newest latency run `last` against `baseline` by the regression rule of `rtlab compare
/// --fail-if-worse` (the two runs loaded and laid side by side as `compare` does).
fn against_baseline(
    store: &Store,
    baseline: &RunId,
    last: &RunId,
    percent: f64,
) -> Result<Against, StoreError> {
    let (b, l) = (store.load_measure(baseline)?, store.load_measure(last)?);
    let mut comparison =
        Comparison::new(&[(format!("baseline {baseline}"), &b), (last.to_string(), &l)]);
    if !comparison.comparable(1) {
        return Ok(Against {
            regressions: Vec::new(),
            not_compared: Some(comparison.warnings().join("; ")),
        });
    }
    let verdict = comparison.judge(percent);
    Ok(Against {
        regressions: verdict.messages(),
        not_compared: None,
    })
}

/// The fleet for a request that may read: checks the token, then reads the fleet with the
/// server's regression threshold.
pub(crate) async fn for_request(
    state: &std::sync::Arc<crate::AppState>,
    headers: &axum::http::HeaderMap,
) -> Result<Vec<FleetHost>, crate::error::ApiError> {
    crate::auth::authorize(state, headers, crate::auth::Need::Read).await?;
    let percent = state.config.regression_percent;
    state.pool.with(move |s| fleet(s, percent)).await
}

/// A host's audits, newest first, each with what changed against the one before it (oldest
/// first in time): checks newly among the worst findings with their status, checks that left
/// them, and count changes when the findings named are the same.
pub(crate) fn audit_drift(
    mut audits: Vec<(RunId, String, model::audit::AuditSummary)>,
) -> Vec<report::html::fleet::AuditRow> {
    use std::collections::BTreeMap;
    audits.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    let findings = |a: &model::audit::AuditSummary| -> BTreeMap<String, &'static str> {
        a.top
            .iter()
            .map(|i| (i.id.clone(), i.status.as_str()))
            .collect()
    };
    let mut rows = Vec::with_capacity(audits.len());
    let mut before: Option<&model::audit::AuditSummary> = None;
    for (id, started_at, a) in &audits {
        let changes = match before {
            None => "first audit".to_string(),
            Some(b) => {
                let (old, new) = (findings(b), findings(a));
                let mut parts = Vec::new();
                for (check, status) in &new {
                    match old.get(check) {
                        Some(was) if was == status => {}
                        Some(was) => parts.push(format!("{check} {was} → {status}")),
                        None => parts.push(format!("new {status}: {check}")),
                    }
                }
                for (check, was) in &old {
                    if !new.contains_key(check) {
                        parts.push(format!("gone ({was}): {check}"));
                    }
                }
                if parts.is_empty()
                    && (b.counts.fail, b.counts.warn) != (a.counts.fail, a.counts.warn)
                {
                    parts.push(format!(
                        "fail {} → {}, warn {} → {}",
                        b.counts.fail, a.counts.fail, b.counts.warn, a.counts.warn
                    ));
                }
                if b.rt_cpus.cpus != a.rt_cpus.cpus {
                    parts.push(format!("RT CPUs {} → {}", b.rt_cpus.cpus, a.rt_cpus.cpus));
                }
                if parts.is_empty() {
                    "unchanged".to_string()
                } else {
                    parts.join("; ")
                }
            }
        };
        rows.push(report::html::fleet::AuditRow {
            started_at: started_at.clone(),
            run: id.to_string(),
            fail: a.counts.fail,
            warn: a.counts.warn,
            pass: a.counts.pass,
            rt_cpus: a.rt_cpus.cpus.to_string(),
            changes,
        });
        before = Some(a);
    }
    rows.reverse();
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::measure::{MeasureRun, RunStatus};
    use testkit::runs::{cpu, run_of};

    /// A run on `host` started on day `day` of January, CPUs 0 and 1 at `maxima`.
    fn run(host: &str, day: u32, maxima: [u64; 2]) -> MeasureRun {
        let mut r = run_of(vec![
            cpu(0, Some(10), &[5_000, maxima[0]], 0),
            cpu(1, Some(11), &[5_000, maxima[1]], 0),
        ]);
        r.host.hostname = host.into();
        r.started_at = format!("2026-01-{day:02}T08:00:00Z");
        r
    }

    #[test]
    fn regressions_follow_the_rule_of_compare_and_unlike_runs_are_not_compared() {
        let mut store = Store::open_in_memory().unwrap();
        // worse: CPU 1's maximum 30% worse than the baseline's, over a 20% limit; the oldest
        // run was interrupted and is nobody's baseline.
        let mut stopped = run("worse", 1, [1_000, 1_000]);
        stopped.status = RunStatus::Interrupted;
        store.save_measure(&stopped, None, None).unwrap();
        let base = run("worse", 2, [20_000, 20_000]);
        let base_id = store.save_measure(&base, None, None).unwrap();
        let later = run("worse", 3, [21_000, 26_000]);
        store.save_measure(&later, None, None).unwrap();
        // alike: 20% worse exactly, at the limit, passes.
        store
            .save_measure(&run("alike", 1, [10_000, 10_000]), None, None)
            .unwrap();
        store
            .save_measure(&run("alike", 2, [12_000, 12_000]), None, None)
            .unwrap();
        // other: measured at another interval: no percentage, a reason.
        store
            .save_measure(&run("other", 1, [10_000, 10_000]), None, None)
            .unwrap();
        let mut fast = run("other", 2, [90_000, 90_000]);
        fast.params.interval_ns = model::Nanos::from_us(200);
        store.save_measure(&fast, None, None).unwrap();

        let fleet = fleet(&mut store, 20.0).unwrap();
        let names: Vec<&str> = fleet.iter().map(|h| h.hostname.as_str()).collect();
        assert_eq!(names, ["worse", "alike", "other"], "regressions first");
        let worse = &fleet[0];
        assert_eq!(worse.baseline.as_ref().map(|b| &b.id), Some(&base_id));
        // The same words `rtlab compare --fail-if-worse 20` gives for the two runs.
        let mut compared = Comparison::new(&[
            (format!("baseline {base_id}"), &base),
            (worse.last_latency.as_ref().unwrap().id.to_string(), &later),
        ]);
        assert_eq!(worse.regressions, compared.judge(20.0).messages());
        // Two samples per CPU: its p99.9 is its maximum, and both are judged.
        assert_eq!(worse.regressions.len(), 2, "{:?}", worse.regressions);
        assert!(worse.regressions[1].contains("CPU 1: max 26.0 us is 30.0% worse"));
        assert!(fleet[1].regressions.is_empty() && fleet[1].not_compared.is_none());
        let other = &fleet[2];
        assert!(other.regressions.is_empty());
        let why = other.not_compared.as_deref().unwrap_or_default();
        assert!(why.contains("interval 200us against 1ms"), "{why}");
    }
    use model::audit::{AuditSummary, Status, SummaryItem};

    fn audit(top: &[(&str, Status)], fail: u32) -> AuditSummary {
        let mut a: AuditSummary = serde_json::from_value(serde_json::json!({
            "schema": model::audit::SCHEMA,
            "profile": "production",
            "rt_cpus": {"cpus": "1", "source": "isolcpus"},
            "counts": {"pass": 30, "warn": 0, "info": 0, "fail": 0, "unknown": 0, "error": 0},
            "top": []
        }))
        .unwrap();
        a.counts.fail = fail;
        a.top = top
            .iter()
            .map(|(id, status)| SummaryItem {
                id: id.to_string(),
                status: *status,
                summary: String::new(),
                fix: None,
            })
            .collect();
        a
    }

    #[test]
    fn drift_names_what_changed_between_audits() {
        let id = |t: &str| RunId::parse(t).unwrap();
        let rows = audit_drift(vec![
            (
                id("00000000000c"),
                "2026-01-03T00:00:00Z".into(),
                audit(&[], 0),
            ),
            (
                id("00000000000a"),
                "2026-01-01T00:00:00Z".into(),
                audit(&[("cpu.governor", Status::Warn)], 0),
            ),
            (
                id("00000000000b"),
                "2026-01-02T00:00:00Z".into(),
                audit(
                    &[
                        ("cpu.governor", Status::Fail),
                        ("kernel.preempt_rt", Status::Fail),
                    ],
                    2,
                ),
            ),
        ]);
        let changes: Vec<&str> = rows.iter().map(|r| r.changes.as_str()).collect();
        assert_eq!(
            changes,
            [
                "gone (fail): cpu.governor; gone (fail): kernel.preempt_rt",
                "cpu.governor warn → fail; new fail: kernel.preempt_rt",
                "first audit",
            ]
        );
        assert_eq!(rows[0].run, "00000000000c");
    }
}
