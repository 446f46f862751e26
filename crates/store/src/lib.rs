//! rtlab's result store: every run kept in an embedded SQLite database, so that results
//! outlive the terminal and can be listed, shown, labelled, compared and exported later.
//!
//! This crate owns the database file (where it lives by default, [`default_path`]), its schema
//! and migrations ([`schema`]), run ids ([`RunId`]) and what a person may type for one
//! ([`Store::resolve`]). It stores raw data only — accumulators, histograms, spikes, series and
//! metadata — and derives statistics when a run is read, so a better estimator never needs a
//! migration (docs/decisions/0010-sqlite-store.md).
//!
//! It depends on `rtlab-model` alone. It must not render, print, or touch the kernel; the CLI
//! decides when to save and what to show.

mod error;
mod id;
mod path;
mod query;
pub mod schema;
mod store;

#[cfg(test)]
mod testdata;

pub use error::StoreError;
pub use id::{MIN_PREFIX, RunId};
pub use path::{DB_FILE, default_path};
pub use query::{Filter, RunSummary};
pub use schema::SCHEMA_VERSION;
pub use store::{BUSY_TIMEOUT, Store};
