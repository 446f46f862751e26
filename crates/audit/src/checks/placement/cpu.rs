//! `cpu.isolation` (are RT CPUs set apart at all, and sensibly), `cpuset.partitions` (did the
//! kernel accept the cgroup v2 partitions) and `cpu.smt_siblings` (do RT CPUs share a core
//! with housekeeping work).

use std::path::PathBuf;
use std::rc::Rc;

use model::CpuSet;
use model::audit::{Fix, Group, RtCpus, Severity};
use sys::partition::Partition;

use super::common::{cpus_word, few, split};
use crate::check::Check;
use crate::context::Ctx;
use crate::outcome::Outcome;

pub(super) const ISOLATION: Check = Check {
    id: "cpu.isolation",
    title: "RT CPUs set apart",
    group: Group::Placement,
    severity: Severity::Warn,
    why: "without CPUs reserved for real-time work, IRQs, kernel threads and every other task share the CPUs the latency-critical threads run on",
    run: isolation,
};

pub(super) const PARTITIONS: Check = Check {
    id: "cpuset.partitions",
    title: "cpuset partitions valid",
    group: Group::Placement,
    severity: Severity::Fail,
    why: "an invalid cpuset partition silently gives its CPUs back to the scheduler, so the RT tasks in it are no longer isolated",
    run: partitions,
};

pub(super) const SMT_SIBLINGS: Check = Check {
    id: "cpu.smt_siblings",
    title: "SMT siblings of RT CPUs",
    group: Group::Placement,
    severity: Severity::Warn,
    why: "an SMT sibling shares the core's pipelines and caches, so housekeeping work on it slows the RT thread on the other hardware thread",
    run: smt_siblings,
};

const ONLINE: &str = "/sys/devices/system/cpu/online";
const ISOLATED: &str = "/sys/devices/system/cpu/isolated";
const NOHZ_FULL: &str = "/sys/devices/system/cpu/nohz_full";
const SMT_CONTROL: &str = "/sys/devices/system/cpu/smt/control";

/// The cpuset partitions, read once per audit.
struct PartitionMemo(Vec<Partition>);

fn cpuset_partitions(ctx: &Ctx) -> Rc<PartitionMemo> {
    ctx.memo(|ctx| PartitionMemo(sys::partition::cpuset_partitions(ctx.root())))
}

/// A housekeeping/RT split to suggest: the first quarter of the online CPUs (at least one)
/// for housekeeping, widened to whole cores when SMT siblings are known, the rest for RT.
/// `None` with fewer than two online CPUs.
fn suggested_split(ctx: &Ctx) -> Option<(CpuSet, CpuSet)> {
    let online = ctx.online();
    if online.len() < 2 {
        return None;
    }
    let k = (online.len() / 4).max(1);
    let first: CpuSet = online.iter().take(k).collect();
    let mut hk = first.clone();
    for info in &ctx.host().cpus {
        if first.contains(info.cpu)
            && let Some(siblings) = &info.siblings
        {
            hk = hk.union(&siblings.intersection(online));
        }
    }
    if hk.len() >= online.len() {
        hk = first;
    }
    let rt = online.difference(&hk);
    (!rt.is_empty()).then_some((hk, rt))
}

/// The boot parameters and the commands that set `rt` apart with `hk` left over, as this
/// machine can take them: `nohz_full=` only where the kernel has `CONFIG_NO_HZ_FULL` (it has
/// the file [`NOHZ_FULL`]), a cgroup v2 partition only where cgroup v2 is mounted at
/// /sys/fs/cgroup; `rtlab tune` does either on any (a v1 cpuset where v2 is not there).
fn isolation_fixes(ctx: &Ctx, outcome: Outcome, hk: &CpuSet, rt: &CpuSet) -> Outcome {
    let nohz_full = ctx.root().exists(NOHZ_FULL);
    let v2 = ctx.root().exists("/sys/fs/cgroup/cgroup.controllers");
    let tick = if nohz_full {
        format!(" nohz_full={rt}")
    } else {
        String::new()
    };
    let mut outcome = outcome
        .fix_boot(format!(
            "isolcpus=managed_irq,domain,{rt}{tick} rcu_nocbs={rt} irqaffinity={hk}"
        ))
        .fix_command(format!("rtlab tune apply --rt-cpus {rt}"));
    if v2 {
        outcome = outcome.fix_command(format!(
            "echo +cpuset > /sys/fs/cgroup/cgroup.subtree_control && mkdir -p /sys/fs/cgroup/rt \
             && echo {rt} > /sys/fs/cgroup/rt/cpuset.cpus \
             && echo isolated > /sys/fs/cgroup/rt/cpuset.cpus.partition"
        ));
    }
    let no_tick = if nohz_full {
        ""
    } else {
        " (this kernel has no CONFIG_NO_HZ_FULL: nohz_full= would be ignored, so the tick stays)"
    };
    outcome.fix_advice(format!(
        "the boot parameters isolate fully (RCU callbacks, managed IRQs, ticks) after a reboot{no_tick}; `rtlab tune apply` sets the RT CPUs apart at once, in a cpuset partition (cgroup {}), reversibly (`rtlab tune revert`); `rtlab tune plan --rt-cpus {rt}` shows every step first",
        if v2 { "v2" } else { "v1 here" }
    ))
}

fn isolation(ctx: &Ctx) -> Outcome {
    let online = ctx.online();
    if online.is_empty() {
        return Outcome::unknown(format!(
            "{ONLINE} cannot be read, so the online CPUs are unknown"
        ));
    }
    let rt = ctx.rt();
    let host = ctx.host();
    if rt.cpus.is_empty() {
        return no_rt_cpus(ctx);
    }
    let source = rt.source.as_str();
    let origin = format!("{} (from {source})", cpus_word(&rt.cpus));
    let offline = rt.cpus.difference(online);
    if !offline.is_empty() {
        return offline_rt_cpus(&rt.cpus, online, &offline, &origin);
    }
    if online.is_subset(&rt.cpus) {
        let outcome = Outcome::problem(format!(
            "every online CPU is an RT CPU ({origin}): no housekeeping CPU is left for IRQs, kernel threads and the rest of the system"
        ))
        .with_severity(Severity::Fail)
        .evidence(ONLINE, online.to_string());
        return match suggested_split(ctx) {
            Some((hk, rtc)) => isolation_fixes(ctx, outcome, &hk, &rtc),
            None => outcome.fix_advice("keep at least one CPU for housekeeping"),
        };
    }
    let hk = online.difference(&rt.cpus);
    let outcome_evidence = rt_source_evidence(ctx, rt);
    if source == "--rt-cpus" {
        // Named by hand: does anything in the kernel keep other work off them?
        let kept = host
            .isolated_cpus
            .union(&host.nohz_full_cpus)
            .union(&valid_partition_cpus(ctx))
            .union(&host.cpuset_isolated_cpus);
        let loose = rt.cpus.difference(&kept);
        if !loose.is_empty() {
            let mut outcome = Outcome::warn(format!(
                "RT {origin}, but the kernel does not set {} apart (not in isolcpus=, nohz_full= or a cpuset partition)",
                cpus_word(&loose)
            ));
            for (s, v) in outcome_evidence {
                outcome = outcome.evidence(s, v);
            }
            outcome = outcome
                .evidence(ISOLATED, empty_word(&host.isolated_cpus))
                .evidence(NOHZ_FULL, empty_word(&host.nohz_full_cpus));
            return isolation_fixes(ctx, outcome, &hk, &rt.cpus);
        }
    }
    let mut outcome = Outcome::pass(format!("RT {origin}; housekeeping {}", cpus_word(&hk)));
    for (s, v) in outcome_evidence {
        outcome = outcome.evidence(s, v);
    }
    outcome.evidence(ONLINE, online.to_string())
}

/// `cpu.isolation` when no CPU is set apart: the problem, with a split to suggest when
/// more than one CPU is online.
fn no_rt_cpus(ctx: &Ctx) -> Outcome {
    let outcome = Outcome::problem(
        "no CPUs are set apart for real-time work: no isolcpus=, nohz_full= or cpuset partition (name them with --rt-cpus to audit placement anyway)",
    )
    .evidence("/proc/cmdline", trimmed(ctx.cmdline_text()))
    .evidence(ISOLATED, empty_word(&ctx.host().isolated_cpus));
    match suggested_split(ctx) {
        Some((hk, rtc)) => isolation_fixes(ctx, outcome, &hk, &rtc),
        None => outcome.fix_advice(
            "only one CPU is online: bring more CPUs online (or use a machine with more) to keep one for housekeeping",
        ),
    }
}

/// `cpu.isolation` when some RT CPUs (`origin` in words) are offline: a failure, fixed by
/// bringing them online or naming only online ones.
fn offline_rt_cpus(rt: &CpuSet, online: &CpuSet, offline: &CpuSet, origin: &str) -> Outcome {
    let mut outcome = Outcome::problem(format!(
        "RT {origin} include {} that {} not online",
        cpus_word(offline),
        if offline.len() == 1 { "is" } else { "are" }
    ))
    .with_severity(Severity::Fail)
    .evidence(ONLINE, online.to_string());
    for cpu in offline.iter().take(super::common::FEW) {
        outcome = outcome.fix_write(format!("/sys/devices/system/cpu/cpu{cpu}/online"), "1");
    }
    outcome.fix_advice(format!(
        "or name only online CPUs as RT CPUs ({})",
        rt.intersection(online)
    ))
}

/// The evidence of where the RT CPUs came from: the boot parameter, `--rt-cpus`, or the
/// valid cpuset partitions.
fn rt_source_evidence(ctx: &Ctx, rt: &RtCpus) -> Vec<(String, String)> {
    let source = rt.source.as_str();
    let mut evidence: Vec<(String, String)> = Vec::new();
    match source {
        "isolcpus" | "nohz_full" => {
            let value = ctx.cmdline().value(source).unwrap_or_default().to_string();
            evidence.push(("/proc/cmdline".into(), format!("{source}={value}")));
        }
        "--rt-cpus" => {
            evidence.push(("command line".into(), format!("--rt-cpus {}", rt.cpus)));
        }
        _ => {
            for p in cpuset_partitions(ctx).0.iter().filter(|p| p.is_valid()) {
                evidence.push((
                    format!("{}/cpuset.cpus.partition", p.path.display()),
                    format!("{} ({})", p.raw, p.cpus),
                ));
            }
        }
    }
    evidence
}

fn valid_partition_cpus(ctx: &Ctx) -> CpuSet {
    cpuset_partitions(ctx)
        .0
        .iter()
        .filter(|p| p.is_valid())
        .fold(CpuSet::new(), |acc, p| acc.union(&p.cpus))
}

fn trimmed(text: &str) -> String {
    const MAX: usize = 200;
    let text = text.trim();
    if text.chars().count() <= MAX {
        text.to_string()
    } else {
        let cut: String = text.chars().take(MAX).collect();
        format!("{cut}...")
    }
}

fn empty_word(set: &CpuSet) -> String {
    if set.is_empty() {
        "(empty)".to_string()
    } else {
        set.to_string()
    }
}

/// What to do about the kernel's reason for refusing a partition.
fn partition_advice(reason: &str) -> &'static str {
    let r = reason.to_ascii_lowercase();
    if r.contains("not exclusive") {
        "take these CPUs out of the cpuset.cpus of every sibling cgroup (or claim them with cpuset.cpus.exclusive), then write the partition type again"
    } else if r.contains("parent is not a partition root") || r.contains("parent") {
        "make the parent cgroup a partition root first (echo root > PARENT/cpuset.cpus.partition), or create the partition directly below /sys/fs/cgroup"
    } else if r.contains("hotplug") || r.contains("no cpu available") {
        "bring the partition's CPUs back online, or list online CPUs in its cpuset.cpus"
    } else if r.contains("load balanc") {
        "turn load balancing back on where the kernel requires it, or use an isolated partition"
    } else {
        "fix the cause the kernel names, then write the partition type again and read the file back"
    }
}

/// The cgroup v2 hierarchy that cpuset partitions live in.
struct CpusetHierarchy {
    /// Where it is mounted.
    mount: PathBuf,
    /// Its `cgroup.controllers` file.
    controllers_path: PathBuf,
    /// What that file holds.
    controllers: String,
}

fn partitions(ctx: &Ctx) -> Outcome {
    let hierarchy = match cpuset_hierarchy(ctx) {
        Ok(h) => h,
        Err(pass) => return pass,
    };
    let CpusetHierarchy {
        mount,
        controllers_path,
        controllers,
    } = hierarchy;
    let parts = cpuset_partitions(ctx);
    let invalid: Vec<&Partition> = parts.0.iter().filter(|p| !p.is_valid()).collect();
    if !invalid.is_empty() {
        return invalid_partitions(&parts.0, &invalid);
    }
    if parts.0.is_empty() {
        return Outcome::pass(format!(
            "no cpuset partitions below {} (CPUs are set apart by other means, if at all)",
            mount.display()
        ))
        .evidence(
            controllers_path.display().to_string(),
            trimmed(&controllers),
        );
    }
    let names = few(parts
        .0
        .iter()
        .map(|p| format!("{} {} {}", p.path.display(), p.kind, p.cpus)));
    let mut outcome = Outcome::pass(format!("valid cpuset partitions: {names}"));
    for p in parts.0.iter().take(super::common::FEW) {
        outcome = partition_evidence(outcome, p);
    }
    outcome
}

/// The cgroup v2 hierarchy with the cpuset controller, or the pass saying why there are no
/// partitions to validate (no v2 hierarchy, or cpuset not offered by it).
fn cpuset_hierarchy(ctx: &Ctx) -> Result<CpusetHierarchy, Outcome> {
    let root = ctx.root();
    let Some(mount) = sys::partition::unified_mount(root) else {
        if root.exists("/sys/fs/cgroup/cpuset") {
            return Err(Outcome::pass(
                "no cgroup v2 hierarchy: cgroup v1 cpusets are in use (/sys/fs/cgroup/cpuset), which have no partitions to validate",
            )
            .evidence("/sys/fs/cgroup/cpuset", "present"));
        }
        return Err(Outcome::pass(
            "no cgroup v2 hierarchy is mounted, so there are no cpuset partitions to validate",
        )
        .evidence("/proc/self/mountinfo", "no cgroup2 mount"));
    };
    let controllers_path = mount.join("cgroup.controllers");
    let controllers = root.read_trimmed(&controllers_path).unwrap_or_default();
    if !controllers.split_whitespace().any(|c| c == "cpuset") {
        if root.exists("/sys/fs/cgroup/cpuset") {
            return Err(Outcome::pass(format!(
                "the cpuset controller is bound to the cgroup v1 hierarchy at /sys/fs/cgroup/cpuset, not to the v2 one at {}: v1 cpusets have no partitions to validate",
                mount.display()
            ))
            .evidence(controllers_path.display().to_string(), trimmed(&controllers))
            .evidence("/sys/fs/cgroup/cpuset", "present"));
        }
        return Err(Outcome::pass(format!(
            "the cgroup v2 hierarchy at {} offers no cpuset controller (CONFIG_CPUSETS off, or cpuset bound to a v1 hierarchy): no partitions",
            mount.display()
        ))
        .evidence(controllers_path.display().to_string(), trimmed(&controllers)));
    }
    Ok(CpusetHierarchy {
        mount,
        controllers_path,
        controllers,
    })
}

/// `o` with a partition's `cpuset.cpus.partition` and CPUs as evidence.
fn partition_evidence(o: Outcome, p: &Partition) -> Outcome {
    o.evidence(
        format!("{}/cpuset.cpus.partition", p.path.display()),
        format!("{} (CPUs {})", p.raw, p.cpus),
    )
}

/// The problem of partitions the kernel refused (`invalid`, among `all`), with what to do
/// about each reason and the write that re-applies each partition type.
fn invalid_partitions(all: &[Partition], invalid: &[&Partition]) -> Outcome {
    let names = few(invalid.iter().map(|p| {
        format!(
            "{} ({})",
            p.path.display(),
            p.invalid.as_deref().unwrap_or("no reason given")
        )
    }));
    let mut outcome = Outcome::problem(format!(
        "{} invalid: {names}",
        if invalid.len() == 1 {
            "1 cpuset partition is".to_string()
        } else {
            format!("{} cpuset partitions are", invalid.len())
        }
    ));
    for p in all.iter().take(super::common::FEW) {
        outcome = partition_evidence(outcome, p);
    }
    for p in invalid.iter().take(super::common::FEW) {
        outcome = outcome
            .fix_advice(format!(
                "{}: {}",
                p.path.display(),
                partition_advice(p.invalid.as_deref().unwrap_or(""))
            ))
            .fix_write(
                format!("{}/cpuset.cpus.partition", p.path.display()),
                p.kind.clone(),
            );
    }
    outcome
}

fn smt_siblings(ctx: &Ctx) -> Outcome {
    let s = match split(ctx) {
        Ok(s) => s,
        Err(o) => return o,
    };
    let host = ctx.host();
    let control = ctx.root().read_trimmed(SMT_CONTROL);
    let mut known = false;
    let mut shared = CpuSet::new();
    let mut pairs = Vec::new();
    for info in host.cpus.iter().filter(|i| s.rt.contains(i.cpu)) {
        let Some(siblings) = &info.siblings else {
            continue;
        };
        known = true;
        let others = siblings.intersection(ctx.online()).difference(&s.rt);
        if !others.is_empty() {
            shared = shared.union(&others);
            pairs.push((info.cpu, siblings.clone(), others));
        }
    }
    if !known {
        return Outcome::unknown(
            "no /sys/devices/system/cpu/cpuN/topology/thread_siblings_list for the RT CPUs, so SMT siblings are unknown",
        );
    }
    let control_evidence = |o: Outcome| match &control {
        Some(c) => o.evidence(SMT_CONTROL, c.clone()),
        None => o,
    };
    if pairs.is_empty() {
        let smt_on = host
            .cpus
            .iter()
            .any(|i| i.siblings.as_ref().is_some_and(|s| s.len() > 1));
        let summary = if smt_on {
            "every online SMT sibling of an RT CPU is itself an RT CPU".to_string()
        } else {
            "no SMT: each RT CPU has its core to itself".to_string()
        };
        return control_evidence(Outcome::pass(summary));
    }
    let rt_with: CpuSet = pairs.iter().map(|(cpu, _, _)| *cpu).collect();
    let mut outcome = Outcome::problem(format!(
        "RT {} {} with housekeeping {} (SMT {})",
        cpus_word(&rt_with),
        if rt_with.len() == 1 {
            "shares its core"
        } else {
            "share their cores"
        },
        cpus_word(&shared),
        if shared.len() == 1 {
            "sibling"
        } else {
            "siblings"
        },
    ));
    for (cpu, siblings, _) in pairs.iter().take(super::common::FEW) {
        outcome = outcome.evidence(
            format!("/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"),
            siblings.to_string(),
        );
    }
    outcome = control_evidence(outcome);
    outcome.with_fixes(sibling_fixes(ctx, &shared))
}

/// Taking the housekeeping siblings `shared` of RT CPUs away: each offline where it can be (a
/// CPU without an `online` file cannot: the boot CPU on x86), SMT off at run time where the
/// kernel has the switch, or at boot.
fn sibling_fixes(ctx: &Ctx, shared: &CpuSet) -> Vec<Fix> {
    let (can, cannot): (Vec<u32>, Vec<u32>) = shared.iter().partition(|cpu| {
        ctx.root()
            .exists(format!("/sys/devices/system/cpu/cpu{cpu}/online"))
    });
    let mut fixes: Vec<Fix> = can
        .iter()
        .take(super::common::FEW)
        .map(|cpu| Fix::Write {
            path: format!("/sys/devices/system/cpu/cpu{cpu}/online"),
            value: "0".into(),
        })
        .collect();
    if !cannot.is_empty() {
        fixes.push(Fix::Advice {
            text: format!(
                "{} cannot be taken offline (no /sys/devices/system/cpu/cpuN/online): choose RT CPUs whose siblings can, or switch SMT off",
                cpus_word(&cannot.iter().copied().collect())
            ),
        });
    }
    if ctx.root().exists(SMT_CONTROL) {
        fixes.push(Fix::Write {
            path: SMT_CONTROL.into(),
            value: "off".into(),
        });
    }
    fixes.push(Fix::BootParam {
        param: "nosmt".into(),
    });
    fixes.push(Fix::Advice {
        text: format!(
            "or make {} RT CPUs too and keep them idle",
            cpus_word(shared)
        ),
    });
    fixes
}

#[cfg(test)]
mod tests;
