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

use std::collections::BTreeMap;

use model::noise::{Culprit, MAX_CULPRITS, PerSource, Source};

use crate::event::{Kind, Task, decode};
use crate::line::Event;

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
    /// The interruptions nothing the kernel recorded overlaps (main cause `hw`), in order:
    /// what a hardware-latency screen reports.
    pub hw_windows: Vec<Window>,
}

/// Builds one CPU's activity intervals from its events and shares its windows out.
#[derive(Debug)]
pub struct CpuAttributor {
    detector_tid: Option<u32>,
    windows: Vec<Window>,
    /// Per window: (class, name, overlap ns).
    shares: Vec<Vec<(Source, String, u64)>>,
    /// Open hard IRQs and vectors (start, key matched by the exit, name), innermost last.
    irqs: Vec<(u64, String, String)>,
    /// Open softirq (start, name).
    softirq: Option<(u64, String)>,
    /// The task on the CPU since (start, name, pid).
    current: Option<(u64, String, u32)>,
    /// The last event seen in the current task.
    current_seen: u64,
    last_ns: u64,
}

impl CpuAttributor {
    /// For `windows` (sorted by start) of the detector thread `detector_tid`.
    pub fn new(detector_tid: Option<u32>, mut windows: Vec<Window>) -> CpuAttributor {
        windows.sort_by_key(|w| w.start_ns);
        CpuAttributor {
            detector_tid,
            shares: vec![Vec::new(); windows.len()],
            windows,
            irqs: Vec::new(),
            softirq: None,
            current: None,
            current_seen: 0,
            last_ns: 0,
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
            Kind::Switch { next, .. } => {
                self.current_seen = end;
                // No handler is open across a switch: entries still open lost their exits
                // (events dropped), and must not claim the time that follows.
                self.irqs.clear();
                if let Some((start, name)) = self.softirq.take() {
                    self.add(start, end, Source::Softirq, name);
                }
                self.close_task(end);
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
                    self.add(start, until, Source::Thread, name);
                }
            }
            let name = format!("{} (pid {})", ev.task, ev.pid);
            self.current = Some((ts, name, ev.pid));
        }
        self.current_seen = ts;
    }

    /// Whether time `pid` held the CPU is noise: not the detector's, not the idle task's.
    fn is_noise(&self, pid: u32) -> bool {
        pid != 0 && Some(pid) != self.detector_tid
    }

    /// Ends the current task's stretch at `ts`; another task's is thread time.
    fn close_task(&mut self, ts: u64) {
        if let Some((start, name, pid)) = self.current.take()
            && self.is_noise(pid)
        {
            self.add(start, ts, Source::Thread, name);
        }
    }

    /// Shares `[start, end)` of `source`/`name` out to the windows it overlaps.
    fn add(&mut self, start: u64, end: u64, source: Source, name: String) {
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
                    .find(|(s, n, _)| *s == source && *n == name)
                {
                    Some(share) => share.2 = share.2.saturating_add(overlap),
                    None => shares.push((source, name.clone(), overlap)),
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
        let mut out = Attribution::default();
        let mut named: BTreeMap<(Source, String), Culprit> = BTreeMap::new();
        for (w, shares) in self.windows.iter().zip(self.shares) {
            if w.start_ns < covered.0 || w.end_ns > covered.1 {
                out.unexplained += 1;
                continue;
            }
            share_window(*w, shares, &mut out, &mut named);
        }
        out.culprits = top_culprits(named.into_values().collect());
        out
    }
}

/// Gives one window its main cause and adds each class's time.
fn share_window(
    w: Window,
    shares: Vec<(Source, String, u64)>,
    out: &mut Attribution,
    named: &mut BTreeMap<(Source, String), Culprit>,
) {
    let length = w.end_ns.saturating_sub(w.start_ns);
    // Time each class took that no higher context took: NMI > IRQ > softirq > thread.
    let mut raw = PerSource::default();
    for (s, _, ns) in &shares {
        raw.add(*s, *ns);
    }
    let nmi = raw.nmi.min(length);
    let irq = raw.irq.min(length).saturating_sub(nmi);
    let softirq = raw.softirq.min(length).saturating_sub(nmi + irq);
    let thread = raw.thread.min(length).saturating_sub(nmi + irq + softirq);
    let own = |s: Source| match s {
        Source::Nmi => nmi,
        Source::Irq => irq,
        Source::Softirq => softirq,
        Source::Thread => thread,
        Source::Hw => 0,
    };
    let covered = nmi + irq + softirq + thread;
    let hw = length.saturating_sub(covered);
    for s in [Source::Nmi, Source::Irq, Source::Softirq, Source::Thread] {
        out.time_ns.add(s, own(s));
    }
    out.time_ns.add(Source::Hw, hw);

    // Each name's own time: its class's own time shared by its raw overlap.
    let mut main: Option<(u64, Source, &str)> = None;
    for (s, name, ns) in &shares {
        let class_raw = raw.get(*s).max(1);
        let mine = u64::try_from(u128::from(own(*s)) * u128::from(*ns) / u128::from(class_raw))
            .unwrap_or(u64::MAX);
        if mine == 0 {
            continue;
        }
        let c = named.entry((*s, name.clone())).or_insert_with(|| Culprit {
            source: *s,
            name: name.clone(),
            count: 0,
            total_ns: 0,
            max_ns: 0,
        });
        c.total_ns = c.total_ns.saturating_add(mine);
        c.max_ns = c.max_ns.max(mine);
        if main.is_none_or(|(best, _, _)| mine > best) {
            main = Some((mine, *s, name.as_str()));
        }
    }
    match main {
        Some((_, s, name)) => {
            out.counts.add(s, 1);
            if let Some(c) = named.get_mut(&(s, name.to_string())) {
                c.count += 1;
            }
        }
        None => {
            out.counts.add(Source::Hw, 1);
            out.hw_windows.push(w);
            let c = named
                .entry((Source::Hw, UNATTRIBUTED.to_string()))
                .or_insert_with(|| Culprit {
                    source: Source::Hw,
                    name: UNATTRIBUTED.to_string(),
                    count: 0,
                    total_ns: 0,
                    max_ns: 0,
                });
            c.count += 1;
            c.total_ns = c.total_ns.saturating_add(length);
            c.max_ns = c.max_ns.max(length);
        }
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
mod tests {
    use super::*;
    use crate::line::{Line, parse};

    fn feed(a: &mut CpuAttributor, text: &str) {
        for l in text.lines() {
            if let Line::Event(ev) = parse(l) {
                a.event(&ev);
            }
        }
    }

    const TRACE: &str = "\
 rtlab/1-500 [001] d.h1. 100.000000: local_timer_entry: vector=236
 rtlab/1-500 [001] d.h1. 100.000004: local_timer_exit: vector=236
 rtlab/1-500 [001] d..2. 100.000010: sched_switch: prev_comm=rtlab/1 prev_pid=500 prev_prio=120 prev_state=R+ ==> next_comm=inject next_pid=600 next_prio=49
 inject-600 [001] d.h1. 100.000100: irq_handler_entry: irq=24 name=virtio0-input.0
 inject-600 [001] d.h1. 100.000110: irq_handler_exit: irq=24 ret=handled
 inject-600 [001] d..2. 100.000510: sched_switch: prev_comm=inject prev_pid=600 prev_prio=49 prev_state=S ==> next_comm=rtlab/1 next_pid=500 next_prio=120
 rtlab/1-500 [001] ..s1. 100.001000: softirq_entry: vec=1 [action=TIMER]
 rtlab/1-500 [001] ..s1. 100.001020: softirq_exit: vec=1 [action=TIMER]
 rtlab/1-500 [001] d.Z1. 100.002003: nmi_handler: perf_event_nmi_handler() delta_ns: 3000 handled: 1
 rtlab/1-500 [001] d..1. 100.009000: sched_waking: comm=x pid=7 prio=120 target_cpu=001
";

    fn window(from_us: u64, to_us: u64) -> Window {
        Window {
            start_ns: 100_000_000_000 + from_us * 1000,
            end_ns: 100_000_000_000 + to_us * 1000,
        }
    }

    #[test]
    fn each_window_gets_its_cause_and_the_classes_their_time() {
        let windows = vec![
            window(0, 6),         // the timer tick, 4 us of 6
            window(9, 512),       // the injected thread, with an IRQ inside
            window(999, 1_021),   // a softirq
            window(1_999, 2_004), // an NMI
            window(5_000, 5_008), // nothing recorded
        ];
        let mut a = CpuAttributor::new(Some(500), windows);
        feed(&mut a, TRACE);
        let out = a.finish((window(0, 0).start_ns, window(10_000, 10_000).start_ns));
        assert_eq!(
            out.counts,
            PerSource {
                hw: 1,
                nmi: 1,
                irq: 1,
                softirq: 1,
                thread: 1
            }
        );
        // Microsecond timestamps: what ends at an event ends at the end of its microsecond.
        assert_eq!(out.time_ns.thread, 500_999 - 10_999);
        assert_eq!(out.time_ns.irq, 4_999 + 10_999);
        assert_eq!(out.time_ns.softirq, 20_999);
        assert_eq!(out.time_ns.nmi, 3_999);
        let thread = &out.culprits[0];
        assert_eq!(thread.name, "inject (pid 600, real-time priority 50)");
        assert_eq!((thread.count, thread.total_ns), (1, 490_000));
        assert_eq!(
            out.time_ns.total(),
            6_000 + 503_000 + 22_000 + 5_000 + 8_000
        );
        let hw = out
            .culprits
            .iter()
            .find(|c| c.source == Source::Hw)
            .unwrap();
        assert_eq!((hw.count, hw.total_ns), (1, 8_000));
        assert_eq!(out.hw_windows, vec![window(5_000, 5_008)]);
        assert_eq!(out.unexplained, 0);
    }

    #[test]
    fn a_switch_the_trace_lacks_is_inferred_from_the_task_events_ran_in() {
        // No switch out of the idle task is recorded: the detector's return shows only in
        // the task of its next event; the idle task's time is nobody's noise.
        let trace = "\
 rtlab/1-500 [001] d..2. 100.000000: sched_switch: prev_comm=rtlab/1 prev_pid=500 prev_prio=0 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
 <idle>-0 [001] d.h1. 100.000100: local_timer_entry: vector=236
 <idle>-0 [001] d.h1. 100.000102: local_timer_exit: vector=236
 rtlab/1-500 [001] d.h1. 100.500000: local_timer_entry: vector=236
 rtlab/1-500 [001] d.h1. 100.500003: local_timer_exit: vector=236
 rtlab/1-500 [001] d..2. 100.600000: sched_switch: prev_comm=rtlab/1 prev_pid=500 prev_prio=0 prev_state=R ==> next_comm=hog next_pid=9 next_prio=120
 hog-9 [001] d..2. 100.600050: sched_switch: prev_comm=hog prev_pid=9 prev_prio=120 prev_state=S ==> next_comm=rtlab/1 next_pid=500 next_prio=0
";
        let mut a = CpuAttributor::new(
            Some(500),
            vec![window(499_999, 500_005), window(599_999, 600_052)],
        );
        feed(&mut a, trace);
        let out = a.finish((window(0, 0).start_ns, window(700_000, 700_000).start_ns));
        assert_eq!(out.counts.irq, 1);
        assert_eq!(out.counts.thread, 1);
        assert!(
            out.culprits.iter().all(|c| !c.name.contains("swapper")),
            "{:?}",
            out.culprits
        );
        assert_eq!(out.culprits[0].name, "hog (pid 9, normal (nice 0))");
    }

    #[test]
    fn windows_outside_the_trace_are_unexplained() {
        let mut a = CpuAttributor::new(Some(500), vec![window(0, 6), window(10_000, 10_010)]);
        feed(&mut a, TRACE);
        let out = a.finish((window(1, 1).start_ns, window(10_000, 10_000).start_ns));
        assert_eq!(out.unexplained, 2);
        assert_eq!(out.counts.total(), 0);
    }

    #[test]
    fn culprits_past_the_limit_are_summed() {
        let all: Vec<Culprit> = (0..40)
            .map(|i| Culprit {
                source: Source::Irq,
                name: format!("irq {i}"),
                count: 1,
                total_ns: 100 + i,
                max_ns: 100 + i,
            })
            .collect();
        let top = top_culprits(all);
        assert_eq!(top.len(), MAX_CULPRITS);
        let last = top.last().unwrap();
        assert_eq!(last.name, OTHERS);
        assert_eq!(last.count, 40 - (MAX_CULPRITS as u64 - 1));
    }
}
