//! `rtlab tune plan|apply|revert|status`: what to change so the RT CPUs are left to real-time
//! work — the boot parameters with how to install them, and the runtime changes with current
//! and new values — as text, JSON (`rtlab.tune-plan/1`) or a shell script; carrying the
//! runtime part out with a journal of every original, taking it back, and showing what is
//! applied now.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use model::tune::{IrqRule, TuneProfile};
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
    #[command(long_about = PLAN_LONG, after_long_help = crate::exit::help::TUNE_PLAN)]
    Plan(PlanArgs),
    /// Apply the plan's runtime changes, each original recorded in a journal on disk before it
    /// changes (boot parameters are printed, not applied).
    #[command(after_long_help = crate::exit::help::TUNE_APPLY)]
    Apply(ApplyArgs),
    /// Put back everything the journal records, newest first: tasks, files, cgroups.
    #[command(after_long_help = crate::exit::help::TUNE_REVERT)]
    Revert(JournalArgs),
    /// Show what the journal applied and whether each file still holds it.
    #[command(after_long_help = crate::exit::help::TUNE_STATUS)]
    Status(JournalArgs),
    /// Run a command inside the RT CPUs' cpuset that `tune apply` created (after apply, every
    /// other task is confined to the housekeeping CPUs): `rtlab tune run -- ./my-rt-app`.
    #[command(after_long_help = crate::exit::help::TUNE_RUN)]
    Run(RunInArgs),
    /// Keep IRQs that appear after apply off the RT CPUs, and the IRQ rules applied.
    #[command(long_about = crate::irqd_cmd::IRQD_LONG, after_help = crate::irqd_cmd::IRQD_AFTER)]
    Irqd(crate::irqd_cmd::IrqdArgs),
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
        }
    }

    /// Every rule: those given, then the file's.
    pub fn rules(&self) -> Result<Vec<IrqRule>> {
        let mut rules = self.irq_rules.clone();
        if let Some(path) = &self.irq_rules_file {
            let text = sys::fs::read_input_text(path, model::limits::MAX_RULES_BYTES)
                .map_err(|e| UsageError(format!("--irq-rules-file {}: {e}", path.display())))?;
            let more = model::irq_rule::parse_rules(&text)
                .map_err(|e| UsageError(format!("--irq-rules-file {}: {e}", path.display())))?;
            rules.extend(more);
        }
        Ok(rules)
    }
}

/// `--irq-rule`'s parser.
pub fn parse_rule(text: &str) -> Result<IrqRule, String> {
    text.parse()
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
        TuneCommand::Apply(args) => apply(args, root),
        TuneCommand::Revert(args) => revert(args, root),
        TuneCommand::Status(args) => status(args, root),
        TuneCommand::Run(args) => run_in(args, root),
        TuneCommand::Irqd(args) => crate::irqd_cmd::run(args, root),
    }
}

/// Joins the RT cpuset the journal created, then becomes `args.command`.
fn run_in(args: &RunInArgs, root: &Root) -> Result<Exit> {
    use std::os::unix::process::CommandExt;
    let group = tune::rt_group(&args.journal.journal).map_err(UsageError)?;
    let procs = format!("{group}/cgroup.procs");
    root.write(&procs, &std::process::id().to_string())
        .map_err(|e| UsageError(format!("joining {group}: {e}")))?;
    let err = std::process::Command::new(&args.command[0])
        .args(&args.command[1..])
        .exec();
    Err(UsageError(format!("{}: {err}", args.command[0])).into())
}

fn apply(args: &ApplyArgs, root: &Root) -> Result<Exit> {
    let plan = make_plan(&args.plan.split, root)?;
    let mut text = report::tune::plan_text(&plan);
    console::print_stdout(&text)?;
    if plan.changes.is_empty() {
        return Ok(Exit::Ok);
    }
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            return Err(UsageError(
                "rtlab tune apply: standard input is not a terminal to confirm on; read the plan \
                 above and add --yes"
                    .to_string(),
            )
            .into());
        }
        eprint!("Apply these {} runtime changes? [y/N] ", plan.changes.len());
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            console::print_stdout("nothing applied\n")?;
            return Ok(Exit::Ok);
        }
    }
    let out =
        tune::apply(root, &plan, &args.journal.journal, args.crash_after).map_err(UsageError)?;
    text = outcome_text("applied", &out);
    text.push_str(&format!(
        "journal: {} (`rtlab tune revert` puts it all back)\n",
        args.journal.journal.display()
    ));
    console::print_stdout(&text)?;
    Ok(if out.refused.is_empty() {
        Exit::Ok
    } else {
        Exit::VerdictFailed
    })
}

fn revert(args: &JournalArgs, root: &Root) -> Result<Exit> {
    if !args.journal.exists() {
        return Err(UsageError(format!(
            "{}: no tuning journal here; nothing was applied (or give --journal)",
            args.journal.display()
        ))
        .into());
    }
    let out = tune::revert(root, &args.journal).map_err(UsageError)?;
    let mut text = outcome_text("reverted", &out);
    if !out.refused.is_empty() {
        text.push_str(
            "the journal is kept: fix what was refused and run `rtlab tune revert` again\n",
        );
    }
    console::print_stdout(&text)?;
    Ok(if out.refused.is_empty() {
        Exit::Ok
    } else {
        Exit::VerdictFailed
    })
}

fn status(args: &JournalArgs, root: &Root) -> Result<Exit> {
    if !args.journal.exists() {
        console::print_stdout("nothing applied: no tuning journal\n")?;
        return Ok(Exit::Ok);
    }
    let standing = tune::status(root, &args.journal).map_err(UsageError)?;
    let mut text = String::new();
    let drifted = standing.iter().filter(|s| s.state == "drifted").count();
    for s in &standing {
        text.push_str(&format!(
            "{:<9} {}{}\n",
            s.state,
            s.path,
            s.now.as_ref().map_or(String::new(), |n| format!(" = {n}"))
        ));
    }
    text.push_str(&format!(
        "{} steps applied from {}; {drifted} drifted since\n",
        standing.len(),
        args.journal.display()
    ));
    console::print_stdout(&text)?;
    Ok(if drifted == 0 {
        Exit::Ok
    } else {
        Exit::VerdictFailed
    })
}

fn outcome_text(verb: &str, out: &tune::Outcome) -> String {
    let mut text = format!(
        "{verb}: {} done, {} skipped, {} refused\n",
        out.done.len(),
        out.skipped.len(),
        out.refused.len()
    );
    for r in &out.refused {
        text.push_str(&format!("  refused: {r}\n"));
    }
    for s in out.skipped.iter().filter(|s| s.contains("refuses to move")) {
        text.push_str(&format!("  left: {s}\n"));
    }
    text
}

fn resolve(spec: &CpuSpec, flag: &str, root: &Root) -> Result<CpuSet> {
    let possible = sys::cpu::possible(root)?;
    let online = sys::cpu::online(root)?;
    spec.resolve(&possible, &online, &online)
        .map_err(|e| UsageError(format!("{flag} {spec}: {e}")).into())
}

fn plan(args: &PlanArgs, root: &Root) -> Result<Exit> {
    let plan = make_plan(&args.split, root)?;
    let text = match args.format {
        PlanFormat::Text => report::tune::plan_text(&plan),
        PlanFormat::Json => serde_json::to_string_pretty(&plan)? + "\n",
        PlanFormat::Shell => report::tune::plan_shell(&plan),
    };
    console::print_stdout(&text)?;
    Ok(Exit::Ok)
}

/// The plan for `split` on `root`; a split rtlab refuses is a usage error (exit 2).
pub fn make_plan(split: &SplitArgs, root: &Root) -> Result<model::tune::TunePlan> {
    let request = make_request(split, root)?;
    Ok(tune::plan(root, &request).map_err(|e| UsageError(e.to_string()))?)
}

/// The tune room's request for `split`: CPU lists resolved, rules read.
pub fn make_request(split: &SplitArgs, root: &Root) -> Result<tune::Request> {
    Ok(tune::Request {
        rt_cpus: resolve(&split.rt_cpus, "--rt-cpus", root)?,
        housekeeping: split
            .housekeeping
            .as_ref()
            .map(|h| resolve(h, "--housekeeping", root))
            .transpose()?,
        profile: match split.profile {
            ProfileArg::Balanced => TuneProfile::Balanced,
            ProfileArg::Strict => TuneProfile::Strict,
        },
        rules: split.rules()?,
    })
}
