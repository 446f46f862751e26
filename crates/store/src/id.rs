//! Run ids: 12 lowercase hexadecimal characters (48 bits: the start of the run's digest, or
//! random where that is taken), short enough to type and to quote by a prefix, long enough
//! that a collision in one database is practically impossible (and retried when it happens).

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

/// Fewest characters of an id accepted as a prefix.
pub const MIN_PREFIX: usize = 4;

/// The id of a stored run. Serialized as its string.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct RunId(String);

impl RunId {
    /// Length of an id in characters.
    pub const LEN: usize = 12;

    /// `text` as an id when it is exactly [`RunId::LEN`] lowercase hexadecimal characters.
    pub fn parse(text: &str) -> Option<RunId> {
        (text.len() == RunId::LEN && text.bytes().all(is_lower_hex))
            .then(|| RunId(text.to_string()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id a run with this digest (lowercase hexadecimal) gets where it is free: its first
    /// twelve characters, so that the same run has the same id in every store it reaches.
    pub(crate) fn from_digest(digest: &str) -> RunId {
        match digest.get(..RunId::LEN).and_then(RunId::parse) {
            Some(id) => id,
            None => RunId::random(),
        }
    }

    /// A fresh id from std's randomly keyed hasher over the time, the process id and a
    /// per-process counter: no two calls in one process hash the same input, and the key
    /// differs between processes.
    pub(crate) fn random() -> RunId {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let mut hasher = RandomState::new().build_hasher();
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default()
            .hash(&mut hasher);
        std::process::id().hash(&mut hasher);
        COUNTER.fetch_add(1, Ordering::Relaxed).hash(&mut hasher);
        RunId(format!("{:012x}", hasher.finish() & 0xffff_ffff_ffff))
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether `b` is a digit or `a`-`f`.
pub(crate) fn is_lower_hex(b: u8) -> bool {
    b.is_ascii_digit() || (b'a'..=b'f').contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn random_ids_are_well_formed_and_distinct() {
        let ids: HashSet<RunId> = (0..10_000).map(|_| RunId::random()).collect();
        assert_eq!(ids.len(), 10_000);
        for id in &ids {
            assert_eq!(RunId::parse(id.as_str()).as_ref(), Some(id));
        }
    }

    #[test]
    fn parse_accepts_only_twelve_lowercase_hex() {
        assert!(RunId::parse("0123456789ab").is_some());
        assert!(RunId::parse("0123456789AB").is_none());
        assert!(RunId::parse("0123456789a").is_none());
        assert!(RunId::parse("0123456789abc").is_none());
        assert!(RunId::parse("0123456789ag").is_none());
        assert!(RunId::parse("").is_none());
    }

    #[test]
    fn serializes_as_its_string() {
        let id = RunId::parse("00000000beef").unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"00000000beef\"");
        assert_eq!(id.to_string(), "00000000beef");
    }
}
