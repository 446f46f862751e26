//! The second pass: the events of the windows around the spikes being explained, kept owned,
//! with what was running on the CPU when each window opened and the window's raw lines.

use std::io::{self, BufRead};

use crate::event::{Kind, Task};
use crate::line::Event;
use crate::source::{self, Item, Source, Text};

use super::owned::{Ev, TaskRef, Throttle, UNKNOWN_PRIO};

/// How far before a deadline a window opens: long enough to see what ran when the deadline
/// passed (the last switch, an open handler).
pub const LOOKBACK_NS: u64 = 2_000_000;

/// A window to keep: one CPU, a stretch of trace time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowSpec {
    /// The CPU.
    pub cpu: u32,
    /// Trace time the window opens (ns).
    pub from_ts: u64,
    /// Trace time it closes (ns).
    pub to_ts: u64,
}

/// The most events one window keeps: a real spike's window holds thousands; more is a damaged
/// trace or a switch-in that never comes, and memory must not grow with the file.
pub(crate) const MAX_WINDOW_EVENTS: usize = 500_000;

/// The events of one window.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Window {
    /// The window's CPU.
    pub cpu: u32,
    /// Its stretch.
    pub from_ts: u64,
    /// See `from_ts`.
    pub to_ts: u64,
    /// Events on the CPU in the window, and wake-ups and migrations on any CPU, in trace
    /// order.
    pub events: Vec<Ev>,
    /// The task running on the CPU when the window opened, when a switch before it says.
    pub running_at_start: Option<TaskRef>,
    /// Whether the CPU's flags showed interrupts off at its last event before the window.
    pub irqs_off_at_start: Option<bool>,
    /// RT throttling on the CPU when the window opened (a throttle lasts up to the rest of a
    /// period, far longer than the lookback).
    pub throttle_at_start: Throttle,
    /// Lost-events markers met while the window was open.
    pub lost_markers: u64,
    /// Whether the CPU's buffer started inside or after the window (older events gone).
    pub buffer_started_late: bool,
    /// The kept events' lines as the trace printed them (when asked for).
    pub text: String,
    /// Whether the window reached [`MAX_WINDOW_EVENTS`] and its later events were not kept.
    pub truncated: bool,
    /// preemptirq events (interrupts or preemption off and on) on the CPU in the window: none
    /// where the kernel lacks `CONFIG_PREEMPTIRQ_TRACEPOINTS` or the trace did not record them.
    pub section_events: u64,
}

/// Reads a text trace once more and fills one [`Window`] per spec.
pub fn collect<R: BufRead + Send>(
    input: R,
    specs: &[WindowSpec],
    keep_text: bool,
) -> io::Result<Vec<Window>> {
    collect_source(&mut Text::new(input), specs, keep_text)
}

/// Reads a trace (any source) once more and fills one [`Window`] per spec.
pub fn collect_source(
    src: &mut dyn Source,
    specs: &[WindowSpec],
    keep_text: bool,
) -> io::Result<Vec<Window>> {
    src.keep_lines(keep_text);
    let mut windows: Vec<Window> = specs
        .iter()
        .map(|s| Window {
            cpu: s.cpu,
            from_ts: s.from_ts,
            to_ts: s.to_ts,
            ..Window::default()
        })
        .collect();
    let mut cpus = Cpus::default();
    let first_from = specs.iter().map(|s| s.from_ts).min().unwrap_or(u64::MAX);
    let last_to = specs.iter().map(|s| s.to_ts).max().unwrap_or(0);
    let mut last_ts = 0u64;
    src.each(&mut |item| {
        let (e, decoded) = match item {
            Item::Event(e, decoded) => (e, decoded),
            other => {
                mark(&mut windows, &other, last_ts);
                return;
            }
        };
        last_ts = e.ts_ns;
        let cpu = cpus.grow(e.cpu);
        // Every event is recorded in the context of the task running on its CPU: one switch
        // in the trace can be missing (some kernels do not trace switches out of the idle
        // task), and the next event still says who runs.
        cpus.current(cpu, e.pid, e.task);
        let in_span = e.ts_ns >= first_from && e.ts_ns <= last_to;
        // Switches, wake-ups and migrations outside the windows too: they keep each CPU's
        // running task and RT throttling state.
        if in_span
            || matches!(
                e.name,
                "sched_switch" | "sched_waking" | "sched_wakeup" | "sched_migrate_task"
            )
        {
            let kind = source::kind(&e, decoded);
            keep(&mut windows, &e, &kind, &cpus, keep_text);
            match &kind {
                Kind::Switch {
                    prev,
                    prev_state,
                    next,
                } => {
                    cpus.throttle[cpu].switch(
                        e.ts_ns,
                        (prev.prio, prev.pid),
                        prev_state,
                        (next.prio, next.pid),
                    );
                    cpus.switch(cpu, next);
                }
                Kind::Waking { task, .. } | Kind::Wakeup { task, .. } => {
                    cpus.throttle.iter_mut().for_each(|t| t.gone(task.pid));
                }
                Kind::Migrate { task, orig_cpu, .. } => {
                    if let Some(t) = cpus.throttle.get_mut(*orig_cpu as usize) {
                        t.gone(task.pid);
                    }
                }
                _ => {}
            }
        }
        if let Some(f) = e.flags {
            cpus.irqs_off[cpu] = Some(f.irqs_off);
        }
    })?;
    for w in &mut windows {
        if w.events.is_empty() {
            w.running_at_start = cpus.running.get(w.cpu as usize).cloned().flatten();
        }
    }
    Ok(windows)
}

/// Per CPU as the pass goes: the running task (reused buffers: no allocation per switch) and
/// whether the last event had interrupts off.
#[derive(Default)]
struct Cpus {
    running: Vec<Option<TaskRef>>,
    irqs_off: Vec<Option<bool>>,
    throttle: Vec<Throttle>,
}

impl Cpus {
    /// Makes room for `cpu`; its index.
    fn grow(&mut self, cpu: u32) -> usize {
        let cpu = cpu as usize;
        if self.running.len() <= cpu {
            self.running.resize(cpu + 1, None);
            self.irqs_off.resize(cpu + 1, None);
            self.throttle.resize(cpu + 1, Throttle::default());
        }
        cpu
    }

    /// An event on `cpu` was recorded while task `pid` (named `comm`) ran: where the last
    /// switch says another one runs, a switch the trace lacks came between (the task's
    /// priority is unknown until a switch names it).
    fn current(&mut self, cpu: usize, pid: u32, comm: &str) {
        match &mut self.running[cpu] {
            Some(t) if t.pid == pid => {}
            Some(t) => {
                t.comm.clear();
                t.comm.push_str(comm);
                t.pid = pid;
                t.prio = UNKNOWN_PRIO;
            }
            slot => {
                *slot = Some(TaskRef {
                    comm: comm.to_string(),
                    pid,
                    prio: UNKNOWN_PRIO,
                })
            }
        }
    }

    /// `next` runs on `cpu` now.
    fn switch(&mut self, cpu: usize, next: &Task<'_>) {
        match &mut self.running[cpu] {
            Some(t) => {
                t.comm.clear();
                t.comm.push_str(next.comm);
                t.pid = next.pid;
                t.prio = next.prio;
            }
            slot => *slot = Some(next.into()),
        }
    }
}

/// A lost-events marker counts in the windows open at the last event; a buffer that starts
/// late marks its CPU's windows that had opened by then.
fn mark(windows: &mut [Window], item: &Item<'_>, last_ts: u64) {
    match item {
        Item::Lost { .. } => {
            for w in windows
                .iter_mut()
                .filter(|w| w.from_ts <= last_ts && last_ts <= w.to_ts)
            {
                w.lost_markers += 1;
            }
        }
        Item::BufferStarted { cpu } => {
            for w in windows
                .iter_mut()
                .filter(|w| w.cpu == *cpu && last_ts >= w.from_ts)
            {
                w.buffer_started_late = true;
            }
        }
        _ => {}
    }
}

/// Event `e` (decoded as `kind`) into each window it belongs to: one on the window's CPU in
/// its stretch, or a wake-up or migration anywhere. A window opening takes the CPU's running
/// task and interrupt state from before it.
fn keep(windows: &mut [Window], e: &Event<'_>, kind: &Kind<'_>, cpus: &Cpus, keep_text: bool) {
    let mut kept: Option<Ev> = None;
    for w in windows.iter_mut() {
        if e.ts_ns < w.from_ts {
            continue;
        }
        if w.events.is_empty() && e.ts_ns >= w.from_ts && w.running_at_start.is_none() {
            w.running_at_start = cpus.running.get(w.cpu as usize).cloned().flatten();
            w.irqs_off_at_start = cpus.irqs_off.get(w.cpu as usize).copied().flatten();
            w.throttle_at_start = cpus
                .throttle
                .get(w.cpu as usize)
                .cloned()
                .unwrap_or_default();
        }
        if e.ts_ns > w.to_ts {
            continue;
        }
        let relevant = e.cpu == w.cpu
            || matches!(
                kind,
                Kind::Waking { .. } | Kind::Wakeup { .. } | Kind::Migrate { .. }
            );
        if !relevant {
            continue;
        }
        if matches!(
            kind,
            Kind::IrqsOff { .. }
                | Kind::IrqsOn { .. }
                | Kind::PreemptOff { .. }
                | Kind::PreemptOn { .. }
        ) {
            w.section_events += 1;
        }
        if w.events.len() >= MAX_WINDOW_EVENTS {
            w.truncated = true;
            continue;
        }
        let ev = kept.get_or_insert_with(|| Ev::new(e, kind)).clone();
        w.events.push(ev);
        if keep_text {
            w.text.push_str(e.line);
            w.text.push('\n');
        }
    }
}
