//! `rtlab explain SOURCE` and its analyses (`irqs`, `sched`, `wakeups`): what held a late
//! thread up, from a run measured with `--trace`, a result file, or a trace file (ftrace text,
//! `trace-cmd report` text, a latency tracer's report, hwlat output).
//!
//! Trace files are read twice, streaming (first the wake-ups and statistics, then the windows
//! around the spikes), so their size is not limited by memory.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result};
use model::explain::{ExplainDoc, SCHEMA};
use trace::explain::{self, Scan, WindowSpec};

use crate::console;
use crate::exit::{Exit, UsageError};
use crate::explain_stats;
use crate::flags::{ExplainArgs, ExplainFormat};

/// `rtlab explain`.
pub fn run(args: &ExplainArgs) -> Result<Exit> {
    if let Some(analysis) = &args.analysis {
        return explain_stats::run(analysis);
    }
    let source = args.source.as_deref().unwrap_or_default();
    let path = Path::new(source);
    if path.is_file() && !looks_like_json(path)? {
        return explain_file(path, args);
    }
    let run = crate::runs::load(source, args.db.db.as_deref())?;
    if run.trace.is_none()
        && let Some(timerlat) = run.timerlat
    {
        return timerlat_analyses(source, timerlat, args);
    }
    let Some(capture) = run.trace else {
        return Err(UsageError(format!(
            "{source}: this run has no trace to explain; measure with `rtlab measure --trace` \
             (with --break TIME to freeze the trace at the first spike over TIME)"
        ))
        .into());
    };
    let mut notes = capture.notes.clone();
    notes.extend(capture.missing.iter().map(|m| format!("missing event {m}")));
    let doc = ExplainDoc {
        schema: SCHEMA.to_string(),
        source: source.to_string(),
        trace: None,
        explanations: capture.explanations,
        notes,
        timerlat: Vec::new(),
    };
    print(&doc, args.format)?;
    Ok(Exit::Ok)
}

/// A run of the timerlat tracer: the auto-analysis of its worst activations (the stop's
/// first), as many as `--worst` asks.
fn timerlat_analyses(
    source: &str,
    timerlat: model::timerlat::TimerlatInfo,
    args: &ExplainArgs,
) -> Result<Exit> {
    let mut notes = Vec::new();
    if timerlat.analyses.is_empty() {
        notes.push(
            "the run has no analysed activation: the tracer recorded no latency on its CPUs"
                .to_string(),
        );
    }
    if timerlat.lost_events > 0 {
        notes.push(format!(
            "the tracer's buffer lost {} events: an activation split by a loss is not analysed",
            timerlat.lost_events
        ));
    }
    let mut analyses = timerlat.analyses;
    analyses.truncate(args.worst.max(1));
    let doc = ExplainDoc {
        schema: SCHEMA.to_string(),
        source: source.to_string(),
        trace: None,
        explanations: Vec::new(),
        notes,
        timerlat: analyses,
    };
    print(&doc, args.format)?;
    Ok(Exit::Ok)
}

fn print(doc: &ExplainDoc, format: ExplainFormat) -> Result<()> {
    let text = match format {
        ExplainFormat::Text => report::explain::explain_text(doc),
        ExplainFormat::Json => report::explain::explain_json(doc),
    };
    console::print_stdout(&text)?;
    Ok(())
}

/// Whether the file starts with `{` (a result document).
fn looks_like_json(path: &Path) -> Result<bool> {
    let mut head = [0u8; 256];
    let n = File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|e| UsageError(format!("{}: {}", path.display(), files::plain_io(&e))))?;
    Ok(head[..n]
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'{'))
}

/// A small text file, whole (latency tracer reports, hwlat output).
fn small_text(path: &Path) -> Result<Option<String>> {
    let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(u64::MAX);
    if len > 16 << 20 {
        return Ok(None);
    }
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(String::from_utf8(bytes).ok())
}

/// A tracer's own report the file holds (a latency tracer's, timerlat's, hwlat's: as text,
/// or recorded by trace-cmd), rendered; `None` for a trace of events to explain.
fn tracer_file(path: &Path, name: &str, format: ExplainFormat) -> Result<Option<String>> {
    // A recording of events is binary; a latency tracer's recording holds the tracer's text.
    let dat = explain_stats::is_dat(path);
    let text = if dat {
        explain_stats::dat_text(path)?
    } else {
        small_text(path)?
    };
    if let Some(text) = text {
        if let Some(out) = tracer_report(&text, name, format)? {
            return Ok(Some(out));
        }
        if dat {
            return Err(UsageError(format!(
                "{name}: the recording holds a tracer's text instead of events, and it is not \
                 a latency tracer's, timerlat's or hwlat's report; `trace-cmd report {name}` \
                 prints it"
            ))
            .into());
        }
    }
    if dat {
        return dat_tracer_report(path, format);
    }
    Ok(None)
}

fn explain_file(path: &Path, args: &ExplainArgs) -> Result<Exit> {
    let name = path.display().to_string();
    if let Some(out) = tracer_file(path, &name, args.format)? {
        console::print_stdout(&out)?;
        return Ok(Exit::Ok);
    }
    let (scan, mut notes) = explain_stats::scan(path)?;
    check_explainable(&scan, &name, || graph_text(path))?;
    let offset = scan.clock_offset_ns;
    let spikes = chosen(&scan, args.worst);
    if spikes.is_empty() {
        // Timer wake-ups, but none of a real-time thread and no breach marker: nothing here
        // is a latency an explanation could honestly account for.
        let (normal, prios) = scan.normal_wakeups();
        let prios: Vec<String> = prios.iter().map(i32::to_string).collect();
        return Err(UsageError(format!(
            "{name}: no real-time thread's timer wake-up to explain: the {normal} timer wake-ups \
             it holds are of normal tasks (kernel priority {}), whose delays are the fair \
             scheduler sharing the CPU, not a missed deadline; record while the real-time thread \
             runs (`rtlab measure --trace`, or cyclictest under trace-cmd record -e sched -e irq \
             -e timer); `rtlab explain sched {name}` shows every task's delays",
            prios.join(", ")
        ))
        .into());
    }
    let specs: Vec<WindowSpec> = spikes.iter().map(|(w, _)| w.window_spec(offset)).collect();
    let windows = explain_stats::collect(path, &specs)?;
    let explanations = spikes
        .iter()
        .zip(&windows)
        .map(|((w, marker), win)| {
            if let Some(m) = marker {
                notes.push(format!(
                    "CPU {}: explained the wake-up before the marker \"{m}\"",
                    w.cpu
                ));
            }
            let spike = w.spike(offset);
            explain::explain(win, &spike, w.offset(offset))
        })
        .collect();
    if let Some(note) = preemption_note(&scan, &spikes) {
        notes.push(note);
    }
    if let Some(damage) = &scan.read.damage {
        notes.push(format!(
            "parts of the recording could not be read: {damage}"
        ));
    } else if scan.read.malformed > 0 {
        notes.push(format!(
            "{} lines could not be read (the first: line {})",
            scan.read.malformed,
            scan.read.first_malformed.as_ref().map_or(0, |(n, _)| *n)
        ));
    }
    let doc = ExplainDoc {
        schema: SCHEMA.to_string(),
        source: name,
        trace: Some(trace::explain::summary(&scan)),
        explanations,
        notes,
        timerlat: Vec::new(),
    };
    print(&doc, args.format)?;
    Ok(Exit::Ok)
}

/// The longest preemption of a real-time task while it ran, when it is longer than every
/// wake-up explained: such a delay is no wake-up's, so a measurement shows it as a late or
/// overrun cycle that the explanations above do not cover.
fn preemption_note(scan: &Scan, spikes: &[(explain::Wakeup, Option<String>)]) -> Option<String> {
    let p = scan.longest_preemption.as_ref()?;
    let offset = scan.clock_offset_ns;
    let worst = spikes
        .iter()
        .map(|(w, _)| w.latency_ns(offset))
        .max()
        .unwrap_or(0);
    if p.delay_ns <= worst {
        return None;
    }
    let (by, by_pid, by_prio) = &p.by;
    Some(format!(
        "{} (pid {}) was preempted while running for {} us on CPU {} at {}.{:06}, by {by} (pid \
         {by_pid}, kernel priority {by_prio}): longer than any wake-up explained here, and no \
         wake-up's (a measuring thread shows it as a late or overrun cycle)",
        p.comm,
        p.pid,
        p.delay_ns / 1000,
        p.cpu,
        p.from_ts / 1_000_000_000,
        p.from_ts % 1_000_000_000 / 1000
    ))
}

/// A latency tracer's, timerlat's or hwlat's own report in `text`, rendered; `None` when the
/// text is none of them (a trace to explain).
fn tracer_report(text: &str, name: &str, format: ExplainFormat) -> Result<Option<String>> {
    let refused = |e: String| UsageError(format!("{name}: {e}"));
    if trace::latency::detect(text) {
        let r = trace::latency::parse(text).map_err(|e| refused(e.to_string()))?;
        let json = || serde_json::to_string_pretty(&r);
        return rendered(format, json, || report::explain::latency_text(&r)).map(Some);
    }
    if trace::timerlat::detect(text) {
        let r = trace::timerlat::parse(text).map_err(|e| refused(e.to_string()))?;
        let json = || serde_json::to_string_pretty(&r);
        return rendered(format, json, || report::explain::timerlat_text(&r)).map(Some);
    }
    if trace::hwlat::detect(text) {
        let r = trace::hwlat::parse(text).map_err(|e| refused(e.to_string()))?;
        let json = || serde_json::to_string_pretty(&r);
        return rendered(format, json, || report::explain::hwlat_text(&r)).map(Some);
    }
    Ok(None)
}

/// The report of the tracer whose entries the recording at `path` holds (`trace-cmd record
/// -p timerlat`, `-p hwlat`), rendered as its trace text's is; `None` for a recording of
/// events.
fn dat_tracer_report(path: &Path, format: ExplainFormat) -> Result<Option<String>> {
    use trace::dat::tracer::{self, Tracer};
    let explain_stats::Opened::Dat(dat) = explain_stats::open(path)? else {
        return Ok(None);
    };
    let refused = |e: String| UsageError(format!("{}: {e}", path.display()));
    let out = match tracer::probe(&dat) {
        None => return Ok(None),
        Some(Tracer::Timerlat) => {
            let r = tracer::timerlat(&dat).map_err(refused)?;
            let json = || serde_json::to_string_pretty(&r);
            rendered(format, json, || report::explain::timerlat_text(&r))?
        }
        Some(Tracer::Hwlat) => {
            let r = tracer::hwlat(&dat).map_err(refused)?;
            let json = || serde_json::to_string_pretty(&r);
            rendered(format, json, || report::explain::hwlat_text(&r))?
        }
    };
    Ok(Some(out))
}

/// A tracer's report as JSON, or in words.
fn rendered(
    format: ExplainFormat,
    json: impl FnOnce() -> serde_json::Result<String>,
    text: impl FnOnce() -> String,
) -> Result<String> {
    Ok(match format {
        ExplainFormat::Json => json()? + "\n",
        ExplainFormat::Text => text(),
    })
}

/// Whether the file at `path` is the kernel's own text of the function_graph tracer (its
/// header line): calls and durations, with no events to place them in time.
fn graph_text(path: &Path) -> bool {
    let mut head = [0u8; 256];
    let n = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .unwrap_or(0);
    head[..n]
        .split(|&b| b == b'\n')
        .take(4)
        .any(|l| l.trim_ascii() == b"# tracer: function_graph")
}

/// A trace with no events, or no timer wake-up of a sleeping task, has no spike to explain.
/// `graph`: whether the file is the function_graph tracer's text (asked only when no event
/// was read).
fn check_explainable(scan: &Scan, name: &str, graph: impl FnOnce() -> bool) -> Result<()> {
    if scan.read.events == 0 && graph() {
        return Err(UsageError(format!(
            "{name}: the kernel's function_graph text holds calls and their durations but no \
             events to place them among; record the graph with the scheduler's and timers' \
             events (trace-cmd record -p function_graph -e sched -e timer -e irq) and give the \
             trace.dat or its `trace-cmd report` text"
        ))
        .into());
    }
    if scan.read.events == 0 {
        return Err(UsageError(format!(
            "{name}: no trace events in it{}; give the kernel's trace text, trace-cmd report \
             output, a latency tracer's or timerlat's report or hwlat output",
            scan.read
                .first_malformed
                .as_ref()
                .map_or(String::new(), |(n, _)| format!(" (line {n} is not one)"))
        ))
        .into());
    }
    if scan.wakeups.is_empty() {
        return Err(UsageError(format!(
            "{name}: no timer wake-up of a sleeping task in this trace, so no spike to explain; \
             it needs the sched_switch, sched_waking or sched_wakeup, and timer:hrtimer_start / \
             hrtimer_expire_entry events (`rtlab measure --trace`, or trace-cmd record -e sched \
             -e irq -e timer); `rtlab explain irqs|sched` read what it has"
        ))
        .into());
    }
    Ok(())
}

/// The wake-ups to explain: the one before each breach marker, then the worst.
fn chosen(scan: &Scan, n: usize) -> Vec<(explain::Wakeup, Option<String>)> {
    let mut out: Vec<(explain::Wakeup, Option<String>)> = Vec::new();
    for (_, _, text, last) in &scan.markers {
        if let Some(w) = last
            && !out.iter().any(|(o, _)| o == w)
        {
            out.push((w.clone(), Some(text.clone())));
        }
    }
    let marked = out.len();
    for w in scan.worst(n) {
        if out.len() >= n.max(1) + marked {
            break;
        }
        if !out.iter().any(|(o, _)| o == w) {
            out.push((w.clone(), None));
        }
    }
    out.truncate(n.max(1).max(marked));
    out
}
