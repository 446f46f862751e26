//! Scheduler, memory-management and watchdog settings that add latency at run time: RT
//! throttling, timer migration, transparent huge pages, KSM, swap, NUMA balancing, the
//! vmstat interval and the lockup detectors.

use model::audit::{Group, Severity};

use crate::check::Check;
use crate::context::Ctx;
use crate::outcome::Outcome;

const RT_RUNTIME: &str = "/proc/sys/kernel/sched_rt_runtime_us";
const RT_PERIOD: &str = "/proc/sys/kernel/sched_rt_period_us";
const TIMER_MIGRATION: &str = "/proc/sys/kernel/timer_migration";
const THP_ENABLED: &str = "/sys/kernel/mm/transparent_hugepage/enabled";
const THP_DEFRAG: &str = "/sys/kernel/mm/transparent_hugepage/defrag";
const KSM_RUN: &str = "/sys/kernel/mm/ksm/run";
const SWAPS: &str = "/proc/swaps";
const NUMA_BALANCING: &str = "/proc/sys/kernel/numa_balancing";
const STAT_INTERVAL: &str = "/proc/sys/vm/stat_interval";
const NMI_WATCHDOG: &str = "/proc/sys/kernel/nmi_watchdog";
const SOFT_WATCHDOG: &str = "/proc/sys/kernel/soft_watchdog";
const WATCHDOG: &str = "/proc/sys/kernel/watchdog";

/// The checks of this group.
pub(crate) const CHECKS: &[Check] = &[
    Check {
        id: "sched.rt_throttling",
        title: "RT throttling",
        group: Group::Sched,
        severity: Severity::Info,
        why: "with throttling on, a real-time task that uses its share of each period is stopped until the period ends, however urgent its next deadline",
        run: rt_throttling,
    },
    Check {
        id: "sched.timer_migration",
        title: "timer migration",
        group: Group::Sched,
        severity: Severity::Warn,
        why: "timer migration lets idle housekeeping CPUs push their timers onto busy CPUs, RT ones included",
        run: timer_migration,
    },
    Check {
        id: "sched.numa_balancing",
        title: "automatic NUMA balancing",
        group: Group::Sched,
        severity: Severity::Warn,
        why: "NUMA balancing unmaps pages to sample accesses, so a real-time thread takes hinting page faults and page migrations in its loop",
        run: numa_balancing,
    },
    Check {
        id: "memory.thp",
        title: "transparent huge pages",
        group: Group::Sched,
        severity: Severity::Warn,
        why: "THP set to always makes page faults compact memory synchronously and khugepaged collapse pages under running tasks",
        run: thp,
    },
    Check {
        id: "memory.ksm",
        title: "kernel same-page merging",
        group: Group::Sched,
        severity: Severity::Warn,
        why: "ksmd scans and merges pages, turning later writes into copy-on-write faults at unpredictable times",
        run: ksm,
    },
    Check {
        id: "memory.swap",
        title: "swap",
        group: Group::Sched,
        severity: Severity::Info,
        why: "a page swapped out costs milliseconds of disk I/O when touched; RT applications must mlockall or run with no swap",
        run: swap,
    },
    Check {
        id: "memory.stat_interval",
        title: "vmstat update interval",
        group: Group::Sched,
        severity: Severity::Info,
        why: "vmstat_update runs as per-CPU work every stat_interval seconds on every CPU that has touched memory counters",
        run: stat_interval,
    },
    Check {
        id: "watchdog.nmi",
        title: "NMI watchdog",
        group: Group::Sched,
        severity: Severity::Warn,
        why: "the hard-lockup detector fires a perf NMI on every CPU periodically, and an NMI cannot be deferred or masked",
        run: nmi_watchdog,
    },
    Check {
        id: "watchdog.soft_lockup",
        title: "soft-lockup detector",
        group: Group::Sched,
        severity: Severity::Info,
        why: "the soft-lockup detector runs an hrtimer and a stopper-class thread on every CPU, preempting even priority-99 tasks",
        run: soft_watchdog,
    },
];

/// Reads a one-value sysctl; `Err` is the `unknown` outcome naming the file.
fn value<T: std::str::FromStr>(ctx: &Ctx, path: &str) -> Result<T, Outcome> {
    match ctx.root().read_trimmed(path) {
        Some(text) => text
            .parse()
            .map_err(|_| Outcome::unknown(format!("{path}: unexpected content '{text}'"))),
        None => Err(Outcome::unknown(format!("{path}: cannot be read"))),
    }
}

/// A sysctl that is a feature switch: 0 is what real-time wants, any other value is on, and
/// an absent file means the kernel lacks the feature.
struct Switch {
    path: &'static str,
    absent: &'static str,
    off: &'static str,
    on: &'static str,
    boot: Option<&'static str>,
}

fn switch(ctx: &Ctx, s: &Switch) -> Outcome {
    if !ctx.root().exists(s.path) {
        return Outcome::pass(format!("{} is absent: {}", s.path, s.absent));
    }
    match value::<u32>(ctx, s.path) {
        Ok(0) => Outcome::pass(s.off).evidence(s.path, "0"),
        Ok(v) => {
            let o = Outcome::problem(s.on)
                .evidence(s.path, v.to_string())
                .fix_write(s.path, "0");
            match s.boot {
                Some(param) => o.fix_boot(param),
                None => o,
            }
        }
        Err(o) => o,
    }
}

fn rt_throttling(ctx: &Ctx) -> Outcome {
    if !ctx.root().exists(RT_RUNTIME) {
        return Outcome::pass(format!(
            "{RT_RUNTIME} is absent: no RT bandwidth control on this kernel"
        ));
    }
    let runtime: i64 = match value(ctx, RT_RUNTIME) {
        Ok(v) => v,
        Err(o) => return o,
    };
    let period: i64 = value(ctx, RT_PERIOD).unwrap_or(1_000_000);
    if runtime < 0 {
        return Outcome::pass("RT throttling is off (sched_rt_runtime_us = -1)")
            .evidence(RT_RUNTIME, "-1");
    }
    Outcome::problem(format!(
        "RT tasks are stopped for {} us of every {period} us once they use {runtime} us",
        (period - runtime).max(0)
    ))
    .evidence(RT_RUNTIME, runtime.to_string())
    .evidence(RT_PERIOD, period.to_string())
    .fix_write(RT_RUNTIME, "-1")
    .fix_advice(
        "only with RT tasks that are known to sleep: a runaway SCHED_FIFO loop then starves the CPU's other tasks",
    )
}

fn timer_migration(ctx: &Ctx) -> Outcome {
    switch(
        ctx,
        &Switch {
            path: TIMER_MIGRATION,
            absent: "kernel without NO_HZ_COMMON: timers stay where armed",
            off: "timer migration is off",
            on: "timer migration is on",
            boot: None,
        },
    )
}

fn numa_balancing(ctx: &Ctx) -> Outcome {
    switch(
        ctx,
        &Switch {
            path: NUMA_BALANCING,
            absent: "no automatic NUMA balancing on this kernel",
            off: "NUMA balancing is off",
            on: "automatic NUMA balancing is on",
            boot: Some("numa_balancing=disable"),
        },
    )
}

/// The bracketed choice of a sysfs selector (`always [madvise] never` -> `madvise`).
pub(crate) fn selected(text: &str) -> Option<&str> {
    let start = text.find('[')?;
    let end = start + text[start..].find(']')?;
    Some(&text[start + 1..end])
}

fn thp(ctx: &Ctx) -> Outcome {
    let Some(enabled_text) = ctx.root().read_trimmed(THP_ENABLED) else {
        return Outcome::pass(format!(
            "{THP_ENABLED} is absent: the kernel has no transparent huge pages"
        ));
    };
    let Some(enabled) = selected(&enabled_text) else {
        return Outcome::unknown(format!("{THP_ENABLED}: no [selection] in '{enabled_text}'"));
    };
    let defrag_text = ctx.root().read_trimmed(THP_DEFRAG);
    let defrag = defrag_text.as_deref().and_then(selected);
    let mut o = match (enabled, defrag) {
        ("always", _) => Outcome::problem("transparent huge pages are on for every mapping")
            .fix_write(THP_ENABLED, "madvise"),
        (_, Some("always")) if enabled != "never" => {
            Outcome::problem("THP defrag stalls page faults for compaction")
                .fix_write(THP_DEFRAG, "madvise")
        }
        _ => Outcome::pass(format!("transparent huge pages: {enabled}")),
    };
    o = o.evidence(THP_ENABLED, enabled_text.clone());
    if let Some(d) = defrag_text {
        o = o.evidence(THP_DEFRAG, d);
    }
    o
}

fn ksm(ctx: &Ctx) -> Outcome {
    if !ctx.root().exists(KSM_RUN) {
        return Outcome::pass(format!("{KSM_RUN} is absent: the kernel has no KSM"));
    }
    match value::<u32>(ctx, KSM_RUN) {
        Ok(1) => Outcome::problem("ksmd is merging pages")
            .evidence(KSM_RUN, "1")
            .fix_write(KSM_RUN, "0"),
        Ok(v) => Outcome::pass("KSM is not running").evidence(KSM_RUN, v.to_string()),
        Err(o) => o,
    }
}

fn swap(ctx: &Ctx) -> Outcome {
    let Some(text) = ctx.root().read_opt(SWAPS).ok().flatten() else {
        return Outcome::unknown(format!("{SWAPS} cannot be read"));
    };
    let devices: Vec<&str> = text
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    if devices.is_empty() {
        return Outcome::pass("no swap is active").evidence(SWAPS, "no entries");
    }
    Outcome::problem(format!("swap is active on {}", devices.join(", ")))
        .evidence(SWAPS, devices.join(", "))
        .fix_command("swapoff -a")
        .fix_advice("or make sure every RT process calls mlockall(MCL_CURRENT | MCL_FUTURE)")
}

fn stat_interval(ctx: &Ctx) -> Outcome {
    match value::<u64>(ctx, STAT_INTERVAL) {
        Ok(v) if v >= 10 => Outcome::pass(format!("vmstat counters fold every {v} s"))
            .evidence(STAT_INTERVAL, v.to_string()),
        Ok(v) => Outcome::problem(format!(
            "vmstat work runs every {v} s on each CPU that touched memory counters"
        ))
        .evidence(STAT_INTERVAL, v.to_string())
        .fix_write(STAT_INTERVAL, "10"),
        Err(o) => o,
    }
}

fn nmi_watchdog(ctx: &Ctx) -> Outcome {
    switch(
        ctx,
        &Switch {
            path: NMI_WATCHDOG,
            absent: "no hard-lockup detector on this kernel",
            off: "the NMI watchdog is off",
            on: "the NMI watchdog is on",
            boot: Some("nmi_watchdog=0"),
        },
    )
}

fn soft_watchdog(ctx: &Ctx) -> Outcome {
    let path = if ctx.root().exists(SOFT_WATCHDOG) {
        SOFT_WATCHDOG
    } else if ctx.root().exists(WATCHDOG) {
        WATCHDOG
    } else {
        return Outcome::pass("no lockup detector on this kernel (CONFIG_LOCKUP_DETECTOR is off)");
    };
    match value::<u32>(ctx, path) {
        Ok(0) => Outcome::pass("the soft-lockup detector is off").evidence(path, "0"),
        Ok(v) => Outcome::problem("the soft-lockup detector is on")
            .evidence(path, v.to_string())
            .fix_write(path, "0")
            .fix_boot("nosoftlockup"),
        Err(o) => o,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Options;
    use testkit::FakeRoot;

    fn run(fake: &FakeRoot, f: fn(&Ctx) -> Outcome) -> Outcome {
        f(&Ctx::new(fake.root(), Options::default()))
    }

    #[test]
    fn selector_reads_the_bracketed_choice() {
        assert_eq!(selected("always [madvise] never"), Some("madvise"));
        assert_eq!(
            selected("always defer defer+madvise [madvise] never"),
            Some("madvise")
        );
        assert_eq!(selected("always madvise never"), None);
        assert_eq!(selected("[broken"), None);
        assert_eq!(selected("]["), None);
    }

    #[test]
    fn rt_throttling_on_and_off() {
        let on = FakeRoot::new()
            .file(RT_RUNTIME, "950000\n")
            .file(RT_PERIOD, "1000000\n");
        let o = run(&on, rt_throttling);
        assert!(!o.passed());
        assert_eq!(
            o.summary(),
            "RT tasks are stopped for 50000 us of every 1000000 us once they use 950000 us"
        );
        let off = FakeRoot::new().file(RT_RUNTIME, "-1\n");
        assert!(run(&off, rt_throttling).passed());
        let bad = FakeRoot::new().file(RT_RUNTIME, "lots\n");
        assert!(
            run(&bad, rt_throttling)
                .summary()
                .contains("unexpected content 'lots'")
        );
    }

    #[test]
    fn sysctl_switches() {
        let on = FakeRoot::new()
            .file(TIMER_MIGRATION, "1\n")
            .file(NUMA_BALANCING, "1\n")
            .file(KSM_RUN, "1\n")
            .file(NMI_WATCHDOG, "1\n")
            .file(SOFT_WATCHDOG, "1\n")
            .file(STAT_INTERVAL, "1\n");
        for f in [
            timer_migration,
            numa_balancing,
            ksm,
            nmi_watchdog,
            soft_watchdog,
            stat_interval,
        ] {
            assert!(!run(&on, f).passed());
        }
        let off = FakeRoot::new()
            .file(TIMER_MIGRATION, "0\n")
            .file(NUMA_BALANCING, "0\n")
            .file(KSM_RUN, "2\n")
            .file(NMI_WATCHDOG, "0\n")
            .file(WATCHDOG, "0\n")
            .file(STAT_INTERVAL, "10\n");
        for f in [
            timer_migration,
            numa_balancing,
            ksm,
            nmi_watchdog,
            soft_watchdog,
            stat_interval,
        ] {
            assert!(run(&off, f).passed(), "{:?}", run(&off, f));
        }
        // Absent files mean the kernel lacks the feature: nothing to fix.
        let none = FakeRoot::new();
        for f in [
            timer_migration,
            numa_balancing,
            ksm,
            nmi_watchdog,
            soft_watchdog,
        ] {
            assert!(run(&none, f).passed());
        }
        assert!(!run(&none, stat_interval).passed());
    }

    #[test]
    fn thp_always_and_defrag_always() {
        let fake = FakeRoot::new()
            .file(THP_ENABLED, "[always] madvise never\n")
            .file(THP_DEFRAG, "always defer defer+madvise [madvise] never\n");
        assert!(!run(&fake, thp).passed());
        let fake = FakeRoot::new()
            .file(THP_ENABLED, "always [madvise] never\n")
            .file(THP_DEFRAG, "[always] defer defer+madvise madvise never\n");
        assert!(run(&fake, thp).summary().contains("defrag"));
        let fake = FakeRoot::new()
            .file(THP_ENABLED, "always madvise [never]\n")
            .file(THP_DEFRAG, "[always] defer\n");
        assert!(run(&fake, thp).passed());
    }

    #[test]
    fn swap_entries_are_listed() {
        let fake = FakeRoot::new().file(
            SWAPS,
            "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n/dev/sda3                               partition\t8388604\t\t0\t\t-2\n",
        );
        let o = run(&fake, swap);
        assert_eq!(o.summary(), "swap is active on /dev/sda3");
        let fake =
            FakeRoot::new().file(SWAPS, "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n");
        assert!(run(&fake, swap).passed());
    }
}
