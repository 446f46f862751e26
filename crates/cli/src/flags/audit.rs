//! `rtlab audit` (and `audit capture`) and `rtlab kconfig diff`: options, help, examples.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use model::CpuSet;

use super::values::parse_cpu_list;

pub const AUDIT_LONG: &str = "\
Check whether this machine is ready for real-time work, in one pass, without changing anything: \
the kernel (PREEMPT_RT, preemption mode) and its build configuration; the boot command line \
(isolcpus, nohz_full, rcu_nocbs, irqaffinity, skew_tick, watchdogs, serial console) and its \
consistency; where IRQs, workqueues, user and kernel threads may run relative to the real-time \
CPUs, irqbalance, SMT siblings, cpuset partitions and RT priorities; cpufreq governors and \
cpuidle states; RT throttling, timer migration, THP, KSM, swap, NUMA balancing and lockup \
detectors; the clock source; and what the kernel log says (sleeping-in-atomic splats split \
by cause, lockdep, soft lockups, hung tasks, RT throttling, disabled IRQs, clocksource trouble).

Every finding has a stable id, a severity (fail, warn, info), a status (pass, info, warn, \
fail, unknown, error; info is advice that does not fail), the evidence (the file read and the value seen), why it matters, and the exact \
fix: a command, a sysfs write or a boot parameter with this machine's CPU lists filled in. A \
check that cannot read its input reports `unknown` with the reason and the others go on.

The real-time CPUs are --rt-cpus, else those of isolcpus=, else nohz_full=, else the CPUs of \
cgroup v2 cpuset partitions; with none, the placement checks say so.";

pub const AUDIT_AFTER: &str = "\
EXAMPLES:
    rtlab audit                                   audit this machine
    rtlab audit --rt-cpus 2-7                     judge placement for CPUs 2-7
    rtlab audit --only kconfig,placement          some checks only (ids, groups or prefix*)
    rtlab audit --format markdown > audit.md      for a ticket
    rtlab audit --kconfig /boot/config-6.12-rt    judge a config before booting it
    rtlab audit --only log --dmesg saved.log      classify a saved kernel log
    rtlab audit capture ./robot-tree              copy what the audit reads (for a bug report)
    rtlab audit --root ./robot-tree               audit that captured tree
    rtlab audit --list                            every check with its id

EXIT STATUS:
    0    no finding failed (warnings may remain)
    1    at least one finding failed
    2    bad input (an unknown check id, an unreadable --kconfig or --dmesg file)";

/// Options of `rtlab audit`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct AuditArgs {
    /// The real-time CPUs to judge placement for (e.g. 2-7). Default: from isolcpus=,
    /// nohz_full= or cgroup v2 cpuset partitions.
    #[arg(long, value_name = "LIST", value_parser = parse_cpu_list)]
    pub rt_cpus: Option<CpuSet>,

    /// What kind of kernel build this is meant to be: `production` flags debug options that
    /// cost latency; `debug` wants the options that catch RT bugs (lockdep, atomic-sleep
    /// checks).
    #[arg(
        long,
        alias = "profile",
        value_enum,
        value_name = "KIND",
        default_value = "production"
    )]
    pub kernel_build: KernelBuild,

    /// Run only these checks: ids (`irq.affinity`), id prefixes before the dot (`kconfig`),
    /// groups (`kernel`, `cmdline`, `placement`, `power`, `sched`, `time`, `log`) or
    /// `prefix*` (`cmdline.rcu*`), comma-separated.
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    pub only: Vec<String>,

    /// Skip these checks (same forms as --only).
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    pub skip: Vec<String>,

    /// Judge this kernel config file instead of the running kernel's.
    #[arg(long, value_name = "FILE")]
    pub kconfig: Option<PathBuf>,

    /// Classify this saved kernel log (dmesg, journalctl -k or /dev/kmsg text) instead of
    /// the live one.
    #[arg(long, value_name = "FILE")]
    pub dmesg: Option<PathBuf>,

    /// Output form.
    #[arg(long, value_enum, default_value = "text")]
    pub format: AuditFormat,

    /// Show every finding's reason and all evidence, passes included.
    #[arg(short, long)]
    pub verbose: bool,

    /// List the checks (id, severity, title) and exit.
    #[arg(long)]
    pub list: bool,

    /// Other audit actions.
    #[command(subcommand)]
    pub action: Option<AuditAction>,
}

/// `rtlab audit <action>`.
#[derive(Debug, Subcommand)]
pub enum AuditAction {
    /// Copy exactly the files the audit reads into DIR (hostname scrubbed), with a
    /// MANIFEST.toml: a bug report that `rtlab audit --root DIR` can replay.
    #[command(after_long_help = super::help::DONE)]
    Capture {
        /// A new (or empty) directory.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
}

/// `--kernel-build`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum KernelBuild {
    /// A production kernel: debug options are a cost.
    Production,
    /// A validation kernel: debug options are wanted.
    Debug,
}

/// `--format` of `rtlab audit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AuditFormat {
    /// Grouped table with fixes under problems and a summary line.
    #[value(alias = "table")]
    Text,
    /// The whole report as JSON (schema rtlab.audit/2).
    Json,
    /// Markdown: tables per group and details of every problem.
    Markdown,
}

pub const KCONFIG_LONG: &str = "\
Kernel configuration tools. `rtlab kconfig diff OLD NEW` lists the differences that matter to \
real-time behaviour between two kernel configs (a .config, /boot/config-*, or an unpacked \
/proc/config.gz), most important first: the preemption model, HZ, tickless and isolation \
support, RCU offloading, frequency and idle drivers, tracers, debug options that cost latency. \
Check it after every kernel upgrade: an option that silently changed is a latency regression \
waiting to be measured.";

/// `rtlab kconfig`.
#[derive(Debug, Args)]
pub struct KconfigArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: KconfigAction,
}

/// `rtlab kconfig <action>`.
#[derive(Debug, Subcommand)]
pub enum KconfigAction {
    /// The real-time-relevant differences between two kernel configs.
    #[command(after_long_help = super::help::DONE)]
    Diff {
        /// The old config (before the upgrade).
        #[arg(value_name = "OLD")]
        old: PathBuf,
        /// The new config.
        #[arg(value_name = "NEW")]
        new: PathBuf,
        /// Output form.
        #[arg(long, value_enum, default_value = "text")]
        format: KconfigFormat,
    },
}

/// `--format` of `rtlab kconfig diff`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum KconfigFormat {
    /// Aligned text, most important first.
    #[value(alias = "table")]
    Text,
    /// JSON.
    Json,
    /// A Markdown table.
    Markdown,
}
