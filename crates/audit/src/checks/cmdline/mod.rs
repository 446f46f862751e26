//! The `cmdline.*` checks: the boot parameters a real-time machine needs (the Linaro 2023 talk's list:
//! isolation, tick, RCU offload, IRQ affinity, skew_tick, lockup detectors; plus the TSC
//! watchdog, idle limits, IRQ threading and the serial console of the ELC Europe debugging talk) and their
//! consistency with each other and with the real-time CPUs.
//!
//! - [`cpus`]: the parameters that take CPU lists (isolcpus, nohz_full, rcu_nocbs,
//!   irqaffinity) and rcu_nocb_poll.
//! - [`flags`]: the switches (skew_tick, lockup detectors, tsc=, idle, threadirqs).
//! - [`console`]: a serial console with a verbose log level.
//!
//! Parameters are read from `/proc/cmdline` as the kernel splits them
//! ([`sys::parse::cmdline`]); the last occurrence of a parameter wins.

mod common;
mod console;
mod cpus;
mod flags;

use model::audit::{Group, Severity};

use crate::check::Check;

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
        why: "the soft lockup detector wakes a stopper thread on every CPU every few seconds; nosoftlockup turns it off",
        run: flags::nosoftlockup,
    },
    Check {
        id: "cmdline.nowatchdog",
        title: "Hard lockup detector off",
        group: Group::Cmdline,
        severity: Severity::Warn,
        why: "the hard lockup detector raises a perf NMI on every CPU periodically; nowatchdog turns it off",
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
        why: "printk to a slow UART keeps IRQs off for milliseconds per line",
        run: console::serial_console,
    },
];
