//! Test trees for the placement checks: a tuned 8-CPU ARM64 PREEMPT_RT board modelled on talk
//! 000 (CPUs 2-7 isolated, IRQs and workqueues on 0-1, irqbalance banning 2-7, a cpuset
//! partition) where every check passes, and an untuned 8-CPU x86 box with SMT where each
//! check finds its problem.

use model::CpuSet;
use testkit::FakeRoot;

use crate::context::{Ctx, Options};

/// `PF_KTHREAD | PF_NOFREEZE | PF_FORKNOEXEC`: an unbound kernel thread (kthreadd's flags).
pub(super) const KTHREAD: u64 = 0x0020_8040;
/// A kernel thread bound to its CPU (`PF_NO_SETAFFINITY` added).
pub(super) const KTHREAD_BOUND: u64 = 0x0420_8040;
/// A workqueue worker (`PF_WQ_WORKER` added).
pub(super) const KWORKER: u64 = 0x0420_8060;
/// A user thread (`PF_RANDOMIZE | PF_SUPERPRIV`).
pub(super) const USER: u64 = 0x0040_0100;

/// SCHED_OTHER.
pub(super) const OTHER: u32 = 0;
/// SCHED_FIFO.
pub(super) const FIFO: u32 = 1;

/// A fake tree with helpers for threads and IRQs.
pub(super) struct Tree(pub(super) FakeRoot);

impl Tree {
    /// Adds thread `tid` of process `pid`: a `stat` line and a `status` with its affinity.
    pub(super) fn task(
        self,
        (pid, tid): (u32, u32),
        comm: &str,
        flags: u64,
        (policy, prio): (u32, u32),
        allowed: &str,
    ) -> Tree {
        let nice = 0;
        let stat = format!(
            "{tid} ({comm}) S 1 {pid} {pid} 0 -1 {flags} 0 0 0 0 0 0 0 0 20 {nice} 1 0 25 0 0 \
             18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 {prio} {policy} 0 0 0\n"
        );
        let dir = format!("/proc/{pid}/task/{tid}");
        Tree(self.0.file(&format!("{dir}/stat"), &stat).file(
            &format!("{dir}/status"),
            &format!("Name:\t{comm}\nCpus_allowed_list:\t{allowed}\n"),
        ))
    }

    /// A single-threaded process or kernel thread.
    pub(super) fn proc(
        self,
        pid: u32,
        comm: &str,
        flags: u64,
        sched: (u32, u32),
        allowed: &str,
    ) -> Tree {
        self.task((pid, pid), comm, flags, sched, allowed)
    }

    /// `/proc/irq/N/` with its lists (an empty string leaves the file out) and a handler
    /// directory.
    pub(super) fn irq(self, n: u32, affinity: &str, effective: &str, action: &str) -> Tree {
        let dir = format!("/proc/irq/{n}");
        let mut fake = self.0.file(
            &format!("{dir}/smp_affinity_list"),
            &format!("{affinity}\n"),
        );
        if !effective.is_empty() {
            fake = fake.file(
                &format!("{dir}/effective_affinity_list"),
                &format!("{effective}\n"),
            );
        }
        fake = fake.file(&format!("{dir}/node"), "-1\n");
        if !action.is_empty() {
            fake = fake.dir(&format!("{dir}/{action}"));
        }
        Tree(fake)
    }

    /// A file.
    pub(super) fn file(self, path: &str, text: &str) -> Tree {
        Tree(self.0.file(path, text))
    }

    /// Per-CPU kernel threads for `cpus`: migration/N (FIFO 99), ksoftirqd/N, ktimers/N (FIFO
    /// 1 on PREEMPT_RT, as given) and kworker/N:0, with pids from `base`.
    pub(super) fn per_cpu_threads(mut self, cpus: u32, base: u32, ktimers: (u32, u32)) -> Tree {
        for cpu in 0..cpus {
            let pid = base + cpu * 10;
            let c = cpu.to_string();
            self = self
                .proc(
                    pid,
                    &format!("migration/{cpu}"),
                    KTHREAD_BOUND,
                    (FIFO, 99),
                    &c,
                )
                .proc(
                    pid + 1,
                    &format!("ksoftirqd/{cpu}"),
                    KTHREAD_BOUND,
                    (OTHER, 0),
                    &c,
                )
                .proc(
                    pid + 2,
                    &format!("ktimers/{cpu}"),
                    KTHREAD_BOUND,
                    ktimers,
                    &c,
                )
                .proc(
                    pid + 3,
                    &format!("kworker/{cpu}:0"),
                    KWORKER,
                    (OTHER, 0),
                    &c,
                )
                .proc(
                    pid + 4,
                    &format!("cpuhp/{cpu}"),
                    KTHREAD_BOUND,
                    (OTHER, 0),
                    &c,
                );
        }
        self
    }

    /// A cgroup v2 hierarchy at /sys/fs/cgroup with `controllers` and one child cgroup `rt`
    /// whose partition file says `partition` over CPUs `cpus`.
    pub(super) fn cgroup(self, controllers: &str, partition: &str, cpus: &str) -> Tree {
        self.file(
            "/proc/self/mountinfo",
            "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec - cgroup2 cgroup2 rw\n",
        )
        .file(
            "/sys/fs/cgroup/cgroup.controllers",
            &format!("{controllers}\n"),
        )
        .file(
            "/sys/fs/cgroup/rt/cpuset.cpus.partition",
            &format!("{partition}\n"),
        )
        .file("/sys/fs/cgroup/rt/cpuset.cpus", &format!("{cpus}\n"))
        .file(
            "/sys/fs/cgroup/rt/cpuset.cpus.effective",
            &format!("{cpus}\n"),
        )
    }
}

/// The tuned board: PREEMPT_RT arm64, 4 little + 3 big + 1 prime core, CPUs 2-7 isolated
/// (isolcpus, nohz_full, rcu_nocbs, irqaffinity=0-1), IRQs on 0-1 except the per-CPU timer
/// and PMU, irqbalance banning 2-7, workqueues on 0-1, the RT application's FIFO thread on
/// 2-7 and everything else on 0-1.
pub(super) fn tuned() -> FakeRoot {
    let fake = FakeRoot::new()
        .cpus(8)
        .kernel("6.1.0-50-rt-arm64", "#1 SMP PREEMPT_RT Debian 6.1.176-1")
        .realtime(true)
        .cmdline(
            "root=/dev/sda1 isolcpus=managed_irq,domain,2-7 nohz_full=2-7 rcu_nocbs=2-7 \
             rcu_nocb_poll irqaffinity=0-1 skew_tick=1 nosoftlockup nowatchdog",
        )
        .isolated("2-7")
        .nohz_full("2-7");
    Tree(fake)
        .file(
            "/proc/interrupts",
            "           CPU0       CPU1       CPU2       CPU3       CPU4       CPU5       CPU6       CPU7
 11:     908031     903211     871562     870023     875513     871020     870033     870500     GICv3  30 Level     arch_timer
 14:          0          0          0          0          0          0          0          0     GICv3  23 Level     arm-pmu
 24:      50123          0          0          0          0          0          0          0     GICv3 165 Level     eth0
 25:          0       3022          0          0          0          0          0          0     GICv3 150 Level     mmc0
 30:        120          0          0          0          0          0          0          0   ITS-MSI 524288 Edge      nvme0q0
 31:       8004          0          0          0          0          0          0          0   ITS-MSI 524289 Edge      nvme0q1
 32:          0       7110          0          0          0          0          0          0   ITS-MSI 524290 Edge      nvme0q2
IPI0:      2202       2398         25         21         19         22         20         18       Rescheduling interrupts
",
        )
        .file("/proc/irq/default_smp_affinity", "03\n")
        .irq(11, "0-7", "", "arch_timer")
        .irq(14, "0-7", "", "arm-pmu")
        .irq(24, "0-1", "0", "eth0")
        .irq(25, "0-1", "1", "mmc0")
        .irq(30, "0-1", "0", "nvme0q0")
        .irq(31, "0", "0", "nvme0q1")
        .irq(32, "1", "1", "nvme0q2")
        .file("/sys/devices/virtual/workqueue/cpumask", "03\n")
        .file("/sys/devices/virtual/workqueue/writeback/cpumask", "03\n")
        // Wider than the global mask: harmless, the kernel uses the intersection.
        .file("/sys/devices/virtual/workqueue/blkcg_punt_bio/cpumask", "ff\n")
        .file("/sys/devices/system/cpu/smt/control", "notsupported\n")
        .cgroup("cpuset cpu io memory pids", "isolated", "2-7")
        .proc(1, "systemd", USER, (OTHER, 0), "0-1")
        .proc(2, "kthreadd", KTHREAD, (OTHER, 0), "0-1")
        .proc(12, "rcu_preempt", KTHREAD, (FIFO, 1), "0-1")
        .proc(40, "kswapd0", KTHREAD, (OTHER, 0), "0-1")
        .proc(60, "irq/24-eth0", KTHREAD, (FIFO, 50), "0")
        .proc(61, "irq/25-mmc0", KTHREAD, (FIFO, 50), "1")
        .proc(70, "kworker/u16:0", KWORKER, (OTHER, 0), "0-1")
        .per_cpu_threads(8, 100, (FIFO, 1))
        .proc(900, "irqbalance", USER, (OTHER, 0), "0-1")
        .file("/proc/900/environ", "LANG=C\0IRQBALANCE_BANNED_CPULIST=2-7\0")
        .file("/proc/900/cmdline", "/usr/sbin/irqbalance\0--foreground\0")
        .task((1000, 1000), "rtapp", USER, (OTHER, 0), "0-1")
        .task((1000, 1001), "rtapp-rt", USER, (FIFO, 80), "2-7")
        // A helper pinned inside the RT CPUs on purpose: placement, not leakage.
        .task((1000, 1002), "rtapp-log", USER, (OTHER, 0), "3")
        .0
}

/// The untuned box: PREEMPT_RT x86, 8 CPUs as 4 cores × 2 threads (siblings 0/4, 1/5, 2/6,
/// 3/7), nothing set apart (the audit is told `--rt-cpus 2-7`), IRQs everywhere, irqbalance
/// running with no ban, workqueues on every CPU, an invalid cpuset partition, a user thread at
/// FIFO 99, an IRQ thread moved to SCHED_OTHER and another at FIFO 99, ktimers at SCHED_OTHER.
pub(super) fn untuned() -> FakeRoot {
    let mut fake = FakeRoot::new()
        .cpus(8)
        .kernel("6.6.15-rt22", "#1 SMP PREEMPT_RT Thu Jan 25 2024")
        .realtime(true)
        .cmdline("BOOT_IMAGE=/vmlinuz-6.6.15-rt22 root=/dev/nvme0n1p2 ro quiet")
        // Built with CONFIG_NO_HZ_FULL (Debian's RT kernels are), booted without nohz_full=.
        .nohz_full("(null)");
    for cpu in 0..8u32 {
        fake = fake.file(
            &format!("/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"),
            &format!("{},{}\n", cpu % 4, cpu % 4 + 4),
        );
        // As on x86, the boot CPU cannot be taken offline: it has no `online` file.
        if cpu > 0 {
            fake = fake.file(&format!("/sys/devices/system/cpu/cpu{cpu}/online"), "1\n");
        }
    }
    Tree(fake)
        .file(
            "/proc/interrupts",
            "           CPU0       CPU1       CPU2       CPU3       CPU4       CPU5       CPU6       CPU7
  0:         49          0          0          0          0          0          0          0   IO-APIC   2-edge      timer
  4:          0          0          0       1443          0          0          0          0   IO-APIC   4-edge      ttyS0
  9:          0          0          0          0          0          0          0          0   IO-APIC   9-fasteoi   acpi
 30:          0          0          0          0          0     250301          0          0   PCI-MSI 524288-edge      eth0
 31:          0          0          0          0          0          0          0          0   PCI-MSI 524289-edge      eth0-rx-1
 40:         22          0          0          0          0          0          0          0   PCI-MSI 1048576-edge      nvme0q0
 43:          0          0          0        910          0          0          0          0   PCI-MSI 1048579-edge      nvme0q3
NMI:          0          0          0          0          0          0          0          0   Non-maskable interrupts
LOC:      10196       7429       8542       8229       8100       8000       7900       7800   Local timer interrupts
",
        )
        .file("/proc/irq/default_smp_affinity", "ff\n")
        .irq(0, "0-7", "0", "timer")
        .irq(4, "0-7", "3", "ttyS0")
        .irq(9, "0-7", "0", "acpi")
        .irq(30, "0-7", "5", "eth0")
        .irq(31, "0-7", "6", "eth0-rx-1")
        .irq(40, "0-7", "0", "nvme0q0")
        .irq(43, "3", "3", "nvme0q3")
        .irq(50, "0-7", "", "")
        .file("/sys/devices/virtual/workqueue/cpumask", "ff\n")
        .file("/sys/devices/virtual/workqueue/writeback/cpumask", "ff\n")
        .file("/sys/devices/virtual/workqueue/blkcg_punt_bio/cpumask", "03\n")
        .file("/sys/devices/virtual/workqueue/scsi_tmf_0/cpumask", "ff\n")
        .file("/sys/devices/system/cpu/smt/control", "on\n")
        .cgroup(
            "cpuset cpu io memory pids",
            "isolated invalid (Cpu list in cpuset.cpus not exclusive)",
            "2-7",
        )
        .file(
            "/etc/default/irqbalance",
            "# irqbalance config\n#IRQBALANCE_BANNED_CPULIST=\nIRQBALANCE_ARGS=\"\"\n",
        )
        .proc(1, "systemd", USER, (OTHER, 0), "0-7")
        .proc(2, "kthreadd", KTHREAD, (OTHER, 0), "0-7")
        .proc(12, "rcu_preempt", KTHREAD, (FIFO, 1), "0-7")
        .proc(40, "kswapd0", KTHREAD, (OTHER, 0), "0-7")
        .proc(41, "khugepaged", KTHREAD, (OTHER, 0), "0-7")
        .proc(60, "irq/4-ttyS0", KTHREAD, (OTHER, 0), "3")
        .proc(61, "irq/30-eth0", KTHREAD, (FIFO, 99), "5")
        .proc(62, "irq/9-acpi", KTHREAD, (FIFO, 50), "0")
        .proc(70, "kworker/u16:1", KWORKER, (OTHER, 0), "0-7")
        .per_cpu_threads(8, 100, (OTHER, 0))
        .proc(900, "irqbalance", USER, (OTHER, 0), "0-7")
        .file("/proc/900/environ", "LANG=C\0")
        .file("/proc/900/cmdline", "/usr/sbin/irqbalance\0--foreground\0")
        .proc(950, "sshd", USER, (OTHER, 0), "0-7")
        .task((1000, 1000), "rtapp", USER, (OTHER, 0), "0-7")
        .task((1000, 1001), "rtapp-rt", USER, (FIFO, 99), "4")
        .task((1000, 1002), "rtapp-log", USER, (OTHER, 0), "0-7")
        .0
}

/// A context over the tuned tree (RT CPUs inferred from isolcpus).
pub(super) fn tuned_ctx(fake: &FakeRoot) -> Ctx {
    Ctx::new(fake.root(), Options::default())
}

/// A context over the untuned tree with `--rt-cpus 2-7`.
pub(super) fn untuned_ctx(fake: &FakeRoot) -> Ctx {
    Ctx::new(
        fake.root(),
        Options {
            rt_cpus: Some(CpuSet::parse_list("2-7").unwrap()),
            ..Options::default()
        },
    )
}
