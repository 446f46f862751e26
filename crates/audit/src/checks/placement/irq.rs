//! `irq.affinity` (where IRQs may go), `irq.effective_affinity` (where they do go, and have
//! fired) and `irq.default_affinity` (where new IRQs start), for the RT CPUs.
//!
//! Not every IRQ can be moved, and those that cannot are left out of the verdicts (and named
//! in the evidence): per-CPU interrupts (GIC PPIs such as `arch_timer` and `arm-pmu`, the
//! Cortex-A9 `twd`, `riscv-timer`, chips that say per-CPU) fire on every CPU by design and
//! writing their affinity fails with EIO; the x86 legacy `timer` and `cascade` lines are
//! fixed; and kernel-managed queue IRQs (NVMe I/O queues, virtio-blk/scsi request queues,
//! `*-qN` and `*-msixN` vectors of multi-queue storage drivers) are spread one queue per CPU
//! by the kernel and refuse writes too. The audit cannot write to tell, so "managed" is a
//! heuristic, reported as "probably managed" with `isolcpus=managed_irq` as the fix: the
//! request queues of virtio-blk/scsi and NVMe I/O queues by their names alone (those drivers
//! always ask for managed vectors; a device with one queue gets one spread over every CPU, so
//! its affinity is not narrower than the online CPUs, and writes to it still fail — seen on
//! this project's VM after `rtlab tune apply`), other queue-style names only with an affinity
//! narrower than the online CPUs. Network queue IRQs such as
//! Intel's `eth0-TxRx-3` are not managed (their drivers only hint an affinity), so they are
//! judged like any other IRQ. IRQs with no handler are skipped.

use model::CpuSet;
use model::audit::{Group, Severity};
use sys::irq::{DEFAULT_SMP_AFFINITY, Irq, to_mask};

use super::common::{Split, count, cpus_word, few, split, split_and_irqs};
use crate::check::Check;
use crate::context::Ctx;
use crate::outcome::Outcome;

pub(super) const AFFINITY: Check = Check {
    id: "irq.affinity",
    title: "IRQ affinity",
    group: Group::Placement,
    severity: Severity::Warn,
    why: "an IRQ allowed on an RT CPU can preempt the RT thread there with its handler at any moment",
    run: affinity,
};

pub(super) const DEFAULT_AFFINITY: Check = Check {
    id: "irq.default_affinity",
    title: "default IRQ affinity",
    group: Group::Placement,
    severity: Severity::Warn,
    why: "IRQs set up later (a module loaded, a device hot-plugged, a queue added) start on the CPUs of the default affinity",
    run: default_affinity,
};

/// Device names of per-CPU interrupts.
const PER_CPU_DEVICES: [&str; 7] = [
    "arch_timer",
    "twd",
    "armada_370_xp_per_cpu_tick",
    "riscv-timer",
    "arm-pmu",
    "riscv-pmu",
    "arch_timer_el2",
];

/// What an IRQ is, for placement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// No handler: nothing runs when it fires.
    Unused,
    /// Cannot be moved (per-CPU or fixed); the reason in words.
    Fixed(&'static str),
    /// Probably spread by the kernel (a managed queue IRQ).
    Managed,
    /// Can be moved by writing its affinity.
    Movable,
}

/// Whether `irq` can be moved off CPUs by writing its affinity, and if not, why (see the
/// module's comment; "managed" is a heuristic).
pub fn classify(irq: &Irq, online: &CpuSet) -> Kind {
    if irq.actions.is_empty() && irq.total() == 0 {
        return Kind::Unused;
    }
    let chip = irq.chip.as_deref().unwrap_or("");
    let chip_lower = chip.to_ascii_lowercase();
    if chip.starts_with("GIC")
        && irq
            .hwirq
            .is_some_and(|h| (16..=31).contains(&h) || (1056..=1119).contains(&h))
    {
        return Kind::Fixed("per-CPU (GIC PPI)");
    }
    if irq
        .actions
        .iter()
        .any(|a| PER_CPU_DEVICES.contains(&a.as_str()))
        || chip_lower.contains("percpu")
        || chip_lower.contains("per-cpu")
        || chip_lower.contains("per_cpu")
    {
        return Kind::Fixed("per-CPU");
    }
    // `IR-IO-APIC` with interrupt remapping.
    if (chip.ends_with("IO-APIC") || chip == "XT-PIC")
        && irq.actions.iter().any(|a| a == "timer" || a == "cascade")
    {
        return Kind::Fixed("fixed (legacy timer or cascade)");
    }
    let narrow = irq
        .affinity
        .as_ref()
        .is_some_and(|a| !a.is_empty() && !online.difference(a).is_empty());
    if irq.actions.iter().any(|a| always_managed(a))
        || (narrow && irq.actions.iter().any(|a| looks_managed(a)))
    {
        return Kind::Managed;
    }
    Kind::Movable
}

/// Queue IRQ names whose drivers always ask for kernel-managed vectors: NVMe I/O queues
/// (`nvme0q3`) and virtio-blk/scsi request queues (`virtio2-req.0`, `virtio1-request.3`).
fn always_managed(name: &str) -> bool {
    looks_managed(name)
        && (name.starts_with("nvme")
            || (name.starts_with("virtio")
                && (name.contains("-req.") || name.contains("-request."))))
}

/// Queue IRQ names the kernel usually manages: `nvme0q3` (not `q0`, the admin queue),
/// `virtio2-req.0`, `virtio1-request.3`, `<dev>-q5`, `mpt3sas0-msix3`.
fn looks_managed(name: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some(rest) = name.strip_prefix("nvme")
        && let Some((ctrl, queue)) = rest.split_once('q')
    {
        return digits(ctrl) && digits(queue) && queue != "0";
    }
    if name.starts_with("virtio") && (name.contains("-req.") || name.contains("-request.")) {
        return true;
    }
    name.rsplit_once('-').is_some_and(|(_, last)| {
        last.strip_prefix('q').is_some_and(digits) || last.strip_prefix("msix").is_some_and(digits)
    })
}

/// The kind of each IRQ of `irqs`, in order.
fn kinds(irqs: &[Irq], online: &CpuSet) -> Vec<Kind> {
    irqs.iter().map(|i| classify(i, online)).collect()
}

/// Evidence naming the IRQs left out of a verdict, if any.
fn exclusions(outcome: Outcome, irqs: &[Irq], kinds: &[Kind]) -> Outcome {
    let fixed: Vec<String> = irqs
        .iter()
        .zip(kinds)
        .filter_map(|(i, k)| match k {
            Kind::Fixed(why) => Some(format!("{} {why}", i.label())),
            _ => None,
        })
        .collect();
    let managed: Vec<String> = irqs
        .iter()
        .zip(kinds)
        .filter(|(_, k)| **k == Kind::Managed)
        .map(|(i, _)| i.label())
        .collect();
    let mut parts = Vec::new();
    if !fixed.is_empty() {
        parts.push(format!("cannot be moved: {}", few(fixed)));
    }
    if !managed.is_empty() {
        parts.push(format!("probably kernel-managed: {}", few(managed)));
    }
    if parts.is_empty() {
        outcome
    } else {
        outcome.evidence("/proc/interrupts (not judged)", parts.join("; "))
    }
}

/// The writes that move `irqs` to the housekeeping CPUs: a few single writes, then one loop.
fn move_fixes(mut outcome: Outcome, irqs: &[&Irq], s: &Split) -> Outcome {
    const SINGLE: usize = 3;
    const LOOP_MAX: usize = 32;
    let hk = s.hk.to_string();
    for irq in irqs.iter().take(SINGLE) {
        outcome = outcome.fix_write(
            format!("/proc/irq/{}/smp_affinity_list", irq.number),
            hk.clone(),
        );
    }
    if irqs.len() > SINGLE {
        let list = if irqs.len() <= LOOP_MAX {
            irqs.iter()
                .map(|i| i.number.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        } else {
            "$(ls /proc/irq | grep -E '^[0-9]+$')".to_string()
        };
        outcome = outcome.fix_command(format!(
            "for i in {list}; do echo {hk} > /proc/irq/$i/smp_affinity_list 2>/dev/null || echo \"IRQ $i: not movable\"; done"
        ));
    }
    outcome.fix_advice(format!(
        "these writes last until reboot; boot with irqaffinity={hk} so IRQs start there, and keep irqbalance from undoing them (see irq.irqbalance)"
    ))
}

fn affinity(ctx: &Ctx) -> Outcome {
    let (s, table) = match split_and_irqs(ctx) {
        Ok(v) => v,
        Err(o) => return o,
    };
    let kinds = kinds(&table.irqs, ctx.online());
    let mut handled = 0;
    let offenders: Vec<&Irq> = table
        .irqs
        .iter()
        .zip(&kinds)
        .filter(|(_, k)| **k != Kind::Unused)
        .inspect(|_| handled += 1)
        .filter(|(i, k)| {
            **k == Kind::Movable
                && i.affinity
                    .as_ref()
                    .is_some_and(|a| !a.intersection(&s.rt).is_empty())
        })
        .map(|(i, _)| i)
        .collect();
    if offenders.is_empty() {
        let outcome = Outcome::pass(format!(
            "{} with a handler, none that can be moved is allowed on RT {}",
            count(handled, "IRQ", "IRQs"),
            cpus_word(&s.rt)
        ));
        return exclusions(outcome, &table.irqs, &kinds);
    }
    let on_rt = offenders.iter().fold(CpuSet::new(), |acc, i| {
        acc.union(&i.affinity.clone().unwrap_or_default().intersection(&s.rt))
    });
    let mut outcome = Outcome::problem(format!(
        "{} may run on RT {}: {}",
        count(offenders.len(), "IRQ", "IRQs"),
        cpus_word(&on_rt),
        few(offenders.iter().map(|i| i.label()))
    ));
    for irq in offenders.iter().take(super::common::FEW) {
        outcome = outcome.evidence(
            format!("/proc/irq/{}/smp_affinity_list", irq.number),
            irq.affinity
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default(),
        );
    }
    if offenders.len() > super::common::FEW {
        outcome = outcome.evidence(
            "/proc/irq/*/smp_affinity_list",
            format!("... and {} more", offenders.len() - super::common::FEW),
        );
    }
    let outcome = exclusions(outcome, &table.irqs, &kinds);
    move_fixes(outcome, &offenders, &s)
}

/// `1443 on CPU 3` or `1443 on CPUs 3-4`.
fn fired_text(irq: &Irq, rt: &CpuSet) -> String {
    let on = irq.fired_on(rt);
    format!("{} on {}", irq.count_on(rt), cpus_word(&on))
}

fn default_affinity(ctx: &Ctx) -> Outcome {
    let s = match split(ctx) {
        Ok(s) => s,
        Err(o) => return o,
    };
    let Some(raw) = ctx.root().read_trimmed(DEFAULT_SMP_AFFINITY) else {
        return Outcome::unknown(format!(
            "{DEFAULT_SMP_AFFINITY} cannot be read (a kernel without SMP IRQ affinity, or no procfs)"
        ));
    };
    let Ok(default) = CpuSet::parse_mask(&raw) else {
        return Outcome::unknown(format!(
            "{DEFAULT_SMP_AFFINITY} holds '{raw}', which is not a CPU mask"
        ));
    };
    let on_rt = default.intersection(&s.rt);
    if on_rt.is_empty() {
        return Outcome::pass(format!(
            "new IRQs start on {} (mask {raw})",
            cpus_word(&default.intersection(ctx.online()))
        ))
        .evidence(DEFAULT_SMP_AFFINITY, raw);
    }
    Outcome::problem(format!(
        "new IRQs start on {} including RT {} (mask {raw})",
        cpus_word(&default),
        cpus_word(&on_rt)
    ))
    .evidence(DEFAULT_SMP_AFFINITY, raw)
    .fix_write(DEFAULT_SMP_AFFINITY, to_mask(&s.hk))
    .fix_boot(format!("irqaffinity={}", s.hk))
}

pub(super) mod effective;
#[cfg(test)]
mod tests;
