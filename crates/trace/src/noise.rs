//! Attributing noise interruptions to what the kernel recorded: this module owns turning one
//! CPU's trace events (hard IRQs and x86 vectors, softirqs, NMIs, scheduler switches) into
//! activity intervals, and giving each interruption the detector saw its main cause and the
//! time each class took from it — rtla osnoise's HW/NMI/IRQ/softirq/thread split, named.
//!
//! An interruption is a window `[start, end]` between two of the detector's clock reads, on
//! the trace clock. Activities that overlap it share it out with the higher context first (an
//! NMI inside an IRQ inside a softirq inside another thread's time): each class's time is what
//! it took that no higher context did. The window's main cause is the class, and within it the
//! name, that took the most; a window nothing recorded overlaps is `hw` (hardware, firmware or
//! hypervisor), and whatever the recorded activities do not cover is `hw` time too (on a
//! virtual machine that includes the exits and entries around every handler). Windows before
//! the trace's coverage start are `unexplained`, never given a cause. Data in, data out.
//!
//! A thread's run on the CPU (switch-in to switch-out) is one interruption however many
//! windows it overlaps: a hypervisor stall just before or after it (or inside it) makes the
//! detector see more than one gap, and microsecond timestamps make the run's edges overlap
//! them. The run is a candidate for the main cause only of its home window, the one it took
//! most of; the others it overlaps keep its time as thread time but take their cause from the
//! rest, else `hw` (#26).
//!
//! A real-time detector switched out still runnable for an ordinary task (or the idle task)
//! is RT throttling: it has used `sched_rt_runtime_us` of the period, and the kernel runs
//! ordinary tasks (the fair server since 6.12) or nothing until the period ends. That stretch,
//! to the detector's return, is one thread-class cause named [`RT_THROTTLING`], not the
//! tasks that happened to run in it, nor `hw` where nothing ran (#45).

use std::collections::BTreeMap;

use model::noise::{Culprit, MAX_CULPRITS, PerSource, Source};

use crate::event::{Kind, Task, decode};
use crate::line::Event;

/// The cause an RT throttle of the detector is told as.
pub const RT_THROTTLING: &str = "RT throttling (kernel.sched_rt_runtime_us)";

/// One interruption, ns on the trace clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// The detector's last clock read before the gap.
    pub start_ns: u64,
    /// Its first read after it.
    pub end_ns: u64,
}

/// What one CPU's interruptions were attributed to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attribution {
    /// Interruptions by main cause.
    pub counts: PerSource,
    /// Time by class, ns.
    pub time_ns: PerSource,
    /// Named causes, the longest in total first.
    pub culprits: Vec<Culprit>,
    /// Interruptions outside the trace's coverage.
    pub unexplained: u64,
    /// The interruptions of main cause `hw` the hardware took at least half of (nothing the
    /// kernel recorded overlaps them, or only a thread run's edge), in order: what a
    /// hardware-latency screen reports.
    pub hw_windows: Vec<Window>,
}

/// Builds one CPU's activity intervals from its events and shares its windows out.
#[derive(Debug)]
pub struct CpuAttributor {
    detector_tid: Option<u32>,
    windows: Vec<Window>,
    /// Per window, what overlapped it.
    shares: Vec<Vec<Share>>,
    /// Thread runs seen so far: the next run's number.
    runs: u64,
    /// Open hard IRQs and vectors (start, key matched by the exit, name), innermost last.
    irqs: Vec<(u64, String, String)>,
    /// Open softirq (start, name).
    softirq: Option<(u64, String)>,
    /// The task on the CPU since (start, name, pid).
    current: Option<(u64, String, u32)>,
    /// The last event seen in the current task.
    current_seen: u64,
    last_ns: u64,
    /// Since when the detector is RT-throttled: switched out runnable for an ordinary task.
    throttled: Option<u64>,
}

impl CpuAttributor {
    /// For `windows` (sorted by start) of the detector thread `detector_tid`.
    pub fn new(detector_tid: Option<u32>, mut windows: Vec<Window>) -> CpuAttributor {
        windows.sort_by_key(|w| w.start_ns);
        CpuAttributor {
            detector_tid,
            shares: vec![Vec::new(); windows.len()],
            windows,
            runs: 0,
            irqs: Vec::new(),
            softirq: None,
            current: None,
            current_seen: 0,
            last_ns: 0,
            throttled: None,
        }
    }

    /// Takes one event recorded on this CPU, in time order. Text traces print microseconds:
    /// an event printed at `t` happened in `[t, t + 1 us)`, so what ends at an event is taken
    /// to end at the end of that microsecond (a window is never missed for rounding; a class's
    /// time may be over by under 1 us).
    pub fn event(&mut self, ev: &Event<'_>) {
        let slack = if ev.ts_digits < 9 { 999 } else { 0 };
        let ts = ev.ts_ns;
        let end = ts.saturating_add(slack);
        self.last_ns = self.last_ns.max(ts);
        self.observe_task(ts, ev);
        match decode(ev) {
            Kind::IrqEntry { irq, name } => self.irqs.push((ts, irq_key(irq), name.to_string())),
            Kind::VectorEntry { what } => self.irqs.push((ts, what.to_string(), what.to_string())),
            Kind::IrqExit { irq } => self.irq_exit(&irq_key(irq), end),
            Kind::VectorExit { what } => self.irq_exit(what, end),
            Kind::SoftirqEntry { vec, action } => {
                let name = if action.is_empty() {
                    format!("softirq {vec}")
                } else {
                    format!("softirq {action}")
                };
                self.softirq = Some((ts, name));
            }
            Kind::SoftirqExit { .. } => {
                if let Some((start, name)) = self.softirq.take() {
                    self.add(start, end, Source::Softirq, name);
                }
            }
            Kind::Nmi { handler, delta_ns } => {
                self.add(
                    ts.saturating_sub(delta_ns),
                    end,
                    Source::Nmi,
                    format!("nmi {handler}"),
                );
            }
            Kind::Switch {
                prev,
                prev_state,
                next,
            } => {
                self.current_seen = end;
                // No handler is open across a switch: entries still open lost their exits
                // (events dropped), and must not claim the time that follows.
                self.irqs.clear();
                if let Some((start, name)) = self.softirq.take() {
                    self.add(start, end, Source::Softirq, name);
                }
                self.close_task(end);
                self.throttle(ts, (&prev, prev_state), &next);
                self.current = Some((ts, task_name(&next), next.pid));
            }
            _ => {}
        }
    }

    /// A handler's exit: closes the innermost open entry of the same IRQ or vector; entries
    /// opened inside it and never closed are dropped (their exits were lost).
    fn irq_exit(&mut self, key: &str, end: u64) {
        if let Some(at) = self.irqs.iter().rposition(|(_, k, _)| k == key) {
            let (start, key, name) = self.irqs.swap_remove(at);
            self.irqs.truncate(at);
            let name = if key == name {
                name
            } else {
                format!("{key} {name}")
            };
            self.add(start, end, Source::Irq, name);
        }
    }

    /// Every event names the task it ran in. One that is not the task on the CPU means a
    /// switch the trace does not hold (some kernels record no switch out of the idle task):
    /// the old task's stretch ends at its last event, and the new one's starts here — the time
    /// between is nobody's.
    fn observe_task(&mut self, ts: u64, ev: &Event<'_>) {
        let same = self
            .current
            .as_ref()
            .is_some_and(|(_, _, pid)| *pid == ev.pid);
        if !same {
            if let Some((start, name, pid)) = self.current.take() {
                let until = self.current_seen.max(start);
                if self.is_noise(pid) {
                    self.add_run(start, until, name);
                }
            }
            // The detector back from an RT throttle whose switch in the trace lacks (a switch
            // out of the idle task): the throttle ends at its first event.
            if Some(ev.pid) == self.detector_tid
                && let Some(start) = self.throttled.take()
            {
                self.add(start, ts, Source::Thread, RT_THROTTLING.to_string());
            }
            let name = format!("{} (pid {})", ev.task, ev.pid);
            self.current = Some((ts, name, ev.pid));
        }
        self.current_seen = ts;
    }

    /// Whether time `pid` held the CPU is noise: not the detector's, not the idle task's, and
    /// not inside an RT throttle (which is told whole).
    fn is_noise(&self, pid: u32) -> bool {
        pid != 0 && Some(pid) != self.detector_tid && self.throttled.is_none()
    }

    /// A switch at `ts`: a real-time detector switched out runnable for an ordinary task or
    /// the idle task starts an RT throttle; its switch back in ends it, as one cause.
    fn throttle(&mut self, ts: u64, (prev, prev_state): (&Task<'_>, &str), next: &Task<'_>) {
        let detector = |pid: u32| Some(pid) == self.detector_tid;
        if detector(prev.pid)
            && (0..100).contains(&prev.prio)
            && prev_state.starts_with('R')
            && (next.prio >= 100 || next.pid == 0)
        {
            self.throttled = Some(ts);
        } else if detector(next.pid)
            && let Some(start) = self.throttled.take()
        {
            self.add(start, ts, Source::Thread, RT_THROTTLING.to_string());
        }
    }

    /// Ends the current task's stretch at `ts`; another task's is thread time.
    fn close_task(&mut self, ts: u64) {
        if let Some((start, name, pid)) = self.current.take()
            && self.is_noise(pid)
        {
            self.add_run(start, ts, name);
        }
    }

    /// One run of a thread, `[start, end)`: shared out under its own number.
    fn add_run(&mut self, start: u64, end: u64, name: String) {
        let run = self.runs;
        self.runs += 1;
        self.share_out(start, end, Source::Thread, name, Some(run));
    }

    /// Shares `[start, end)` of a handler `source`/`name` out to the windows it overlaps.
    fn add(&mut self, start: u64, end: u64, source: Source, name: String) {
        self.share_out(start, end, source, name, None);
    }

    /// Shares `[start, end)` out to the windows it overlaps.
    fn share_out(&mut self, start: u64, end: u64, source: Source, name: String, run: Option<u64>) {
        if end <= start {
            return;
        }
        let first = self.windows.partition_point(|w| w.end_ns <= start);
        for i in first..self.windows.len() {
            let w = self.windows[i];
            if w.start_ns >= end {
                break;
            }
            let overlap = end.min(w.end_ns).saturating_sub(start.max(w.start_ns));
            if overlap > 0 {
                let shares = &mut self.shares[i];
                match shares
                    .iter_mut()
                    .find(|s| s.source == source && s.name == name && s.run == run)
                {
                    Some(share) => share.ns = share.ns.saturating_add(overlap),
                    None => shares.push(Share {
                        source,
                        name: name.clone(),
                        run,
                        ns: overlap,
                    }),
                }
            }
        }
    }

    /// Closes what is still open at the last event and shares every window out. The trace
    /// covered this CPU from `covered.0` (when tracing started, or the oldest event left
    /// when the buffer overran) to `covered.1` (when it stopped); windows outside are
    /// unexplained.
    pub fn finish(mut self, covered: (u64, u64)) -> Attribution {
        // Handlers still open at the end lost their exits or were cut by the end of the
        // trace: they are not stretched over what follows. The task on the CPU held it to the
        // end.
        let end = self.last_ns.max(covered.1);
        self.close_task(end);
        if let Some(start) = self.throttled.take() {
            self.add(start, end, Source::Thread, RT_THROTTLING.to_string());
        }
        let inside = |w: &Window| w.start_ns >= covered.0 && w.end_ns <= covered.1;
        let homes = run_homes(&self.windows, &self.shares, inside);
        let mut tally = Tally::default();
        for (i, (w, shares)) in self.windows.iter().zip(&self.shares).enumerate() {
            if inside(w) {
                tally.window(*w, shares, |run| homes.get(&run) == Some(&i));
            } else {
                tally.out.unexplained += 1;
            }
        }
        tally.finish()
    }
}

/// One thing's time in one window: a handler by name, or one run of a thread.
#[derive(Clone, Debug)]
struct Share {
    source: Source,
    name: String,
    /// The thread run it belongs to (switch-in to switch-out); `None` for handlers.
    run: Option<u64>,
    /// Its overlap with the window, ns.
    ns: u64,
}

/// Each thread run's home window: of the windows `inside` accepts, the one it overlaps most
/// (the first of equals). Only there can the run be the main cause.
fn run_homes(
    windows: &[Window],
    shares: &[Vec<Share>],
    inside: impl Fn(&Window) -> bool,
) -> BTreeMap<u64, usize> {
    let mut best: BTreeMap<u64, (usize, u64)> = BTreeMap::new();
    for (i, (w, shares)) in windows.iter().zip(shares).enumerate() {
        if !inside(w) {
            continue;
        }
        for s in shares {
            let Some(run) = s.run else { continue };
            let home = best.entry(run).or_insert((i, s.ns));
            if s.ns > home.1 {
                *home = (i, s.ns);
            }
        }
    }
    best.into_iter().map(|(run, (i, _))| (run, i)).collect()
}

/// Time each class took in a window of `length` ns that no higher context took: NMI > IRQ >
/// softirq > thread; `hw` is what none of them covers.
fn own_times(length: u64, shares: &[Share]) -> (PerSource, PerSource) {
    let mut raw = PerSource::default();
    for s in shares {
        raw.add(s.source, s.ns);
    }
    let nmi = raw.nmi.min(length);
    let irq = raw.irq.min(length).saturating_sub(nmi);
    let softirq = raw.softirq.min(length).saturating_sub(nmi + irq);
    let thread = raw.thread.min(length).saturating_sub(nmi + irq + softirq);
    let hw = length.saturating_sub(nmi + irq + softirq + thread);
    let own = PerSource {
        hw,
        nmi,
        irq,
        softirq,
        thread,
    };
    (raw, own)
}

/// Each share's own time: its class's own time shared by its raw overlap.
fn share_times(shares: &[Share], raw: &PerSource, own: &PerSource) -> Vec<u64> {
    shares
        .iter()
        .map(|s| {
            let class_raw = raw.get(s.source).max(1);
            let mine = u128::from(own.get(s.source)) * u128::from(s.ns) / u128::from(class_raw);
            u64::try_from(mine).unwrap_or(u64::MAX)
        })
        .collect()
}

/// The window's main cause among the shares `eligible` accepts: the class and name that took
/// the most (a thread's runs in the window summed; the first of equals); `None` when none took
/// any time.
fn main_cause<'a>(
    shares: &'a [Share],
    times: &[u64],
    eligible: impl Fn(&Share) -> bool,
) -> Option<(Source, &'a str)> {
    let mut by_name: Vec<(Source, &str, u64)> = Vec::new();
    for (s, &mine) in shares.iter().zip(times) {
        if mine == 0 || !eligible(s) {
            continue;
        }
        match by_name
            .iter_mut()
            .find(|(src, name, _)| *src == s.source && *name == s.name)
        {
            Some(entry) => entry.2 = entry.2.saturating_add(mine),
            None => by_name.push((s.source, s.name.as_str(), mine)),
        }
    }
    let mut main: Option<(Source, &str, u64)> = None;
    for (s, name, ns) in by_name {
        if main.is_none_or(|(_, _, best)| ns > best) {
            main = Some((s, name, ns));
        }
    }
    main.map(|(s, name, _)| (s, name))
}

/// The attribution being summed window by window.
#[derive(Default)]
struct Tally {
    out: Attribution,
    named: BTreeMap<(Source, String), Culprit>,
    /// Each thread run's own time over all its windows, with its thread's key.
    runs: BTreeMap<u64, ((Source, String), u64)>,
}

impl Tally {
    /// Adds one window: each class's and name's time, and its main cause, a thread run only
    /// where `is_home` says the window is the run's home.
    fn window(&mut self, w: Window, shares: &[Share], is_home: impl Fn(u64) -> bool) {
        let (raw, own) = own_times(w.end_ns.saturating_sub(w.start_ns), shares);
        for s in Source::ALL {
            self.out.time_ns.add(s, own.get(s));
        }
        let times = share_times(shares, &raw, &own);
        for (s, &mine) in shares.iter().zip(&times) {
            self.charge(s, mine);
        }
        match main_cause(shares, &times, |s| s.run.is_none_or(&is_home)) {
            Some((s, name)) => self.count(s, name),
            None => self.count_hw(w, own.hw),
        }
    }

    /// Adds `mine` ns to the share's name; a handler's longest is per window, a thread's per
    /// run (summed at the end).
    fn charge(&mut self, s: &Share, mine: u64) {
        if mine == 0 {
            return;
        }
        let key = (s.source, s.name.clone());
        let c = self.culprit(key.clone());
        c.total_ns = c.total_ns.saturating_add(mine);
        match s.run {
            Some(run) => {
                let r = self.runs.entry(run).or_insert((key, 0));
                r.1 = r.1.saturating_add(mine);
            }
            None => c.max_ns = c.max_ns.max(mine),
        }
    }

    /// One interruption whose main cause is `source`/`name`.
    fn count(&mut self, source: Source, name: &str) {
        self.out.counts.add(source, 1);
        self.culprit((source, name.to_string())).count += 1;
    }

    /// One interruption no eligible share took time from: `hw`, its uncovered `ns` the
    /// hardware's. It is a hardware window when the hardware took at least half of it (not
    /// when a thread run counted in its home window did).
    fn count_hw(&mut self, w: Window, ns: u64) {
        self.out.counts.add(Source::Hw, 1);
        if ns >= w.end_ns.saturating_sub(w.start_ns).saturating_sub(ns) {
            self.out.hw_windows.push(w);
        }
        let c = self.culprit((Source::Hw, UNATTRIBUTED.to_string()));
        c.count += 1;
        c.total_ns = c.total_ns.saturating_add(ns);
        c.max_ns = c.max_ns.max(ns);
    }

    /// The culprit of `key`, new and empty the first time.
    fn culprit(&mut self, key: (Source, String)) -> &mut Culprit {
        self.named
            .entry(key)
            .or_insert_with_key(|(source, name)| Culprit {
                source: *source,
                name: name.clone(),
                count: 0,
                total_ns: 0,
                max_ns: 0,
            })
    }

    /// Each thread's longest run, then the culprits, the longest in total first.
    fn finish(mut self) -> Attribution {
        for (key, ns) in std::mem::take(&mut self.runs).into_values() {
            let c = self.culprit(key);
            c.max_ns = c.max_ns.max(ns);
        }
        self.out.culprits = top_culprits(self.named.into_values().collect());
        self.out
    }
}

/// The name of interruptions nothing the kernel recorded explains.
pub const UNATTRIBUTED: &str = "nothing the kernel saw (hardware, firmware or hypervisor)";

/// The name of the culprits past [`MAX_CULPRITS`], summed.
pub const OTHERS: &str = "(others)";

/// The longest in total first; past [`MAX_CULPRITS`], the rest summed into one `(others)`
/// entry of the class that took most of them.
fn top_culprits(mut all: Vec<Culprit>) -> Vec<Culprit> {
    all.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.name.cmp(&b.name)));
    if all.len() <= MAX_CULPRITS {
        return all;
    }
    let rest = all.split_off(MAX_CULPRITS - 1);
    let source = rest[0].source;
    all.push(rest.iter().fold(
        Culprit {
            source,
            name: OTHERS.to_string(),
            count: 0,
            total_ns: 0,
            max_ns: 0,
        },
        |mut acc, c| {
            acc.count = acc.count.saturating_add(c.count);
            acc.total_ns = acc.total_ns.saturating_add(c.total_ns);
            acc.max_ns = acc.max_ns.max(c.max_ns);
            acc
        },
    ));
    all
}

/// What an IRQ's exit is matched by (`irq 24`).
fn irq_key(irq: u32) -> String {
    format!("irq {irq}")
}

/// `stress-ng (pid 1234, real-time priority 50)`.
fn task_name(task: &Task<'_>) -> String {
    format!("{} (pid {}, {})", task.comm, task.pid, task.describe_prio())
}

#[cfg(test)]
mod tests;
