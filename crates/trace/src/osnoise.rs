//! The osnoise tracer's own trace (`echo osnoise > current_tracer`, then `trace` or
//! `trace_pipe`, or rtla's `-t` trace file): this module owns reading its per-period summary
//! lines and its `osnoise:*` noise events into an [`OsnoiseReport`], per CPU.
//!
//! A summary line is the tracer's record of one period on one CPU, after the usual
//! `TASK-PID [CPU] FLAGS TIMESTAMP:` columns: `RUNTIME NOISE %AVAILABLE MAX_SINGLE HW NMI IRQ
//! SIRQ THREAD`, times in microseconds, counters as the tracer counts them (every NMI, IRQ,
//! softirq and thread that ran during the runtime, whatever its length, and every noise above
//! the threshold that no such interference explains, as HW). The events (`sample_threshold`,
//! `nmi_noise`, `irq_noise`, `softirq_noise`, `thread_noise`) give each interference's net
//! duration in ns and its name; they are summed per CPU and name. Data in, data out: no file
//! access, no clock. rtlab's own noise engine reads the tracer's trace with this reader.

use std::collections::BTreeMap;
use std::io::{BufRead, Read};

use model::noise::{Culprit, MAX_CULPRITS, NoiseCpu, PerSource, Source};
use serde::{Deserialize, Serialize};

use crate::line::{self, Line};
use crate::reader::MAX_LINE_BYTES;

pub use crate::error::ParseError;

/// Most distinct names kept per CPU; later names are summed under [`OTHER`] of their class,
/// so a trace of endless distinct thread names reads in bounded memory.
pub const MAX_NAMES_PER_CPU: usize = 1024;

/// The name under which names past [`MAX_NAMES_PER_CPU`] are summed.
pub const OTHER: &str = "other";

/// The name of noise above the threshold that no interference explains (a
/// `sample_threshold` event with no interference): hardware, firmware or the hypervisor.
pub const UNATTRIBUTED: &str = "unattributed";

/// Occurrences of one kind of noise, and their time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoiseStats {
    /// Occurrences.
    pub count: u64,
    /// Their time added up, ns (saturating: 2^64 ns is 584 years).
    pub total_ns: u64,
    /// The longest one, ns.
    pub max_ns: u64,
}

impl NoiseStats {
    fn record(&mut self, ns: u64) {
        self.count = self.count.saturating_add(1);
        self.total_ns = self.total_ns.saturating_add(ns);
        self.max_ns = self.max_ns.max(ns);
    }
}

/// One CPU's periods and events.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuSummary {
    /// Summary lines (periods) read.
    pub periods: u64,
    /// The runtime of the periods added up, us.
    pub runtime_us: u64,
    /// The largest runtime of one period, us.
    pub max_period_runtime_us: u64,
    /// The noise of the periods added up, us.
    pub noise_us: u64,
    /// The most noise in one period, us.
    pub max_period_noise_us: u64,
    /// The longest single noise, us.
    pub max_single_us: u64,
    /// The interference counters added up (HW, NMI, IRQ, softirq, thread).
    pub counts: PerSource,
    /// `sample_threshold` events: noise above the threshold, each one interruption.
    pub samples: NoiseStats,
    /// Net time of the noise events per class, ns (HW: the unexplained samples' time).
    pub class_ns: PerSource,
    /// The noise events per class and name (`local_timer`, `TIMER`, `migration/8 (pid 54)`,
    /// `nmi`, [`UNATTRIBUTED`]).
    pub sources: BTreeMap<(Source, String), NoiseStats>,
}

impl CpuSummary {
    /// This CPU's figures as a noise run's: periods' runtime and noise summed, the largest
    /// period noise and single noise, the tracer's counts, the events' time per class and
    /// the named culprits. Interruptions are the `sample_threshold` events when the trace has
    /// them (each a noise above the threshold), else the sum of the counts (every
    /// interference however short: an upper bound). The error names the figure past 2^64 ns.
    pub fn noise_cpu(&self, cpu: u32) -> Result<NoiseCpu, String> {
        let ns = |what: &str, us: u64| {
            us.checked_mul(1000).ok_or_else(|| {
                format!("CPU {cpu}: {what} {us} us is past 2^64 ns (584 years): the trace cannot be right")
            })
        };
        let events = self.samples.count > 0 || !self.sources.is_empty();
        let interruptions = if self.samples.count > 0 {
            self.samples.count
        } else {
            Source::ALL
                .iter()
                .try_fold(0u64, |acc, s| acc.checked_add(self.counts.get(*s)))
                .ok_or_else(|| format!("CPU {cpu}: the counts add up past 2^64"))?
        };
        Ok(NoiseCpu {
            cpu,
            runtime_ns: ns("the runtime", self.runtime_us)?,
            noise_ns: ns("the noise", self.noise_us)?,
            interruptions,
            max_single_ns: ns("the longest noise", self.max_single_us)?,
            max_period_noise_ns: ns("the most noise in a period", self.max_period_noise_us)?,
            counts: Some(self.counts),
            time_ns: events.then_some(self.class_ns),
            culprits: self.culprits(),
            ..NoiseCpu::default()
        })
    }

    /// The named sources, the longest in total first; past [`MAX_CULPRITS`], the rest summed
    /// per class as [`OTHER`].
    pub fn culprits(&self) -> Vec<Culprit> {
        let mut all: Vec<Culprit> = self
            .sources
            .iter()
            .map(|((source, name), s)| Culprit {
                source: *source,
                name: name.clone(),
                count: s.count,
                total_ns: s.total_ns,
                max_ns: s.max_ns,
            })
            .collect();
        all.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.name.cmp(&b.name)));
        if all.len() <= MAX_CULPRITS {
            return all;
        }
        // Keep room for one `other` per class.
        let rest = all.split_off(MAX_CULPRITS - Source::ALL.len());
        for source in Source::ALL {
            let mut other = Culprit {
                source,
                name: OTHER.to_string(),
                count: 0,
                total_ns: 0,
                max_ns: 0,
            };
            for r in rest.iter().filter(|r| r.source == source) {
                other.count = other.count.saturating_add(r.count);
                other.total_ns = other.total_ns.saturating_add(r.total_ns);
                other.max_ns = other.max_ns.max(r.max_ns);
            }
            if other.count > 0 {
                all.push(other);
            }
        }
        all
    }
}

/// An osnoise trace, per CPU.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OsnoiseReport {
    /// The `# tracer:` header's tracer, when the trace has one.
    pub tracer: Option<String>,
    /// Online CPUs from the header's `#P:N`, when given.
    pub online_cpus: Option<u32>,
    /// Per CPU that has summary lines or events.
    pub cpus: BTreeMap<u32, CpuSummary>,
    /// The timestamps of the first and the last summary line, ns of the trace clock.
    pub first_summary_ns: Option<u64>,
    /// See `first_summary_ns`.
    pub last_summary_ns: Option<u64>,
    /// Summary lines read.
    pub summary_lines: u64,
    /// osnoise noise events read.
    pub noise_events: u64,
    /// Other events (ignored).
    pub other_events: u64,
    /// Lines that were neither (cut or corrupted lines), and the first of them (line, text).
    pub unknown_lines: u64,
    /// See `unknown_lines`.
    pub first_unknown: Option<(u64, String)>,
    /// Lost-events markers (`CPU:2 [LOST 123 EVENTS]`).
    pub lost_markers: u64,
    /// The events the markers counted, added up; `None` when a marker gave no count (and
    /// when there is no marker: read it with `lost_markers`).
    pub lost_events: Option<u64>,
}

/// Whether `text` is the osnoise tracer's trace: a `# tracer: osnoise` header within its
/// first 20 lines, or (a `trace_pipe` and `trace-cmd report` have no such header) a first
/// event line that is a summary line or an osnoise noise event.
pub fn detect(text: &str) -> bool {
    for l in text.lines().take(20) {
        let t = l.trim();
        if let Some(c) = t.strip_prefix('#') {
            if let Some(name) = c.trim().strip_prefix("tracer:") {
                return name.trim() == "osnoise";
            }
            continue;
        }
        let parsed = line::parse(l);
        if parsed == Line::Comment {
            continue; // empty, or trace-cmd's `cpus=N`
        }
        return matches!(summary(l), Some(Ok(_)))
            || matches!(parsed, Line::Event(e) if e.name == "osnoise" || kind(e.name).is_some());
    }
    false
}

/// The osnoise events rtlab reads, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Sample,
    Noise(Source),
}

fn kind(name: &str) -> Option<Kind> {
    Some(match name {
        "sample_threshold" => Kind::Sample,
        "nmi_noise" => Kind::Noise(Source::Nmi),
        "irq_noise" => Kind::Noise(Source::Irq),
        "softirq_noise" => Kind::Noise(Source::Softirq),
        "thread_noise" => Kind::Noise(Source::Thread),
        _ => return None,
    })
}

/// One summary line's figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Period {
    cpu: u32,
    ts_ns: u64,
    runtime_us: u64,
    noise_us: u64,
    max_single_us: u64,
    counts: PerSource,
}

impl OsnoiseReport {
    /// Reads a trace from `input` line by line (constant memory but for the per-CPU
    /// tables). Lines that are neither summary lines nor events are counted, not refused (a
    /// trace is often cut); a line that is a summary line by its shape but whose figures do
    /// not read, or sums past 2^64, is an error naming it. I/O errors are errors too.
    pub fn read(mut input: impl BufRead) -> Result<OsnoiseReport, ParseError> {
        let mut r = OsnoiseReport::default();
        let mut buf = Vec::with_capacity(256);
        let mut n: u64 = 0;
        while let Some(whole) = next_line(&mut input, &mut buf).map_err(|e| ParseError {
            line: usize::try_from(n + 1).unwrap_or(usize::MAX),
            what: format!("could not read the trace: {e}"),
        })? {
            n += 1;
            let text = if whole {
                std::str::from_utf8(&buf).ok()
            } else {
                None
            };
            let Some(text) = text.map(|t| t.trim_end_matches(['\n', '\r'])) else {
                r.unknown(n, "");
                continue;
            };
            r.line(n, text).map_err(|what| ParseError {
                line: usize::try_from(n).unwrap_or(usize::MAX),
                what,
            })?;
        }
        Ok(r)
    }

    /// Takes one line (its 1-based number `n`, without its line end).
    fn line(&mut self, n: u64, text: &str) -> Result<(), String> {
        match line::parse(text) {
            // trace-cmd report names the tracer's entry (`osnoise:`) before its figures.
            Line::Event(e) if e.name == "osnoise" => {
                let rest: Vec<&str> = e.fields.split_whitespace().collect();
                self.period(period(u64::from(e.cpu), e.ts_ns, &rest)?)?;
            }
            Line::Event(e) => match kind(e.name) {
                Some(k) => self.event(e.cpu, k, e.fields)?,
                None => self.other_events += 1,
            },
            Line::Comment => self.header(text),
            Line::Malformed(t) | Line::Continuation(t) => match summary(t) {
                Some(p) => self.period(p?)?,
                None => self.unknown(n, t),
            },
            Line::Lost { events, .. } => {
                self.lost_markers += 1;
                self.lost_events = match (self.lost_markers, self.lost_events, events) {
                    (1, _, e) => e,
                    (_, Some(a), Some(b)) => Some(a.saturating_add(b)),
                    _ => None,
                };
            }
            Line::BufferStarted { .. } => {}
        }
        Ok(())
    }

    fn unknown(&mut self, n: u64, text: &str) {
        self.unknown_lines += 1;
        if self.first_unknown.is_none() {
            self.first_unknown = Some((n, text.chars().take(200).collect()));
        }
    }

    /// Reads a trace held in memory (see [`OsnoiseReport::read`]).
    pub fn parse(text: &str) -> Result<OsnoiseReport, ParseError> {
        OsnoiseReport::read(text.as_bytes())
    }

    /// A header comment: `# tracer: NAME`, `# entries-in-buffer/... #P:N`.
    fn header(&mut self, line: &str) {
        let c = line.trim().trim_start_matches('#').trim();
        if let Some(name) = c.strip_prefix("tracer:") {
            self.tracer = Some(name.trim().chars().take(64).collect());
        } else if let Some((_, p)) = c.split_once("#P:") {
            let n = p.split_whitespace().next().unwrap_or("");
            self.online_cpus = n.parse().ok();
        }
    }

    fn period(&mut self, p: Period) -> Result<(), String> {
        let c = self.cpus.entry(p.cpu).or_default();
        let past = |what: &str| format!("CPU {}: the {what} adds up past 2^64 us", p.cpu);
        c.runtime_us = c
            .runtime_us
            .checked_add(p.runtime_us)
            .ok_or_else(|| past("runtime"))?;
        c.noise_us = c
            .noise_us
            .checked_add(p.noise_us)
            .ok_or_else(|| past("noise"))?;
        for s in Source::ALL {
            let sum = c.counts.get(s).checked_add(p.counts.get(s));
            sum.ok_or_else(|| {
                format!("CPU {}: the {} count adds up past 2^64", p.cpu, s.column())
            })?;
            c.counts.add(s, p.counts.get(s));
        }
        c.periods += 1;
        c.max_period_runtime_us = c.max_period_runtime_us.max(p.runtime_us);
        c.max_period_noise_us = c.max_period_noise_us.max(p.noise_us);
        c.max_single_us = c.max_single_us.max(p.max_single_us);
        self.summary_lines += 1;
        self.first_summary_ns = Some(self.first_summary_ns.map_or(p.ts_ns, |t| t.min(p.ts_ns)));
        self.last_summary_ns = Some(self.last_summary_ns.map_or(p.ts_ns, |t| t.max(p.ts_ns)));
        Ok(())
    }

    fn event(&mut self, cpu: u32, kind: Kind, fields: &str) -> Result<(), String> {
        let (name, ns, interferences) = noise_fields(kind, fields)?;
        self.noise_events += 1;
        let c = self.cpus.entry(cpu).or_default();
        let source = match kind {
            Kind::Sample => {
                c.samples.record(ns);
                if interferences != Some(0) {
                    return Ok(());
                }
                Source::Hw
            }
            Kind::Noise(s) => s,
        };
        c.class_ns.add(source, ns);
        let mut key = (source, name);
        if !c.sources.contains_key(&key) && c.sources.len() >= MAX_NAMES_PER_CPU {
            key.1 = OTHER.to_string();
        }
        c.sources.entry(key).or_default().record(ns);
        Ok(())
    }
}

/// Reads one line into `buf` (line end included); `Some(false)` when it was longer than
/// [`MAX_LINE_BYTES`] (the rest is read past, not kept), `None` at the end.
fn next_line(input: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<Option<bool>> {
    buf.clear();
    let limit = MAX_LINE_BYTES as u64 + 1;
    let read = input.by_ref().take(limit).read_until(b'\n', buf)?;
    if read == 0 {
        return Ok(None);
    }
    if buf.len() <= MAX_LINE_BYTES || buf.ends_with(b"\n") {
        return Ok(Some(true));
    }
    let mut rest = Vec::new();
    loop {
        rest.clear();
        let got = input.by_ref().take(limit).read_until(b'\n', &mut rest)?;
        if got == 0 || rest.ends_with(b"\n") {
            return Ok(Some(false));
        }
    }
}

/// `NAME:N start S.NS duration N ns [interference(s) N]` → (name, duration, interferences).
fn noise_fields(kind: Kind, fields: &str) -> Result<(String, u64, Option<u64>), String> {
    let bad = || {
        let shown: String = fields.chars().take(80).collect();
        format!("expected `start SECS.NSECS duration N ns` in an osnoise event, found `{shown}`")
    };
    let (head, tail) = match fields.strip_prefix("start ") {
        Some(t) => ("", t),
        None => fields.split_once(" start ").ok_or_else(bad)?,
    };
    let mut words = tail.split_whitespace();
    let start = words.next().ok_or_else(bad)?;
    line::timestamp(start).ok_or_else(bad)?;
    if words.next() != Some("duration") {
        return Err(bad());
    }
    let ns = number(words.next().unwrap_or("")).ok_or_else(bad)?;
    if words.next() != Some("ns") {
        return Err(bad());
    }
    let interferences = match words.next() {
        Some("interference" | "interferences") => {
            Some(number(words.next().unwrap_or("")).ok_or_else(bad)?)
        }
        _ => None,
    };
    let head = head.trim();
    let name = match kind {
        Kind::Sample => UNATTRIBUTED.to_string(),
        Kind::Noise(Source::Nmi) => "nmi".to_string(),
        Kind::Noise(Source::Thread) => match head.rsplit_once(':') {
            Some((comm, pid)) if number(pid).is_some() => format!("{} (pid {pid})", comm.trim()),
            _ => head.to_string(),
        },
        Kind::Noise(Source::Irq) => match head.rsplit_once(':') {
            Some((desc, n)) if number(n).is_some() => irq_name(desc.trim(), n),
            _ => format!("irq {head}"),
        },
        Kind::Noise(_) => match head.rsplit_once(':') {
            Some((name, n)) if number(n).is_some() => format!("softirq {}", name.trim()),
            _ => format!("softirq {head}"),
        },
    };
    let name: String = name.chars().take(128).collect();
    Ok((name, ns, interferences))
}

/// x86's system vectors, which the tracer names after their handler (`local_timer:236`: 236
/// is the vector, not an IRQ number).
const SYSTEM_VECTORS: [&str; 11] = [
    "local_timer",
    "error_apic",
    "spurious_apic",
    "x86_platform_ipi",
    "irq_work",
    "reschedule",
    "call_function",
    "call_function_single",
    "thermal_apic",
    "deferred_error",
    "threshold_apic",
];

fn irq_name(desc: &str, n: &str) -> String {
    if SYSTEM_VECTORS.contains(&desc) {
        desc.to_string()
    } else {
        format!("irq {n} {desc}")
    }
}

/// Decimal digits to a number (no sign, no spaces, at most 20 digits, within 64 bits).
fn number(text: &str) -> Option<u64> {
    if text.is_empty() || text.len() > 20 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// A summary line: `None` when the line is not one by its shape (no `[CPU]` column and
/// timestamp, or no digit after the timestamp); an error when it is one whose figures do not
/// read.
fn summary(text: &str) -> Option<Result<Period, String>> {
    let open = text.find(" [")? + 1;
    let close = open + text[open..].find(']')?;
    let cpu = number(&text[open + 1..close])?;
    let mut words = text[close + 1..].split_whitespace().peekable();
    // An optional flags word, then `SECONDS.FRACTION:`.
    let first = words.next()?;
    let ts_word = if first.ends_with(':') {
        first
    } else {
        words.next()?
    };
    let (ts_ns, _) = line::timestamp(ts_word.strip_suffix(':')?)?;
    let rest: Vec<&str> = words.collect();
    if !rest.first()?.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    Some(period(cpu, ts_ns, &rest))
}

fn period(cpu: u64, ts_ns: u64, rest: &[&str]) -> Result<Period, String> {
    let cpu = u32::try_from(cpu)
        .ok()
        .filter(|c| *c <= model::cpuset::MAX_CPU)
        .ok_or_else(|| {
            format!(
                "CPU {cpu} is past the largest CPU number rtlab reads ({})",
                model::cpuset::MAX_CPU
            )
        })?;
    if rest.len() != 9 {
        return Err(format!(
            "expected 9 figures after the timestamp (RUNTIME NOISE %AVAILABLE MAX_SINGLE HW NMI \
             IRQ SIRQ THREAD), found {}",
            rest.len()
        ));
    }
    let pct_ok = rest[2]
        .split_once('.')
        .is_some_and(|(i, f)| number(i).is_some() && number(f).is_some());
    if !pct_ok {
        return Err(format!(
            "expected the % of CPU available, found `{}`",
            rest[2]
        ));
    }
    let mut v = [0u64; 8];
    for (slot, (i, w)) in v
        .iter_mut()
        .zip(rest.iter().enumerate().filter(|(i, _)| *i != 2))
    {
        *slot = number(w).ok_or_else(|| {
            format!(
                "expected a whole number (at most 2^64) in column {} of the summary, found `{w}`",
                i + 1
            )
        })?;
    }
    let [
        runtime_us,
        noise_us,
        max_single_us,
        hw,
        nmi,
        irq,
        softirq,
        thread,
    ] = v;
    if noise_us > runtime_us {
        return Err(format!(
            "CPU {cpu}: noise {noise_us} us is more than the period's runtime {runtime_us} us"
        ));
    }
    Ok(Period {
        cpu,
        ts_ns,
        runtime_us,
        noise_us,
        max_single_us,
        counts: PerSource {
            hw,
            nmi,
            irq,
            softirq,
            thread,
        },
    })
}

#[cfg(test)]
mod tests;
