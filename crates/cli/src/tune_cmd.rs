//! `rtlab tune plan`: what to change so the RT CPUs are left to real-time work — the boot
//! parameters with how to install them, and the runtime changes with current and new values —
//! as text, JSON (`rtlab.tune-plan/1`) or a shell script. Reads only.

use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use model::tune::TuneProfile;
use model::{CpuSet, CpuSpec};
use sys::Root;

use crate::console;
use crate::exit::{Exit, UsageError};

/// The long help of `rtlab tune plan`.
pub const PLAN_LONG: &str = "\
Plan the tuning of this machine for real-time work on --rt-cpus, the rest of the online CPUs \
(or --housekeeping) taking everything else. Nothing is changed: the plan says what is there now, \
what it should be, and why.

Boot parameters (a reboot applies them): rcu_nocbs and rcu_nocb_poll for the RT CPUs, \
irqaffinity for the housekeeping CPUs, skew_tick=1; with --profile strict also nohz_full, \
nosoftlockup and nowatchdog; isolcpus=domain,managed_irq only where no cgroup cpuset can \
isolate. Parameters the command line already has are left out; the line to paste comes with \
the steps for GRUB, systemd-boot and a Raspberry Pi's cmdline.txt (printed, never written).

Runtime changes: the affinity of every movable IRQ allowed on an RT CPU (per-CPU and \
kernel-managed IRQs are reported, not planned), the default IRQ affinity, the unbound \
workqueue cpumask, the performance governor and the idle states too slow to leave (over 10 us; \
all but polling with strict) on the RT CPUs, timer_migration, transparent huge pages \
(madvise; never with strict), RT throttling and the lockup watchdogs (strict), and cgroup \
cpusets: an isolated cgroup v2 partition for the RT CPUs and a housekeeping group for every \
movable task (v1 exclusive cpusets where v2 has no cpuset controller).

--format shell writes the runtime changes as a script a reviewer can read and run by hand.";

/// `rtlab tune` commands.
#[derive(Debug, Subcommand)]
pub enum TuneCommand {
    /// Plan the boot parameters and runtime changes for real-time CPUs (reads only).
    #[command(long_about = PLAN_LONG)]
    Plan(PlanArgs),
}

/// Options of `rtlab tune plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The CPUs for real-time work (`2-7`, `3`).
    #[arg(long, value_name = "LIST")]
    pub rt_cpus: CpuSpec,
    /// The CPUs for everything else (default: every other online CPU).
    #[arg(long, value_name = "LIST")]
    pub housekeeping: Option<CpuSpec>,
    /// How far to go: `balanced` keeps watchdogs, RT throttling and quick idle states;
    /// `strict` turns them off and adds nohz_full.
    #[arg(long, value_enum, default_value = "balanced")]
    pub profile: ProfileArg,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: PlanFormat,
}

/// `--profile`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProfileArg {
    /// Keep the safety nets.
    Balanced,
    /// Everything for latency.
    Strict,
}

/// `--format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    /// For a person.
    Text,
    /// `rtlab.tune-plan/1`.
    Json,
    /// A POSIX shell script of the runtime changes.
    Shell,
}

/// `rtlab tune`.
pub fn run(command: &TuneCommand, root: &Root) -> Result<Exit> {
    match command {
        TuneCommand::Plan(args) => plan(args, root),
    }
}

fn resolve(spec: &CpuSpec, flag: &str, root: &Root) -> Result<CpuSet> {
    let possible = sys::cpu::possible(root)?;
    let online = sys::cpu::online(root)?;
    spec.resolve(&possible, &online, &online)
        .map_err(|e| UsageError(format!("{flag} {spec}: {e}")).into())
}

fn plan(args: &PlanArgs, root: &Root) -> Result<Exit> {
    let request = tune::Request {
        rt_cpus: resolve(&args.rt_cpus, "--rt-cpus", root)?,
        housekeeping: args
            .housekeeping
            .as_ref()
            .map(|h| resolve(h, "--housekeeping", root))
            .transpose()?,
        profile: match args.profile {
            ProfileArg::Balanced => TuneProfile::Balanced,
            ProfileArg::Strict => TuneProfile::Strict,
        },
    };
    let plan = tune::plan(root, &request).map_err(|e| UsageError(e.to_string()))?;
    let text = match args.format {
        PlanFormat::Text => report::tune::plan_text(&plan),
        PlanFormat::Json => serde_json::to_string_pretty(&plan)? + "\n",
        PlanFormat::Shell => report::tune::plan_shell(&plan),
    };
    console::print_stdout(&text)?;
    Ok(Exit::Ok)
}
