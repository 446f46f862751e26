//! The hwlat tracer's output (`echo hwlat > current_tracer`, then `trace` or `trace_pipe`):
//! this module owns reading its samples (`#N inner/outer(us): I/O ts:S.NS count:N`, the NMI
//! fields when an NMI came in) into a [`HwlatReport`] and summing them up per CPU
//! (`report::story` tells them in words). Data in, data out: no file access, no clock.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::latency::{digits, found};

const KEY: &str = "inner/outer(us):";

pub use crate::error::ParseError;

/// One sample: the worst latency of one sampling window over `tracing_thresh`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HwlatSample {
    /// The sample's number (`#1`).
    pub seq: u64,
    /// The CPU it ran on (`[001]`).
    pub cpu: u32,
    /// The ftrace timestamp column (`678.473449`, seconds), in ns.
    pub trace_ts_ns: u64,
    /// Latency seen between two back-to-back time reads, in us.
    pub inner_us: u64,
    /// Latency seen between one loop's last read and the next loop's first, in us.
    pub outer_us: u64,
    /// The wall-clock time of the window's first latency, as printed (`1581527483.343962693`).
    pub wall_ts: String,
    /// How many latencies the window saw (`count:6`; absent on older kernels).
    pub count: Option<u64>,
    /// Time spent in NMIs during the window, in us (`nmi-total:7`).
    pub nmi_total_us: Option<u64>,
    /// NMIs that came in during the window (`nmi-count:1`).
    pub nmi_count: Option<u64>,
}

/// The hwlat tracer's samples.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HwlatReport {
    /// The samples, in the order printed.
    pub samples: Vec<HwlatSample>,
    /// Online CPUs from the header's `#P:N`; 0 when the text has no header (`trace_pipe`).
    pub cpus: u32,
}

/// Whether `text` looks like hwlat output: a leading `# tracer: hwlat`, or a first line that
/// is a sample (`trace_pipe` has no header).
pub fn detect(text: &str) -> bool {
    for t in text.lines().map(str::trim).filter(|t| !t.is_empty()) {
        match t.strip_prefix('#') {
            Some(c) if c.trim().strip_prefix("tracer:").is_some() => {
                return c.trim().trim_start_matches("tracer:").trim() == "hwlat";
            }
            Some(_) => {}
            None if t.starts_with("cpus=") => {} // trace-cmd report's first line
            None => return t.contains(KEY) || is_report_sample(t),
        }
    }
    false
}

/// Reads hwlat output. `#` lines are comments (the header's `#P:N` and `# tracer:` are read),
/// lost-events markers are skipped, and any other line that is not a sample is an error naming
/// its 1-based line.
pub fn parse(text: &str) -> Result<HwlatReport, ParseError> {
    let mut report = HwlatReport::default();
    for (i, t) in text.lines().map(str::trim).enumerate() {
        let err = |what: String| ParseError { line: i + 1, what };
        // trace-cmd report's header: the recorded machine's CPUs.
        if let Some(n) = t.strip_prefix("cpus=") {
            let cpus = digits(n).and_then(|n| u32::try_from(n).ok());
            report.cpus = cpus.ok_or_else(|| err(found("the CPU count `cpus=N`", t)))?;
            continue;
        }
        let empty_cpu = t.starts_with("CPU ") && t.ends_with(" is empty");
        if t.is_empty() || empty_cpu || (t.starts_with("CPU:") && t.contains("[LOST ")) {
            continue;
        }
        let Some(c) = t.strip_prefix('#') else {
            report.samples.push(sample(t).map_err(err)?);
            continue;
        };
        let c = c.trim();
        if let Some(name) = c.strip_prefix("tracer:").map(str::trim) {
            if name != "hwlat" {
                return Err(err(found("`# tracer: hwlat`", c)));
            }
        } else if let Some((_, p)) = c.split_once("#P:") {
            let n = p.split_whitespace().next().unwrap_or("");
            let cpus = digits(n).and_then(|n| u32::try_from(n).ok());
            report.cpus = cpus.ok_or_else(|| err(found("the CPU count `#P:N`", c)))?;
        }
    }
    Ok(report)
}

/// Whether `t` is a sample as `trace-cmd report` prints a recording's entry (its print
/// format: `hwlat: cnt:N ts:S.NS inner:I outer:O count:C nmi-ts:T nmi-count:K`).
fn is_report_sample(t: &str) -> bool {
    t.contains(" hwlat: ") && t.contains("cnt:") && t.contains("inner:")
}

/// `<...>-222 [001] dN... 84.866479: hwlat: cnt:1 ts:1795814457.0028556492 inner:945
/// outer:1108 count:642 nmi-ts:0 nmi-count:0`: the entry's print format pads the wall-clock
/// seconds and nanoseconds to ten digits; read as the tracer's `SECS.NSECS`.
fn report_sample(t: &str) -> Result<HwlatSample, String> {
    let (head, fields) = t
        .split_once(" hwlat: ")
        .ok_or_else(|| found("`hwlat:` and the entry's fields", t))?;
    let mut h = head.split_whitespace().rev();
    let ts = h.next().unwrap_or("");
    let trace_ts_ns = ts.strip_suffix(':').and_then(secs_to_ns);
    let trace_ts_ns = trace_ts_ns.ok_or_else(|| found("the timestamp `SECS.USECS:`", ts))?;
    let cpu = h.find_map(|w| digits(w.strip_prefix('[')?.strip_suffix(']')?));
    let cpu = cpu.and_then(|c| u32::try_from(c).ok());
    let cpu = cpu.ok_or_else(|| found("the CPU column `[NNN]` before the timestamp", t))?;
    let mut s = HwlatSample {
        seq: 0,
        cpu,
        trace_ts_ns,
        inner_us: 0,
        outer_us: 0,
        wall_ts: String::new(),
        count: None,
        nmi_total_us: None,
        nmi_count: None,
    };
    let mut seen = (false, false, false);
    for w in fields.split_whitespace() {
        let (k, v) = w
            .split_once(':')
            .ok_or_else(|| found("`key:value` fields after `hwlat:`", w))?;
        let num = || digits(v).ok_or_else(|| found(&format!("a number for `{k}`"), v));
        match k {
            "cnt" => (s.seq, seen.0) = (num()?, true),
            "inner" => (s.inner_us, seen.1) = (num()?, true),
            "outer" => (s.outer_us, seen.2) = (num()?, true),
            "count" => s.count = Some(num()?),
            "nmi-ts" => s.nmi_total_us = Some(num()?).filter(|&n| n > 0),
            "nmi-count" => s.nmi_count = Some(num()?),
            "ts" => s.wall_ts = padded_wall(v).ok_or_else(|| found("`ts:SECS.NSECS`", w))?,
            _ => {}
        }
    }
    if s.nmi_total_us.is_none() {
        s.nmi_count = None; // the tracer prints the NMI fields only when NMIs ran
    }
    if !(seen.0 && seen.1 && seen.2) || s.wall_ts.is_empty() {
        return Err(found(
            "`cnt:`, `ts:`, `inner:` and `outer:` after `hwlat:`",
            t,
        ));
    }
    Ok(s)
}

/// `0001795814457.0028556492` (both parts zero-padded to ten digits) as `1795814457.028556492`.
fn padded_wall(v: &str) -> Option<String> {
    let (secs, nsecs) = v.split_once('.')?;
    let secs = digits(secs)?;
    let nsecs = digits(nsecs).filter(|&n| n < 1_000_000_000)?;
    Some(format!("{secs}.{nsecs:09}"))
}

/// `<...>-1729  [001] d...   678.473449: #1     inner/outer(us):   11/12    ts:... count:6`
fn sample(t: &str) -> Result<HwlatSample, String> {
    if !t.contains(KEY) && is_report_sample(t) {
        return report_sample(t);
    }
    let what = "a hwlat sample `TASK-PID [CPU] FLAGS SECS.USECS: #N inner/outer(us): I/O ts:S.NS`";
    let pos = t.find(KEY).ok_or_else(|| found(what, t))?;
    let mut head = t[..pos].split_whitespace().rev();
    let seq = head.next().and_then(|w| digits(w.strip_prefix('#')?));
    let seq = seq.ok_or_else(|| found("the sample number `#N` before `inner/outer(us):`", t))?;
    let mut ts = head.next().unwrap_or("");
    if ts == "hwlat:" {
        ts = head.next().unwrap_or(""); // trace-cmd prints the event's name
    }
    let trace_ts_ns = ts.strip_suffix(':').and_then(secs_to_ns);
    let trace_ts_ns = trace_ts_ns.ok_or_else(|| found("the timestamp `SECS.USECS:`", ts))?;
    let cpu = head.find_map(|w| digits(w.strip_prefix('[')?.strip_suffix(']')?));
    let cpu = cpu.and_then(|c| u32::try_from(c).ok());
    let cpu = cpu.ok_or_else(|| found("the CPU column `[NNN]` before the timestamp", t))?;
    let mut words = t[pos + KEY.len()..].split_whitespace();
    let io = words.next().unwrap_or("");
    let io_ok = io
        .split_once('/')
        .and_then(|(i, o)| Some((digits(i)?, digits(o)?)));
    let (inner_us, outer_us) =
        io_ok.ok_or_else(|| found("`INNER/OUTER` after `inner/outer(us):`", io))?;
    let mut s = HwlatSample {
        seq,
        cpu,
        trace_ts_ns,
        inner_us,
        outer_us,
        wall_ts: String::new(),
        count: None,
        nmi_total_us: None,
        nmi_count: None,
    };
    for w in words {
        let (k, v) = w
            .split_once(':')
            .ok_or_else(|| found("`key:value` after the latencies", w))?;
        let num = || digits(v).ok_or_else(|| found(&format!("a number for `{k}`"), v));
        match k {
            "ts" if secs_to_ns(v).is_some() => s.wall_ts = v.to_string(),
            "ts" => return Err(found("the wall-clock time `ts:SECS.NSECS`", w)),
            "count" => s.count = Some(num()?),
            "nmi-total" => s.nmi_total_us = Some(num()?),
            "nmi-count" => s.nmi_count = Some(num()?),
            _ => {}
        }
    }
    if s.wall_ts.is_empty() {
        return Err(found(
            "the wall-clock time `ts:SECS.NSECS` after the latencies",
            t,
        ));
    }
    Ok(s)
}

/// `678.473449` (seconds, up to 9 decimals) as ns.
fn secs_to_ns(s: &str) -> Option<u64> {
    let (int, frac) = s.split_once('.')?;
    if frac.is_empty() || frac.len() > 9 {
        return None;
    }
    let frac: String = frac.chars().chain("000000000".chars()).take(9).collect();
    digits(int)?
        .checked_mul(1_000_000_000)?
        .checked_add(digits(&frac)?)
}

impl HwlatReport {
    /// The sample with the largest latency (inner or outer); the first one on a tie.
    pub fn worst(&self) -> Option<&HwlatSample> {
        let key = |s: &HwlatSample| s.inner_us.max(s.outer_us);
        self.samples
            .iter()
            .reduce(|a, b| if key(b) > key(a) { b } else { a })
    }

    /// Per CPU that has samples, in CPU order: (CPU, samples, largest inner or outer us).
    pub fn per_cpu(&self) -> Vec<(u32, u64, u64)> {
        let mut m: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        for s in &self.samples {
            let e = m.entry(s.cpu).or_default();
            *e = (e.0 + 1, e.1.max(s.inner_us).max(s.outer_us));
        }
        m.into_iter().map(|(c, (n, max))| (c, n, max)).collect()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// `trace-cmd report` of a `trace-cmd record -p hwlat` on Debian's 6.12 RT kernel (lab).
    const REPORT: &str = "cpus=2
           <...>-222   [001] dN...    84.866479: hwlat:                cnt:1\tts:1795814457.0028556492\tinner:945\touter:1108\tcount:642\tnmi-ts:0\tnmi-count:0
           <...>-222   [000] d....    85.902300: hwlat:                cnt:2\tts:1795814458.0065231533\tinner:1505\touter:1386\tcount:683\tnmi-ts:3\tnmi-count:1
";

    #[test]
    fn trace_cmd_reports_samples() {
        assert!(detect(REPORT));
        let r = parse(REPORT).unwrap();
        assert_eq!((r.samples.len(), r.cpus), (2, 2));
        let s = &r.samples[0];
        assert_eq!(
            (s.seq, s.cpu, s.trace_ts_ns, s.inner_us, s.outer_us),
            (1, 1, 84_866_479_000, 945, 1108)
        );
        assert_eq!(s.wall_ts, "1795814457.028556492");
        assert_eq!(
            (s.count, s.nmi_total_us, s.nmi_count),
            (Some(642), None, None)
        );
        let s = &r.samples[1];
        assert_eq!((s.nmi_total_us, s.nmi_count), (Some(3), Some(1)));
        let bad = REPORT.replace("inner:945", "inner:lots");
        assert!(parse(&bad).unwrap_err().to_string().starts_with("line 2:"));
        assert!(parse(&REPORT.replace("\touter:1108", "")).is_err());
    }

    fn fixture() -> String {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/traces/hwlat/kdoc_hwlat_tracer_trace.txt"
        );
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn sample(seq: u64, cpu: u32, ts: u64, io: (u64, u64), wall: &str, c: u64) -> HwlatSample {
        let (inner_us, outer_us, wall_ts) = (io.0, io.1, wall.to_string());
        let (count, nmi_total_us, nmi_count) = (Some(c), None, None);
        HwlatSample {
            seq,
            cpu,
            trace_ts_ns: ts,
            inner_us,
            outer_us,
            wall_ts,
            count,
            nmi_total_us,
            nmi_count,
        }
    }

    #[test]
    fn the_fixture_parses_with_its_facts() {
        let text = fixture();
        assert!(detect(&text));
        let r = parse(&text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((r.samples.len(), r.cpus), (12, 8));
        let first = sample(1, 1, 678_473_449_000, (11, 12), "1581527483.343962693", 6);
        assert_eq!(r.samples[0], first);
        let mut tenth = sample(10, 1, 863_938_932_000, (9, 11), "1581527668.970010500", 1);
        (tenth.nmi_total_us, tenth.nmi_count) = (Some(7), Some(1));
        assert_eq!(r.samples[9], tenth);
        let last = sample(12, 7, 886_114_702_000, (9, 12), "1581527691.385001600", 1);
        assert_eq!(r.samples.last(), Some(&last));
        assert_eq!(
            r.worst().map(|s| (s.seq, s.cpu, s.inner_us)),
            Some((7, 3, 18))
        );
        let per_cpu = [
            (1, 4, 17),
            (2, 1, 13),
            (3, 1, 18),
            (4, 1, 16),
            (5, 1, 16),
            (6, 1, 12),
            (7, 3, 12),
        ];
        assert_eq!(r.per_cpu(), per_cpu);
        let json = serde_json::to_string(&r).unwrap_or_default();
        assert_eq!(serde_json::from_str::<HwlatReport>(&json).ok(), Some(r));
    }

    #[test]
    fn other_layouts_read() {
        // Written here from the kernel's formats: no count (older kernels), no header
        // (trace_pipe), 5 flag columns, trace-cmd's event name, an NMI count without its time
        // (GENERIC_SCHED_CLOCK kernels), a lost-events marker.
        let text = "           <...>-4711  [001] d... 35401.973699: #1       inner/outer(us): 2150/1930    ts:1578801212.559595228\n\
            CPU:1 [LOST 3 EVENTS]\n\
            <...>-8799    [000] dn...   613.749741: #2 inner/outer(us):   41/41    ts:1702045267.016266287 count:9970 nmi-count:2\n\
            <...>-1729  [012]   678.473449: hwlat: #3     inner/outer(us):   11/12    ts:1.5 count:6\n";
        assert!(detect(text));
        let r = parse(text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.cpus, 0);
        let got: Vec<_> = r
            .samples
            .iter()
            .map(|s| {
                (
                    s.seq,
                    s.cpu,
                    s.trace_ts_ns,
                    s.inner_us,
                    s.outer_us,
                    s.count,
                    s.nmi_count,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (1, 1, 35_401_973_699_000, 2150, 1930, None, None),
                (2, 0, 613_749_741_000, 41, 41, Some(9970), Some(2)),
                (3, 12, 678_473_449_000, 11, 12, Some(6), None),
            ]
        );
        assert_eq!(r.worst().map(|s| s.seq), Some(1));
        assert_eq!(parse("").map(|r| r.samples.len()), Ok(0));
        assert!(!detect("") && !detect("# tracer: irqsoff\n") && !detect("hello\n"));
    }

    #[test]
    fn damage_is_named_by_line() {
        let text = fixture();
        let e = |from: &str, to: &str| parse(&text.replacen(from, to, 1)).unwrap_err().to_string();
        let cases = [
            (
                "11/12 ",
                "11/x2 ",
                "line 12: expected `INNER/OUTER` after `inner/outer(us):`, found `11/x2`",
            ),
            (
                "ts:1581527483.343962693",
                "ts:158152748x",
                "line 12: expected the wall-clock time",
            ),
            (
                "ts:1581527483.343962693",
                "",
                "line 12: expected the wall-clock time",
            ),
            (
                "678.473449:",
                "678.47x449:",
                "line 12: expected the timestamp `SECS.USECS:`, found `678.47x449:`",
            ),
            ("[004]", "[0x4]", "line 13: expected the CPU column `[NNN]`"),
            ("#2 ", "#x ", "line 13: expected the sample number `#N`"),
            (
                "count:5",
                "count:five",
                "line 14: expected a number for `count`, found `five`",
            ),
            (
                "count:5",
                "count",
                "line 14: expected `key:value` after the latencies, found `count`",
            ),
            ("#P:8", "#P:eight", "line 3: expected the CPU count `#P:N`"),
            (
                "# tracer: hwlat",
                "# tracer: nop",
                "line 1: expected `# tracer: hwlat`",
            ),
            (
                "#\n#   ",
                "#\nhello\n#   ",
                "line 5: expected a hwlat sample",
            ),
        ];
        for (from, to, want) in cases {
            assert!(e(from, to).starts_with(want), "{to}: {}", e(from, to));
        }
    }

    proptest! {
        #[test]
        fn never_panics_on_arbitrary_text(text in "\\PC{0,300}") {
            let _ = detect(&text);
            if let Ok(r) = parse(&text) {
                let _ = (r.per_cpu(), r.worst());
            }
        }

        #[test]
        fn never_panics_on_mangled_fixture(
            at in 0usize..2_000, len in 0usize..40, junk in "[0-9a-z #:/\\[\\]().-]{0,12}",
        ) {
            let text = fixture();
            let at = at % (text.len() + 1);
            let end = (at + len).min(text.len());
            if text.is_char_boundary(at) && text.is_char_boundary(end)
                && let Ok(r) = parse(&format!("{}{junk}{}", &text[..at], &text[end..]))
            {
                let _ = (r.per_cpu(), r.worst());
            }
        }

        #[test]
        fn kernel_formatted_samples_read_back(
            seq in 1u64..100_000, cpu in 0u32..1000, secs in 0u64..10_000_000, us in 0u64..1_000_000,
            inner in 0u64..100_000, outer in 0u64..100_000, wall in 0u64..u32::MAX as u64,
            ns in 0u64..1_000_000_000, count in 1u64..100_000, nmi in proptest::option::of((0u64..1000, 1u64..100)),
        ) {
            let mut line = format!(
                "{:>16}-{:<7} [{cpu:03}] d.... {secs:5}.{us:06}: #{seq:<5} inner/outer(us): {inner:4}/{outer:<5} ts:{wall}.{ns:09} count:{count}",
                "<...>", 1729
            );
            if let Some((t, c)) = nmi {
                line += &format!(" nmi-total:{t} nmi-count:{c}");
            }
            let r = parse(&line).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let mut want = sample(seq, cpu, secs * 1_000_000_000 + us * 1000, (inner, outer), &format!("{wall}.{ns:09}"), count);
            (want.nmi_total_us, want.nmi_count) = (nmi.map(|n| n.0), nmi.map(|n| n.1));
            prop_assert_eq!(r.samples, vec![want]);
        }
    }
}
