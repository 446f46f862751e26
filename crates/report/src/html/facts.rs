//! The small pieces of page context that several sections share: a labelled fact and a table
//! of cells. Kept apart so the section builders ([`super::page`], [`super::host`]) depend on
//! it and not on each other.

use serde::Serialize;

/// One `key: value` line of a definition list.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub(super) struct Fact {
    pub(super) key: String,
    pub(super) value: String,
}

/// A [`Fact`].
pub(super) fn fact(key: &str, value: impl Into<String>) -> Fact {
    Fact {
        key: key.to_string(),
        value: value.into(),
    }
}

/// A table: header cells, body rows, footer rows.
#[derive(Serialize, Default, Debug, PartialEq, Eq)]
pub(super) struct TableCtx {
    pub(super) head: Vec<String>,
    pub(super) rows: Vec<Vec<String>>,
    pub(super) foot: Vec<Vec<String>>,
}
