//! rtlab's result store: every run kept in a database — an embedded SQLite file by default, or
//! a PostgreSQL server shared by a fleet (cargo feature `postgres`) — so that results outlive
//! the terminal and can be listed, shown, labelled, compared and exported later.
//!
//! This crate owns the database (where a file lives by default, [`default_path`]; telling a
//! file from an address, [`Location`]), the two engines behind one interface, its schema and
//! migrations ([`schema`]), run ids ([`RunId`]) and what a person may type for one
//! ([`Store::resolve`]). It stores raw data only — accumulators, histograms, spikes, series and
//! metadata — and derives statistics when a run is read, so a better estimator never needs a
//! migration (docs/decisions/0010-sqlite-store.md).
//!
//! It depends on `rtlab-model` alone. It must not render, print, or touch the kernel; the CLI
//! decides when to save and what to show.

mod db;
mod digest;
mod error;
mod fleet;
mod id;
mod monitor;
mod open;
mod path;
mod query;
pub mod schema;
mod store;
mod tokens;

#[cfg(test)]
mod testdata;

pub use db::DbError;
pub use digest::document_id;
pub use error::StoreError;
pub use fleet::{HostPicks, HostRow};
pub use id::{MIN_PREFIX, RunId};
pub use monitor::MAX_HISTORY_ROWS;
pub use open::{BUSY_TIMEOUT, Location, is_postgres_address, redact};
pub use path::{DB_FILE, default_path};
pub use query::{Filter, MAX_IDS, RunSummary};
pub use schema::SCHEMA_VERSION;
pub use store::{Saved, Store};
pub use tokens::{MAX_TOKEN_NAME, Role, TOKEN_PREFIX, TokenInfo, check_token_name};
