//! One queued run on disk: its format (schema `rtlab.push-queue/1`), its name (from its
//! content, so the same run queued twice for one server is one file), and reading it back as
//! outside input: bounded, every field checked.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::target::Target;

/// The schema id of a queue file.
pub const QUEUE_SCHEMA: &str = "rtlab.push-queue/1";

/// The largest queue file read: the largest result document, escaped as a JSON string (its
/// quotes and newlines take two bytes each), and the envelope.
pub const MAX_QUEUE_FILE: u64 = 2 * model::limits::MAX_RESULT_BYTES + 64 * 1024;

/// The longest label, session, host or start time kept.
const MAX_FIELD: usize = 1024;

/// The longest last error kept.
const MAX_ERROR: usize = 2048;

/// A run waiting to be sent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueuedRun {
    /// Always [`QUEUE_SCHEMA`].
    pub schema: String,
    /// The server's base URL, in normal form.
    pub target: String,
    /// The run's id in the board's own store, when it was saved there (the server gives it
    /// the same one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The host the run was made on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// When the run started (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// The label to upload it with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The session to upload it with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// When it was first queued (RFC 3339 UTC with nanoseconds): the order of sending.
    pub queued_at: String,
    /// Tries made so far.
    pub attempts: u32,
    /// Why the last try failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The result document, exactly as it is uploaded.
    pub document: String,
}

/// What names a run, for the queue's listing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct About {
    /// Its id in the local store.
    pub run_id: Option<String>,
    /// Its host.
    pub host: Option<String>,
    /// Its start.
    pub started_at: Option<String>,
}

impl About {
    /// What names `run`, saved locally as `run_id`.
    pub fn of(run: &model::measure::MeasureRun, run_id: Option<&str>) -> About {
        About {
            run_id: run_id.map(str::to_string),
            host: Some(run.host.hostname.clone()),
            started_at: Some(run.started_at.clone()),
        }
    }
}

impl QueuedRun {
    /// A run queued now for `target`.
    pub fn new(
        target: &Target,
        document: String,
        about: About,
        label: Option<&str>,
        session: Option<&str>,
    ) -> QueuedRun {
        QueuedRun {
            schema: QUEUE_SCHEMA.to_string(),
            target: target.to_string(),
            run_id: about.run_id,
            host: about.host,
            started_at: about.started_at,
            label: label.filter(|l| !l.is_empty()).map(str::to_string),
            session: session.filter(|s| !s.is_empty()).map(str::to_string),
            queued_at: humantime::format_rfc3339_nanos(std::time::SystemTime::now()).to_string(),
            attempts: 0,
            last_error: None,
            document,
        }
    }

    /// The file name: the SHA-256 of the target and the document, in hexadecimal, `.json`.
    pub fn file_name(&self) -> String {
        let mut hash = Sha256::new();
        hash.update(self.target.as_bytes());
        hash.update(b"\n");
        hash.update(self.document.as_bytes());
        let digest = hash.finalize();
        let mut name = String::with_capacity(69);
        for b in digest.iter() {
            name.push_str(&format!("{b:02x}"));
        }
        name.push_str(".json");
        name
    }

    /// The file's text.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string(self).expect("a queued run always serializes");
        text.push('\n');
        text
    }

    /// Reads a queue file's text, checking every field; the error is one line.
    pub fn from_json(text: &str) -> Result<QueuedRun, String> {
        if text.len() as u64 > MAX_QUEUE_FILE {
            return Err(format!("larger than {} MiB", MAX_QUEUE_FILE >> 20));
        }
        let run: QueuedRun =
            serde_json::from_str(text).map_err(|e| format!("not a queue file: {e}"))?;
        run.check()?;
        Ok(run)
    }

    /// The checks [`QueuedRun::from_json`] makes.
    fn check(&self) -> Result<(), String> {
        if self.schema != QUEUE_SCHEMA {
            return Err(format!(
                "its schema is '{}', not '{QUEUE_SCHEMA}'",
                crate::error::one_line(&self.schema)
            ));
        }
        let target = Target::parse(&self.target).map_err(|e| format!("its target: {e}"))?;
        if target.as_str() != self.target {
            return Err("its target is not in normal form".to_string());
        }
        if let Some(id) = &self.run_id
            && (id.is_empty() || id.len() > 64 || !id.bytes().all(|b| b.is_ascii_alphanumeric()))
        {
            return Err("its run_id is not a run id".to_string());
        }
        for (name, value) in [
            ("host", &self.host),
            ("started_at", &self.started_at),
            ("label", &self.label),
            ("session", &self.session),
        ] {
            if value.as_ref().is_some_and(|v| v.len() > MAX_FIELD) {
                return Err(format!("its {name} is longer than {MAX_FIELD} bytes"));
            }
        }
        if self
            .last_error
            .as_ref()
            .is_some_and(|e| e.len() > MAX_ERROR)
        {
            return Err(format!("its last_error is longer than {MAX_ERROR} bytes"));
        }
        humantime::parse_rfc3339(&self.queued_at)
            .map_err(|_| "its queued_at is not an RFC 3339 UTC time".to_string())?;
        if self.document.is_empty() || self.document.len() as u64 > model::limits::MAX_RESULT_BYTES
        {
            return Err(format!(
                "its document is empty or larger than {} MiB",
                model::limits::MAX_RESULT_BYTES >> 20
            ));
        }
        Ok(())
    }

    /// When it was queued (checked by [`QueuedRun::from_json`]).
    pub fn queued_time(&self) -> Option<std::time::SystemTime> {
        humantime::parse_rfc3339(&self.queued_at).ok()
    }

    /// Records a failed try: `attempts` more, and the error (cut to its bound).
    pub fn failed(&mut self, attempts: u32, error: &str) {
        self.attempts = self.attempts.saturating_add(attempts);
        let mut e: String = error.chars().filter(|c| !c.is_control()).collect();
        if e.len() > MAX_ERROR {
            let mut cut = MAX_ERROR - 3;
            while !e.is_char_boundary(cut) {
                cut -= 1;
            }
            e.truncate(cut);
            e.push('…');
        }
        self.last_error = Some(e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> QueuedRun {
        let target = Target::parse("http://lab:8080").unwrap();
        QueuedRun::new(
            &target,
            "{\"schema\": \"rtlab.measure/1\"}\n".to_string(),
            About {
                run_id: Some("ab12cd34".into()),
                host: Some("board-7".into()),
                started_at: Some("2026-11-24T10:00:00Z".into()),
            },
            Some("nightly"),
            None,
        )
    }

    #[test]
    fn a_queue_file_reads_back_as_written() {
        let q = sample();
        assert_eq!(QueuedRun::from_json(&q.to_json()), Ok(q.clone()));
        assert_eq!(q.file_name().len(), 69);
        assert!(q.file_name().ends_with(".json"));
    }

    #[test]
    fn the_name_follows_the_target_and_the_document_only() {
        let a = sample();
        let mut b = sample();
        b.label = Some("other".into());
        b.failed(3, "down");
        assert_eq!(a.file_name(), b.file_name());
        let mut c = sample();
        c.target = "http://other:8080".into();
        assert_ne!(a.file_name(), c.file_name());
        let mut d = sample();
        d.document.push(' ');
        assert_ne!(a.file_name(), d.file_name());
    }

    #[test]
    fn damaged_or_foreign_files_are_refused_with_one_line() {
        let good = sample();
        let cases: Vec<(String, &str)> = vec![
            ("".into(), "not a queue file"),
            ("{".into(), "not a queue file"),
            (
                good.to_json()
                    .replace("rtlab.push-queue/1", "rtlab.push-queue/9"),
                "schema",
            ),
            (
                good.to_json().replace("http://lab:8080", "https://lab"),
                "target",
            ),
            (
                good.to_json().replace("http://lab:8080", "http://LAB:8080"),
                "normal form",
            ),
            (good.to_json().replace("ab12cd34", "../../x"), "run_id"),
            (
                good.to_json().replace("\"attempts\":0", "\"attempts\":-1"),
                "not a queue file",
            ),
            (
                good.to_json()
                    .replace("\"attempts\":0", "\"attempts\":0,\"x\":1"),
                "unknown field",
            ),
            (
                good.to_json().replace(&good.queued_at, "yesterday"),
                "queued_at",
            ),
            (good.to_json().replace("board-7", &"h".repeat(2000)), "host"),
        ];
        for (text, why) in cases {
            let e = QueuedRun::from_json(&text).unwrap_err();
            assert!(e.contains(why), "{why}: {e}");
            assert!(!e.contains('\n'));
        }
        let mut empty = sample();
        empty.document.clear();
        assert!(
            QueuedRun::from_json(&empty.to_json())
                .unwrap_err()
                .contains("document")
        );
    }

    #[test]
    fn a_failure_is_counted_and_its_text_bounded() {
        let mut q = sample();
        q.failed(2, "a\nb");
        q.failed(1, &"é".repeat(5000));
        assert_eq!(q.attempts, 3);
        let e = q.last_error.as_deref().unwrap();
        assert!(e.len() <= MAX_ERROR && e.ends_with('…'));
        assert!(QueuedRun::from_json(&q.to_json()).is_ok());
    }
}
