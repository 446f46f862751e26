//! Kernel log text, in every form users hand it in, split into messages with their timestamp
//! and level when the form carries them:
//!
//! - `/dev/kmsg` records: `PRI,SEQ,TS_US,FLAGS[,...];message`, each followed by ` KEY=value`
//!   continuation lines (skipped). PRI is `facility * 8 + level`
//!   (Documentation/ABI/testing/dev-kmsg).
//! - `dmesg` output: `[    1.234567] message`, also with a caller id
//!   (`[  327.929816][    C1] message`, CONFIG_PRINTK_CALLER), with `dmesg -x` prefixes
//!   (`kern  :warn  : [    1.234567] message`) and with `dmesg -T` wall-clock stamps
//!   (`[Mon Jan  2 03:04:05 2023] message`, no boot-relative timestamp).
//! - `journalctl -k` and syslog lines: `Jan 02 03:04:05 host kernel: message` (also the
//!   ISO form `2023-01-02T03:04:05+0000 host kernel: ...`, and `[    1.234567] host kernel:
//!   ...` from `-o short-monotonic`); a dmesg timestamp after `kernel:` is read too.
//! - `dmesg -r` raw lines (`<6>[    1.234567] message`) and `dmesg --time-format iso` lines
//!   (`2023-01-02T03:04:05,123456+00:00 message`, no boot-relative timestamp).
//! - anything else: the whole line is the message.
//!
//! Blank lines are dropped. Nothing here fails: a line that matches no form is a message
//! without timestamp or level. `/dev/kmsg` escapes non-printable bytes as `\xNN`; they are
//! left escaped.

/// One kernel message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Line<'a> {
    /// Microseconds since boot, when the form carries them.
    pub timestamp_us: Option<u64>,
    /// The console log level, 0 (emerg) to 7 (debug), when the form carries it.
    pub level: Option<u8>,
    /// The message, without the prefixes above (its own indentation kept).
    pub text: &'a str,
    /// The 1-based line number in the input.
    pub line_no: usize,
}

/// The level names `dmesg -x` prints, in level order.
const LEVELS: [&str; 8] = [
    "emerg", "alert", "crit", "err", "warn", "notice", "info", "debug",
];

/// The facility names `dmesg -x` prints.
const FACILITIES: [&str; 20] = [
    "kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron", "authpriv",
    "ftp", "res0", "res1", "res2", "res3", "local0", "local1", "local2", "local3",
];

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

const WEEKDAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

/// Splits kernel log text into messages, in input order. Never fails: the log is free text
/// (any line is a message, with or without a prefix rtlab knows), so nothing is refused.
pub fn parse(text: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut after_record = false;
    for (i, raw) in text.split('\n').enumerate() {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let line_no = i + 1;
        if after_record && is_continuation(raw) {
            continue;
        }
        if let Some((level, timestamp_us, text)) = kmsg_record(raw) {
            after_record = true;
            out.push(Line {
                timestamp_us,
                level,
                text,
                line_no,
            });
            continue;
        }
        after_record = false;
        if raw.trim().is_empty() {
            continue;
        }
        let (timestamp_us, level, text) = prefixed(raw);
        out.push(Line {
            timestamp_us,
            level,
            text,
            line_no,
        });
    }
    out
}

/// A ` KEY=value` line that follows a `/dev/kmsg` record.
fn is_continuation(raw: &str) -> bool {
    let Some(rest) = raw.strip_prefix(' ') else {
        return false;
    };
    let Some((key, _)) = rest.split_once('=') else {
        return false;
    };
    !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// `PRI,SEQ,TS_US,FLAGS[,...];message` → (level, timestamp, message).
fn kmsg_record(raw: &str) -> Option<(Option<u8>, Option<u64>, &str)> {
    let (head, message) = raw.split_once(';')?;
    let mut fields = head.split(',');
    let pri = number(fields.next()?)?;
    number(fields.next()?)?;
    let ts = number(fields.next()?)?;
    let flags = fields.next()?;
    if !matches!(flags, "-" | "c" | "+") {
        return None;
    }
    let level = u8::try_from(pri & 7).ok();
    Some((level, Some(ts), message))
}

/// A non-empty run of ASCII digits as a number (`None` when not one, or too large).
fn number(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Strips the prefixes a line may carry, outermost first: a journal/syslog stamp, a
/// `dmesg -x` facility and level, a bracketed timestamp and caller id, and the
/// `host kernel:` of `journalctl -o short-monotonic`.
fn prefixed(raw: &str) -> (Option<u64>, Option<u8>, &str) {
    let mut rest = raw;
    let mut level = None;
    let mut timestamp = None;
    if let Some(r) = strip_journal(rest) {
        rest = r;
    }
    if let Some((l, r)) = strip_raw_level(rest) {
        level = Some(l);
        rest = r;
    }
    if let Some((l, r)) = strip_dmesg_level(rest) {
        level = Some(l);
        rest = r;
    }
    if let Some((ts, r)) = strip_timestamp(rest) {
        timestamp = ts;
        rest = r;
        if let Some(r) = strip_host_kernel(rest) {
            rest = r;
        }
    }
    (timestamp, level, rest)
}

/// `Jan 02 03:04:05 host kernel: ` or `2023-01-02T03:04:05+0000 host kernel: `.
fn strip_journal(raw: &str) -> Option<&str> {
    let rest = if let Some(month) = raw.get(..3)
        && MONTHS.contains(&month)
    {
        let rest = raw[3..].strip_prefix(' ')?.trim_start_matches(' ');
        let (day, rest) = rest.split_once(' ')?;
        if day.is_empty() || day.len() > 2 || !day.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let (time, rest) = rest.split_once(' ')?;
        if !is_clock_time(time) {
            return None;
        }
        rest
    } else {
        let (stamp, rest) = raw.split_once(' ')?;
        let bytes = stamp.as_bytes();
        let iso = bytes.len() >= 19
            && bytes[..4].iter().all(u8::is_ascii_digit)
            && bytes[4] == b'-'
            && bytes[10] == b'T'
            && is_clock_time(stamp.get(11..19)?);
        if !iso {
            return None;
        }
        // `dmesg --time-format iso` (`2023-01-02T03:04:05,123456+00:00 message`) has no host.
        if stamp.contains(',') {
            return Some(strip_host_kernel(rest).unwrap_or(rest));
        }
        rest
    };
    strip_host_kernel(rest)
}

/// `<6>` (`dmesg -r`, syslog priority) → (level, what follows).
fn strip_raw_level(s: &str) -> Option<(u8, &str)> {
    let (pri, rest) = s.strip_prefix('<')?.split_once('>')?;
    let pri = number(pri)?;
    Some((u8::try_from(pri & 7).ok()?, rest))
}

/// `HH:MM:SS`, optionally followed by a fraction (`03:04:05.123456`).
fn is_clock_time(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 8
        && b[2] == b':'
        && b[5] == b':'
        && [0, 1, 3, 4, 6, 7].iter().all(|&i| b[i].is_ascii_digit())
        && (b.len() == 8 || (b[8] == b'.' && b[9..].iter().all(u8::is_ascii_digit)))
}

/// `host kernel: ` → what follows.
fn strip_host_kernel(s: &str) -> Option<&str> {
    let (host, rest) = s.split_once(' ')?;
    if host.is_empty() || host.contains(':') || host.contains('[') {
        return None;
    }
    let rest = rest.strip_prefix("kernel:")?;
    Some(rest.strip_prefix(' ').unwrap_or(rest))
}

/// `kern  :warn  : ` → (level, what follows).
fn strip_dmesg_level(s: &str) -> Option<(u8, &str)> {
    let (facility, rest) = s.split_once(':')?;
    if !FACILITIES.contains(&facility.trim_end_matches(' ')) {
        return None;
    }
    let (name, rest) = rest.split_once(':')?;
    let level = LEVELS
        .iter()
        .position(|l| *l == name.trim_end_matches(' '))?;
    let rest = rest.strip_prefix(' ').unwrap_or(rest);
    Some((u8::try_from(level).ok()?, rest))
}

/// `[    1.234567]` (and a following `[    T1]` caller id), or a `dmesg -T` stamp
/// `[Mon Jan  2 03:04:05 2023]` (no boot-relative time) → (timestamp, what follows the
/// separating space).
fn strip_timestamp(s: &str) -> Option<(Option<u64>, &str)> {
    let inner_start = s.strip_prefix('[')?;
    let (inner, rest) = inner_start.split_once(']')?;
    let timestamp = if let Some(weekday) = inner.get(..3)
        && WEEKDAYS.contains(&weekday)
    {
        None
    } else {
        Some(seconds_to_us(inner.trim_start_matches(' '))?)
    };
    let rest = strip_caller_id(rest).unwrap_or(rest);
    Some((timestamp, rest.strip_prefix(' ').unwrap_or(rest)))
}

/// `[    T1]` or `[    C1]` → what follows.
fn strip_caller_id(s: &str) -> Option<&str> {
    let (inner, rest) = s.strip_prefix('[')?.split_once(']')?;
    let id = inner.trim_start_matches(' ');
    let digits = id.strip_prefix('T').or_else(|| id.strip_prefix('C'))?;
    number(digits)?;
    Some(rest)
}

/// `1.234567` → 1234567; the fraction is read to microseconds whatever its length.
fn seconds_to_us(s: &str) -> Option<u64> {
    let (secs, frac) = s.split_once('.')?;
    let secs = number(secs)?;
    if frac.is_empty() || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut us: u64 = 0;
    for i in 0..6 {
        let digit = frac.as_bytes().get(i).map_or(0, |b| u64::from(b - b'0'));
        us = us * 10 + digit;
    }
    secs.checked_mul(1_000_000)?.checked_add(us)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(ts: Option<u64>, level: Option<u8>, text: &str, line_no: usize) -> Line<'_> {
        Line {
            timestamp_us: ts,
            level,
            text,
            line_no,
        }
    }

    #[test]
    fn kmsg_records_skip_continuation_lines() {
        let text = "6,1234,5678901,-;usb 1-1: new high-speed USB device\n SUBSYSTEM=usb\n DEVICE=c189:1\n4,1235,5678950,c,caller=T12;sched: RT throttling activated\n0,2,3,+;x;y\n";
        let lines = parse(text);
        assert_eq!(
            lines,
            [
                line(
                    Some(5_678_901),
                    Some(6),
                    "usb 1-1: new high-speed USB device",
                    1
                ),
                line(
                    Some(5_678_950),
                    Some(4),
                    "sched: RT throttling activated",
                    4
                ),
                line(Some(3), Some(0), "x;y", 5),
            ]
        );
        // PRI carries the facility above the level: 14 is user.info.
        assert_eq!(parse("14,1,2,-;hello")[0].level, Some(6));
    }

    #[test]
    fn dmesg_lines_from_the_lkp_corpus() {
        // corpus dmesg/lkp_hung_task_swapper.log (intel/lkp-tests spec/fixtures/stats/dmesg/28).
        let text = "[  251.950215] INFO: task swapper:1 blocked for more than 120 seconds.\n[  252.156188]       Not tainted 4.8.0-rc1 #3\n[  253.998180]  [<c147ea46>] schedule+0x1e/0x31\n";
        let lines = parse(text);
        assert_eq!(lines.len(), 3);
        assert_eq!(
            lines[0],
            line(
                Some(251_950_215),
                None,
                "INFO: task swapper:1 blocked for more than 120 seconds.",
                1
            )
        );
        assert_eq!(lines[1].text, "      Not tainted 4.8.0-rc1 #3");
        assert_eq!(lines[2].text, " [<c147ea46>] schedule+0x1e/0x31");
    }

    #[test]
    fn caller_ids_are_stripped() {
        // corpus dmesg/lkp_sleeping_function_irq_manage.log and lkp_lockdep_circular_C1.log.
        let text = "[  334.390692][    T1] BUG: sleeping function called from invalid context at kernel/irq/manage.c:110\n[  334.390693][    T1] in_atomic(): 1, irqs_disabled(): 1, pid: 329, name: sed\n[  327.929872][    C1] \n[  327.929818][    C1] WARNING: possible circular locking dependency detected\n";
        let lines = parse(text);
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0].timestamp_us, Some(334_390_692));
        assert_eq!(
            lines[0].text,
            "BUG: sleeping function called from invalid context at kernel/irq/manage.c:110"
        );
        assert_eq!(
            lines[1].text,
            "in_atomic(): 1, irqs_disabled(): 1, pid: 329, name: sed"
        );
        assert_eq!(lines[2].text, "", "an empty message is still a message");
        assert_eq!(
            lines[3].text,
            "WARNING: possible circular locking dependency detected"
        );
    }

    #[test]
    fn dmesg_x_levels() {
        // corpus dmesg/lkp_kmsg_irq16_nobody_cared.log (intel/lkp-tests spec/fixtures/stats/kmsg/06).
        let text = "kern  :err   : [   13.708876] irq 16: nobody cared (try booting with the \"irqpoll\" option)\nkern  :warn  : [   13.708886]  <IRQ>\nkern  :emerg : [   13.708946] Disabling IRQ #16\nuser  :notice: hello\n";
        let lines = parse(text);
        assert_eq!(
            lines[0],
            line(
                Some(13_708_876),
                Some(3),
                "irq 16: nobody cared (try booting with the \"irqpoll\" option)",
                1
            )
        );
        assert_eq!(lines[1].text, " <IRQ>");
        assert_eq!(lines[1].level, Some(4));
        assert_eq!(
            lines[2],
            line(Some(13_708_946), Some(0), "Disabling IRQ #16", 3)
        );
        assert_eq!(lines[3], line(None, Some(5), "hello", 4));
    }

    #[test]
    fn journal_and_syslog_lines() {
        let text = "Jan 02 03:04:05 rb5 kernel: sched: RT throttling activated\nMar  7 10:00:01 host kernel: [   12.500000] hrtimer: interrupt took 123456 ns\n2023-01-02T03:04:05+0000 box kernel: tsc: Marking TSC unstable due to clocksource watchdog\nJan 02 03:04:05.123456 rb5 kernel: x\n[    1.000001] rb5 kernel: monotonic\n";
        let lines = parse(text);
        assert_eq!(
            lines[0],
            line(None, None, "sched: RT throttling activated", 1)
        );
        assert_eq!(
            lines[1],
            line(
                Some(12_500_000),
                None,
                "hrtimer: interrupt took 123456 ns",
                2
            )
        );
        assert_eq!(
            lines[2].text,
            "tsc: Marking TSC unstable due to clocksource watchdog"
        );
        assert_eq!(lines[3].text, "x");
        assert_eq!(lines[4], line(Some(1_000_001), None, "monotonic", 5));
        // A journal line from another program keeps its whole text.
        assert_eq!(
            parse("Jan 02 03:04:05 rb5 systemd[1]: Started x.")[0].text,
            "Jan 02 03:04:05 rb5 systemd[1]: Started x."
        );
    }

    #[test]
    fn raw_and_iso_dmesg_lines() {
        let lines = parse(
            "<4>[   12.000001] sched: RT throttling activated\n<12>user message\n2023-01-02T03:04:05,123456+00:00 hrtimer: interrupt took 5 ns\n<x>not a level\n",
        );
        assert_eq!(
            lines,
            [
                line(
                    Some(12_000_001),
                    Some(4),
                    "sched: RT throttling activated",
                    1
                ),
                line(None, Some(4), "user message", 2),
                line(None, None, "hrtimer: interrupt took 5 ns", 3),
                line(None, None, "<x>not a level", 4),
            ]
        );
    }

    #[test]
    fn wall_clock_and_bare_lines() {
        let lines = parse(
            "[Mon Jan  2 03:04:05 2023] rcu: INFO: rcu_preempt self-detected stall on CPU\r\n\n   \nplain message\n",
        );
        assert_eq!(
            lines,
            [
                line(
                    None,
                    None,
                    "rcu: INFO: rcu_preempt self-detected stall on CPU",
                    1
                ),
                line(None, None, "plain message", 4),
            ]
        );
        // The soft lockup glued to earlier output keeps the glue
        // (corpus dmesg/lkp_soft_lockup_interleaved.log).
        let l = parse(
            "[  482.381374] augmented rbtree testingNMI watchdog: BUG: soft lockup - CPU#0 stuck for 23s! [swapper:1]",
        );
        assert_eq!(l[0].timestamp_us, Some(482_381_374));
        assert!(
            l[0].text
                .starts_with("augmented rbtree testingNMI watchdog: BUG")
        );
    }

    #[test]
    fn timestamps_scale_any_fraction() {
        assert_eq!(seconds_to_us("1.5"), Some(1_500_000));
        assert_eq!(seconds_to_us("0.000001"), Some(1));
        assert_eq!(seconds_to_us("2.1234567"), Some(2_123_456));
        assert_eq!(seconds_to_us("1."), None);
        assert_eq!(seconds_to_us(".5"), None);
        assert_eq!(seconds_to_us("99999999999999999999.0"), None);
        assert_eq!(seconds_to_us("18446744073709.551615"), Some(u64::MAX));
        assert_eq!(seconds_to_us("18446744073709.551616"), None);
    }

    #[test]
    fn malformed_input_does_not_panic() {
        let cases = [
            "",
            "\n\n",
            "[",
            "[]",
            "[ 1.",
            "[ 1.x] a",
            "[    ]",
            "[ 12.5][",
            "[ 12.5][T] a",
            "[ 12.5][    Tx] a",
            "6,;",
            "6,1,2;",
            "6,1,2,Q;x",
            "x,1,2,-;y",
            "99999999999999999999999,1,2,-;big",
            "kern  :",
            "kern  :bogus : x",
            "kern:err:",
            "Jan",
            "Jan 2",
            "Jan 123 00:00:00 h kernel: x",
            "Jan 02 0:00:00 h kernel: x",
            "2023-01-02T03:04 h kernel: x",
            "2023-01-02T03:04:05+0000",
            "Mon",
            "[Mon",
            "ünïcode [ 1.0] ß",
            "[\u{1F600}.1] x",
            "<",
            "<>",
            "<99999999999999999999999>x",
            "2023-01-02T03:04:05,1",
            " KEY=value",
            "\r",
        ];
        for case in cases {
            let lines = parse(case);
            for l in &lines {
                assert!(case.contains(l.text), "{case:?} -> {l:?}");
            }
        }
        assert_eq!(parse("6,1,2,Q;x")[0].text, "6,1,2,Q;x");
        assert_eq!(
            parse(" KEY=value")[0].text,
            " KEY=value",
            "no record before it"
        );
        assert_eq!(parse("[ 12.5][T] a")[0].text, "[T] a");
        assert_eq!(parse("[ 1.x] a")[0].timestamp_us, None);
        // Every byte sequence that is valid UTF-8 parses.
        let mut noise = String::new();
        for i in 0..2000u32 {
            let c = char::from_u32((i * 7919) % 0x2FF).unwrap_or('?');
            noise.push(c);
            if i % 37 == 0 {
                noise.push_str("\n[ 1.");
            }
            if i % 53 == 0 {
                noise.push_str("\n6,1,");
            }
        }
        let _ = parse(&noise);
    }
}
