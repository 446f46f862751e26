//! `rtlab monitor` in words: an incident's cause in one line from the run that caught it (the
//! main part of the trace's explanation, or of the timerlat tracer's analysis), a line per
//! interval and per incident, the history as CSV, and the OpenMetrics text of a monitor's
//! counters. Pure renderers.

use std::time::{Duration, UNIX_EPOCH};

use model::measure::MeasureRun;
use model::monitor::{BUCKET_BOUNDS_NS, Incident, Interval, Totals};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use crate::export::csv::push_record;
use crate::format_us;

/// The cause of the breach `run` stopped at, in one line: what held the wake-up back and
/// who, with its share; or why there is no explanation (`not explained: ...`).
pub fn cause(run: &MeasureRun) -> String {
    let cpu = run.break_event.as_ref().map(|b| b.cpu);
    if let Some(t) = &run.timerlat {
        let stop_cpu = t.stop.as_ref().map(|s| s.cpu).or(cpu);
        let analysis = t
            .analyses
            .iter()
            .find(|a| Some(a.cpu) == stop_cpu)
            .or(t.analyses.first());
        return match analysis {
            Some(a) => timerlat_cause(a),
            None => "not explained: the timerlat tracer analysed no activation".to_string(),
        };
    }
    let Some(trace) = &run.trace else {
        return "not explained: no trace was recorded".to_string();
    };
    let x = trace
        .explanations
        .iter()
        .find(|x| Some(x.cpu) == cpu)
        .or(trace.explanations.first());
    match x {
        Some(x) => {
            let share = x.parts.first().map_or(0.0, |p| p.share * 100.0);
            let who = x
                .parts
                .first()
                .map(|p| crate::story::agent::name(&p.what))
                .unwrap_or_default();
            format!(
                "{} ({share:.0} %): {who}",
                crate::story::agent::main_cause(x)
            )
        }
        None => format!(
            "not explained: {}",
            trace
                .notes
                .first()
                .map_or("the trace holds no event of the breach", String::as_str)
        ),
    }
}

/// The timerlat analysis's main part and who: `blocking thread hog:812 (96 %)`.
fn timerlat_cause(a: &model::timerlat::Analysis) -> String {
    let parts = crate::timerlat::parts(a);
    let Some(p) = crate::timerlat::main_part(&parts) else {
        return "not explained: the analysis has no part".to_string();
    };
    let share = p.ns.map_or(0.0, |n| a.share(n));
    let who = if !p.who.is_empty() {
        format!(" {}", p.who)
    } else {
        p.items
            .iter()
            .max_by_key(|i| i.duration_ns)
            .map(|i| format!(": {}", crate::timerlat::source(i)))
            .unwrap_or_default()
    };
    let note = if p.note.is_empty() {
        String::new()
    } else {
        format!(", {}", p.note)
    };
    format!("{}{who} ({share:.0} %{note})", p.label)
}

/// A Unix time in ns as RFC 3339 to the second (UTC).
pub fn utc(ns: i64) -> String {
    let at = u64::try_from(ns).map_or(UNIX_EPOCH, |n| UNIX_EPOCH + Duration::from_nanos(n));
    humantime::format_rfc3339_seconds(at).to_string()
}

fn us_or_dash(ns: Option<u64>) -> String {
    ns.map_or_else(|| "-".to_string(), |n| format!("{} us", format_us(n)))
}

/// One interval in a line: `2026-11-30T01:20:00Z  max 45.2 us  p99.9 12.1 us  p99 9.8 us
/// 299847 wake-ups  breaches 0  measured 99.9 %`.
pub fn interval_line(i: &Interval) -> String {
    let worst_cpu = i
        .per_cpu
        .iter()
        .filter(|c| c.max_ns.is_some())
        .max_by_key(|c| c.max_ns)
        .map_or(String::new(), |c| format!(" (CPU {})", c.cpu));
    format!(
        "{}  max {}{worst_cpu}  p99.9 {}  p99 {}  {} wake-ups  breaches {}  measured {:.1} %",
        utc(i.start_ns),
        us_or_dash(i.max_ns),
        us_or_dash(i.p99_9_ns),
        us_or_dash(i.p99_ns),
        i.samples,
        i.breaches,
        i.coverage() * 100.0
    )
}

/// One incident in a line: `incident 1a2b3c4d5e6f 2026-11-30T01:21:07Z  CPU 2  480.1 us
/// (budget 100 us)  3 late in 1.2 s: blocking thread hog:812 (96 %)  [run 9f8e7d6c5b4a]`.
pub fn incident_line(x: &Incident) -> String {
    let span = x.end_ns.saturating_sub(x.start_ns).max(0) as u64;
    let burst = if x.breaches > 1 {
        format!(
            "  {} late in {:.1} s",
            x.breaches,
            span as f64 / 1_000_000_000.0
        )
    } else {
        String::new()
    };
    let run = x
        .run_id
        .as_ref()
        .map_or(String::new(), |r| format!("  [run {r}]"));
    format!(
        "incident {} {}  CPU {}  {} us (budget {} us){burst}: {}{run}",
        x.id,
        utc(x.start_ns),
        x.cpu,
        format_us(x.worst_ns),
        format_us(x.budget_ns),
        x.cause
    )
}

/// The intervals as CSV (RFC 4180), a header and a row each (times in ns, empty where
/// unknown).
pub fn history_csv(intervals: &[Interval]) -> String {
    let mut out = String::new();
    let header = "host,start,start_ns,length_ns,measured_ns,engine,kernel,samples,min_ns,p50_ns,\
                  p99_ns,p99_9_ns,max_ns,breaches,incidents,budget_ns";
    push_record(&mut out, header.split(',').map(String::from));
    let opt = |v: Option<u64>| v.map_or(String::new(), |n| n.to_string());
    for i in intervals {
        let row = [
            i.host.clone(),
            utc(i.start_ns),
            i.start_ns.to_string(),
            i.length_ns.to_string(),
            i.measured_ns.to_string(),
            i.engine.clone(),
            i.kernel_release.clone(),
            i.samples.to_string(),
            opt(i.min_ns),
            opt(i.p50_ns),
            opt(i.p99_ns),
            opt(i.p99_9_ns),
            opt(i.max_ns),
            i.breaches.to_string(),
            i.incidents.to_string(),
            opt(i.budget_ns),
        ];
        push_record(&mut out, row.into_iter());
    }
    out
}

/// The incidents as CSV (RFC 4180), a header and a row each.
pub fn incidents_csv(incidents: &[Incident]) -> String {
    let mut out = String::new();
    let header = "id,host,start,start_ns,end_ns,cpu,worst_ns,budget_ns,breaches,cause,run";
    push_record(&mut out, header.split(',').map(String::from));
    for x in incidents {
        let row = [
            x.id.clone(),
            x.host.clone(),
            utc(x.start_ns),
            x.start_ns.to_string(),
            x.end_ns.to_string(),
            x.cpu.to_string(),
            x.worst_ns.to_string(),
            x.budget_ns.to_string(),
            x.breaches.to_string(),
            x.cause.clone(),
            x.run_id.clone().unwrap_or_default(),
        ];
        push_record(&mut out, row.into_iter());
    }
    out
}

/// The monitor's state as OpenMetrics text (the textfile collector's and Prometheus' text
/// parsers read it too): the latency histogram and totals since the monitor started, the last
/// interval's maximum and coverage. Every family is labelled with the host; the counts since
/// the start are gauges for the reason `export::openmetrics` gives (the text parser loses a
/// counter's `_total` sample's type), and a restart starting them again from 0 reads as the
/// reset Prometheus' `rate()` expects of a counter anyway.
pub fn metrics(host: &str, totals: &Totals, last: Option<&Interval>) -> String {
    let mut registry = Registry::with_prefix(crate::export::openmetrics::PREFIX);
    registry.register_collector(Box::new(MonitorFamilies {
        host: host.to_string(),
        totals: totals.clone(),
        last: last.cloned(),
    }));
    let mut out = String::new();
    encode(&mut out, &registry).expect("encoding into a String cannot fail");
    out
}

#[derive(Debug)]
struct MonitorFamilies {
    host: String,
    totals: Totals,
    last: Option<Interval>,
}

impl Collector for MonitorFamilies {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let labels = [("host", self.host.as_str())];
        let t = &self.totals;
        let buckets: Vec<(f64, u64)> = BUCKET_BOUNDS_NS
            .iter()
            .map(|&b| b as f64 / 1e9)
            .chain([f64::INFINITY])
            .zip(t.buckets.iter().copied())
            .collect();
        let mut h = encoder.encode_descriptor(
            "monitor_latency",
            "Wake-up latency since the monitor started",
            Some(&Unit::Seconds),
            MetricType::Histogram,
        )?;
        h.encode_family(&labels)?.encode_histogram::<NoLabelSet>(
            t.sum_ns as f64 / 1e9,
            t.samples,
            &buckets,
            None,
        )?;
        let gauges: [(&str, &str, Option<Unit>, f64); 5] = [
            (
                "monitor_breaches",
                "Wake-ups later than the budget since the monitor started",
                None,
                t.breaches as f64,
            ),
            (
                "monitor_incidents",
                "Incidents since the monitor started",
                None,
                t.incidents as f64,
            ),
            (
                "monitor_intervals",
                "Intervals kept since the monitor started",
                None,
                t.intervals as f64,
            ),
            (
                "monitor_interval_max",
                "The largest wake-up latency of the last interval (0 when nothing was measured)",
                Some(Unit::Seconds),
                self.last.as_ref().and_then(|i| i.max_ns).unwrap_or(0) as f64 / 1e9,
            ),
            (
                "monitor_interval_coverage",
                "The share of the last interval that was measured, 0 to 1",
                Some(Unit::Ratios),
                self.last.as_ref().map_or(0.0, Interval::coverage),
            ),
        ];
        for (name, help, unit, value) in gauges {
            let mut g = encoder.encode_descriptor(name, help, unit.as_ref(), MetricType::Gauge)?;
            g.encode_family(&labels)?.encode_gauge(&value)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
