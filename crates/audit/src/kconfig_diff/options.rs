//! The kernel config options that matter for real time, and why: one table shared by the
//! `kconfig.*` audit checks and by [`diff`](super::diff).
//!
//! [`OPTIONS`] are single options; the Kconfig `choice` blocks (preemption model, timer
//! frequency, ...) are in [`choices`](super::choices). The lists
//! [`LATENCY_TRACERS`], [`DEBUG_COST`] and [`VALIDATION`] name the options the tracer and
//! debug checks judge; every name in them is in [`OPTIONS`] (a test holds this).
//!
//! Sources: the Linaro 2023 talk (the RT and validation configs), the RT-Summit 2017 talk tip #1 (check the config after
//! an upgrade; `CPU_SW_DOMAIN_PAN`), `kernel/Kconfig.preempt`, `kernel/time/Kconfig`,
//! `kernel/Kconfig.hz`, `kernel/trace/Kconfig`, `lib/Kconfig.debug`.

use serde::Serialize;

/// How much a configuration difference matters for real-time behaviour, most first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Importance {
    /// Decides whether the kernel can be real-time at all: preemption model, timer
    /// frequency and tick, high-resolution timers, IRQ threading.
    Critical,
    /// What tuning and latency investigation need: CPU isolation, RCU offload, cpusets,
    /// frequency and idle control, watchdogs, latency tracers, RT group scheduling.
    High,
    /// Debug and validation options: wanted in a validation kernel, a latency cost in
    /// production.
    Debug,
    /// Other options that touch latency: memory management, accounting, I/O latency control.
    Other,
}

impl Importance {
    /// The name as written in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Importance::Critical => "critical",
            Importance::High => "high",
            Importance::Debug => "debug",
            Importance::Other => "other",
        }
    }
}

/// One option and what it gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtOption {
    /// The option, with its `CONFIG_` prefix.
    pub name: &'static str,
    /// How much a change of it matters.
    pub importance: Importance,
    /// What the option gives, as a noun phrase ("RCU callback offloading from RT CPUs").
    pub what: &'static str,
}

/// The tracers a latency investigation uses, each with whether a production kernel should
/// carry it: the irqsoff and preemptoff tracers hook every IRQ and preemption toggle, so
/// they belong in a debug kernel; the others cost nothing until enabled.
pub const LATENCY_TRACERS: &[(&str, bool)] = &[
    ("CONFIG_FTRACE", true),
    ("CONFIG_TRACEPOINTS", true),
    ("CONFIG_TIMERLAT_TRACER", true),
    ("CONFIG_OSNOISE_TRACER", true),
    ("CONFIG_HWLAT_TRACER", true),
    ("CONFIG_SCHED_TRACER", true),
    ("CONFIG_FUNCTION_GRAPH_TRACER", true),
    ("CONFIG_IRQSOFF_TRACER", false),
    ("CONFIG_PREEMPT_TRACER", false),
];

/// Debug options that cost latency (or memory and CPU time) in a production kernel.
pub const DEBUG_COST: &[&str] = &[
    "CONFIG_KASAN",
    "CONFIG_KCSAN",
    "CONFIG_PROVE_LOCKING",
    "CONFIG_PROVE_RAW_LOCK_NESTING",
    "CONFIG_LOCKDEP",
    "CONFIG_DEBUG_LOCK_ALLOC",
    "CONFIG_DEBUG_LOCKDEP",
    "CONFIG_LOCK_STAT",
    "CONFIG_DEBUG_ATOMIC_SLEEP",
    "CONFIG_DEBUG_PREEMPT",
    "CONFIG_DEBUG_IRQFLAGS",
    "CONFIG_DEBUG_SHIRQ",
    "CONFIG_DEBUG_RT_MUTEXES",
    "CONFIG_DEBUG_SPINLOCK",
    "CONFIG_DEBUG_MUTEXES",
    "CONFIG_DEBUG_WW_MUTEX_SLOWPATH",
    "CONFIG_DEBUG_OBJECTS",
    "CONFIG_DEBUG_PAGEALLOC",
    "CONFIG_DEBUG_VM",
    "CONFIG_SLUB_DEBUG_ON",
    "CONFIG_KMEMLEAK",
    "CONFIG_KCOV",
];

/// The validation set of the Linaro 2023 talk: what a test kernel for a new PREEMPT_RT board should
/// carry to catch the races and locking bugs RT exposes.
pub const VALIDATION: &[&str] = &[
    "CONFIG_KASAN",
    "CONFIG_DEBUG_SHIRQ",
    "CONFIG_SOFTLOCKUP_DETECTOR",
    "CONFIG_DETECT_HUNG_TASK",
    "CONFIG_WQ_WATCHDOG",
    "CONFIG_DEBUG_PREEMPT",
    "CONFIG_DEBUG_IRQFLAGS",
    "CONFIG_PROVE_LOCKING",
    "CONFIG_PROVE_RAW_LOCK_NESTING",
    "CONFIG_DEBUG_ATOMIC_SLEEP",
];

const fn opt(name: &'static str, importance: Importance, what: &'static str) -> RtOption {
    RtOption {
        name,
        importance,
        what,
    }
}

/// Every single option that matters for real time, most important first.
pub const OPTIONS: &[RtOption] = &[
    opt(
        "CONFIG_PREEMPT_DYNAMIC",
        Importance::Critical,
        "a preemption model chosen at boot (preempt=) or run time",
    ),
    opt(
        "CONFIG_HIGH_RES_TIMERS",
        Importance::Critical,
        "high-resolution timers: sleeps and timer wakeups with microsecond precision instead of the tick's",
    ),
    opt(
        "CONFIG_IRQ_FORCED_THREADING",
        Importance::Critical,
        "IRQ handlers in threads with RT priorities (threadirqs; always on PREEMPT_RT)",
    ),
    opt(
        "CONFIG_CPU_ISOLATION",
        Importance::High,
        "housekeeping CPU masks, without which isolcpus= and nohz_full= are ignored",
    ),
    opt(
        "CONFIG_CPUSETS",
        Importance::High,
        "cpuset cgroups and partitions to set RT CPUs apart",
    ),
    opt(
        "CONFIG_RCU_NOCB_CPU",
        Importance::High,
        "offloading RCU callbacks from RT CPUs (rcu_nocbs=)",
    ),
    opt(
        "CONFIG_RCU_NOCB_CPU_DEFAULT_ALL",
        Importance::High,
        "RCU callbacks offloaded from every CPU without rcu_nocbs=",
    ),
    opt(
        "CONFIG_RCU_BOOST",
        Importance::High,
        "RCU priority boosting, so preempted RCU readers cannot stall grace periods under RT load",
    ),
    opt(
        "CONFIG_RT_GROUP_SCHED",
        Importance::High,
        "RT group scheduling: SCHED_FIFO/RR in a non-root cgroup needs an rt_runtime budget",
    ),
    opt(
        "CONFIG_RT_GROUP_SCHED_DEFAULT_DISABLED",
        Importance::High,
        "RT group scheduling off unless rt_group_sched=1 is on the command line",
    ),
    opt(
        "CONFIG_CPU_FREQ",
        Importance::High,
        "CPU frequency scaling, whose governors change the clock under an RT task",
    ),
    opt(
        "CONFIG_CPU_FREQ_GOV_PERFORMANCE",
        Importance::High,
        "the performance governor, which holds CPUs at their highest frequency",
    ),
    opt(
        "CONFIG_CPU_IDLE",
        Importance::High,
        "the cpuidle framework: deep idle states with exit latencies, and the controls to limit them",
    ),
    opt(
        "CONFIG_SOFTLOCKUP_DETECTOR",
        Importance::High,
        "the soft-lockup watchdog, a per-CPU timer that also fires on RT CPUs (nosoftlockup)",
    ),
    opt(
        "CONFIG_HARDLOCKUP_DETECTOR",
        Importance::High,
        "the hard-lockup watchdog, periodic NMIs on every CPU (nowatchdog)",
    ),
    opt(
        "CONFIG_FTRACE",
        Importance::High,
        "the ftrace framework every latency tracer needs",
    ),
    opt(
        "CONFIG_TRACEPOINTS",
        Importance::High,
        "kernel tracepoints (sched, irq, timer events for trace-cmd and rtla)",
    ),
    opt(
        "CONFIG_FUNCTION_TRACER",
        Importance::High,
        "the function tracer",
    ),
    opt(
        "CONFIG_FUNCTION_GRAPH_TRACER",
        Importance::High,
        "the function_graph tracer: where time goes inside the kernel",
    ),
    opt(
        "CONFIG_SCHED_TRACER",
        Importance::High,
        "the wakeup and wakeup_rt tracers: wakeup latency of the highest-priority task",
    ),
    opt(
        "CONFIG_TIMERLAT_TRACER",
        Importance::High,
        "the timerlat tracer behind rtla timerlat",
    ),
    opt(
        "CONFIG_OSNOISE_TRACER",
        Importance::High,
        "the osnoise tracer behind rtla osnoise",
    ),
    opt(
        "CONFIG_HWLAT_TRACER",
        Importance::High,
        "the hwlat tracer: latency from hardware and firmware (SMIs)",
    ),
    opt(
        "CONFIG_IRQSOFF_TRACER",
        Importance::High,
        "the irqsoff tracer: the longest IRQs-off section (hooks every IRQ toggle)",
    ),
    opt(
        "CONFIG_PREEMPT_TRACER",
        Importance::High,
        "the preemptoff tracer: the longest preemption-off section (hooks every preempt toggle)",
    ),
    opt(
        "CONFIG_KASAN",
        Importance::Debug,
        "KASAN memory checking: finds RT races, multiplies latency and memory use",
    ),
    opt(
        "CONFIG_KCSAN",
        Importance::Debug,
        "KCSAN data-race detection, instrumenting every memory access",
    ),
    opt(
        "CONFIG_PROVE_LOCKING",
        Importance::Debug,
        "lockdep's proof of locking correctness, checked on every lock operation",
    ),
    opt(
        "CONFIG_PROVE_RAW_LOCK_NESTING",
        Importance::Debug,
        "checks that no spinlock is taken inside a raw_spinlock (sleeping on PREEMPT_RT)",
    ),
    opt(
        "CONFIG_LOCKDEP",
        Importance::Debug,
        "the lock dependency validator",
    ),
    opt(
        "CONFIG_DEBUG_LOCK_ALLOC",
        Importance::Debug,
        "lock allocation debugging (turns on lockdep)",
    ),
    opt(
        "CONFIG_DEBUG_LOCKDEP",
        Importance::Debug,
        "lockdep's own consistency checks",
    ),
    opt(
        "CONFIG_LOCK_STAT",
        Importance::Debug,
        "lock contention statistics on every lock operation",
    ),
    opt(
        "CONFIG_DEBUG_ATOMIC_SLEEP",
        Importance::Debug,
        "\"sleeping function called from invalid context\" checks",
    ),
    opt(
        "CONFIG_DEBUG_PREEMPT",
        Importance::Debug,
        "preempt-count and smp_processor_id() checks",
    ),
    opt(
        "CONFIG_DEBUG_IRQFLAGS",
        Importance::Debug,
        "checks that IRQs are on or off where the code expects",
    ),
    opt(
        "CONFIG_DEBUG_SHIRQ",
        Importance::Debug,
        "spurious calls of shared IRQ handlers at request and free, to flush out handler bugs",
    ),
    opt(
        "CONFIG_DEBUG_RT_MUTEXES",
        Importance::Debug,
        "rt_mutex checks (every PREEMPT_RT spinlock is one)",
    ),
    opt(
        "CONFIG_DEBUG_SPINLOCK",
        Importance::Debug,
        "spinlock checks",
    ),
    opt("CONFIG_DEBUG_MUTEXES", Importance::Debug, "mutex checks"),
    opt(
        "CONFIG_DEBUG_WW_MUTEX_SLOWPATH",
        Importance::Debug,
        "wait/wound mutex slow-path injection",
    ),
    opt(
        "CONFIG_DEBUG_OBJECTS",
        Importance::Debug,
        "object lifetime tracking",
    ),
    opt(
        "CONFIG_DEBUG_PAGEALLOC",
        Importance::Debug,
        "unmapping of freed pages, with TLB flushes on every free",
    ),
    opt(
        "CONFIG_DEBUG_VM",
        Importance::Debug,
        "extra memory-management consistency checks",
    ),
    opt(
        "CONFIG_SLUB_DEBUG_ON",
        Importance::Debug,
        "slab debugging on for every cache",
    ),
    opt(
        "CONFIG_KMEMLEAK",
        Importance::Debug,
        "kmemleak's tracking of every allocation and its periodic scans",
    ),
    opt(
        "CONFIG_KCOV",
        Importance::Debug,
        "coverage instrumentation of kernel code",
    ),
    opt(
        "CONFIG_DETECT_HUNG_TASK",
        Importance::Debug,
        "the hung-task detector",
    ),
    opt(
        "CONFIG_WQ_WATCHDOG",
        Importance::Debug,
        "the workqueue stall detector",
    ),
    opt(
        "CONFIG_LATENCYTOP",
        Importance::Debug,
        "latencytop's accounting of where tasks block",
    ),
    opt(
        "CONFIG_BLK_CGROUP_IOLATENCY",
        Importance::Other,
        "the io.latency cgroup control that protects a group's I/O latency",
    ),
    opt(
        "CONFIG_NUMA_BALANCING",
        Importance::Other,
        "automatic NUMA balancing: hinting faults and page migration under running tasks",
    ),
    opt(
        "CONFIG_NUMA_BALANCING_DEFAULT_ENABLED",
        Importance::Other,
        "automatic NUMA balancing on from boot",
    ),
    opt(
        "CONFIG_TRANSPARENT_HUGEPAGE",
        Importance::Other,
        "transparent huge pages: compaction and khugepaged work",
    ),
    opt(
        "CONFIG_KSM",
        Importance::Other,
        "kernel same-page merging scans (ksmd)",
    ),
    opt(
        "CONFIG_SCHED_CORE",
        Importance::Other,
        "core scheduling: extra work at every context switch on SMT cores",
    ),
    opt(
        "CONFIG_IRQ_TIME_ACCOUNTING",
        Importance::Other,
        "precise IRQ time accounting, a clock read on every IRQ entry and exit",
    ),
    opt(
        "CONFIG_CPU_SW_DOMAIN_PAN",
        Importance::Other,
        "ARM software PAN: extra code on every user access and syscall (a known cause of slowdowns after kernel upgrades)",
    ),
    opt(
        "CONFIG_EFI_DISABLE_RUNTIME",
        Importance::Other,
        "EFI runtime services off by default (firmware calls run with preemption disabled)",
    ),
    opt(
        "CONFIG_X86_INTEL_PSTATE",
        Importance::Other,
        "the intel_pstate frequency driver",
    ),
    opt(
        "CONFIG_X86_AMD_PSTATE",
        Importance::Other,
        "the amd_pstate frequency driver",
    ),
    opt(
        "CONFIG_INTEL_IDLE",
        Importance::Other,
        "the intel_idle driver and its deep C-states",
    ),
    opt(
        "CONFIG_IKCONFIG_PROC",
        Importance::Other,
        "/proc/config.gz, so the running kernel's config can always be read",
    ),
];

/// The table entry of option `name`, when it is one.
pub fn option(name: &str) -> Option<&'static RtOption> {
    OPTIONS.iter().find(|o| o.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn the_lists_are_in_the_table_and_names_are_unique() {
        for name in LATENCY_TRACERS
            .iter()
            .map(|(n, _)| *n)
            .chain(DEBUG_COST.iter().copied())
            .chain(VALIDATION.iter().copied())
        {
            assert!(option(name).is_some(), "{name} is not in OPTIONS");
        }
        let mut seen = HashSet::new();
        for name in OPTIONS.iter().map(|o| o.name).chain(
            super::super::choices::CHOICES
                .iter()
                .flat_map(|c| c.covers()),
        ) {
            assert!(name.starts_with("CONFIG_"), "{name}");
            assert!(seen.insert(name), "{name} is listed twice");
        }
        for o in OPTIONS {
            assert!(!o.what.is_empty() && !o.what.ends_with('.'), "{}", o.name);
        }
        // Most important first.
        assert!(
            OPTIONS
                .windows(2)
                .all(|w| w[0].importance <= w[1].importance)
        );
    }
}
