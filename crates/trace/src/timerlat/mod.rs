//! The timerlat tracer's own trace (`# tracer: timerlat`): one line per activation and context,
//! `#ID context irq|thread timer_latency N ns`, per CPU. Read into per-CPU IRQ and thread
//! latencies (count, minimum, mean, maximum and the activation of the maximum), the way rtla
//! summarises them, for kernels that have the tracer (`report::story` tells them).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::line::timestamp;

pub mod analysis;
pub mod stream;

/// One context's latencies on one CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextStats {
    /// Activations.
    pub count: u64,
    /// Smallest latency, ns.
    pub min_ns: u64,
    /// Sum of latencies, ns.
    pub sum_ns: u64,
    /// Largest latency, ns.
    pub max_ns: u64,
    /// The activation (`#ID`) of the largest.
    pub max_id: u64,
}

impl ContextStats {
    fn record(&mut self, ns: u64, id: u64) {
        self.min_ns = if self.count == 0 {
            ns
        } else {
            self.min_ns.min(ns)
        };
        if ns >= self.max_ns {
            self.max_ns = ns;
            self.max_id = id;
        }
        self.sum_ns = self.sum_ns.saturating_add(ns);
        self.count += 1;
    }
}

/// A timerlat trace, per CPU.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimerlatReport {
    /// Per CPU: (IRQ context: timer expiry to its handler, thread context: expiry to the
    /// timerlat thread running).
    pub cpus: BTreeMap<u32, (ContextStats, ContextStats)>,
    /// The auto-analysis of each CPU's worst activation ([`analysis::Analyser`]), with the
    /// osnoise events the trace holds (rtla's `-a` traces have them; a bare trace gives the
    /// IRQ and thread latencies only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub analyses: Vec<model::timerlat::Analysis>,
}

pub use crate::error::ParseError;

/// Lines looked at for a `trace-cmd report` of a timerlat recording's entries.
const DETECT_LINES: usize = 400;

/// Whether `text` is the timerlat tracer's trace: its header, or (`trace-cmd report` of a
/// recording, which has none) the tracer's entries among its first lines.
pub fn detect(text: &str) -> bool {
    text.lines().take(DETECT_LINES).enumerate().any(|(i, l)| {
        (i < 20 && l.trim() == "# tracer: timerlat")
            || (l.contains(" timerlat: ") && matches!(stream::record(l), stream::Record::Sample(_)))
    })
}

/// Reads it.
pub fn parse(text: &str) -> Result<TimerlatReport, ParseError> {
    let mut p = Parser::default();
    for line in text.lines() {
        p.line(line)?;
    }
    p.finish()
}

/// The trace read line by line (a recording's entries rendered one at a time): the same
/// reading as [`parse`], without the whole text in memory.
#[derive(Default)]
pub struct Parser {
    r: TimerlatReport,
    analyser: analysis::Analyser,
    lines: usize,
}

impl Parser {
    /// The next line (without its newline).
    pub fn line(&mut self, line: &str) -> Result<(), ParseError> {
        self.lines += 1;
        let record = stream::record(line);
        self.analyser.feed(&record);
        // The analysis reads the noise events, stacks and other events; the figures below
        // are the samples', and a line that is neither is an error.
        if !matches!(
            record,
            stream::Record::Sample(_) | stream::Record::Malformed
        ) {
            return Ok(());
        }
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            return Ok(());
        }
        let err = |what: &str| ParseError {
            line: self.lines,
            what: what.to_string(),
        };
        let stream::Record::Sample(s) = record else {
            // Why the line is not one, in words.
            return Err(err(sample(line)
                .err()
                .unwrap_or("expected a timerlat sample")));
        };
        let slot = self.r.cpus.entry(s.cpu).or_default();
        match s.context {
            model::timerlat::Context::Irq => slot.0.record(s.latency_ns, s.activation),
            model::timerlat::Context::Thread => slot.1.record(s.latency_ns, s.activation),
            model::timerlat::Context::User => {
                return Err(err("expected the context `irq` or `thread`"));
            }
        }
        Ok(())
    }

    /// The report, once every line is read.
    pub fn finish(mut self) -> Result<TimerlatReport, ParseError> {
        self.r.analyses = self.analyser.worst();
        if self.r.cpus.is_empty() {
            return Err(ParseError {
                line: self.lines + 1,
                what: "no timerlat sample in the trace (is it empty?)".to_string(),
            });
        }
        Ok(self.r)
    }
}

/// `TASK-PID [CPU] [flags] TIMESTAMP: #ID context irq|thread timer_latency N ns`: the CPU,
/// activation, context and latency; what was expected where it is not.
fn sample(line: &str) -> Result<(u32, u64, &str, u64), &'static str> {
    let open = line.find(" [").ok_or("expected a `[CPU]` column")?;
    let close = open + line[open..].find(']').ok_or("expected `]`")?;
    let cpu: u32 = line[open + 2..close]
        .parse()
        .map_err(|_| "expected a CPU number in `[...]`")?;
    let words: Vec<&str> = line[close + 1..].split_whitespace().collect();
    let ts_at = words
        .iter()
        .position(|w| w.ends_with(':') && timestamp(&w[..w.len() - 1]).is_some())
        .ok_or("expected a timestamp `SECONDS.MICROS:`")?;
    let rest = &words[ts_at + 1..];
    let shape = rest.len() == 6
        && rest[0].starts_with('#')
        && rest[1] == "context"
        && rest[3] == "timer_latency"
        && rest[5] == "ns";
    if !shape {
        return Err("expected `#ID context irq|thread timer_latency N ns` after the timestamp");
    }
    let id: u64 = rest[0][1..]
        .parse()
        .map_err(|_| "expected an activation number after `#`")?;
    let ns: u64 = rest[4].parse().map_err(|_| "expected the latency in ns")?;
    match rest[2] {
        "irq" | "thread" => Ok((cpu, id, rest[2], ns)),
        _ => Err("expected the context `irq` or `thread`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> String {
        let path = format!(
            "{}/../../fixtures/traces/rtla/kdoc_timerlat_tracer_trace.txt",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn the_kernel_documentation_example() {
        let text = fixture();
        assert!(detect(&text));
        let r = parse(&text).unwrap();
        let (irq0, thr0) = r.cpus[&0];
        assert_eq!(
            (irq0.count, irq0.min_ns, irq0.max_ns, irq0.max_id),
            (2, 769, 932, 1)
        );
        assert_eq!(
            (thr0.count, thr0.min_ns, thr0.max_ns, thr0.sum_ns),
            (2, 3070, 11700, 14770)
        );
        let (irq1, thr1) = r.cpus[&1];
        assert_eq!((irq1.max_ns, thr1.max_ns, thr1.max_id), (2833, 9820, 1));
    }

    #[test]
    fn damage_names_the_line() {
        let text = fixture();
        let bad = text.replace("timer_latency     11700 ns", "timer_latency     eleven ns");
        assert_eq!(
            parse(&bad).unwrap_err().to_string(),
            "line 12: expected the latency in ns"
        );
        let bad = text.replace("context thread", "context kernel");
        assert!(
            parse(&bad)
                .unwrap_err()
                .to_string()
                .starts_with("line 12: expected the context")
        );
        let head: String = text.lines().take(10).map(|l| format!("{l}\n")).collect();
        assert!(
            parse(&head)
                .unwrap_err()
                .what
                .starts_with("no timerlat sample")
        );
        assert!(!detect("# tracer: nop\n"));
    }

    proptest::proptest! {
        #[test]
        fn never_panics(text in "\\PC{0,200}") {
            let _ = parse(&format!("# tracer: timerlat\n{text}"));
        }
    }
}
