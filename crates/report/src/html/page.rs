//! The page: what each section says, gathered into a serializable context and laid out by the
//! embedded template `report.html.j2` (with `style.css` inlined).
//!
//! Every figure is formatted here, in Rust, with the same helpers as the terminal table, so
//! the template only arranges text. The template is registered under a `.html` name, which
//! makes minijinja escape every value for HTML; only the SVG (drawn by plotters, which escapes
//! its own text) and the stylesheet are inserted as they are.

use std::collections::BTreeMap;

use minijinja::Environment;
use minijinja::value::{Serde, Value};
use model::imported::Quantity;
use model::load::LoadReport;
use model::measure::{MeasureRun, RunStatus};
use model::{CpuSet, Nanos};
use serde::Serialize;

use super::facts::{Fact, TableCtx, fact};
use super::host::{cpu_kinds, environment, topology};
use super::machine::{MachineCtx, audit_ctx, split_shared};
use super::plots::{self, Plot};
use super::timeline;
use super::{HtmlReport, ReportOptions, ReportRun, SvgFile, unique_keys};
use crate::load::{STEAL_WORTH_SHOWING, load_header_of_run, load_rows};
use crate::table::{
    COLUMNS, break_line, format_opt_us, format_secs, or_unknown, planned_text, preempt_text,
    stats_row,
};

const TEMPLATE: &str = include_str!("report.html.j2");
const STYLE: &str = include_str!("style.css");

#[derive(Serialize)]
struct PageCtx {
    title: String,
    version: &'static str,
    style: Value,
    several: bool,
    verdict: super::verdict::VerdictCtx,
    overlays: Vec<PlotCtx>,
    overlay_notes: Vec<String>,
    /// What every run shares, said once (several runs only).
    machine: Option<MachineCtx>,
    runs: Vec<RunCtx>,
}

#[derive(Serialize)]
struct PlotCtx {
    anchor: String,
    kind: &'static str,
    title: String,
    caption: String,
    file: String,
    svg: Value,
}

#[derive(Serialize)]
struct RunCtx {
    anchor: String,
    name: String,
    source: String,
    status: &'static str,
    status_class: &'static str,
    fake_clock: bool,
    facts: Vec<Fact>,
    break_line: Option<String>,
    table: TableCtx,
    kinds: Vec<String>,
    plots: Vec<PlotCtx>,
    missing: Vec<String>,
    load: Option<LoadCtx>,
    why: Option<super::why::WhyCtx>,
    noise: Option<super::noise::NoiseCtx>,
    /// For a run of the timerlat tracer: the IRQ beside the thread latency and the
    /// auto-analysis (HTML built and escaped by `crate::timerlat`).
    timerlat: Option<Value>,
    /// Audit, warnings, environment: what the runs share is in [`PageCtx::machine`].
    machine: MachineCtx,
}

#[derive(Serialize)]
struct LoadCtx {
    header: String,
    generators: TableCtx,
    busy: Option<TableCtx>,
    notes: Vec<String>,
}

/// Renders the page and collects the SVG files.
pub(super) fn render(runs: &[ReportRun<'_>], options: &ReportOptions) -> HtmlReport {
    let keys = unique_keys(runs);
    let mut svg_files = Vec::new();
    let (overlays, overlay_notes) = overlays(runs, options, &mut svg_files);
    let mut run_ctxs: Vec<RunCtx> = runs
        .iter()
        .zip(&keys)
        .map(|(r, key)| run_ctx(r, key, options, &mut svg_files))
        .collect();
    let machine = split_shared(
        &mut run_ctxs
            .iter_mut()
            .map(|r| &mut r.machine)
            .collect::<Vec<_>>(),
    );
    let title = title(runs);
    let ctx = PageCtx {
        title,
        version: env!("CARGO_PKG_VERSION"),
        style: Value::from_safe_string(STYLE.to_string()),
        several: runs.len() > 1,
        verdict: super::verdict::verdict(runs, &keys, options),
        overlays,
        overlay_notes,
        machine,
        runs: run_ctxs,
    };
    HtmlReport {
        page: render_template(&ctx),
        svg_files,
    }
}

/// The page's title: what was measured, where, on which kernel (`rtlab report: 3 runs on vm,
/// kernel 6.12.57-rt`), as far as the runs share it.
fn title(runs: &[ReportRun<'_>]) -> String {
    fn shared<'a>(runs: &'a [ReportRun<'_>], f: fn(&'a MeasureRun) -> &'a str) -> Option<&'a str> {
        let first = f(runs.first()?.run);
        runs.iter().all(|r| f(r.run) == first).then_some(first)
    }
    let what = match runs {
        [one] => one.name.to_string(),
        _ => format!("{} runs", runs.len()),
    };
    let host = shared(runs, |r| r.host.hostname.as_str());
    let kernel = shared(runs, |r| r.host.kernel_release.as_str());
    let hosts = {
        let mut all: Vec<&str> = runs.iter().map(|r| r.run.host.hostname.as_str()).collect();
        all.sort_unstable();
        all.dedup();
        all.len()
    };
    match (host, kernel) {
        (Some(h), Some(k)) => format!(
            "rtlab report: {what} on {}, kernel {}",
            or_unknown(h),
            or_unknown(k)
        ),
        (Some(h), None) => format!("rtlab report: {what} on {}, several kernels", or_unknown(h)),
        (None, _) => format!("rtlab report: {what} on {hosts} hosts"),
    }
}

/// A run's entry in the legend of a chart over runs: its name, and the load it ran under when
/// the name does not already say it (`idle`, `cpu:60%`, `RT-#1, load cpu:100%`).
pub(super) fn legend_name(r: &ReportRun<'_>) -> String {
    match &r.run.load {
        Some(load) if !r.name.contains(load.spec.as_str()) => {
            format!("{}, load {}", r.name, load.spec)
        }
        _ => r.name.to_string(),
    }
}

/// The charts over several runs: wake-up latency runs on one, noise runs on another (their
/// figures are not comparable), and a note naming the runs of each kind when both are there.
fn overlays(
    runs: &[ReportRun<'_>],
    options: &ReportOptions,
    files: &mut Vec<SvgFile>,
) -> (Vec<PlotCtx>, Vec<String>) {
    let of = |q: Quantity| -> Vec<(String, &MeasureRun)> {
        runs.iter()
            .filter(|r| plots::quantity(r.run) == q)
            .map(|r| (legend_name(r), r.run))
            .collect()
    };
    let (latency, noise) = (of(Quantity::WakeupLatency), of(Quantity::OsNoise));
    let mut notes = Vec::new();
    if !latency.is_empty() && !noise.is_empty() {
        let names = |group: &[(String, &MeasureRun)]| {
            group
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        notes.push(format!(
            "These runs measured different things, so they are not drawn on one chart: wake-up latency ({}); OS noise, the time taken from a busy loop ({}).",
            names(&latency),
            names(&noise)
        ));
    }
    // One budget line over several runs: the one given now, or the one they were all measured
    // with.
    let budgets: Vec<Option<Nanos>> = latency
        .iter()
        .map(|(_, run)| model::gate::Criteria::of(run, options.budget).budget)
        .collect();
    let shared = budgets
        .first()
        .copied()
        .flatten()
        .filter(|b| budgets.iter().all(|x| *x == Some(*b)));
    let plots = [
        plots::runs_exceedance(&latency, Quantity::WakeupLatency, shared),
        plots::runs_exceedance(&noise, Quantity::OsNoise, None),
        plots::runs_exceedance(&of(Quantity::ResponseTime), Quantity::ResponseTime, None),
        options
            .timeline
            .then(|| timeline::worst_over_time(&latency, shared))
            .flatten(),
    ];
    let ctxs = plots
        .into_iter()
        .flatten()
        .map(|p| {
            let file = format!("{}.svg", p.kind);
            plot_ctx(p, None, file, files)
        })
        .collect();
    (ctxs, notes)
}

/// The template over `ctx`. The template is fixed and the context always serializes, so a
/// failure is a bug in this crate: it panics with the template error, which the tests catch.
fn render_template(ctx: &PageCtx) -> String {
    let mut env = Environment::new();
    env.add_template("report.html", TEMPLATE)
        .expect("the embedded report template parses");
    env.get_template("report.html")
        .and_then(|t| t.render(Serde(ctx)))
        .expect("the embedded report template renders")
}

/// The plot's context, its file recorded in `files`. Its anchor is `PREFIX-KIND`, or the
/// kind alone without a prefix.
fn plot_ctx(plot: Plot, prefix: Option<&str>, file: String, files: &mut Vec<SvgFile>) -> PlotCtx {
    files.push(SvgFile {
        name: file.clone(),
        svg: plot.svg.clone(),
    });
    PlotCtx {
        anchor: match prefix {
            Some(prefix) => format!("{prefix}-{}", plot.kind),
            None => plot.kind.to_string(),
        },
        kind: plot.kind,
        title: plot.title,
        caption: plot.caption,
        file,
        // plotters escapes the text it writes: the SVG goes in as it is.
        svg: Value::from_safe_string(plot.svg),
    }
}

fn status_class(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Complete => "ok",
        RunStatus::Running | RunStatus::Interrupted => "warn",
        RunStatus::BrokeThreshold => "bad",
    }
}

fn run_ctx(
    r: &ReportRun<'_>,
    key: &str,
    options: &ReportOptions,
    files: &mut Vec<SvgFile>,
) -> RunCtx {
    let run = r.run;
    let anchor = format!("run-{key}");
    // The budget line is the one the run is judged against (its own, or the one given now).
    let budget = model::gate::Criteria::of(run, options.budget).budget;
    let plots: Vec<PlotCtx> = plots::run_plots(run, r.name, budget)
        .into_iter()
        .map(|p| {
            let file = format!("{key}-{}.svg", p.kind);
            plot_ctx(p, Some(&anchor), file, files)
        })
        .collect();
    let mut missing = Vec::new();
    if !plots.iter().any(|p| p.kind == "histogram") {
        missing.push("No latency plots: this run holds no samples.".to_string());
    }
    if !plots.iter().any(|p| p.kind == "max-over-time") && run.all.stats.count > 0 {
        missing.push(
            "No maximum-over-time plot: this result carries no per-second series.".to_string(),
        );
    }
    let (kinds, kind_of) = cpu_kinds(&run.host);
    RunCtx {
        anchor,
        name: r.name.to_string(),
        source: r.source.to_string(),
        status: run.status.as_str(),
        status_class: status_class(run.status),
        fake_clock: run.params.clock == "fake",
        facts: header_facts(run),
        break_line: run.break_event.as_ref().map(|e| break_line(e, &run.params)),
        table: cpu_table(run, &kind_of),
        kinds,
        plots,
        missing,
        load: run.load.as_ref().map(|l| load_ctx(l, run.status)),
        why: run.trace.as_ref().map(super::why::why_ctx),
        noise: run.noise.as_ref().map(super::noise::noise_ctx),
        timerlat: run
            .timerlat
            .as_ref()
            .map(|t| Value::from_safe_string(crate::timerlat::analyses_html(t, &run.cpus))),
        machine: MachineCtx {
            audit: run.audit.as_ref().map(audit_ctx),
            warnings: run
                .warnings
                .iter()
                .map(|w| fact(&w.code, w.message.clone()))
                .chain(
                    run.import
                        .iter()
                        .flat_map(|i| i.notes.iter().map(|n| fact("import", n.clone()))),
                )
                .collect(),
            environment: environment(&run.host),
            topology: topology(&run.host, &kind_of),
        },
    }
}

fn header_facts(run: &MeasureRun) -> Vec<Fact> {
    let p = &run.params;
    let host = &run.host;
    let mut facts = vec![
        fact(
            "Host",
            format!(
                "{} ({})",
                or_unknown(&host.hostname),
                or_unknown(&host.arch)
            ),
        ),
        fact(
            "Kernel",
            format!(
                "{} ({})",
                or_unknown(&host.kernel_release),
                preempt_text(host)
            ),
        ),
        fact(
            "When",
            format!(
                "{} to {} ({} measured)",
                run.started_at,
                run.ended_at,
                format_secs(run.elapsed_ns.get())
            ),
        ),
        fact("Status", run.status.as_str()),
    ];
    facts.extend(imported_fact(run));
    facts.extend(worst_fact(run));
    facts.push(fact("Parameters", params_text(run)));
    facts.push(fact(
        "Clock",
        if p.clock == "monotonic" {
            "CLOCK_MONOTONIC".to_string()
        } else {
            format!("{} (scripted for a test: not a measurement)", p.clock)
        },
    ));
    facts.push(fact(
        "rtlab",
        match &run.build {
            Some(build) => format!("{}, {build}", run.rtlab_version),
            None => run.rtlab_version.clone(),
        },
    ));
    facts
}

/// Where an imported run came from and what its figures are.
fn imported_fact(run: &MeasureRun) -> Option<Fact> {
    let i = run.import.as_ref()?;
    Some(fact(
        "Imported",
        format!(
            "from {} output {} ({}): {}",
            i.tool,
            i.file,
            i.quantity.describe(),
            match i.quantity {
                Quantity::OsNoise => {
                    "time taken from a busy loop, not wake-up latency; the figures below are \
                     noise"
                }
                Quantity::WakeupLatency => "the figures below are the tool's wake-up latency",
                Quantity::ResponseTime => "the figures below are response times",
            }
        ),
    ))
}

/// The worst figure, on which CPUs, and the p99.9 over all of them.
fn worst_fact(run: &MeasureRun) -> Option<Fact> {
    let max = run.all.stats.max_ns?;
    let worst = CpuSet::from_cpus(
        run.cpus
            .iter()
            .filter(|c| c.stats.max_ns == Some(max))
            .map(|c| c.cpu),
    );
    Some(fact(
        match Some(run.quantity()) {
            Some(Quantity::OsNoise) => "Worst noise",
            _ => "Worst latency",
        },
        format!(
            "{} us on CPU{} {worst}, p99.9 {} us over all CPUs",
            format_opt_us(Some(max)),
            if worst.len() == 1 { "" } else { "s" },
            format_opt_us(run.all.stats.p99_9_ns)
        ),
    ))
}

/// The parameters as applied, in one line.
fn params_text(run: &MeasureRun) -> String {
    let p = &run.params;
    let s = crate::table::Settings::of(run);
    let mut params = format!(
        "{} on CPUs {}, interval {}, planned {}, mlock {}, stack {} KiB, dma latency {}",
        s.policy,
        p.cpus,
        s.interval,
        planned_text(p),
        s.mlock,
        p.thread_stack_bytes / 1024,
        s.dma_latency,
    );
    if p.aligned {
        params.push_str(", aligned wake-ups");
    }
    if let Some(main) = &p.main_cpus {
        params.push_str(&format!(", other threads on CPUs {main}"));
    }
    if let Some(b) = p.break_ns {
        params.push_str(&format!(", break at {b}"));
    }
    if let Some(b) = p.budget_ns {
        params.push_str(&format!(", budget {b}"));
    }
    params
}

/// The kinds of CPU on the host, described, when there is more than one; and the kind
/// letter (`A`, `B`, ...) of each CPU.
fn cpu_table(run: &MeasureRun, kind_of: &BTreeMap<u32, String>) -> TableCtx {
    let with_kind = !kind_of.is_empty();
    let mut head: Vec<String> = COLUMNS.iter().map(|c| c.to_string()).collect();
    if with_kind {
        head.insert(1, "kind".to_string());
    }
    let mut rows = Vec::new();
    for c in &run.cpus {
        let mut row = stats_row(c.cpu.to_string(), &c.stats);
        if with_kind {
            row.insert(1, kind_of.get(&c.cpu).cloned().unwrap_or_default());
        }
        rows.push(row);
    }
    let mut all = stats_row("all".to_string(), &run.all.stats);
    if with_kind {
        all.insert(1, String::new());
    }
    TableCtx {
        head,
        rows,
        foot: vec![all],
    }
}

fn load_ctx(report: &LoadReport, status: RunStatus) -> LoadCtx {
    let mut rows = load_rows(report);
    let head = if rows.is_empty() {
        Vec::new()
    } else {
        rows.remove(0)
    };
    let busy = (!report.cpu_busy.is_empty()).then(|| {
        let steal = report
            .cpu_busy
            .iter()
            .any(|b| b.steal_percent >= STEAL_WORTH_SHOWING);
        let mut head = vec!["CPU".to_string(), "busy".to_string()];
        if steal {
            head.push("stolen by the hypervisor".to_string());
        }
        let rows = report
            .cpu_busy
            .iter()
            .map(|b| {
                let mut row = vec![b.cpu.to_string(), format!("{:.1}%", b.busy_percent)];
                if steal {
                    row.push(format!("{:.1}%", b.steal_percent));
                }
                row
            })
            .collect();
        TableCtx {
            head,
            rows,
            foot: Vec::new(),
        }
    });
    LoadCtx {
        header: load_header_of_run(report, status),
        generators: TableCtx {
            head,
            rows,
            foot: Vec::new(),
        },
        busy,
        notes: report
            .generators
            .iter()
            .flat_map(|g| g.notes.iter().map(move |n| format!("{}: {n}", g.spec)))
            .collect(),
    }
}
