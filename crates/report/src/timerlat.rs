//! A timerlat run's inside view in words: an activation's auto-analysis
//! ([`model::timerlat::Analysis`], made by `trace::timerlat::analysis`) as an aligned block of
//! its parts with their time and share ([`analysis_text`]), what to do about the largest part
//! ([`advice`]), the per-CPU IRQ and thread maxima for `rtlab show` ([`timerlat_text`]) and
//! the report's "Inside the kernel (timerlat)" section as an HTML fragment
//! ([`analyses_html`]).
//!
//! Only words and layout live here: the figures come from `model`, so rewording changes no
//! stored document. Times are microseconds with one decimal ([`crate::format_us`]), shares
//! percent of the latency analysed with one decimal. Returns text; prints nothing.

use std::fmt::Write as _;

use model::measure::CpuResult;
use model::timerlat::{Analysis, Context, Interference, TimerlatInfo};

use crate::format_us;

mod advice;
mod html;
#[cfg(test)]
pub(crate) mod tests;

pub use advice::advice;
pub use html::analyses_html;

/// Which part of a latency a figure is; the HTML bar colours them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Delay,
    TimerIrq,
    Blocking,
    Nmi,
    Irq,
    Softirq,
    Thread,
    Rest,
}

/// One part of an analysed latency, in the order the parts happen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Part<'a> {
    pub(crate) kind: Kind,
    /// What it is (`blocking thread`).
    pub(crate) label: &'static str,
    /// Who (`spin:8937`), when one.
    pub(crate) who: String,
    /// Its time; `None` when the trace did not say.
    pub(crate) ns: Option<u64>,
    /// A remark (`exit from idle`).
    pub(crate) note: &'static str,
    /// Its items (each IRQ, softirq, thread).
    pub(crate) items: &'a [Interference],
}

impl<'a> Part<'a> {
    fn new(kind: Kind, label: &'static str, ns: Option<u64>) -> Part<'a> {
        Part {
            kind,
            label,
            who: String::new(),
            ns,
            note: "",
            items: &[],
        }
    }

    fn list(kind: Kind, label: &'static str, items: &'a [Interference]) -> Part<'a> {
        Part {
            items,
            ..Part::new(kind, label, Some(Analysis::sum(items)))
        }
    }
}

/// `name:id`, or the name alone for an NMI's empty name or the summed rest.
/// `name:id`, for a sentence (no count).
pub(crate) fn source(i: &Interference) -> String {
    if i.name == trace::timerlat::analysis::OTHERS {
        i.name.clone()
    } else {
        format!("{}:{}", i.name, i.id)
    }
}

/// `name:id ×count`, for a table row.
pub(crate) fn who(i: &Interference) -> String {
    let times = if i.count > 1 {
        format!(" ×{}", i.count)
    } else {
        String::new()
    };
    if i.name == trace::timerlat::analysis::OTHERS {
        format!("{}{times}", i.name)
    } else {
        format!("{}:{}{times}", i.name, i.id)
    }
}

/// The parts of `a`'s latency that it has, in order, ending with what no event accounts
/// for. For an IRQ latency only the handler's delay (and the rest up to the sample) count.
pub(crate) fn parts(a: &Analysis) -> Vec<Part<'_>> {
    let mut out = Vec::new();
    let delay = a.irq_handler_delay_ns.min(a.total_ns);
    let mut d = Part::new(Kind::Delay, "IRQ handler delay", Some(delay));
    d.note = if a.exit_from_idle {
        "exit from idle"
    } else if a.timerlat_irq_ns == 0 {
        "at most; the IRQ's own event is missing"
    } else {
        ""
    };
    out.push(d);
    if a.context == Context::Thread {
        if a.timerlat_irq_ns > 0 {
            out.push(Part::new(
                Kind::TimerIrq,
                "timerlat IRQ duration",
                Some(a.timerlat_irq_ns),
            ));
        }
        if let Some(b) = a.blocking.as_ref().filter(|b| b.pid != 0) {
            let mut p = Part::new(Kind::Blocking, "blocking thread", b.duration_ns);
            p.who = format!("{}:{}", b.comm, b.pid);
            if b.duration_ns.is_none() {
                p.note = "running when the timer fired; no event says for how long";
            }
            out.push(p);
        }
        if a.nmi_ns > 0 {
            out.push(Part::new(Kind::Nmi, "NMI interference", Some(a.nmi_ns)));
        }
        for (kind, label, list) in [
            (Kind::Irq, "IRQ interference", &a.irqs),
            (Kind::Softirq, "softirq interference", &a.softirqs),
            (Kind::Thread, "thread interference", &a.threads),
        ] {
            if !list.is_empty() {
                out.push(Part::list(kind, label, list));
            }
        }
    }
    let counted = out
        .iter()
        .fold(0u64, |s, p| s.saturating_add(p.ns.unwrap_or(0)));
    let rest = a.total_ns.saturating_sub(counted);
    if rest > 0 {
        let mut p = Part::new(Kind::Rest, "not accounted for", Some(rest));
        p.note = match a.context {
            Context::Irq => "handler entry to the sample",
            _ => "scheduler and context switch, or events not recorded",
        };
        out.push(p);
    }
    out
}

/// The part that took the most time, with [`parts`]' rest among them.
pub(crate) fn main_part<'p, 'a>(parts: &'p [Part<'a>]) -> Option<&'p Part<'a>> {
    parts
        .iter()
        .filter(|p| p.ns.unwrap_or(0) > 0)
        .max_by_key(|p| (p.ns.unwrap_or(0), std::cmp::Reverse(p.kind == Kind::Rest)))
}

/// `CPU 3, activation 4211: thread latency 133.5 us`.
pub(crate) fn heading(a: &Analysis) -> String {
    format!(
        "CPU {}, activation {}: {} {} us{}",
        a.cpu,
        a.activation,
        a.context.describe(),
        format_us(a.total_ns),
        if a.context == Context::Irq {
            " (the trace ended before the thread ran)"
        } else {
            ""
        }
    )
}

/// A row of the block: label, time, share, remark; or a line of its own.
enum Row {
    Cells([String; 3], String),
    Line(String),
}

impl Row {
    /// A part's row: `label`, its time (`-` when unknown), its share of `a` when `share`,
    /// and a remark.
    fn part(a: &Analysis, label: String, ns: Option<u64>, share: bool, note: &str) -> Row {
        let time = ns.map_or_else(|| "-".to_string(), |n| format!("{} us", format_us(n)));
        let share = match ns {
            Some(n) if share => format!("{:.1} %", a.share(n)),
            _ => String::new(),
        };
        Row::Cells([label, time, share], note.to_string())
    }
}

/// One analysis as a block: a heading, then per part its time and share of the latency with
/// its items, the stack, and the total.
pub fn analysis_text(a: &Analysis) -> String {
    let parts = parts(a);
    let mut rows = Vec::new();
    for p in &parts {
        let label = if p.who.is_empty() {
            p.label.to_string()
        } else {
            format!("{} {}", p.label, p.who)
        };
        rows.push(Row::part(a, label, p.ns, true, p.note));
        for i in p.items {
            rows.push(Row::part(
                a,
                format!("  {}", who(i)),
                Some(i.duration_ns),
                true,
                "",
            ));
        }
        if p.kind == Kind::Delay {
            context_rows(a, &mut rows);
        }
        if p.kind == Kind::Blocking {
            stack_rows(a, &mut rows);
        }
    }
    if !parts.iter().any(|p| p.kind == Kind::Blocking) {
        stack_rows(a, &mut rows);
    }
    let total = Row::part(
        a,
        a.context.describe().to_string(),
        Some(a.total_ns),
        true,
        "",
    );
    let mut out = heading(a);
    out.push('\n');
    lay_out(&mut out, &rows, &total);
    out
}

/// The stack, when the tracer recorded one.
fn stack_rows(a: &Analysis, rows: &mut Vec<Row>) {
    if !a.stack.is_empty() {
        rows.push(Row::Line(
            "  stack in the timer's IRQ, innermost first:".into(),
        ));
        rows.extend(a.stack.iter().map(|f| Row::Line(format!("      {f}"))));
    }
}

/// The rows after the handler's delay that are no part of the sum: the IRQ that was running
/// at the expiry, the IRQ latency (a thread latency contains it), and for an IRQ latency the
/// thread it interrupted.
fn context_rows(a: &Analysis, rows: &mut Vec<Row>) {
    if let Some(p) = &a.previous_irq {
        rows.push(Row::part(
            a,
            format!("  previous IRQ {}", who(p)),
            Some(p.duration_ns),
            false,
            "running at the expiry: may account for up to this",
        ));
    }
    if a.context == Context::Thread {
        rows.push(Row::part(
            a,
            "IRQ latency".into(),
            Some(a.irq_latency_ns),
            false,
            "expiry to the timerlat IRQ (includes the delay)",
        ));
    }
    match &a.blocking {
        Some(b) if b.pid == 0 => {
            rows.push(Row::Line("the CPU was idle when the timer fired".into()));
        }
        Some(b) if a.context != Context::Thread => rows.push(Row::Line(format!(
            "interrupted thread {}:{} (it was running when the timer fired)",
            b.comm, b.pid
        ))),
        _ => {}
    }
}

/// The rows with their cells aligned (label left, time and share right), two-space indent,
/// a rule and the total last.
fn lay_out(out: &mut String, rows: &[Row], total: &Row) {
    let all = || rows.iter().chain(std::iter::once(total));
    let mut widths = [0usize; 3];
    for r in all() {
        if let Row::Cells(c, _) = r {
            for (w, cell) in widths.iter_mut().zip(c) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let [lw, tw, sw] = widths;
    for r in all() {
        if std::ptr::eq(r, total) {
            let _ = writeln!(out, "  {}", "-".repeat(lw + tw + sw + 4));
        }
        match r {
            Row::Cells([l, t, s], note) => {
                let line = format!("  {l:<lw$}  {t:>tw$}  {s:>sw$}  {note}");
                let _ = writeln!(out, "{}", line.trim_end());
            }
            Row::Line(text) => {
                let _ = writeln!(out, "  {text}");
            }
        }
    }
}

/// The largest latency of a CPU's distribution, `-` without samples.
pub(crate) fn max_of(list: &[CpuResult], cpu: u32) -> String {
    list.iter()
        .find(|c| c.cpu == cpu && c.raw.count > 0)
        .map_or_else(|| "-".to_string(), |c| format_us(c.raw.max_ns))
}

/// Every CPU of the IRQ and thread (and user) figures, ascending.
pub(crate) fn cpus_of(info: &TimerlatInfo, thread: &[CpuResult]) -> Vec<u32> {
    let mut cpus: Vec<u32> = info
        .irq
        .iter()
        .chain(thread)
        .chain(&info.user)
        .map(|c| c.cpu)
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// Where the tracer stopped itself, in a sentence; `None` when it did not.
pub(crate) fn stop_sentence(info: &TimerlatInfo) -> Option<String> {
    let s = info.stop.as_ref()?;
    Some(format!(
        "The tracer stopped itself: CPU {}'s {} reached {} us at activation {}{}.",
        s.cpu,
        s.context.describe(),
        format_us(s.latency_ns),
        s.activation,
        info.stop_ns.map_or(String::new(), |t| format!(
            " (threshold {} us)",
            format_us(t.0)
        ))
    ))
}

/// The compact per-CPU table of `rtlab show`: IRQ and thread maxima (and the return to user
/// space with user-space threads), the stop and lost events.
pub fn timerlat_text(info: &TimerlatInfo, thread: &[CpuResult]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "timerlat ({} threads, period {} us): maxima in us",
        if info.user_threads {
            "user-space"
        } else {
            "kernel"
        },
        info.period_ns.0 / 1000
    );
    let mut head = vec!["CPU".to_string(), "IRQ max".into(), "thread max".into()];
    if !info.user.is_empty() {
        head.push("user max".into());
    }
    let mut rows = vec![head];
    for cpu in cpus_of(info, thread) {
        let mut row = vec![cpu.to_string(), max_of(&info.irq, cpu), max_of(thread, cpu)];
        if !info.user.is_empty() {
            row.push(max_of(&info.user, cpu));
        }
        rows.push(row);
    }
    for line in crate::columns::align_right(&rows) {
        let _ = writeln!(out, "{line}");
    }
    if let Some(s) = stop_sentence(info) {
        let _ = writeln!(out, "{s}");
    }
    if info.lost_events > 0 {
        let _ = writeln!(
            out,
            "{} events lost: activations are missing from these figures.",
            info.lost_events
        );
    }
    out
}
