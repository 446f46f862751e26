//! rtlab's renderers: model types in, text out.
//!
//! This crate owns how results look: the final per-CPU table of `rtlab measure` ([`table`]),
//! cyclictest-compatible text for scripts written against cyclictest ([`cyclictest`]), the
//! live per-CPU view refreshed during a run ([`live`]), the achieved-load table ([`load`]) and
//! the audit's findings as a terminal table or Markdown ([`audit`]), and a measurement's
//! exports for other tools: CSV, JUnit XML and OpenMetrics ([`export`]).
//!
//! It must not print, touch files or the terminal (no ANSI escapes): every function returns a
//! `String` or lines, and the caller decides where they go. It depends on `rtlab-model`, and on
//! quick-xml and prometheus-client for the export formats.

pub mod audit;
pub mod cyclictest;
pub mod export;
pub mod live;
pub mod load;
pub mod table;

#[cfg(test)]
mod testdata;

pub use live::live_frame;
pub use table::{format_us, measure_table};
