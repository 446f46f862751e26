//! rtlab's renderers: model types in, text out.
//!
//! This crate owns how results look: the final per-CPU table of `rtlab measure` ([`table`]),
//! cyclictest-compatible text for scripts written against cyclictest ([`cyclictest`]), the
//! live per-CPU view refreshed during a run ([`live`]), the achieved-load table ([`load`]) and
//! the audit's findings as a terminal table or Markdown ([`audit`]), one inspected program's
//! threads and findings ([`inspect`]), a measurement's
//! exports for other tools: CSV, JUnit XML and OpenMetrics ([`export`]), and the
//! self-contained HTML report with its latency plots as SVG ([`html`]). Several runs side by
//! side — the Linaro 2023 talk's per-cluster comparison table with deltas and a regression verdict — are
//! [`compare`] (terminal, Markdown, HTML, JSON via serde_json). Spike explanations read as
//! stories and part tables ([`explain`]), the stories — of a spike, and of the kernel tracers'
//! own reports — made in [`story`] from the structure `trace` finds; whole-trace handler, task and CPU statistics as
//! tables with what to do about the worst ([`explain_stats`]). A tuning plan reads as text or
//! a shell script ([`tune`]).
//!
//! It must not print, touch files or the terminal (no ANSI escapes): every function returns a
//! `String` or lines, and the caller decides where they go. It depends on `model` (and on
//! `trace` for the tracers' report types it tells in words), on
//! quick-xml and prometheus-client for the export formats, and on minijinja and plotters (SVG
//! only) for the HTML report.

pub mod audit;
pub mod columns;
pub mod compare;
pub mod cyclictest;
pub mod explain;
pub mod explain_stats;
pub mod export;
pub mod html;
pub mod hwlat;
pub mod inspect;
pub mod live;
pub mod load;
pub mod monitor;
pub mod noise;
pub mod pi;
pub mod sched;
pub mod story;
pub mod table;
pub mod timerlat;
pub mod tune;
pub mod workload;
pub mod worst;

#[cfg(test)]
mod testdata;

pub use live::live_frame;
pub use table::{format_us, measure_table};
