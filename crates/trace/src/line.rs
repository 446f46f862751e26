//! One line of a text trace, borrowed from the line: the kernel's `trace` and `trace_pipe`
//! files (with or without the flags column, with or without `record-tgid`'s `(tgid)` column)
//! and `trace-cmd report` output (with its `cpus=N` and `CPU N is empty` lines, and the
//! `instance:` prefix it prints for instance buffers), also in its latency format (`report -l`:
//! `cyclicte-5848    0d..3. 71976.680271: NAME: FIELDS`, the CPU run into the flags).
//!
//! An event line is `TASK-PID [CPU] FLAGS SECONDS.FRACTION: NAME: FIELDS`; the task name may
//! hold spaces and dashes (the pid follows the last dash), the flags column is optional, the
//! fraction has 6 digits (microseconds) or 9 (nanoseconds). The function tracer's entries in
//! the kernel's text have no name (`TASK-PID [CPU] FLAGS TS: func <-parent`): they read as
//! `function` events, as trace-cmd names them. Lines that are not events are classified, never an error: a trace is often cut or damaged, and the reader counts what it
//! could not read.

use crate::swar;

/// What one line holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// A trace event.
    Event(Event<'a>),
    /// The kernel (or trace-cmd) says events were lost: `CPU:2 [LOST 123 EVENTS]`.
    Lost {
        /// The CPU, when named.
        cpu: Option<u32>,
        /// How many, when counted.
        events: Option<u64>,
    },
    /// `##### CPU 2 buffer started ####`: events on that CPU before this line were overwritten.
    BufferStarted {
        /// The CPU.
        cpu: u32,
    },
    /// A comment, a header or an empty line.
    Comment,
    /// A line continuing the previous one (a stack entry ` => func`, the rest of a `bprint`).
    Continuation(&'a str),
    /// A line that is none of these (cut, corrupted, or a format rtlab does not know).
    Malformed(&'a str),
}

/// One event, its text borrowed from the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event<'a> {
    /// The task's name (`<idle>`, `<...>` when the kernel did not record it).
    pub task: &'a str,
    /// The task's pid (0 for the idle task).
    pub pid: u32,
    /// The CPU the event was recorded on.
    pub cpu: u32,
    /// The context flags, when the trace has the column.
    pub flags: Option<Flags>,
    /// The timestamp in nanoseconds of the trace clock (`mono` is CLOCK_MONOTONIC).
    pub ts_ns: u64,
    /// Digits of the printed fraction: 6 (microsecond resolution) or 9.
    pub ts_digits: u8,
    /// The event's name (`sched_switch`).
    pub name: &'a str,
    /// The event's fields as printed.
    pub fields: &'a str,
    /// The whole line.
    pub line: &'a str,
}

/// The context an event was recorded in (the `d..2.` column).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    /// Interrupts were disabled (`d`, or `D` with bottom halves off too).
    pub irqs_off: bool,
    /// Bottom halves were disabled (`b` or `D`).
    pub bh_off: bool,
    /// A reschedule was pending (`N`, `n`, `p`, `L`, `l`).
    pub need_resched: bool,
    /// In a hard interrupt (`h`, `H`).
    pub hardirq: bool,
    /// In a softirq (`s`, `H`).
    pub softirq: bool,
    /// In an NMI (`z`, `Z`).
    pub nmi: bool,
    /// Preemption-disable depth (0 when `.`).
    pub preempt_depth: u8,
}

impl Flags {
    /// Decodes the flags column; `None` when it is not one. Four or five characters on
    /// mainline kernels (`d..2.`: irqs-off/BH, need-resched, hardirq/softirq, preempt-depth,
    /// migrate-disable), seven on PREEMPT_RT kernels of the out-of-tree patch (6.1-rt:
    /// `dn.h2..`, with need-resched-lazy after need-resched and preempt-lazy-depth after
    /// preempt-depth; found in the lab, issue #26).
    pub fn parse(text: &str) -> Option<Flags> {
        let b = text.as_bytes();
        let (irqs, resched, lazy, context, depth, rest) = match b.len() {
            4 | 5 => (b[0], b[1], None, b[2], b[3], &b[4..]),
            7 => (b[0], b[1], Some(b[2]), b[3], b[4], &b[5..]),
            _ => return None,
        };
        let mut f = Flags::default();
        match irqs {
            b'd' => f.irqs_off = true,
            b'D' => {
                f.irqs_off = true;
                f.bh_off = true;
            }
            b'b' => f.bh_off = true,
            b'.' | b'X' => {}
            _ => return None,
        }
        f.need_resched = need_resched(resched)?;
        if let Some(c) = lazy {
            need_resched(c)?;
        }
        match context {
            b'h' => f.hardirq = true,
            b's' => f.softirq = true,
            b'H' => {
                f.hardirq = true;
                f.softirq = true;
            }
            b'z' | b'Z' => f.nmi = true,
            b'.' => {}
            _ => return None,
        }
        f.preempt_depth = match depth {
            b'.' => 0,
            c @ b'0'..=b'9' => c - b'0',
            c @ b'a'..=b'f' => c - b'a' + 10,
            _ => return None,
        };
        // The depths and counts after it: preempt-lazy-depth, migrate-disable.
        if !rest.iter().all(|&c| c == b'.' || c.is_ascii_hexdigit()) {
            return None;
        }
        Some(f)
    }
}

/// Whether a need-resched character says a reschedule is pending; `None` when it is none.
fn need_resched(c: u8) -> Option<bool> {
    match c {
        b'N' | b'n' | b'p' | b'L' | b'l' | b'B' | b'b' => Some(true),
        b'.' => Some(false),
        _ => None,
    }
}

/// Classifies one line (without its newline).
pub fn parse(line: &str) -> Line<'_> {
    // Most lines are events: try that first.
    if let Some(e) = event(line) {
        return Line::Event(e);
    }
    let trimmed = line.trim();
    if trimmed.is_empty() || trimmed.starts_with('#') && !trimmed.starts_with("#####") {
        return Line::Comment;
    }
    if let Some(l) = special(trimmed) {
        return l;
    }
    if trimmed.starts_with("=>") || (line.starts_with(' ') && !line.contains(" [")) {
        return Line::Continuation(trimmed);
    }
    Line::Malformed(line)
}

/// Lost-event and buffer markers, and trace-cmd's bookkeeping lines.
fn special(t: &str) -> Option<Line<'_>> {
    if let Some(rest) = t.strip_prefix("##### CPU ") {
        let cpu = rest.split_whitespace().next()?.parse().ok()?;
        return (cpu <= model::cpuset::MAX_CPU).then_some(Line::BufferStarted { cpu });
    }
    if t.starts_with("cpus=") || (t.starts_with("CPU ") && t.ends_with(" is empty")) {
        return Some(Line::Comment);
    }
    if t.starts_with("version = ") {
        return Some(Line::Comment);
    }
    // `CPU:2 [LOST 123 EVENTS]`, `CPU:2 [123 EVENTS DROPPED]`, or the bracket alone.
    if let Some(open) = t.find('[')
        && t.ends_with(']')
        && (t.contains("LOST") || t.contains("DROPPED"))
    {
        let head = &t[..open];
        let cpu = head
            .trim()
            .strip_prefix("CPU:")
            .and_then(|c| c.trim().parse().ok())
            .filter(|&c: &u32| c <= model::cpuset::MAX_CPU);
        let inner = &t[open + 1..t.len() - 1];
        let events = inner.split_whitespace().find_map(|w| w.parse().ok());
        if head.trim().is_empty() || cpu.is_some() {
            return Some(Line::Lost { cpu, events });
        }
    }
    None
}

/// The columns every entry of a text trace starts with (`TASK-PID [CPU] FLAGS TIMESTAMP:`),
/// for entries that are not `NAME: FIELDS` events: a tracer's own entries (timerlat's
/// `#ID context irq timer_latency N ns`, a `<stack trace>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prefix<'a> {
    /// The task's name.
    pub task: &'a str,
    /// Its pid.
    pub pid: u32,
    /// The CPU.
    pub cpu: u32,
    /// The context flags, when the trace has the column.
    pub flags: Option<Flags>,
    /// The timestamp, ns of the trace clock.
    pub ts_ns: u64,
    /// Digits of the printed fraction.
    pub ts_digits: u8,
}

/// Splits an entry into its leading columns and what follows the timestamp (trimmed at the
/// start); `None` when the line does not start like an entry.
pub fn prefix(line: &str) -> Option<(Prefix<'_>, &str)> {
    let (p, k) = prefix_at(line)?;
    Some((p, line[k..].trim_ascii_start()))
}

/// The leading columns and the byte offset just past the timestamp's `:`.
fn prefix_at(line: &str) -> Option<(Prefix<'_>, usize)> {
    bracket_prefix(line).or_else(|| latency_prefix(line))
}

/// The leading columns with the CPU in brackets (`bash-2042 [003] d..2. 12.000001:`).
#[inline]
fn bracket_prefix(line: &str) -> Option<(Prefix<'_>, usize)> {
    let b = line.as_bytes();
    let (open, close, cpu) = cpu_column(b)?;
    let (task, pid) = task_pid(&line[..open])?;
    // After `]`: an optional flags word, then `SECONDS.FRACTION:`.
    let word = |k: usize| -> Option<(usize, usize)> {
        let start = swar::skip_spaces(b, k);
        let end = swar::next_space(b, start).unwrap_or(b.len());
        (end > start).then_some((start, end))
    };
    let (s1, e1) = word(close + 1)?;
    let (flags, ts) = if b[e1 - 1] == b':' {
        (None, (s1, e1))
    } else {
        (Some(Flags::parse(&line[s1..e1])?), word(e1)?)
    };
    if b[ts.1 - 1] != b':' {
        return None;
    }
    let k = ts.1;
    let (ts_ns, ts_digits) = timestamp(&line[ts.0..ts.1 - 1])?;
    Some((
        Prefix {
            task,
            pid,
            cpu,
            flags,
            ts_ns,
            ts_digits,
        },
        k,
    ))
}

/// The leading columns in the latency format (`trace-cmd report -l`): `TASK-PID CPUFLAGS
/// SECONDS.FRACTION:`, the task cut to 8 characters, the CPU number run into the flags
/// (`cyclicte-5848    0d..3. 71976.680271: sched_waking: ...`).
fn latency_prefix(line: &str) -> Option<(Prefix<'_>, usize)> {
    let b = line.as_bytes();
    // The timestamp: the first word ending in `:` that reads as one, two words in at least.
    let words = (0..b.len()).filter(|&i| b[i] != b' ' && (i == 0 || b[i - 1] == b' '));
    let mut cpu_word = 0;
    for (n, start) in words.enumerate().take(9) {
        let end = b[start..]
            .iter()
            .position(|&c| c == b' ')
            .map_or(b.len(), |p| start + p);
        if n >= 2
            && b[end - 1] == b':'
            && let Some((ts_ns, ts_digits)) = timestamp(&line[start..end - 1])
        {
            let (cpu, flags) = cpu_flags(line[cpu_word..start].trim_ascii_end())?;
            let (task, pid) = task_pid(&line[..cpu_word])?;
            let prefix = Prefix {
                task,
                pid,
                cpu,
                flags: Some(flags),
                ts_ns,
                ts_digits,
            };
            return Some((prefix, end));
        }
        cpu_word = start;
    }
    None
}

/// The latency format's `0d..3.`: the CPU and the flags.
fn cpu_flags(word: &str) -> Option<(u32, Flags)> {
    let split = word.bytes().position(|c| !c.is_ascii_digit())?;
    let cpu = digits(&word[..split]).filter(|&c| c <= model::cpuset::MAX_CPU)?;
    Some((cpu, Flags::parse(&word[split..])?))
}

/// The bytes of an event's name: letters, digits, `_` and `-` (a table: one load a byte).
const NAME_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
        c += 1;
    }
    t
};

/// Parses an event line; `None` when it is not one. Byte scanning only: this runs on every
/// line of traces of gigabytes.
fn event(line: &str) -> Option<Event<'_>> {
    let b = line.as_bytes();
    let (p, mut k) = prefix_at(line)?;
    while k < b.len() && b[k] == b' ' {
        k += 1;
    }
    let name_start = k;
    while k < b.len() && NAME_BYTE[usize::from(b[k])] {
        k += 1;
    }
    let (name, fields) = if k > name_start && k < b.len() && b[k] == b':' {
        (&line[name_start..k], line[k + 1..].trim_ascii_start())
    } else {
        (FUNCTION, function_entry(&line[name_start..])?)
    };
    Some(Event {
        task: p.task,
        pid: p.pid,
        cpu: p.cpu,
        flags: p.flags,
        ts_ns: p.ts_ns,
        ts_digits: p.ts_digits,
        name,
        fields,
        line,
    })
}

/// The name of the function tracer's entries, which the kernel's text does not print (the one
/// name of an [`Event`] that is not a slice of its line).
pub const FUNCTION: &str = "function";

/// The function tracer's entry as the kernel prints it, without an event name:
/// `do_idle <-cpu_startup_entry` (the function and its caller, one word each).
fn function_entry(rest: &str) -> Option<&str> {
    let (func, parent) = rest.split_once(" <-")?;
    let one_word = |w: &str| !w.is_empty() && !w.bytes().any(|c| c == b' ' || c == b':');
    (one_word(func) && one_word(parent.trim_ascii_end())).then_some(rest.trim_ascii_end())
}

/// The CPU column: the first `[digits]` preceded by a space, as (its `[`, its `]`, the CPU).
fn cpu_column(b: &[u8]) -> Option<(usize, usize, u32)> {
    let mut i = 0;
    loop {
        let at = i + memchr::memchr(b'[', &b[i..])?;
        if at > 0 && b[at - 1] == b' ' {
            let mut j = at + 1;
            let mut cpu: u32 = 0;
            while j < b.len() && b[j].is_ascii_digit() {
                cpu = cpu.checked_mul(10)?.checked_add(u32::from(b[j] - b'0'))?;
                j += 1;
            }
            if j > at + 1 && j < b.len() && b[j] == b']' {
                // A CPU number no kernel has is a damaged line, not an event: everything
                // downstream may size per-CPU state by it.
                if cpu > model::cpuset::MAX_CPU {
                    return None;
                }
                return Some((at, j, cpu));
            }
        }
        i = at + 1;
    }
}

/// The task and pid before the CPU column (`bash-2042`, after trace-cmd's `instance:`
/// prefix, before record-tgid's `(  tgid)` column).
fn task_pid(before_cpu: &str) -> Option<(&str, u32)> {
    // The column is right-aligned: spaces first, skipped a word at a time.
    let b = before_cpu.as_bytes();
    let start = swar::skip_spaces(b, 0);
    let mut head = before_cpu[start..].trim_ascii();
    // record-tgid's `(  tgid)` column.
    if head.ends_with(')')
        && let Some(p) = head.rfind('(')
    {
        head = head[..p].trim_ascii_end();
    }
    // trace-cmd's `instance:` prefix before the task.
    if let Some(sp) = swar::next_space(head.as_bytes(), 0)
        && sp > 0
        && head.as_bytes()[sp - 1] == b':'
    {
        let rest = head[sp..].trim_ascii_start();
        if rest.contains('-') {
            head = rest;
        }
    }
    let dash = head.bytes().rposition(|c| c == b'-')?;
    Some((head[..dash].trim_ascii_start(), digits(&head[dash + 1..])?))
}

/// Decimal digits to a number (no sign, no spaces).
fn digits(text: &str) -> Option<u32> {
    if text.is_empty() || text.len() > 10 {
        return None;
    }
    let mut n: u32 = 0;
    for &c in text.as_bytes() {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u32::from(c - b'0'))?;
    }
    Some(n)
}

/// `13555.497867` → ns, and the digits of the fraction.
pub fn timestamp(text: &str) -> Option<(u64, u8)> {
    let dot = text.as_bytes().iter().position(|&c| c == b'.')?;
    let (secs, frac) = (&text[..dot], &text[dot + 1..]);
    if secs.is_empty() || secs.len() > 11 || frac.is_empty() || frac.len() > 9 {
        return None;
    }
    let mut s: u64 = 0;
    for &c in secs.as_bytes() {
        if !c.is_ascii_digit() {
            return None;
        }
        s = s * 10 + u64::from(c - b'0');
    }
    let mut f: u64 = 0;
    for &c in frac.as_bytes() {
        if !c.is_ascii_digit() {
            return None;
        }
        f = f * 10 + u64::from(c - b'0');
    }
    let digits = frac.len() as u32;
    let ns = s
        .checked_mul(1_000_000_000)?
        .checked_add(f * 10u64.pow(9 - digits))?;
    Some((ns, digits as u8))
}

#[cfg(test)]
mod tests;
