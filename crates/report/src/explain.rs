//! Spike explanations as text: per spike a heading, the story wrapped to the terminal, the
//! parts with their time and share, and the caveats; the `rtlab.explain/2` JSON document; and
//! the kernel tracers' reports `rtlab explain FILE` reads (a latency tracer's, hwlat's,
//! timerlat's) with their story, steps, stack and per-CPU table. The sentences are
//! [`crate::story`]'s.

use std::fmt::Write as _;

use model::explain::{ExplainDoc, Explanation, TraceCapture};
use trace::hwlat::HwlatReport;
use trace::latency::LatencyReport;
use trace::timerlat::TimerlatReport;

pub(crate) use crate::story::us;

/// Text width the stories wrap at.
const WIDTH: usize = 96;

/// Text width the tracers' reports wrap at.
const REPORT_WIDTH: usize = 94;

/// One explanation.
pub fn explanation_text(x: &Explanation) -> String {
    let mut out = String::new();
    let who = match (&x.comm, x.pid) {
        (Some(c), Some(p)) => format!("{c} (pid {p})"),
        (_, Some(p)) => format!("pid {p}"),
        (Some(c), None) => c.clone(),
        (None, None) => "a thread".to_string(),
    };
    let cycle = x.cycle.map_or(String::new(), |c| format!(", cycle {c}"));
    let share = x.parts.first().map_or(0.0, |p| p.share * 100.0);
    let _ = writeln!(
        out,
        "CPU {}{cycle}: {who}, {} late; main cause: {} ({share:.0} %)",
        x.cpu,
        us(x.latency_ns),
        crate::story::agent::main_cause(x)
    );
    for line in wrap(&crate::story::spike::tell(x), WIDTH - 2) {
        let _ = writeln!(out, "  {line}");
    }
    let mut rows = vec![vec![
        "part".to_string(),
        "what".to_string(),
        "time".to_string(),
        "share".to_string(),
        "from".to_string(),
    ]];
    for p in x.parts.iter().take(8) {
        let mut what = crate::story::agent::name(&p.what);
        if what.len() > 60 {
            let mut cut = 57;
            while !what.is_char_boundary(cut) {
                cut -= 1;
            }
            what.truncate(cut);
            what.push_str("...");
        }
        if p.times > 1 {
            what = format!("{what} (x{})", p.times);
        }
        rows.push(vec![
            crate::story::agent::kind(p.kind).to_string(),
            what,
            us(p.duration_ns),
            format!("{:.1} %", p.share * 100.0),
            format!("+{}", us(p.start_ns)),
        ]);
    }
    if x.parts.len() > 8 {
        let rest: u64 = x.parts[8..].iter().map(|p| p.duration_ns).sum();
        let share: f64 = x.parts[8..].iter().map(|p| p.share).sum();
        rows.push(vec![
            "other".to_string(),
            format!("{} more parts", x.parts.len() - 8),
            us(rest),
            format!("{:.1} %", share * 100.0),
            String::new(),
        ]);
    }
    for (i, line) in crate::columns::align_two_left(&rows).iter().enumerate() {
        let _ = writeln!(out, "  {}", line.trim_end());
        if i == 0 {
            let _ = writeln!(out, "  {}", "-".repeat(line.trim_end().len()));
        }
    }
    functions_lines(&mut out, x);
    confidence_lines(&mut out, x);
    out
}

/// How much of the delay the trace shows and what it could not see, then the other caveats as
/// notes.
fn confidence_lines(out: &mut String, x: &Explanation) {
    for (i, line) in wrap(&crate::story::spike::seen(x), WIDTH - 2)
        .into_iter()
        .enumerate()
    {
        let _ = writeln!(out, "  {}{line}", if i == 0 { "" } else { "  " });
    }
    for c in x
        .caveats
        .iter()
        .filter(|c| !crate::story::caveat::in_confidence(c))
    {
        for (i, line) in wrap(&crate::story::caveat::say(c), WIDTH - 8)
            .into_iter()
            .enumerate()
        {
            let _ = writeln!(out, "  {} {line}", if i == 0 { "note:" } else { "     " });
        }
    }
}

/// A line per part the function tracers saw, under the parts.
fn functions_lines(out: &mut String, x: &Explanation) {
    for p in x.parts.iter().take(8) {
        if let Some(f) = &p.functions {
            for (i, line) in wrap(&functions_line(p, f), WIDTH - 4)
                .into_iter()
                .enumerate()
            {
                let _ = writeln!(out, "  {}{line}", if i == 0 { "" } else { "  " });
            }
        }
    }
}

/// `functions in higher-priority task (hog): hrtimer_interrupt 12 calls 48 us, ... (130
/// calls traced)`: the functions the function tracers recorded in a part.
fn functions_line(p: &model::explain::Part, f: &model::explain::FunctionsTraced) -> String {
    let top: Vec<String> = f
        .top
        .iter()
        .take(5)
        .map(|t| {
            let calls = crate::story::plural(t.calls, "call", "calls");
            match t.time_ns {
                Some(ns) => format!("{} {calls} {}", t.name, us(ns)),
                None => format!("{} {calls}", t.name),
            }
        })
        .collect();
    format!(
        "functions in {} ({}): {} ({} traced)",
        crate::story::agent::kind(p.kind),
        crate::story::agent::short(&p.what),
        top.join(", "),
        crate::story::plural(f.calls, "call", "calls")
    )
}

/// The lines the measurement table ends with for a run measured with `--trace`: each
/// explained spike's main cause in one line, where the whole story is, and what could not be
/// explained (spikes older than the trace buffer).
pub fn capture_lines(t: &TraceCapture) -> String {
    let mut out = String::new();
    if t.explanations.is_empty() {
        let _ = writeln!(
            out,
            "trace: no spike explained{}",
            t.notes.first().map_or(String::new(), |n| format!(" ({n})"))
        );
        return out;
    }
    let _ = writeln!(
        out,
        "why (from the kernel trace; `rtlab explain RUN` tells each story):"
    );
    for x in &t.explanations {
        let top = x.parts.first();
        let _ = writeln!(
            out,
            "  CPU {}{}: {} late: {} {}{}",
            x.cpu,
            x.cycle.map_or(String::new(), |c| format!(" cycle {c}")),
            us(x.latency_ns),
            crate::story::agent::kind(x.culprit),
            top.map_or(String::new(), |p| format!(
                "({}), ",
                crate::story::agent::short(&p.what)
            )),
            top.map_or(String::new(), |p| format!("{:.0} %", p.share * 100.0)),
        );
    }
    // What was not explained, and why (spikes older than the buffer first of all): the worst
    // spike may be among them, and the lines above must not pass for the whole story. The
    // notes say so themselves ("not explained: ..."), and where the spikes came from.
    for note in &t.notes {
        let _ = writeln!(out, "  note: {note}");
    }
    out
}

/// Every explanation of a document, with its notes.
pub fn explain_text(doc: &ExplainDoc) -> String {
    let mut out = String::new();
    if let Some(t) = &doc.trace {
        let _ = writeln!(
            out,
            "{}: {} events on CPU{} {} over {:.3} s; {} timer wake-ups; {} lost, {} unreadable lines",
            doc.source,
            t.events,
            if t.cpus.len() == 1 { "" } else { "s" },
            t.cpus
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(","),
            t.span_ns as f64 / 1e9,
            t.wakeups,
            t.lost_events,
            t.malformed
        );
        out.push('\n');
    }
    for (i, x) in doc.explanations.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&explanation_text(x));
    }
    for (i, a) in doc.timerlat.iter().enumerate() {
        if i > 0 || !doc.explanations.is_empty() {
            out.push('\n');
        }
        out.push_str(&crate::timerlat::analysis_text(a));
        for line in wrap(&crate::timerlat::advice(a), WIDTH - 6) {
            let _ = writeln!(out, "  {line}");
        }
    }
    for n in &doc.notes {
        for (i, line) in wrap(n, WIDTH - 6).into_iter().enumerate() {
            let _ = writeln!(out, "{} {line}", if i == 0 { "note:" } else { "     " });
        }
    }
    out
}

/// The document as pretty JSON with a trailing newline.
pub fn explain_json(doc: &ExplainDoc) -> String {
    let mut text = serde_json::to_string_pretty(doc).expect("an explanation always serializes");
    text.push('\n');
    text
}

/// A latency tracer's report: its story, the longest steps and the recorded stack.
pub fn latency_text(r: &LatencyReport) -> String {
    let mut out = wrapped(&crate::story::latency::tell(r));
    let steps = r.longest_steps(5);
    if !steps.is_empty() {
        out.push_str("\nlongest steps:\n");
        for (i, ns) in steps {
            let e = &r.entries[i];
            let _ = writeln!(
                out,
                "  {:>8}  at {:>6} us  {}",
                us(ns),
                e.offset_ns / 1000,
                e.text
            );
        }
    }
    if !r.stack.is_empty() {
        out.push_str("\nstack:\n");
        for f in &r.stack {
            let _ = writeln!(out, "  {f}");
        }
    }
    out
}

/// hwlat's samples: the story and per CPU the samples and the largest latency.
pub fn hwlat_text(r: &HwlatReport) -> String {
    let mut out = wrapped(&crate::story::hwlat::tell(r));
    let mut rows = vec![vec![
        "CPU".to_string(),
        "samples".to_string(),
        "max us".to_string(),
    ]];
    for (cpu, n, max) in r.per_cpu() {
        rows.push(vec![cpu.to_string(), n.to_string(), max.to_string()]);
    }
    out.push('\n');
    for line in crate::columns::align(&rows, false) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// timerlat's latencies: the story and the per-CPU table.
pub fn timerlat_text(r: &TimerlatReport) -> String {
    let mut out = crate::story::timerlat::tell(r);
    for a in &r.analyses {
        out.push('\n');
        out.push_str(&crate::timerlat::analysis_text(a));
        for line in wrap(&crate::timerlat::advice(a), REPORT_WIDTH - 2) {
            let _ = writeln!(out, "  {line}");
        }
    }
    out
}

/// `text` wrapped to the tracers' reports' width, a newline after each line.
fn wrapped(text: &str) -> String {
    wrap(text, REPORT_WIDTH)
        .into_iter()
        .map(|line| line + "\n")
        .collect()
}

/// Words of `text` in lines of at most `width` characters.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}
