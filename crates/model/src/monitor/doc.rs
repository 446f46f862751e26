//! A monitor history document as it crosses a boundary: what `rtlab monitor history` and
//! `rtlab monitor incidents --format json` write, what `rtlab monitor --push` sends and what
//! `rtlab serve` takes (`POST /api/v1/monitor`). Read as outside input: bounded in size and
//! rows, every interval and incident checked before anything is kept.

use serde::{Deserialize, Serialize};

use super::{Incident, Interval, MONITOR_SCHEMA};

/// The largest history document read: a day of a 4096-CPU machine's 5-minute intervals fits
/// many times.
pub const MAX_HISTORY_DOC_BYTES: usize = 64 << 20;

/// Most intervals plus incidents one document holds (a year of 5-minute intervals is
/// 105 120).
pub const MAX_HISTORY_DOC_ROWS: usize = 200_000;

/// The longest host name, engine name, kernel release or incident cause kept.
const MAX_NAME: usize = 256;
/// The longest incident cause kept.
const MAX_CAUSE: usize = 4096;

/// `{"schema": "rtlab.monitor/1", "host": ..., "intervals": [...], "incidents": [...]}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryDoc {
    /// Always [`MONITOR_SCHEMA`].
    pub schema: String,
    /// The host the document is about (`every host` for a fleet's incidents); each row names
    /// its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Intervals, oldest first.
    #[serde(default)]
    pub intervals: Vec<Interval>,
    /// Incidents.
    #[serde(default)]
    pub incidents: Vec<Incident>,
}

impl HistoryDoc {
    /// A document of `intervals` and `incidents` about `host`.
    pub fn new(host: &str, intervals: Vec<Interval>, incidents: Vec<Incident>) -> HistoryDoc {
        HistoryDoc {
            schema: MONITOR_SCHEMA.to_string(),
            host: Some(host.to_string()),
            intervals,
            incidents,
        }
    }

    /// The document as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a history document always serializes")
    }

    /// The document as indented JSON, as `rtlab monitor history --format json` prints it.
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("a history document always serializes") + "\n"
    }

    /// Reads a document as outside input; the error is one line naming what is wrong.
    pub fn from_json(text: &str) -> Result<HistoryDoc, String> {
        if text.len() > MAX_HISTORY_DOC_BYTES {
            return Err(format!(
                "the document is larger than {} MiB",
                MAX_HISTORY_DOC_BYTES >> 20
            ));
        }
        let doc: HistoryDoc = serde_json::from_str(text)
            .map_err(|e| format!("not a monitor history document ({MONITOR_SCHEMA}): {e}"))?;
        if doc.schema != MONITOR_SCHEMA {
            return Err(format!(
                "its schema is '{}', not '{MONITOR_SCHEMA}'",
                doc.schema.chars().take(60).collect::<String>()
            ));
        }
        let rows = doc.intervals.len().saturating_add(doc.incidents.len());
        if rows > MAX_HISTORY_DOC_ROWS {
            return Err(format!(
                "it holds {rows} intervals and incidents, more than {MAX_HISTORY_DOC_ROWS}"
            ));
        }
        for (n, i) in doc.intervals.iter().enumerate() {
            i.check_names()
                .and_then(|()| i.check())
                .map_err(|why| format!("interval {n}: {why}"))?;
        }
        for (n, x) in doc.incidents.iter().enumerate() {
            x.check().map_err(|why| format!("incident {n}: {why}"))?;
        }
        Ok(doc)
    }
}

/// A name read from outside: not empty, at most `max` bytes, no control character.
fn check_text(what: &str, text: &str, max: usize, empty_ok: bool) -> Result<(), String> {
    if text.is_empty() && !empty_ok {
        return Err(format!("its {what} is empty"));
    }
    if text.len() > max {
        return Err(format!("its {what} is longer than {max} bytes"));
    }
    if text.chars().any(char::is_control) {
        return Err(format!("its {what} holds a control character"));
    }
    Ok(())
}

impl Interval {
    /// Whether its names (host, engine, kernel release) are within their bounds.
    pub fn check_names(&self) -> Result<(), String> {
        check_text("host", &self.host, MAX_NAME, false)?;
        check_text("engine", &self.engine, MAX_NAME, true)?;
        check_text("kernel release", &self.kernel_release, MAX_NAME, true)?;
        if self.length_ns == 0 {
            return Err("its length is 0".to_string());
        }
        Ok(())
    }
}

impl Incident {
    /// Whether it can be kept: its id is the one its host and start give, its names are
    /// bounded, its end is not before its start, and its run id is a run id.
    pub fn check(&self) -> Result<(), String> {
        check_text("host", &self.host, MAX_NAME, false)?;
        check_text("engine", &self.engine, MAX_NAME, true)?;
        check_text("kernel release", &self.kernel_release, MAX_NAME, true)?;
        check_text("cause", &self.cause, MAX_CAUSE, true)?;
        let id = super::incident_id(&self.host, self.start_ns);
        if self.id != id {
            return Err(format!(
                "its id '{}' is not the one its host and start give ({id})",
                self.id.chars().take(20).collect::<String>()
            ));
        }
        if self.end_ns < self.start_ns {
            return Err("it ends before it starts".to_string());
        }
        if let Some(run) = &self.run_id
            && (run.len() != 12 || !run.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            return Err("its run_id is not a run id (12 hexadecimal digits)".to_string());
        }
        Ok(())
    }
}
