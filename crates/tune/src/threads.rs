//! Steps on single threads for `tune apply`, `revert` and `status`: an IRQ thread's scheduling
//! policy (the IRQ rules) and a kernel thread's CPU affinity (kthreadd and the unbound kernel
//! threads a cpuset cannot move). Each records the thread's name with the original, so a thread
//! id the kernel has since given to another thread is left alone.

use model::CpuSet;
use model::tune::Change;
use sys::Root;

use crate::journal::{Entry, Journal};
use crate::outcome::{Outcome, Standing};
use crate::rules;

/// What is set on the thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Knob {
    /// Policy and priority, as `FIFO 80`.
    Policy,
    /// Allowed CPUs, as a list.
    Affinity,
}

/// The thread's name and the knob's value now, in the journal's words.
fn read(root: &Root, tid: u32, knob: Knob) -> Option<(String, Option<String>)> {
    let task = sys::tasks::read_thread(root, tid, tid)?;
    let value = match knob {
        Knob::Policy => rules::sched_of(&task).map(|s| s.to_string()),
        Knob::Affinity => task.cpus_allowed.as_ref().map(CpuSet::to_string),
    };
    Some((task.comm, value))
}

/// Whether two values of the knob mean the same.
fn same(knob: Knob, a: &str, b: &str) -> bool {
    match knob {
        Knob::Policy => a == b,
        Knob::Affinity => a.parse::<CpuSet>().ok() == b.parse::<CpuSet>().ok(),
    }
}

fn set(tid: u32, knob: Knob, value: &str) -> Result<(), String> {
    match knob {
        Knob::Policy => {
            let s = rules::parse_sched(value).ok_or_else(|| format!("cannot read `{value}`"))?;
            sys::sched::set_thread_scheduler(tid, s.policy, s.priority).map_err(|e| e.to_string())
        }
        Knob::Affinity => {
            let cpus: CpuSet = value.parse().map_err(|e| format!("`{value}`: {e}"))?;
            sys::sched::set_thread_affinity(tid, &cpus).map_err(|e| e.to_string())
        }
    }
}

fn entry(knob: Knob, tid: u32, comm: String, original: String, new: String) -> Entry {
    match knob {
        Knob::Policy => Entry::Policy {
            tid,
            comm,
            original,
            new,
        },
        Knob::Affinity => Entry::Affinity {
            tid,
            comm,
            original,
            new,
        },
    }
}

/// One step of apply: record the thread's value, set the new one, read it back.
pub(crate) fn apply_step(
    root: &Root,
    c: &Change,
    knob: Knob,
    journal: &mut Journal,
    out: &mut Outcome,
) -> Result<(), String> {
    let what = format!("{} ({})", c.path, c.reason);
    if !root.is_host() {
        out.skipped
            .push(format!("{what}: a captured tree has no threads to change"));
        return Ok(());
    }
    let tid = c.path.strip_prefix("/proc/").and_then(|t| t.parse().ok());
    let (Some(tid), Some(want)) = (tid, c.new.clone()) else {
        out.refused
            .push(format!("{what}: not a thread and a value"));
        return Ok(());
    };
    let Some((comm, Some(now))) = read(root, tid, knob) else {
        out.skipped.push(format!("{what}: the thread is gone"));
        return Ok(());
    };
    if same(knob, &now, &want) {
        out.skipped.push(format!("{what}: already {want}"));
        return Ok(());
    }
    journal.record(&entry(knob, tid, comm.clone(), now.clone(), want.clone()))?;
    let who = format!("{comm} (thread {tid})");
    match set(tid, knob, &want) {
        Ok(()) => match read(root, tid, knob) {
            Some((_, Some(back))) if same(knob, &back, &want) => {
                out.done.push(format!("{who}: {now} -> {want}"))
            }
            back => out.refused.push(format!(
                "{who}: set to {want} but reads back {}",
                back.and_then(|b| b.1)
                    .unwrap_or_else(|| "nothing".to_string())
            )),
        },
        Err(e) => out.refused.push(format!("{who}: {e}")),
    }
    Ok(())
}

/// One step of revert: the thread gets its original back, if it is still the same thread.
pub(crate) fn revert_step(
    root: &Root,
    knob: Knob,
    tid: u32,
    comm: &str,
    original: &str,
    out: &mut Outcome,
) {
    let who = format!("{comm} (thread {tid})");
    match read(root, tid, knob) {
        None if successors(root, knob, (tid, comm), original, out) => {}
        None => out.skipped.push(format!("{who}: gone")),
        Some((now_comm, _)) if now_comm != comm => {
            if !successors(root, knob, (tid, comm), original, out) {
                out.skipped
                    .push(format!("{who}: gone (the id is now {now_comm})"));
            }
        }
        Some((_, Some(now))) if same(knob, &now, original) => {
            out.skipped.push(format!("{who}: already {original}"))
        }
        Some(_) => match set(tid, knob, original) {
            Ok(()) => out.done.push(format!("{who}: back to {original}")),
            Err(e) => out.refused.push(format!("{who}: {e}")),
        },
    }
}

/// A kernel thread the tuning changed that is gone by its id: the kernel may have started
/// another of its name since (khugepaged, when transparent hugepages went off and back on),
/// born with what the tuning set (kthreadd's narrowed affinity). Each such thread whose knob
/// differs from the original gets the original; whether any was found.
fn successors(
    root: &Root,
    knob: Knob,
    (tid, comm): (u32, &str),
    original: &str,
    out: &mut Outcome,
) -> bool {
    let Ok(threads) = sys::tasks::all_threads(root) else {
        return false;
    };
    let mut found = false;
    for t in threads
        .iter()
        .filter(|t| t.comm == comm && t.tid != tid && t.is_kernel_thread())
    {
        found = true;
        let who = format!(
            "{comm} (thread {tid}, gone; started again as thread {})",
            t.tid
        );
        match read(root, t.tid, knob) {
            Some((_, Some(now))) if same(knob, &now, original) => {
                out.skipped.push(format!("{who}: already {original}"));
            }
            Some(_) => match set(t.tid, knob, original) {
                Ok(()) => out.done.push(format!("{who}: back to {original}")),
                Err(e) => out.refused.push(format!("{who}: {e}")),
            },
            None => {}
        }
    }
    found
}

/// After a revert: the thread (or the one the kernel started again under its name) set back
/// to `original` once more where something since undid it; silent where it is right.
pub(crate) fn recheck(
    root: &Root,
    knob: Knob,
    (tid, comm): (u32, &str),
    original: &str,
    out: &mut Outcome,
) {
    let who = format!("{comm} (thread {tid})");
    match read(root, tid, knob) {
        Some((c, Some(now))) if c == comm && !same(knob, &now, original) => {
            match set(tid, knob, original) {
                Ok(()) => out.done.push(format!(
                    "{who}: {now} again after the revert, back to {original}"
                )),
                Err(e) => out.refused.push(format!(
                    "{who}: is {now} after the revert, was {original}: {e}"
                )),
            }
        }
        Some((c, _)) if c == comm => {}
        _ => {
            let mut quiet = Outcome::default();
            successors(root, knob, (tid, comm), original, &mut quiet);
            out.done.append(&mut quiet.done);
            out.refused.append(&mut quiet.refused);
        }
    }
}

/// How a thread step of the journal stands now.
pub(crate) fn standing(
    root: &Root,
    knob: Knob,
    tid: u32,
    comm: &str,
    original: &str,
    new: &str,
) -> Standing {
    let (state, now) = match read(root, tid, knob) {
        Some((c, Some(now))) if c == comm => {
            let state = if same(knob, &now, new) {
                "applied"
            } else if same(knob, &now, original) {
                "original"
            } else {
                "drifted"
            };
            (state, Some(now))
        }
        _ => ("gone", None),
    };
    Standing {
        path: format!("/proc/{tid} ({comm})"),
        state: state.to_string(),
        now,
    }
}
