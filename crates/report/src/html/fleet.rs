//! The pages `rtlab serve` shows beside the report page and the comparison: the fleet (one
//! line per host, regressions first) and a host (its facts, the long-term view — each run's
//! maximum and 99.99th percentile over time, as OSADL draws its farm — and its runs, which can
//! be ticked for comparison).
//!
//! The caller gives figures as plain data ([`FleetRow`], [`HostRun`]); this module formats,
//! builds links (percent-encoded) and renders with autoescape, so any text from a run — a
//! hostname, a label, a kernel string — reaches the page as text.

use minijinja::Environment;
use minijinja::value::{Serde, Value};
use serde::Serialize;

use model::gate::Outcome;

use super::chart::{Axis, Chart, Line, Scale, Ticks};
use crate::format_us;

const TEMPLATE: &str = include_str!("fleet.html.j2");
const STYLE: &str = include_str!("style.css");

/// A host's line on the fleet page.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FleetRow {
    /// The hostname.
    pub hostname: String,
    /// The newest run's kernel release.
    pub kernel: Option<String>,
    /// The RT CPUs of the newest audit.
    pub rt_cpus: Option<String>,
    /// The newest run: id and start.
    pub last: Option<(String, String)>,
    /// The gate's verdict on the newest run, by its own criteria.
    pub last_verdict: Option<Outcome>,
    /// The newest latency run's maximum, ns.
    pub last_max_ns: Option<u64>,
    /// The worst maximum of all its latency runs, ns.
    pub worst_max_ns: Option<u64>,
    /// Runs stored.
    pub runs: u64,
    /// Runs that did not complete.
    pub not_complete: u64,
    /// The newest audit in words (`2 fail, 3 warn`).
    pub audit: Option<String>,
    /// What regressed against the baseline.
    pub regressions: Vec<String>,
    /// Why the newest latency run was not compared with its baseline, when it was not.
    pub not_compared: Option<String>,
}

/// One run on a host's page.
#[derive(Clone, Debug, PartialEq)]
pub struct HostRun {
    /// The run id.
    pub id: String,
    /// Its start, RFC 3339 UTC.
    pub started_at: String,
    /// Kernel release.
    pub kernel: String,
    /// Label.
    pub label: Option<String>,
    /// Status.
    pub status: String,
    /// The gate's verdict on it, by its own criteria.
    pub verdict: Outcome,
    /// Maximum, p99 and p99.99 over all CPUs, ns.
    pub max_ns: Option<u64>,
    /// 99th percentile, ns.
    pub p99_ns: Option<u64>,
    /// 99.99th percentile, ns.
    pub p9999_ns: Option<u64>,
    /// The load it ran under, or `noise` for a noise run.
    pub under: String,
    /// Whether it measured OS noise rather than wake-up latency (left out of the plot).
    pub os_noise: bool,
}

/// One audit of a host, as its page lists them: when, with which run, its counts, and what
/// changed since the audit before it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AuditRow {
    /// The start of the run that carries it.
    pub started_at: String,
    /// That run's id.
    pub run: String,
    /// Checks that failed, warned, passed.
    pub fail: u32,
    /// Checks that warned.
    pub warn: u32,
    /// Checks that passed.
    pub pass: u32,
    /// The RT CPUs it used.
    pub rt_cpus: String,
    /// What changed against the audit before (`new fail: x; fixed: y`), or `first audit`.
    pub changes: String,
}

/// `text` percent-encoded for a URL path segment or query value: everything but unreserved
/// characters (RFC 3986) is `%XX`.
pub fn url_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[derive(Serialize)]
struct Crumb {
    href: String,
    text: String,
}

#[derive(Serialize)]
struct RowCtx {
    hostname: String,
    href: String,
    kernel: String,
    rt_cpus: String,
    last_href: Option<String>,
    last_started: String,
    last_verdict: String,
    last_max: String,
    worst_max: String,
    runs: u64,
    not_complete: u64,
    audit: String,
    regressions: Vec<String>,
    not_compared: String,
}

#[derive(Serialize)]
struct RunCtx {
    id: String,
    href: String,
    started: String,
    kernel: String,
    label: String,
    status: String,
    verdict: &'static str,
    max: String,
    p99: String,
    p9999: String,
    under: String,
}

#[derive(Serialize)]
struct AuditCtx {
    started: String,
    href: String,
    run: String,
    fail: u32,
    warn: u32,
    pass: u32,
    rt_cpus: String,
    changes: String,
}

#[derive(Serialize)]
struct PageCtx {
    title: String,
    subtitle: String,
    version: &'static str,
    style: Value,
    crumbs: Vec<Crumb>,
    show_hosts: bool,
    hosts: Vec<RowCtx>,
    facts: Vec<(String, String)>,
    plot: Option<Value>,
    plot_title: String,
    plot_caption: String,
    show_runs: bool,
    runs: Vec<RunCtx>,
    audits: Vec<AuditCtx>,
    /// The host's worst-case page (`rtlab serve`'s `/hosts/{name}/worst`).
    worst_href: Option<String>,
}

fn us(ns: Option<u64>) -> String {
    ns.map(format_us).unwrap_or_else(|| "-".into())
}

fn page(ctx: PageCtx) -> String {
    let mut env = Environment::new();
    env.add_template("fleet.html", TEMPLATE)
        .expect("the embedded fleet template parses");
    env.get_template("fleet.html")
        .and_then(|t| t.render(Serde(&ctx)))
        .expect("the embedded fleet template renders")
}

fn base(title: String, subtitle: String) -> PageCtx {
    PageCtx {
        title,
        subtitle,
        version: env!("CARGO_PKG_VERSION"),
        style: Value::from_safe_string(STYLE.to_string()),
        crumbs: Vec::new(),
        show_hosts: false,
        hosts: Vec::new(),
        facts: Vec::new(),
        plot: None,
        plot_title: String::new(),
        plot_caption: String::new(),
        show_runs: false,
        runs: Vec::new(),
        audits: Vec::new(),
        worst_href: None,
    }
}

/// The fleet page over `rows` (in the order given: the caller puts regressions first).
pub fn fleet_page(rows: &[FleetRow], regression_percent: f64) -> String {
    let regressed = rows.iter().filter(|r| !r.regressions.is_empty()).count();
    let mut ctx = base(
        "rtlab fleet".into(),
        format!(
            "{} host{}, {} with a regression (a CPU's p99.9 or maximum in the newest latency \
             run more than {}% worse than in its baseline, the rule of rtlab compare \
             --fail-if-worse: the baseline is the complete run labelled baseline, else the \
             first complete one), listed first. Each verdict is the run's own, by the \
             criteria it was measured with.",
            rows.len(),
            if rows.len() == 1 { "" } else { "s" },
            regressed,
            crate::compare::verdict::format_pct(regression_percent),
        ),
    );
    ctx.show_hosts = true;
    ctx.hosts = rows
        .iter()
        .map(|r| RowCtx {
            hostname: r.hostname.clone(),
            href: format!("/hosts/{}", url_encode(&r.hostname)),
            kernel: r.kernel.clone().unwrap_or_else(|| "-".into()),
            rt_cpus: r.rt_cpus.clone().unwrap_or_else(|| "-".into()),
            last_href: r
                .last
                .as_ref()
                .map(|(id, _)| format!("/runs/{}", url_encode(id))),
            last_started: r
                .last
                .as_ref()
                .map(|(_, s)| s.chars().take(19).collect::<String>().replace('T', " "))
                .unwrap_or_default(),
            last_verdict: r.last_verdict.map_or("-", Outcome::word).to_string(),
            last_max: us(r.last_max_ns),
            worst_max: us(r.worst_max_ns),
            runs: r.runs,
            not_complete: r.not_complete,
            audit: r.audit.clone().unwrap_or_else(|| "-".into()),
            regressions: r.regressions.clone(),
            not_compared: r.not_compared.clone().unwrap_or_default(),
        })
        .collect();
    page(ctx)
}

/// A host's page: `facts` (label, value), the long-term view, how its audits drifted
/// (`audits`, newest first) and `runs` (newest first).
pub fn host_page(
    hostname: &str,
    facts: &[(String, String)],
    audits: &[AuditRow],
    runs: &[HostRun],
) -> String {
    let mut ctx = base(
        format!("rtlab host {hostname}"),
        format!(
            "{} run{} stored, newest first.",
            runs.len(),
            if runs.len() == 1 { "" } else { "s" }
        ),
    );
    ctx.crumbs.push(Crumb {
        href: format!("/hosts/{}", url_encode(hostname)),
        text: hostname.to_string(),
    });
    ctx.facts = facts.to_vec();
    if let Some(svg) = long_term(hostname, runs) {
        ctx.plot = Some(Value::from_safe_string(svg));
        ctx.plot_title = "Long-term view".into();
        ctx.plot_caption = "Each latency run's maximum and 99.99th percentile over all CPUs \
             (logarithmic scale) against when it started, oldest left: a rising maximum \
             with a steady p99.99 is a rare new spike; both rising is a slower system. \
             Noise runs are not drawn."
            .into();
    }
    ctx.audits = audits
        .iter()
        .map(|a| AuditCtx {
            started: a
                .started_at
                .chars()
                .take(19)
                .collect::<String>()
                .replace('T', " "),
            href: format!("/runs/{}", url_encode(&a.run)),
            run: a.run.clone(),
            fail: a.fail,
            warn: a.warn,
            pass: a.pass,
            rt_cpus: if a.rt_cpus.is_empty() {
                "none".into()
            } else {
                a.rt_cpus.clone()
            },
            changes: a.changes.clone(),
        })
        .collect();
    ctx.show_runs = true;
    ctx.worst_href = Some(format!("/hosts/{}/worst", url_encode(hostname)));
    ctx.runs = runs
        .iter()
        .map(|r| RunCtx {
            id: r.id.clone(),
            href: format!("/runs/{}", url_encode(&r.id)),
            started: r
                .started_at
                .chars()
                .take(19)
                .collect::<String>()
                .replace('T', " "),
            kernel: r.kernel.clone(),
            label: r.label.clone().unwrap_or_else(|| "-".into()),
            status: r.status.clone(),
            verdict: r.verdict.word(),
            max: us(r.max_ns),
            p99: us(r.p99_ns),
            p9999: us(r.p9999_ns),
            under: r.under.clone(),
        })
        .collect();
    page(ctx)
}

/// Seconds since the Unix epoch of an RFC 3339 UTC start.
fn unix_time(started_at: &str) -> Option<f64> {
    let t = crate::export::parse_utc(started_at)?;
    Some(crate::export::unix_secs(t))
}

/// The unit of the long-term view's time axis for a span of `secs`: the largest of days,
/// hours and minutes that still gives at least two units across, so runs minutes apart are
/// not drawn on one vertical line.
fn time_unit(secs: f64) -> (&'static str, f64) {
    if secs >= 2.0 * 86_400.0 {
        ("days", 86_400.0)
    } else if secs >= 2.0 * 3_600.0 {
        ("hours", 3_600.0)
    } else {
        ("minutes", 60.0)
    }
}

/// A run on the long-term view: start (Unix seconds), maximum, p99.99, start as written.
type Point<'a> = (f64, Option<u64>, Option<u64>, &'a str);

/// The long-term view of a host's latency runs: maximum and p99.99 against time since the
/// first run. `None` without a drawable run.
fn long_term(hostname: &str, runs: &[HostRun]) -> Option<String> {
    let mut points: Vec<Point<'_>> = runs
        .iter()
        .filter(|r| !r.os_noise)
        .filter_map(|r| {
            Some((
                unix_time(&r.started_at)?,
                r.max_ns,
                r.p9999_ns,
                r.started_at.as_str(),
            ))
        })
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (t0, first_start) = points.first().map(|p| (p.0, p.3))?;
    let span = points.last()?.0 - t0;
    let (unit, per) = time_unit(span);
    let series = |pick: fn(&Point<'_>) -> Option<u64>| -> Vec<(f64, f64)> {
        points
            .iter()
            .filter_map(|p| pick(p).map(|ns| ((p.0 - t0) / per, (ns as f64 / 1000.0).max(0.1))))
            .collect()
    };
    let max = series(|p| p.1);
    let p9999 = series(|p| p.2);
    let values = || max.iter().chain(&p9999).map(|p| p.1);
    let top = values().fold(0.0f64, f64::max);
    let bottom = values().fold(f64::INFINITY, f64::min);
    if !top.is_finite() || !bottom.is_finite() || top <= 0.0 {
        return None;
    }
    let width = (span / per).max(1.0);
    let since: String = first_start
        .chars()
        .take(16)
        .collect::<String>()
        .replace('T', " ");
    let chart = Chart {
        title: format!("Long-term view: {hostname}"),
        x: Axis {
            label: format!("{unit} since {since} UTC"),
            range: (-0.02 * width, width * 1.02),
            scale: Scale::Linear,
            ticks: Ticks::Plain,
        },
        y: Axis {
            label: "latency over all CPUs (log scale)".into(),
            range: (
                10f64.powf((bottom * 0.8).log10().floor()),
                10f64.powf((top * 1.25).log10().ceil()),
            ),
            scale: Scale::Log,
            ticks: Ticks::Latency,
        },
        // The maximum is drawn last, over the p99.99 it equals in short runs.
        lines: vec![
            Line {
                label: "p99.99".into(),
                segments: vec![p9999],
            },
            Line {
                label: "maximum".into(),
                segments: vec![max],
            },
        ],
        rules: Vec::new(),
    };
    Some(chart.to_svg())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_encoded_and_text_is_escaped() {
        assert_eq!(url_encode("pi 4/<x>"), "pi%204%2F%3Cx%3E");
        let html = fleet_page(
            &[FleetRow {
                hostname: "<script>alert(1)</script>".into(),
                last: Some(("0123456789ab".into(), "2026-01-01T00:00:00Z".into())),
                regressions: vec!["maximum <b>".into()],
                ..FleetRow::default()
            }],
            20.0,
        );
        // minijinja escapes `/` too (`&#x2f;`); a browser reads it back as `/`.
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;&#x2f;script&gt;"),
            "{html}"
        );
        assert!(html.contains("href=\"&#x2f;hosts&#x2f;%3Cscript%3Ealert%281%29%3C%2Fscript%3E\""));
        assert!(html.contains("maximum &lt;b&gt;"));
        assert!(html.contains("1 with a regression"));
    }

    #[test]
    fn the_time_axis_unit_fits_the_span() {
        assert_eq!(time_unit(600.0).0, "minutes");
        assert_eq!(time_unit(3.0 * 3_600.0).0, "hours");
        assert_eq!(time_unit(40.0 * 86_400.0).0, "days");
    }

    #[test]
    fn a_host_page_draws_its_runs_over_time() {
        let run = |id: &str, day: &str, max: u64| HostRun {
            id: id.into(),
            started_at: format!("2026-01-{day}T08:00:00Z"),
            kernel: "6.6-rt".into(),
            status: "complete".into(),
            max_ns: Some(max),
            p99_ns: Some(max / 4),
            p9999_ns: Some(max / 2),
            under: "cpu:60%".into(),
            label: None,
            verdict: if max > 50_000 {
                Outcome::Fail
            } else {
                Outcome::Pass
            },
            os_noise: false,
        };
        let html = host_page(
            "pi<1>",
            &[("kernel".into(), "6.6-rt".into())],
            &[AuditRow {
                started_at: "2026-01-20T08:00:00Z".into(),
                run: "00000000000b".into(),
                fail: 1,
                changes: "new fail: kernel.preempt_rt".into(),
                ..AuditRow::default()
            }],
            &[
                run("00000000000b", "20", 80_000),
                run("00000000000a", "01", 40_000),
            ],
        );
        assert!(html.contains("new fail: kernel.preempt_rt"), "{html}");
        assert!(html.contains("<td class=\"verdict\">FAIL</td>"), "{html}");
        assert!(html.contains("<td class=\"verdict\">PASS</td>"), "{html}");
        assert!(html.contains("<svg"), "{html}");
        assert!(html.contains("days since 2026-01-01 08:00 UTC"), "{html}");
        assert!(html.contains("pi&lt;1&gt;"));
        assert!(html.contains("href=\"&#x2f;runs&#x2f;00000000000a\""));
        assert!(html.contains("name=\"run\" value=\"00000000000b\""));
        // Without a drawable run there is no plot.
        let empty = host_page("x", &[], &[], &[]);
        assert!(!empty.contains("<svg"));
    }
}
