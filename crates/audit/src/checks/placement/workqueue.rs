//! `workqueue.unbound_cpumask` (the global mask every unbound workqueue is cut to) and
//! `workqueue.named` (the workqueues that expose their own `cpumask` in sysfs: `writeback`,
//! `blkcg_punt_bio`, `scsi_tmf_N`, ... from the Linaro 2023 talk).
//!
//! Since Linux 4.2 the kernel runs an unbound workqueue on its own cpumask *intersected*
//! with the global unbound cpumask (falling back to the global mask when they do not
//! overlap), while the per-queue file keeps showing what was written. A per-queue mask wider
//! than a correct global mask is therefore harmless, and only the effective set is judged.

use model::CpuSet;
use model::audit::{Group, Severity};
use sys::irq::to_mask;

use super::common::{count, cpus_word, few, split};
use crate::check::Check;
use crate::context::Ctx;
use crate::outcome::Outcome;

pub(super) const UNBOUND_CPUMASK: Check = Check {
    id: "workqueue.unbound_cpumask",
    title: "unbound workqueue cpumask",
    group: Group::Placement,
    severity: Severity::Warn,
    why: "kernel work queued to unbound workqueues (writeback, crypto, block I/O completion) runs in kworkers on any CPU of this mask",
    run: unbound_cpumask,
};

pub(super) const NAMED: Check = Check {
    id: "workqueue.named",
    title: "per-workqueue cpumasks",
    group: Group::Placement,
    severity: Severity::Warn,
    why: "a workqueue whose effective cpumask covers RT CPUs wakes kworkers there for writeback, block-cgroup and SCSI error work",
    run: named,
};

/// The sysfs directory of workqueues (`/sys/bus/workqueue/devices` links here).
const WQ_DIR: &str = "/sys/devices/virtual/workqueue";
/// The global unbound cpumask.
const UNBOUND: &str = "/sys/devices/virtual/workqueue/cpumask";

/// The global unbound cpumask: `Ok(None)` when the file is absent, `Err` with the outcome to
/// return when it cannot be understood.
fn global_mask(ctx: &Ctx) -> Result<Option<(String, CpuSet)>, Outcome> {
    let Some(raw) = ctx.root().read_trimmed(UNBOUND) else {
        return Ok(None);
    };
    match CpuSet::parse_mask(&raw) {
        Ok(set) => Ok(Some((raw, set))),
        Err(_) => Err(Outcome::unknown(format!(
            "{UNBOUND} holds '{raw}', which is not a CPU mask"
        ))),
    }
}

fn unbound_cpumask(ctx: &Ctx) -> Outcome {
    let s = match split(ctx) {
        Ok(s) => s,
        Err(o) => return o,
    };
    let (raw, mask) = match global_mask(ctx) {
        Ok(Some(v)) => v,
        Ok(None) => {
            return Outcome::unknown(format!(
                "{UNBOUND} is absent (a kernel before 4.2, or sysfs not mounted), so where unbound workqueues run is unknown"
            ));
        }
        Err(o) => return o,
    };
    let on_rt = mask.intersection(&s.rt);
    if on_rt.is_empty() {
        return Outcome::pass(format!(
            "unbound workqueues run on {} (cpumask {raw})",
            cpus_word(&mask.intersection(ctx.online()))
        ))
        .evidence(UNBOUND, raw);
    }
    Outcome::problem(format!(
        "unbound workqueues may run on RT {} (cpumask {raw})",
        cpus_word(&on_rt)
    ))
    .evidence(UNBOUND, raw)
    .fix_write(UNBOUND, to_mask(&s.hk))
    .fix_advice(format!(
        "the write lasts until reboot; recent kernels take workqueue.unbound_cpus={} on the boot command line, and keep nohz_full and isolcpus=domain CPUs out of this mask by themselves",
        s.hk
    ))
}

/// One workqueue with its own cpumask.
struct Queue {
    name: String,
    raw: String,
    effective: CpuSet,
}

fn named(ctx: &Ctx) -> Outcome {
    let s = match split(ctx) {
        Ok(s) => s,
        Err(o) => return o,
    };
    let root = ctx.root();
    let Ok(names) = root.list_dir(WQ_DIR) else {
        return Outcome::unknown(format!(
            "{WQ_DIR} cannot be listed (sysfs not mounted?), so the workqueues are unknown"
        ));
    };
    let global = match global_mask(ctx) {
        Ok(g) => g,
        Err(o) => return o,
    };
    let mut queues = Vec::new();
    for name in names.iter().filter(|n| !n.starts_with("cpumask")) {
        let path = format!("{WQ_DIR}/{name}/cpumask");
        let Some(raw) = root.read_trimmed(&path) else {
            continue;
        };
        let Ok(own) = CpuSet::parse_mask(&raw) else {
            continue;
        };
        let effective = match &global {
            Some((_, g)) => {
                let both = own.intersection(g);
                if both.is_empty() { g.clone() } else { both }
            }
            None => own,
        };
        queues.push(Queue {
            name: name.clone(),
            raw,
            effective,
        });
    }
    if queues.is_empty() {
        return Outcome::pass(format!("no workqueue in {WQ_DIR} exposes its own cpumask"));
    }
    let offenders: Vec<&Queue> = queues
        .iter()
        .filter(|q| !q.effective.intersection(&s.rt).is_empty())
        .collect();
    let global_evidence = |o: Outcome| match &global {
        Some((raw, _)) => o.evidence(UNBOUND, raw.clone()),
        None => o,
    };
    if offenders.is_empty() {
        let outcome = Outcome::pass(format!(
            "{} with a cpumask ({}), none runs on RT {}",
            count(queues.len(), "workqueue", "workqueues"),
            few(queues.iter().map(|q| q.name.as_str())),
            cpus_word(&s.rt)
        ));
        return global_evidence(outcome);
    }
    let on_rt = offenders.iter().fold(CpuSet::new(), |acc, q| {
        acc.union(&q.effective.intersection(&s.rt))
    });
    let mut outcome = Outcome::problem(format!(
        "{} may run on RT {}: {}",
        count(offenders.len(), "workqueue", "workqueues"),
        cpus_word(&on_rt),
        few(offenders.iter().map(|q| q.name.as_str()))
    ));
    for q in offenders.iter().take(super::common::FEW) {
        outcome = outcome.evidence(
            format!("{WQ_DIR}/{}/cpumask", q.name),
            format!("{} (runs on {})", q.raw, q.effective),
        );
    }
    outcome = global_evidence(outcome);
    let hk_mask = to_mask(&s.hk);
    for q in offenders.iter().take(super::common::FEW) {
        outcome = outcome.fix_write(format!("{WQ_DIR}/{}/cpumask", q.name), hk_mask.clone());
    }
    if offenders.len() > super::common::FEW {
        outcome = outcome.fix_command(format!(
            "for w in {WQ_DIR}/*/cpumask; do echo {hk_mask} > $w; done"
        ));
    }
    if global
        .as_ref()
        .is_some_and(|(_, g)| !g.intersection(&s.rt).is_empty())
    {
        outcome = outcome.fix_advice(
            "narrowing the global unbound cpumask (see workqueue.unbound_cpumask) narrows every unbound workqueue at once",
        );
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::super::trees::{tuned, tuned_ctx, untuned, untuned_ctx};
    use super::*;
    use crate::context::Options;
    use model::audit::{Finding, Fix, Status};
    use testkit::FakeRoot;

    fn finding(check: &Check, ctx: &Ctx) -> Finding {
        check.finding((check.run)(ctx))
    }

    #[test]
    fn tuned_board_passes() {
        let fake = tuned();
        let ctx = tuned_ctx(&fake);
        let f = finding(&UNBOUND_CPUMASK, &ctx);
        assert_eq!(f.status, Status::Pass, "{f:?}");
        assert_eq!(f.summary, "unbound workqueues run on CPUs 0-1 (cpumask 03)");
        // blkcg_punt_bio's own mask ff is cut to 0-1 by the global mask.
        let f = finding(&NAMED, &ctx);
        assert_eq!(f.status, Status::Pass, "{f:?}");
        assert_eq!(
            f.summary,
            "2 workqueues with a cpumask (blkcg_punt_bio, writeback), none runs on RT CPUs 2-7"
        );
    }

    #[test]
    fn untuned_box_fires_each() {
        let fake = untuned();
        let ctx = untuned_ctx(&fake);
        let f = finding(&UNBOUND_CPUMASK, &ctx);
        assert_eq!(f.status, Status::Warn, "{f:?}");
        assert_eq!(
            f.summary,
            "unbound workqueues may run on RT CPUs 2-7 (cpumask ff)"
        );
        assert_eq!(
            f.fix[0],
            Fix::Write {
                path: UNBOUND.into(),
                value: "3".into()
            }
        );
        let f = finding(&NAMED, &ctx);
        assert_eq!(f.status, Status::Warn, "{f:?}");
        assert_eq!(
            f.summary,
            "2 workqueues may run on RT CPUs 2-7: scsi_tmf_0, writeback"
        );
        assert!(f.fix.contains(&Fix::Write {
            path: format!("{WQ_DIR}/writeback/cpumask"),
            value: "3".into()
        }));
        assert!(
            f.evidence
                .iter()
                .any(|e| e.source == format!("{WQ_DIR}/scsi_tmf_0/cpumask")
                    && e.value == "ff (runs on 0-7)")
        );
        assert!(f.fix.iter().any(|x| matches!(x, Fix::Advice { .. })));
    }

    #[test]
    fn without_a_global_mask_the_queue_mask_counts() {
        let fake = FakeRoot::new()
            .cpus(4)
            .cmdline("isolcpus=2-3")
            .file(&format!("{WQ_DIR}/writeback/cpumask"), "f\n")
            .file(&format!("{WQ_DIR}/kblockd/max_active"), "256\n");
        let ctx = Ctx::new(fake.root(), Options::default());
        assert_eq!(finding(&UNBOUND_CPUMASK, &ctx).status, Status::Unknown);
        let f = finding(&NAMED, &ctx);
        assert_eq!(f.status, Status::Warn, "{f:?}");
        assert_eq!(f.summary, "1 workqueue may run on RT CPUs 2-3: writeback");
        let fake = FakeRoot::new()
            .cpus(4)
            .cmdline("isolcpus=2-3")
            .file(UNBOUND, "xyz\n");
        let ctx = Ctx::new(fake.root(), Options::default());
        assert_eq!(finding(&UNBOUND_CPUMASK, &ctx).status, Status::Unknown);
        assert_eq!(finding(&NAMED, &ctx).status, Status::Unknown);
        let fake = FakeRoot::new()
            .cpus(4)
            .cmdline("isolcpus=2-3")
            .file(UNBOUND, "3\n");
        let f = finding(&NAMED, &Ctx::new(fake.root(), Options::default()));
        assert_eq!(f.status, Status::Pass);
        assert!(f.summary.contains("no workqueue"), "{}", f.summary);
        // A queue mask disjoint from the global mask falls back to the global mask.
        let fake = FakeRoot::new()
            .cpus(4)
            .cmdline("isolcpus=2-3")
            .file(UNBOUND, "3\n")
            .file(&format!("{WQ_DIR}/writeback/cpumask"), "c\n");
        let f = finding(&NAMED, &Ctx::new(fake.root(), Options::default()));
        assert_eq!(f.status, Status::Pass, "{f:?}");
    }
}
