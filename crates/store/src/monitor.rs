//! `rtlab monitor`'s history in the store: intervals (one row per host and start, an interval
//! measured in two parts merged into one) and incidents (one row each, replaced as its burst
//! grows), read back by host and time, and pruned by age. The figures are the documents of
//! `model::monitor`, stored as JSON; the columns beside them are what is selected and ordered.
//! Every interval written also writes its narrow point and its day's summary ([`compact`]),
//! which the long-term views read.

mod compact;

use model::monitor::{HistoryDoc, Incident, Interval};

pub use compact::MAX_HISTORY_ROWS;
use compact::{Touched, int};

use crate::db::{Arg, DbError, Row};
use crate::error::StoreError;
use crate::store::Store;

impl Store {
    /// Saves an interval; one already stored for the same host and start (the monitor was
    /// restarted within it) is merged with it ([`model::monitor::merge`]), in one transaction.
    pub fn save_interval(&mut self, interval: &Interval) -> Result<(), StoreError> {
        interval.check().map_err(|why| StoreError::Encode {
            column: "monitor_intervals.interval_json",
            why,
        })?;
        let err = |e: DbError| self.engine_error(e);
        let tx = self.db.begin().map_err(err)?;
        let stored = self
            .db
            .query_opt(
                "SELECT interval_json FROM monitor_intervals WHERE host = ?1 AND start_ns = ?2",
                &[Arg::Text(&interval.host), Arg::Int(interval.start_ns)],
            )
            .map_err(err)?;
        let merged = match stored {
            Some(row) => model::monitor::merge(self.interval_of(&row, 0)?, interval),
            None => interval.clone(),
        };
        let json = serde_json::to_string(&merged).map_err(|e| StoreError::Encode {
            column: "monitor_intervals.interval_json",
            why: e.to_string(),
        })?;
        let mut touched = Touched::new();
        self.replace_interval(&merged, &json, &mut touched)
            .and_then(|()| self.roll_up(&touched))
            .map_err(err)?;
        tx.commit().map_err(err)
    }

    /// Writes `interval` (as `json`) in place of the one stored for its host and start, and
    /// its point; notes its day in `touched`.
    fn replace_interval(
        &self,
        interval: &Interval,
        json: &str,
        touched: &mut Touched,
    ) -> Result<(), DbError> {
        self.db.execute(
            "DELETE FROM monitor_intervals WHERE host = ?1 AND start_ns = ?2",
            &[Arg::Text(&interval.host), Arg::Int(interval.start_ns)],
        )?;
        self.db.execute(
            "INSERT INTO monitor_intervals (host, start_ns, length_ns, max_ns, breaches,
                 kernel_release, interval_json, samples, engine, cpus, budget_ns)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            &[
                Arg::Text(&interval.host),
                Arg::Int(interval.start_ns),
                Arg::Int(int(interval.length_ns)),
                Arg::OptInt(interval.max_ns.map(int)),
                Arg::Int(int(interval.breaches)),
                Arg::Text(&interval.kernel_release),
                Arg::Text(json),
                Arg::Int(int(interval.samples)),
                Arg::Text(&interval.engine),
                Arg::Text(&interval.cpus.to_string()),
                Arg::OptInt(interval.budget_ns.map(int)),
            ],
        )?;
        self.keep_point(interval, touched)
    }

    /// Keeps what a board pushed (`rtlab serve`): each interval in place of the one stored
    /// for its host and start (the board merged the parts of an interval before it sent it,
    /// so the same push sent twice is kept once), each incident in place of the one of its
    /// id, all in one transaction. Returns how many intervals and incidents were new or
    /// changed.
    pub fn put_history(&mut self, doc: &HistoryDoc) -> Result<(u64, u64), StoreError> {
        let err = |e: DbError| self.engine_error(e);
        let tx = self.db.begin().map_err(err)?;
        let mut changed = (0, 0);
        let mut touched = Touched::new();
        for interval in &doc.intervals {
            let json = encode("monitor_intervals.interval_json", interval)?;
            let stored = self
                .db
                .query_opt(
                    "SELECT interval_json FROM monitor_intervals WHERE host = ?1 AND start_ns = ?2",
                    &[Arg::Text(&interval.host), Arg::Int(interval.start_ns)],
                )
                .map_err(err)?;
            if stored.and_then(|r| r.text(0).ok()).as_deref() != Some(json.as_str()) {
                self.replace_interval(interval, &json, &mut touched)
                    .map_err(err)?;
                changed.0 += 1;
            }
        }
        self.roll_up(&touched).map_err(err)?;
        for incident in &doc.incidents {
            let json = encode("monitor_incidents.incident_json", incident)?;
            let stored = self
                .db
                .query_opt(
                    "SELECT incident_json FROM monitor_incidents WHERE id = ?1",
                    &[Arg::Text(&incident.id)],
                )
                .map_err(err)?;
            if stored.and_then(|r| r.text(0).ok()).as_deref() != Some(json.as_str()) {
                self.replace_incident(incident, &json).map_err(err)?;
                changed.1 += 1;
            }
        }
        tx.commit().map_err(err)?;
        Ok(changed)
    }

    /// The intervals of `host` that started in `[from_ns, to_ns)`, oldest first, at most
    /// [`MAX_HISTORY_ROWS`].
    pub fn intervals(
        &self,
        host: &str,
        from_ns: i64,
        to_ns: i64,
    ) -> Result<Vec<Interval>, StoreError> {
        let rows = self
            .db
            .query(
                &format!(
                    "SELECT interval_json FROM monitor_intervals
                     WHERE host = ?1 AND start_ns >= ?2 AND start_ns < ?3
                     ORDER BY start_ns LIMIT {MAX_HISTORY_ROWS}"
                ),
                &[Arg::Text(host), Arg::Int(from_ns), Arg::Int(to_ns)],
            )
            .map_err(|e| self.engine_error(e))?;
        rows.iter().map(|r| self.interval_of(r, 0)).collect()
    }

    /// Saves an incident, replacing the stored one of the same id (its burst grew).
    pub fn save_incident(&mut self, incident: &Incident) -> Result<(), StoreError> {
        let json = serde_json::to_string(incident).map_err(|e| StoreError::Encode {
            column: "monitor_incidents.incident_json",
            why: e.to_string(),
        })?;
        let err = |e: DbError| self.engine_error(e);
        let tx = self.db.begin().map_err(err)?;
        self.replace_incident(incident, &json).map_err(err)?;
        tx.commit().map_err(err)
    }

    /// Writes `incident` (as `json`) in place of the one stored under its id.
    fn replace_incident(&self, incident: &Incident, json: &str) -> Result<(), DbError> {
        self.db.execute(
            "DELETE FROM monitor_incidents WHERE id = ?1",
            &[Arg::Text(&incident.id)],
        )?;
        self.db.execute(
            "INSERT INTO monitor_incidents (id, host, start_ns, worst_ns, run_id, incident_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            &[
                Arg::Text(&incident.id),
                Arg::Text(&incident.host),
                Arg::Int(incident.start_ns),
                Arg::Int(int(incident.worst_ns)),
                Arg::OptText(incident.run_id.as_deref()),
                Arg::Text(json),
            ],
        )?;
        Ok(())
    }

    /// The incidents of `host` (every host's when `None`) that began in `[from_ns, to_ns)`,
    /// newest first, at most `limit`.
    pub fn incidents(
        &self,
        host: Option<&str>,
        from_ns: i64,
        to_ns: i64,
        limit: usize,
    ) -> Result<Vec<Incident>, StoreError> {
        let limit = limit.min(MAX_HISTORY_ROWS);
        let rows = self
            .db
            .query(
                &format!(
                    "SELECT incident_json FROM monitor_incidents
                     WHERE (?1 IS NULL OR host = ?1) AND start_ns >= ?2 AND start_ns < ?3
                     ORDER BY start_ns DESC LIMIT {limit}"
                ),
                &[Arg::OptText(host), Arg::Int(from_ns), Arg::Int(to_ns)],
            )
            .map_err(|e| self.engine_error(e))?;
        rows.iter()
            .map(|r| {
                let json = r
                    .text(0)
                    .map_err(|e| self.history_error("an incident", e.why))?;
                serde_json::from_str(&json)
                    .map_err(|e| self.history_error("an incident", &e.to_string()))
            })
            .collect()
    }

    /// Removes `host`'s intervals and incidents that began before `before_ns`; returns how
    /// many of each, and the ids of the runs the removed incidents kept (for the caller to
    /// remove with them).
    pub fn prune_history(
        &mut self,
        host: &str,
        before_ns: i64,
    ) -> Result<(u64, u64, Vec<String>), StoreError> {
        let err = |e: DbError| self.engine_error(e);
        let tx = self.db.begin().map_err(err)?;
        let runs = self
            .db
            .query(
                "SELECT run_id FROM monitor_incidents
                 WHERE host = ?1 AND start_ns < ?2 AND run_id IS NOT NULL",
                &[Arg::Text(host), Arg::Int(before_ns)],
            )
            .map_err(err)?
            .iter()
            .filter_map(|r| r.text(0).ok())
            .collect();
        let intervals = self
            .db
            .execute(
                "DELETE FROM monitor_intervals WHERE host = ?1 AND start_ns < ?2",
                &[Arg::Text(host), Arg::Int(before_ns)],
            )
            .map_err(err)?;
        let incidents = self
            .db
            .execute(
                "DELETE FROM monitor_incidents WHERE host = ?1 AND start_ns < ?2",
                &[Arg::Text(host), Arg::Int(before_ns)],
            )
            .map_err(err)?;
        self.prune_points(host, before_ns).map_err(err)?;
        tx.commit().map_err(err)?;
        Ok((intervals, incidents, runs))
    }

    fn interval_of(&self, row: &Row, i: usize) -> Result<Interval, StoreError> {
        let json = row
            .text(i)
            .map_err(|e| self.history_error("an interval", e.why))?;
        let interval: Interval = serde_json::from_str(&json)
            .map_err(|e| self.history_error("an interval", &e.to_string()))?;
        interval
            .check()
            .map_err(|why| self.history_error("an interval", &why))?;
        Ok(interval)
    }

    fn history_error(&self, what: &str, why: &str) -> StoreError {
        StoreError::History {
            db: self.name.clone(),
            what: what.to_string(),
            why: why.to_string(),
        }
    }
}

/// `value` as the JSON kept in `column`.
fn encode(column: &'static str, value: &impl serde::Serialize) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Encode {
        column,
        why: e.to_string(),
    })
}

#[cfg(test)]
mod tests;
