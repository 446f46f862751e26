//! Attribution: one spike's delay, from the deadline to the thread running, split over what
//! the CPU did meanwhile, timerlat-style but from ordinary tracepoints.
//!
//! The stretch is cut at the milestones the trace shows — the thread's timer fired
//! (`hrtimer_expire_entry` of `hrtimer_wakeup`), the thread was woken, it was switched in —
//! and at every event on the CPU. Each piece goes to the innermost context running: an
//! interrupt handler or softirq when one is open, else the task on the CPU. Before the timer
//! fired, task time is the timer interrupt's delay (the interrupt could not come: interrupts
//! were off, or the CPU was idle or stalled); between the wake-up and the switch-in it is the
//! task that held the CPU, judged by its priority against the thread's. A thread that armed its
//! timer only past the deadline (preempted before it went back to sleep) was waiting to run
//! until then, and that stretch is judged the same way ([`super::milestones`]). A task is
//! named as its switch-out shows it (a program renames itself at `execve` while it runs). An
//! interrupt handler's part carries what the trace shows inside it ([`super::inside`]).
//!
//! A stretch without events is said to be no more than the trace proves: without the
//! preemptirq tracepoints, interrupts seen off at the last event before a gap may have stayed
//! off, or the CPU may have stalled where no tracepoint can see (hypervisor, SMI, firmware).

use model::explain::{Agent, Caveat, Explanation, PATTERN_SHARE, Part, PartKind};

use super::asleep::Asleep;
use super::functions::Functions;
use super::inside::Inside;
use super::milestones::{Spike, Times, find_milestones, milestone_caveats};
use super::owned::{Ev, TaskRef, Throttle, UNKNOWN_PRIO, What};
use super::piece::{Phase, Piece, phases};
use super::repair::repair;
use super::window::Window;

/// Explains `spike` from `window` (whose events must cover the spike's CPU from before the
/// deadline to the switch-in). `clock_offset_ns` is the trace clock minus the hrtimer clock.
pub fn explain(window: &Window, spike: &Spike, clock_offset_ns: i64) -> Explanation {
    let mut caveats = Vec::new();
    let repaired = repaired_events(window, spike, &mut caveats);
    let on_cpu: Vec<&Ev> = repaired.iter().filter(|e| e.cpu == spike.cpu).collect();
    let found = find_milestones(window, &on_cpu, spike, clock_offset_ns);
    let times = Times::of(spike, &found, &on_cpu);
    milestone_caveats(&found, &on_cpu, &mut caveats);
    window_caveats(window, spike, &mut caveats);
    let thread_prio = found.thread.as_ref().map(|t| t.prio);
    let thread = Thread {
        pid: found.thread.as_ref().map(|t| t.pid).or(spike.pid),
        prio: thread_prio,
    };
    let (pieces, inside, functions) = walk(
        &on_cpu,
        window,
        spike.cpu,
        &times,
        start_task(window, &on_cpu),
        thread,
    );
    let mut parts = merge(&pieces, times.deadline, times.latency());
    for p in &mut parts {
        if p.kind == PartKind::Irq {
            p.inside = inside.of(&p.what, thread.pid);
            // A pattern is evidence of a cause only where its handler took a real part of
            // the delay.
            if let Some(i) = p.inside.as_mut().filter(|_| p.share < PATTERN_SHARE) {
                i.pattern = None;
            }
        }
        p.functions = functions.of(p.kind, &p.what);
    }
    let blind = window.section_events == 0
        && parts
            .iter()
            .any(|p| p.kind == PartKind::NonPreemptible || p.unseen());
    if blind {
        caveats.push(Caveat::NoSectionEvents);
    }
    Explanation {
        cpu: spike.cpu,
        pid: spike.pid.or(found.thread.as_ref().map(|t| t.pid)),
        comm: spike
            .comm
            .clone()
            .or_else(|| found.thread.as_ref().map(|t| t.comm.clone())),
        prio: thread_prio,
        latency_ns: times.latency(),
        deadline_ns: times.deadline,
        cycle: spike.cycle,
        milestones: times.milestones(&found),
        culprit: parts.first().map_or(PartKind::Untraced, |p| p.kind),
        parts,
        phases: Some(phases(&pieces)),
        old_story: None,
        caveats,
    }
}

/// The spike CPU's events and the wake-ups anywhere, with the switches the trace lacks
/// inferred (and a caveat saying how many).
fn repaired_events(window: &Window, spike: &Spike, caveats: &mut Vec<Caveat>) -> Vec<Ev> {
    let cpu_events: Vec<&Ev> = window
        .events
        .iter()
        .filter(|e| e.cpu == spike.cpu || matches!(e.what, What::Woken { .. }))
        .collect();
    let (repaired, inferred) = repair(&cpu_events, spike.cpu, window.running_at_start.clone());
    if inferred > 0 {
        caveats.push(Caveat::InferredSwitches {
            cpu: spike.cpu,
            count: inferred as u64,
        });
    }
    repaired
}

/// The task running when the window opened, with its name and priority as its switch-out
/// shows them (see [`switched_out_as`]).
fn start_task(window: &Window, on_cpu: &[&Ev]) -> Option<TaskRef> {
    window.running_at_start.clone().map(|mut t| {
        if let Some(out) = on_cpu.iter().find_map(|e| match &e.what {
            What::Switch { prev, .. } if prev.pid == t.pid => Some(prev),
            _ => None,
        }) {
            t.prio = out.prio;
            t.comm.clone_from(&out.comm);
        }
        t
    })
}

/// For each event that switches a task in, the task as its switch-out (the CPU's next switch)
/// names it, where that switch is its. A task that renames itself while it runs (`execve`: a
/// program started by a launcher is switched in under the launcher's name) shows its new name
/// only there, and it is the program that held the CPU.
fn switched_out_as<'a>(on_cpu: &[&'a Ev]) -> Vec<Option<&'a TaskRef>> {
    let mut out = vec![None; on_cpu.len()];
    // The task the nearest later switch switched out.
    let mut later: Option<&TaskRef> = None;
    for (i, e) in on_cpu.iter().enumerate().rev() {
        if let What::Switch { prev, next, .. } = &e.what {
            out[i] = later.filter(|p| p.pid == next.pid);
            later = Some(prev);
        }
    }
    out
}

/// What limits the window (lost events, a cut-off read, a buffer that starts late) and the
/// thread moving between CPUs around its spike (a pinned thread never does).
fn window_caveats(window: &Window, spike: &Spike, caveats: &mut Vec<Caveat>) {
    if window.lost_markers > 0 {
        caveats.push(Caveat::LostEvents {
            times: window.lost_markers,
        });
    }
    if window.truncated {
        caveats.push(Caveat::WindowTruncated {
            max_events: super::window::MAX_WINDOW_EVENTS as u64,
        });
    }
    if window.buffer_started_late {
        caveats.push(Caveat::BufferStartedLate);
    }
    let Some(pid) = spike.pid else {
        return;
    };
    let d = spike.deadline_ts;
    for e in &window.events {
        if let What::Migrate { pid: p, from, to } = e.what
            && p == pid
        {
            caveats.push(Caveat::Migrated {
                from,
                to,
                at_ns: e.ts_ns as i64 - d as i64,
            });
        }
    }
}

/// The thread whose spike is explained, as far as the trace names it.
#[derive(Clone, Copy)]
struct Thread {
    pid: Option<u32>,
    prio: Option<i32>,
}

/// The contexts on the CPU as the walk goes: the task running, interrupts on or off, the
/// handlers open (innermost last).
struct Contexts {
    running: Option<TaskRef>,
    /// RT throttling: the CPU runs ordinary tasks (or idle) while a real-time task switched
    /// out runnable waits.
    throttle: Throttle,
    irqs_off: bool,
    /// Interrupts off as a preemptirq tracepoint says (`irq_disable`, not yet `irq_enable`):
    /// the section is in the trace, not guessed from a flag.
    section: bool,
    /// When the thread slept (on something else than its timer, before it armed that past the
    /// deadline: I/O, a page fault, a lock).
    asleep: Asleep,
    stack: Vec<(PartKind, Agent)>,
}

/// Walks the CPU's events over `[deadline, end)`: every stretch between two events (cut at
/// the milestones) becomes a piece of the innermost context, interrupt handlers note what
/// happens inside them, and the functions traced count for the context they were called in.
fn walk(
    on_cpu: &[&Ev],
    window: &Window,
    cpu: u32,
    times: &Times,
    start_task: Option<TaskRef>,
    thread: Thread,
) -> (Vec<Piece>, Inside, Functions) {
    let mut ctx = Contexts {
        throttle: window.throttle_at_start.clone(),
        running: start_task,
        irqs_off: window.irqs_off_at_start.unwrap_or(false),
        section: false,
        asleep: Asleep::of(window, on_cpu, thread.pid),
        stack: Vec::new(),
    };
    let mut inside = Inside::default();
    let mut functions = Functions::default();
    let mut pieces: Vec<Piece> = Vec::new();
    let mut t = times.deadline;
    // The walk ends with a sentinel event at the end of the stretch.
    let last = Ev {
        ts_ns: times.end,
        cpu,
        pid: 0,
        task: String::new(),
        inferred: false,
        in_irq: None,
        irqs_off: None,
        what: What::Other(String::new()),
    };
    let renamed = switched_out_as(on_cpu);
    let events = on_cpu.iter().copied().zip(renamed.iter().copied());
    for (e, renamed) in events.chain(std::iter::once((&last, None))) {
        let until = e.ts_ns.min(times.end);
        if until > t {
            cut(t, until, times, &ctx, thread, &mut pieces);
            t = until;
        }
        if e.ts_ns > times.end {
            break;
        }
        if e.ts_ns >= times.deadline {
            note_function(e, &ctx, times, thread, &mut functions);
        }
        step(e, renamed, &mut ctx, &mut inside, times.deadline);
    }
    inside.close_all();
    (pieces, inside, functions)
}

/// A function tracer's call or return, counted for the context it happened in.
fn note_function(e: &Ev, ctx: &Contexts, times: &Times, thread: Thread, functions: &mut Functions) {
    match &e.what {
        What::Call { func, depth, ns } => {
            let p = piece(times.phase_at(e.ts_ns), e.ts_ns, e.ts_ns, ctx, thread);
            functions.call((p.kind, &p.what), func, *depth, *ns);
        }
        What::Return { depth, ns } => functions.ret(*depth, *ns),
        _ => {}
    }
}

/// The pieces of `[from, until)`, cut at the milestones inside it.
fn cut(
    from: u64,
    until: u64,
    times: &Times,
    ctx: &Contexts,
    thread: Thread,
    pieces: &mut Vec<Piece>,
) {
    let cuts = [times.armed, times.fired, times.woken, times.switched];
    let mut a = from;
    for &c in cuts.iter().filter(|&&c| c > from && c < until) {
        pieces.push(piece(times.phase_at(a), a, c, ctx, thread));
        a = c;
    }
    pieces.push(piece(times.phase_at(a), a, until, ctx, thread));
}

/// One event's effect on the contexts: interrupts on or off, a handler entered or left, a
/// switch (the task switched in named as `renamed`, its switch-out, shows it, where given);
/// inside an interrupt handler, what it shows is noted.
fn step(e: &Ev, renamed: Option<&TaskRef>, ctx: &mut Contexts, inside: &mut Inside, deadline: u64) {
    if let Some(off) = e.irqs_off {
        ctx.irqs_off = off;
    }
    if matches!(ctx.stack.last(), Some((PartKind::Irq, _))) {
        inside.note(&e.what);
    }
    match &e.what {
        What::IrqIn(label) => {
            ctx.stack.push((PartKind::Irq, label.clone()));
            inside.enter(label);
        }
        What::SoftIn(label) => ctx.stack.push((PartKind::Softirq, label.clone())),
        What::IrqOut | What::SoftOut => {
            if let Some((PartKind::Irq, _)) = ctx.stack.pop() {
                inside.leave(e.ts_ns, deadline);
            }
        }
        What::Switch {
            prev,
            prev_state,
            next,
        } => {
            ctx.throttle.switch(
                e.ts_ns,
                (prev.prio, prev.pid),
                prev_state,
                (next.prio, next.pid),
            );
            let mut next = next.clone();
            if let Some(r) = renamed {
                next.comm.clone_from(&r.comm);
            }
            ctx.running = Some(next);
            ctx.stack.retain(|(k, _)| *k == PartKind::Irq);
            // The scheduler turns interrupts back on in the task switched in.
            ctx.section = false;
        }
        What::IrqsOff(_) => ctx.section = true,
        What::IrqsOn => ctx.section = false,
        What::Woken { task, .. } => ctx.throttle.gone(task.pid),
        What::Migrate { pid, .. } => ctx.throttle.gone(*pid),
        _ => {}
    }
}

/// The piece of `[a, b)` in phase `phase` for the context on top.
fn piece(phase: Phase, a: u64, b: u64, ctx: &Contexts, thread: Thread) -> Piece {
    let (kind, what) = match ctx.stack.last() {
        Some((k, label)) => (*k, label.clone()),
        None => task_piece(phase, ctx, thread, a),
    };
    Piece {
        phase,
        kind,
        what,
        start: a,
        end: b,
    }
}

/// What the CPU's task was to the thread in `phase`, for a piece from `a` on.
fn task_piece(phase: Phase, ctx: &Contexts, thread: Thread, a: u64) -> (PartKind, Agent) {
    let (running, irqs_off) = (ctx.running.as_ref(), ctx.irqs_off);
    let idle = running.is_some_and(|r| r.pid == 0);
    match phase {
        Phase::BeforeFire if idle => (PartKind::TimerDelay, Agent::Idle),
        // The trace shows interrupts turned off in another task and not yet back on: that
        // section, not a stall, held the timer interrupt back.
        Phase::BeforeFire => match running {
            Some(r) if ctx.section && Some(r.pid) != thread.pid => {
                (PartKind::NonPreemptible, Agent::Task(r.named()))
            }
            _ => (
                PartKind::TimerDelay,
                Agent::Untraced {
                    task: running.map(TaskRef::named),
                    irqs_off,
                },
            ),
        },
        Phase::Firing => (PartKind::TimerHandler, Agent::Expiry),
        Phase::Returning => (PartKind::Return, Agent::ClockRead),
        Phase::Waiting => waiting_piece(running, thread.prio, ctx.throttle.throttled),
        // Not yet back asleep, the thread waited to run, or ran its own loop to the arming.
        Phase::Unarmed if running.is_some_and(|r| Some(r.pid) == thread.pid) => {
            (PartKind::Return, Agent::ClockRead)
        }
        // Asleep on something else than its timer: its own doing, whatever ran meanwhile.
        Phase::Unarmed if ctx.asleep.at(a).is_some() => (
            PartKind::Blocked,
            Agent::Asleep {
                state: ctx.asleep.at(a).unwrap_or_default().to_string(),
            },
        ),
        Phase::Unarmed => waiting_piece(running, thread.prio, ctx.throttle.throttled),
    }
}

/// What held the CPU while the thread waited to run, judged by its priority against the
/// thread's; while the CPU is `throttled` (ordinary tasks or idle given the CPU over a
/// runnable real-time task), a real-time thread waits on RT throttling.
fn waiting_piece(
    running: Option<&TaskRef>,
    thread_prio: Option<i32>,
    throttled: bool,
) -> (PartKind, Agent) {
    let Some(r) = running else {
        return (PartKind::Untraced, Agent::NoSwitch);
    };
    let task = Agent::Task(r.named());
    match thread_prio {
        Some(p) if throttled && p < 100 && r.prio >= 100 => (
            PartKind::RtThrottling,
            if r.pid == 0 { Agent::FromIdle } else { task },
        ),
        _ if r.pid == 0 => (PartKind::Scheduler, Agent::FromIdle),
        _ if r.is_irq_thread() => (PartKind::IrqThread, task),
        _ if r.prio == UNKNOWN_PRIO => (PartKind::Scheduler, task),
        // A normal (fair-scheduled) thread shares the CPU with the other normal tasks;
        // their priorities decide nothing, so no priority story is told.
        Some(p) if p >= 100 && r.prio >= 100 => (PartKind::Scheduler, Agent::FairShare(r.named())),
        Some(p) if r.prio < p => (PartKind::HigherPriorityTask, task),
        Some(p) if r.prio == p => (PartKind::SamePriorityTask, task),
        Some(_) => (PartKind::NonPreemptible, task),
        None => (PartKind::Scheduler, task),
    }
}

/// Parts from pieces: same kind and description merged, largest first, shares of `latency`.
fn merge(pieces: &[Piece], deadline: u64, latency: u64) -> Vec<Part> {
    let mut parts: Vec<Part> = Vec::new();
    let mut last: Option<(PartKind, &Agent, u64)> = None;
    for p in pieces.iter().filter(|p| p.end > p.start) {
        let contiguous = last.is_some_and(|(k, w, e)| k == p.kind && *w == p.what && e == p.start);
        match parts
            .iter_mut()
            .find(|x| x.kind == p.kind && x.what == p.what)
        {
            Some(x) => {
                x.duration_ns += p.end - p.start;
                if !contiguous {
                    x.times += 1;
                }
            }
            None => parts.push(Part {
                kind: p.kind,
                what: p.what.clone(),
                duration_ns: p.end - p.start,
                start_ns: p.start - deadline,
                times: 1,
                share: 0.0,
                inside: None,
                functions: None,
            }),
        }
        last = Some((p.kind, &p.what, p.end));
    }
    for x in &mut parts {
        x.share = if latency == 0 {
            0.0
        } else {
            x.duration_ns as f64 / latency as f64
        };
    }
    parts.sort_by(|a, b| {
        b.duration_ns
            .cmp(&a.duration_ns)
            .then(a.start_ns.cmp(&b.start_ns))
    });
    parts
}
