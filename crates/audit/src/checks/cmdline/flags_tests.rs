//! The boot switches on fake trees: the Linaro 2023 talk's tuned command line, the corpus's Ubuntu one,
//! and each equivalent spelling.

use model::audit::{Finding, Profile, Severity, Status};
use testkit::FakeRoot;

use super::int_value;
use crate::checks::cmdline::CHECKS;
use crate::context::{Ctx, Options};

const TUNED: &str = "isolcpus=managed_irq,domain,2-7 nohz_full=2-7 rcu_nocbs=2-7 rcu_nocb_poll irqaffinity=0-1 skew_tick=1 nosoftlockup nowatchdog tsc=nowatchdog threadirqs processor.max_cstate=1 intel_idle.max_cstate=1";

/// The corpus's Ubuntu desktop (corpus/proc/procfs_cmdline_ubuntu.txt, prometheus/procfs).
const UBUNTU: &str = "BOOT_IMAGE=/vmlinuz-5.11.0-22-generic root=UUID=456a0345-450d-4f7b-b7c9-43e3241d99ad ro quiet splash vt.handoff=7";

const FLAG_CHECKS: [&str; 6] = [
    "cmdline.skew_tick",
    "cmdline.nosoftlockup",
    "cmdline.nowatchdog",
    "cmdline.tsc",
    "cmdline.idle",
    "cmdline.threadirqs",
];

/// An x86 machine whose hard lockup detector runs unless the command line stops it.
fn x86(cmdline: &str) -> FakeRoot {
    FakeRoot::new()
        .cpus(8)
        .file("/proc/sys/kernel/arch", "x86_64\n")
        .file("/proc/sys/kernel/nmi_watchdog", "1\n")
        .cmdline(cmdline)
}

#[test]
fn a_detector_that_does_not_run_needs_no_boot_switch() {
    let off = x86("quiet").file("/proc/sys/kernel/nmi_watchdog", "0\n");
    let f = run_with(&off, Profile::Production, "cmdline.nowatchdog");
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
    assert!(f.summary.contains("off at run time"));
    let none = x86("quiet").remove("/proc/sys/kernel/nmi_watchdog");
    let f = run_with(&none, Profile::Production, "cmdline.nowatchdog");
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
}

fn run_with(fake: &FakeRoot, profile: Profile, id: &str) -> Finding {
    let ctx = Ctx::new(
        fake.root(),
        Options {
            profile,
            ..Options::default()
        },
    );
    let check = CHECKS.iter().find(|c| c.id == id).unwrap();
    check.finding((check.run)(&ctx))
}

fn run(fake: &FakeRoot, id: &str) -> Finding {
    run_with(fake, Profile::Production, id)
}

fn fixes(f: &Finding) -> Vec<String> {
    f.fix.iter().map(|x| x.render()).collect()
}

#[test]
fn a_tuned_x86_command_line_passes() {
    let fake = x86(TUNED);
    for id in FLAG_CHECKS {
        let f = run(&fake, id);
        assert_eq!(f.status, Status::Pass, "{id}: {}", f.summary);
        assert_eq!(f.evidence[0].source, "/proc/cmdline", "{id}");
    }
    assert_eq!(
        run(&fake, "cmdline.idle").summary,
        "processor.max_cstate=1: acpi_idle stops at C1; intel_idle.max_cstate=1: intel_idle stops at C-state 1"
    );
}

#[test]
fn the_ubuntu_desktop_needs_every_switch() {
    let fake = x86(UBUNTU);
    for id in FLAG_CHECKS {
        let f = run(&fake, id);
        assert_eq!(
            f.status,
            Status::of_problem(f.severity),
            "{id}: {}",
            f.summary
        );
        assert!(!f.fix.is_empty(), "{id}");
    }
    assert_eq!(
        fixes(&run(&fake, "cmdline.skew_tick")),
        ["boot parameter: skew_tick=1"]
    );
    assert_eq!(
        fixes(&run(&fake, "cmdline.nosoftlockup")),
        [
            "boot parameter: nosoftlockup",
            "echo 0 > /proc/sys/kernel/soft_watchdog"
        ]
    );
    assert_eq!(
        fixes(&run(&fake, "cmdline.nowatchdog")),
        [
            "boot parameter: nowatchdog",
            "echo 0 > /proc/sys/kernel/nmi_watchdog"
        ]
    );
    assert_eq!(
        fixes(&run(&fake, "cmdline.tsc"))[0],
        "boot parameter: tsc=nowatchdog"
    );
    let idle = fixes(&run(&fake, "cmdline.idle"));
    assert!(idle[0].contains("/dev/cpu_dma_latency"), "{idle:?}");
    assert_eq!(
        idle[1..],
        [
            "boot parameter: intel_idle.max_cstate=1",
            "boot parameter: processor.max_cstate=1"
        ]
    );
    assert_eq!(
        fixes(&run(&fake, "cmdline.threadirqs"))[0],
        "boot parameter: threadirqs"
    );
    // The finding says what was seen: the whole command line when the parameter is absent.
    let f = run(&fake, "cmdline.skew_tick");
    assert!(
        f.evidence[0].value.contains("vt.handoff=7"),
        "{}",
        f.evidence[0].value
    );
}

#[test]
fn equivalent_spellings_count() {
    for (cmdline, id) in [
        ("skew_tick=0x1", "cmdline.skew_tick"),
        ("nowatchdog", "cmdline.nosoftlockup"),
        ("watchdog_thresh=0", "cmdline.nosoftlockup"),
        ("nmi_watchdog=0", "cmdline.nowatchdog"),
        ("nmi_watchdog=nopanic,0", "cmdline.nowatchdog"),
        ("watchdog_thresh=0", "cmdline.nowatchdog"),
        ("tsc=reliable", "cmdline.tsc"),
        ("tsc=noirqtime tsc=nowatchdog", "cmdline.tsc"),
        ("idle=poll", "cmdline.idle"),
        ("idle=halt", "cmdline.idle"),
        ("cpuidle.off=1", "cmdline.idle"),
    ] {
        let f = run(&x86(cmdline), id);
        assert_eq!(f.status, Status::Pass, "{cmdline} for {id}: {}", f.summary);
    }
    for (cmdline, id) in [
        ("skew_tick=0", "cmdline.skew_tick"),
        ("skew_tick", "cmdline.skew_tick"),
        ("nmi_watchdog=1", "cmdline.nowatchdog"),
        ("nosoftlockup", "cmdline.nowatchdog"),
        ("watchdog_thresh=10", "cmdline.nosoftlockup"),
        ("cpuidle.off=0", "cmdline.idle"),
    ] {
        let f = run(&x86(cmdline), id);
        assert_eq!(
            f.status,
            Status::of_problem(f.severity),
            "{cmdline} for {id}: {}",
            f.summary
        );
    }
}

#[test]
fn intel_idle_zero_is_not_a_limit() {
    let f = run(&x86("intel_idle.max_cstate=0"), "cmdline.idle");
    assert_eq!(f.status, Status::Info);
    assert!(
        f.summary.contains("only disables intel_idle"),
        "{}",
        f.summary
    );
    let f = run(
        &x86("intel_idle.max_cstate=0 processor.max_cstate=1"),
        "cmdline.idle",
    );
    assert_eq!(f.status, Status::Pass);
    assert!(
        f.summary.contains("only disables intel_idle"),
        "{}",
        f.summary
    );
}

#[test]
fn tsc_unstable_and_other_architectures() {
    let f = run(&x86("tsc=unstable"), "cmdline.tsc");
    assert_eq!(f.status, Status::Info);
    assert!(f.summary.starts_with("tsc=unstable"));
    let arm = FakeRoot::new()
        .cpus(8)
        .file("/proc/sys/kernel/arch", "aarch64\n")
        .cmdline("quiet");
    let f = run(&arm, "cmdline.tsc");
    assert_eq!(f.status, Status::Pass);
    assert_eq!(f.summary, "not x86 (aarch64): there is no TSC to watch");
    assert_eq!(
        fixes(&run(&arm, "cmdline.idle"))[1],
        "boot parameter: cpuidle.off=1"
    );
    let unknown = FakeRoot::new().cpus(1).cmdline("quiet");
    assert_eq!(run(&unknown, "cmdline.tsc").status, Status::Unknown);
}

#[test]
fn the_debug_profile_keeps_the_lockup_detectors_as_information() {
    let fake = x86(UBUNTU);
    for id in ["cmdline.nosoftlockup", "cmdline.nowatchdog"] {
        let f = run_with(&fake, Profile::Debug, id);
        assert_eq!(
            (f.status, f.severity),
            (Status::Info, Severity::Info),
            "{id}"
        );
        assert!(f.summary.contains("debug profile"), "{}", f.summary);
        let f = run(&fake, id);
        assert_eq!(f.severity, Severity::Warn);
    }
}

#[test]
fn preempt_rt_implies_threaded_irqs() {
    let fake = x86("quiet").realtime(true);
    let f = run(&fake, "cmdline.threadirqs");
    assert_eq!(f.status, Status::Pass);
    assert_eq!(f.evidence[0].source, "/sys/kernel/realtime");
}

#[test]
fn kernel_integers() {
    assert_eq!(int_value("1"), Some(1));
    assert_eq!(int_value(" 0x10 "), Some(16));
    assert_eq!(int_value("-1"), Some(-1));
    assert_eq!(int_value("0xg"), None);
    assert_eq!(int_value(""), None);
}

#[test]
fn no_command_line_is_unknown() {
    let fake = FakeRoot::new().cpus(1);
    for id in FLAG_CHECKS {
        assert_eq!(run(&fake, id).status, Status::Unknown, "{id}");
    }
}
