//! Tests of `cpu.isolation`, `cpuset.partitions` and `cpu.smt_siblings` on the tuned and
//! untuned trees and on builder-made edge cases.

use super::super::trees::{tuned, tuned_ctx, untuned, untuned_ctx};
use super::*;
use crate::context::Options;
use model::audit::{Fix, Status};
use testkit::FakeRoot;

fn finding(check: &Check, ctx: &Ctx) -> model::audit::Finding {
    check.finding((check.run)(ctx))
}

#[test]
fn tuned_board_passes() {
    let fake = tuned();
    let ctx = tuned_ctx(&fake);
    let f = finding(&ISOLATION, &ctx);
    assert_eq!(f.status, Status::Pass, "{f:?}");
    assert_eq!(
        f.summary,
        "RT CPUs 2-7 (from isolcpus); housekeeping CPUs 0-1"
    );
    let f = finding(&PARTITIONS, &ctx);
    assert_eq!(f.status, Status::Pass, "{f:?}");
    assert!(
        f.summary.contains("/sys/fs/cgroup/rt isolated 2-7"),
        "{}",
        f.summary
    );
    let f = finding(&SMT_SIBLINGS, &ctx);
    assert_eq!(f.status, Status::Pass, "{f:?}");
    assert!(f.summary.contains("no SMT"), "{}", f.summary);
}

#[test]
fn untuned_box_fails_each() {
    let fake = untuned();
    let ctx = untuned_ctx(&fake);
    let f = finding(&ISOLATION, &ctx);
    assert_eq!(f.status, Status::Warn, "{f:?}");
    assert!(
        f.summary.contains("does not set CPUs 2-7 apart"),
        "{}",
        f.summary
    );
    assert!(f.fix.contains(&Fix::BootParam {
        param: "isolcpus=managed_irq,domain,2-7 nohz_full=2-7 rcu_nocbs=2-7 irqaffinity=0-1".into()
    }));
    let f = finding(&PARTITIONS, &ctx);
    assert_eq!(f.status, Status::Fail, "{f:?}");
    assert!(
        f.summary
            .contains("/sys/fs/cgroup/rt (Cpu list in cpuset.cpus not exclusive)"),
        "{}",
        f.summary
    );
    assert!(f.fix.contains(&Fix::Write {
        path: "/sys/fs/cgroup/rt/cpuset.cpus.partition".into(),
        value: "isolated".into()
    }));
    let f = finding(&SMT_SIBLINGS, &ctx);
    assert_eq!(f.status, Status::Warn, "{f:?}");
    assert_eq!(
        f.summary,
        "RT CPUs 4-5 share their cores with housekeeping CPUs 0-1 (SMT siblings)"
    );
    // CPU 0 has no `online` file (as on x86): it is not offered offline; SMT control is.
    assert!(!f.fix.iter().any(|x| x.render().contains("cpu0/online")));
    assert!(f.fix.contains(&Fix::Write {
        path: "/sys/devices/system/cpu/cpu1/online".into(),
        value: "0".into()
    }));
    assert!(
        f.fix
            .iter()
            .any(|x| x.render().starts_with("CPU 0 cannot be taken offline"))
    );
    assert!(f.fix.contains(&Fix::Write {
        path: SMT_CONTROL.into(),
        value: "off".into()
    }));
    assert!(
        f.evidence
            .iter()
            .any(|e| e.source == SMT_CONTROL && e.value == "on")
    );
}

#[test]
fn no_isolation_suggests_a_split_keeping_whole_cores() {
    let fake = untuned();
    let ctx = Ctx::new(fake.root(), Options::default());
    let f = finding(&ISOLATION, &ctx);
    assert_eq!(f.status, Status::Warn);
    assert!(
        f.summary.starts_with("no CPUs are set apart"),
        "{}",
        f.summary
    );
    // Two housekeeping CPUs (a quarter of 8) widened to their siblings: 0-1 and 4-5.
    assert!(f.fix.contains(&Fix::BootParam {
        param: "isolcpus=managed_irq,domain,2-3,6-7 nohz_full=2-3,6-7 rcu_nocbs=2-3,6-7 irqaffinity=0-1,4-5".into()
    }), "{:?}", f.fix);
    // The other placement checks say why they cannot look.
    assert_eq!(finding(&SMT_SIBLINGS, &ctx).status, Status::Unknown);
}

#[test]
fn offline_or_all_rt_cpus_fail() {
    let fake = FakeRoot::new()
        .cpus(4)
        .online("0-2")
        .cmdline("isolcpus=2-3");
    let ctx = Ctx::new(fake.root(), Options::default());
    let f = finding(&ISOLATION, &ctx);
    assert_eq!(f.status, Status::Fail, "{f:?}");
    assert!(
        f.summary.contains("include CPU 3 that is not online"),
        "{}",
        f.summary
    );
    let fake = FakeRoot::new()
        .cpus(4)
        .cmdline("nohz_full=0-3")
        .nohz_full("0-3");
    let ctx = Ctx::new(fake.root(), Options::default());
    let f = finding(&ISOLATION, &ctx);
    assert_eq!(f.status, Status::Fail, "{f:?}");
    assert!(f.summary.contains("no housekeeping CPU"), "{}", f.summary);
    assert!(f.fix.contains(&Fix::BootParam {
        param: "isolcpus=managed_irq,domain,1-3 nohz_full=1-3 rcu_nocbs=1-3 irqaffinity=0".into()
    }));
    let fake = FakeRoot::new().cpus(1).cmdline("quiet");
    let f = finding(&ISOLATION, &Ctx::new(fake.root(), Options::default()));
    assert_eq!(f.status, Status::Warn);
    assert!(
        f.fix
            .iter()
            .any(|x| matches!(x, Fix::Advice { text } if text.contains("one CPU")))
    );
}

#[test]
fn partitions_without_cgroup_v2_or_cpuset() {
    let fake = FakeRoot::new().cpus(2);
    let f = finding(&PARTITIONS, &Ctx::new(fake.root(), Options::default()));
    assert_eq!(f.status, Status::Pass);
    assert!(f.summary.contains("no cgroup v2"), "{}", f.summary);
    let fake = FakeRoot::new().cpus(2).dir("/sys/fs/cgroup/cpuset");
    let f = finding(&PARTITIONS, &Ctx::new(fake.root(), Options::default()));
    assert!(f.summary.contains("cgroup v1 cpusets"), "{}", f.summary);
    let fake = FakeRoot::new()
        .cpus(2)
        .file("/sys/fs/cgroup/cgroup.controllers", "cpu io memory pids\n");
    let f = finding(&PARTITIONS, &Ctx::new(fake.root(), Options::default()));
    assert_eq!(f.status, Status::Pass);
    assert!(f.summary.contains("no cpuset controller"), "{}", f.summary);
    // Hybrid: v2 mounted, cpuset on v1.
    let fake = FakeRoot::new()
        .cpus(2)
        .file("/sys/fs/cgroup/cgroup.controllers", "io memory pids\n")
        .dir("/sys/fs/cgroup/cpuset");
    let f = finding(&PARTITIONS, &Ctx::new(fake.root(), Options::default()));
    assert!(
        f.summary.contains("bound to the cgroup v1 hierarchy"),
        "{}",
        f.summary
    );
    let fake = FakeRoot::new()
        .cpus(2)
        .file("/sys/fs/cgroup/cgroup.controllers", "cpuset cpu\n");
    let f = finding(&PARTITIONS, &Ctx::new(fake.root(), Options::default()));
    assert!(
        f.summary.starts_with("no cpuset partitions"),
        "{}",
        f.summary
    );
}

#[test]
fn partition_reasons_map_to_advice() {
    assert!(partition_advice("Cpu list in cpuset.cpus not exclusive").contains("sibling"));
    assert!(partition_advice("Parent is not a partition root").contains("parent"));
    assert!(partition_advice("No cpu available due to hotplug").contains("online"));
    assert!(partition_advice("").contains("cause"));
}

#[test]
fn a_cpuset_partition_sets_cpus_apart() {
    let fake = super::super::trees::Tree(FakeRoot::new().cpus(4).cmdline("quiet"))
        .cgroup("cpuset", "root", "2-3")
        .0;
    let ctx = Ctx::new(fake.root(), Options::default());
    let f = finding(&ISOLATION, &ctx);
    assert_eq!(f.status, Status::Pass, "{f:?}");
    assert_eq!(
        f.summary,
        "RT CPUs 2-3 (from cpuset partition); housekeeping CPUs 0-1"
    );
    assert!(
        f.evidence
            .iter()
            .any(|e| e.source == "/sys/fs/cgroup/rt/cpuset.cpus.partition")
    );
}

/// Issue #45: the fixes fit the machine: without `CONFIG_NO_HZ_FULL` (no
/// /sys/devices/system/cpu/nohz_full) no `nohz_full=`, and the advice says why; without
/// cgroup v2 at /sys/fs/cgroup no v2 partition command, only `rtlab tune apply` (which makes
/// a v1 cpuset there).
#[test]
fn isolation_fixes_fit_the_machine() {
    let fake = FakeRoot::new().cpus(4).cmdline("quiet");
    let f = finding(&ISOLATION, &Ctx::new(fake.root(), Options::default()));
    let boot: Vec<&str> = f
        .fix
        .iter()
        .filter_map(|x| match x {
            Fix::BootParam { param } => Some(param.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        boot,
        ["isolcpus=managed_irq,domain,1-3 rcu_nocbs=1-3 irqaffinity=0"],
        "{f:?}"
    );
    let commands: Vec<&str> = f
        .fix
        .iter()
        .filter_map(|x| match x {
            Fix::Command { command } => Some(command.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(commands, ["rtlab tune apply --rt-cpus 1-3"], "{f:?}");
    let advice = format!("{:?}", f.fix);
    assert!(advice.contains("no CONFIG_NO_HZ_FULL"), "{advice}");
    assert!(!advice.contains("is planned"), "{advice}");
}
