//! `irq.effective_affinity`: which IRQs are delivered to the RT CPUs *now*.
//!
//! Three facts disagree after an affinity change, and the check reads each for what it is:
//! - `smp_affinity_list` is where an IRQ may go: written by `rtlab tune apply`, at once.
//! - `effective_affinity_list` is where it is delivered. On x86 the kernel moves an IRQ's
//!   vector only when it next fires (`irq_move_irq`/`irq_complete_move`), so right after a
//!   change this still names the old CPU — the move is pending, not refused.
//! - `/proc/interrupts` counts are since boot: they say an IRQ fired on a CPU once, not that it
//!   fires there now.
//!
//! So an IRQ whose requested affinity still includes RT CPUs and that has fired there fails
//! (its placement allows the RT CPUs, and it uses them). An IRQ whose requested affinity
//! leaves the RT CPUs but whose effective affinity still holds one is *pending*: on the live
//! machine `/proc/interrupts` is sampled over [`WINDOW`] — if it fired on an RT CPU in that
//! window the move is not happening and it fails; otherwise it is reported as pending (a
//! warning: one more interrupt may land on the RT CPU as it moves). Counts from before the
//! change never fail the check by themselves.

use std::collections::BTreeMap;
use std::time::Duration;

use model::CpuSet;
use model::audit::{Group, Severity};
use sys::irq::Irq;

use super::super::common::{count, cpus_word, few, split_and_irqs};
use super::{Kind, exclusions, fired_text, kinds, move_fixes};
use crate::check::Check;
use crate::context::{Ctx, isolcpus_split};
use crate::outcome::Outcome;

/// `irq.effective_affinity` (the catalogue names it from here; the IRQ classification it
/// uses is its parent's).
pub(in crate::checks::placement) const EFFECTIVE_AFFINITY: Check = Check {
    id: "irq.effective_affinity",
    title: "IRQs firing on RT CPUs",
    group: Group::Placement,
    severity: Severity::Fail,
    why: "an IRQ delivered to an RT CPU runs its hard handler there, adding its duration to the RT thread's latency each time it fires",
    run: effective_affinity,
};

/// How long `/proc/interrupts` is watched when an IRQ's move is pending.
pub(crate) const WINDOW: Duration = Duration::from_millis(250);

/// What the window saw: per IRQ, the CPUs it fired on and how often; `Err` says why there is
/// no window (a captured tree, an unreadable file).
struct Window(Result<BTreeMap<u32, Vec<(u32, u64)>>, String>);

impl Window {
    /// The RT CPUs `irq` fired on during the window, when there was one.
    fn fired_on(&self, irq: &Irq, rt: &CpuSet) -> Option<CpuSet> {
        let counts = self.0.as_ref().ok()?;
        Some(
            counts
                .get(&irq.number)
                .into_iter()
                .flatten()
                .filter(|(cpu, _)| rt.contains(*cpu))
                .map(|(cpu, _)| *cpu)
                .collect(),
        )
    }
}

/// The IRQs placed on RT CPUs, by what that means.
#[derive(Default)]
struct Placed<'a> {
    /// Allowed on RT CPUs and fired there, or moved off them and still firing there.
    fired: Vec<&'a Irq>,
    /// Of `fired`, those whose move off the RT CPUs was requested but did not happen.
    stuck: Vec<&'a Irq>,
    /// Probably managed by the kernel.
    managed: Vec<&'a Irq>,
    /// Moved off the RT CPUs; the kernel completes the move at the next interrupt.
    pending: Vec<&'a Irq>,
    /// Placed on RT CPUs, never fired there.
    quiet: Vec<&'a Irq>,
}

/// Whether `set` holds one of `rt`.
fn touches(set: Option<&CpuSet>, rt: &CpuSet) -> bool {
    set.is_some_and(|s| !s.intersection(rt).is_empty())
}

pub(super) fn effective_affinity(ctx: &Ctx) -> Outcome {
    let (s, table) = match split_and_irqs(ctx) {
        Ok(v) => v,
        Err(o) => return o,
    };
    let kinds = kinds(&table.irqs, ctx.online());
    let uses_requested = table.irqs.iter().all(|i| i.effective.is_none());
    let mut p = Placed::default();
    let mut moving = Vec::new();
    for (irq, kind) in table.irqs.iter().zip(&kinds) {
        if matches!(kind, Kind::Unused | Kind::Fixed(_)) {
            continue;
        }
        let placed = irq.effective.as_ref().or(irq.affinity.as_ref());
        if !touches(placed, &s.rt) {
            continue;
        }
        if *kind == Kind::Managed {
            p.managed.push(irq);
        } else if irq.effective.is_some()
            && irq.affinity.is_some()
            && !touches(irq.affinity.as_ref(), &s.rt)
        {
            moving.push(irq);
        } else if !table.counted || !irq.fired_on(&s.rt).is_empty() {
            p.fired.push(irq);
        } else {
            p.quiet.push(irq);
        }
    }
    // Only a pending move needs to know what fires now: the window costs a quarter second,
    // so it is taken only then.
    let window = (!moving.is_empty())
        .then(|| Window(sys::irq::fired_during(ctx.root(), WINDOW).map_err(|e| e.to_string())));
    for irq in moving {
        match window.as_ref().and_then(|w| w.fired_on(irq, &s.rt)) {
            Some(on) if !on.is_empty() => {
                p.fired.push(irq);
                p.stuck.push(irq);
            }
            _ => p.pending.push(irq),
        }
    }
    let outcome = verdict(&p, &s.rt, table.counted, window.as_ref());
    let outcome = evidence(outcome, &p, uses_requested, table.counted, &s.rt);
    let mut outcome = exclusions(outcome, &table.irqs, &kinds);
    if !p.fired.is_empty() {
        outcome = move_fixes(outcome, &p.fired, &s);
    }
    if !p.pending.is_empty() && p.fired.is_empty() {
        outcome = outcome.fix_advice(
            "nothing to change: each pending IRQ moves when it next fires; run the audit again once the devices have been used",
        );
    }
    if !p.managed.is_empty() {
        outcome = managed_fixes(ctx, outcome, &s.rt);
    }
    outcome
}

/// An IRQ's label, with what it fired on the RT CPUs where it did and that is known.
fn counted_label(i: &Irq, rt: &CpuSet, counted: bool) -> String {
    if counted && i.count_on(rt) > 0 {
        format!("{} {}", i.label(), fired_text(i, rt))
    } else {
        i.label()
    }
}

/// The summary and status.
fn verdict(p: &Placed<'_>, rt: &CpuSet, counted: bool, window: Option<&Window>) -> Outcome {
    let watched = match window.map(|w| &w.0) {
        Some(Ok(_)) => format!(
            "nothing fired on RT CPUs in {} ms of watching /proc/interrupts",
            WINDOW.as_millis()
        ),
        Some(Err(why)) => format!("whether they fire now is not known ({why})"),
        None => String::new(),
    };
    if !p.fired.is_empty() {
        let verb = if p.fired.len() == 1 { "is" } else { "are" };
        let what = if counted {
            format!("{verb} delivered to RT CPUs and have fired there")
        } else {
            format!(
                "{verb} delivered to RT CPUs (/proc/interrupts unreadable, so whether they fired is unknown)"
            )
        };
        let names = few(p.fired.iter().map(|i| {
            let stuck = if p.stuck.iter().any(|x| x.number == i.number) {
                " (moved off the RT CPUs, yet still firing there)"
            } else {
                ""
            };
            if counted {
                format!("{} {}{stuck}", i.label(), fired_text(i, rt))
            } else {
                format!("{}{stuck}", i.label())
            }
        }));
        // The kernel-managed ones beside them, with what they fired: the busiest IRQ on an RT
        // CPU is often one (a disk's request queue), and a summary without it misleads.
        let managed = if p.managed.is_empty() {
            String::new()
        } else {
            format!(
                "; and probably kernel-managed (moved only by isolcpus=managed_irq at boot): {}",
                few(p.managed.iter().map(|i| counted_label(i, rt, counted)))
            )
        };
        let o = Outcome::problem(format!(
            "{} {what}: {names}{managed}",
            count(p.fired.len(), "IRQ", "IRQs")
        ));
        return if counted {
            o
        } else {
            o.with_severity(Severity::Warn)
        };
    }
    let mut warnings = Vec::new();
    if !p.pending.is_empty() {
        warnings.push(format!(
            "{} moving off RT {}: their affinity leaves the RT CPUs and the kernel delivers each to its new CPU from its next interrupt (x86 moves IRQs lazily); {watched}: {}",
            count(p.pending.len(), "IRQ is", "IRQs are"),
            cpus_word(rt),
            few(p.pending.iter().map(|i| i.label()))
        ));
    }
    if !p.managed.is_empty() {
        let only = if p.pending.is_empty() { "only " } else { "" };
        warnings.push(format!(
            "{only}probably kernel-managed IRQs are delivered to RT CPUs: {}",
            few(p.managed.iter().map(|i| counted_label(i, rt, counted)))
        ));
    }
    if !warnings.is_empty() {
        return Outcome::warn(warnings.join("; "));
    }
    let summary = if p.quiet.is_empty() {
        format!(
            "no IRQ that can be moved is delivered to RT {}",
            cpus_word(rt)
        )
    } else {
        format!(
            "{} placed on RT CPUs but never fired there: {}",
            count(p.quiet.len(), "IRQ is", "IRQs are"),
            few(p.quiet.iter().map(|i| i.label()))
        )
    };
    Outcome::pass(summary)
}

/// The files behind the verdict.
fn evidence(
    mut outcome: Outcome,
    p: &Placed<'_>,
    uses_requested: bool,
    counted: bool,
    rt: &CpuSet,
) -> Outcome {
    if p.fired.is_empty() && p.managed.is_empty() && p.pending.is_empty() {
        return outcome;
    }
    let file = if uses_requested {
        outcome = outcome.evidence(
            "/proc/irq/*/effective_affinity_list",
            "absent on this kernel; the requested smp_affinity_list stands in",
        );
        "smp_affinity_list"
    } else {
        "effective_affinity_list"
    };
    let describe = |irq: &Irq| {
        let placed = irq
            .effective
            .as_ref()
            .or(irq.affinity.as_ref())
            .map(ToString::to_string)
            .unwrap_or_default();
        if counted {
            format!(
                "{placed}; /proc/interrupts since boot: {}",
                fired_text(irq, rt)
            )
        } else {
            placed
        }
    };
    for irq in p
        .fired
        .iter()
        .chain(&p.managed)
        .take(super::super::common::FEW)
    {
        outcome = outcome.evidence(format!("/proc/irq/{}/{file}", irq.number), describe(irq));
    }
    for irq in p.pending.iter().take(super::super::common::FEW) {
        let requested = irq
            .affinity
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        outcome = outcome.evidence(
            format!("/proc/irq/{}/smp_affinity_list", irq.number),
            format!("{requested} (requested); effective still {}", describe(irq)),
        );
    }
    if !p.managed.is_empty() {
        outcome = outcome.evidence(
            "probably kernel-managed (cannot be moved from user space)",
            few(p.managed.iter().map(|i| i.label())),
        );
    }
    outcome
}

/// What to do about managed queue IRQs on RT CPUs.
fn managed_fixes(ctx: &Ctx, mut outcome: Outcome, rt: &CpuSet) -> Outcome {
    let (flags, _) = ctx
        .cmdline()
        .value("isolcpus")
        .map(isolcpus_split)
        .unwrap_or_default();
    if !flags.contains(&"managed_irq") {
        outcome = outcome.fix_boot(format!("isolcpus=managed_irq,domain,{rt}"));
    }
    outcome.fix_advice(
        "managed queue IRQs follow the CPUs that submit I/O: with isolcpus=managed_irq the kernel keeps them on housekeeping CPUs whenever a queue has one; otherwise keep I/O submission off the RT CPUs",
    )
}
