//! A binary record as the kernel's text would show it: `TASK-PID [CPU] FLAGS SECS.USECS:
//! NAME: FIELDS`, the fields in the kernel's `key=value` print format for the events rtlab
//! reads (so the text reads back through [`crate::line`] and [`crate::event`] to the same
//! kind) and `field=value` for the rest. Only the windows a run keeps are rendered.

use std::fmt::Write;

use tracedat::{Endian, EventFormat, Loc};

use crate::event::{Func, Kind, Task};
use crate::line::Flags;

/// The flags column (`d..2.`) of `f`.
fn flags(out: &mut String, f: Flags) {
    out.push(match (f.irqs_off, f.bh_off) {
        (true, true) => 'D',
        (true, false) => 'd',
        (false, true) => 'b',
        _ => '.',
    });
    out.push(if f.need_resched { 'N' } else { '.' });
    out.push(match (f.hardirq, f.softirq, f.nmi) {
        (_, _, true) => 'Z',
        (true, true, _) => 'H',
        (true, false, _) => 'h',
        (false, true, _) => 's',
        _ => '.',
    });
    out.push(match f.preempt_depth {
        0 => '.',
        d => char::from_digit(u32::from(d.min(15)), 16).unwrap_or('f'),
    });
    out.push('.');
}

fn task(out: &mut String, prefix: &str, t: &Task<'_>) {
    let _ = write!(
        out,
        "{prefix}comm={} {prefix}pid={} {prefix}prio={}",
        t.comm, t.pid, t.prio
    );
}

/// Renders the whole line of an event into `out` (cleared first); where its fields start.
pub(super) fn line(
    out: &mut String,
    e: &crate::line::Event<'_>,
    kind: Option<&Kind<'_>>,
    format: &EventFormat,
    (d, endian): (&[u8], Endian),
    ns: bool,
) -> usize {
    out.clear();
    // A tracer's entry (timerlat's, hwlat's) has no event name before its fields.
    head(out, e, !super::tracer::is_entry(format), ns);
    let start = out.len();
    if !kind.is_some_and(|k| kind_fields(out, k)) && !super::tracer::fields(out, format, d, endian)
    {
        record_fields(out, format, d, endian);
    }
    start
}

/// The line's head: task, pid, CPU, flags, time (nanoseconds when `ns`, else microseconds
/// rounded as the kernel prints them), and the name when `named`.
fn head(out: &mut String, e: &crate::line::Event<'_>, named: bool, ns: bool) {
    let _ = write!(out, "{:>16}-{:<7} [{:03}] ", e.task, e.pid, e.cpu);
    if let Some(f) = e.flags {
        flags(out, f);
        out.push(' ');
    }
    let _ = if ns {
        write!(
            out,
            "{}.{:09}: ",
            e.ts_ns / 1_000_000_000,
            e.ts_ns % 1_000_000_000
        )
    } else {
        let us = e.ts_ns.saturating_add(500) / 1000;
        write!(out, "{}.{:06}: ", us / 1_000_000, us % 1_000_000)
    };
    if named {
        let _ = write!(out, "{}: ", e.name);
    }
}

/// The fields of a decoded `kind` in the kernel's format; false when the kind has none of its
/// own (the caller writes the record's fields).
fn kind_fields(out: &mut String, kind: &Kind<'_>) -> bool {
    let _ = match kind {
        Kind::Switch {
            prev,
            prev_state,
            next,
        } => {
            task(out, "prev_", prev);
            let _ = write!(out, " prev_state={prev_state} ==> ");
            task(out, "next_", next);
            Ok(())
        }
        Kind::Waking {
            task: t,
            target_cpu,
        }
        | Kind::Wakeup {
            task: t,
            target_cpu,
        } => {
            task(out, "", t);
            match target_cpu {
                Some(c) => write!(out, " target_cpu={c:03}"),
                None => Ok(()),
            }
        }
        Kind::Migrate {
            task: t,
            orig_cpu,
            dest_cpu,
        } => {
            task(out, "", t);
            write!(out, " orig_cpu={orig_cpu} dest_cpu={dest_cpu}")
        }
        Kind::IrqEntry { irq, name } => write!(out, "irq={irq} name={name}"),
        Kind::IrqExit { irq } => write!(out, "irq={irq} ret=handled"),
        Kind::SoftirqEntry { vec, action } => write!(out, "vec={vec} [action={action}]"),
        Kind::SoftirqExit { vec } | Kind::SoftirqRaise { vec } => write!(out, "vec={vec}"),
        Kind::HrtimerStart {
            hrtimer,
            function,
            expires_ns,
        } => write!(
            out,
            "hrtimer={hrtimer} function={function} expires={expires_ns} softexpires={expires_ns}"
        ),
        Kind::HrtimerExpireEntry {
            hrtimer,
            function,
            now_ns,
        } => {
            write!(out, "hrtimer={hrtimer} now={now_ns} function={function}")
        }
        Kind::HrtimerExpireExit { hrtimer } => write!(out, "hrtimer={hrtimer}"),
        Kind::WorkStart { function } => write!(out, "work struct 0x0: function {function}"),
        Kind::Marker { text } => write!(out, "{text}"),
        Kind::Nmi { handler, delta_ns } => {
            write!(out, "{handler}() delta_ns: {delta_ns} handled: 1")
        }
        Kind::IrqsOff { caller }
        | Kind::IrqsOn { caller }
        | Kind::PreemptOff { caller }
        | Kind::PreemptOn { caller } => {
            write!(out, "caller={caller}")
        }
        Kind::Function { .. } | Kind::GraphEntry { .. } | Kind::GraphExit { .. } => {
            function_fields(out, kind)
        }
        Kind::VectorEntry { .. }
        | Kind::VectorExit { .. }
        | Kind::Ipi { .. }
        | Kind::WorkEnd
        | Kind::Other => {
            return false;
        }
    };
    true
}

/// The function tracers' events as trace-cmd prints them: `func <-- parent`; function_graph's
/// `|  func() {`, a leaf `1.500 us   |    func();`, a return `1.500 us   |  }`.
fn function_fields(out: &mut String, kind: &Kind<'_>) -> std::fmt::Result {
    match kind {
        Kind::Function { func, parent } => match parent {
            Func::Name("") => write!(out, "{func}"),
            _ => write!(out, "{func} <-- {parent}"),
        },
        Kind::GraphEntry {
            func,
            depth,
            leaf_ns,
        } => {
            graph_head(out, *leaf_ns, *depth);
            let tail = if leaf_ns.is_some() { "();" } else { "() {" };
            write!(out, "{func}{tail}")
        }
        Kind::GraphExit { depth, duration_ns } => {
            graph_head(out, *duration_ns, *depth);
            write!(out, "}}")
        }
        _ => Ok(()),
    }
}

/// trace-cmd's graph columns before a call or a return: the duration (`1.500 us`) when known,
/// `|  `, and two spaces a level of depth.
fn graph_head(out: &mut String, duration_ns: Option<u64>, depth: u32) {
    if let Some(ns) = duration_ns {
        let _ = write!(out, "{}.{:03} us   ", ns / 1000, ns % 1000);
    }
    out.push_str("|  ");
    for _ in 0..depth.min(MAX_INDENT) {
        out.push_str("  ");
    }
}

/// Levels of a graph's indent rendered at most (a damaged depth must not write megabytes).
const MAX_INDENT: u32 = 64;

/// The record's own fields (past the common ones) as `name=value`.
fn record_fields(out: &mut String, f: &EventFormat, d: &[u8], e: Endian) {
    let mut first = true;
    for field in f.fields.iter().filter(|x| !x.name.starts_with("common_")) {
        if !first {
            out.push(' ');
        }
        first = false;
        let is_text = field.loc != Loc::Fixed
            || (field.decl.starts_with("char ") && field.decl.ends_with(']'));
        let _ = if is_text {
            write!(out, "{}={}", field.name, field.str(d, e).unwrap_or(""))
        } else if let Some(v) = field.int(d, e) {
            if field.decl.contains('*') {
                write!(out, "{}=0x{:x}", field.name, v as u64)
            } else {
                write!(out, "{}={v}", field.name)
            }
        } else {
            write!(out, "{}=?", field.name)
        };
    }
}
