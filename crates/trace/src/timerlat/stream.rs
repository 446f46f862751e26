//! The timerlat tracer's trace read line by line as it is produced (`trace_pipe`) or from a
//! saved file: each line classified into what the engine and the auto-analysis use — an
//! activation's latency (`#ID context irq|thread|user-ret timer_latency N ns`), an osnoise
//! noise event (`irq_noise`, `softirq_noise`, `thread_noise`, `nmi_noise`: what ran on the
//! CPU, from when, for how long), the IRQ stack the tracer prints (`<stack trace>` and its
//! ` => func` lines), and the ring buffer's lost-event markers. Borrowed from the line, no
//! allocation: this runs on every activation of every CPU.

use model::timerlat::Context;

use crate::line::{self, Line};

/// One activation's latency.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample<'a> {
    /// The CPU.
    pub cpu: u32,
    /// When it was recorded, ns of the trace clock.
    pub ts_ns: u64,
    /// The task the entry was recorded in (for the IRQ: the one that was running).
    pub task: &'a str,
    /// Its pid (0: idle).
    pub pid: u32,
    /// The activation (per-CPU sequence number).
    pub activation: u64,
    /// Which latency.
    pub context: Context,
    /// The latency, ns.
    pub latency_ns: u64,
}

/// What kind of noise an osnoise event records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NoiseKind {
    /// A hard IRQ (`irq_noise`).
    Irq,
    /// A softirq (`softirq_noise`).
    Softirq,
    /// A thread (`thread_noise`).
    Thread,
    /// An NMI (`nmi_noise`).
    Nmi,
}

/// One osnoise noise event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Noise<'a> {
    /// The CPU.
    pub cpu: u32,
    /// When it was recorded (its end), ns of the trace clock.
    pub ts_ns: u64,
    /// Which kind.
    pub kind: NoiseKind,
    /// The IRQ's description, the softirq's or the thread's name (empty for an NMI).
    pub name: &'a str,
    /// The IRQ vector, softirq number or thread id (0 for an NMI).
    pub id: u64,
    /// When it started, ns of the tracer's clock.
    pub start_ns: u64,
    /// Its net duration, ns.
    pub duration_ns: u64,
}

/// What one line of a timerlat trace holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record<'a> {
    /// An activation's latency.
    Sample(Sample<'a>),
    /// A noise event.
    Noise(Noise<'a>),
    /// The start of a stack the tracer recorded on `cpu`; its frames follow.
    Stack {
        /// The CPU.
        cpu: u32,
        /// When, ns of the trace clock.
        ts_ns: u64,
    },
    /// A frame of the stack just started (` => timerlat_irq`).
    Frame(&'a str),
    /// The ring buffer lost events before this line.
    Lost {
        /// The CPU, when named.
        cpu: Option<u32>,
        /// How many, when counted.
        events: Option<u64>,
    },
    /// A comment, a header, or an event the engine does not use.
    Other,
    /// A line that is none of these (cut or damaged).
    Malformed,
}

/// Classifies one line (without its newline).
pub fn record(text: &str) -> Record<'_> {
    match line::parse(text) {
        Line::Event(e) if e.name == "timerlat" => {
            report_entry(&e).map_or(Record::Malformed, Record::Sample)
        }
        Line::Event(e) => match noise_kind(e.name) {
            Some(kind) => {
                noise(kind, e.cpu, e.ts_ns, e.fields).map_or(Record::Malformed, Record::Noise)
            }
            None => Record::Other,
        },
        Line::Lost { cpu, events } => Record::Lost { cpu, events },
        Line::BufferStarted { .. } | Line::Comment => Record::Other,
        Line::Continuation(t) => match t.strip_prefix("=>").map(str::trim) {
            // Some kernels (6.1) print the stack's unused entries as `=> 0`.
            Some("0") => Record::Other,
            Some(f) => Record::Frame(f),
            None => Record::Other,
        },
        Line::Malformed(t) => entry(t),
    }
}

/// A tracer entry that is not a `NAME: FIELDS` event: a latency or a stack's start.
fn entry(text: &str) -> Record<'_> {
    let Some((p, rest)) = line::prefix(text) else {
        return Record::Malformed;
    };
    if rest.trim_end() == "<stack trace>" {
        return Record::Stack {
            cpu: p.cpu,
            ts_ns: p.ts_ns,
        };
    }
    let mut w = rest.split_whitespace();
    let (Some(id), Some("context"), Some(context), Some("timer_latency"), Some(ns), Some("ns")) =
        (w.next(), w.next(), w.next(), w.next(), w.next(), w.next())
    else {
        return Record::Malformed;
    };
    let context = match context {
        "irq" => Context::Irq,
        "thread" => Context::Thread,
        "user-ret" | "user" => Context::User,
        _ => return Record::Malformed,
    };
    match (id.strip_prefix('#').and_then(number), number(ns)) {
        (Some(activation), Some(latency_ns)) => Record::Sample(Sample {
            cpu: p.cpu,
            ts_ns: p.ts_ns,
            task: p.task,
            pid: p.pid,
            activation,
            context,
            latency_ns,
        }),
        _ => Record::Malformed,
    }
}

/// An entry as `trace-cmd report` prints it from a recording (the entry's own print format,
/// not the tracer's): `timerlat: seq:N context:0|1|2 timer_latency:N` (0 the IRQ, 1 the
/// thread, 2 the return to user space).
fn report_entry<'a>(e: &line::Event<'a>) -> Option<Sample<'a>> {
    let mut seq = None;
    let mut context = None;
    let mut latency = None;
    for w in e.fields.split_whitespace() {
        let (key, value) = w.split_once(':')?;
        match key {
            "seq" => seq = Some(number(value)?),
            "context" => {
                context = Some(match value {
                    "0" => Context::Irq,
                    "1" => Context::Thread,
                    "2" => Context::User,
                    _ => return None,
                });
            }
            "timer_latency" => latency = Some(number(value)?),
            _ => {}
        }
    }
    Some(Sample {
        cpu: e.cpu,
        ts_ns: e.ts_ns,
        task: e.task,
        pid: e.pid,
        activation: seq?,
        context: context?,
        latency_ns: latency?,
    })
}

fn noise_kind(name: &str) -> Option<NoiseKind> {
    Some(match name {
        "irq_noise" => NoiseKind::Irq,
        "softirq_noise" => NoiseKind::Softirq,
        "thread_noise" => NoiseKind::Thread,
        "nmi_noise" => NoiseKind::Nmi,
        _ => return None,
    })
}

/// `NAME:ID start SECS.NSECS duration N ns` (no `NAME:ID` for an NMI).
fn noise(kind: NoiseKind, cpu: u32, ts_ns: u64, fields: &str) -> Option<Noise<'_>> {
    let (head, tail) = match fields.strip_prefix("start ") {
        Some(t) => ("", t),
        None => fields.split_once(" start ")?,
    };
    let mut w = tail.split_whitespace();
    let start_ns = line::timestamp(w.next()?)?.0;
    if w.next()? != "duration" {
        return None;
    }
    let duration_ns = number(w.next()?)?;
    if w.next()? != "ns" {
        return None;
    }
    let (name, id) = match head.trim().rsplit_once(':') {
        Some((name, id)) => (name.trim(), number(id)?),
        None if kind == NoiseKind::Nmi => ("", 0),
        None => return None,
    };
    Some(Noise {
        cpu,
        ts_ns,
        kind,
        name,
        id,
        start_ns,
        duration_ns,
    })
}

/// Decimal digits to a number within 64 bits.
fn number(text: &str) -> Option<u64> {
    if text.is_empty() || text.len() > 20 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_of_each_context() {
        let r = record(
            "        <idle>-0       [000] d.h1    54.029328: #1     context    irq timer_latency       932 ns",
        );
        let Record::Sample(s) = r else {
            panic!("{r:?}")
        };
        assert_eq!(
            (s.cpu, s.pid, s.activation, s.context, s.latency_ns, s.ts_ns),
            (0, 0, 1, Context::Irq, 932, 54_029_328_000)
        );
        let r = record(
            "   timerlatu/3-981   [003] ..... 1203.500000123: #77 context user-ret timer_latency 40211 ns",
        );
        let Record::Sample(s) = r else {
            panic!("{r:?}")
        };
        assert_eq!(
            (s.cpu, s.context, s.latency_ns, s.task),
            (3, Context::User, 40_211, "timerlatu/3")
        );
        // 6.1-rt's seven flag columns.
        let r = record(
            "     hog-512     [001] dN.h1..   88.000001: #5 context thread timer_latency 150000 ns",
        );
        assert!(
            matches!(
                r,
                Record::Sample(Sample {
                    context: Context::Thread,
                    latency_ns: 150_000,
                    ..
                })
            ),
            "{r:?}"
        );
    }

    #[test]
    fn noise_events_and_stacks() {
        let r = record(
            "     hog-512     [001] d.h1.   88.000002: irq_noise: local_timer:236 start 88.000001500 duration 2950 ns",
        );
        assert_eq!(
            r,
            Record::Noise(Noise {
                cpu: 1,
                ts_ns: 88_000_002_000,
                kind: NoiseKind::Irq,
                name: "local_timer",
                id: 236,
                start_ns: 88_000_001_500,
                duration_ns: 2950
            })
        );
        let r = record(
            "     hog-512     [001] d..2.   88.000200: thread_noise:      hog:512 start 88.000003000 duration 140000 ns",
        );
        assert!(
            matches!(
                r,
                Record::Noise(Noise {
                    kind: NoiseKind::Thread,
                    name: "hog",
                    id: 512,
                    duration_ns: 140_000,
                    ..
                })
            ),
            "{r:?}"
        );
        let r = record(
            "  <idle>-0 [002] dNh2.  9.000001: nmi_noise: start 9.000000500 duration 800 ns",
        );
        assert!(
            matches!(
                r,
                Record::Noise(Noise {
                    kind: NoiseKind::Nmi,
                    name: "",
                    duration_ns: 800,
                    ..
                })
            ),
            "{r:?}"
        );
        assert_eq!(
            record("     hog-512     [001] ....   88.000201: <stack trace>"),
            Record::Stack {
                cpu: 1,
                ts_ns: 88_000_201_000
            }
        );
        assert_eq!(record(" => timerlat_irq"), Record::Frame("timerlat_irq"));
        assert_eq!(record(" => 0"), Record::Other, "6.1's unused entries");
        assert_eq!(
            record("CPU:3 [LOST 812 EVENTS]"),
            Record::Lost {
                cpu: Some(3),
                events: Some(812)
            }
        );
        assert_eq!(record("# tracer: timerlat"), Record::Other);
        assert_eq!(
            record("  bash-1 [000] .... 1.000001: sched_switch: prev_comm=bash"),
            Record::Other
        );
    }

    #[test]
    fn trace_cmd_reports_entry() {
        let r = record(
            "      timerlat/1-204   [001] ....1    11.532215: timerlat:             seq:93\tcontext:1\ttimer_latency:2233448",
        );
        assert_eq!(
            r,
            Record::Sample(Sample {
                cpu: 1,
                ts_ns: 11_532_215_000,
                task: "timerlat/1",
                pid: 204,
                activation: 93,
                context: Context::Thread,
                latency_ns: 2_233_448,
            })
        );
        for bad in [
            "  x-1 [000] .... 1.0: timerlat: seq:1 context:7 timer_latency:5",
            "  x-1 [000] .... 1.0: timerlat: seq:1 context:0",
            "  x-1 [000] .... 1.0: timerlat: seq:x context:0 timer_latency:5",
        ] {
            assert_eq!(record(bad), Record::Malformed, "{bad}");
        }
    }

    #[test]
    fn damage_is_malformed_never_a_panic() {
        for bad in [
            "  x-1 [000] .... 1.0: #1 context irq timer_latency lots ns",
            "  x-1 [000] .... 1.0: #1 context kernel timer_latency 5 ns",
            "  x-1 [000] .... 1.0: #x context irq timer_latency 5 ns",
            "  x-1 [000] .... 1.0: irq_noise: eth0:x start 1.0 duration 3 ns",
            "  x-1 [000] .... 1.0: irq_noise: eth0:33 start 1.0 duration 99999999999999999999999 ns",
            "garbage",
        ] {
            assert_eq!(record(bad), Record::Malformed, "{bad}");
        }
    }

    proptest::proptest! {
        #[test]
        fn never_panics(text in "\\PC{0,160}") {
            let _ = record(&text);
        }
    }
}
