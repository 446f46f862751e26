//! The `log.*` checks on every real log of the corpus (copied to `fixtures/dmesg/`, see its
//! README) and on `/dev/kmsg` records written from the kernel's message formats.

use std::path::PathBuf;

use model::audit::{Fix, Status};
use testkit::FakeRoot;

use super::*;
use crate::context::Options;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/dmesg")
        .join(name)
}

/// A context judging the saved log `name` (as `--dmesg` does).
fn saved(name: &str) -> (FakeRoot, Ctx) {
    let fake = FakeRoot::new().cpus(2);
    let ctx = Ctx::new(
        fake.root(),
        Options {
            dmesg: Some(crate::context::Source::kernel_log_file(&fixture(name)).unwrap()),
            ..Options::default()
        },
    );
    (fake, ctx)
}

/// A context over a fake tree whose `/dev/kmsg` holds `records`.
fn kmsg(records: &str) -> (FakeRoot, Ctx) {
    let fake = FakeRoot::new().cpus(2).file("/dev/kmsg", records);
    let ctx = Ctx::new(fake.root(), Options::default());
    (fake, ctx)
}

fn check(id: &str) -> &'static Check {
    CHECKS
        .iter()
        .chain(crate::checks::time::CHECKS)
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no check {id}"))
}

/// The ids of the log checks (and time.tsc_stable) that find a problem; every other one
/// must pass.
fn triggered(ctx: &Ctx) -> Vec<&'static str> {
    let mut ids = Vec::new();
    for c in CHECKS.iter().chain([check("time.tsc_stable")]) {
        let finding = c.finding((c.run)(ctx));
        match finding.status {
            Status::Pass => {}
            Status::Fail | Status::Warn => ids.push(c.id),
            other => panic!("{}: {other:?}: {}", c.id, finding.summary),
        }
    }
    ids
}

fn finding(ctx: &Ctx, id: &str) -> model::audit::Finding {
    let c = check(id);
    c.finding((c.run)(ctx))
}

fn advice(f: &model::audit::Finding) -> String {
    f.fix.iter().map(Fix::render).collect::<Vec<_>>().join("\n")
}

#[test]
fn lkp_hung_task() {
    let (_fake, ctx) = saved("lkp_hung_task_swapper.log");
    assert_eq!(triggered(&ctx), ["log.hung_task"]);
    let f = finding(&ctx, "log.hung_task");
    assert_eq!(f.status, Status::Warn);
    assert!(
        f.summary.contains("swapper:1 blocked for more than 120 s"),
        "{}",
        f.summary
    );
    assert!(f.evidence[0].source.ends_with("lkp_hung_task_swapper.log"));
    assert_eq!(
        f.evidence[0].value,
        "[251.950215] INFO: task swapper:1 blocked for more than 120 seconds."
    );
}

#[test]
fn lkp_irq16_nobody_cared_in_dmesg_x_format() {
    let (_fake, ctx) = saved("lkp_kmsg_irq16_nobody_cared.log");
    assert_eq!(triggered(&ctx), ["log.irq_disabled"]);
    let f = finding(&ctx, "log.irq_disabled");
    assert_eq!(f.status, Status::Fail);
    assert!(
        f.summary.contains("IRQ 16 (handlers: usb_hcd_irq)"),
        "{}",
        f.summary
    );
    assert_eq!(f.evidence.len(), 2);
    assert_eq!(f.evidence[1].value, "[13.708946] Disabling IRQ #16");
    let fix = advice(&f);
    assert!(fix.contains("grep -E '^ *16:' /proc/interrupts"), "{fix}");
    assert!(fix.contains("irqpoll"), "{fix}");
}

#[test]
fn lkp_lockdep_circular_with_caller_ids() {
    let (_fake, ctx) = saved("lkp_lockdep_circular_C1.log");
    assert_eq!(triggered(&ctx), ["log.lockdep"]);
    let f = finding(&ctx, "log.lockdep");
    assert_eq!(
        f.summary,
        "1 lockdep report: possible circular locking dependency (getty/4382)"
    );
    assert_eq!(
        f.evidence[0].value,
        "[327.929818] WARNING: possible circular locking dependency detected"
    );
    assert!(!advice(&f).contains("invalid wait context"));
}

#[test]
fn lkp_sleeping_function_with_irqs_disabled() {
    let (_fake, ctx) = saved("lkp_sleeping_function_irq_manage.log");
    assert_eq!(triggered(&ctx), ["log.sleeping_in_atomic"]);
    let f = finding(&ctx, "log.sleeping_in_atomic");
    assert_eq!(f.status, Status::Fail);
    assert_eq!(
        f.summary,
        "1 report of \"sleeping function called from invalid context\": 1 with IRQs disabled (sed at kernel/irq/manage.c:110)"
    );
    assert_eq!(
        f.evidence[0].value,
        "[334.390692] BUG: sleeping function called from invalid context at kernel/irq/manage.c:110; in_atomic(): 1, irqs_disabled(): 1, pid: 329"
    );
    let fix = advice(&f);
    assert!(
        fix.contains("raw_spinlock_t") && fix.contains("IRQs were disabled"),
        "{fix}"
    );
    assert!(!fix.contains("preemption was disabled"), "{fix}");
}

#[test]
fn lkp_soft_lockup_glued_to_other_output() {
    let (_fake, ctx) = saved("lkp_soft_lockup_interleaved.log");
    assert_eq!(triggered(&ctx), ["log.soft_lockup"]);
    let f = finding(&ctx, "log.soft_lockup");
    assert_eq!(
        f.summary,
        "1 lockup report: soft lockup on CPU 0 for 23 s in swapper:1"
    );
}

#[test]
fn syzkaller_scheduling_while_atomic() {
    let (_fake, ctx) = saved("syzkaller_366_scheduling_while_atomic.log");
    assert_eq!(triggered(&ctx), ["log.scheduling_while_atomic"]);
    let f = finding(&ctx, "log.scheduling_while_atomic");
    assert_eq!(
        f.summary,
        "1 report of \"scheduling while atomic\": syz-executor.4/21395, preempt_count 0x00000201: preemption disabled 1 deep, bottom halves disabled"
    );
}

/// the Linaro 2023 talk's two reports on a PREEMPT_RT arm64 board, as `/dev/kmsg` records in today's
/// three-message form, plus the other RT messages, each written from its kernel format.
const RT_KMSG: &str = "\
3,500,2100000,-;BUG: sleeping function called from invalid context at kernel/locking/spinlock_rt.c:46
 SUBSYSTEM=cpu
3,501,2100001,-;in_atomic(): 0, irqs_disabled(): 128, non_block: 0, pid: 298, name: systemd-udevd
3,502,2100002,-;preempt_count: 0, expected: 0
3,503,2200000,-;BUG: sleeping function called from invalid context at kernel/locking/spinlock_rt.c:46
3,504,2200001,-;in_atomic(): 1, irqs_disabled(): 0, non_block: 0, pid: 291, name: systemd-udevd
3,505,2200002,-;preempt_count: 1, expected: 0
4,506,3000000,-;sched: RT throttling activated
4,507,3500000,-;hrtimer: interrupt took 3140000 ns
3,508,4000000,-;rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:
4,509,5000000,-;BUG: Invalid wait context
4,510,5000001,-;-----------------------------
4,511,5000002,-;swapper/0/1 is trying to lock:
";

#[test]
fn rt_messages_from_kmsg() {
    let (_fake, ctx) = kmsg(RT_KMSG);
    assert_eq!(
        triggered(&ctx),
        [
            "log.sleeping_in_atomic",
            "log.lockdep",
            "log.rt_throttling",
            "log.hrtimer_interrupt",
            "log.rcu_stall"
        ]
    );
    let f = finding(&ctx, "log.sleeping_in_atomic");
    assert_eq!(
        f.summary,
        "2 reports of \"sleeping function called from invalid context\": 1 with IRQs disabled (systemd-udevd at kernel/locking/spinlock_rt.c:46); 1 with preemption disabled (systemd-udevd at kernel/locking/spinlock_rt.c:46)"
    );
    assert_eq!(f.evidence[0].source, "/dev/kmsg");
    assert_eq!(f.fix.len(), 2);
    let f = finding(&ctx, "log.lockdep");
    assert!(
        f.summary.contains("invalid wait context (swapper/0/1)"),
        "{}",
        f.summary
    );
    assert!(advice(&f).contains("raw_spinlock_t"));
    let f = finding(&ctx, "log.hrtimer_interrupt");
    assert!(f.summary.contains("took 3140.000 us"), "{}", f.summary);
    assert_eq!(f.status, Status::Warn);
    let f = finding(&ctx, "log.rcu_stall");
    assert_eq!(f.summary, "1 RCU stall report (rcu_preempt)");
    let f = finding(&ctx, "log.rt_throttling");
    assert_eq!(
        f.evidence[0].value,
        "[3.000000] sched: RT throttling activated"
    );
}

#[test]
fn a_clean_log_passes_and_an_unreadable_one_is_unknown() {
    let (_fake, ctx) = kmsg(
        "6,1,0,-;Booting Linux on physical CPU 0x0000000000 [0x411fd050]\n6,2,10,-;Linux version 6.1.0-50-rt-arm64\n",
    );
    assert!(triggered(&ctx).is_empty());
    let f = finding(&ctx, "log.soft_lockup");
    assert_eq!(
        f.summary,
        "no soft or hard lockup in the kernel log (2 messages)"
    );
    assert_eq!(f.evidence[0].source, "/dev/kmsg");

    let fake = FakeRoot::new().cpus(1);
    let ctx = Ctx::new(fake.root(), Options::default());
    for c in CHECKS {
        let f = c.finding((c.run)(&ctx));
        assert_eq!(f.status, Status::Unknown, "{}", c.id);
        assert!(
            f.summary.contains("/dev/kmsg") && f.summary.contains("--dmesg"),
            "{}",
            f.summary
        );
    }
    // A saved log that cannot be read is refused before any check runs (the CLI exits 2):
    // missing, a directory, empty, binary — never judged as a clean log.
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.log");
    std::fs::write(&empty, "\n  \n").unwrap();
    let binary = dir.path().join("binary.log");
    std::fs::write(&binary, b"\x7fELF\x02\x01\x01\0\0\0").unwrap();
    for (path, why) in [
        (fixture("no-such-file.log"), "no such file"),
        (dir.path().to_path_buf(), "directory"),
        (empty, "empty"),
        (binary, "binary"),
    ] {
        let err = crate::context::Source::kernel_log_file(&path).unwrap_err();
        assert!(err.contains(why), "{}: {err}", path.display());
    }
}

#[test]
fn repeated_reports_are_counted_and_listed_once() {
    let line = "[  1.000000] INFO: task kworker/u8:2:123 blocked for more than 122 seconds.\n";
    let (_fake, ctx) = kmsg(&line.repeat(3));
    let f = finding(&ctx, "log.hung_task");
    assert_eq!(
        f.summary,
        "3 hung task reports: kworker/u8:2:123 blocked for more than 122 s"
    );
    assert!(f.evidence[0].value.ends_with("(first of 3)"));
    // Many distinct ones are listed up to eight.
    let many: String = (0..12)
        .map(|i| format!("INFO: task t{i}:{i} blocked for more than 120 seconds.\n"))
        .collect();
    let (_fake, ctx) = kmsg(&many);
    let f = finding(&ctx, "log.hung_task");
    assert!(f.summary.ends_with("... and 4 more"), "{}", f.summary);
    assert!(f.evidence[0].value.starts_with("line 1: "));
}

#[test]
fn preempt_counts_in_words() {
    assert_eq!(
        preempt_count_words(0x201),
        "preemption disabled 1 deep, bottom halves disabled"
    );
    assert_eq!(
        preempt_count_words(0x10100),
        "serving a softirq, in a hard IRQ"
    );
    assert_eq!(preempt_count_words(0x100000), "in an NMI");
    assert_eq!(preempt_count_words(0), "nothing disabled");
}

#[test]
fn long_messages_are_shortened_on_a_character_boundary() {
    let text = format!("hrtimer: interrupt took 5 ns {}", "é".repeat(300));
    let (_fake, ctx) = kmsg(&format!("4,1,1,-;{text}\n"));
    let f = finding(&ctx, "log.hrtimer_interrupt");
    assert!(f.evidence[0].value.ends_with("..."));
    assert!(f.evidence[0].value.chars().count() < 200);
}

#[test]
fn message_counts_read_as_words() {
    assert_eq!(super::messages(1), "1 message");
    assert_eq!(super::messages(0), "0 messages");
    assert_eq!(super::messages(40), "40 messages");
}
