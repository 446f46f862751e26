//! The monitor pages `rtlab serve` shows: a host's long-term view of its monitor history (the
//! interval maxima over days and months as OSADL plots its farm, the history cut into setups
//! with the drift between them, its incidents with their causes and traces) and the fleet's
//! monitored hosts with their recent incidents.
//!
//! The caller gives plain data (the store's [`HistoryPoint`]s, [`Incident`]s and
//! [`MonitorHost`]s); this module reduces, formats, builds links (percent-encoded) and renders
//! with autoescape, so an incident's cause or a hostname reaches the page as text.

use std::collections::HashSet;

use minijinja::Environment;
use minijinja::value::{Serde, Value};
use model::monitor::{HistoryPoint, Incident, MonitorHost, Span, plot_points, spans};
use serde::Serialize;

use super::chart::{Axis, Chart, Line, Rule, Scale, Ticks};
use super::fleet::url_encode;
use crate::format_us;
use crate::monitor::utc;

const TEMPLATE: &str = include_str!("monitor.html.j2");
const STYLE: &str = include_str!("style.css");

/// Most points the plot draws: about one per pixel of its width.
const PLOT_POINTS: usize = 900;
/// Most setup changes marked on the plot (every one is in the table).
const MAX_RULES: usize = 8;
/// The time ranges offered: what `?last=` takes on the pages.
pub const RANGES: [&str; 5] = ["1d", "7d", "30d", "90d", "365d"];

/// A host's monitor page: what it is about and what the server read for it.
pub struct HostHistory<'a> {
    /// The host.
    pub host: &'a str,
    /// The time range as the page's address gave it (`30d`).
    pub last: &'a str,
    /// Its intervals in the range, oldest first.
    pub points: &'a [HistoryPoint],
    /// Its incidents in the range, newest first.
    pub incidents: &'a [Incident],
    /// The incidents' runs the server holds (their traces can be opened).
    pub runs_kept: &'a HashSet<String>,
}

/// The fleet's monitor page.
pub struct FleetHistory<'a> {
    /// The time range as the page's address gave it.
    pub last: &'a str,
    /// Hosts with intervals in the range, by name.
    pub hosts: &'a [MonitorHost],
    /// A host whose newest interval started before this (Unix ns) is marked silent (the
    /// server gives two hours ago).
    pub silent_after_ns: i64,
    /// The fleet's incidents in the range, newest first.
    pub incidents: &'a [Incident],
    /// The incidents' runs the server holds.
    pub runs_kept: &'a HashSet<String>,
}

#[derive(Serialize)]
struct RangeCtx {
    text: &'static str,
    href: String,
    now: bool,
}

#[derive(Serialize)]
struct HostCtx {
    host: String,
    href: String,
    last: String,
    silent: bool,
    intervals: u64,
    worst: String,
    breaches: u64,
    incidents: u64,
}

#[derive(Serialize)]
struct SpanCtx {
    from: String,
    to: String,
    kernel: String,
    engine: String,
    cpus: String,
    budget: String,
    intervals: u64,
    median: String,
    p99: String,
    worst: String,
    breaches: u64,
    change: String,
    median_change: String,
    worst_change: String,
    worse: bool,
    worst_worse: bool,
}

#[derive(Serialize)]
struct IncidentCtx {
    start: String,
    host: String,
    host_href: String,
    cpu: u32,
    worst: String,
    budget: String,
    breaches: u64,
    lasted: String,
    cause: String,
    run: String,
    run_href: Option<String>,
}

#[derive(Serialize)]
struct PageCtx {
    title: String,
    subtitle: String,
    version: &'static str,
    style: Value,
    host: Option<String>,
    host_href: String,
    ranges: Vec<RangeCtx>,
    hosts: Option<Vec<HostCtx>>,
    plot: Option<Value>,
    plot_caption: String,
    spans: Vec<SpanCtx>,
    show_incidents: bool,
    fleet: bool,
    incidents: Vec<IncidentCtx>,
    incidents_note: String,
}

/// The address of `host`'s monitor page over `last`.
pub fn host_href(host: &str, last: Option<&str>) -> String {
    let base = format!("/hosts/{}/monitor", url_encode(host));
    match last {
        Some(l) => format!("{base}?last={}", url_encode(l)),
        None => base,
    }
}

fn ranges(last: &str, href: impl Fn(&str) -> String) -> Vec<RangeCtx> {
    RANGES
        .iter()
        .map(|r| RangeCtx {
            text: r,
            href: href(r),
            now: *r == last,
        })
        .collect()
}

fn us(ns: Option<u64>) -> String {
    ns.map(format_us).unwrap_or_else(|| "-".into())
}

fn percent(p: Option<f64>) -> String {
    p.map_or_else(|| "-".into(), |p| format!("{p:+.0} %"))
}

/// A time as the pages show it: `2026-11-30 04:15:00`.
fn when(ns: i64) -> String {
    utc(ns).trim_end_matches('Z').replace('T', " ")
}

fn incident_rows(incidents: &[Incident], runs_kept: &HashSet<String>) -> Vec<IncidentCtx> {
    incidents
        .iter()
        .map(|x| {
            let kept = x.run_id.as_ref().filter(|id| runs_kept.contains(*id));
            IncidentCtx {
                start: when(x.start_ns),
                host: x.host.clone(),
                host_href: host_href(&x.host, None),
                cpu: x.cpu,
                worst: format_us(x.worst_ns),
                budget: format_us(x.budget_ns),
                breaches: x.breaches,
                lasted: lasted(x),
                cause: x.cause.clone(),
                run: kept.cloned().unwrap_or_default(),
                run_href: kept.map(|id| format!("/runs/{}", url_encode(id))),
            }
        })
        .collect()
}

/// How long an incident's burst lasted, from its first late wake-up to its last.
fn lasted(x: &Incident) -> String {
    let ns = u64::try_from(x.end_ns.saturating_sub(x.start_ns)).unwrap_or(0);
    if ns < 1_000_000_000 {
        format!("{} ms", format_us(ns / 1_000).trim_end_matches(".0"))
    } else {
        format!("{:.1} s", ns as f64 / 1e9)
    }
}

fn span_row(s: &Span) -> SpanCtx {
    SpanCtx {
        from: when(s.from_ns),
        to: when(s.to_ns),
        kernel: s.kernel_release.clone(),
        engine: s.engine.clone(),
        cpus: s.cpus.clone(),
        budget: us(s.budget_ns),
        intervals: s.intervals,
        median: us(s.median_max_ns),
        p99: us(s.p99_max_ns),
        worst: us(s.worst_ns),
        breaches: s.breaches,
        change: if s.change.is_empty() {
            "first in this time".into()
        } else {
            s.change.join("; ")
        },
        median_change: percent(s.median_change_percent),
        worst_change: percent(s.worst_change_percent),
        worse: s.median_change_percent.is_some_and(|p| p > 0.0),
        worst_worse: s.worst_change_percent.is_some_and(|p| p > 0.0),
    }
}

/// A host's monitor page.
pub fn host_monitor_page(h: &HostHistory<'_>) -> String {
    let cut = spans(h.points);
    let worst = h
        .points
        .iter()
        .filter(|p| p.max_ns.is_some())
        .max_by_key(|p| p.max_ns);
    let breaches: u64 = h.points.iter().fold(0, |a, p| a.saturating_add(p.breaches));
    let subtitle = match worst {
        Some(w) => format!(
            "{} intervals in the last {}: worst {} us in the interval of {} UTC, {breaches} \
             wake-ups over the budget, {} incident{}.",
            h.points.len(),
            h.last,
            format_us(w.max_ns.unwrap_or(0)),
            when(w.start_ns),
            h.incidents.len(),
            if h.incidents.len() == 1 { "" } else { "s" }
        ),
        None => format!(
            "No interval measured in the last {}: `rtlab monitor --push URL` on the board \
             sends its history here.",
            h.last
        ),
    };
    let mut ctx = base(format!("rtlab monitor: {}", h.host), subtitle);
    ctx.host = Some(h.host.to_string());
    ctx.host_href = host_href(h.host, None);
    ctx.ranges = ranges(h.last, |r| host_href(h.host, Some(r)));
    if let Some(svg) = maxima_plot(h.host, h.points, &cut) {
        ctx.plot = Some(Value::from_safe_string(svg));
        ctx.plot_caption = format!(
            "Each interval's largest wake-up latency over the watched CPUs (logarithmic \
             scale), oldest left; where intervals are narrower than a point, the point is \
             the largest of them, so no spike is averaged away. A break in the line is time \
             without measurement; dashed vertical lines mark a change of setup (the table \
             below).{}",
            if h.points.len() > PLOT_POINTS {
                format!(
                    " {} intervals drawn as at most {PLOT_POINTS} points.",
                    h.points.len()
                )
            } else {
                String::new()
            }
        );
    }
    ctx.spans = cut.iter().map(span_row).collect();
    ctx.show_incidents = true;
    ctx.incidents = incident_rows(h.incidents, h.runs_kept);
    ctx.incidents_note = incidents_note(h.incidents.len());
    page(ctx)
}

fn incidents_note(n: usize) -> String {
    format!(
        "{n} incident{}, newest first: each a burst of wake-ups over the budget, with the \
         cause the trace around its first breach showed; the trace opens where the run that \
         holds it was pushed here.",
        if n == 1 { "" } else { "s" }
    )
}

/// The fleet's monitor page.
pub fn fleet_monitor_page(f: &FleetHistory<'_>) -> String {
    let mut ctx = base(
        "rtlab monitor: the fleet".into(),
        format!(
            "{} host{} with intervals in the last {}; a host with no interval in the last two \
             hours is marked silent.",
            f.hosts.len(),
            if f.hosts.len() == 1 { "" } else { "s" },
            f.last
        ),
    );
    ctx.ranges = ranges(f.last, |r| format!("/monitor?last={}", url_encode(r)));
    ctx.hosts = Some(
        f.hosts
            .iter()
            .map(|h| HostCtx {
                href: host_href(&h.host, Some(f.last)),
                host: h.host.clone(),
                last: when(h.last_ns),
                silent: h.last_ns < f.silent_after_ns,
                intervals: h.intervals,
                worst: us(h.worst_ns),
                breaches: h.breaches,
                incidents: h.incidents,
            })
            .collect(),
    );
    ctx.show_incidents = true;
    ctx.fleet = true;
    ctx.incidents = incident_rows(f.incidents, f.runs_kept);
    ctx.incidents_note = incidents_note(f.incidents.len());
    page(ctx)
}

/// The interval maxima against time, split where measurement stopped, with the budget and the
/// setup changes marked. `None` without a measured interval.
fn maxima_plot(host: &str, points: &[HistoryPoint], cut: &[Span]) -> Option<String> {
    let plotted = plot_points(points, PLOT_POINTS);
    let first = plotted.first()?;
    let last = plotted.last()?;
    let t0 = first.start_ns;
    let span_s = last.end_ns.saturating_sub(t0) as f64 / 1e9;
    let (unit, per) = if span_s >= 2.0 * 86_400.0 {
        ("days", 86_400.0)
    } else if span_s >= 2.0 * 3_600.0 {
        ("hours", 3_600.0)
    } else {
        ("minutes", 60.0)
    };
    let x = |ns: i64| ns.saturating_sub(t0) as f64 / 1e9 / per;
    // A new segment where the next point does not start where the one before ended (give or
    // take a second: interval starts are wall-clock multiples).
    let mut segments: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut end_before = i64::MIN;
    for p in &plotted {
        let y = (p.max_ns as f64 / 1000.0).max(0.1);
        if segments.is_empty() || p.start_ns > end_before.saturating_add(1_000_000_000) {
            segments.push(Vec::new());
        }
        if let Some(s) = segments.last_mut() {
            s.push((x(p.start_ns), y));
        }
        end_before = p.end_ns;
    }
    let ys = || plotted.iter().map(|p| (p.max_ns as f64 / 1000.0).max(0.1));
    let mut top = ys().fold(0.0f64, f64::max);
    let bottom = ys().fold(f64::INFINITY, f64::min);
    let mut rules = Vec::new();
    if let Some(budget) = cut.last().and_then(|s| s.budget_ns) {
        let b = budget as f64 / 1000.0;
        top = top.max(b);
        rules.push(Rule {
            vertical: false,
            at: b,
            label: format!("budget {} us", format_us(budget)),
        });
    }
    for s in cut.iter().skip(1).take(MAX_RULES) {
        rules.push(Rule {
            vertical: true,
            at: x(s.from_ns),
            // The new setup's side of the first change (`kernel 6.12.74-rt`): the table
            // says what it was before.
            label: s
                .change
                .first()
                .map(|c| match c.split_once(" → ") {
                    Some((before, after)) => {
                        let what = before.split(' ').next().unwrap_or("");
                        format!("{what} {after}")
                    }
                    None => c.clone(),
                })
                .unwrap_or_default(),
        });
    }
    let width = x(last.end_ns).max(1e-3);
    let chart = Chart {
        title: format!("Interval maxima: {host}"),
        x: Axis {
            label: format!("{unit} since {} UTC", when(t0)),
            range: (-0.02 * width, width * 1.02),
            scale: Scale::Linear,
            ticks: Ticks::Plain,
        },
        y: Axis {
            label: "largest latency in the interval (log scale)".into(),
            range: (
                10f64.powf((bottom * 0.8).log10().floor()),
                10f64.powf((top * 1.25).log10().ceil()),
            ),
            scale: Scale::Log,
            ticks: Ticks::Latency,
        },
        lines: vec![Line {
            label: "interval maximum".into(),
            segments,
        }],
        rules,
    };
    Some(chart.to_svg())
}

fn page(ctx: PageCtx) -> String {
    let mut env = Environment::new();
    env.add_template("monitor.html", TEMPLATE)
        .expect("the embedded monitor template parses");
    env.get_template("monitor.html")
        .and_then(|t| t.render(Serde(&ctx)))
        .expect("the embedded monitor template renders")
}

fn base(title: String, subtitle: String) -> PageCtx {
    PageCtx {
        title,
        subtitle,
        version: env!("CARGO_PKG_VERSION"),
        style: Value::from_safe_string(STYLE.to_string()),
        host: None,
        host_href: String::new(),
        ranges: Vec::new(),
        hosts: None,
        plot: None,
        plot_caption: String::new(),
        spans: Vec::new(),
        show_incidents: false,
        fleet: false,
        incidents: Vec::new(),
        incidents_note: String::new(),
    }
}

#[cfg(test)]
mod tests;
