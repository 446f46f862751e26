//! The whole-trace analyses of `rtlab explain irqs|sched|wakeups` as text (a heading, one
//! table, a closing note with what to do about the worst rows) and as the
//! `rtlab.trace-stats/1` JSON document.

use std::fmt::Write as _;

use model::Nanos;
use model::explain::{CpuRow, HandlerFix, HandlerRow, StatsRows, StatsTally, TaskRow, TraceStats};

use crate::explain::us;

/// The analysis as text: what the trace held, the table, and the note under it. Ends with a
/// newline.
pub fn stats_text(doc: &TraceStats, tally: &StatsTally) -> String {
    let t = &doc.trace;
    let body = match &doc.rows {
        StatsRows::Irqs(rows) => irqs(rows, doc.threshold_ns, tally),
        StatsRows::Sched(rows) => sched(rows, doc.threshold_ns, tally),
        StatsRows::Wakeups(rows) => wakeups(rows),
    };
    format!(
        "{}: {} events on {} CPUs over {:.3} s, {} lost\n\n{body}",
        doc.source,
        t.events,
        t.cpus.len(),
        t.span_ns as f64 / 1e9,
        t.lost_events
    )
}

/// The `rtlab.trace-stats/1` document, pretty-printed, keys in alphabetical order at every
/// level (as the document has been written since its first version). Ends with a newline.
pub fn stats_json(doc: &TraceStats) -> String {
    let value = serde_json::to_value(doc).expect("trace statistics serialize");
    serde_json::to_string_pretty(&value).expect("a JSON value prints") + "\n"
}

/// `CPU 1 12.345678`: where and when (trace clock, seconds) a maximum was.
fn at(cpu: u32, ts_ns: u64) -> String {
    format!("CPU {cpu} {:.6}", ts_ns as f64 / 1e9)
}

/// `! name` for a row above the threshold, `  name` otherwise.
fn marked(over: bool, name: &str) -> String {
    format!("{}{name}", if over { "! " } else { "  " })
}

/// `1 handler`, `2 handlers`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn table(header: &[&str], mut rows: Vec<Vec<String>>) -> String {
    rows.insert(0, header.iter().map(|h| h.to_string()).collect());
    let mut out = String::new();
    for line in crate::columns::align(&rows, true) {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn irqs(rows: &[HandlerRow], threshold_ns: u64, tally: &StatsTally) -> String {
    if tally.rows == 0 {
        return "no irq_handler_entry/exit or softirq_entry/exit events in this trace\n"
            .to_string();
    }
    let cells = rows
        .iter()
        .map(|h| {
            vec![
                marked(h.max_ns > threshold_ns, &h.handler),
                h.runs.to_string(),
                us(h.total_ns / h.runs.max(1)),
                us(h.p99_ns),
                us(h.max_ns),
                at(h.max_cpu, h.max_at_ns),
                h.over_threshold.to_string(),
            ]
        })
        .collect();
    let mut text = table(
        &["handler", "runs", "mean", "p99", "max", "max at", "over"],
        cells,
    );
    let slow = &tally.over_threshold;
    let _ = write!(
        text,
        "\n{} longer than {} at least once (marked !)",
        count(slow.len(), "handler ran", "handlers ran"),
        Nanos(threshold_ns)
    );
    if slow.is_empty() {
        text.push('\n');
        return text;
    }
    text.push_str(":\n");
    let groups = fixes(slow);
    for (fix, names) in &groups {
        let _ = writeln!(
            text,
            "  {}: {}",
            named(names),
            crate::story::fix::advice(*fix)
        );
    }
    if groups.iter().any(|(fix, _)| fix.is_softirq()) {
        let _ = writeln!(text, "  softirqs: {}", crate::story::fix::SOFTIRQ_CONTEXT);
    }
    text
}

/// The slow handlers grouped by what to do about them, in the order first met.
fn fixes(slow: &[String]) -> Vec<(HandlerFix, Vec<&str>)> {
    let mut groups: Vec<(HandlerFix, Vec<&str>)> = Vec::new();
    for name in slow {
        let fix = HandlerFix::of(name);
        match groups.iter_mut().find(|(f, _)| *f == fix) {
            Some((_, names)) => names.push(name),
            None => groups.push((fix, vec![name])),
        }
    }
    groups
}

/// Up to three names, then how many more.
fn named(names: &[&str]) -> String {
    const SHOWN: usize = 3;
    let mut text = names
        .iter()
        .take(SHOWN)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        let _ = write!(text, " and {} more", names.len() - SHOWN);
    }
    text
}

/// A kernel priority as a person reads it: `DL`, `RT 80`, `nice 0`.
fn priority(prio: i32) -> String {
    match prio {
        p if p < 0 => "DL".to_string(),
        p @ 0..=99 => format!("RT {}", 99 - p),
        p => format!("nice {}", p - 120),
    }
}

fn sched(rows: &[TaskRow], threshold_ns: u64, tally: &StatsTally) -> String {
    let cells = rows
        .iter()
        .map(|t| {
            vec![
                marked(t.max_ns > threshold_ns, &t.comm),
                t.pid.to_string(),
                priority(t.prio),
                t.wakeups.to_string(),
                us(t.p99_ns),
                us(t.max_ns),
                at(t.max_cpu, t.max_at_ns),
                t.migrations.to_string(),
            ]
        })
        .collect();
    let mut text = table(
        &[
            "task",
            "pid",
            "prio",
            "wake-ups",
            "p99",
            "max",
            "max at",
            "migrations",
        ],
        cells,
    );
    let _ = write!(
        text,
        "\nwake-up to run: from sched_waking/sched_wakeup to the switch-in; ! marks a maximum \
         above {}.",
        Nanos(threshold_ns)
    );
    if tally.rt_migrating > 0 {
        let _ = write!(
            text,
            " {} between CPUs: pin them (taskset, sched_setaffinity) to keep their caches and \
             avoid the migration's cost.",
            count(
                tally.rt_migrating,
                "real-time task migrated",
                "real-time tasks migrated"
            )
        );
    }
    text.push('\n');
    text
}

fn wakeups(rows: &[CpuRow]) -> String {
    if rows.is_empty() {
        return "no timer wake-up of a real-time task in this trace (it needs sched and \
                timer:hrtimer_* events)\n"
            .to_string();
    }
    let cells = rows
        .iter()
        .map(|c| {
            vec![
                c.cpu.to_string(),
                c.wakeups.to_string(),
                us(c.min_ns),
                us(c.p50_ns),
                us(c.p99_ns),
                us(c.p99_9_ns),
                us(c.max_ns),
            ]
        })
        .collect();
    let mut text = table(
        &["CPU", "wake-ups", "min", "p50", "p99", "p99.9", "max"],
        cells,
    );
    text.push_str(
        "\nreal-time tasks' timer wake-ups: from the deadline they slept to (hrtimer_start) to \
         their switch-in; a measuring thread reads its clock a few us after that\n",
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::explain::{STATS_SCHEMA, TraceSummary};

    fn handler(name: &str, max_us: u64) -> HandlerRow {
        HandlerRow {
            handler: name.to_string(),
            runs: 4,
            total_ns: 40_000,
            p99_ns: max_us * 1000,
            max_ns: max_us * 1000,
            max_at_ns: 1_500_000_000,
            max_cpu: 1,
            over_threshold: 1,
        }
    }

    fn doc(rows: StatsRows) -> TraceStats {
        TraceStats {
            schema: STATS_SCHEMA.to_string(),
            source: "t.txt".to_string(),
            trace: TraceSummary {
                events: 10,
                cpus: vec![0, 1],
                span_ns: 2_000_000_000,
                ..TraceSummary::default()
            },
            threshold_ns: 50_000,
            rows,
        }
    }

    #[test]
    fn slow_softirqs_get_the_softirq_fix_and_hard_irqs_theirs() {
        let rows = vec![
            handler("softirq NET_RX", 300),
            handler("irq 41 eth0-rx-0", 120),
            handler("softirq RCU", 80),
            handler("softirq SCHED", 10),
        ];
        let tally = StatsTally {
            rows: 4,
            over_threshold: vec![
                "softirq NET_RX".into(),
                "irq 41 eth0-rx-0".into(),
                "softirq RCU".into(),
            ],
            rt_migrating: 0,
        };
        let text = stats_text(&doc(StatsRows::Irqs(rows)), &tally);
        assert!(
            text.starts_with("t.txt: 10 events on 2 CPUs over 2.000 s, 0 lost\n\nhandler"),
            "{text}"
        );
        assert!(
            text.contains("\n3 handlers ran longer than 50us at least once (marked !):\n"),
            "{text}"
        );
        let line = |prefix: &str| {
            text.lines()
                .find(|l| l.starts_with(prefix))
                .unwrap_or_else(|| panic!("no line {prefix:?} in {text}"))
                .to_string()
        };
        assert!(line("  softirq NET_RX: ").contains("rps_cpus"), "{text}");
        assert!(
            line("  irq 41 eth0-rx-0: ").contains("threaded IRQ"),
            "{text}"
        );
        assert!(line("  softirq RCU: ").contains("rcu_nocbs="), "{text}");
        assert!(
            !line("  softirq NET_RX: ").contains("threaded IRQ"),
            "{text}"
        );
        assert!(line("  softirqs: ").contains("ksoftirqd"), "{text}");
        assert!(text.contains("! softirq NET_RX"));
        assert!(text.contains("  softirq SCHED"));
        assert!(!text.contains("! softirq SCHED"));
    }

    #[test]
    fn one_is_singular_and_none_needs_no_fix() {
        let tally = StatsTally {
            rows: 1,
            over_threshold: vec!["irq 9 acpi".into()],
            rt_migrating: 1,
        };
        let text = stats_text(
            &doc(StatsRows::Irqs(vec![handler("irq 9 acpi", 60)])),
            &tally,
        );
        assert!(text.contains("\n1 handler ran longer than 50us"), "{text}");
        assert!(!text.contains("softirqs: "), "{text}");
        let quiet = StatsTally {
            over_threshold: Vec::new(),
            ..tally.clone()
        };
        let text = stats_text(
            &doc(StatsRows::Irqs(vec![handler("irq 9 acpi", 6)])),
            &quiet,
        );
        assert!(
            text.ends_with("0 handlers ran longer than 50us at least once (marked !)\n"),
            "{text}"
        );
        let text = stats_text(&doc(StatsRows::Sched(Vec::new())), &tally);
        assert!(
            text.contains(" 1 real-time task migrated between CPUs"),
            "{text}"
        );
    }

    #[test]
    fn many_of_one_kind_are_named_three_and_counted() {
        let names: Vec<String> = (0..5).map(|i| format!("irq {i} x")).collect();
        let groups = fixes(&names);
        assert_eq!(groups.len(), 1);
        assert_eq!(named(&groups[0].1), "irq 0 x, irq 1 x, irq 2 x and 2 more");
    }

    #[test]
    fn empty_traces_say_what_they_lack() {
        let none = StatsTally::default();
        assert!(
            stats_text(&doc(StatsRows::Irqs(Vec::new())), &none).ends_with(
                "no irq_handler_entry/exit or softirq_entry/exit events in this trace\n"
            )
        );
        assert!(
            stats_text(&doc(StatsRows::Wakeups(Vec::new())), &none)
                .contains("no timer wake-up of a real-time task")
        );
    }

    #[test]
    fn json_keeps_its_shape_and_key_order() {
        let text = stats_json(&doc(StatsRows::Irqs(vec![handler("irq 9 acpi", 60)])));
        let keys: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("  \""))
            .map(|l| l.trim().split('"').nth(1).unwrap())
            .collect();
        assert_eq!(
            keys,
            [
                "analysis",
                "rows",
                "schema",
                "source",
                "threshold_ns",
                "trace"
            ]
        );
        assert!(text.contains("\"analysis\": \"irqs\""), "{text}");
        let back: TraceStats = serde_json::from_str(&text).unwrap();
        assert_eq!(back, doc(StatsRows::Irqs(vec![handler("irq 9 acpi", 60)])));
    }
}
