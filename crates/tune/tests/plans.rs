//! Plans on the fixture trees (fixtures/roots): the untuned x86 RT box gets everything, the
//! tuned arm64 board of the Linaro 2023 talk little, the Pi with isolcpus=3 its IRQ moves, this VM its
//! v1 cpusets (a copy with the v1 cpuset root's files, which the capture lacks); splits that would break a machine are refused. Snapshots of the text and the
//! shell script (insta).

mod common;

use model::CpuSet;
use model::tune::{Action, TuneProfile};
use testkit::fixture_root;
use tune::{PlanError, Request, plan};

fn req(rt: &str, profile: TuneProfile) -> Request {
    Request {
        rt_cpus: rt.parse().unwrap(),
        housekeeping: None,
        profile,
        rules: Vec::new(),
        siblings: tune::Siblings::Confine,
    }
}

#[test]
fn every_tree_plans_and_snapshots() {
    for (name, rt) in [
        ("x86-8cpu-rt-untuned", "2-7"),
        ("arm64-8cpu-rt-tuned", "2-7"),
        ("rpi4-4cpu-isolcpu3", "3"),
        ("vm-x86_64-2cpu", "1"),
    ] {
        let root = fixture_root(name);
        for profile in [TuneProfile::Balanced, TuneProfile::Strict] {
            let p = plan(&root, &req(rt, profile)).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(p.housekeeping, root_online(&root).difference(&p.rt_cpus));
            let json = serde_json::to_string(&p).unwrap();
            let back: model::tune::TunePlan = serde_json::from_str(&json).unwrap();
            assert_eq!(back, p);
            insta::assert_snapshot!(
                format!("{name}-{}", profile.as_str()),
                report::tune::plan_text(&p)
            );
        }
    }
}

fn root_online(root: &sys::Root) -> CpuSet {
    sys::cpu::online(root).unwrap()
}

#[test]
fn the_untuned_box_gets_every_kind_of_change() {
    let root = fixture_root("x86-8cpu-rt-untuned");
    let p = plan(&root, &req("2-7", TuneProfile::Strict)).unwrap();
    let groups: std::collections::BTreeSet<&str> =
        p.changes.iter().map(|c| c.group.as_str()).collect();
    for g in [
        "irq",
        "irqbalance",
        "workqueue",
        "cpufreq",
        "cpuidle",
        "sched",
        "cpuset",
    ] {
        assert!(groups.contains(g), "no {g} change: {groups:?}");
    }
    // Boot: everything strict wants that the command line lacks.
    let names: Vec<&str> = p.boot.params.iter().map(|b| b.name.as_str()).collect();
    assert!(
        names.contains(&"rcu_nocbs") && names.contains(&"nohz_full"),
        "{names:?}"
    );
    assert!(p.boot.line.contains("rcu_nocbs=2-7"));
    // The legacy timer (IR-IO-APIC, interrupt remapping) cannot move: reported, not planned.
    assert!(
        !p.changes
            .iter()
            .any(|c| c.path == "/proc/irq/0/smp_affinity_list")
    );
    assert!(
        p.notes
            .iter()
            .any(|n| n.contains("0 (timer): fixed (legacy timer or cascade)")),
        "{:?}",
        p.notes
    );
    // Hex masks compare by value: `03` is already CPUs 0-1.
    let arm = plan(
        &fixture_root("arm64-8cpu-rt-tuned"),
        &req("2-7", TuneProfile::Balanced),
    )
    .unwrap();
    assert!(
        !arm.changes
            .iter()
            .any(|c| c.path.ends_with("default_smp_affinity") || c.path.ends_with("cpumask"))
    );
    // Every IRQ write targets the housekeeping CPUs.
    for c in p
        .changes
        .iter()
        .filter(|c| c.path.ends_with("smp_affinity_list"))
    {
        assert_eq!(c.new.as_deref(), Some("0-1"), "{}", c.path);
        assert_eq!(c.action, Action::Write);
    }
    insta::assert_snapshot!(
        "x86-8cpu-rt-untuned-strict-shell",
        report::tune::plan_shell(&p)
    );
}

#[test]
fn this_vm_gets_v1_cpusets() {
    // cgroup v2 here has no cpuset controller; the v1 cpuset hierarchy is mounted.
    let dir = tempfile::tempdir().unwrap();
    let root = sys::Root::at(common::vm_with_v1_cpusets(dir.path()));
    let p = plan(&root, &req("1", TuneProfile::Strict)).unwrap();
    let made: Vec<&str> = p
        .changes
        .iter()
        .filter(|c| c.action == Action::Mkdir)
        .map(|c| c.path.as_str())
        .collect();
    assert_eq!(
        made,
        [
            "/sys/fs/cgroup/cpuset/rtlab-housekeeping",
            "/sys/fs/cgroup/cpuset/rtlab-rt"
        ]
    );
    assert!(p.changes.iter().any(|c| c.path
        == "/sys/fs/cgroup/cpuset/rtlab-rt/cpuset.cpu_exclusive"
        && c.new.as_deref() == Some("1")));
    assert!(p.boot.params.iter().all(|b| b.name != "nohz_full"));
}

#[test]
fn the_tuned_board_needs_little() {
    let root = fixture_root("arm64-8cpu-rt-tuned");
    let p = plan(&root, &req("2-7", TuneProfile::Balanced)).unwrap();
    // Its command line already offloads RCU and pins IRQs to the housekeeping CPUs.
    assert!(
        p.boot
            .params
            .iter()
            .all(|b| b.name != "rcu_nocbs" && b.name != "irqaffinity"),
        "{:?}",
        p.boot.params
    );
    assert!(
        !p.changes
            .iter()
            .any(|c| c.path.ends_with("smp_affinity_list")),
        "no IRQ to move: {:?}",
        p.changes.iter().map(|c| &c.path).collect::<Vec<_>>()
    );
}

#[test]
fn splits_that_would_break_the_machine_are_refused() {
    let root = fixture_root("vm-x86_64-2cpu");
    let err = plan(&root, &req("0-1", TuneProfile::Balanced)).unwrap_err();
    assert!(matches!(err, PlanError::NoHousekeeping(..)));
    assert_eq!(
        err.to_string(),
        "--rt-cpus 0-1 leaves no housekeeping CPU (online: 0-1); keep at least one CPU for the kernel and the other tasks"
    );
    let err = plan(&root, &req("1-3", TuneProfile::Balanced)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "--rt-cpus 1-3: CPU 2 is not online (online: 0-1); isolate online CPUs only"
    );
    let err = plan(
        &root,
        &Request {
            housekeeping: Some("1".parse().unwrap()),
            ..req("1", TuneProfile::Balanced)
        },
    )
    .unwrap_err();
    assert!(matches!(err, PlanError::Overlap(..)), "{err}");
}

#[test]
fn irq_rules_pin_irqs_and_set_their_threads_policy() {
    let root = fixture_root("arm64-8cpu-rt-tuned");
    let rules: Vec<model::tune::IrqRule> = [
        "irq/*-dcvsh-irq-?=fifo:70@0",
        "apps_rsc=rr:10@5",
        "arch_timer=@1",
        "nothing-like-it*=fifo:1",
    ]
    .iter()
    .map(|r| r.parse().unwrap())
    .collect();
    let p = plan(
        &root,
        &Request {
            rules: rules.clone(),
            siblings: tune::Siblings::Confine,
            ..req("4-7", TuneProfile::Balanced)
        },
    )
    .unwrap();
    assert_eq!(p.rules, rules);
    let policies: Vec<(&str, &str, &str)> = p
        .changes
        .iter()
        .filter(|c| c.action == Action::SetPolicy)
        .map(|c| {
            (
                c.path.as_str(),
                c.current.as_deref().unwrap(),
                c.new.as_deref().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        policies,
        [
            ("/proc/120", "FIFO 50", "FIFO 70"),
            ("/proc/121", "FIFO 50", "FIFO 70"),
            ("/proc/122", "FIFO 50", "FIFO 70"),
            ("/proc/119", "FIFO 50", "RR 10"),
        ]
    );
    // A rule may put an IRQ on an RT CPU: the user's choice (the NIC next to its consumer).
    let pinned = p
        .changes
        .iter()
        .find(|c| c.path == "/proc/irq/14/smp_affinity_list")
        .unwrap();
    assert_eq!(pinned.new.as_deref(), Some("5"));
    assert!(
        pinned.reason.contains("rule apps_rsc=rr:10@5"),
        "{}",
        pinned.reason
    );
    // The per-CPU timer cannot move: said, not planned.
    assert!(
        p.notes
            .iter()
            .any(|n| n.contains("arch_timer=@1") && n.contains("cannot be moved"))
    );
    assert!(
        p.notes
            .iter()
            .any(|n| n.contains("nothing-like-it*") && n.contains("matches no IRQ"))
    );
    insta::assert_snapshot!("arm64-rules-shell", report::tune::plan_shell(&p));
}

#[test]
fn a_rule_on_an_offline_cpu_is_refused() {
    let root = fixture_root("rpi4-4cpu-isolcpu3");
    let e = plan(
        &root,
        &Request {
            rules: vec!["*=@7".parse().unwrap()],
            ..req("3", TuneProfile::Balanced)
        },
    )
    .unwrap_err();
    assert!(matches!(e, PlanError::Rule(_)));
    assert!(e.to_string().contains("CPU 7 is not online"), "{e}");
}

#[test]
fn irqbalance_keeps_banning_what_it_banned_by_itself() {
    // Without a variable irqbalance bans the isolated CPUs on its own; the variable the plan
    // sets replaces that ban, so it must name them too.
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("root");
    testkit::copy_tree(fixture_root("x86-8cpu-rt-untuned").base(), &tree);
    std::fs::write(tree.join("sys/devices/system/cpu/isolated"), "7\n").unwrap();
    let p = plan(&sys::Root::at(&tree), &req("2-6", TuneProfile::Balanced)).unwrap();
    let ban = p
        .changes
        .iter()
        .find(|c| c.action == Action::SetEnv)
        .unwrap();
    assert_eq!(ban.new.as_deref(), Some("IRQBALANCE_BANNED_CPULIST=2-7"));
}
