//! The first pass over a trace: every timer wake-up of a sleeping task (armed, fired, woken,
//! switched in), interrupt and softirq handler durations, each task's wake-up-to-run delay and
//! migrations, the markers rtlab and cyclictest write at a breach, and the trace clock's
//! offset from the hrtimer clock. Streaming: what it keeps grows with wake-ups, not events.

use std::collections::{BTreeMap, VecDeque};

use rustc_hash::FxHashMap as HashMap;
use std::io::{self, BufRead};

use model::Histogram;

use crate::event::{Kind, Timer};
use crate::line::Event;
use crate::reader::ReadStats;
use crate::source::{self, Item, Source, Text};

use super::fill::Fill;
pub use super::handlers::HandlerStats;
use super::handlers::{Handlers, enter};
use super::milestones::Spike;
use super::owned::UNKNOWN_PRIO;
use super::preempt::{Preemption, Preemptions};
use super::switches::{Comm, SwitchIn, Switches};
use super::window::{LOOKBACK_NS, WindowSpec};

/// One timer wake-up of a sleeping task (`clock_nanosleep`: `hrtimer_wakeup`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wakeup {
    /// The task.
    pub pid: u32,
    /// Its name at the switch-in.
    pub comm: String,
    /// Its kernel priority at the switch-in.
    pub prio: i32,
    /// The CPU it ran on.
    pub cpu: u32,
    /// The deadline it asked for (the timer's soft expiry), on the hrtimer clock.
    pub expires_ns: u64,
    /// Trace time of the expiry's handling.
    pub fired_ts: u64,
    /// Trace time it was woken, when traced.
    pub woken_ts: Option<u64>,
    /// Trace time it was switched in.
    pub switched_ts: u64,
    /// The trace clock minus the hrtimer clock around its expiry (the smallest difference
    /// among the expiries of the [`OFFSET_WINDOW_NS`] up to it), when the scan saw it: the two
    /// clocks drift apart over a long trace (NTP's slewing, an unstable TSC), and a figure for
    /// the whole trace would misplace the deadlines far from where it was taken.
    pub offset_ns: Option<i64>,
}

impl Wakeup {
    /// The trace clock minus the hrtimer clock for this wake-up: its own, else the trace's
    /// (`trace_offset_ns`).
    pub fn offset(&self, trace_offset_ns: i64) -> i64 {
        self.offset_ns.unwrap_or(trace_offset_ns)
    }

    /// The deadline on the trace clock (`offset_ns`: the trace's offset, where the wake-up has
    /// none of its own).
    pub fn deadline_ts(&self, offset_ns: i64) -> u64 {
        self.expires_ns
            .saturating_add_signed(self.offset(offset_ns))
    }

    /// Deadline to switch-in.
    pub fn latency_ns(&self, offset_ns: i64) -> u64 {
        latency(self.expires_ns, self.switched_ts, self.offset(offset_ns))
    }

    /// The window the second pass keeps to explain this wake-up: its CPU from
    /// [`LOOKBACK_NS`] before the deadline to the switch-in.
    pub fn window_spec(&self, offset_ns: i64) -> WindowSpec {
        WindowSpec {
            cpu: self.cpu,
            from_ts: self.deadline_ts(offset_ns).saturating_sub(LOOKBACK_NS),
            to_ts: self.switched_ts,
        }
    }

    /// This wake-up as a spike to explain from a trace alone (its switch-in ends it).
    pub fn spike(&self, offset_ns: i64) -> Spike {
        Spike {
            cpu: self.cpu,
            pid: Some(self.pid),
            comm: Some(self.comm.clone()),
            deadline_ts: self.deadline_ts(offset_ns),
            end_ts: None,
            cycle: None,
        }
    }
}

/// Deadline (`expires_ns` on the hrtimer clock, `offset_ns` to the trace clock) to switch-in.
fn latency(expires_ns: u64, switched_ts: u64, offset_ns: i64) -> u64 {
    switched_ts.saturating_sub(expires_ns.saturating_add_signed(offset_ns))
}

/// How far back the timer expiries go that a wake-up's clock offset is taken from: long
/// enough to hold an expiry that was first in its run of the timer queue (whose `now` is its
/// own moment), short enough that the clocks do not drift apart measurably within it.
pub const OFFSET_WINDOW_NS: u64 = 50_000_000;

/// A [`Wakeup`] as the scan holds it: its name inline, so completing a wake-up allocates
/// nothing (a trace has one per period of every measuring thread).
#[derive(Clone, Copy, Debug)]
struct Done {
    pid: u32,
    comm: Comm,
    prio: i32,
    cpu: u32,
    expires_ns: u64,
    fired_ts: u64,
    woken_ts: Option<u64>,
    switched_ts: u64,
    offset_ns: i64,
}

impl Done {
    fn wakeup(&self) -> Wakeup {
        Wakeup {
            pid: self.pid,
            comm: self.comm.as_str().to_string(),
            prio: self.prio,
            cpu: self.cpu,
            expires_ns: self.expires_ns,
            fired_ts: self.fired_ts,
            woken_ts: self.woken_ts,
            switched_ts: self.switched_ts,
            offset_ns: Some(self.offset_ns),
        }
    }
}

/// One task's scheduling delays (wake-up to switch-in).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskStats {
    /// Its name (the last seen).
    pub comm: String,
    /// Its kernel priority (the last seen).
    pub prio: i32,
    /// Wake-ups followed by a switch-in.
    pub wakeups: u64,
    /// The longest wake-up to switch-in, ns.
    pub max_ns: u64,
    /// When that switch-in was (trace clock) and on which CPU.
    pub max_at: (u64, u32),
    /// Delays.
    pub histogram: Histogram,
    /// Times it moved to another CPU.
    pub migrations: u64,
    /// Its timer wake-ups (clock_nanosleep): deadline to switch-in.
    pub timer: TimerStats,
}

/// A task's timer wake-up latencies: deadline to switch-in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimerStats {
    /// Wake-ups.
    pub count: u64,
    /// The smallest latency, ns.
    pub min_ns: u64,
    /// The largest, ns.
    pub max_ns: u64,
    /// Their sum, ns.
    pub sum_ns: u64,
}

impl TimerStats {
    fn record(&mut self, ns: u64) {
        self.min_ns = if self.count == 0 {
            ns
        } else {
            self.min_ns.min(ns)
        };
        self.max_ns = self.max_ns.max(ns);
        self.sum_ns = self.sum_ns.saturating_add(ns);
        self.count += 1;
    }
}

/// Worst wake-ups kept per class (real-time tasks, others): the scan's memory does not grow
/// with the trace.
pub const KEEP: usize = 512;

/// The `KEEP` largest wake-ups by latency.
#[derive(Clone, Debug, Default)]
struct Worst {
    items: Vec<(u64, Done)>,
    floor: u64,
}

impl Worst {
    fn offer(&mut self, latency: u64, w: Done) {
        if self.items.len() < KEEP {
            self.items.push((latency, w));
            if self.items.len() == KEEP {
                self.floor = self.items.iter().map(|(l, _)| *l).min().unwrap_or(0);
            }
        } else if latency > self.floor {
            if let Some(i) = self.items.iter().position(|(l, _)| *l == self.floor) {
                self.items[i] = (latency, w);
            }
            self.floor = self.items.iter().map(|(l, _)| *l).min().unwrap_or(0);
        }
    }
}

/// What the first pass found.
#[derive(Clone, Debug, Default)]
pub struct Scan {
    /// The worst timer wake-ups ([`KEEP`] of real-time tasks and [`KEEP`] of others at most),
    /// worst first.
    pub wakeups: Vec<Wakeup>,
    /// Timer wake-ups found in all.
    pub wakeup_count: u64,
    /// Per CPU: real-time tasks' timer wake-up latencies (the old RT patch's wakeup latency
    /// histograms, from tracepoints).
    pub rt_histograms: BTreeMap<u32, Histogram>,
    /// Per CPU: the largest of them, ns.
    pub rt_max: BTreeMap<u32, u64>,
    /// Trace clock minus hrtimer clock (ns), from the earliest-looking timer expiries; 0 when
    /// the trace has none.
    pub clock_offset_ns: i64,
    /// Handlers by name (`irq 36 virtio1-req.0`, `softirq TIMER`, `local_timer interrupt`).
    pub handlers: BTreeMap<String, HandlerStats>,
    /// Tasks by pid.
    pub tasks: BTreeMap<u32, TaskStats>,
    /// Break markers (`rtlab: break: ...`, cyclictest's `hit latency threshold`): trace time,
    /// CPU, text, and the last timer wake-up completed on the CPU it names (the breach).
    pub markers: Vec<(u64, u32, String, Option<Wakeup>)>,
    /// Per CPU: first and last event time, events.
    pub cpus: BTreeMap<u32, (u64, u64, u64)>,
    /// What the reader met.
    pub read: ReadStats,
    /// Whether the trace had a flags column.
    pub has_flags: bool,
    /// The longest time a real-time task was preempted while running (no wake-up: not among
    /// [`Scan::wakeups`]).
    pub longest_preemption: Option<Preemption>,
}

/// A timer wake-up in progress.
#[derive(Clone, Copy, Debug)]
struct Pending {
    expires_ns: u64,
    fired_ts: u64,
    woken_ts: Option<u64>,
    offset_ns: i64,
}

/// Reads a whole text trace once.
pub fn scan<R: BufRead + Send>(input: R) -> io::Result<Scan> {
    scan_source(&mut Text::new(input))
}

/// Reads a whole trace once, from any source (text, or a trace.dat).
pub fn scan_source(src: &mut dyn Source) -> io::Result<Scan> {
    let mut scanner = Scanner::default();
    src.each(&mut |item| {
        if let Item::Event(e, decoded) = item {
            let kind = source::kind(&e, decoded);
            scanner.event(&e, kind);
        }
    })?;
    Ok(scanner.finish(src.stats().clone()))
}

/// The scan's state between events: what it has found ([`Scan`]) and what is in flight.
#[derive(Default)]
struct Scanner {
    s: Scan,
    /// `hrtimer_wakeup` timers armed: by hrtimer ([`Timer::key`]), the task and its expiry.
    armed: HashMap<u64, (u32, u64)>,
    /// Tasks by pid (ordered into [`Scan::tasks`] at the end), with how their delays'
    /// histogram is filled.
    tasks: HashMap<u32, (TaskStats, Fill)>,
    /// Dense arrays given to histograms ([`Fill`]).
    dense_given: usize,
    /// Timer wake-ups fired and not yet switched in, by pid.
    pending: HashMap<u32, Pending>,
    /// Each task's first wake-up not yet followed by its switch-in.
    woken_at: HashMap<u32, u64>,
    /// Per CPU, the handlers open (innermost last: index in `handlers`, start).
    open: Vec<Vec<(u32, u64)>>,
    /// Handlers met, interned.
    handlers: Handlers,
    /// The smallest trace-clock minus hrtimer-clock seen so far.
    offset: Option<i64>,
    /// The expiries of the last [`OFFSET_WINDOW_NS`] as (trace time, trace clock minus hrtimer
    /// clock), each smaller than those before it (a sliding minimum: the front is the window's).
    recent: VecDeque<(u64, i64)>,
    switches: Switches,
    rt_worst: Worst,
    other_worst: Worst,
    /// Per CPU, the last timer wake-up completed there (the breach a marker names).
    last_on_cpu: Vec<Option<Done>>,
    /// Per CPU: first and last event time, events.
    spans: Vec<Option<(u64, u64, u64)>>,
    /// Switch-ins found at the current event (reused buffer).
    switched_in: Vec<SwitchIn>,
    preemptions: Preemptions,
}

impl Scanner {
    /// One event: counted, its switch-ins completed, then what it starts or ends.
    fn event(&mut self, e: &Event<'_>, kind: Kind<'_>) {
        self.count(e);
        self.switches.event(e, &kind, &mut self.switched_in);
        let mut switched_in = std::mem::take(&mut self.switched_in);
        for sw in switched_in.drain(..) {
            self.switch_in(sw);
        }
        self.switched_in = switched_in;
        self.apply(e, kind);
    }

    /// The event counted on its CPU, with the CPU's first and last time.
    fn count(&mut self, e: &Event<'_>) {
        let c = e.cpu as usize;
        if self.spans.len() <= c {
            self.spans.resize(c + 1, None);
        }
        let span = self.spans[c].get_or_insert((e.ts_ns, e.ts_ns, 0));
        span.1 = e.ts_ns;
        span.2 += 1;
        self.s.has_flags |= e.flags.is_some();
    }

    /// A task switched in: its timer wake-up (if one was pending) completes, and its
    /// wake-up-to-run delay is recorded.
    fn switch_in(&mut self, sw: SwitchIn) {
        self.preemptions.switched_in(sw.pid, sw.ts_ns);
        let latency = self.pending.remove(&sw.pid).map(|p| {
            self.timer_wakeup(Done {
                pid: sw.pid,
                comm: sw.comm,
                prio: sw.prio,
                cpu: sw.cpu,
                expires_ns: p.expires_ns,
                fired_ts: p.fired_ts,
                woken_ts: p.woken_ts,
                switched_ts: sw.ts_ns,
                offset_ns: p.offset_ns,
            })
        });
        let (t, fill) = self.tasks.entry(sw.pid).or_default();
        if let Some(latency) = latency {
            t.timer.record(latency);
        }
        if t.comm.as_bytes() != sw.comm.as_bytes() {
            t.comm.clear();
            t.comm.push_str(sw.comm.as_str());
        }
        if sw.prio != UNKNOWN_PRIO {
            t.prio = sw.prio;
        }
        if let Some(w) = self.woken_at.remove(&sw.pid) {
            let delay = sw.ts_ns.saturating_sub(w);
            t.wakeups += 1;
            fill.record(&mut t.histogram, delay, &mut self.dense_given);
            if delay >= t.max_ns {
                t.max_ns = delay;
                t.max_at = (sw.ts_ns, sw.cpu);
            }
        }
    }

    /// A completed timer wake-up: counted, a real-time task's into its CPU's histogram, kept
    /// among the worst; its latency.
    fn timer_wakeup(&mut self, w: Done) -> u64 {
        let latency = latency(w.expires_ns, w.switched_ts, w.offset_ns);
        self.s.wakeup_count += 1;
        if w.prio < 100 {
            self.s
                .rt_histograms
                .entry(w.cpu)
                .or_default()
                .record(latency);
            let m = self.s.rt_max.entry(w.cpu).or_default();
            *m = (*m).max(latency);
            self.rt_worst.offer(latency, w);
        } else {
            self.other_worst.offer(latency, w);
        }
        let c = w.cpu as usize;
        if self.last_on_cpu.len() <= c {
            self.last_on_cpu.resize(c + 1, None);
        }
        self.last_on_cpu[c] = Some(w);
        latency
    }

    /// What the event starts or ends: a timer armed or fired, a wake-up, a migration, a
    /// handler entered or left, a break marker.
    fn apply(&mut self, e: &Event<'_>, kind: Kind<'_>) {
        match kind {
            Kind::HrtimerStart {
                hrtimer,
                function: "hrtimer_wakeup",
                expires_ns,
            } => {
                self.armed.insert(hrtimer.key(), (e.pid, expires_ns));
            }
            Kind::HrtimerExpireEntry {
                hrtimer,
                function,
                now_ns,
            } => self.timer_fired(e, hrtimer, function, now_ns),
            Kind::Waking { task, .. } | Kind::Wakeup { task, .. } => self.woken(e, &task),
            Kind::Switch {
                prev,
                prev_state,
                next,
            } => {
                self.preemptions
                    .switched_out((e.ts_ns, e.cpu), &prev, prev_state, &next);
            }
            Kind::Migrate { task, .. } => {
                let (t, _) = self.tasks.entry(task.pid).or_default();
                if t.comm.is_empty() {
                    t.comm = task.comm.to_string();
                    t.prio = task.prio;
                }
                t.migrations += 1;
            }
            Kind::IrqEntry { irq, name } => {
                let id = self
                    .handlers
                    .id((0, irq), name, || format!("irq {irq} {name}"));
                enter(&mut self.open, e.cpu, id, e.ts_ns);
            }
            Kind::VectorEntry { what } => {
                let id = self
                    .handlers
                    .id((1, 0), what, || format!("{what} interrupt"));
                enter(&mut self.open, e.cpu, id, e.ts_ns);
            }
            Kind::SoftirqEntry { vec, action } => {
                let id = self.handlers.id((2, vec), action, || {
                    if action.is_empty() {
                        format!("softirq {vec}")
                    } else {
                        format!("softirq {action}")
                    }
                });
                enter(&mut self.open, e.cpu, id, e.ts_ns);
            }
            Kind::IrqExit { .. } | Kind::VectorExit { .. } | Kind::SoftirqExit { .. } => {
                self.handler_exit(e.cpu, e.ts_ns);
            }
            Kind::Marker { text } if is_break_marker(text) => self.marker(e, text),
            _ => {}
        }
    }

    /// `task` woken at `e`: its pending timer wake-up, if any, is woken (or ends, when the
    /// task still runs), and its wake-up-to-run delay starts.
    fn woken(&mut self, e: &Event<'_>, task: &crate::event::Task<'_>) {
        // A task woken while it runs (its timer fired before it went to sleep) was never off
        // the CPU: its wake-up ends here, and nothing after it (a preemption, RT throttling)
        // is a delay of this wake-up.
        if let Some(cpu) = self.switches.running_on(task.pid) {
            if let Some(p) = self.pending.remove(&task.pid) {
                let latency = self.timer_wakeup(Done {
                    pid: task.pid,
                    comm: Comm::new(task.comm),
                    prio: task.prio,
                    cpu,
                    expires_ns: p.expires_ns,
                    fired_ts: p.fired_ts,
                    woken_ts: Some(e.ts_ns),
                    switched_ts: e.ts_ns,
                    offset_ns: p.offset_ns,
                });
                self.tasks
                    .entry(task.pid)
                    .or_default()
                    .0
                    .timer
                    .record(latency);
            }
            return;
        }
        if let Some(p) = self.pending.get_mut(&task.pid)
            && p.woken_ts.is_none()
        {
            p.woken_ts = Some(e.ts_ns);
        }
        self.woken_at.entry(task.pid).or_insert(e.ts_ns);
    }

    /// An hrtimer expiry: the clock offset estimated from it, and a `hrtimer_wakeup` timer
    /// armed earlier becomes a pending wake-up of its task.
    fn timer_fired(&mut self, e: &Event<'_>, hrtimer: Timer<'_>, function: &str, now_ns: u64) {
        let delta =
            i64::try_from(e.ts_ns).unwrap_or(i64::MAX) - i64::try_from(now_ns).unwrap_or(i64::MAX);
        self.offset = Some(self.offset.map_or(delta, |o| o.min(delta)));
        let offset_ns = self.recent_offset(e.ts_ns, delta);
        if function == "hrtimer_wakeup"
            && let Some((pid, expires_ns)) = self.armed.remove(&hrtimer.key())
        {
            self.pending.insert(
                pid,
                Pending {
                    expires_ns,
                    fired_ts: e.ts_ns,
                    woken_ts: None,
                    offset_ns,
                },
            );
        }
    }

    /// The clock offset around an expiry at `ts` (its own difference `delta`): the smallest
    /// of the last [`OFFSET_WINDOW_NS`]'s. An expiry handled after others in the same run of
    /// the queue has a later trace time for the same `now`, so the smallest is the truest.
    fn recent_offset(&mut self, ts: u64, delta: i64) -> i64 {
        while self.recent.back().is_some_and(|&(_, d)| d >= delta) {
            self.recent.pop_back();
        }
        self.recent.push_back((ts, delta));
        let from = ts.saturating_sub(OFFSET_WINDOW_NS);
        while self.recent.front().is_some_and(|&(t, _)| t < from) {
            self.recent.pop_front();
        }
        self.recent.front().map_or(delta, |&(_, d)| d)
    }

    /// The innermost handler open on `cpu` ended at `ts`: its duration recorded.
    fn handler_exit(&mut self, cpu: u32, ts: u64) {
        let Some((id, start)) = self.open.get_mut(cpu as usize).and_then(Vec::pop) else {
            return;
        };
        let d = ts.saturating_sub(start);
        let (h, fill) = &mut self.handlers.stats[id as usize];
        h.count += 1;
        h.total_ns += d;
        fill.record(&mut h.histogram, d, &mut self.dense_given);
        if d >= h.max_ns {
            h.max_ns = d;
            h.max_at = (start, cpu);
        }
    }

    /// A break marker, with the CPU that breached and its last completed timer wake-up.
    fn marker(&mut self, e: &Event<'_>, text: &str) {
        // rtlab's marker names the CPU that breached; cyclictest's is written there.
        let cpu = text
            .strip_prefix("rtlab: break: CPU ")
            .and_then(|r| r.split(' ').next()?.parse().ok())
            .filter(|&c: &u32| c <= model::cpuset::MAX_CPU)
            .unwrap_or(e.cpu);
        let last = self.last_on_cpu.get(cpu as usize).copied().flatten();
        let last = last.as_ref().map(Done::wakeup);
        self.s.markers.push((e.ts_ns, cpu, text.to_string(), last));
    }

    /// The scan as found: CPUs' spans, the clock offset, the worst wake-ups worst first.
    fn finish(self, read: ReadStats) -> Scan {
        let mut s = self.s;
        s.handlers = self.handlers.by_name();
        s.tasks = self
            .tasks
            .into_iter()
            .map(|(pid, (mut t, fill))| {
                fill.finish(&mut t.histogram);
                (pid, t)
            })
            .collect();
        s.longest_preemption = self.preemptions.longest;
        s.cpus = self
            .spans
            .into_iter()
            .enumerate()
            .filter_map(|(c, span)| Some((c as u32, span?)))
            .collect();
        s.clock_offset_ns = self.offset.unwrap_or(0);
        let mut kept: Vec<Wakeup> = self
            .rt_worst
            .items
            .into_iter()
            .chain(self.other_worst.items)
            .map(|(_, w)| w.wakeup())
            .collect();
        kept.sort_by_key(|w| std::cmp::Reverse(w.latency_ns(s.clock_offset_ns)));
        s.wakeups = kept;
        s.read = read;
        s
    }
}

/// Markers written at a breach: rtlab's `rtlab: break: ...`, cyclictest's `hit latency
/// threshold (X > Y)`.
pub fn is_break_marker(text: &str) -> bool {
    text.starts_with("rtlab: break:") || text.starts_with("hit latency threshold")
}

impl Scan {
    /// The timer wake-ups of real-time tasks (kernel priority below 100), worst first, at
    /// most `n`. Only those: a normal task's wake-up delay is the fair scheduler sharing the
    /// CPU, which no latency budget or priority argument explains (see
    /// [`Scan::normal_wakeups`]).
    pub fn worst(&self, n: usize) -> Vec<&Wakeup> {
        let mut all: Vec<&Wakeup> = self.wakeups.iter().filter(|w| w.prio < 100).collect();
        all.sort_by_key(|w| std::cmp::Reverse(w.latency_ns(self.clock_offset_ns)));
        all.truncate(n);
        all
    }

    /// How many of the kept timer wake-ups are of normal (not real-time) tasks, and the
    /// priorities seen among them: what a trace without a real-time thread holds instead.
    pub fn normal_wakeups(&self) -> (usize, Vec<i32>) {
        let normal: Vec<&Wakeup> = self.wakeups.iter().filter(|w| w.prio >= 100).collect();
        let mut prios: Vec<i32> = normal.iter().map(|w| w.prio).collect();
        prios.sort_unstable();
        prios.dedup();
        (normal.len(), prios)
    }
}
