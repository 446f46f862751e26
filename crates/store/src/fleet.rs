//! What a fleet server shows first: one line per host (how many runs, how many did not
//! complete, the worst latency maximum ever stored), the runs that matter per host (its newest,
//! its newest and oldest latency runs, its newest labelled `baseline`, its newest audited) and
//! the audit summaries of chosen runs. Figures come from the raw all-CPU
//! accumulators inside the database and the runs are picked by window functions, so the
//! overview costs a few queries whatever the number of hosts and runs, and decodes the
//! histograms of the picked runs only.

use std::collections::BTreeMap;

use model::audit::AuditSummary;
use serde::Serialize;

use crate::db::Arg;
use crate::error::StoreError;
use crate::id::RunId;
use crate::schema::{ALL_CPUS, KIND_MEASURE};
use crate::store::Store;

/// One host of the fleet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HostRow {
    /// The hostname its runs recorded.
    pub hostname: String,
    /// Runs stored (every kind).
    pub runs: u64,
    /// Runs that did not complete (interrupted, stopped by `--break`, still running).
    pub not_complete: u64,
    /// The worst wake-up latency maximum over its latency runs (noise runs and OS-noise
    /// imports aside), ns; `None` without one.
    pub worst_max_ns: Option<u64>,
    /// Its newest run's start.
    pub last_started_at: String,
}

/// The runs of one host that the fleet overview shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostPicks {
    /// Its newest run of any kind.
    pub newest: Option<RunId>,
    /// Its newest latency run.
    pub newest_latency: Option<RunId>,
    /// Its oldest latency run that completed (a run stopped early is nobody's baseline).
    pub oldest_latency: Option<RunId>,
    /// Its newest latency run labelled `baseline` (any case) that completed.
    pub baseline: Option<RunId>,
    /// Its newest run with an audit summary.
    pub audited: Option<RunId>,
}

impl Store {
    /// Per host, the runs the fleet overview shows, in one query.
    pub fn fleet_picks(&self) -> Result<BTreeMap<String, HostPicks>, StoreError> {
        let d = self.db.dialect();
        let order = "t.started_at DESC, t.o DESC";
        let sql = format!(
            "SELECT hostname, id,
                    CASE WHEN newest = 1 THEN 1 ELSE 0 END,
                    CASE WHEN is_lat = 1 AND newest_kind = 1 THEN 1 ELSE 0 END,
                    CASE WHEN is_ref = 1 AND oldest_ref = 1 THEN 1 ELSE 0 END,
                    CASE WHEN is_ref = 1 AND is_base = 1 AND newest_base = 1 THEN 1 ELSE 0 END,
                    CASE WHEN audited = 1 AND newest_audit = 1 THEN 1 ELSE 0 END
             FROM (SELECT t.hostname, t.id, t.is_lat, t.is_ref, t.is_base, t.audited,
                     ROW_NUMBER() OVER (PARTITION BY t.hostname ORDER BY {order}) AS newest,
                     ROW_NUMBER() OVER (PARTITION BY t.hostname, t.is_lat ORDER BY {order})
                         AS newest_kind,
                     ROW_NUMBER() OVER (PARTITION BY t.hostname, t.is_ref
                                        ORDER BY t.started_at ASC, t.o ASC) AS oldest_ref,
                     ROW_NUMBER() OVER (PARTITION BY t.hostname, t.is_ref, t.is_base
                                        ORDER BY {order}) AS newest_base,
                     ROW_NUMBER() OVER (PARTITION BY t.hostname, t.audited ORDER BY {order})
                         AS newest_audit
                   FROM (SELECT r.hostname, r.id, r.started_at, {saved} AS o,
                           CASE WHEN {latency} THEN 1 ELSE 0 END AS is_lat,
                           CASE WHEN {latency} AND r.status = 'complete' THEN 1 ELSE 0 END
                               AS is_ref,
                           CASE WHEN lower(coalesce(r.label, '')) = 'baseline' THEN 1 ELSE 0 END
                               AS is_base,
                           CASE WHEN r.audit_json IS NOT NULL THEN 1 ELSE 0 END AS audited
                         FROM runs r) t) w
             WHERE newest = 1 OR (is_lat = 1 AND newest_kind = 1)
                   OR (is_ref = 1 AND (oldest_ref = 1 OR (is_base = 1 AND newest_base = 1)))
                   OR (audited = 1 AND newest_audit = 1)",
            saved = d.saved_order(),
            latency = latency_condition(d),
        );
        let rows = self.db.query(&sql, &[]).map_err(|e| self.engine_error(e))?;
        let mut picks: BTreeMap<String, HostPicks> = BTreeMap::new();
        for r in rows {
            let bad = |e: crate::db::CellError| self.corrupt("-", "fleet", e.why);
            let host = r.text(0).map_err(bad)?;
            let id = self.stored_id(r.text(1).map_err(bad)?)?;
            let p = picks.entry(host).or_default();
            let flag = |i: usize| r.int(i).map(|v| v == 1).map_err(bad);
            for (i, slot) in [
                (2, &mut p.newest),
                (3, &mut p.newest_latency),
                (4, &mut p.oldest_latency),
                (5, &mut p.baseline),
                (6, &mut p.audited),
            ] {
                if flag(i)? {
                    *slot = Some(id.clone());
                }
            }
        }
        Ok(picks)
    }

    /// The audit summaries of `ids` (runs without one are left out).
    pub fn audits(&self, ids: &[RunId]) -> Result<Vec<(RunId, String, AuditSummary)>, StoreError> {
        let mut out = Vec::new();
        for chunk in ids.chunks(crate::query::MAX_IDS) {
            let marks: Vec<String> = (1..=chunk.len()).map(|n| format!("?{n}")).collect();
            let args: Vec<Arg<'_>> = chunk.iter().map(|id| Arg::Text(id.as_str())).collect();
            let rows = self
                .db
                .query(
                    &format!(
                        "SELECT id, started_at, audit_json FROM runs
                         WHERE audit_json IS NOT NULL AND id IN ({})",
                        marks.join(", ")
                    ),
                    &args,
                )
                .map_err(|e| self.engine_error(e))?;
            for r in rows {
                let bad = |e: crate::db::CellError| self.corrupt("-", "audit_json", e.why);
                let id = self.stored_id(r.text(0).map_err(bad)?)?;
                let summary = self.decode(id.as_str(), "audit_json", &r.text(2).map_err(bad)?)?;
                out.push((id, r.text(1).map_err(bad)?, summary));
            }
        }
        Ok(out)
    }

    /// Every host with runs, by name.
    pub fn hosts(&self) -> Result<Vec<HostRow>, StoreError> {
        let d = self.db.dialect();
        let latency = latency_condition(d);
        let sql = format!(
            "SELECT r.hostname, count(*),
                    sum(CASE WHEN r.status <> 'complete' THEN 1 ELSE 0 END),
                    max(CASE WHEN {latency} AND {count} > 0 THEN {max} END),
                    max(r.started_at)
             FROM runs r LEFT JOIN run_cpus a ON a.run_id = r.id AND a.cpu = ?1
             GROUP BY r.hostname ORDER BY r.hostname",
            count = d.json_int("a.raw_json", "count"),
            max = d.json_int("a.raw_json", "max_ns"),
        );
        let rows = self
            .db
            .query(&sql, &[Arg::Int(ALL_CPUS)])
            .map_err(|e| self.engine_error(e))?;
        rows.into_iter()
            .map(|r| {
                let bad = |e: crate::db::CellError| self.corrupt("-", "hosts", e.why);
                let count = |v: i64| u64::try_from(v).unwrap_or_default();
                Ok(HostRow {
                    hostname: r.text(0).map_err(bad)?,
                    runs: count(r.int(1).map_err(bad)?),
                    not_complete: count(r.opt_int(2).map_err(bad)?.unwrap_or(0)),
                    worst_max_ns: r.opt_int(3).map_err(bad)?.map(count),
                    last_started_at: r.text(4).map_err(bad)?,
                })
            })
            .collect()
    }
}

/// The condition on run `r` of being a wake-up latency run (not noise, not an OS-noise import).
fn latency_condition(d: crate::db::Dialect) -> String {
    format!(
        "r.kind = '{KIND_MEASURE}' AND coalesce({}, '') <> 'os-noise'",
        d.json_field("r.import_json", "quantity")
    )
}

#[cfg(test)]
mod tests {
    use crate::testdata::{TestStore, realistic, small};

    fn overview(mut store: TestStore) {
        let mut a = small("pi", "6.6-rt", "2026-01-01T00:00:00Z", &[2_000, 9_000]);
        a.status = model::measure::RunStatus::Interrupted;
        a.audit = None;
        let a_id = store.save_measure(&a, None, None).unwrap();
        let mut b = small("pi", "6.6-rt", "2026-01-02T00:00:00Z", &[3_000]);
        b.audit = None;
        let b_id = store.save_measure(&b, None, None).unwrap();
        store.save_measure(&realistic(), None, None).unwrap();
        let hosts = store.hosts().unwrap();
        let pi = hosts.iter().find(|h| h.hostname == "pi").unwrap();
        assert_eq!((pi.runs, pi.not_complete), (2, 1));
        assert_eq!(pi.worst_max_ns, Some(9_000));
        assert_eq!(pi.last_started_at, "2026-01-02T00:00:00Z");
        let other = hosts.iter().find(|h| h.hostname != "pi").unwrap();
        assert_eq!(other.worst_max_ns, Some(realistic().all.raw.max_ns));
        let picks = store.fleet_picks().unwrap();
        assert_eq!(picks["pi"].audited, None);
        // The oldest run was interrupted: the oldest complete one is the reference.
        assert_eq!(picks["pi"].oldest_latency.as_ref(), Some(&b_id));
        assert_ne!(picks["pi"].oldest_latency.as_ref(), Some(&a_id));
        let audited = picks[&other.hostname].audited.clone().unwrap();
        let audits = store.audits(&[audited]).unwrap();
        assert_eq!(Some(audits[0].2.clone()), realistic().audit);

        // The picks: pi's newest is the 2nd run; its oldest latency run the 1st; a run
        // labelled baseline is picked as such.
        let mut base = small("pi", "6.6-rt", "2026-01-01T12:00:00Z", &[2_500]);
        base.audit = realistic().audit;
        let base_id = store.save_measure(&base, Some("Baseline"), None).unwrap();
        let picks = store.fleet_picks().unwrap();
        let p = &picks["pi"];
        let newest = store
            .list(&crate::Filter {
                host: Some("pi".into()),
                limit: Some(1),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(p.newest.as_ref(), Some(&newest[0].id));
        assert_eq!(p.newest_latency, p.newest);
        assert_eq!(p.baseline.as_ref(), Some(&base_id));
        assert_eq!(p.audited.as_ref(), Some(&base_id));
        assert_ne!(p.oldest_latency, p.newest);
        let audits = store.audits(std::slice::from_ref(&base_id)).unwrap();
        assert_eq!(audits.len(), 1);
        assert_eq!(Some(audits[0].2.clone()), realistic().audit);
        assert_eq!(picks.len(), 2);
    }

    #[test]
    fn hosts_are_summed_up_on_sqlite() {
        overview(TestStore::sqlite().unwrap());
    }

    #[test]
    fn hosts_are_summed_up_on_postgres() {
        if let Some(store) = TestStore::postgres() {
            overview(store);
        }
    }
}
