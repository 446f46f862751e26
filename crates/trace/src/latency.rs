//! The latency tracers' reports: the text of `/sys/kernel/tracing/trace` once `irqsoff`,
//! `preemptoff`, `preemptirqsoff`, `wakeup`, `wakeup_rt` or `wakeup_dl` has recorded a maximum
//! (or any tracer with the `latency-format` option). This module owns reading that text into a
//! [`LatencyReport`] (the header's facts, the entries, the recorded stack); `report::story`
//! tells it in words.
//!
//! Entry layouts read: `comm-pid CPU+flags time: text` with 4 to 8 flag columns (3.x to 6.x
//! kernels, PREEMPT_RT's lazy and migrate-disable columns), the `display-graph` layout
//! (`REL us | CPU) TASK-PID | FLAGS | DURATION | FUNCTION`), `[...]` elisions, lost-events
//! markers and ` => frame` stack lines. Data in, data out: no file access, no clock.

use serde::{Deserialize, Serialize};

/// The kernel's latency tracers, space-separated: the `# tracer:` names [`detect`] knows.
pub const TRACERS: &str = "irqsoff preemptoff preemptirqsoff wakeup wakeup_rt wakeup_dl";

/// The delay marks the kernel prints after the time column (`+` >10 us ... `$` >1 s; on 3.x
/// kernels `+` meant >1 us and `!` >100 us).
const MARKS: [char; 6] = ['+', '!', '#', '*', '@', '$'];

const ENTRY: &str = "an entry `COMM-PID CPU+FLAGS TIMEus: TEXT` \
                     (e.g. `bash-2042    3d...    0us : func <-caller`)";

pub use crate::error::ParseError;

fn err(line: usize, what: impl Into<String>) -> ParseError {
    let what = what.into();
    ParseError { line, what }
}

fn is_tracer(name: &str) -> bool {
    TRACERS.split(' ').any(|t| t == name)
}

/// One latency tracer's report: the worst section it recorded.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyReport {
    /// The tracer (`# tracer: irqsoff`).
    pub tracer: String,
    /// The kernel release (`# irqsoff latency trace v1.1.5 on 6.12.0-rt`).
    pub kernel: Option<String>,
    /// The recorded maximum latency (`# latency: 71 us`), in ns (the kernel prints whole us).
    pub latency_ns: u64,
    /// Entries the buffer held (`#168/...`).
    pub entries_shown: Option<u64>,
    /// Entries written, lost ones included (`#.../168`).
    pub entries_total: Option<u64>,
    /// The CPU the latency was recorded on (`CPU#3`).
    pub cpu: Option<u32>,
    /// The preemption model (`M:preempt`, `M:desktop`, `M:server`, `M:preempt_rt`).
    pub preempt_model: Option<String>,
    /// The task: for the irqs/preempt tracers the one running, for wakeup ones the one woken.
    pub task: Option<LatencyTask>,
    /// Where the section started (`#  => started at: X`; absent for wakeup tracers).
    pub started_at: Option<String>,
    /// Where the section ended (`#  => ended at: Y`; absent for wakeup tracers).
    pub ended_at: Option<String>,
    /// The entries, in the order printed.
    pub entries: Vec<LatencyEntry>,
    /// Whether a `[...]` line (or a lost-events marker) left entries out.
    pub elided: bool,
    /// The frames of the recorded stack trace(s) (` => frame` lines), innermost first.
    pub stack: Vec<String>,
    /// Indices into `entries` of the entries that directly follow an elision (`entries.len()`
    /// for one at the end): the time across it is not a step of the trace.
    #[serde(default)]
    pub elided_at: Vec<usize>,
}

/// The task named in the header (`#    | task: bash-2042 (uid:0 nice:0 policy:0 rt_prio:0)`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyTask {
    /// Its command name (up to 16 characters, may hold `-`, `/` and spaces).
    pub comm: String,
    /// Its pid.
    pub pid: u32,
    /// Its uid.
    pub uid: Option<u32>,
    /// Its nice value.
    pub nice: Option<i32>,
    /// Its scheduling policy (0 other, 1 fifo, 2 rr, 3 batch, 5 idle, 6 deadline).
    pub policy: Option<u32>,
    /// Its user-space RT priority (1-99; 0 when not RT).
    pub rt_prio: Option<u32>,
}

/// One entry of the trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencyEntry {
    /// The running task's command (the kernel cuts it to 8 characters here).
    pub comm: String,
    /// The running task's pid.
    pub pid: u32,
    /// The CPU.
    pub cpu: u32,
    /// The flag columns as printed (irqs-off, need-resched, hardirq/softirq, preempt-depth, ...).
    pub flags: String,
    /// Time since the section started, in ns (printed in whole us, or with decimals).
    pub offset_ns: u64,
    /// The delay mark after the time (delay until the next entry); for a `display-graph` entry,
    /// the mark of its DURATION column.
    pub mark: Option<char>,
    /// The rest: `func <-caller`, an event (`sched_wakeup: ...`), a wake-up or switch line
    /// (`0:120:R   + [002]  5882: 94:R sleep`), `<stack trace>`; for `display-graph`, the
    /// FUNCTION CALLS column without its indentation.
    pub text: String,
}

/// Whether `text` looks like a latency tracer's report: a leading `# tracer: X` with X one of
/// [`TRACERS`], or a `# X latency trace v...` header line.
pub fn detect(text: &str) -> bool {
    let lines = text.lines().map(str::trim).filter(|t| !t.is_empty());
    let mut header = lines.map_while(|t| t.strip_prefix('#')).map(str::trim);
    header.any(|c| {
        let tracer = c.strip_prefix("tracer:").map(str::trim);
        tracer.is_some_and(is_tracer) || c.contains(" latency trace v")
    })
}

#[derive(Default)]
struct Header {
    tracer: Option<(usize, String)>,
    /// The `# X latency trace v...` line: its number and X.
    lat_trace: Option<(usize, String)>,
    latency_seen: bool,
}

/// Reads a latency tracer's report. Errors name the 1-based line and what was expected.
pub fn parse(text: &str) -> Result<LatencyReport, ParseError> {
    let (mut h, mut r, mut last) = (Header::default(), LatencyReport::default(), 0);
    for (i, t) in text.lines().map(str::trim).enumerate() {
        let n = i + 1;
        if t.is_empty() {
            continue;
        }
        last = n;
        if let Some(c) = t.strip_prefix('#') {
            header_line(c.trim(), n, &mut h, &mut r)?;
            continue;
        }
        check_header(&h, n)?;
        if let Some(frame) = t.strip_prefix("=>") {
            r.stack.push(frame.trim().to_string());
        } else if is_elision(t) {
            r.elided_at.push(r.entries.len());
        } else if !is_graph_separator(t) {
            r.entries.push(entry(t).map_err(|what| err(n, what))?);
        }
    }
    check_header(&h, last.max(1))?;
    if !h.latency_seen {
        let n = h.lat_trace.or(h.tracer).map_or(1, |x| x.0);
        let what = "expected a `# latency: N us, #SHOWN/TOTAL, CPU#N | (...)` line after this \
                    header: the trace holds no report (no maximum recorded yet?)";
        return Err(err(n, what));
    }
    r.tracer = h.tracer.or(h.lat_trace).map(|x| x.1).unwrap_or_default();
    r.elided = !r.elided_at.is_empty();
    Ok(r)
}

fn check_header(h: &Header, n: usize) -> Result<(), ParseError> {
    match (&h.tracer, &h.lat_trace) {
        (None, None) => Err(err(n, HEADER)),
        (Some((tn, name)), None) if !is_tracer(name) => Err(err(*tn, found(TRACER, name))),
        _ => Ok(()),
    }
}

const HEADER: &str = "expected a latency tracer's header (`# tracer: irqsoff` or \
                      `# irqsoff latency trace v1.1.5 on KERNEL`) first";
const TRACER: &str = "a latency tracer (irqsoff, preemptoff, preemptirqsoff, wakeup, wakeup_rt, \
                      wakeup_dl) or a `latency trace v` line";

fn header_line(c: &str, n: usize, h: &mut Header, r: &mut LatencyReport) -> Result<(), ParseError> {
    if let Some(name) = c.strip_prefix("tracer:") {
        h.tracer = Some((n, name.trim().to_string()));
    } else if let Some(pos) = c.find(" latency trace v") {
        h.lat_trace = Some((n, c[..pos].trim().to_string()));
        r.kernel = c[pos..]
            .split_once(" on ")
            .map(|(_, k)| k.trim().to_string());
    } else if let Some(rest) = c.strip_prefix("latency:") {
        if std::mem::replace(&mut h.latency_seen, true) {
            return Err(err(
                n,
                "expected one report, found a second `# latency:` line",
            ));
        }
        latency_line(rest, r).map_err(|what| err(n, what))?;
    } else if let Some(rest) = c
        .strip_prefix('|')
        .and_then(|s| s.trim_start().strip_prefix("task:"))
    {
        r.task = Some(task(rest.trim()).map_err(|what| err(n, what))?);
    } else if let Some(rest) = c.strip_prefix("=>").map(str::trim_start) {
        if let Some(v) = rest.strip_prefix("started at:") {
            r.started_at = Some(v.trim().to_string());
        } else if let Some(v) = rest.strip_prefix("ended at:") {
            r.ended_at = Some(v.trim().to_string());
        }
    }
    Ok(())
}

/// `71 us, #168/168, CPU#3 | (M:preempt VP:0, KP:0, SP:0 HP:0 #P:4)`
fn latency_line(rest: &str, r: &mut LatencyReport) -> Result<(), String> {
    let (left, right) = rest.split_once('|').unwrap_or((rest, ""));
    let mut parts = left.split(',').map(str::trim);
    let first = parts.next().unwrap_or("");
    let us = first.strip_suffix("us").and_then(|d| digits(d.trim_end()));
    let ns = us.and_then(|u| u.checked_mul(1000));
    r.latency_ns = ns.ok_or_else(|| found("the latency `N us` after `# latency:`", first))?;
    for p in parts {
        if let Some(e) = p.strip_prefix('#') {
            let counts = e
                .split_once('/')
                .and_then(|(a, b)| Some((digits(a)?, digits(b)?)));
            let (a, b) = counts.ok_or_else(|| found("the entry counts `#SHOWN/TOTAL`", p))?;
            (r.entries_shown, r.entries_total) = (Some(a), Some(b));
        } else if let Some(c) = p.strip_prefix("CPU#") {
            r.cpu = Some(num32(c).ok_or_else(|| found("`CPU#N`", p))?);
        }
    }
    r.preempt_model = right.find("M:").and_then(|i| {
        let m = right[i + 2..].split([' ', ',', ')']).next().unwrap_or("");
        (!m.is_empty()).then(|| m.to_string())
    });
    Ok(())
}

/// `bash-2042 (uid:0 nice:0 policy:0 rt_prio:0)`
fn task(rest: &str) -> Result<LatencyTask, String> {
    let bad = || found("`task: COMM-PID (uid:N nice:N policy:N rt_prio:N)`", rest);
    let (name, props) = match rest.rfind(" (") {
        Some(i) => (
            &rest[..i],
            rest[i + 2..].trim_end().strip_suffix(')').ok_or_else(bad)?,
        ),
        None => (rest, ""),
    };
    let (comm, pid) = comm_pid(name.trim()).ok_or_else(bad)?;
    let mut t = LatencyTask {
        comm,
        pid,
        ..LatencyTask::default()
    };
    for kv in props.split_whitespace() {
        let (k, v) = kv.split_once(':').ok_or_else(bad)?;
        let bad_num = || found(&format!("a number for `{k}` in the task line"), v);
        match k {
            "uid" => t.uid = Some(num32(v).ok_or_else(bad_num)?),
            "policy" => t.policy = Some(num32(v).ok_or_else(bad_num)?),
            "rt_prio" => t.rt_prio = Some(num32(v).ok_or_else(bad_num)?),
            "nice" => {
                let ok = digits(v.strip_prefix('-').unwrap_or(v)).is_some();
                t.nice = Some(v.parse().ok().filter(|_| ok).ok_or_else(bad_num)?);
            }
            _ => {}
        }
    }
    Ok(t)
}

/// `expected WHAT, found `S`` with S cut to 40 characters.
pub(crate) fn found(what: &str, s: &str) -> String {
    let mut c: String = s.chars().take(40).collect();
    if c.len() < s.len() {
        c.push_str("...");
    }
    format!("expected {what}, found `{c}`")
}

fn num32(s: &str) -> Option<u32> {
    u32::try_from(digits(s)?).ok()
}

/// A non-empty run of ASCII digits as a number (`"+5"` and `" 5"` are not).
pub(crate) fn digits(s: &str) -> Option<u64> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok())?
}

/// `comm-pid`, split at the last `-` (the comm may hold `-` and spaces).
fn comm_pid(s: &str) -> Option<(String, u32)> {
    let (comm, pid) = s.rsplit_once('-')?;
    Some((comm.to_string(), u32::try_from(digits(pid)?).ok()?))
}

/// `12`, `0.378` (microseconds) as ns.
fn us_to_ns(num: &str) -> Option<u64> {
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac: String = frac.chars().chain("000".chars()).take(3).collect();
    digits(int)?.checked_mul(1000)?.checked_add(digits(&frac)?)
}

fn is_elision(t: &str) -> bool {
    (t.starts_with('[') && t.ends_with(']')) || (t.starts_with("CPU:") && t.contains("[LOST "))
}

/// `display-graph`'s context-switch banners: `-----...` and `0)  bash-1507  =>  <idle>-0`.
fn is_graph_separator(t: &str) -> bool {
    (t.len() >= 3 && t.bytes().all(|b| b == b'-'))
        || t.split_once(')')
            .is_some_and(|(c, r)| digits(c).is_some() && r.contains("=>"))
}

fn entry(t: &str) -> Result<LatencyEntry, String> {
    if let Some(g) = graph_entry(t) {
        return g;
    }
    for tok in t.split_whitespace().skip(1) {
        // `tok` lies inside `t`: its offset is the distance between their starts.
        let s = tok.as_ptr() as usize - t.as_ptr() as usize;
        let (Some(cf), Some(cp)) = (cpu_flags(tok), comm_pid(t[..s].trim_end())) else {
            continue;
        };
        return Ok(new_entry(cp, cf, time_column(&t[s + tok.len()..])?));
    }
    Err(found(ENTRY, t))
}

fn new_entry(
    cp: (String, u32),
    cf: (u32, String),
    tt: (u64, Option<char>, String),
) -> LatencyEntry {
    let ((comm, pid), (cpu, flags), (offset_ns, mark, text)) = (cp, cf, tt);
    LatencyEntry {
        comm,
        pid,
        cpu,
        flags,
        offset_ns,
        mark,
        text,
    }
}

/// `3d..1`: the CPU's digits and 4 to 8 flag columns.
fn cpu_flags(tok: &str) -> Option<(u32, String)> {
    let d = tok.find(|c: char| !c.is_ascii_digit())?;
    let flags = &tok[d..];
    let n = flags.chars().count();
    if d == 0 || d > 5 || !(4..=8).contains(&n) || flags.contains(':') {
        return None;
    }
    Some((num32(&tok[..d])?, flags.to_string()))
}

/// `   68us+: text` -> (68000, Some('+'), "text").
fn time_column(rest: &str) -> Result<(u64, Option<char>, String), String> {
    let s = rest.trim_start();
    let bad = || found("the time column `NNus`, a delay mark, `:` and the text", s);
    let num_len = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, after) = (&s[..num_len], s[num_len..].trim_start());
    if !num.is_empty() && after.starts_with(':') {
        return Err(format!(
            "the time column `{num}` has no `us` unit: this trace clock does not count in ns \
             (counter, x86-tsc); record with trace_clock local or global"
        ));
    }
    let after = after.strip_prefix("us").ok_or_else(bad)?;
    let ns = us_to_ns(num).ok_or_else(bad)?;
    let mark = after.chars().next().filter(|c| MARKS.contains(c));
    let after = after.get(usize::from(mark.is_some())..).unwrap_or("");
    let text = after.trim_start().strip_prefix(':').ok_or_else(bad)?;
    Ok((ns, mark, text.trim().to_string()))
}

/// `   0 us |   0)   bash-1507    |  d... |   0.000 us    |  _raw_spin_lock_irqsave();`
fn graph_entry(t: &str) -> Option<Result<LatencyEntry, String>> {
    let (rel, rest) = t.split_once('|')?;
    let rel = rel.trim().strip_suffix("us")?.trim_end();
    if rel.is_empty() || !rel.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    let f: Vec<&str> = rest.splitn(4, '|').map(str::trim).collect();
    let fields = || -> Option<LatencyEntry> {
        let (cpu, proc_) = f.first()?.split_once(')')?;
        let mark = f.get(2)?.chars().next().filter(|c| MARKS.contains(c));
        let text = (us_to_ns(rel)?, mark, f.get(3)?.to_string());
        let cf = (num32(cpu.trim())?, f.get(1)?.to_string());
        Some(new_entry(comm_pid(proc_.trim())?, cf, text))
    };
    let what = "a display-graph entry `REL us | CPU) TASK-PID | FLAGS | DURATION | FUNCTION`";
    Some(fields().ok_or_else(|| found(what, t)))
}

fn is_stack_marker(text: &str) -> bool {
    text.starts_with("<stack trace>") || text.starts_with("<user stack trace>")
}

/// A wake-up or a switch as a latency trace prints it: `0:120:R   + [002]  5882: 94:R sleep`
/// (the wake-up of pid 5882) or `... ==> [002] ...` (the switch to it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedStep {
    /// A switch (`==>`), else a wake-up (`+`).
    pub switch: bool,
    /// The woken or next task's pid.
    pub pid: u32,
}

impl LatencyEntry {
    /// The wake-up or switch this entry records, when it records one.
    pub fn sched(&self) -> Option<SchedStep> {
        let (left, right) = self.text.split_once('[')?;
        let left = left.trim_end();
        let switch = left.ends_with("==>");
        if !switch && !left.ends_with('+') {
            return None;
        }
        let (_, next) = right.split_once(']')?;
        let pid = num32(next.trim_start().split_once(':')?.0)?;
        Some(SchedStep { switch, pid })
    }
}

impl LatencyReport {
    /// The `n` longest steps: (entry index, ns until the next entry), longest first. Steps
    /// across an elision and into a `<stack trace>` entry (recorded after the section) are left
    /// out. Entries print whole microseconds, so a step is only good to about 1 us.
    pub fn longest_steps(&self, n: usize) -> Vec<(usize, u64)> {
        let mut steps: Vec<(usize, u64)> = (self.entries.windows(2).enumerate())
            .filter(|(i, w)| !self.elided_at.contains(&(i + 1)) && !is_stack_marker(&w[1].text))
            .map(|(i, w)| (i, w[1].offset_ns.saturating_sub(w[0].offset_ns)))
            .collect();
        steps.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        steps.truncate(n);
        steps
    }
}

#[cfg(test)]
mod tests;
