//! The fleet as the server shows it first: per host its kernel, RT CPUs, newest run, worst
//! maximum, last audit verdict, and whether its newest latency run regressed against its
//! baseline. Hosts with a regression come first.
//!
//! A host's baseline is its newest run labelled `baseline` (any case), else its oldest latency
//! run. A regression is the newest latency run's maximum or 99th percentile above the
//! baseline's by more than the server's threshold (`--regression`, 20 % by default).

use serde::Serialize;
use std::collections::HashMap;

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
    /// Its newest run (any kind).
    pub last: Option<RunSummary>,
    /// Its newest latency run.
    pub last_latency: Option<RunSummary>,
    /// The run its newest latency run is judged against.
    pub baseline: Option<RunSummary>,
    /// What got worse against the baseline, in words; empty when nothing did.
    pub regressions: Vec<String>,
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

/// The whole fleet, regressions first, then by name: four queries, whatever the number of
/// hosts (the aggregates, the picked runs, their summaries, their audits).
pub(crate) fn fleet(
    store: &mut Store,
    regression_percent: u32,
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
        let regressions = match (&baseline, &last_latency) {
            (Some(b), Some(l)) if b.id != l.id => regressions(b, l, regression_percent),
            _ => Vec::new(),
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
            regressions,
        });
    }
    // Hosts with a regression first (false sorts before true), then by name.
    out.sort_by(|a, b| {
        (a.regressions.is_empty(), &a.hostname).cmp(&(b.regressions.is_empty(), &b.hostname))
    });
    Ok(out)
}

/// What in `last` is worse than in `baseline` by more than `percent`.
fn regressions(baseline: &RunSummary, last: &RunSummary, percent: u32) -> Vec<String> {
    let mut out = Vec::new();
    for (what, b, l) in [
        ("maximum", baseline.max_ns, last.max_ns),
        ("p99", baseline.p99_ns, last.p99_ns),
    ] {
        if let (Some(b), Some(l)) = (b, l)
            && u128::from(l) * 100 > u128::from(b) * u128::from(100 + percent)
        {
            out.push(format!(
                "{what} {} us against {} us in baseline {}",
                report::format_us(l),
                report::format_us(b),
                baseline.id
            ));
        }
    }
    out
}
