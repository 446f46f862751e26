//! The compact layout of a monitor history (store migration 13, issue #49): what the long-term
//! views read, kept apart from the intervals' documents so that a fleet's year fits and reads
//! fast.
//!
//! - `monitor_points`: one narrow row per host and interval (host and setup as numbers, start,
//!   maximum, wake-ups, wake-ups over the budget), kept for the whole history. Its key
//!   is (host, start) and, on PostgreSQL, the key's index carries every other column, so a
//!   host's year is one range of the index read in order (an index-only scan), not a row
//!   fetched from every page of a table the whole fleet writes into. SQLite keeps the table
//!   itself in key order (`WITHOUT ROWID`).
//! - `monitor_hosts`, `monitor_setups`: the names those numbers stand for. A setup is what
//!   splits the drift view (kernel release, engine, CPUs, budget; 0 for no budget) and the
//!   interval's length (`--every`), which is the same for every interval of a setup.
//! - `monitor_days`: per host and UTC day, the intervals, worst maximum, wake-ups over the
//!   budget and newest start, recomputed from the day's points whenever one of them is written
//!   or removed. The fleet's overview of any range reads whole days from it and only the
//!   range's first, partial day from the points.
//!
//! The intervals' documents (`monitor_intervals`) stay as the board's store and the API need
//! them; a server may prune them after a while ([`Store::prune_detail`]) and keep the points.

use std::collections::{BTreeSet, HashMap};

use model::monitor::{HistoryPoint, Interval, MonitorHost};

use crate::db::{Arg, CellError, DbError};
use crate::error::StoreError;
use crate::store::Store;

/// A UTC day, ns.
pub(crate) const DAY_NS: i64 = 86_400_000_000_000;

/// Most intervals or incidents one read returns (a year of 5-minute intervals is 105 120).
pub const MAX_HISTORY_ROWS: usize = 1 << 20;

/// The UTC day (days since 1970-01-01, earlier days negative) an instant falls in.
pub(crate) fn day_of(ns: i64) -> i64 {
    ns.div_euclid(DAY_NS)
}

/// The instant a day starts (saturating at the ends of time).
fn day_start(day: i64) -> i64 {
    day.saturating_mul(DAY_NS)
}

/// A count as a database integer (saturating: no figure of a real interval comes near 2^63).
pub(crate) fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A database integer as a count (a negative one, which the store never writes, as 0).
fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// The days (host number, day) that writes touched, to be rolled up once each.
pub(crate) type Touched = BTreeSet<(i64, i64)>;

impl Store {
    /// The number `name` has in `monitor_hosts`, given one first when `create`.
    fn host_number(&self, name: &str, create: bool) -> Result<Option<i64>, DbError> {
        let find = || {
            self.db
                .query_opt(
                    "SELECT id FROM monitor_hosts WHERE name = ?1",
                    &[Arg::Text(name)],
                )
                .map(|row| row.and_then(|r| r.int(0).ok()))
        };
        if let Some(id) = find()? {
            return Ok(Some(id));
        }
        if !create {
            return Ok(None);
        }
        self.db.execute(
            "INSERT INTO monitor_hosts (name) VALUES (?1) ON CONFLICT (name) DO NOTHING",
            &[Arg::Text(name)],
        )?;
        find()
    }

    /// The number of an interval's setup in `monitor_setups`, given one first if new.
    fn setup_number(&self, interval: &Interval) -> Result<i64, DbError> {
        let cpus = interval.cpus.to_string();
        let budget = int(interval.budget_ns.unwrap_or(0));
        let args = [
            Arg::Text(&interval.kernel_release),
            Arg::Text(&interval.engine),
            Arg::Text(&cpus),
            Arg::Int(budget),
            Arg::Int(int(interval.length_ns)),
        ];
        let find = || {
            self.db
                .query_opt(
                    "SELECT id FROM monitor_setups WHERE kernel_release = ?1 AND engine = ?2
                         AND cpus = ?3 AND budget_ns = ?4 AND length_ns = ?5",
                    &args,
                )
                .map(|row| row.and_then(|r| r.int(0).ok()))
        };
        if let Some(id) = find()? {
            return Ok(id);
        }
        self.db.execute(
            "INSERT INTO monitor_setups (kernel_release, engine, cpus, budget_ns, length_ns)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (kernel_release, engine, cpus, budget_ns, length_ns) DO NOTHING",
            &args,
        )?;
        find()?.ok_or(DbError::Type {
            index: 0,
            why: "a setup just written cannot be read back".to_string(),
        })
    }

    /// Writes `interval`'s point in place of the one of its host and start, and notes its
    /// day in `touched` for [`Store::roll_up`].
    pub(crate) fn keep_point(
        &self,
        interval: &Interval,
        touched: &mut Touched,
    ) -> Result<(), DbError> {
        let host = self
            .host_number(&interval.host, true)?
            .ok_or(DbError::Type {
                index: 0,
                why: "a host just written cannot be read back".to_string(),
            })?;
        let setup = self.setup_number(interval)?;
        self.db.execute(
            "INSERT INTO monitor_points (host_id, start_ns, setup_id, max_ns, samples, breaches)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (host_id, start_ns) DO UPDATE SET setup_id = excluded.setup_id,
                 max_ns = excluded.max_ns, samples = excluded.samples,
                 breaches = excluded.breaches",
            &[
                Arg::Int(host),
                Arg::Int(interval.start_ns),
                Arg::Int(setup),
                Arg::OptInt(interval.max_ns.map(int)),
                Arg::Int(int(interval.samples)),
                Arg::Int(int(interval.breaches)),
            ],
        )?;
        touched.insert((host, day_of(interval.start_ns)));
        Ok(())
    }

    /// Recomputes each touched day's summary from its points (none left: no summary).
    pub(crate) fn roll_up(&self, touched: &Touched) -> Result<(), DbError> {
        for &(host, day) in touched {
            self.db.execute(
                "DELETE FROM monitor_days WHERE host_id = ?1 AND day = ?2",
                &[Arg::Int(host), Arg::Int(day)],
            )?;
            self.db.execute(
                "INSERT INTO monitor_days (host_id, day, intervals, worst_ns, breaches, last_ns)
                 SELECT host_id, ?2, COUNT(*), MAX(max_ns), CAST(SUM(breaches) AS BIGINT),
                     MAX(start_ns)
                 FROM monitor_points WHERE host_id = ?1 AND start_ns >= ?3 AND start_ns < ?4
                 GROUP BY host_id",
                &[
                    Arg::Int(host),
                    Arg::Int(day),
                    Arg::Int(day_start(day)),
                    Arg::Int(day_start(day.saturating_add(1))),
                ],
            )?;
        }
        Ok(())
    }

    /// Removes `host`'s points that began before `before_ns` and the days they leave empty,
    /// and rolls up the day the cut falls in.
    pub(crate) fn prune_points(&self, host: &str, before_ns: i64) -> Result<(), DbError> {
        let Some(id) = self.host_number(host, false)? else {
            return Ok(());
        };
        self.db.execute(
            "DELETE FROM monitor_points WHERE host_id = ?1 AND start_ns < ?2",
            &[Arg::Int(id), Arg::Int(before_ns)],
        )?;
        let cut = day_of(before_ns);
        self.db.execute(
            "DELETE FROM monitor_days WHERE host_id = ?1 AND day < ?2",
            &[Arg::Int(id), Arg::Int(cut)],
        )?;
        self.roll_up(&Touched::from([(id, cut)]))
    }

    /// Removes the intervals' documents (not their points) that began before `before_ns`, of
    /// `host` or of every host: a server keeps the full documents for a recent window and the
    /// long-term views' figures for the whole history. Returns how many were removed.
    pub fn prune_detail(&mut self, host: Option<&str>, before_ns: i64) -> Result<u64, StoreError> {
        let removed = match host {
            Some(host) => self.db.execute(
                "DELETE FROM monitor_intervals WHERE host = ?1 AND start_ns < ?2",
                &[Arg::Text(host), Arg::Int(before_ns)],
            ),
            None => self.db.execute(
                "DELETE FROM monitor_intervals WHERE start_ns < ?1",
                &[Arg::Int(before_ns)],
            ),
        };
        removed.map_err(|e| self.engine_error(e))
    }

    /// The long-term view's figures of `host`'s intervals that started in `[from_ns, to_ns)`,
    /// oldest first, at most [`MAX_HISTORY_ROWS`]: one range of the points' key.
    pub fn history_points(
        &self,
        host: &str,
        from_ns: i64,
        to_ns: i64,
    ) -> Result<Vec<HistoryPoint>, StoreError> {
        let err = |e: DbError| self.engine_error(e);
        let Some(id) = self.host_number(host, false).map_err(err)? else {
            return Ok(Vec::new());
        };
        let bad = |e: CellError| self.history_error("an interval", e.why);
        let mut setups = HashMap::new();
        for r in self
            .db
            .query(
                "SELECT id, kernel_release, engine, cpus, budget_ns, length_ns FROM monitor_setups",
                &[],
            )
            .map_err(err)?
        {
            let budget = r.int(4).map_err(bad)?;
            let setup = (
                r.text(1).map_err(bad)?,
                r.text(2).map_err(bad)?,
                r.text(3).map_err(bad)?,
                (budget > 0).then_some(count(budget)),
                count(r.int(5).map_err(bad)?),
            );
            setups.insert(r.int(0).map_err(bad)?, setup);
        }
        let rows = self
            .db
            .query(
                &format!(
                    "SELECT start_ns, max_ns, samples, breaches, setup_id FROM monitor_points
                     WHERE host_id = ?1 AND start_ns >= ?2 AND start_ns < ?3
                     ORDER BY host_id, start_ns LIMIT {MAX_HISTORY_ROWS}"
                ),
                &[Arg::Int(id), Arg::Int(from_ns), Arg::Int(to_ns)],
            )
            .map_err(err)?;
        rows.iter()
            .map(|r| {
                let (kernel_release, engine, cpus, budget_ns, length_ns) = setups
                    .get(&r.int(4).map_err(bad)?)
                    .cloned()
                    .ok_or_else(|| self.history_error("an interval", "its setup is missing"))?;
                Ok(HistoryPoint {
                    start_ns: r.int(0).map_err(bad)?,
                    length_ns,
                    max_ns: r.opt_int(1).map_err(bad)?.map(count),
                    samples: count(r.int(2).map_err(bad)?),
                    breaches: count(r.int(3).map_err(bad)?),
                    kernel_release,
                    engine,
                    cpus,
                    budget_ns,
                })
            })
            .collect()
    }

    /// Each host with intervals that started at or after `since_ns`: its newest start, how
    /// many intervals, its worst maximum, its wake-ups over the budget, and its incidents in
    /// that time; by name. Whole days come from their summaries, the partial first day from
    /// its points.
    pub fn monitor_overview(&self, since_ns: i64) -> Result<Vec<MonitorHost>, StoreError> {
        let err = |e: DbError| self.engine_error(e);
        let first_whole = day_of(since_ns.saturating_add(DAY_NS - 1));
        let days = self
            .db
            .query(
                "SELECT h.name, MAX(d.last_ns), CAST(SUM(d.intervals) AS BIGINT), MAX(d.worst_ns),
                     CAST(SUM(d.breaches) AS BIGINT)
                 FROM monitor_days d JOIN monitor_hosts h ON h.id = d.host_id
                 WHERE d.day >= ?1 GROUP BY h.name",
                &[Arg::Int(first_whole)],
            )
            .map_err(err)?;
        let partial = self
            .db
            .query(
                "SELECT h.name, MAX(p.start_ns), COUNT(*), MAX(p.max_ns),
                     CAST(SUM(p.breaches) AS BIGINT)
                 FROM monitor_hosts h JOIN monitor_points p ON p.host_id = h.id
                 WHERE p.start_ns >= ?1 AND p.start_ns < ?2 GROUP BY h.name",
                &[Arg::Int(since_ns), Arg::Int(day_start(first_whole))],
            )
            .map_err(err)?;
        let counted = self
            .db
            .query(
                "SELECT host, COUNT(*) FROM monitor_incidents WHERE start_ns >= ?1 GROUP BY host",
                &[Arg::Int(since_ns)],
            )
            .map_err(err)?;
        let bad = |e: CellError| self.history_error("the host list", e.why);
        let mut hosts: std::collections::BTreeMap<String, MonitorHost> = Default::default();
        for r in days.iter().chain(&partial) {
            let name = r.text(0).map_err(bad)?;
            let add = MonitorHost {
                host: name.clone(),
                last_ns: r.int(1).map_err(bad)?,
                intervals: count(r.int(2).map_err(bad)?),
                worst_ns: r.opt_int(3).map_err(bad)?.map(count),
                breaches: count(r.opt_int(4).map_err(bad)?.unwrap_or(0)),
                incidents: 0,
            };
            match hosts.get_mut(&name) {
                Some(host) => merge_host(host, &add),
                None => {
                    hosts.insert(name, add);
                }
            }
        }
        for r in &counted {
            if let Some(host) = hosts.get_mut(&r.text(0).map_err(bad)?) {
                host.incidents = count(r.int(1).map_err(bad)?);
            }
        }
        Ok(hosts.into_values().collect())
    }

    /// The hosts with a monitor history, each with its latest interval's start, by name.
    pub fn monitored_hosts(&self) -> Result<Vec<(String, i64)>, StoreError> {
        let rows = self
            .db
            .query(
                "SELECT h.name, MAX(d.last_ns)
                 FROM monitor_days d JOIN monitor_hosts h ON h.id = d.host_id
                 GROUP BY h.name ORDER BY h.name",
                &[],
            )
            .map_err(|e| self.engine_error(e))?;
        let bad = |e: CellError| self.history_error("the host list", e.why);
        rows.iter()
            .map(|r| Ok((r.text(0).map_err(bad)?, r.int(1).map_err(bad)?)))
            .collect()
    }
}

/// Adds a part of a host's range (whole days, or the first partial day) to what is summed.
fn merge_host(host: &mut MonitorHost, add: &MonitorHost) {
    host.last_ns = host.last_ns.max(add.last_ns);
    host.intervals = host.intervals.saturating_add(add.intervals);
    host.worst_ns = host.worst_ns.max(add.worst_ns);
    host.breaches = host.breaches.saturating_add(add.breaches);
}
