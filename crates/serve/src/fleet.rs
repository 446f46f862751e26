//! The fleet as the server shows it first: per host its kernel, RT CPUs, newest run, worst
//! maximum, last audit verdict, and whether its newest latency run regressed against its
//! baseline. Hosts with a regression come first.
//!
//! A host's baseline is its newest run labelled `baseline` (any case), else its oldest latency
//! run. A regression is the newest latency run's maximum or 99th percentile above the
//! baseline's by more than the server's threshold (`--regression`, 20 % by default).

use serde::Serialize;
use store::{Filter, RunSummary, Store, StoreError};

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

/// The whole fleet, regressions first, then by name.
pub(crate) fn fleet(
    store: &mut Store,
    regression_percent: u32,
) -> Result<Vec<FleetHost>, StoreError> {
    let mut out = Vec::new();
    for row in store.hosts()? {
        let host = |extra: Filter| Filter {
            host: Some(row.hostname.clone()),
            limit: Some(1),
            ..extra
        };
        let first = |list: Vec<RunSummary>| list.into_iter().next();
        let last = first(store.list(&host(Filter::default()))?);
        let latency = Filter {
            latency_only: true,
            ..Filter::default()
        };
        let last_latency = first(store.list(&host(latency.clone()))?);
        let labelled = store
            .list(&host(Filter {
                label: Some("baseline".into()),
                limit: None,
                ..latency.clone()
            }))?
            .into_iter()
            .find(|r| {
                r.label
                    .as_deref()
                    .is_some_and(|l| l.eq_ignore_ascii_case("baseline"))
            });
        let baseline = match labelled {
            Some(b) => Some(b),
            None => first(store.list(&host(Filter {
                oldest_first: true,
                ..latency
            }))?),
        };
        let regressions = match (&baseline, &last_latency) {
            (Some(b), Some(l)) if b.id != l.id => regressions(b, l, regression_percent),
            _ => Vec::new(),
        };
        let audit = store
            .last_audit(&row.hostname)?
            .map(|(started_at, a)| AuditLine {
                started_at,
                rt_cpus: a.rt_cpus.cpus.to_string(),
                fail: a.counts.fail,
                warn: a.counts.warn,
                pass: a.counts.pass,
            });
        out.push(FleetHost {
            hostname: row.hostname,
            runs: row.runs,
            not_complete: row.not_complete,
            worst_max_ns: row.worst_max_ns,
            last,
            last_latency,
            baseline,
            regressions,
            audit,
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
