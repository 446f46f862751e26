//! The CPU-list checks on fake trees: the Linaro 2023 talk's tuned board, an untuned one, the corpus's
//! Ubuntu command line, cpuset partitions and the kernel's corner cases.

use model::CpuSet;
use model::audit::{Finding, Status};
use testkit::FakeRoot;

use crate::checks::cmdline::CHECKS;
use crate::context::{Ctx, Options};

/// the Linaro 2023 talk's command line on its 8-CPU board, CPUs 2-7 for real-time work.
const TUNED: &str = "console=ttyAMA0,115200 root=/dev/mmcblk0p2 isolcpus=managed_irq,domain,2-7 nohz_full=2-7 rcu_nocbs=2-7 rcu_nocb_poll irqaffinity=0-1 skew_tick=1 nosoftlockup nowatchdog quiet";

/// The corpus's Ubuntu desktop (corpus/proc/procfs_cmdline_ubuntu.txt, prometheus/procfs).
const UBUNTU: &str = "BOOT_IMAGE=/vmlinuz-5.11.0-22-generic root=UUID=456a0345-450d-4f7b-b7c9-43e3241d99ad ro quiet splash vt.handoff=7";

fn run(fake: &FakeRoot, rt: Option<&str>, id: &str) -> Finding {
    let ctx = Ctx::new(
        fake.root(),
        Options {
            rt_cpus: rt.map(|l| CpuSet::parse_list(l).unwrap()),
            ..Options::default()
        },
    );
    let check = CHECKS.iter().find(|c| c.id == id).unwrap();
    check.finding((check.run)(&ctx))
}

const CPU_CHECKS: [&str; 6] = [
    "cmdline.isolcpus",
    "cmdline.nohz_full",
    "cmdline.rcu_nocbs",
    "cmdline.rcu_nocb_poll",
    "cmdline.nohz_full_rcu",
    "cmdline.irqaffinity",
];

fn boot(id: &Finding) -> Vec<String> {
    id.fix
        .iter()
        .filter_map(|f| match f {
            model::audit::Fix::BootParam { param } => Some(param.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn talk_000_tuned_board_passes() {
    let fake = FakeRoot::new()
        .cpus(8)
        .cmdline(TUNED)
        .isolated("2-7")
        .nohz_full("2-7");
    for id in CPU_CHECKS {
        let f = run(&fake, None, id);
        assert_eq!(f.status, Status::Pass, "{id}: {}", f.summary);
    }
    let f = run(&fake, None, "cmdline.isolcpus");
    assert_eq!(
        f.summary,
        "RT CPUs 2-7 are isolated by isolcpus=managed_irq,domain,2-7"
    );
    assert_eq!(f.evidence[1].source, "/sys/devices/system/cpu/isolated");
    assert_eq!(f.evidence[2].value, "2-7 (from isolcpus)");
    assert_eq!(
        run(&fake, None, "cmdline.rcu_nocbs").summary,
        "RT CPUs 2-7 hand their RCU callbacks to rcuo kthreads (rcu_nocbs)"
    );
}

#[test]
fn untuned_box_gets_this_machines_cpu_lists() {
    // cgroup v2 with the cpuset controller, a kernel with NO_HZ_FULL.
    let fake = FakeRoot::new()
        .cpus(8)
        .cmdline(UBUNTU)
        .file(
            "/sys/fs/cgroup/cgroup.controllers",
            "cpuset cpu io memory pids\n",
        )
        .nohz_full("(null)");
    let rt = Some("2-7");
    let f = run(&fake, rt, "cmdline.isolcpus");
    assert_eq!(f.status, Status::Warn);
    assert_eq!(boot(&f), ["isolcpus=managed_irq,domain,2-7"]);
    assert!(f.fix[1].render().contains("cpuset.cpus.partition"));
    assert!(
        f.evidence[0]
            .value
            .starts_with("none of isolcpus in: BOOT_IMAGE=")
    );
    let f = run(&fake, rt, "cmdline.nohz_full");
    assert_eq!(
        (f.status, boot(&f)),
        (Status::Info, vec!["nohz_full=2-7".to_string()])
    );
    let f = run(&fake, rt, "cmdline.rcu_nocbs");
    assert_eq!(
        f.summary,
        "RT CPUs 2-7 run their own RCU callbacks in softirq context: no rcu_nocbs="
    );
    assert_eq!(boot(&f), ["rcu_nocbs=2-7"]);
    let f = run(&fake, rt, "cmdline.irqaffinity");
    assert_eq!(
        f.status,
        Status::Warn,
        "missing is a warning, not a failure"
    );
    assert_eq!(boot(&f), ["irqaffinity=0-1"]);
    // Nothing is offloaded, nothing to compare.
    assert_eq!(run(&fake, rt, "cmdline.rcu_nocb_poll").status, Status::Pass);
    assert_eq!(run(&fake, rt, "cmdline.nohz_full_rcu").status, Status::Pass);
}

#[test]
fn fixes_fit_a_machine_without_cgroup_v2_cpusets_or_no_hz_full() {
    // cgroup v1 cpusets, a kernel built without NO_HZ_FULL (no /sys/.../nohz_full).
    let fake = FakeRoot::new()
        .cpus(8)
        .cmdline(UBUNTU)
        .file("/sys/fs/cgroup/cpuset/cpuset.cpus", "0-7\n");
    let f = run(&fake, Some("2-7"), "cmdline.isolcpus");
    let advice = f.fix[1].render();
    assert!(!advice.contains("/sys/fs/cgroup/rt"), "{advice}");
    assert!(
        advice.contains("rtlab tune apply --rt-cpus 2-7"),
        "{advice}"
    );
    assert!(advice.contains("cgroup v1"), "{advice}");
    let f = run(&fake, Some("2-7"), "cmdline.nohz_full");
    assert!(boot(&f).is_empty(), "{:?}", f.fix);
    assert_eq!(f.fix[0].render(), "kernel config: CONFIG_NO_HZ_FULL=y");
    assert!(f.fix[1].render().contains("nohz_full= would be ignored"));
    // No cpuset controller at all: only the boot parameter.
    let fake = FakeRoot::new().cpus(8).cmdline(UBUNTU);
    let f = run(&fake, Some("2-7"), "cmdline.isolcpus");
    assert!(f.fix[1].render().contains("no cpuset controller"));
}

#[test]
fn without_rt_cpus_the_cpu_checks_are_unknown() {
    let fake = FakeRoot::new().cpus(4).cmdline(UBUNTU);
    for id in [
        "cmdline.isolcpus",
        "cmdline.nohz_full",
        "cmdline.rcu_nocbs",
        "cmdline.irqaffinity",
    ] {
        let f = run(&fake, None, id);
        assert_eq!(f.status, Status::Unknown, "{id}");
        assert!(f.summary.contains("--rt-cpus"), "{}", f.summary);
    }
    // And without /proc/cmdline they say so.
    let fake = FakeRoot::new().cpus(4);
    for id in CPU_CHECKS {
        let f = run(&fake, Some("1-3"), id);
        assert_eq!(f.status, Status::Unknown, "{id}");
        assert!(f.summary.contains("/proc/cmdline"), "{id}: {}", f.summary);
    }
}

#[test]
fn isolcpus_flags_and_bad_cpus() {
    // No flags: domain isolation, but managed IRQs may land there.
    let fake = FakeRoot::new().cpus(4).cmdline("isolcpus=3").isolated("3");
    let f = run(&fake, None, "cmdline.isolcpus");
    assert_eq!(f.status, Status::Warn);
    assert!(f.summary.contains("no managed_irq flag"), "{}", f.summary);
    assert_eq!(boot(&f), ["isolcpus=managed_irq,domain,3"]);
    // Flags without domain: no scheduler isolation.
    let fake = FakeRoot::new()
        .cpus(4)
        .cmdline("isolcpus=nohz,managed_irq,2-3");
    let f = run(&fake, None, "cmdline.isolcpus");
    assert!(f.summary.contains("leave out domain"), "{}", f.summary);
    assert_eq!(boot(&f), ["isolcpus=nohz,managed_irq,domain,2-3"]);
    // CPUs that do not exist, and the kernel isolating nothing.
    let fake = FakeRoot::new()
        .cpus(4)
        .cmdline("isolcpus=managed_irq,domain,2-5")
        .isolated("");
    let f = run(&fake, None, "cmdline.isolcpus");
    assert!(
        f.summary
            .contains("CPUs 4-5 that do not exist (possible: 0-3)"),
        "{}",
        f.summary
    );
    assert!(
        f.summary.contains("the kernel isolated no CPU"),
        "{}",
        f.summary
    );
    assert_eq!(boot(&f), ["isolcpus=managed_irq,domain,2-3"]);
    // Offline CPUs.
    let fake = FakeRoot::new()
        .cpus(4)
        .online("0-2")
        .cmdline("isolcpus=managed_irq,domain,2-3")
        .isolated("2-3");
    let f = run(&fake, None, "cmdline.isolcpus");
    assert_eq!(
        f.summary,
        "isolcpus=managed_irq,domain,2-3: it lists offline CPUs 3"
    );
    // --rt-cpus wider than isolcpus.
    let fake = FakeRoot::new()
        .cpus(8)
        .cmdline("isolcpus=managed_irq,domain,4-7")
        .isolated("4-7");
    let f = run(&fake, Some("2-7"), "cmdline.isolcpus");
    assert!(
        f.summary.contains("RT CPUs 2-3 are not in it"),
        "{}",
        f.summary
    );
    assert_eq!(boot(&f), ["isolcpus=managed_irq,domain,2-7"]);
    // Not a list.
    let fake = FakeRoot::new().cpus(4).cmdline("isolcpus=domain,x-y");
    let f = run(&fake, Some("3"), "cmdline.isolcpus");
    assert!(f.summary.contains("is ignored"), "{}", f.summary);
}

#[test]
fn a_cpuset_partition_isolates_too() {
    let fake = FakeRoot::new()
        .cpus(8)
        .cmdline("quiet")
        .file(
            "/sys/fs/cgroup/cgroup.controllers",
            "cpuset cpu io memory\n",
        )
        .file("/sys/fs/cgroup/rt/cpuset.cpus.partition", "root\n")
        .file("/sys/fs/cgroup/rt/cpuset.cpus.effective", "2-7\n");
    let f = run(&fake, None, "cmdline.isolcpus");
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
    assert!(
        f.summary.contains("cpuset partition (/sys/fs/cgroup/rt)"),
        "{}",
        f.summary
    );
    assert_eq!(f.evidence[0].value, "2-7 (from cpuset partition)");
    // --rt-cpus beyond the partition.
    let f = run(&fake, Some("1-7"), "cmdline.isolcpus");
    assert!(
        f.summary.starts_with("RT CPU 1 is not isolated"),
        "{}",
        f.summary
    );
    // An invalid partition does not count.
    let fake = fake.file(
        "/sys/fs/cgroup/rt/cpuset.cpus.partition",
        "root invalid (Cpu list in cpuset.cpus not exclusive)\n",
    );
    let f = run(&fake, Some("2-7"), "cmdline.isolcpus");
    assert_eq!(f.status, Status::Warn);
}

#[test]
fn nohz_full_needs_the_kernel_to_apply_it() {
    let fake = FakeRoot::new().cpus(8).cmdline("nohz_full=2-7");
    let f = run(&fake, None, "cmdline.nohz_full");
    assert!(
        f.summary.contains("without CONFIG_NO_HZ_FULL"),
        "{}",
        f.summary
    );
    assert_eq!(f.fix[0].render(), "kernel config: CONFIG_NO_HZ_FULL=y");
    let fake = fake.nohz_full("2-7");
    assert_eq!(run(&fake, None, "cmdline.nohz_full").status, Status::Pass);
    let fake = fake.nohz_full("4-7");
    let f = run(&fake, None, "cmdline.nohz_full");
    assert_eq!(
        f.summary,
        "nohz_full=2-7 is given but the kernel runs 4-7 tickless"
    );
    let f = run(&fake, Some("1-7"), "cmdline.nohz_full");
    assert_eq!(boot(&f), ["nohz_full=1-7"]);
}

#[test]
fn rcu_offload_counts_nohz_full_and_reads_bare_rcu_nocbs() {
    // nohz_full CPUs are offloaded by the kernel.
    let fake = FakeRoot::new()
        .cpus(8)
        .cmdline("nohz_full=2-7 rcu_nocbs=2-3");
    let f = run(&fake, None, "cmdline.rcu_nocbs");
    assert_eq!(f.status, Status::Pass);
    assert!(f.summary.contains("which the kernel offloads too"));
    let f = run(&fake, None, "cmdline.nohz_full_rcu");
    assert_eq!(f.status, Status::Info);
    assert_eq!(boot(&f), ["rcu_nocbs=2-7"]);
    // rcu_nocbs with no list offloads nothing at boot.
    let fake = FakeRoot::new().cpus(8).cmdline("rcu_nocbs isolcpus=2-7");
    let f = run(&fake, None, "cmdline.rcu_nocbs");
    assert!(
        f.summary.contains("without a list offloads no CPU at boot"),
        "{}",
        f.summary
    );
    assert_eq!(boot(&f), ["rcu_nocbs=2-7"]);
    // `all` and `N` (the context reads isolcpus= without them, hence --rt-cpus here).
    let fake = FakeRoot::new()
        .cpus(8)
        .cmdline("rcu_nocbs=all isolcpus=2-7");
    let f = run(&fake, None, "cmdline.rcu_nocbs");
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
    let fake = FakeRoot::new()
        .cpus(8)
        .cmdline("rcu_nocbs=4-N isolcpus=4-N");
    let f = run(&fake, Some("4-7"), "cmdline.rcu_nocbs");
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
    let f = run(&fake, Some("4-7"), "cmdline.isolcpus");
    assert!(
        f.summary.starts_with("isolcpus=4-N: no managed_irq"),
        "{}",
        f.summary
    );
    let fake = FakeRoot::new()
        .cpus(8)
        .cmdline("rcu_nocbs=all isolcpus=2-7");
    let f = run(&fake, None, "cmdline.rcu_nocbs");
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
    // rcu_nocb_poll.
    let f = run(&fake, None, "cmdline.rcu_nocb_poll");
    assert_eq!(f.status, Status::Info);
    assert_eq!(boot(&f), ["rcu_nocb_poll"]);
    assert!(
        f.summary.starts_with("offloaded CPUs 0-7 still wake"),
        "{}",
        f.summary
    );
}

#[test]
fn irqaffinity_overlap_fails_and_the_boot_cpu_is_always_in() {
    let fake = FakeRoot::new()
        .cpus(8)
        .cmdline("isolcpus=2-7 irqaffinity=0-3");
    let f = run(&fake, None, "cmdline.irqaffinity");
    assert_eq!(f.status, Status::Fail);
    assert_eq!(f.summary, "irqaffinity=0-3 lets IRQs start on RT CPUs 2-3");
    assert_eq!(boot(&f), ["irqaffinity=0-1"]);
    let fake = FakeRoot::new().cpus(4).cmdline("irqaffinity=2-3");
    let f = run(&fake, Some("0-1"), "cmdline.irqaffinity");
    assert_eq!(f.status, Status::Fail);
    assert!(
        f.summary.contains("always adds the boot CPU 0"),
        "{}",
        f.summary
    );
    // Every CPU real-time: advice instead of an empty list.
    let fake = FakeRoot::new().cpus(2).cmdline("quiet");
    let f = run(&fake, Some("0-1"), "cmdline.irqaffinity");
    assert!(boot(&f).is_empty());
    assert!(
        f.fix[0].render().contains("keep at least one"),
        "{:?}",
        f.fix
    );
    let fake = FakeRoot::new().cpus(4).cmdline("irqaffinity=oops");
    assert_eq!(
        run(&fake, Some("3"), "cmdline.irqaffinity").status,
        Status::Warn
    );
}
