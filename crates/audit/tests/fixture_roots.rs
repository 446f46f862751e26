//! Every check against every tree in `fixtures/roots/`: the findings of each machine are
//! snapshot-reviewed (tests/snapshots/), and what each tree was built to show is asserted
//! directly, so a snapshot accepted by mistake still fails here.

use audit::{Options, Selection};
use model::CpuSet;
use model::audit::{AuditReport, Status};
use report::audit::{AuditStyle, audit_table};

fn audit(name: &str, options: &Options) -> AuditReport {
    let root = testkit::fixture_root(name);
    let mut report = audit::run(&root, options, &Selection::default()).unwrap();
    report.elapsed_us = 0;
    report
}

fn status(report: &AuditReport, id: &str) -> Status {
    report
        .findings
        .iter()
        .find(|f| f.id == id)
        .unwrap_or_else(|| panic!("no finding {id}"))
        .status
}

#[test]
fn every_tree_is_audited_without_errors_and_snapshotted() {
    let names = testkit::fixture_names();
    assert!(names.len() >= 4, "fixture trees: {names:?}");
    for name in names {
        let report = audit(&name, &Options::default());
        assert!(
            report.findings.len() >= 40,
            "{name}: {} findings",
            report.findings.len()
        );
        for f in &report.findings {
            assert_ne!(
                f.status,
                Status::Error,
                "{name}: {} errored: {}",
                f.id,
                f.summary
            );
            assert!(!f.summary.is_empty(), "{name}: {} has no summary", f.id);
            if matches!(f.status, Status::Fail | Status::Warn | Status::Info) {
                assert!(!f.evidence.is_empty(), "{name}: {} has no evidence", f.id);
            }
            let text = format!("{:?}", f);
            assert!(
                !text.contains("fixtures/roots"),
                "{name}: {} leaks the fixture path: {text}",
                f.id
            );
        }
        let json = serde_json::to_string(&report).unwrap();
        let back: AuditReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back, report, "{name}: JSON round trip");
        let table = audit_table(&report, AuditStyle::default(), &|_, l| l.to_string());
        insta::assert_snapshot!(name.clone(), table);
    }
}

#[test]
fn the_tuned_arm64_board_passes_what_talk_000_tuned() {
    let r = audit("arm64-8cpu-rt-tuned", &Options::default());
    assert_eq!(r.rt_cpus.cpus, CpuSet::parse_list("2-7").unwrap());
    assert_eq!(r.rt_cpus.source, "cpuset partition");
    for id in [
        "kernel.preempt_rt",
        "kconfig.preempt_rt",
        "cmdline.rcu_nocbs",
        "cmdline.irqaffinity",
        "cmdline.skew_tick",
        "irq.effective_affinity",
        "irq.irqbalance",
        "workqueue.unbound_cpumask",
        "cpuset.partitions",
        "power.governor",
        "power.cpuidle",
        "sched.rt_throttling",
        "sched.timer_migration",
        "memory.swap",
        "time.clocksource",
    ] {
        assert_eq!(status(&r, id), Status::Pass, "{id}");
    }
    assert_eq!(
        r.counts.fail,
        0,
        "{:#?}",
        r.findings
            .iter()
            .filter(|f| f.status == Status::Fail)
            .collect::<Vec<_>>()
    );
}

#[test]
fn the_pi_with_isolcpus_3_shows_its_pinned_irq_and_console() {
    let r = audit("rpi4-4cpu-isolcpu3", &Options::default());
    assert_eq!(r.rt_cpus.cpus, CpuSet::from_cpus([3]));
    assert_eq!(r.rt_cpus.source, "isolcpus");
    assert_eq!(status(&r, "kernel.preempt_rt"), Status::Pass);
    assert_eq!(status(&r, "irq.effective_affinity"), Status::Fail);
    assert_eq!(status(&r, "cmdline.serial_console"), Status::Info);
    assert_eq!(status(&r, "cmdline.rcu_nocbs"), Status::Warn);
    assert_eq!(status(&r, "power.governor"), Status::Warn);
    assert_eq!(status(&r, "log.irq_disabled"), Status::Fail);
    assert_eq!(status(&r, "log.hrtimer_interrupt"), Status::Warn);
}

#[test]
fn the_untuned_x86_rt_box_fails_where_it_should() {
    let r = audit("x86-8cpu-rt-untuned", &Options::default());
    assert_eq!(r.rt_cpus.source, "none");
    assert_eq!(status(&r, "kernel.preempt_rt"), Status::Pass);
    assert_eq!(status(&r, "cpu.isolation"), Status::Warn);
    assert_eq!(status(&r, "irq.affinity"), Status::Unknown);
    // A 6.1 PREEMPT_RT kernel has no THP (TRANSPARENT_HUGEPAGE depends on !PREEMPT_RT).
    assert_eq!(status(&r, "memory.thp"), Status::Pass);
    for id in ["memory.swap", "sched.rt_throttling"] {
        assert_eq!(status(&r, id), Status::Info, "{id}");
    }
    for id in [
        "watchdog.nmi",
        "sched.timer_migration",
        "power.cpuidle",
        "power.governor",
        "time.clocksource",
    ] {
        assert_eq!(status(&r, id), Status::Warn, "{id}");
    }
    for id in ["time.tsc_stable", "log.sleeping_in_atomic"] {
        assert_eq!(status(&r, id), Status::Fail, "{id}");
    }
    // Naming the RT CPUs turns the placement checks on: irqbalance spreads onto them.
    let r = audit(
        "x86-8cpu-rt-untuned",
        &Options {
            rt_cpus: Some(CpuSet::parse_list("2-3,6-7").unwrap()),
            ..Options::default()
        },
    );
    assert_eq!(status(&r, "irq.irqbalance"), Status::Fail);
    assert_eq!(status(&r, "cpu.smt_siblings"), Status::Pass);
    let r = audit(
        "x86-8cpu-rt-untuned",
        &Options {
            rt_cpus: Some(CpuSet::parse_list("2-3").unwrap()),
            ..Options::default()
        },
    );
    assert_eq!(status(&r, "cpu.smt_siblings"), Status::Warn);
}

#[test]
fn this_vm_is_not_rt_and_says_so() {
    let r = audit("vm-x86_64-2cpu", &Options::default());
    assert_eq!(status(&r, "kernel.preempt_rt"), Status::Fail);
    // The same missing PREEMPT_RT fails once: the config is the running kernel's own.
    assert_eq!(status(&r, "kconfig.preempt_rt"), Status::Info);
    assert_eq!(r.counts.fail, 1);
    assert!(r.failed());
    // A config named with --kconfig is the kernel to be built, judged on its own.
    let next = audit::context::Source {
        text: "CONFIG_PREEMPT_VOLUNTARY=y\n# CONFIG_PREEMPT_RT is not set\n".to_string(),
        path: "next.config".to_string(),
    };
    let r = audit(
        "vm-x86_64-2cpu",
        &Options {
            kconfig: Some(next),
            ..Options::default()
        },
    );
    assert_eq!(status(&r, "kernel.preempt_rt"), Status::Fail);
    assert_eq!(status(&r, "kconfig.preempt_rt"), Status::Fail);
}
