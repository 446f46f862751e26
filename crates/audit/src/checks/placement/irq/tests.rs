//! Tests of the IRQ placement checks: the tuned and untuned trees, and the corpus's
//! `/proc/interrupts` files from a 4-vCPU KVM guest and a dual Cortex-A9 NAS.

use model::audit::{Finding, Fix, Status};
use testkit::FakeRoot;

use super::super::common::irq_table;
use super::super::trees::{Tree, tuned, tuned_ctx, untuned, untuned_ctx};
use super::effective::EFFECTIVE_AFFINITY;
use super::*;
use crate::context::Options;

fn finding(check: &Check, ctx: &Ctx) -> Finding {
    check.finding((check.run)(ctx))
}

fn ctx_with_rt(fake: &FakeRoot, rt: &str) -> Ctx {
    Ctx::new(
        fake.root(),
        Options {
            rt_cpus: Some(CpuSet::parse_list(rt).unwrap()),
            ..Options::default()
        },
    )
}

#[test]
fn tuned_board_passes() {
    let fake = tuned();
    let ctx = tuned_ctx(&fake);
    let f = finding(&AFFINITY, &ctx);
    assert_eq!(f.status, Status::Pass, "{f:?}");
    assert_eq!(
        f.summary,
        "7 IRQs with a handler, none that can be moved is allowed on RT CPUs 2-7"
    );
    let excluded = &f.evidence.last().unwrap().value;
    assert!(
        excluded.contains("11 (arch_timer) per-CPU (GIC PPI)")
            && excluded.contains("14 (arm-pmu) per-CPU (GIC PPI)"),
        "{excluded}"
    );
    let f = finding(&EFFECTIVE_AFFINITY, &ctx);
    assert_eq!(f.status, Status::Pass, "{f:?}");
    let f = finding(&DEFAULT_AFFINITY, &ctx);
    assert_eq!(f.status, Status::Pass, "{f:?}");
    assert_eq!(f.summary, "new IRQs start on CPUs 0-1 (mask 03)");
}

#[test]
fn untuned_box_fires_each() {
    let fake = untuned();
    let ctx = untuned_ctx(&fake);

    let f = finding(&AFFINITY, &ctx);
    assert_eq!(f.status, Status::Warn, "{f:?}");
    assert_eq!(
        f.summary,
        "5 IRQs may run on RT CPUs 2-7: 4 (ttyS0), 9 (acpi), 30 (eth0), 31 (eth0-rx-1), 40 (nvme0q0)"
    );
    assert_eq!(
        f.fix[0],
        Fix::Write {
            path: "/proc/irq/4/smp_affinity_list".into(),
            value: "0-1".into()
        }
    );
    assert!(f.fix.iter().any(|x| matches!(x, Fix::Command { command }
        if command.starts_with("for i in 4 9 30 31 40; do echo 0-1 > /proc/irq/$i/smp_affinity_list"))));
    let excluded = f
        .evidence
        .iter()
        .find(|e| e.source == "/proc/interrupts (not judged)")
        .unwrap();
    assert_eq!(
        excluded.value,
        "cannot be moved: 0 (timer) fixed (legacy timer or cascade); probably kernel-managed: 43 (nvme0q3)"
    );

    let f = finding(&EFFECTIVE_AFFINITY, &ctx);
    assert_eq!(f.status, Status::Fail, "{f:?}");
    assert_eq!(
        f.summary,
        "2 IRQs are delivered to RT CPUs and have fired there: 4 (ttyS0) 1443 on CPU 3, 30 (eth0) 250301 on CPU 5; and probably kernel-managed (moved only by isolcpus=managed_irq at boot): 43 (nvme0q3) 910 on CPU 3"
    );
    assert!(
        f.evidence
            .iter()
            .any(|e| e.source == "/proc/irq/43/effective_affinity_list"
                && e.value == "3; /proc/interrupts since boot: 910 on CPU 3")
    );
    assert!(f.fix.contains(&Fix::BootParam {
        param: "isolcpus=managed_irq,domain,2-7".into()
    }));

    let f = finding(&DEFAULT_AFFINITY, &ctx);
    assert_eq!(f.status, Status::Warn, "{f:?}");
    assert_eq!(
        f.summary,
        "new IRQs start on CPUs 0-7 including RT CPUs 2-7 (mask ff)"
    );
    assert_eq!(
        f.fix,
        [
            Fix::Write {
                path: DEFAULT_SMP_AFFINITY.into(),
                value: "3".into()
            },
            Fix::BootParam {
                param: "irqaffinity=0-1".into()
            }
        ]
    );
}

#[test]
fn managed_only_is_a_warning_and_quiet_irqs_pass() {
    let fake = Tree(
        FakeRoot::new()
            .cpus(4)
            .cmdline("isolcpus=managed_irq,domain,2-3"),
    )
    .file(
        "/proc/interrupts",
        "  CPU0 CPU1 CPU2 CPU3
 40:  0 0 77 0  PCI-MSI 1048578-edge  nvme0q2
 41:  5 0 0 0  PCI-MSI 1048579-edge  eth1
",
    )
    .irq(40, "2", "2", "nvme0q2")
    .irq(41, "0-3", "3", "eth1")
    .0;
    let ctx = Ctx::new(fake.root(), Options::default());
    let f = finding(&EFFECTIVE_AFFINITY, &ctx);
    assert_eq!(f.status, Status::Warn, "{f:?}");
    assert!(
        f.summary.contains("only probably kernel-managed"),
        "{}",
        f.summary
    );
    // managed_irq is already on the command line: no boot parameter to add.
    assert!(!f.fix.iter().any(|x| matches!(x, Fix::BootParam { .. })));

    let fake = Tree(FakeRoot::new().cpus(4).cmdline("isolcpus=2-3"))
        .file(
            "/proc/interrupts",
            "  CPU0 CPU1 CPU2 CPU3\n 41:  5 0 0 0  PCI-MSI 1-edge  eth1\n",
        )
        .irq(41, "0-3", "3", "eth1")
        .0;
    let f = finding(
        &EFFECTIVE_AFFINITY,
        &Ctx::new(fake.root(), Options::default()),
    );
    assert_eq!(f.status, Status::Pass, "{f:?}");
    assert_eq!(
        f.summary,
        "1 IRQ is placed on RT CPUs but never fired there: 41 (eth1)"
    );
}

#[test]
fn without_counts_or_effective_lists() {
    // No /proc/interrupts: placements are reported, as warnings.
    let fake = Tree(FakeRoot::new().cpus(2).cmdline("isolcpus=1"))
        .irq(7, "0-1", "1", "eth0")
        .0;
    let f = finding(
        &EFFECTIVE_AFFINITY,
        &Ctx::new(fake.root(), Options::default()),
    );
    assert_eq!(f.status, Status::Warn, "{f:?}");
    assert!(
        f.summary.contains("whether they fired is unknown"),
        "{}",
        f.summary
    );
    // No effective_affinity_list anywhere: the requested list stands in.
    let fake = Tree(FakeRoot::new().cpus(2).cmdline("isolcpus=1"))
        .file(
            "/proc/interrupts",
            "  CPU0 CPU1\n 7:  0 12  IO-APIC 7-edge  eth0\n",
        )
        .irq(7, "1", "", "eth0")
        .0;
    let f = finding(
        &EFFECTIVE_AFFINITY,
        &Ctx::new(fake.root(), Options::default()),
    );
    assert_eq!(f.status, Status::Fail, "{f:?}");
    assert!(
        f.evidence
            .iter()
            .any(|e| e.source == "/proc/irq/7/smp_affinity_list")
    );
    // No /proc/irq at all.
    let fake = FakeRoot::new().cpus(2).cmdline("isolcpus=1");
    let ctx = Ctx::new(fake.root(), Options::default());
    assert_eq!(finding(&AFFINITY, &ctx).status, Status::Unknown);
    assert_eq!(finding(&DEFAULT_AFFINITY, &ctx).status, Status::Unknown);
    let fake = FakeRoot::new()
        .cpus(2)
        .cmdline("isolcpus=1")
        .file(DEFAULT_SMP_AFFINITY, "zz\n");
    let f = finding(
        &DEFAULT_AFFINITY,
        &Ctx::new(fake.root(), Options::default()),
    );
    assert_eq!(f.status, Status::Unknown);
    assert!(f.summary.contains("'zz'"), "{}", f.summary);
}

#[test]
fn managed_names() {
    for name in [
        "nvme0q3",
        "nvme12q1",
        "virtio2-req.0",
        "virtio1-request.3",
        "hisi_sas-q5",
        "mpt3sas0-msix3",
    ] {
        assert!(looks_managed(name), "{name}");
    }
    for name in [
        "nvme0q0",
        "nvme0",
        "nvmeq1",
        "eth0-TxRx-3",
        "virtio0-input.0",
        "eth0",
        "i915",
        "q-",
        "-q",
    ] {
        assert!(!looks_managed(name), "{name}");
    }
}

/// corpus/proc/procfs_interrupts_4cpu_kvm.txt (prometheus/procfs fixture, a 4-vCPU KVM
/// guest), rows 0-36 with the header; affinities as such a guest sets them: virtio-blk
/// request queues one per CPU, everything else on every CPU and effective where it fired.
const KVM: &str = "           CPU0       CPU1       CPU2       CPU3
  0:         49          0          0          0   IO-APIC   2-edge      timer
  1:          0          0          0          9   IO-APIC   1-edge      i8042
  4:          0       1443          0          0   IO-APIC   4-edge      ttyS0
  8:          1          0          0          0   IO-APIC   8-edge      rtc0
  9:          0          0          0          0   IO-APIC   9-fasteoi   acpi
 12:          0          0        144          0   IO-APIC  12-edge      i8042
 22:          0          0          0          5   IO-APIC  22-fasteoi   virtio1
 24:          0          0          0          0   PCI-MSI 114688-edge      virtio5-config
 25:       1800          0          0          0   PCI-MSI 114689-edge      virtio5-req.0
 26:          0       1469          0          0   PCI-MSI 114690-edge      virtio5-req.1
 27:          0          0       2654          0   PCI-MSI 114691-edge      virtio5-req.2
 28:          0          0          0       1989   PCI-MSI 114692-edge      virtio5-req.3
 29:       1362          0          0        934   PCI-MSI 512000-edge      ahci[0000:00:1f.2]
 30:          0          0          0          0   PCI-MSI 98304-edge      xhci_hcd
 35:          0          0          0          0   PCI-MSI 16384-edge      virtio0-config
 36:          0        335         37          0   PCI-MSI 16385-edge      virtio0-input.0
NMI:          0          0          0          0   Non-maskable interrupts
LOC:      10196       7429       8542       8229   Local timer interrupts
ERR:          0
MIS:          0
";

#[test]
fn kvm_guest_from_the_corpus() {
    let mut tree =
        Tree(FakeRoot::new().cpus(4).cmdline("console=ttyS0")).file("/proc/interrupts", KVM);
    for (n, aff, eff) in [
        (0, "0-3", "0"),
        (1, "0-3", "3"),
        (4, "0-3", "1"),
        (8, "0-3", "0"),
        (9, "0-3", "0"),
        (12, "0-3", "2"),
        (22, "0-3", "3"),
        (24, "0-3", "0"),
        (25, "0", "0"),
        (26, "1", "1"),
        (27, "2", "2"),
        (28, "3", "3"),
        (29, "0-3", "3"),
        (30, "0-3", "0"),
        (35, "0-3", "0"),
        (36, "0-3", "2"),
    ] {
        tree = tree.irq(n, aff, eff, "");
    }
    let fake = tree.0;
    let ctx = ctx_with_rt(&fake, "2-3");
    let table = irq_table(&ctx).unwrap();
    assert_eq!(table.irqs.len(), 16);
    let kind = |n: u32| classify(table.get(n).unwrap(), ctx.online());
    assert_eq!(kind(0), Kind::Fixed("fixed (legacy timer or cascade)"));
    assert_eq!(kind(25), Kind::Managed);
    assert_eq!(kind(28), Kind::Managed);
    assert_eq!(kind(36), Kind::Movable);
    assert_eq!(kind(29), Kind::Movable);
    assert_eq!(table.get(29).unwrap().actions, ["ahci[0000:00:1f.2]"]);

    let f = finding(&EFFECTIVE_AFFINITY, &ctx);
    assert_eq!(f.status, Status::Fail, "{f:?}");
    assert_eq!(
        f.summary,
        "5 IRQs are delivered to RT CPUs and have fired there: 1 (i8042) 9 on CPU 3, 12 (i8042) 144 on CPU 2, 22 (virtio1) 5 on CPU 3, 29 (ahci[0000:00:1f.2]) 934 on CPU 3, 36 (virtio0-input.0) 37 on CPU 2; and probably kernel-managed (moved only by isolcpus=managed_irq at boot): 27 (virtio5-req.2) 2654 on CPU 2, 28 (virtio5-req.3) 1989 on CPU 3"
    );
    assert!(
        f.evidence
            .iter()
            .any(|e| e.value.contains("27 (virtio5-req.2), 28 (virtio5-req.3)"))
    );
    let f = finding(&AFFINITY, &ctx);
    assert_eq!(f.status, Status::Warn);
    assert_eq!(
        f.summary,
        "11 IRQs may run on RT CPUs 2-3: 1 (i8042), 4 (ttyS0), 8 (rtc0), 9 (acpi), 12 (i8042), 22 (virtio1), 24 (virtio5-config), 29 (ahci[0000:00:1f.2]) ... and 3 more"
    );
    assert!(f.fix.iter().any(|x| matches!(x, Fix::Command { command }
        if command.starts_with("for i in 1 4 8 9 12 22 24 29 30 35 36; do echo 0-1 "))));
}

/// corpus/proc/helios4_armada388_interrupts.txt (Marvell Armada 388, dual Cortex-A9), rows
/// 17-22 and 36-41.
const HELIOS4: &str = "           CPU0       CPU1
 17:   40807520   39650240     GIC-0  29 Edge      twd
 18:          0          0      MPIC   5 Level     armada_370_xp_per_cpu_tick
 19:          0          0      MPIC   3 Level     arm-pmu
 20:        176          0     GIC-0  34 Level     mv64xxx_i2c
 22:        715          0     GIC-0  44 Level     ttyS0
 36:    1698960          0      MPIC   8 Level     eth0
 38:      64015          0     GIC-0  51 Level     f1090000.crypto
 41:       8248          0     GIC-0  58 Level     ahci-mvebu[f10a8000.sata]
 49:          5          0  f1018100.gpio  20 Edge      f10d8000.sdhci cd
IPI2:     287339     328237  Rescheduling interrupts
Err:          0
";

#[test]
fn armada_nas_from_the_corpus() {
    let mut tree = Tree(
        FakeRoot::new()
            .cpus(2)
            .cmdline("console=ttyS0,115200 isolcpus=1"),
    )
    .file("/proc/interrupts", HELIOS4);
    for n in [17, 18, 19, 20, 22, 36, 38, 41, 49] {
        tree = tree.irq(n, "0-1", "0", "");
    }
    let fake = tree.0;
    let ctx = Ctx::new(fake.root(), Options::default());
    let table = irq_table(&ctx).unwrap();
    let kind = |n: u32| classify(table.get(n).unwrap(), ctx.online());
    assert_eq!(kind(17), Kind::Fixed("per-CPU (GIC PPI)"));
    assert_eq!(kind(18), Kind::Fixed("per-CPU"));
    assert_eq!(kind(19), Kind::Fixed("per-CPU"));
    assert_eq!(kind(36), Kind::Movable);
    assert_eq!(table.get(49).unwrap().actions, ["f10d8000.sdhci cd"]);
    // The twd timer fires on CPU 1 by design: not a finding.
    let f = finding(&EFFECTIVE_AFFINITY, &ctx);
    assert_eq!(f.status, Status::Pass, "{f:?}");
    let f = finding(&AFFINITY, &ctx);
    assert_eq!(f.status, Status::Warn);
    assert_eq!(
        f.summary,
        "6 IRQs may run on RT CPU 1: 20 (mv64xxx_i2c), 22 (ttyS0), 36 (eth0), 38 (f1090000.crypto), 41 (ahci-mvebu[f10a8000.sata]), 49 (f10d8000.sdhci cd)"
    );
    assert!(f.fix.iter().any(|x| matches!(x, Fix::Write { path, value }
        if path == "/proc/irq/20/smp_affinity_list" && value == "0")));
}

/// Issue 13: right after `rtlab tune apply` an x86 IRQ's requested affinity has left the RT
/// CPUs while its effective affinity still names one, and its counts since boot show it
/// fired there. The move is pending (the kernel makes it at the next interrupt): a warning,
/// not the failure it was before the change.
#[test]
fn a_move_the_kernel_makes_at_the_next_interrupt_is_pending_not_failed() {
    let fake = untuned();
    let before = finding(&EFFECTIVE_AFFINITY, &untuned_ctx(&fake));
    assert_eq!(before.status, Status::Fail);
    let fake = fake
        .file("/proc/irq/4/smp_affinity_list", "0-1\n")
        .file("/proc/irq/30/smp_affinity_list", "0-1\n");
    let f = finding(&EFFECTIVE_AFFINITY, &untuned_ctx(&fake));
    assert_eq!(f.status, Status::Warn, "{f:?}");
    assert!(
        f.summary.starts_with("2 IRQs are moving off RT CPUs 2-7")
            && f.summary.contains("4 (ttyS0), 30 (eth0)")
            && f.summary.contains("a captured tree holds one snapshot"),
        "{}",
        f.summary
    );
    assert!(
        f.evidence
            .iter()
            .any(|e| e.source == "/proc/irq/30/smp_affinity_list"
                && e.value.starts_with("0-1 (requested); effective still 5")),
        "{:?}",
        f.evidence
    );
    assert!(
        f.fix.iter().all(|x| !matches!(x, Fix::Write { .. })),
        "nothing to write"
    );
}
