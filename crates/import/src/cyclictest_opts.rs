//! What a cyclictest command line (as recorded in its `--json` output) says about the run,
//! and the parts of cyclictest's output other than latencies: the `policy:` and
//! `/dev/cpu_dma_latency` lines, and the RFC 2822 times of its JSON.

use std::time::{Duration, SystemTime};

use model::Nanos;
use model::measure::{MeasureParams, Policy};

/// cyclictest options that shape the run. Defaults are cyclictest's own (rt-tests 2.x).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Options {
    pub priority: u8,
    pub policy: Option<Policy>,
    pub interval_us: u64,
    pub distance_us: u64,
    pub loops: Option<u64>,
    pub duration: Option<Duration>,
    pub mlock: bool,
    pub aligned: bool,
    pub laptop: bool,
    pub nsecs: bool,
    pub histogram_us: Option<u64>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            priority: 0,
            policy: None,
            interval_us: 1000,
            distance_us: 500,
            loops: None,
            duration: None,
            mlock: false,
            aligned: false,
            laptop: false,
            nsecs: false,
            histogram_us: None,
        }
    }
}

/// Short options of cyclictest that take a value (getopt's `x:`).
const SHORT_WITH_VALUE: &str = "bcdDFhHilop";

/// Short options that take a value only when it is joined to them (getopt's `x::`).
const SHORT_WITH_JOINED: &str = "aAt";

/// Long options that take a value.
const LONG_WITH_VALUE: [&str; 8] = [
    "priority",
    "interval",
    "distance",
    "loops",
    "duration",
    "histogram",
    "histofall",
    "policy",
];

/// Parses the options rtlab uses; others are ignored. Values that do not parse are ignored
/// too (the command line is provenance, not input rtlab must judge). Short options cluster
/// as getopt reads them: `-mSp90` is `-m -S -p 90`.
pub(crate) fn parse(cmdline: &str) -> Options {
    let mut o = Options::default();
    for (name, value) in options(cmdline) {
        apply_option(&mut o, name, value);
    }
    o
}

/// The command line's options as getopt reads them: (name, value).
fn options(cmdline: &str) -> Vec<(&str, Option<&str>)> {
    let words: Vec<&str> = cmdline.split_whitespace().skip(1).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let word = words[i];
        i += 1;
        let next_value = |i: &mut usize| {
            if *i < words.len() && !words[*i].starts_with('-') {
                *i += 1;
                Some(words[*i - 1])
            } else {
                None
            }
        };
        if let Some(long) = word.strip_prefix("--") {
            match long.split_once('=') {
                Some((n, v)) => out.push((n, Some(v))),
                None if LONG_WITH_VALUE.contains(&long) => out.push((long, next_value(&mut i))),
                None => out.push((long, None)),
            }
            continue;
        }
        let Some(mut rest) = word.strip_prefix('-').filter(|r| !r.is_empty()) else {
            continue;
        };
        // A cluster: flags until one that takes a value, which takes the rest of the word
        // or the next word.
        while let Some(c) = rest.chars().next() {
            let (name, after) = rest.split_at(c.len_utf8());
            let joined = Some(after).filter(|a| !a.is_empty());
            if SHORT_WITH_JOINED.contains(c) {
                out.push((name, joined));
                break;
            }
            if SHORT_WITH_VALUE.contains(c) {
                out.push((name, joined.or_else(|| next_value(&mut i))));
                break;
            }
            out.push((name, None));
            rest = after;
        }
    }
    out
}

/// One option's effect on `o`.
fn apply_option(o: &mut Options, name: &str, value: Option<&str>) {
    let num = || value.and_then(|v| v.parse::<u64>().ok());
    match name {
        "p" | "priority" => o.priority = num().and_then(|n| u8::try_from(n).ok()).unwrap_or(0),
        "i" | "interval" => o.interval_us = num().unwrap_or(o.interval_us),
        "d" | "distance" => o.distance_us = num().unwrap_or(o.distance_us),
        "l" | "loops" => o.loops = num().filter(|&n| n > 0),
        "D" | "duration" => o.duration = value.and_then(duration),
        "h" | "histogram" | "H" | "histofall" => o.histogram_us = num(),
        "policy" => o.policy = value.and_then(policy),
        "m" | "mlockall" => o.mlock = true,
        "A" | "aligned" => o.aligned = true,
        "laptop" => o.laptop = true,
        "N" | "nsecs" => o.nsecs = true,
        // -S implies the same priority on every thread and -d0 in cyclictest.
        "S" | "smp" => o.distance_us = 0,
        _ => {}
    }
}

/// cyclictest's duration syntax: a number with an optional `s`, `m`, `h` or `d`.
fn duration(text: &str) -> Option<Duration> {
    let (digits, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, ""),
    };
    let n: u64 = digits.parse().ok()?;
    let mult = match unit {
        "" | "s" | "S" => 1,
        "m" | "M" => 60,
        "h" | "H" => 3600,
        "d" | "D" => 86_400,
        _ => return None,
    };
    Some(Duration::from_secs(n.checked_mul(mult)?))
}

/// A policy name as cyclictest prints or takes it.
pub(crate) fn policy(text: &str) -> Option<Policy> {
    Policy::ALL
        .into_iter()
        .find(|p| p.as_str() == text.trim().to_ascii_lowercase())
}

impl Options {
    /// Writes what the options say into `params` (measured CPUs are already set).
    pub(crate) fn apply(&self, params: &mut MeasureParams, count: u64) {
        params.priority = self.priority;
        params.policy = self.policy.unwrap_or(if self.priority > 0 {
            Policy::Fifo
        } else {
            Policy::Other
        });
        params.interval_ns = Nanos::from_us(self.interval_us);
        params.cycles = self.loops;
        params.duration_ns = self
            .duration
            .map(|d| Nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)));
        params.periods = count;
        params.mlock = self.mlock;
        params.aligned = self.aligned;
        params.dma_latency_us = (!self.laptop).then_some(0);
    }
}

/// The `# /dev/cpu_dma_latency set to 0us` line's value.
pub(crate) fn dma_latency_line(line: &str) -> Option<u32> {
    let rest = line.trim_start_matches('#').trim();
    let value = rest.strip_prefix("/dev/cpu_dma_latency set to ")?;
    value.trim().trim_end_matches("us").parse().ok()
}

/// The `policy: fifo: loadavg: ...` line's policy.
pub(crate) fn policy_line(line: &str) -> Option<Policy> {
    let rest = line.trim().strip_prefix("policy:")?;
    policy(rest.split(':').next()?)
}

/// Parses cyclictest's `start_time` (`Mon, 12 Jan 2026 12:52:32 +0100`, strftime
/// `%a, %d %b %Y %T %z`). `None` for anything else: other text, a field out of range, a year
/// outside 1970–9999 (cyclictest writes the current date), or a time before the epoch.
pub(crate) fn rfc2822(text: &str) -> Option<SystemTime> {
    let mut words = text.split_whitespace();
    let first = words.next()?;
    let day_word = if first.ends_with(',') {
        words.next()?
    } else {
        first
    };
    let day = u32::try_from(number(day_word)?).ok()?;
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month_word = words.next()?;
    let month = MONTHS.iter().position(|m| *m == month_word)? as u32 + 1;
    let year = number(words.next()?)?;
    let mut hms = words.next()?.split(':').map(number);
    let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
    if hms.next().is_some() {
        return None;
    }
    let zone = words.next().unwrap_or("+0000");
    let (sign, digits) = match zone.as_bytes().first() {
        Some(b'-') => (-1, &zone[1..]),
        Some(b'+') => (1, &zone[1..]),
        _ => (1, zone),
    };
    if digits.len() != 4
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || !(1..=31).contains(&day)
        || !(1970..=9999).contains(&year)
        || h > 23
        || m > 59
        || s > 60
    {
        return None;
    }
    // ASCII digits only, so the byte offsets are character boundaries.
    let zh = number(&digits[..2])?;
    let zm = number(&digits[2..])?;
    // Every figure is bounded above, so none of this can overflow an i64.
    let secs = days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + s
        - sign * (zh * 3600 + zm * 60);
    let secs = u64::try_from(secs).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

/// Up to 9 ASCII digits as a number (no sign): dates and times have no more.
fn number(text: &str) -> Option<i64> {
    if text.is_empty() || text.len() > 9 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm,
/// <http://howardhinnant.github.io/date_algorithms.html#days_from_civil>).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(month) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmdline_of_the_imx8mp_run() {
        let o = parse(
            "cyclictest -S -p 99 -m -i 1000 -D30 -q --json=./x.json --histogram=4000 \
             --histfile=./x.hist",
        );
        assert_eq!(o.priority, 99);
        assert_eq!(o.interval_us, 1000);
        assert_eq!(o.duration, Some(Duration::from_secs(30)));
        assert_eq!(o.histogram_us, Some(4000));
        assert_eq!(o.distance_us, 0);
        assert!(o.mlock && !o.laptop && !o.nsecs);
        let o = parse("cyclictest -t1 -p 80 -n -i 10000 -l 10000 --policy=rr -N -D 2m");
        assert_eq!(
            (o.priority, o.interval_us, o.loops),
            (80, 10000, Some(10000))
        );
        assert_eq!(o.policy, Some(Policy::Rr));
        assert_eq!(o.duration, Some(Duration::from_secs(120)));
        assert!(o.nsecs);
        assert_eq!(parse("cyclictest -p abc -i").priority, 0);
        // A multibyte character where an option letter goes is not an option rtlab knows.
        assert_eq!(parse("cyclictest -é5 -ü --é=3 -p9").priority, 9);
    }

    /// Issue #45: short options cluster as getopt reads them, so a run written `-mSp90
    /// -i200` is mlocked, priority 90, interval 200 us (it read as "mlock" only, interval 1ms).
    #[test]
    fn clustered_short_options_are_read_as_getopt_reads_them() {
        let o = parse("cyclictest -mSp90 -i200 -h400 -qa1");
        assert!(o.mlock);
        assert_eq!((o.priority, o.interval_us, o.distance_us), (90, 200, 0));
        assert_eq!(o.histogram_us, Some(400));
        let o = parse("cyclictest -Sp 80 -mi 250 -t -nN");
        assert_eq!((o.priority, o.interval_us), (80, 250));
        assert!(o.mlock && o.nsecs);
        // `-t` takes a value only when joined: `-t 4` leaves 4 a stray word.
        let o = parse("cyclictest -t 4 -p 70");
        assert_eq!(o.priority, 70);
        assert_eq!(
            parse("cyclictest --priority 60 --interval=300").interval_us,
            300
        );
        assert_eq!(parse("cyclictest --priority 60").priority, 60);
    }

    #[test]
    fn times_and_lines() {
        let t = rfc2822("Mon, 12 Jan 2026 12:52:32 +0100").unwrap();
        assert_eq!(
            humantime::format_rfc3339(t).to_string(),
            "2026-01-12T11:52:32Z"
        );
        assert_eq!(rfc2822("Mon, 32 Jan 2026 12:52:32 +0100"), None);
        assert_eq!(rfc2822("yesterday"), None);
        // Text from other machines: non-ASCII where digits belong, absurd years, stray fields.
        for hostile in [
            "Mon, 12 Jan 2026 12:52:32 +é10",
            "Mon, 12 Jan 2026 12:52:32 aé1",
            "Mon, 12 Jan 2026 12:52:32 ++++",
            "Mon, 12 Jan 9223372036854775807 12:52:32 +0100",
            "Mon, 12 Jan -5 12:52:32 +0100",
            "Mon, 12 Jan 2026 12:52:32:07 +0100",
            "Mon, 12 Jan 2026 ١٢:52:32 +0100",
        ] {
            assert_eq!(rfc2822(hostile), None, "{hostile}");
        }
        assert_eq!(
            dma_latency_line("# /dev/cpu_dma_latency set to 0us"),
            Some(0)
        );
        assert_eq!(
            policy_line("policy: fifo: loadavg: 0.67 0.42 0.36 1/142 27899"),
            Some(Policy::Fifo)
        );
    }
}
