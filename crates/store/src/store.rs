//! The [`Store`]: saving a measurement in one transaction (once: the same run saved twice is
//! kept once), reading it back with its statistics derived, labelling and removing runs, on
//! either engine.

use model::Nanos;
use model::measure::{self, Aggregate, CpuResult, MeasureRun, RunStatus};
use model::stats::{Accumulator, LatencyStats};
use serde::de::DeserializeOwned;

use crate::db::{Arg, Db, DbError};
use crate::digest::{Encoded, EncodedCpu};
use crate::error::StoreError;
use crate::id::RunId;
use crate::schema::{ALL_CPUS, KIND_MEASURE, KIND_NOISE};

/// How many fresh ids a save tries before giving up.
const ID_ATTEMPTS: usize = 16;

/// The result database: one connection (SQLite or PostgreSQL) and its name for messages.
#[derive(Debug)]
pub struct Store {
    pub(crate) db: Db,
    /// The file's path or the address without its password.
    pub(crate) name: String,
}

/// What a save did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Saved {
    /// The run's id.
    pub id: RunId,
    /// False when the same run was already stored (then `id` is the stored one's).
    pub new: bool,
}

impl Store {
    /// The database as messages name it: the file (`:memory:` for an in-memory store), or
    /// the PostgreSQL address without its password.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether this store is a PostgreSQL database.
    pub fn is_postgres(&self) -> bool {
        self.db.dialect() == crate::db::Dialect::Postgres
    }

    /// An engine error naming this database.
    pub(crate) fn engine_error(&self, source: DbError) -> StoreError {
        StoreError::Engine {
            db: self.name.clone(),
            source,
        }
    }

    /// Saves a measurement with an optional label and session (runs made together, such as
    /// the phases of `rtlab run`), in one transaction: on any error nothing is stored.
    /// An empty label or session is stored as none. Returns the run's id: the stored one when
    /// the same run (the same digest of what is stored, label and session aside) is already
    /// there.
    pub fn save_measure(
        &mut self,
        run: &MeasureRun,
        label: Option<&str>,
        session: Option<&str>,
    ) -> Result<RunId, StoreError> {
        Ok(self.save(run, label, session)?.id)
    }

    /// [`Store::save_measure`], saying whether the run was new. Many writers may save the same
    /// run at once: exactly one stores it, the others get its id with `new: false`.
    pub fn save(
        &mut self,
        run: &MeasureRun,
        label: Option<&str>,
        session: Option<&str>,
    ) -> Result<Saved, StoreError> {
        let encoded = Encoded::of(run)?;
        let first = RunId::from_digest(&encoded.digest);
        self.save_with_ids(
            &encoded,
            label,
            session,
            std::iter::once(first).chain(std::iter::repeat_with(RunId::random)),
        )
    }

    /// Saves `encoded` under the first of `ids` that is free.
    pub(crate) fn save_with_ids(
        &mut self,
        encoded: &Encoded,
        label: Option<&str>,
        session: Option<&str>,
        ids: impl IntoIterator<Item = RunId>,
    ) -> Result<Saved, StoreError> {
        let err = |e: DbError| self.engine_error(e);
        let tx = self.db.begin().map_err(err)?;
        if let Some(id) = self.stored_digest(&encoded.digest)? {
            return Ok(Saved { id, new: false });
        }
        for id in ids.into_iter().take(ID_ATTEMPTS) {
            let taken = self
                .db
                .query_opt(
                    "SELECT 1 FROM runs WHERE id = ?1",
                    &[Arg::Text(id.as_str())],
                )
                .map_err(err)?
                .is_some();
            if taken {
                continue;
            }
            if self.insert_run(&id, encoded, label, session).map_err(err)? == 0 {
                // Another writer stored a row between our look and our insert (PostgreSQL;
                // SQLite's write lock rules this out): the same run, or another under this id.
                if let Some(stored) = self.stored_digest(&encoded.digest)? {
                    drop(tx);
                    return Ok(Saved {
                        id: stored,
                        new: false,
                    });
                }
                continue;
            }
            for cpu in &encoded.cpus {
                self.insert_cpu(&id, cpu).map_err(err)?;
            }
            tx.commit().map_err(err)?;
            return Ok(Saved { id, new: true });
        }
        Err(StoreError::NoFreeId {
            db: self.name.clone(),
        })
    }

    /// Inserts the run's row under `id` unless a row with that id or digest exists (then
    /// nothing is written and 0 is returned). The conflict target is left open on purpose:
    /// concurrent writers of the same run meet on the primary key as often as on the digest.
    fn insert_run(
        &self,
        id: &RunId,
        e: &Encoded,
        label: Option<&str>,
        session: Option<&str>,
    ) -> Result<u64, DbError> {
        self.db.execute(
            "INSERT INTO runs (id, kind, schema, rtlab_version, status, started_at,
                 ended_at, elapsed_ns, hostname, kernel_release, arch, label, session,
                 host_json, params_json, break_json, warnings_json, load_json, audit_json,
                 import_json, trace_json, build_json, noise_json, workload_json, digest,
                 timerlat_json, verdict)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                 ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27)
             ON CONFLICT DO NOTHING",
            &[
                Arg::Text(id.as_str()),
                Arg::Text(e.kind),
                Arg::Text(&e.schema),
                Arg::Text(&e.rtlab_version),
                Arg::Text(&e.status),
                Arg::Text(&e.started_at),
                Arg::Text(&e.ended_at),
                Arg::Int(e.elapsed_ns),
                Arg::Text(&e.hostname),
                Arg::Text(&e.kernel_release),
                Arg::Text(&e.arch),
                Arg::OptText(non_empty(label)),
                Arg::OptText(non_empty(session)),
                Arg::Text(&e.host),
                Arg::Text(&e.params),
                Arg::OptText(e.break_event.as_deref()),
                Arg::Text(&e.warnings),
                Arg::OptText(e.load.as_deref()),
                Arg::OptText(e.audit.as_deref()),
                Arg::OptText(e.import.as_deref()),
                Arg::OptText(e.trace.as_deref()),
                Arg::OptText(e.build.as_deref()),
                Arg::OptText(e.noise.as_deref()),
                Arg::OptText(e.workload.as_deref()),
                Arg::Text(&e.digest),
                Arg::OptText(e.timerlat.as_deref()),
                Arg::Text(e.verdict),
            ],
        )
    }

    fn insert_cpu(&self, id: &RunId, cpu: &EncodedCpu) -> Result<u64, DbError> {
        self.db.execute(
            "INSERT INTO run_cpus (run_id, cpu, tid, raw_json, histogram_json, spikes_json,
                 series_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            &[
                Arg::Text(id.as_str()),
                Arg::Int(cpu.cpu),
                Arg::OptInt(cpu.tid),
                Arg::Text(&cpu.raw),
                Arg::Text(&cpu.histogram),
                Arg::OptText(cpu.spikes.as_deref()),
                Arg::Text(&cpu.series),
            ],
        )
    }

    /// The id of the run stored with `digest`, if any.
    fn stored_digest(&self, digest: &str) -> Result<Option<RunId>, StoreError> {
        let row = self
            .db
            .query_opt(
                "SELECT id FROM runs WHERE digest = ?1",
                &[Arg::Text(digest)],
            )
            .map_err(|e| self.engine_error(e))?;
        row.map(|r| {
            let id = r.text(0).map_err(|e| self.corrupt("-", "id", e.why))?;
            self.stored_id(id)
        })
        .transpose()
    }

    /// Reads a stored measurement back, deriving every CPU's statistics and region counts
    /// from its raw accumulator and histogram.
    pub fn load_measure(&self, id: &RunId) -> Result<MeasureRun, StoreError> {
        let run = id.as_str();
        let row = self
            .db
            .query_opt(
                "SELECT kind, schema, rtlab_version, status, started_at, ended_at, elapsed_ns,
                        host_json, params_json, break_json, warnings_json, load_json, audit_json,
                        import_json, trace_json, build_json, noise_json, workload_json,
                        timerlat_json
                 FROM runs WHERE id = ?1",
                &[Arg::Text(run)],
            )
            .map_err(|e| self.engine_error(e))?
            .ok_or_else(|| StoreError::NotFound {
                db: self.name.clone(),
                spec: id.to_string(),
            })?;
        const COLUMNS: [&str; 19] = [
            "kind",
            "schema",
            "rtlab_version",
            "status",
            "started_at",
            "ended_at",
            "elapsed_ns",
            "host_json",
            "params_json",
            "break_json",
            "warnings_json",
            "load_json",
            "audit_json",
            "import_json",
            "trace_json",
            "build_json",
            "noise_json",
            "workload_json",
            "timerlat_json",
        ];
        let bad = |e: crate::db::CellError| self.corrupt(run, COLUMNS[e.index], e.why);
        let text = |i: usize| row.text(i).map_err(bad);
        let opt = |i: usize| row.opt_text(i).map_err(bad);
        let kind = text(0)?;
        if kind != KIND_MEASURE && kind != KIND_NOISE {
            return Err(StoreError::WrongKind {
                run: id.clone(),
                kind,
            });
        }
        let status = parse_status(&text(3)?)
            .ok_or_else(|| self.corrupt(run, "status", "not a known run status"))?;
        let elapsed_ns = u64::try_from(row.int(6).map_err(bad)?)
            .map_err(|_| self.corrupt(run, "elapsed_ns", "negative"))?;
        let (cpus, all) = self.load_cpus(id)?;
        let mut loaded = MeasureRun {
            schema: text(1)?,
            rtlab_version: text(2)?,
            build: self.decode_opt(run, "build_json", opt(15)?)?,
            status,
            started_at: text(4)?,
            ended_at: text(5)?,
            elapsed_ns: Nanos(elapsed_ns),
            host: self.decode(run, "host_json", &text(7)?)?,
            params: self.decode(run, "params_json", &text(8)?)?,
            cpus,
            all,
            break_event: self.decode_opt(run, "break_json", opt(9)?)?,
            warnings: self.decode(run, "warnings_json", &text(10)?)?,
            load: self.decode_opt(run, "load_json", opt(11)?)?,
            audit: self.decode_opt(run, "audit_json", opt(12)?)?,
            import: self.decode_opt(run, "import_json", opt(13)?)?,
            trace: self.decode_opt(run, "trace_json", opt(14)?)?,
            noise: self.decode_opt(run, "noise_json", opt(16)?)?,
            workload: self.decode_opt(run, "workload_json", opt(17)?)?,
            timerlat: self.decode_opt(run, "timerlat_json", opt(18)?)?,
        };
        // Statistics are derived again on load; those an imported source did not give stay
        // out (import.not_given).
        loaded.as_given();
        Ok(loaded)
    }

    /// The per-CPU results (ascending) and the aggregate of a run.
    fn load_cpus(&self, id: &RunId) -> Result<(Vec<CpuResult>, Aggregate), StoreError> {
        let run = id.as_str();
        let rows = self
            .db
            .query(
                "SELECT cpu, tid, raw_json, histogram_json, spikes_json, series_json
                 FROM run_cpus WHERE run_id = ?1 ORDER BY cpu",
                &[Arg::Text(run)],
            )
            .map_err(|e| self.engine_error(e))?;
        let mut cpus = Vec::with_capacity(rows.len());
        let mut all = None;
        const COLUMNS: [&str; 6] = [
            "cpu",
            "tid",
            "raw_json",
            "histogram_json",
            "spikes_json",
            "series_json",
        ];
        for row in rows {
            let cpu_number = row
                .int(0)
                .map_err(|e| self.corrupt(run, "run_cpus.cpu", e.why))?;
            let at = |column: &str| match cpu_number {
                ALL_CPUS => format!("run_cpus.{column} (all-CPU row)"),
                n => format!("run_cpus.{column} (cpu {n})"),
            };
            let bad = |e: crate::db::CellError| self.corrupt(run, &at(COLUMNS[e.index]), e.why);
            let raw: Accumulator = self.decode(run, &at("raw_json"), &row.text(2).map_err(bad)?)?;
            let histogram = self.decode(run, &at("histogram_json"), &row.text(3).map_err(bad)?)?;
            let series = self.decode(run, &at("series_json"), &row.text(5).map_err(bad)?)?;
            if cpu_number == ALL_CPUS {
                all = Some(Aggregate {
                    stats: LatencyStats::derive(&raw, &histogram),
                    regions: histogram.regions(),
                    raw,
                    histogram,
                    series,
                });
                continue;
            }
            let cpu = u32::try_from(cpu_number)
                .map_err(|_| self.corrupt(run, &at("cpu"), "not a CPU number"))?;
            let tid = row
                .opt_int(1)
                .map_err(bad)?
                .map(u32::try_from)
                .transpose()
                .map_err(|_| self.corrupt(run, &at("tid"), "not a thread id"))?;
            let spikes_text = row
                .opt_text(4)
                .map_err(bad)?
                .ok_or_else(|| self.corrupt(run, &at("spikes_json"), "missing"))?;
            let spikes = self.decode(run, &at("spikes_json"), &spikes_text)?;
            cpus.push(measure::cpu_result(
                cpu, tid, raw, histogram, spikes, series,
            ));
        }
        let all = all.ok_or_else(|| self.corrupt(run, "run_cpus", "the all-CPU row is missing"))?;
        Ok((cpus, all))
    }

    /// Sets (or with `None` or an empty label, clears) a run's label.
    pub fn set_label(&mut self, id: &RunId, label: Option<&str>) -> Result<(), StoreError> {
        let changed = self
            .db
            .execute(
                "UPDATE runs SET label = ?2 WHERE id = ?1",
                &[Arg::Text(id.as_str()), Arg::OptText(non_empty(label))],
            )
            .map_err(|e| self.engine_error(e))?;
        self.found(id, changed)
    }

    /// A stored run's label and session.
    pub fn names(&self, id: &RunId) -> Result<(Option<String>, Option<String>), StoreError> {
        let row = self
            .db
            .query_opt(
                "SELECT label, session FROM runs WHERE id = ?1",
                &[Arg::Text(id.as_str())],
            )
            .map_err(|e| self.engine_error(e))?
            .ok_or_else(|| StoreError::NotFound {
                db: self.name.clone(),
                spec: id.to_string(),
            })?;
        let bad = |e: crate::db::CellError| self.corrupt(id.as_str(), "label", e.why);
        Ok((row.opt_text(0).map_err(bad)?, row.opt_text(1).map_err(bad)?))
    }

    /// Removes a run and everything stored with it.
    pub fn remove(&mut self, id: &RunId) -> Result<(), StoreError> {
        let removed = self
            .db
            .execute("DELETE FROM runs WHERE id = ?1", &[Arg::Text(id.as_str())])
            .map_err(|e| self.engine_error(e))?;
        self.found(id, removed)
    }

    /// How many runs are stored.
    pub fn count(&self) -> Result<u64, StoreError> {
        let n = self
            .db
            .query_opt("SELECT count(*) FROM runs", &[])
            .map_err(|e| self.engine_error(e))?
            .map(|r| r.int(0))
            .transpose()
            .map_err(|e| self.corrupt("-", "count(*)", e.why))?
            .unwrap_or_default();
        Ok(u64::try_from(n).unwrap_or_default())
    }

    fn found(&self, id: &RunId, rows: u64) -> Result<(), StoreError> {
        if rows == 0 {
            return Err(StoreError::NotFound {
                db: self.name.clone(),
                spec: id.to_string(),
            });
        }
        Ok(())
    }

    /// A damaged-column error for `run`.
    pub(crate) fn corrupt(&self, run: &str, column: &str, why: &str) -> StoreError {
        StoreError::Corrupt {
            db: self.name.clone(),
            run: run.to_string(),
            column: column.to_string(),
            why: why.to_string(),
        }
    }

    /// Parses a JSON column, naming the run and column when it does not parse.
    pub(crate) fn decode<T: DeserializeOwned>(
        &self,
        run: &str,
        column: &str,
        text: &str,
    ) -> Result<T, StoreError> {
        serde_json::from_str(text).map_err(|e| self.corrupt(run, column, &e.to_string()))
    }

    fn decode_opt<T: DeserializeOwned>(
        &self,
        run: &str,
        column: &str,
        text: Option<String>,
    ) -> Result<Option<T>, StoreError> {
        text.map(|t| self.decode(run, column, &t)).transpose()
    }
}

/// A run status from its written name (`complete`, `broke-threshold`, ...).
pub(crate) fn parse_status(text: &str) -> Option<RunStatus> {
    serde_json::from_value(serde_json::Value::String(text.to_string())).ok()
}

fn non_empty(text: Option<&str>) -> Option<&str> {
    text.filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests;
