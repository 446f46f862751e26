//! Switches the trace does not show, put back. Some kernels leave most switches out of the
//! idle task untraced (this development VM's 6.18 guest traces 29 of 589), and any trace can
//! lose events; yet every event line names the task on its CPU, and a task woken onto an idle
//! CPU runs as soon as the interrupt that woke it returns. So on one CPU's events, in order:
//!
//! - when the CPU is idle, no handler is open, and tasks were woken onto it, the most urgent
//!   of them is switched in at the end of the handler (or at the wake-up, outside one);
//! - when an event names a task other than the one running, it was switched in by then.
//!
//! Inferred switches carry [`Ev::inferred`], so an explanation can say how much it guessed.

use std::collections::HashMap;

use super::owned::{Ev, TaskRef, UNKNOWN_PRIO, What};

/// `events` (one CPU's, in order) with the missing switches inserted, and how many were.
/// `running` is the task on the CPU before the first event, when known.
pub(super) fn repair(events: &[&Ev], cpu: u32, running: Option<TaskRef>) -> (Vec<Ev>, usize) {
    let mut r = Repair {
        cpu,
        running,
        out: Vec::with_capacity(events.len() + 4),
        runnable: Vec::new(),
        depth: 0,
        inferred: 0,
        prios: HashMap::new(),
    };
    for &e in events {
        r.step(e);
    }
    let Repair {
        mut out, inferred, ..
    } = r;
    prios_at_switch_out(&mut out, cpu);
    (out, inferred)
}

/// The repair so far, event by event.
struct Repair {
    cpu: u32,
    /// The task on the CPU.
    running: Option<TaskRef>,
    /// The events, with the switches inferred.
    out: Vec<Ev>,
    /// Tasks woken onto the CPU that have not run yet.
    runnable: Vec<TaskRef>,
    /// Handlers open on the CPU.
    depth: usize,
    /// Switches inferred.
    inferred: usize,
    /// Each task's priority, as last seen.
    prios: HashMap<u32, i32>,
}

impl Repair {
    fn step(&mut self, e: &Ev) {
        // An event by a task other than the running one: it was switched in by now.
        let stranger = e.cpu == self.cpu
            && !matches!(e.what, What::Switch { .. })
            && self.running.as_ref().is_some_and(|r| r.pid != e.pid);
        if stranger && e.pid == 0 {
            self.retract_idle_exit();
        }
        if stranger && self.running.as_ref().is_some_and(|r| r.pid != e.pid) {
            self.switch_in(e);
        }
        if let What::Switch { next, .. } = &e.what
            && e.cpu == self.cpu
        {
            self.retract_early(next.pid);
        }
        self.out.push(e.clone());
        self.note(e);
        self.run_woken(e);
    }

    /// The idle task still shows after a switch inferred from it: the CPU had not left idle
    /// yet. Take the inference back; the next edge infers it again.
    fn retract_idle_exit(&mut self) {
        let cpu = self.cpu;
        if let Some(last) = self.out.iter().rposition(|x: &Ev| x.inferred)
            && matches!(&self.out[last].what, What::Switch { prev, .. } if prev.pid == 0)
            && self.out[last + 1..]
                .iter()
                .all(|x| x.pid == 0 || x.cpu != cpu)
        {
            if let What::Switch { prev, next, .. } = self.out.remove(last).what {
                self.runnable.push(next);
                self.running = Some(prev);
            }
            self.inferred -= 1;
        }
    }

    /// `e`'s task was switched in by the time of `e`.
    fn switch_in(&mut self, e: &Ev) {
        let next = match self.runnable.iter().position(|t| t.pid == e.pid) {
            Some(i) => self.runnable.remove(i),
            None => TaskRef {
                comm: if e.pid == 0 {
                    "swapper".to_string()
                } else {
                    e.task.clone()
                },
                pid: e.pid,
                prio: self.prios.get(&e.pid).copied().unwrap_or(UNKNOWN_PRIO),
            },
        };
        self.infer(e.ts_ns, next);
    }

    /// A traced switch to the task an earlier inference switched in, with nothing by that
    /// task in between: the inference was early; the traced switch stands.
    fn retract_early(&mut self, pid: u32) {
        let cpu = self.cpu;
        if let Some(last) = self
            .out
            .iter()
            .rposition(|x: &Ev| x.inferred && x.cpu == cpu)
            && matches!(&self.out[last].what, What::Switch { next: n, .. } if n.pid == pid)
            && self.out[last + 1..]
                .iter()
                .all(|x| x.cpu != cpu || x.pid != pid)
        {
            if let What::Switch { prev, .. } = self.out.remove(last).what {
                self.running = Some(prev);
            }
            self.inferred -= 1;
        }
    }

    /// What `e` tells of the CPU: a switch, a task woken onto it, a handler entered or left.
    fn note(&mut self, e: &Ev) {
        let here = e.cpu == self.cpu;
        match &e.what {
            What::Switch { next, prev, .. } if here => {
                self.runnable.retain(|t| t.pid != next.pid);
                self.prios.insert(prev.pid, prev.prio);
                self.prios.insert(next.pid, next.prio);
                self.running = Some(next.clone());
                self.depth = 0;
            }
            What::Woken { task, target_cpu } => {
                self.prios.insert(task.pid, task.prio);
                if target_cpu.unwrap_or(e.cpu) == self.cpu
                    && self.running.as_ref().is_none_or(|r| r.pid != task.pid)
                {
                    self.runnable.retain(|t| t.pid != task.pid);
                    self.runnable.push(task.clone());
                }
            }
            What::IrqIn(_) | What::SoftIn(_) if here => self.depth += 1,
            What::IrqOut | What::SoftOut if here => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
    }

    /// The idle CPU runs the most urgent woken task once no handler is open.
    fn run_woken(&mut self, e: &Ev) {
        let idle = self.running.as_ref().is_some_and(|r| r.pid == 0);
        let edge = match &e.what {
            What::IrqOut | What::SoftOut => true,
            What::Woken { .. } => e.in_irq == Some(false),
            What::Other(name) => name == "hrtimer_expire_exit",
            _ => false,
        };
        if idle && self.depth == 0 && edge && e.cpu == self.cpu && !self.runnable.is_empty() {
            let best = (0..self.runnable.len())
                .min_by_key(|&i| self.runnable[i].prio)
                .unwrap_or(0);
            let next = self.runnable.remove(best);
            self.infer(e.ts_ns, next);
        }
    }

    /// A switch to `next` at `ts_ns`, inferred.
    fn infer(&mut self, ts_ns: u64, next: TaskRef) {
        let prev = self.running.take();
        self.out.push(switch(ts_ns, self.cpu, prev, next.clone()));
        self.running = Some(next);
        self.inferred += 1;
    }
}

/// A task's priority while it ran shows at its switch-out (prev_prio): a priority set while
/// running (sched_setscheduler) is invisible until then. Each switch-in takes it.
fn prios_at_switch_out(out: &mut [Ev], cpu: u32) {
    for i in 0..out.len() {
        let What::Switch { next, .. } = &out[i].what else {
            continue;
        };
        let pid = next.pid;
        let later = out[i + 1..].iter().find_map(|e| match &e.what {
            What::Switch { prev, .. } if e.cpu == cpu && prev.pid == pid => Some(prev.prio),
            _ => None,
        });
        if let (Some(p), What::Switch { next, .. }) = (later, &mut out[i].what)
            && p != UNKNOWN_PRIO
        {
            next.prio = p;
        }
    }
}

fn switch(ts_ns: u64, cpu: u32, prev: Option<TaskRef>, next: TaskRef) -> Ev {
    let prev = prev.unwrap_or(TaskRef {
        comm: "unknown".to_string(),
        pid: u32::MAX,
        prio: UNKNOWN_PRIO,
    });
    Ev {
        ts_ns,
        cpu,
        pid: prev.pid,
        task: prev.comm.clone(),
        inferred: true,
        in_irq: None,
        irqs_off: None,
        what: What::Switch {
            prev,
            prev_state: "R".to_string(),
            next,
        },
    }
}
