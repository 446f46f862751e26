//! `rtlab tune` and its subcommands: plan, apply, revert, status, run, irqd.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use model::tune::IrqRule;
use model::{CpuSpec, Nanos};

use super::values::{parse_rule, parse_time};

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
    #[command(long_about = PLAN_LONG, after_long_help = super::help::TUNE_PLAN)]
    Plan(PlanArgs),
    /// Apply the plan's runtime changes, each original recorded in a journal on disk before it
    /// changes (boot parameters are printed, not applied).
    #[command(after_long_help = super::help::TUNE_APPLY)]
    Apply(ApplyArgs),
    /// Put back everything the journal records, newest first: tasks, files, cgroups.
    #[command(after_long_help = super::help::TUNE_REVERT)]
    Revert(RevertArgs),
    /// Show what the journal applied and whether each file still holds it.
    #[command(after_long_help = super::help::TUNE_STATUS)]
    Status(JournalArgs),
    /// Run a command inside the RT CPUs' cpuset that `tune apply` created (after apply, every
    /// other task is confined to the housekeeping CPUs): `rtlab tune run -- ./my-rt-app`.
    #[command(after_long_help = super::help::TUNE_RUN)]
    Run(RunInArgs),
    /// Keep IRQs that appear after apply off the RT CPUs, and the IRQ rules applied.
    #[command(long_about = IRQD_LONG, after_help = IRQD_AFTER)]
    Irqd(IrqdArgs),
}

/// Options of `rtlab tune run`.
#[derive(Debug, Args)]
pub struct RunInArgs {
    /// The journal of the tuning whose RT cpuset to use.
    #[command(flatten)]
    pub journal: JournalArgs,
    /// The command and its arguments.
    #[arg(required = true, trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Options of `rtlab tune apply`.
#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// The plan to apply.
    #[command(flatten)]
    pub plan: PlanArgs,
    /// Apply without asking (needed when standard input is not a terminal).
    #[arg(long)]
    pub yes: bool,
    /// The journal.
    #[command(flatten)]
    pub journal: JournalArgs,
    /// Abort (as a crash would) after N changes: for the test that reverts a half-applied
    /// plan.
    #[arg(long, value_name = "N", hide = true)]
    pub crash_after: Option<usize>,
}

/// Options of `rtlab tune revert`.
#[derive(Debug, Args)]
pub struct RevertArgs {
    /// The journal to revert.
    #[command(flatten)]
    pub journal: JournalArgs,
    /// Revert without asking. Revert never asks (it only puts back what was there); the flag
    /// is taken so that a script says `--yes` to apply and revert alike.
    #[arg(long)]
    pub yes: bool,
}

/// Where the journal is.
#[derive(Debug, Args)]
pub struct JournalArgs {
    /// The journal of originals (default /var/lib/rtlab/tune-journal.jsonl).
    #[arg(long, value_name = "PATH", default_value = tune::journal::DEFAULT_PATH)]
    pub journal: PathBuf,
}

/// Options of `rtlab tune plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The CPU split and the rules.
    #[command(flatten)]
    pub split: SplitArgs,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: PlanFormat,
}

/// What a plan is made for: the CPU split, the profile.
#[derive(Debug, Args)]
pub struct SplitArgs {
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
    /// An IRQ rule, `PATTERN=[POLICY[:PRIO]][@CPUS]` (repeatable; the first match decides):
    /// IRQs whose thread name (`irq/24-eth0`), name or number match the glob get these CPUs
    /// instead of the housekeeping ones, and their threads this policy. `irq/*-eth0=fifo:80@0-1`.
    #[arg(long = "irq-rule", value_name = "RULE", value_parser = parse_rule)]
    pub irq_rules: Vec<IrqRule>,
    /// A file of IRQ rules, one per line (`#` comments), read after the --irq-rule ones.
    #[arg(long, value_name = "FILE")]
    pub irq_rules_file: Option<PathBuf>,
    /// Cpuset groups of other software (docker, podman's libpod_parent, libvirt's
    /// machine.slice, kubepods) that overlap the RT CPUs: `confine` them to the housekeeping
    /// CPUs while tuned (journaled, reverted), or `share` the RT CPUs with them, which leaves
    /// the RT cpuset without exclusivity (their tasks may run there, and the RT CPUs stay in
    /// their load balancing).
    #[arg(long, value_enum, value_name = "HOW", default_value = "confine")]
    pub sibling_cpusets: SiblingsArg,
}

impl SplitArgs {
    /// The split for `rt_cpus` with the rest as given (for commands that tune on the way,
    /// like `rtlab run --tuned`).
    pub fn new(rt_cpus: CpuSpec, housekeeping: Option<CpuSpec>, profile: ProfileArg) -> SplitArgs {
        SplitArgs {
            rt_cpus,
            housekeeping,
            profile,
            irq_rules: Vec::new(),
            irq_rules_file: None,
            sibling_cpusets: SiblingsArg::Confine,
        }
    }
}

/// `--profile`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProfileArg {
    /// Keep the safety nets.
    Balanced,
    /// Everything for latency.
    Strict,
}

/// `--sibling-cpusets`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SiblingsArg {
    /// Confine them to the housekeeping CPUs while tuned.
    Confine,
    /// Leave them; the RT cpuset is not exclusive.
    Share,
}

impl From<SiblingsArg> for tune::Siblings {
    fn from(a: SiblingsArg) -> tune::Siblings {
        match a {
            SiblingsArg::Confine => tune::Siblings::Confine,
            SiblingsArg::Share => tune::Siblings::Share,
        }
    }
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

pub const IRQD_LONG: &str = "\
Watch /proc/interrupts and keep IRQs that appear after `rtlab tune apply` (a module loaded, a \
device plugged, a network interface brought up) off the RT CPUs: each new IRQ that can move \
gets the housekeeping CPUs, or the CPUs of the first --irq-rule that matches it, and its \
handler threads the rule's policy. Every change is added to the tuning's journal first, so \
`rtlab tune revert` takes it back with the rest; when the tuning is reverted, irqd stops.

Every --interval it compares the IRQs listed with the last look (the counts are ignored); \
every 30 s it checks all of them again, catching an IRQ that irqbalance or a person moved \
back. It runs on the housekeeping CPUs and prints one line per change. Give it the same \
--rt-cpus, --housekeeping and rules as `tune apply`.

--unit prints a systemd unit that runs irqd with these options as a service (save it as \
/etc/systemd/system/rtlab-irqd.service, then `systemctl daemon-reload` and `systemctl enable \
--now rtlab-irqd`).";

pub const IRQD_AFTER: &str = "\
EXAMPLES:
    sudo rtlab tune apply --rt-cpus 2-7 --irq-rule 'irq/*-eth0=fifo:80@0-1'
    sudo rtlab tune irqd --rt-cpus 2-7 --irq-rule 'irq/*-eth0=fifo:80@0-1'
    sudo rtlab tune irqd --rt-cpus 2-7 --once         check once, then exit
    rtlab tune irqd --rt-cpus 2-7 --irq-rules-file /etc/rtlab/irq-rules --unit \\
        | sudo tee /etc/systemd/system/rtlab-irqd.service

EXIT STATUS:
    0    stopped by a signal, or the tuning was reverted; with --once: nothing refused
    1    with --once: the kernel refused a change
    2    bad input or setup error";

/// Options of `rtlab tune irqd`.
#[derive(Debug, Args)]
pub struct IrqdArgs {
    /// The CPU split and the rules, as given to `tune apply`.
    #[command(flatten)]
    pub split: SplitArgs,
    /// The tuning's journal, added to.
    #[command(flatten)]
    pub journal: JournalArgs,
    /// How often to look at /proc/interrupts.
    #[arg(long, value_name = "TIME", value_parser = parse_time, default_value = "2s")]
    pub interval: Nanos,
    /// Check once and exit.
    #[arg(long, conflicts_with = "unit")]
    pub once: bool,
    /// Print a systemd unit running irqd with these options, and exit.
    #[arg(long)]
    pub unit: bool,
}

#[cfg(test)]
mod tests {
    use super::super::{Cli, Command, parse};
    use super::TuneCommand;

    fn tune(words: &[&str]) -> TuneCommand {
        let args: Vec<std::ffi::OsString> = std::iter::once("rtlab")
            .chain(std::iter::once("tune"))
            .chain(words.iter().copied())
            .map(Into::into)
            .collect();
        match parse(&args).unwrap_or_else(|e| panic!("{words:?}: {e}")) {
            Cli {
                command: Command::Tune(t),
                ..
            } => t,
            _ => panic!("not a tune command"),
        }
    }

    // Issue #26: a script said `--yes` to apply and had `revert --yes` refused.
    #[test]
    fn apply_and_revert_both_take_yes() {
        assert!(
            matches!(tune(&["apply", "--rt-cpus", "1", "--yes"]), TuneCommand::Apply(a) if a.yes)
        );
        assert!(matches!(tune(&["revert", "--yes"]), TuneCommand::Revert(r) if r.yes));
        assert!(matches!(tune(&["revert"]), TuneCommand::Revert(r) if !r.yes));
    }
}
