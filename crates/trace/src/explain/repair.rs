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

use super::owned::{Ev, TaskRef, What};

/// `events` (one CPU's, in order) with the missing switches inserted, and how many were.
/// `running` is the task on the CPU before the first event, when known.
pub(super) fn repair(events: &[&Ev], cpu: u32, mut running: Option<TaskRef>) -> (Vec<Ev>, usize) {
    let mut out = Vec::with_capacity(events.len() + 4);
    let mut runnable: Vec<TaskRef> = Vec::new();
    let mut depth = 0usize;
    let mut inferred = 0;
    let mut prios: std::collections::HashMap<u32, i32> = std::collections::HashMap::new();
    for &e in events {
        // An event by a task other than the running one: it was switched in by now.
        let stranger = e.cpu == cpu
            && !matches!(e.what, What::Switch { .. })
            && running.as_ref().is_some_and(|r| r.pid != e.pid);
        // The idle task still shows after a switch inferred from it: the CPU had not left
        // idle yet. Take the inference back; the next edge infers it again.
        if stranger
            && e.pid == 0
            && let Some(last) = out.iter().rposition(|x: &Ev| x.inferred)
            && matches!(&out[last].what, What::Switch { prev, .. } if prev.pid == 0)
            && out[last + 1..].iter().all(|x| x.pid == 0 || x.cpu != cpu)
        {
            if let What::Switch { prev, next, .. } = out.remove(last).what {
                runnable.push(next);
                running = Some(prev);
            }
            inferred -= 1;
        }
        let stranger = stranger && running.as_ref().is_some_and(|r| r.pid != e.pid);
        if stranger {
            let next = runnable
                .iter()
                .position(|t| t.pid == e.pid)
                .map(|i| runnable.remove(i))
                .unwrap_or_else(|| TaskRef {
                    comm: if e.pid == 0 {
                        "swapper".to_string()
                    } else {
                        e.task.clone()
                    },
                    pid: e.pid,
                    prio: prios.get(&e.pid).copied().unwrap_or(i32::MIN),
                });
            out.push(switch(e.ts_ns, cpu, running.take(), next.clone()));
            running = Some(next);
            inferred += 1;
        }
        // A traced switch to the task an earlier inference switched in, with nothing by that
        // task in between: the inference was early; the traced switch stands.
        if let What::Switch { next, .. } = &e.what
            && e.cpu == cpu
            && let Some(last) = out.iter().rposition(|x: &Ev| x.inferred && x.cpu == cpu)
            && matches!(&out[last].what, What::Switch { next: n, .. } if n.pid == next.pid)
            && out[last + 1..]
                .iter()
                .all(|x| x.cpu != cpu || x.pid != next.pid)
        {
            if let What::Switch { prev, .. } = out.remove(last).what {
                running = Some(prev);
            }
            inferred -= 1;
        }
        out.push(e.clone());
        match &e.what {
            What::Switch { next, prev, .. } if e.cpu == cpu => {
                runnable.retain(|t| t.pid != next.pid);
                prios.insert(prev.pid, prev.prio);
                prios.insert(next.pid, next.prio);
                running = Some(next.clone());
                depth = 0;
            }
            What::Woken { task, target_cpu } => {
                prios.insert(task.pid, task.prio);
                if target_cpu.unwrap_or(e.cpu) == cpu
                    && running.as_ref().is_none_or(|r| r.pid != task.pid)
                {
                    runnable.retain(|t| t.pid != task.pid);
                    runnable.push(task.clone());
                }
            }
            What::IrqIn(_) | What::SoftIn(_) if e.cpu == cpu => depth += 1,
            What::IrqOut | What::SoftOut if e.cpu == cpu => depth = depth.saturating_sub(1),
            _ => {}
        }
        // The idle CPU runs the most urgent woken task once no handler is open.
        let idle = running.as_ref().is_some_and(|r| r.pid == 0);
        let edge = match &e.what {
            What::IrqOut | What::SoftOut => true,
            What::Woken { .. } => e.in_irq == Some(false),
            What::Other(name) => name == "hrtimer_expire_exit",
            _ => false,
        };
        if idle && depth == 0 && edge && e.cpu == cpu && !runnable.is_empty() {
            let best = (0..runnable.len())
                .min_by_key(|&i| runnable[i].prio)
                .unwrap_or(0);
            let next = runnable.remove(best);
            out.push(switch(e.ts_ns, cpu, running.take(), next.clone()));
            running = Some(next);
            inferred += 1;
        }
    }
    // A task's priority while it ran shows at its switch-out (prev_prio): a priority set while
    // running (sched_setscheduler) is invisible until then.
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
            && p != i32::MIN
        {
            next.prio = p;
        }
    }
    (out, inferred)
}

fn switch(ts_ns: u64, cpu: u32, prev: Option<TaskRef>, next: TaskRef) -> Ev {
    let prev = prev.unwrap_or(TaskRef {
        comm: "unknown".to_string(),
        pid: u32::MAX,
        prio: i32::MIN,
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
