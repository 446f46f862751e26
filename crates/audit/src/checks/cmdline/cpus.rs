//! The boot parameters that take CPU lists, judged against the real-time CPUs: `isolcpus=`
//! (with its flags), `nohz_full=`, `rcu_nocbs=` (+ `rcu_nocb_poll`), their consistency, and
//! `irqaffinity=`.

use model::CpuSet;
use model::audit::Fix;

use super::common::{CMDLINE, CpuParam, cpu_param, possible, seen, unreadable};
use crate::context::{Ctx, isolcpus_split};
use crate::outcome::Outcome;

/// Lists the kernel prints of what it applied.
const SYS_ISOLATED: &str = "/sys/devices/system/cpu/isolated";
const SYS_NOHZ_FULL: &str = "/sys/devices/system/cpu/nohz_full";

/// The CPUs of valid cgroup v2 cpuset partitions (and v1 exclusive cpusets without load
/// balancing at the root), read once per audit.
struct Partitions(Vec<(String, CpuSet)>);

fn partitions(ctx: &Ctx) -> std::rc::Rc<Partitions> {
    ctx.memo(|ctx| {
        let v2 = sys::partition::cpuset_partitions(ctx.root())
            .into_iter()
            .filter(|p| p.is_valid())
            .map(|p| (p.path.display().to_string(), p.cpus));
        let v1 = sys::partition::v1_exclusive_cpusets(ctx.root())
            .into_iter()
            .map(|(path, cpus)| (format!("{}, a v1 exclusive cpuset", path.display()), cpus));
        Partitions(v2.chain(v1).collect())
    })
}

/// The real-time CPUs, or why a check cannot judge without them.
fn rt_cpus(ctx: &Ctx) -> Result<CpuSet, Outcome> {
    if let Some(o) = unreadable(ctx) {
        return Err(o);
    }
    ctx.rt_cpus_or_unknown().cloned()
}

/// The evidence line naming where the real-time CPUs came from.
fn rt_source(ctx: &Ctx) -> (String, String) {
    let rt = ctx.rt();
    (
        "real-time CPUs".to_string(),
        format!("{} (from {})", rt.cpus, rt.source),
    )
}

/// `isolcpus=` rebuilt with `domain` and `managed_irq` among its flags and `cpus` as list.
fn isolcpus_fix(flags: &[&str], cpus: &CpuSet) -> String {
    let mut all: Vec<&str> = flags.to_vec();
    for needed in ["managed_irq", "domain"] {
        if !all.contains(&needed) {
            all.push(needed);
        }
    }
    format!("isolcpus={},{cpus}", all.join(","))
}

pub(super) fn isolcpus(ctx: &Ctx) -> Outcome {
    let rt = match rt_cpus(ctx) {
        Ok(rt) => rt,
        Err(o) => return o,
    };
    let parts = partitions(ctx);
    let in_partitions = parts
        .0
        .iter()
        .fold(CpuSet::new(), |acc, (_, cpus)| acc.union(cpus));
    let (src, val) = rt_source(ctx);
    let value = ctx.cmdline().value("isolcpus");
    let Some(value) = value else {
        return without_isolcpus(ctx, &rt, &parts, &in_partitions, (src, val));
    };
    let (flags, list) = isolcpus_split(value);
    let possible = possible(ctx);
    let listed = match super::common::kernel_cpu_list(list, &possible) {
        Ok(cpus) => cpus,
        Err(e) => {
            return Outcome::problem(format!(
                "isolcpus={value} is not a CPU list the kernel accepts ({e}): it is ignored"
            ))
            .evidence(CMDLINE, seen(ctx, &["isolcpus"]))
            .fix_boot(isolcpus_fix(&flags, &rt));
        }
    };
    let mut problems = list_problems(ctx, &rt, &listed, &possible, &in_partitions);
    let domain = flags.is_empty() || flags.contains(&"domain");
    problems.extend(flag_problems(&flags, domain, &listed));
    let mut outcome_evidence = vec![(CMDLINE.to_string(), format!("isolcpus={value}"))];
    if domain
        && let Some(applied) = ctx.root().read_trimmed(SYS_ISOLATED)
        && let Ok(applied) = CpuSet::parse_list(&applied)
    {
        let expected = listed.intersection(&possible);
        if applied != expected {
            problems.push(format!(
                "the kernel isolated {} ({SYS_ISOLATED}), not {expected}",
                if applied.is_empty() {
                    "no CPU".to_string()
                } else {
                    applied.to_string()
                }
            ));
        }
        outcome_evidence.push((SYS_ISOLATED.to_string(), applied.to_string()));
    }
    outcome_evidence.push((src, val));
    let mut outcome = if problems.is_empty() {
        Outcome::pass(format!(
            "{} {} isolated by isolcpus={value}",
            rt_named(&rt),
            are(&rt)
        ))
    } else {
        let mut wanted = listed.union(&rt);
        if !possible.is_empty() {
            wanted = wanted.intersection(&possible);
        }
        Outcome::problem(format!("isolcpus={value}: {}", problems.join("; ")))
            .fix_boot(isolcpus_fix(&flags, &wanted))
    };
    for (source, value) in outcome_evidence {
        outcome = outcome.evidence(source, value);
    }
    outcome
}

/// No `isolcpus=`: a pass when cpuset partitions hold every RT CPU, else the problem with
/// both fixes. `source` is the evidence line naming where the RT CPUs came from.
fn without_isolcpus(
    ctx: &Ctx,
    rt: &CpuSet,
    parts: &Partitions,
    in_partitions: &CpuSet,
    (src, val): (String, String),
) -> Outcome {
    if rt.is_subset(in_partitions) {
        let paths: Vec<&str> = parts
            .0
            .iter()
            .filter(|(_, c)| !c.intersection(rt).is_empty())
            .map(|(p, _)| p.as_str())
            .collect();
        return Outcome::pass(format!(
            "{} {} set apart by a cpuset partition ({}); isolcpus=managed_irq,{rt} would also keep managed IRQs off them",
            rt_named(rt),
            are(rt),
            paths.join(", ")
        ))
        .evidence(src, val);
    }
    let missing = rt.difference(in_partitions);
    Outcome::problem(format!(
        "{} {} not isolated: no isolcpus= and no valid cpuset partition holds {}",
        rt_named(&missing),
        are(&missing),
        verb(&missing, "it", "them")
    ))
    .evidence(CMDLINE, seen(ctx, &["isolcpus"]))
    .evidence(src, val)
    .fix_boot(isolcpus_fix(&[], rt))
    .fix_advice(run_time_isolation(ctx, rt))
}

/// How to set `rt` apart without a reboot on this machine: `rtlab tune apply` anywhere, and
/// the cgroup v2 partition by hand only where /sys/fs/cgroup is cgroup v2 with the cpuset
/// controller.
fn run_time_isolation(ctx: &Ctx, rt: &CpuSet) -> String {
    let v2_cpuset = ctx
        .root()
        .read("/sys/fs/cgroup/cgroup.controllers")
        .is_ok_and(|c| c.split_whitespace().any(|w| w == "cpuset"));
    if v2_cpuset {
        format!(
            "or set them apart at run time: `rtlab tune apply --rt-cpus {rt}` (reversible), or by hand a cgroup v2 cpuset partition: `echo +cpuset > /sys/fs/cgroup/cgroup.subtree_control && mkdir /sys/fs/cgroup/rt && echo {rt} > /sys/fs/cgroup/rt/cpuset.cpus && echo root > /sys/fs/cgroup/rt/cpuset.cpus.partition`"
        )
    } else if ctx.root().exists("/sys/fs/cgroup/cpuset/cpuset.cpus") {
        format!(
            "or set them apart at run time: `rtlab tune apply --rt-cpus {rt}` (reversible) makes an exclusive cpuset without load balancing in the cgroup v1 cpuset hierarchy (this machine has no cgroup v2 cpuset controller at /sys/fs/cgroup)"
        )
    } else {
        "this machine has no cpuset controller (neither cgroup v2's nor a v1 cpuset hierarchy at /sys/fs/cgroup/cpuset), so only the boot parameter sets them apart".to_string()
    }
}

/// What is wrong with the CPUs `isolcpus=` lists: CPUs that do not exist, offline CPUs,
/// RT CPUs neither listed nor in a cpuset partition.
fn list_problems(
    ctx: &Ctx,
    rt: &CpuSet,
    listed: &CpuSet,
    possible: &CpuSet,
    in_partitions: &CpuSet,
) -> Vec<String> {
    let mut problems = Vec::new();
    let nonexistent = if possible.is_empty() {
        CpuSet::new()
    } else {
        listed.difference(possible)
    };
    if !nonexistent.is_empty() {
        problems.push(format!(
            "it lists CPUs {nonexistent} that do not exist (possible: {possible}); kernels refuse a list beyond their CPU count and ignore the whole parameter"
        ));
    }
    let offline = listed.intersection(possible).difference(ctx.online());
    if !offline.is_empty() && !ctx.online().is_empty() {
        problems.push(format!("it lists offline CPUs {offline}"));
    }
    let not_isolated = rt.difference(&listed.union(in_partitions));
    if !not_isolated.is_empty() {
        problems.push(format!(
            "{} {} not in it",
            rt_named(&not_isolated),
            are(&not_isolated)
        ));
    }
    problems
}

/// What is wrong with the flags of `isolcpus=`: no `domain` (when other flags are given),
/// no `managed_irq`.
fn flag_problems(flags: &[&str], domain: bool, listed: &CpuSet) -> Vec<String> {
    let mut problems = Vec::new();
    if !domain {
        problems.push(format!(
            "its flags ({}) leave out domain, so the scheduler still balances tasks onto CPUs {listed}",
            flags.join(",")
        ));
    }
    if !flags.contains(&"managed_irq") {
        problems.push(
            "no managed_irq flag: managed IRQs (multi-queue NVMe, network queues) may still be placed on the isolated CPUs"
                .to_string(),
        );
    }
    problems
}

pub(super) fn nohz_full(ctx: &Ctx) -> Outcome {
    let rt = match rt_cpus(ctx) {
        Ok(rt) => rt,
        Err(o) => return o,
    };
    let (src, val) = rt_source(ctx);
    let evidence = |o: Outcome| {
        o.evidence(CMDLINE, seen(ctx, &["nohz_full"]))
            .evidence(src.clone(), val.clone())
    };
    // The file exists only with CONFIG_NO_HZ_FULL: without it nohz_full= is ignored.
    let built = ctx.root().exists(SYS_NOHZ_FULL);
    const ONLY_FOR: &str = "worth it only when each RT CPU runs a single task that rarely enters the kernel: nohz_full makes every kernel entry, exit and context switch on those CPUs costlier";
    let given = match cpu_param(ctx, "nohz_full") {
        CpuParam::Absent | CpuParam::Bare => {
            return evidence(Outcome::problem(format!(
                "{} {} the periodic scheduler tick (no nohz_full=)",
                rt_named(&rt),
                verb(&rt, "keeps", "keep")
            )))
            .with_fixes(tickless_fixes(built, &rt))
            .fix_advice(ONLY_FOR);
        }
        CpuParam::Bad(e) => {
            return evidence(Outcome::problem(format!(
                "nohz_full= is not a CPU list ({e}): the kernel ignores it"
            )))
            .with_fixes(tickless_fixes(built, &rt));
        }
        CpuParam::List(cpus) => {
            let missing = rt.difference(&cpus);
            if !missing.is_empty() {
                return evidence(Outcome::problem(format!(
                    "{} {} not in nohz_full={cpus} and {} the tick",
                    rt_named(&missing),
                    are(&missing),
                    verb(&missing, "keeps", "keep")
                )))
                .with_fixes(tickless_fixes(built, &cpus.union(&rt)))
                .fix_advice(ONLY_FOR);
            }
            cpus
        }
    };
    // The kernel says what it applied; the file exists only with CONFIG_NO_HZ_FULL.
    match ctx.root().read_trimmed(SYS_NOHZ_FULL) {
        None => evidence(Outcome::problem(format!(
            "nohz_full={given} is given but {SYS_NOHZ_FULL} is absent: the kernel was built without CONFIG_NO_HZ_FULL and keeps the tick"
        )))
        .fix_config("CONFIG_NO_HZ_FULL=y"),
        Some(text) => {
            let applied = CpuSet::parse_list(&text).unwrap_or_default();
            let outcome = if rt.is_subset(&applied) {
                Outcome::pass(format!(
                    "{} {} without the periodic tick (nohz_full={given})",
                    rt_named(&rt),
                    verb(&rt, "runs", "run")
                ))
            } else {
                Outcome::problem(format!(
                    "nohz_full={given} is given but the kernel runs {} tickless",
                    if applied.is_empty() { "no CPU".to_string() } else { applied.to_string() }
                ))
                .fix_advice("the kernel refused part of the list: see `dmesg | grep -i -e housekeeping -e nohz`")
            };
            evidence(outcome).evidence(SYS_NOHZ_FULL, text)
        }
    }
}

/// How to run `cpus` tickless: the boot parameter where the kernel has NO_HZ_FULL (`built`),
/// else the kernel option first (the parameter alone would be ignored).
fn tickless_fixes(built: bool, cpus: &CpuSet) -> Vec<Fix> {
    if built {
        return vec![Fix::BootParam {
            param: format!("nohz_full={cpus}"),
        }];
    }
    vec![
        Fix::KernelConfig {
            setting: "CONFIG_NO_HZ_FULL=y".into(),
        },
        Fix::Advice {
            text: format!(
                "this kernel was built without CONFIG_NO_HZ_FULL ({SYS_NOHZ_FULL} is absent), so \
                 nohz_full= would be ignored: boot a kernel with it, then add nohz_full={cpus}"
            ),
        },
    ]
}

/// The CPUs whose RCU callbacks are offloaded: `rcu_nocbs=` plus `nohz_full=` (the kernel
/// adds the nohz_full CPUs to the no-callback mask itself).
fn offloaded(ctx: &Ctx) -> Result<CpuSet, String> {
    let nohz = cpu_param(ctx, "nohz_full").cpus();
    match cpu_param(ctx, "rcu_nocbs") {
        CpuParam::Bad(e) => Err(e),
        other => Ok(other.cpus().union(&nohz)),
    }
}

pub(super) fn rcu_nocbs(ctx: &Ctx) -> Outcome {
    let rt = match rt_cpus(ctx) {
        Ok(rt) => rt,
        Err(o) => return o,
    };
    let (src, val) = rt_source(ctx);
    let given = cpu_param(ctx, "rcu_nocbs");
    let evidence = |o: Outcome| {
        o.evidence(CMDLINE, seen(ctx, &["rcu_nocbs", "nohz_full"]))
            .evidence(src.clone(), val.clone())
    };
    let offloaded = match offloaded(ctx) {
        Ok(cpus) => cpus,
        Err(e) => {
            return evidence(Outcome::problem(format!(
                "rcu_nocbs= is not a CPU list ({e}): the kernel ignores it"
            )))
            .fix_boot(format!("rcu_nocbs={rt}"));
        }
    };
    let missing = rt.difference(&offloaded);
    if missing.is_empty() {
        let via = if rt.is_subset(&given.cpus()) {
            "rcu_nocbs"
        } else {
            "rcu_nocbs and nohz_full, which the kernel offloads too"
        };
        return evidence(Outcome::pass(format!(
            "{} {} RCU callbacks to rcuo kthreads ({via})",
            rt_named(&rt),
            verb(&rt, "hands its", "hand their")
        )));
    }
    let why = match given {
        CpuParam::Bare => {
            "rcu_nocbs without a list offloads no CPU at boot (it only allows offloading at run time)"
        }
        CpuParam::Absent => "no rcu_nocbs=",
        _ => "they are not in rcu_nocbs=",
    };
    evidence(Outcome::problem(format!(
        "{} {} own RCU callbacks in softirq context: {why}",
        rt_named(&missing),
        verb(&missing, "runs its", "run their")
    )))
    .fix_boot(format!("rcu_nocbs={}", given.cpus().union(&rt)))
}

pub(super) fn rcu_nocb_poll(ctx: &Ctx) -> Outcome {
    if let Some(o) = unreadable(ctx) {
        return o;
    }
    let evidence = |o: Outcome| {
        o.evidence(
            CMDLINE,
            seen(ctx, &["rcu_nocb_poll", "rcu_nocbs", "nohz_full"]),
        )
    };
    let offloaded = offloaded(ctx).unwrap_or_default();
    if offloaded.is_empty() {
        return evidence(Outcome::pass(
            "no CPU offloads RCU callbacks, so rcu_nocb_poll would change nothing (see cmdline.rcu_nocbs)",
        ));
    }
    if ctx.cmdline().has("rcu_nocb_poll") {
        return evidence(Outcome::pass(format!(
            "rcu_nocb_poll: the RCU kthreads poll, so offloaded CPUs {offloaded} never wake them"
        )));
    }
    evidence(Outcome::problem(format!(
        "offloaded CPUs {offloaded} still wake the RCU grace-period kthreads when they queue callbacks (no rcu_nocb_poll)"
    )))
    .fix_boot("rcu_nocb_poll")
    .fix_advice("the polling kthreads cost some housekeeping CPU time in exchange (for example rcu_nocbs=2-7 rcu_nocb_poll)")
}

pub(super) fn nohz_full_rcu(ctx: &Ctx) -> Outcome {
    if let Some(o) = unreadable(ctx) {
        return o;
    }
    let evidence = |o: Outcome| o.evidence(CMDLINE, seen(ctx, &["nohz_full", "rcu_nocbs"]));
    let nohz = cpu_param(ctx, "nohz_full");
    let nocbs = cpu_param(ctx, "rcu_nocbs");
    let (CpuParam::List(nohz), CpuParam::List(_) | CpuParam::Bare) = (&nohz, &nocbs) else {
        return evidence(Outcome::pass(
            "nothing to compare: nohz_full= and rcu_nocbs= are not both given (the kernel offloads nohz_full CPUs by itself)",
        ));
    };
    let nocbs = nocbs.cpus();
    let missing = nohz.difference(&nocbs);
    if missing.is_empty() {
        return evidence(Outcome::pass(format!(
            "nohz_full={nohz} is within rcu_nocbs={nocbs}"
        )));
    }
    evidence(Outcome::problem(format!(
        "nohz_full CPUs {missing} are not in rcu_nocbs= (the kernel offloads them anyway, but the command line disagrees with itself)"
    )))
    .fix_boot(format!("rcu_nocbs={}", nocbs.union(nohz)))
}

pub(super) fn irqaffinity(ctx: &Ctx) -> Outcome {
    let rt = match rt_cpus(ctx) {
        Ok(rt) => rt,
        Err(o) => return o,
    };
    let (src, val) = rt_source(ctx);
    let housekeeping = ctx.online().difference(&rt);
    let evidence = |o: Outcome| {
        o.evidence(CMDLINE, seen(ctx, &["irqaffinity"]))
            .evidence(src.clone(), val.clone())
    };
    let fix = |o: Outcome| {
        if housekeeping.is_empty() {
            o.fix_advice(format!(
                "every online CPU is a real-time CPU ({rt}): keep at least one for housekeeping and IRQs"
            ))
        } else {
            o.fix_boot(format!("irqaffinity={housekeeping}"))
        }
    };
    match cpu_param(ctx, "irqaffinity") {
        CpuParam::Absent | CpuParam::Bare => fix(evidence(Outcome::warn(format!(
            "no irqaffinity=: IRQs set up at boot may start on {}",
            rt_named(&rt)
        )))),
        CpuParam::Bad(e) => fix(evidence(Outcome::warn(format!(
            "irqaffinity= is not a CPU list ({e}): the kernel keeps IRQs on all CPUs"
        )))),
        CpuParam::List(cpus) => {
            // kernel/irq/irqdesc.c irq_affinity_setup() always adds the boot CPU.
            let effective = cpus.union(&CpuSet::from_cpus([0]));
            let overlap = effective.intersection(&rt);
            if overlap.is_empty() {
                return evidence(Outcome::pass(format!(
                    "irqaffinity={cpus} keeps new IRQs off {}",
                    rt_named(&rt)
                )));
            }
            let boot_only = !cpus.contains(0) && overlap == CpuSet::from_cpus([0]);
            let summary = if boot_only {
                format!(
                    "irqaffinity={cpus}, but the kernel always adds the boot CPU 0, which is an RT CPU"
                )
            } else {
                format!(
                    "irqaffinity={cpus} lets IRQs start on {}",
                    rt_named(&overlap)
                )
            };
            fix(evidence(Outcome::problem(summary)))
        }
    }
}

/// `RT CPU 3` or `RT CPUs 2-7`.
fn rt_named(cpus: &CpuSet) -> String {
    format!("RT {}", cpus.with_noun())
}

/// The verb form that agrees with a CPU set as subject.
fn verb<'a>(cpus: &CpuSet, one: &'a str, many: &'a str) -> &'a str {
    if cpus.len() == 1 { one } else { many }
}

/// `is` or `are` for a CPU set as subject.
fn are(cpus: &CpuSet) -> &'static str {
    verb(cpus, "is", "are")
}

#[cfg(test)]
#[path = "cpus_tests.rs"]
mod tests;
