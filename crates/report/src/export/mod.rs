//! Exports of one measurement for other tools: a CSV table for spreadsheets ([`csv()`]), JUnit
//! XML for CI systems, one test case per CPU against a latency budget ([`junit()`]), and
//! OpenMetrics text for the Prometheus node-exporter textfile collector ([`openmetrics()`]).
//!
//! The JSON export is the measurement schema itself (`MeasureRun::to_json`), so it has no
//! renderer here.
//!
//! Like the rest of this crate, these are pure renderers: a [`MeasureRun`] in, a `String` out.
//! They never print, touch files or read the clock; the run id, the file name and where the
//! text goes are the caller's business. Every figure comes from the run's derived statistics
//! (`cpus[].stats`, `all.stats`), so the exports agree with `rtlab measure`'s table.
//!
//! [`MeasureRun`]: model::measure::MeasureRun

pub mod csv;
pub mod fleet_metrics;
pub mod junit;
pub mod lava;
pub mod openmetrics;

pub use csv::{csv, csv_labelled};
pub use fleet_metrics::{FleetFigures, fleet_openmetrics};
pub use junit::{junit, junit_labelled};
pub use openmetrics::openmetrics;

use std::time::{SystemTime, UNIX_EPOCH};

/// A run's `started_at` (RFC 3339, UTC) as a point in time; `None` when the text is not a UTC
/// RFC 3339 timestamp (a hand-edited or foreign result), in which case exports leave the
/// derived figure out rather than invent one.
pub(crate) fn parse_utc(rfc3339: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339(rfc3339).ok()
}

/// Seconds since the Unix epoch, with the fraction.
pub(crate) fn unix_secs(t: SystemTime) -> f64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs_f64(),
        Err(before) => -before.duration().as_secs_f64(),
    }
}

/// Nanoseconds as seconds (the SI base unit that Prometheus and JUnit use).
pub(crate) fn ns_to_secs(ns: f64) -> f64 {
    ns / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_measure_writes() {
        let t = parse_utc("2026-01-12T11:52:32.250000Z").unwrap();
        assert_eq!(unix_secs(t), 1_768_218_752.25);
        assert_eq!(unix_secs(parse_utc("1970-01-01T00:00:00Z").unwrap()), 0.0);
        assert!(parse_utc("").is_none());
        assert!(parse_utc("2026-01-12 11:52").is_none());
        assert!(parse_utc("2026-01-12T11:52:32+02:00").is_none());
    }

    #[test]
    fn seconds_from_nanoseconds() {
        assert_eq!(ns_to_secs(66_000.0), 6.6e-5);
        assert_eq!(ns_to_secs(1e9), 1.0);
    }
}
