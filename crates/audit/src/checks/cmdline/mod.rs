//! The `cmdline.*` checks: the boot parameters a real-time machine needs (talk 000's list:
//! isolation, tick, RCU offload, IRQ affinity, skew_tick, lockup detectors; plus the TSC
//! watchdog, idle limits, IRQ threading and the serial console of talk 001) and their
//! consistency with each other and with the real-time CPUs.
//!
//! - [`cpus`]: the parameters that take CPU lists (isolcpus, nohz_full, rcu_nocbs,
//!   irqaffinity) and rcu_nocb_poll.
//! - [`flags`]: the switches (skew_tick, lockup detectors, tsc=, idle, threadirqs).
//! - [`console`]: a serial console with a verbose log level.
//!
//! Parameters are read from `/proc/cmdline` as the kernel splits them
//! ([`sys::parse::cmdline`]); the last occurrence of a parameter wins.

mod console;
mod cpus;
mod flags;

use model::CpuSet;
use model::audit::{Group, Severity};

use crate::check::Check;
use crate::context::Ctx;
use crate::outcome::Outcome;

/// Where the boot command line is read.
const CMDLINE: &str = "/proc/cmdline";

/// The checks of this group.
pub(crate) const CHECKS: &[Check] = &[
    Check {
        id: "cmdline.isolcpus",
        title: "RT CPUs isolated",
        group: Group::Cmdline,
        severity: Severity::Warn,
        why: "CPUs not isolated by isolcpus or a cpuset partition get load-balanced tasks and managed IRQs",
        run: cpus::isolcpus,
    },
    Check {
        id: "cmdline.nohz_full",
        title: "Tickless RT CPUs",
        group: Group::Cmdline,
        severity: Severity::Info,
        why: "nohz_full stops the scheduler tick on CPUs that run one task, at the price of costlier kernel entries",
        run: cpus::nohz_full,
    },
    Check {
        id: "cmdline.rcu_nocbs",
        title: "RCU callbacks offloaded",
        group: Group::Cmdline,
        severity: Severity::Warn,
        why: "RCU callbacks run in softirq context on their own CPU unless rcu_nocbs moves them to kthreads elsewhere",
        run: cpus::rcu_nocbs,
    },
    Check {
        id: "cmdline.rcu_nocb_poll",
        title: "RCU offload kthreads poll",
        group: Group::Cmdline,
        severity: Severity::Info,
        why: "without rcu_nocb_poll the offloaded CPUs themselves wake the RCU kthreads",
        run: cpus::rcu_nocb_poll,
    },
    Check {
        id: "cmdline.nohz_full_rcu",
        title: "nohz_full within rcu_nocbs",
        group: Group::Cmdline,
        severity: Severity::Info,
        why: "a tickless CPU must not run RCU callbacks; the kernel offloads nohz_full CPUs itself but the command line should say so",
        run: cpus::nohz_full_rcu,
    },
    Check {
        id: "cmdline.irqaffinity",
        title: "Default IRQ affinity",
        group: Group::Cmdline,
        severity: Severity::Fail,
        why: "irqaffinity sets where IRQs start out; IRQs on RT CPUs preempt the real-time tasks there",
        run: cpus::irqaffinity,
    },
    Check {
        id: "cmdline.skew_tick",
        title: "Skewed ticks",
        group: Group::Cmdline,
        severity: Severity::Warn,
        why: "without skew_tick=1 every CPU's tick fires at the same instant and they contend for the same timekeeping locks",
        run: flags::skew_tick,
    },
    Check {
        id: "cmdline.nosoftlockup",
        title: "Soft lockup detector off",
        group: Group::Cmdline,
        severity: Severity::Warn,
        why: "the soft lockup detector wakes a stopper thread on every CPU every few seconds (talk 000: nosoftlockup)",
        run: flags::nosoftlockup,
    },
    Check {
        id: "cmdline.nowatchdog",
        title: "Hard lockup detector off",
        group: Group::Cmdline,
        severity: Severity::Warn,
        why: "the hard lockup detector raises a perf NMI on every CPU periodically (talk 000: nowatchdog)",
        run: flags::nowatchdog,
    },
    Check {
        id: "cmdline.tsc",
        title: "TSC watchdog",
        group: Group::Cmdline,
        severity: Severity::Info,
        why: "the clocksource watchdog reads the slow hpet/acpi_pm against the TSC from a timer, and may wrongly mark the TSC unstable",
        run: flags::tsc,
    },
    Check {
        id: "cmdline.idle",
        title: "Idle state limits",
        group: Group::Cmdline,
        severity: Severity::Info,
        why: "waking from a deep C-state adds tens to hundreds of microseconds to the first response",
        run: flags::idle,
    },
    Check {
        id: "cmdline.threadirqs",
        title: "Threaded IRQ handlers",
        group: Group::Cmdline,
        severity: Severity::Info,
        why: "IRQ handlers in hard IRQ context preempt every task; threaded ones get a priority you choose",
        run: flags::threadirqs,
    },
    Check {
        id: "cmdline.serial_console",
        title: "Serial console log level",
        group: Group::Cmdline,
        severity: Severity::Warn,
        why: "printk to a slow UART keeps IRQs off for milliseconds per line (talk 001)",
        run: console::serial_console,
    },
];

/// The `unknown` outcome when `/proc/cmdline` cannot be read.
fn unreadable(ctx: &Ctx) -> Option<Outcome> {
    (!ctx.has_cmdline()).then(|| {
        Outcome::unknown(format!(
            "{CMDLINE} cannot be read (procfs not mounted, or not captured)"
        ))
    })
}

/// The parameters named `keys` as written (`isolcpus=2-7 nohz_full=2-7`), or what the
/// command line holds instead.
fn seen(ctx: &Ctx, keys: &[&str]) -> String {
    let cmdline = ctx.cmdline();
    let present: Vec<String> = keys
        .iter()
        .filter_map(|k| cmdline.get(k))
        .map(|p| match p.value {
            Some(v) => format!("{}={v}", p.key),
            None => p.key.to_string(),
        })
        .collect();
    if present.is_empty() {
        format!(
            "none of {} in: {}",
            keys.join(", "),
            shorten(ctx.cmdline_text(), 160)
        )
    } else {
        present.join(" ")
    }
}

/// `text` cut to `max` characters.
fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

/// A boot parameter that takes a CPU list.
#[derive(Clone, Debug, PartialEq, Eq)]
enum CpuParam {
    /// Not on the command line.
    Absent,
    /// Given without `=` (`rcu_nocbs`).
    Bare,
    /// A list the kernel accepts.
    List(CpuSet),
    /// Not a CPU list: the kernel ignores it.
    Bad(String),
}

impl CpuParam {
    /// The CPUs it names (none unless a valid list).
    fn cpus(&self) -> CpuSet {
        match self {
            CpuParam::List(cpus) => cpus.clone(),
            _ => CpuSet::new(),
        }
    }
}

/// Reads CPU-list parameter `key` the way the kernel's `cpulist_parse()` does, with `all`
/// for every possible CPU and `N` for the last one (kernels since 5.13).
fn cpu_param(ctx: &Ctx, key: &str) -> CpuParam {
    match ctx.cmdline().get(key) {
        None => CpuParam::Absent,
        Some(p) => match p.value {
            None => CpuParam::Bare,
            Some(v) => match kernel_cpu_list(v, &possible(ctx)) {
                Ok(cpus) => CpuParam::List(cpus),
                Err(e) => CpuParam::Bad(e),
            },
        },
    }
}

/// The possible CPUs (else the online ones).
fn possible(ctx: &Ctx) -> CpuSet {
    let host = ctx.host();
    if host.possible_cpus.is_empty() {
        host.online_cpus.clone()
    } else {
        host.possible_cpus.clone()
    }
}

pub(crate) use crate::context::kernel_cpu_list;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Options;
    use testkit::FakeRoot;

    #[test]
    fn kernel_cpu_lists_take_all_and_n() {
        let possible = CpuSet::parse_list("0-7").unwrap();
        let list = |v: &str| kernel_cpu_list(v, &possible).map(|c| c.to_string());
        assert_eq!(list("all").unwrap(), "0-7");
        assert_eq!(list("2-N").unwrap(), "2-7");
        assert_eq!(list("1,N").unwrap(), "1,7");
        assert_eq!(list("0-N:1/2").unwrap(), "0,2,4,6");
        assert_eq!(list("2-7").unwrap(), "2-7");
        assert!(list("x").is_err());
        assert!(list("").is_err());
        assert!(list("7-2").is_err());
        assert!(kernel_cpu_list("N", &CpuSet::new()).is_err());
    }

    #[test]
    fn cpu_params_and_what_was_seen() {
        let fake = FakeRoot::new()
            .cpus(4)
            .cmdline("quiet rcu_nocbs isolcpus=1-3 nohz_full=x irqaffinity=all");
        let ctx = Ctx::new(fake.root(), Options::default());
        assert_eq!(cpu_param(&ctx, "rcu_nocbs"), CpuParam::Bare);
        assert_eq!(
            cpu_param(&ctx, "isolcpus"),
            CpuParam::List(CpuSet::parse_list("1-3").unwrap())
        );
        assert!(matches!(cpu_param(&ctx, "nohz_full"), CpuParam::Bad(_)));
        assert_eq!(cpu_param(&ctx, "irqaffinity").cpus().to_string(), "0-3");
        assert_eq!(cpu_param(&ctx, "rcu_nocb_poll"), CpuParam::Absent);
        assert_eq!(
            seen(&ctx, &["rcu_nocbs", "isolcpus"]),
            "rcu_nocbs isolcpus=1-3"
        );
        assert_eq!(
            seen(&ctx, &["skew_tick"]),
            "none of skew_tick in: quiet rcu_nocbs isolcpus=1-3 nohz_full=x irqaffinity=all"
        );
        assert!(unreadable(&ctx).is_none());
        let fake = FakeRoot::new().cpus(1);
        let ctx = Ctx::new(fake.root(), Options::default());
        assert!(unreadable(&ctx).is_some());
    }
}
