//! What a fleet server shows first: one line per host (how many runs, how many did not
//! complete, the worst latency maximum ever stored), and the audit summary of a host's newest
//! audited run. Figures come from the raw all-CPU accumulators inside the database, so the
//! overview does not read every run's histogram.

use model::audit::AuditSummary;
use serde::Serialize;

use crate::db::Arg;
use crate::error::StoreError;
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

impl Store {
    /// Every host with runs, by name.
    pub fn hosts(&self) -> Result<Vec<HostRow>, StoreError> {
        let d = self.db.dialect();
        let latency = format!(
            "r.kind = '{KIND_MEASURE}' AND coalesce({}, '') <> 'os-noise'",
            d.json_field("r.import_json", "quantity")
        );
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

    /// The audit summary recorded with `host`'s newest audited run, with that run's start.
    pub fn last_audit(&self, host: &str) -> Result<Option<(String, AuditSummary)>, StoreError> {
        let row = self
            .db
            .query_opt(
                &format!(
                    "SELECT r.id, r.started_at, r.audit_json FROM runs r
                     WHERE r.hostname = ?1 AND r.audit_json IS NOT NULL
                     ORDER BY r.started_at DESC, {} DESC LIMIT 1",
                    self.db.dialect().saved_order()
                ),
                &[Arg::Text(host)],
            )
            .map_err(|e| self.engine_error(e))?;
        let Some(row) = row else { return Ok(None) };
        let bad = |e: crate::db::CellError| self.corrupt("-", "audit_json", e.why);
        let id = row.text(0).map_err(bad)?;
        let summary = self.decode(&id, "audit_json", &row.text(2).map_err(bad)?)?;
        Ok(Some((row.text(1).map_err(bad)?, summary)))
    }
}

#[cfg(test)]
mod tests {
    use crate::testdata::{TestStore, realistic, small};

    fn overview(mut store: TestStore) {
        let mut a = small("pi", "6.6-rt", "2026-01-01T00:00:00Z", &[2_000, 9_000]);
        a.status = model::measure::RunStatus::Interrupted;
        store.save_measure(&a, None, None).unwrap();
        store
            .save_measure(
                &small("pi", "6.6-rt", "2026-01-02T00:00:00Z", &[3_000]),
                None,
                None,
            )
            .unwrap();
        store.save_measure(&realistic(), None, None).unwrap();
        let hosts = store.hosts().unwrap();
        let pi = hosts.iter().find(|h| h.hostname == "pi").unwrap();
        assert_eq!((pi.runs, pi.not_complete), (2, 1));
        assert_eq!(pi.worst_max_ns, Some(9_000));
        assert_eq!(pi.last_started_at, "2026-01-02T00:00:00Z");
        let other = hosts.iter().find(|h| h.hostname != "pi").unwrap();
        assert_eq!(other.worst_max_ns, Some(realistic().all.raw.max_ns));
        assert!(store.last_audit("pi").unwrap().is_none());
        let (_, audit) = store.last_audit(&other.hostname).unwrap().unwrap();
        assert_eq!(Some(audit), realistic().audit);
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
