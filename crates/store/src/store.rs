//! The [`Store`]: opening (directories, WAL, busy timeout, migrations, the too-new check),
//! saving a measurement in one transaction, reading it back with its statistics derived,
//! labelling and removing runs.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use model::Nanos;
use model::measure::{self, Aggregate, CpuResult, MeasureRun, RunStatus};
use model::stats::{Accumulator, LatencyStats};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::StoreError;
use crate::id::RunId;
use crate::schema::{ALL_CPUS, KIND_MEASURE, KIND_NOISE, MIGRATIONS, SCHEMA_VERSION};

/// How long an operation waits for another rtlab holding the database's write lock.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// How many fresh ids a save tries before giving up.
const ID_ATTEMPTS: usize = 16;

/// The result database: one SQLite connection and the file it belongs to.
#[derive(Debug)]
pub struct Store {
    pub(crate) conn: Connection,
    pub(crate) path: PathBuf,
}

/// Wraps SQLite errors with the database path.
pub(crate) fn sql_err(path: &Path) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
    move |source| StoreError::Sqlite {
        path: path.to_path_buf(),
        source,
    }
}

impl Store {
    /// Opens the database at `path`, creating it and its missing parent directories, switching
    /// it to WAL, and applying the migrations it lacks. A database whose schema version is
    /// newer than [`SCHEMA_VERSION`] is refused and left untouched.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| StoreError::CreateDir {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        let conn = Connection::open(path).map_err(sql_err(path))?;
        Store::init(conn, path.to_path_buf(), true)
    }

    /// A fresh, empty store in memory (for tests and dry runs).
    pub fn open_in_memory() -> Result<Store, StoreError> {
        let path = PathBuf::from(":memory:");
        let conn = Connection::open_in_memory().map_err(sql_err(&path))?;
        Store::init(conn, path, false)
    }

    fn init(mut conn: Connection, path: PathBuf, wal: bool) -> Result<Store, StoreError> {
        let err = sql_err(&path);
        conn.busy_timeout(BUSY_TIMEOUT).map_err(&err)?;
        if wal {
            set_wal(&conn).map_err(&err)?;
        }
        conn.pragma_update(None, "foreign_keys", true)
            .map_err(&err)?;
        // Take the write lock when a transaction starts, so two rtlab processes wait for each
        // other (busy timeout) instead of failing on a lock upgrade.
        conn.set_transaction_behavior(TransactionBehavior::Immediate);
        let found: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(&err)?;
        if found > SCHEMA_VERSION as i64 {
            return Err(StoreError::TooNew {
                path: path.clone(),
                found,
                supported: SCHEMA_VERSION,
            });
        }
        drop(err);
        let mut store = Store { conn, path };
        store.migrate(found)?;
        Ok(store)
    }

    /// Applies the missing migrations. Another rtlab opening the same new database at the
    /// same moment may migrate it first (rusqlite_migration reads the version before it takes
    /// the write lock); that shows as a failed migration after which the version has moved on,
    /// and is retried from the new version rather than reported.
    fn migrate(&mut self, mut version: i64) -> Result<(), StoreError> {
        loop {
            let Err(source) = MIGRATIONS.to_latest(&mut self.conn) else {
                return Ok(());
            };
            let now = self.schema_version()?;
            if now == SCHEMA_VERSION as i64 {
                return Ok(());
            }
            if now == version {
                return Err(StoreError::Migrate {
                    path: self.path.clone(),
                    source,
                });
            }
            version = now;
        }
    }

    /// The database file (`:memory:` for an in-memory store).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open database (SQLite's `user_version`).
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        self.conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(sql_err(&self.path))
    }

    /// Saves a measurement with an optional label and session (runs made together, such as
    /// the phases of `rtlab run`), in one transaction: on any error nothing is stored.
    /// An empty label or session is stored as none. Returns the new run's id.
    pub fn save_measure(
        &mut self,
        run: &MeasureRun,
        label: Option<&str>,
        session: Option<&str>,
    ) -> Result<RunId, StoreError> {
        self.save_with_ids(run, label, session, std::iter::repeat_with(RunId::random))
    }

    /// [`Store::save_measure`] drawing candidate ids from `ids` (the first free one is used).
    pub(crate) fn save_with_ids(
        &mut self,
        run: &MeasureRun,
        label: Option<&str>,
        session: Option<&str>,
        ids: impl IntoIterator<Item = RunId>,
    ) -> Result<RunId, StoreError> {
        let err = sql_err(&self.path);
        let elapsed = i64::try_from(run.elapsed_ns.get()).map_err(|_| StoreError::Encode {
            column: "elapsed_ns",
            why: format!(
                "{} ns does not fit a signed 64-bit integer",
                run.elapsed_ns.0
            ),
        })?;
        let tx = self.conn.transaction().map_err(&err)?;
        let mut chosen = None;
        for id in ids.into_iter().take(ID_ATTEMPTS) {
            let taken: bool = tx
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?1)",
                    [id.as_str()],
                    |r| r.get(0),
                )
                .map_err(&err)?;
            if !taken {
                chosen = Some(id);
                break;
            }
        }
        let id = chosen.ok_or_else(|| StoreError::NoFreeId {
            path: self.path.clone(),
        })?;
        tx.execute(
            "INSERT INTO runs (id, kind, schema, rtlab_version, status, started_at, ended_at,
                 elapsed_ns, hostname, kernel_release, arch, label, session, host_json,
                 params_json, break_json, warnings_json, load_json, audit_json, import_json,
                 trace_json, build_json, noise_json, workload_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                 ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24)",
            params![
                id.as_str(),
                if run.noise.is_some() {
                    KIND_NOISE
                } else {
                    KIND_MEASURE
                },
                run.schema,
                run.rtlab_version,
                run.status.as_str(),
                run.started_at,
                run.ended_at,
                elapsed,
                run.host.hostname,
                run.host.kernel_release,
                run.host.arch,
                non_empty(label),
                non_empty(session),
                encode("host_json", &run.host)?,
                encode("params_json", &run.params)?,
                encode_opt("break_json", run.break_event.as_ref())?,
                encode("warnings_json", &run.warnings)?,
                encode_opt("load_json", run.load.as_ref())?,
                encode_opt("audit_json", run.audit.as_ref())?,
                encode_opt("import_json", run.import.as_ref())?,
                encode_opt("trace_json", run.trace.as_ref())?,
                encode_opt("build_json", run.build.as_ref())?,
                encode_opt("noise_json", run.noise.as_ref())?,
                encode_opt("workload_json", run.workload.as_ref())?,
            ],
        )
        .map_err(&err)?;
        {
            let mut insert = tx
                .prepare(
                    "INSERT INTO run_cpus (run_id, cpu, tid, raw_json, histogram_json,
                         spikes_json, series_json)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )
                .map_err(&err)?;
            for cpu in &run.cpus {
                insert
                    .execute(params![
                        id.as_str(),
                        i64::from(cpu.cpu),
                        cpu.tid,
                        encode("run_cpus.raw_json", &cpu.raw)?,
                        encode("run_cpus.histogram_json", &cpu.histogram)?,
                        encode("run_cpus.spikes_json", &cpu.spikes)?,
                        encode("run_cpus.series_json", &cpu.series)?,
                    ])
                    .map_err(&err)?;
            }
            insert
                .execute(params![
                    id.as_str(),
                    ALL_CPUS,
                    None::<u32>,
                    encode("run_cpus.raw_json", &run.all.raw)?,
                    encode("run_cpus.histogram_json", &run.all.histogram)?,
                    None::<String>,
                    encode("run_cpus.series_json", &run.all.series)?,
                ])
                .map_err(&err)?;
        }
        tx.commit().map_err(&err)?;
        Ok(id)
    }

    /// Reads a stored measurement back, deriving every CPU's statistics and region counts
    /// from its raw accumulator and histogram.
    pub fn load_measure(&self, id: &RunId) -> Result<MeasureRun, StoreError> {
        let err = sql_err(&self.path);
        let row = self
            .conn
            .query_row(
                "SELECT kind, schema, rtlab_version, status, started_at, ended_at, elapsed_ns,
                        host_json, params_json, break_json, warnings_json, load_json, audit_json,
                        import_json, trace_json, build_json, noise_json, workload_json
                 FROM runs WHERE id = ?1",
                [id.as_str()],
                |r| {
                    Ok(RunRow {
                        kind: r.get(0)?,
                        schema: r.get(1)?,
                        rtlab_version: r.get(2)?,
                        status: r.get(3)?,
                        started_at: r.get(4)?,
                        ended_at: r.get(5)?,
                        elapsed_ns: r.get(6)?,
                        host: r.get(7)?,
                        params: r.get(8)?,
                        break_event: r.get(9)?,
                        warnings: r.get(10)?,
                        load: r.get(11)?,
                        audit: r.get(12)?,
                        import: r.get(13)?,
                        trace: r.get(14)?,
                        build: r.get(15)?,
                        noise: r.get(16)?,
                        workload: r.get(17)?,
                    })
                },
            )
            .optional()
            .map_err(&err)?
            .ok_or_else(|| StoreError::NotFound {
                path: self.path.clone(),
                spec: id.to_string(),
            })?;
        if row.kind != KIND_MEASURE && row.kind != KIND_NOISE {
            return Err(StoreError::WrongKind {
                run: id.clone(),
                kind: row.kind,
            });
        }
        let status = parse_status(&row.status)
            .ok_or_else(|| self.corrupt(id.as_str(), "status", "not a known run status"))?;
        let elapsed_ns = u64::try_from(row.elapsed_ns)
            .map_err(|_| self.corrupt(id.as_str(), "elapsed_ns", "negative"))?;
        let (cpus, all) = self.load_cpus(id)?;
        let mut run = MeasureRun {
            schema: row.schema,
            rtlab_version: row.rtlab_version,
            build: self.decode_opt(id.as_str(), "build_json", row.build)?,
            status,
            started_at: row.started_at,
            ended_at: row.ended_at,
            elapsed_ns: Nanos(elapsed_ns),
            host: self.decode(id.as_str(), "host_json", &row.host)?,
            params: self.decode(id.as_str(), "params_json", &row.params)?,
            cpus,
            all,
            break_event: self.decode_opt(id.as_str(), "break_json", row.break_event)?,
            warnings: self.decode(id.as_str(), "warnings_json", &row.warnings)?,
            load: self.decode_opt(id.as_str(), "load_json", row.load)?,
            audit: self.decode_opt(id.as_str(), "audit_json", row.audit)?,
            import: self.decode_opt(id.as_str(), "import_json", row.import)?,
            trace: self.decode_opt(id.as_str(), "trace_json", row.trace)?,
            noise: self.decode_opt(id.as_str(), "noise_json", row.noise)?,
            workload: self.decode_opt(id.as_str(), "workload_json", row.workload)?,
        };
        // Statistics are derived again on load; those an imported source did not give stay
        // out (import.not_given).
        run.hide_not_given();
        Ok(run)
    }

    /// The per-CPU results (ascending) and the aggregate of a run.
    fn load_cpus(&self, id: &RunId) -> Result<(Vec<CpuResult>, Aggregate), StoreError> {
        let err = sql_err(&self.path);
        let mut stmt = self
            .conn
            .prepare(
                "SELECT cpu, tid, raw_json, histogram_json, spikes_json, series_json
                 FROM run_cpus WHERE run_id = ?1 ORDER BY cpu",
            )
            .map_err(&err)?;
        let rows = stmt
            .query_map([id.as_str()], |r| {
                Ok(CpuRow {
                    cpu: r.get(0)?,
                    tid: r.get(1)?,
                    raw: r.get(2)?,
                    histogram: r.get(3)?,
                    spikes: r.get(4)?,
                    series: r.get(5)?,
                })
            })
            .map_err(&err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(&err)?;
        let run = id.as_str();
        let mut cpus = Vec::with_capacity(rows.len());
        let mut all = None;
        for row in rows {
            let at = |column: &str| match row.cpu {
                ALL_CPUS => format!("run_cpus.{column} (all-CPU row)"),
                n => format!("run_cpus.{column} (cpu {n})"),
            };
            let raw: Accumulator = self.decode(run, &at("raw_json"), &row.raw)?;
            let histogram = self.decode(run, &at("histogram_json"), &row.histogram)?;
            let series = self.decode(run, &at("series_json"), &row.series)?;
            if row.cpu == ALL_CPUS {
                all = Some(Aggregate {
                    stats: LatencyStats::derive(&raw, &histogram),
                    regions: histogram.regions(),
                    raw,
                    histogram,
                    series,
                });
                continue;
            }
            let cpu = u32::try_from(row.cpu)
                .map_err(|_| self.corrupt(run, &at("cpu"), "not a CPU number"))?;
            let tid = row
                .tid
                .map(u32::try_from)
                .transpose()
                .map_err(|_| self.corrupt(run, &at("tid"), "not a thread id"))?;
            let spikes_text = row
                .spikes
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
            .conn
            .execute(
                "UPDATE runs SET label = ?2 WHERE id = ?1",
                params![id.as_str(), non_empty(label)],
            )
            .map_err(sql_err(&self.path))?;
        self.found(id, changed)
    }

    /// Removes a run and everything stored with it.
    pub fn remove(&mut self, id: &RunId) -> Result<(), StoreError> {
        let removed = self
            .conn
            .execute("DELETE FROM runs WHERE id = ?1", [id.as_str()])
            .map_err(sql_err(&self.path))?;
        self.found(id, removed)
    }

    /// How many runs are stored.
    pub fn count(&self) -> Result<u64, StoreError> {
        let n: i64 = self
            .conn
            .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
            .map_err(sql_err(&self.path))?;
        Ok(u64::try_from(n).unwrap_or_default())
    }

    fn found(&self, id: &RunId, rows: usize) -> Result<(), StoreError> {
        if rows == 0 {
            return Err(StoreError::NotFound {
                path: self.path.clone(),
                spec: id.to_string(),
            });
        }
        Ok(())
    }

    /// A damaged-column error for `run`.
    pub(crate) fn corrupt(&self, run: &str, column: &str, why: &str) -> StoreError {
        StoreError::Corrupt {
            path: self.path.clone(),
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

/// A `runs` row as read for [`Store::load_measure`].
struct RunRow {
    kind: String,
    schema: String,
    rtlab_version: String,
    status: String,
    started_at: String,
    ended_at: String,
    elapsed_ns: i64,
    host: String,
    params: String,
    break_event: Option<String>,
    warnings: String,
    load: Option<String>,
    audit: Option<String>,
    import: Option<String>,
    trace: Option<String>,
    build: Option<String>,
    noise: Option<String>,
    workload: Option<String>,
}

/// A `run_cpus` row.
struct CpuRow {
    cpu: i64,
    tid: Option<i64>,
    raw: String,
    histogram: String,
    spikes: Option<String>,
    series: String,
}

/// Switches the database to WAL: readers never block the writer, and a crash mid-write
/// leaves the last commit. The mode is kept in the file, so only the first opening switches;
/// SQLite answers "busy" at once (without its busy handler) when another connection opens the
/// new file at that moment, so that is retried here until [`BUSY_TIMEOUT`].
fn set_wal(conn: &Connection) -> rusqlite::Result<()> {
    let start = Instant::now();
    loop {
        match conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0)) {
            Ok(_) => return Ok(()),
            Err(e)
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && start.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(e),
        }
    }
}

/// A run status from its written name (`complete`, `broke-threshold`, ...).
pub(crate) fn parse_status(text: &str) -> Option<RunStatus> {
    serde_json::from_value(serde_json::Value::String(text.to_string())).ok()
}

fn non_empty(text: Option<&str>) -> Option<&str> {
    text.filter(|t| !t.is_empty())
}

fn encode<T: Serialize + ?Sized>(column: &'static str, value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Encode {
        column,
        why: e.to_string(),
    })
}

fn encode_opt<T: Serialize>(
    column: &'static str,
    value: Option<&T>,
) -> Result<Option<String>, StoreError> {
    value.map(|v| encode(column, v)).transpose()
}

#[cfg(test)]
mod tests;
