//! Finding runs: resolving what a person typed for RUN (an id, a unique prefix, `last`) and
//! listing runs with filters, newest first, with a few figures derived from each run's
//! all-CPU aggregate.

use model::gate::Outcome;
use model::measure::RunStatus;
use model::stats::{Accumulator, percentile};
use model::{CpuSet, Histogram, Nanos};
use serde::Serialize;

use crate::db::{Arg, CellError, Dialect, Row};
use crate::error::StoreError;
use crate::id::{MIN_PREFIX, RunId, is_lower_hex};
use crate::schema::{ALL_CPUS, KIND_MEASURE};
use crate::store::{Store, parse_status};

/// What [`Store::list`] keeps. Every field left `None` keeps everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// Hostname, exactly.
    pub host: Option<String>,
    /// Part of the kernel release (`-rt`, `6.1.0`), case-sensitive.
    pub kernel: Option<String>,
    /// Part of the label, ignoring ASCII case.
    pub label: Option<String>,
    /// Run status, exactly (`complete`, `interrupted`, `broke-threshold`, `running`).
    pub status: Option<String>,
    /// Runs started at or after this RFC 3339 UTC date or date-time prefix (`2026-01-12`,
    /// `2026-01-12T11:52`), compared as text with `started_at`.
    pub since: Option<String>,
    /// Runs started at or before this prefix, inclusive of all of it (`2026-01-12` keeps the
    /// whole day).
    pub until: Option<String>,
    /// Runs of this session (the phases of one `rtlab run`), exactly.
    pub session: Option<String>,
    /// At most this many runs (the newest, or the oldest with `oldest_first`).
    pub limit: Option<usize>,
    /// Oldest first instead of newest first.
    pub oldest_first: bool,
    /// Only wake-up latency runs: no noise runs, no OS-noise imports.
    pub latency_only: bool,
    /// Only these runs (at most [`MAX_IDS`]).
    pub ids: Option<Vec<RunId>>,
}

/// The most ids one [`Filter::ids`] may hold (far below both engines' parameter limits).
pub const MAX_IDS: usize = 10_000;

/// One line of `rtlab runs`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunSummary {
    /// The run's id.
    pub id: RunId,
    /// What produced it (`measure`).
    pub kind: String,
    /// Start, RFC 3339 UTC, as the run recorded it.
    pub started_at: String,
    /// Host it ran on.
    pub hostname: String,
    /// Kernel release it ran on.
    pub kernel_release: String,
    /// Label, if any.
    pub label: Option<String>,
    /// How it ended (`complete`, `interrupted`, ...).
    pub status: String,
    /// Session, if any.
    pub session: Option<String>,
    /// Measured CPUs.
    pub cpus: CpuSet,
    /// Measured time.
    pub elapsed_ns: Nanos,
    /// Worst latency over all CPUs (exact, ns); `None` when nothing was measured.
    pub max_ns: Option<u64>,
    /// 99th percentile over all CPUs (ns), derived from the aggregate histogram.
    pub p99_ns: Option<u64>,
    /// 99.99th percentile over all CPUs (ns), derived from the aggregate histogram: the
    /// long-term view's second line, as OSADL draws it.
    pub p9999_ns: Option<u64>,
    /// The load it was measured under (its spec, `cpu:60%`), if any.
    pub load: Option<String>,
    /// Whether its samples are OS noise (an oslat or osnoise import), not wake-up latency.
    pub os_noise: bool,
    /// Whether it was imported from another tool's output (`rtlab import`): then no load
    /// means none was recorded, not that it ran without one.
    pub imported: bool,
    /// The gate's verdict on the run by its own criteria ([`model::gate::judge`]).
    pub verdict: Outcome,
}

/// The run status names, for messages.
const STATUS_NAMES: [RunStatus; 4] = [
    RunStatus::Running,
    RunStatus::Complete,
    RunStatus::Interrupted,
    RunStatus::BrokeThreshold,
];

impl Store {
    /// The run that `spec` names: a whole id, a unique prefix of at least
    /// [`MIN_PREFIX`] characters (case is ignored), or `last` (the newest by start time).
    pub fn resolve(&self, spec: &str) -> Result<RunId, StoreError> {
        let spec = spec.trim();
        if spec.eq_ignore_ascii_case("last") {
            let newest = self
                .db
                .query_opt(
                    &format!(
                        "SELECT r.id FROM runs r ORDER BY r.started_at DESC, {} DESC LIMIT 1",
                        self.db.dialect().saved_order()
                    ),
                    &[],
                )
                .map_err(|e| self.engine_error(e))?
                .ok_or_else(|| StoreError::Empty {
                    db: self.name.clone(),
                })?;
            return self.stored_id(newest.text(0).map_err(|e| self.corrupt("-", "id", e.why))?);
        }
        let prefix = spec.to_ascii_lowercase();
        let not_found = || StoreError::NotFound {
            db: self.name.clone(),
            spec: spec.to_string(),
        };
        if prefix.len() > RunId::LEN || !prefix.bytes().all(is_lower_hex) {
            return Err(not_found());
        }
        if prefix.len() < MIN_PREFIX {
            return Err(StoreError::TooShort {
                spec: spec.to_string(),
            });
        }
        // The prefix is lowercase hexadecimal, so it holds no LIKE wildcard.
        let pattern = format!("{prefix}%");
        let rows = self
            .db
            .query(
                "SELECT id FROM runs WHERE id LIKE ?1 ORDER BY id",
                &[Arg::Text(&pattern)],
            )
            .map_err(|e| self.engine_error(e))?;
        let mut ids = rows
            .into_iter()
            .map(|r| {
                let id = r.text(0).map_err(|e| self.corrupt("-", "id", e.why))?;
                self.stored_id(id)
            })
            .collect::<Result<Vec<_>, _>>()?;
        match ids.len() {
            0 => Err(not_found()),
            1 => Ok(ids.remove(0)),
            _ => Err(StoreError::Ambiguous {
                prefix,
                candidates: ids,
            }),
        }
    }

    /// Runs that pass `filter`, newest first (by start time, then by when they were saved).
    pub fn list(&self, filter: &Filter) -> Result<Vec<RunSummary>, StoreError> {
        let dialect = self.db.dialect();
        let mut sql = format!(
            "SELECT r.id, r.kind, r.started_at, r.hostname, r.kernel_release, r.label,
                    r.status, r.session, r.elapsed_ns, {},
                    a.raw_json, a.histogram_json, {}, {}, r.verdict, {}
             FROM runs r LEFT JOIN run_cpus a ON a.run_id = r.id AND a.cpu = ?1
             WHERE 1 = 1",
            dialect.cpu_list(),
            dialect.json_field("r.load_json", "spec"),
            dialect.json_field("r.import_json", "quantity"),
            dialect.json_int("r.import_json", "resolution_ns"),
        );
        let Some(Clauses { texts, clauses }) = Clauses::of(dialect, filter)? else {
            return Ok(Vec::new());
        };
        for clause in &clauses {
            sql.push_str(clause);
        }
        if filter.latency_only {
            sql.push_str(&format!(
                " AND r.kind = '{KIND_MEASURE}' AND coalesce({}, '') <> 'os-noise'",
                dialect.json_field("r.import_json", "quantity")
            ));
        }
        let order = if filter.oldest_first { "ASC" } else { "DESC" };
        sql.push_str(&format!(
            " ORDER BY r.started_at {order}, {} {order}",
            dialect.saved_order()
        ));
        let limit = filter.limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
        if limit.is_some() {
            sql.push_str(&format!(" LIMIT ?{}", texts.len() + 2));
        }
        let mut args = vec![Arg::Int(ALL_CPUS)];
        args.extend(texts.iter().map(|t| Arg::Text(t)));
        args.extend(limit.map(Arg::Int));
        let rows = self
            .db
            .query(&sql, &args)
            .map_err(|e| self.engine_error(e))?;
        rows.into_iter()
            .map(|row| {
                let row = SummaryRow::read(&row).map_err(|e| {
                    self.corrupt(
                        &row.opt_text(0).ok().flatten().unwrap_or_default(),
                        SummaryRow::COLUMNS[e.index.min(15)],
                        e.why,
                    )
                })?;
                self.summary(row)
            })
            .collect()
    }

    fn summary(&self, row: SummaryRow) -> Result<RunSummary, StoreError> {
        let run = row.id.clone();
        let (raw_text, hist_text) = row
            .raw
            .zip(row.histogram)
            .ok_or_else(|| self.corrupt(&run, "run_cpus", "the all-CPU row is missing"))?;
        let raw: Accumulator = self.decode(&run, "run_cpus.raw_json (all-CPU row)", &raw_text)?;
        let histogram: Histogram =
            self.decode(&run, "run_cpus.histogram_json (all-CPU row)", &hist_text)?;
        let cpus = row
            .cpus
            .unwrap_or_default()
            .split(',')
            .filter(|c| !c.is_empty())
            .map(|c| c.parse::<u32>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| self.corrupt(&run, "run_cpus.cpu", "not a CPU number"))?;
        let elapsed = u64::try_from(row.elapsed_ns)
            .map_err(|_| self.corrupt(&run, "elapsed_ns", "negative"))?;
        let os_noise =
            row.kind == crate::schema::KIND_NOISE || row.quantity.as_deref() == Some("os-noise");
        // An imported run's percentiles at its tool's resolution, as `show` gives them.
        let resolution = row
            .resolution
            .and_then(|r| u64::try_from(r).ok())
            .unwrap_or(1);
        let at_resolution = |v: u64| model::stats::to_resolution(v, resolution);
        let id = self.stored_id(row.id)?;
        let verdict = match row.verdict.as_deref() {
            Some(word) => Outcome::parse(word)
                .ok_or_else(|| self.corrupt(&run, "verdict", "not pass, fail or unjudgeable"))?,
            // Saved before the column (or set back by a migration): judged now.
            None => model::gate::judge(&self.load_measure(&id)?, None).outcome(),
        };
        Ok(RunSummary {
            id,
            kind: row.kind,
            started_at: row.started_at,
            hostname: row.hostname,
            kernel_release: row.kernel_release,
            label: row.label,
            status: row.status,
            session: row.session,
            cpus: CpuSet::from_cpus(cpus),
            elapsed_ns: Nanos(elapsed),
            max_ns: (raw.count > 0).then_some(raw.max_ns),
            p99_ns: percentile(&raw, &histogram, 0.99).map(at_resolution),
            p9999_ns: percentile(&raw, &histogram, 0.9999).map(at_resolution),
            load: row.load,
            os_noise,
            imported: row.quantity.is_some(),
            verdict,
        })
    }

    /// An id read from the database, checked.
    pub(crate) fn stored_id(&self, id: String) -> Result<RunId, StoreError> {
        RunId::parse(&id).ok_or_else(|| self.corrupt(&id, "id", "not a 12-character hex id"))
    }
}

/// The `AND ...` clauses a [`Filter`] adds to [`Store::list`]'s query, and the text
/// arguments they name: each argument's placeholder is its position after `?1` (the
/// all-CPU row).
struct Clauses {
    /// The arguments, in placeholder order from `?2`.
    texts: Vec<String>,
    /// The clauses, each starting with ` AND `.
    clauses: Vec<String>,
}

impl Clauses {
    /// The clauses of `filter`, checked; `None` when it keeps no run (an empty id list).
    fn of(dialect: Dialect, filter: &Filter) -> Result<Option<Clauses>, StoreError> {
        let mut c = Clauses {
            texts: Vec::new(),
            clauses: Vec::new(),
        };
        if let Some(host) = &filter.host {
            c.push(|p| format!(" AND r.hostname = {p}"), host);
        }
        if let Some(kernel) = &filter.kernel {
            c.push(
                |p| format!(" AND {}", dialect.contains("r.kernel_release", p)),
                kernel,
            );
        }
        if let Some(label) = &filter.label {
            c.push(
                |p| {
                    format!(
                        " AND {}",
                        dialect.contains("lower(r.label)", &format!("lower({p})"))
                    )
                },
                label,
            );
        }
        if let Some(status) = &filter.status {
            check_status(status)?;
            c.push(|p| format!(" AND r.status = {p}"), status);
        }
        if let Some(session) = &filter.session {
            c.push(|p| format!(" AND r.session = {p}"), session);
        }
        if let Some(since) = &filter.since {
            c.push(
                |p| format!(" AND r.started_at >= {p}"),
                &check_time("since", since)?,
            );
        }
        if let Some(until) = &filter.until {
            // Both placeholders name the same argument.
            c.push(
                |p| format!(" AND substr(r.started_at, 1, length({p})) <= {p}"),
                &check_time("until", until)?,
            );
        }
        if let Some(ids) = &filter.ids
            && !c.ids(ids)?
        {
            return Ok(None);
        }
        Ok(Some(c))
    }

    /// Adds the clause `clause` makes of the next placeholder, with `value` its argument.
    fn push(&mut self, clause: impl Fn(&str) -> String, value: &str) {
        self.texts.push(value.to_string());
        self.clauses
            .push(clause(&format!("?{}", self.texts.len() + 1)));
    }

    /// Adds `r.id IN (...)` for `ids` (at most [`MAX_IDS`]); `false` when there are none,
    /// so no run passes.
    fn ids(&mut self, ids: &[RunId]) -> Result<bool, StoreError> {
        if ids.len() > MAX_IDS {
            return Err(StoreError::BadFilter {
                field: "ids",
                value: ids.len().to_string(),
                expected: format!("are more than {MAX_IDS} runs at once"),
            });
        }
        if ids.is_empty() {
            return Ok(false);
        }
        let first = self.texts.len() + 2;
        let marks: Vec<String> = (first..first + ids.len())
            .map(|n| format!("?{n}"))
            .collect();
        self.texts
            .extend(ids.iter().map(|id| id.as_str().to_string()));
        self.clauses
            .push(format!(" AND r.id IN ({})", marks.join(", ")));
        Ok(true)
    }
}

/// A `runs` row joined with its aggregate, as [`Store::list`] reads it.
struct SummaryRow {
    id: String,
    kind: String,
    started_at: String,
    hostname: String,
    kernel_release: String,
    label: Option<String>,
    status: String,
    session: Option<String>,
    elapsed_ns: i64,
    cpus: Option<String>,
    raw: Option<String>,
    histogram: Option<String>,
    load: Option<String>,
    quantity: Option<String>,
    verdict: Option<String>,
    /// An imported run's resolution (`import_json.resolution_ns`).
    resolution: Option<i64>,
}

impl SummaryRow {
    /// The columns [`Store::list`] selects, in order, for messages.
    const COLUMNS: [&'static str; 16] = [
        "id",
        "kind",
        "started_at",
        "hostname",
        "kernel_release",
        "label",
        "status",
        "session",
        "elapsed_ns",
        "run_cpus.cpu",
        "run_cpus.raw_json",
        "run_cpus.histogram_json",
        "load_json",
        "import_json",
        "verdict",
        "import_json.resolution_ns",
    ];

    fn read(r: &Row) -> Result<SummaryRow, CellError> {
        Ok(SummaryRow {
            id: r.text(0)?,
            kind: r.text(1)?,
            started_at: r.text(2)?,
            hostname: r.text(3)?,
            kernel_release: r.text(4)?,
            label: r.opt_text(5)?,
            status: r.text(6)?,
            session: r.opt_text(7)?,
            elapsed_ns: r.int(8)?,
            cpus: r.opt_text(9)?,
            raw: r.opt_text(10)?,
            histogram: r.opt_text(11)?,
            load: r.opt_text(12)?,
            quantity: r.opt_text(13)?,
            verdict: r.opt_text(14)?,
            resolution: r.opt_int(15)?,
        })
    }
}

fn check_status(status: &str) -> Result<(), StoreError> {
    if parse_status(status).is_some() {
        return Ok(());
    }
    let names: Vec<&str> = STATUS_NAMES.iter().map(|s| s.as_str()).collect();
    Err(StoreError::BadFilter {
        field: "status",
        value: status.to_string(),
        expected: format!("is not a run status; use one of {}", names.join(", ")),
    })
}

/// A `since`/`until` value checked to be a prefix of an RFC 3339 UTC time as runs record it
/// (`YYYY-MM-DDTHH:MM:SS[.fraction]Z`), at least a year long. A lowercase `t` or a space
/// between date and time is accepted and written as `T`.
fn check_time(field: &'static str, value: &str) -> Result<String, StoreError> {
    const TEMPLATE: &[u8] = b"dddd-dd-ddTdd:dd:dd";
    let text: String = value
        .trim()
        .chars()
        .enumerate()
        .map(|(i, c)| {
            if i == 10 && (c == 't' || c == ' ') {
                'T'
            } else {
                c
            }
        })
        .collect();
    let bytes = text.as_bytes();
    let head_ok = bytes.iter().zip(TEMPLATE).all(|(&b, &t)| match t {
        b'd' => b.is_ascii_digit(),
        _ => b == t,
    });
    let tail = bytes.get(TEMPLATE.len()..).unwrap_or_default();
    let tail_ok = match tail {
        [] => true,
        [b'.', rest @ ..] => {
            let digits = rest.strip_suffix(b"Z").unwrap_or(rest);
            digits.iter().all(u8::is_ascii_digit)
        }
        [b'Z'] => true,
        _ => false,
    };
    if bytes.len() >= 4 && head_ok && tail_ok && in_calendar(&text) {
        return Ok(text);
    }
    Err(StoreError::BadFilter {
        field,
        value: value.to_string(),
        expected: "is not a date; write a UTC date or date and time such as 2026-01-12 or \
                   2026-01-12T11:52 (runs record their start in UTC)"
            .to_string(),
    })
}

/// Whether the fields a time prefix has are a real date and time: month 1 to 12, a day the
/// month has (29 February in leap years only), hour below 24, minute and second below 60
/// (`2026-13-01` matched no run, and `2026-02-30` every run after the 3rd of March).
fn in_calendar(text: &str) -> bool {
    let field = |from: usize, to: usize| text.get(from..to).and_then(|f| f.parse::<u32>().ok());
    let year = field(0, 4).unwrap_or(0);
    if let Some(month) = field(5, 7) {
        if !(1..=12).contains(&month) {
            return false;
        }
        if let Some(day) = field(8, 10) {
            let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
            let days = match month {
                2 if leap => 29,
                2 => 28,
                4 | 6 | 9 | 11 => 30,
                _ => 31,
            };
            if !(1..=days).contains(&day) {
                return false;
            }
        }
    }
    [(11, 13, 24), (14, 16, 60), (17, 19, 60)]
        .iter()
        .all(|&(from, to, limit)| field(from, to).is_none_or(|v| v < limit))
}

#[cfg(test)]
mod tests;
