//! The command line, defined once: every command's options, help text, examples and exit
//! statuses, from which clap derives `--help`, the man pages and the shell completions. Values
//! are parsed into typed form here (time values with units, CPU selectors, load specs); what
//! combinations make sense is decided by the commands. The vocabulary is one across commands
//! (docs/cli-conventions.md); spellings it replaced live on as hidden aliases ([`renamed`]).
//!
//! This module depends on nothing else in the binary: the commands depend on it.

mod audit;
mod campaign;
mod compare;
mod cyclictest;
mod exec;
mod explain;
mod help;
mod hwlat;
#[cfg(test)]
mod ideas;
mod import;
mod inspect;
mod load;
mod measure;
mod monitor;
mod noise;
#[cfg(test)]
mod outputs;
mod pi;
mod push;
pub mod renamed;
mod run;
mod sched;
mod serve;
mod store;
mod trace;
mod tune;
mod values;
#[cfg(test)]
mod vocabulary;
mod worst;

pub use self::push::{PushArgs, PushToArgs};
pub use audit::{
    AuditAction, AuditArgs, AuditFormat, KconfigAction, KconfigArgs, KconfigFormat, KernelBuild,
};
pub use campaign::{CampaignAction, CampaignArgs, CampaignFormat, CampaignReportArgs};
pub use compare::{CompareArgs, CompareFormat, ReportArgs};
pub use exec::ExecArgs;
pub use explain::{Analysis, ExplainArgs, ExplainFormat};
pub use hwlat::{HWLAT_SAMPLES_SHOWN, HwlatArgs, HwlatEngineArg, HwlatFormat};
pub use import::ImportArgs;
pub use inspect::{InspectArgs, InspectFormat};
pub use load::{LoadArgs, LoadFormat, LoadPlacementArgs};
pub use measure::{MeasureArgs, MeasureFormat};
pub use monitor::{HistoryArgs, HistoryFormat, IncidentAction, MonitorAction, MonitorArgs};
pub use noise::{NoiseArgs, NoiseEngineArg, NoiseFormat};
pub use pi::{PiCheckArgs, PiCommand, PiFormat};
pub use run::{RunArgs, RunEngineArg};
pub use sched::{SchedCheckArgs, SchedCommand, SchedFormat, SchedPolicyArg};
pub use serve::{RoleArg, ServeArgs, ServeCommand, TokenCommand};
pub use store::{
    ExportArgs, ExportFormat, LabelArgs, ListFormat, RmArgs, RunsArgs, ShowArgs, ShowFormat,
};
pub use trace::{RecordArgs, RecordFormat, TraceCommand};
pub use tune::{
    ApplyArgs, IrqdArgs, JournalArgs, PlanArgs, PlanFormat, ProfileArg, RunInArgs, SplitArgs,
    TuneCommand,
};
pub use values::TextOrJson;
pub use worst::{WorstArgs, WorstFormat};

use std::path::PathBuf;

use clap::{Parser, Subcommand};

const ABOUT: &str = "Make a Linux machine's real-time behaviour visible, explainable and fixable";

const LONG_ABOUT: &str = "\
rtlab audits a machine's real-time readiness, measures how late real-time threads wake up on \
every CPU under built-in load, tunes the machine for its real-time CPUs reversibly, and traces \
and explains what got in a late thread's way; every run is stored, compared, reported and \
exported. It is one tool for the work that otherwise takes cyclictest, rtla, rteval, tuned and \
tuna together.";

const EXIT_STATUS: &str = "\
EXIT STATUS:
    0    the command ran and every verdict passed
    1    the command ran and a verdict failed (latency over --budget, --break fired, an
         audit finding failed, a run that cannot be judged: unfinished or without samples)
    2    bad input or a setup error (the message says which value and how to fix it); an
         input that could not be read never passes
    130  interrupted by SIGINT or SIGTERM (the result is kept, with status \"interrupted\")

Each command's help and man page (`rtlab help COMMAND`, rtlab-COMMAND(1)) lists its own.";

/// rtlab's command line.
#[derive(Debug, Parser)]
#[command(name = "rtlab", version, disable_help_subcommand = true, about = ABOUT, long_about = LONG_ABOUT, after_long_help = EXIT_STATUS)]
pub struct Cli {
    /// Read kernel files (procfs, sysfs, tracefs) under DIR instead of / — for captured trees
    /// and tests.
    #[arg(long, global = true, value_name = "DIR", hide = true)]
    pub root: Option<PathBuf>,

    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Measure wake-up latency on every CPU, cyclictest-style, with exact tails.
    #[command(long_about = measure::MEASURE_LONG, after_long_help = measure::MEASURE_AFTER, disable_help_flag = true)]
    Measure(Box<measure::MeasureArgs>),
    /// Measure OS noise on every CPU, oslat/osnoise-style, each interruption attributed.
    #[command(long_about = noise::NOISE_LONG, after_long_help = noise::NOISE_AFTER)]
    Noise(Box<noise::NoiseArgs>),
    /// Measure hardware and firmware latency (SMIs, stalls), hwlatdetect-style, with the
    /// kernel's hwlat tracer or a user-space screen.
    #[command(long_about = hwlat::HWLAT_LONG, after_long_help = hwlat::HWLAT_AFTER)]
    Hwlat(Box<hwlat::HwlatArgs>),
    /// Run built-in stress loads alone, with a live line of what they achieve.
    #[command(long_about = load::LOAD_LONG, after_long_help = load::LOAD_AFTER)]
    Load(Box<load::LoadArgs>),
    /// Check this machine's real-time readiness: every finding with evidence and the fix.
    #[command(long_about = audit::AUDIT_LONG, after_long_help = audit::AUDIT_AFTER)]
    Audit(Box<audit::AuditArgs>),
    /// Is this running program set up for real time? Its threads' policy, affinity, locked
    /// memory, page faults, run delay and futex waits over a window, with fixes.
    #[command(long_about = inspect::INSPECT_LONG, after_long_help = inspect::INSPECT_AFTER)]
    Inspect(Box<inspect::InspectArgs>),
    /// Kernel configuration tools: the real-time-relevant differences between two configs.
    #[command(long_about = audit::KCONFIG_LONG, after_long_help = help::GROUP)]
    Kconfig(audit::KconfigArgs),
    /// Evaluate the machine in one command: audit, measure idle / 60% / full load, compare,
    /// report.
    #[command(long_about = run::RUN_LONG, after_long_help = run::RUN_AFTER)]
    Run(run::RunArgs),
    /// Run a campaign: the phases of a plan (loads, tunings, durations, reboots) over days,
    /// resumed after a crash or reboot; `status` says where it is.
    #[command(long_about = campaign::CAMPAIGN_LONG, after_long_help = campaign::CAMPAIGN_AFTER)]
    Campaign(Box<campaign::CampaignArgs>),
    /// Watch wake-up latency in production: a history of 5-minute intervals, and every breach
    /// of --budget kept as an incident with its explanation.
    #[command(long_about = monitor::MONITOR_LONG, after_long_help = monitor::MONITOR_AFTER)]
    Monitor(Box<monitor::MonitorArgs>),
    /// List the stored runs, newest first.
    #[command(after_long_help = store::STORE_EXIT)]
    Runs(store::RunsArgs),
    /// Show a stored run (or a result file) again: table, JSON or cyclictest lines.
    #[command(after_long_help = store::show_after())]
    Show(store::ShowArgs),
    /// Label a stored run ("RT-#2"); an empty label removes it.
    #[command(after_long_help = format!("{}\n\n{}", store::RUN_HELP, store::STORE_EXIT))]
    Label(store::LabelArgs),
    /// Delete stored runs.
    #[command(after_long_help = format!("{}\n\n{}", store::RUN_HELP, store::STORE_EXIT))]
    Rm(store::RmArgs),
    /// Export a run as JSON, CSV, JUnit XML (per-CPU verdicts against --budget), OpenMetrics
    /// or LAVA test cases; exits 1 when the exported verdict fails.
    #[command(after_long_help = store::export_after())]
    Export(store::ExportArgs),
    /// Compare runs side by side: per-CPU min/avg/p99.9/max by cluster, changes against the
    /// first run, and a regression verdict (--fail-if-worse).
    #[command(long_about = compare::COMPARE_LONG, after_long_help = compare::compare_after())]
    Compare(compare::CompareArgs),
    /// Estimate the worst case beyond what was measured (extreme-value fits with intervals,
    /// return levels per hour, day and year, the budget's risk per hour) and whether the data
    /// support it; says how much longer to run.
    #[command(long_about = worst::WORST_LONG, after_long_help = worst::worst_after())]
    Worst(worst::WorstArgs),
    /// Write an HTML report with latency plots over one or more runs (self-contained; --svg
    /// writes the plots as SVG files too).
    #[command(long_about = compare::REPORT_LONG, after_long_help = format!("{}\n\n{}", store::RUN_HELP, help::REPORT))]
    Report(compare::ReportArgs),
    /// Import results other tools wrote (cyclictest JSON, histograms, summary lines and -v
    /// streams; rtla timerlat and osnoise hist; oslat) as stored runs, compressed or not.
    #[command(long_about = import::IMPORT_LONG, after_long_help = help::IMPORT)]
    Import(import::ImportArgs),
    /// Upload runs to an `rtlab serve` (`--to URL`), with retry and a local queue for runs
    /// that cannot be sent now; `--queue` lists the queue.
    #[command(long_about = self::push::PUSH_LONG, after_long_help = self::push::PUSH_AFTER)]
    Push(self::push::PushArgs),
    /// Explain why threads woke late: from a run measured with --trace or a trace file, the
    /// timer, IRQs, softirqs and tasks that stood in the way; `irqs`, `sched` and `wakeups`
    /// analyse a whole trace.
    #[command(long_about = explain::EXPLAIN_LONG, after_long_help = explain::EXPLAIN_AFTER)]
    Explain(explain::ExplainArgs),
    /// Schedulability analysis: `rtlab sched check tasks.toml` says whether a task set meets
    /// its deadlines under SCHED_FIFO, EDF and SCHED_DEADLINE, with response times.
    #[command(subcommand, after_long_help = help::GROUP)]
    Sched(sched::SchedCommand),
    /// Start a program set up for real time: policy and priority or a SCHED_DEADLINE
    /// reservation, CPUs, RLIMIT_MEMLOCK and the RT cpuset, set before it runs.
    #[command(long_about = exec::EXEC_LONG, after_long_help = exec::EXEC_AFTER)]
    Exec(Box<exec::ExecArgs>),
    /// Check that priority inheritance works here: `rtlab pi check`.
    #[command(subcommand, after_long_help = help::GROUP)]
    Pi(pi::PiCommand),
    /// Keep a fleet's runs and serve them: pages, an HTTP API for uploads, metrics.
    #[command(long_about = serve::SERVE_LONG, after_long_help = serve::SERVE_AFTER)]
    Serve(Box<serve::ServeArgs>),
    /// Tune the machine for real-time CPUs: `rtlab tune plan --rt-cpus 2-7` says what to
    /// change (boot parameters, IRQs, workqueues, governors, idle states, cpusets) and why.
    #[command(subcommand, after_long_help = help::GROUP)]
    Tune(tune::TuneCommand),
    /// Record kernel traces (`rtlab trace record -o trace.txt`) for `rtlab explain`.
    #[command(subcommand, after_long_help = help::GROUP)]
    Trace(trace::TraceCommand),
    /// Clean up after a load whose rtlab died (started by rtlab itself; internal).
    #[command(hide = true)]
    Guardian,
    /// Print a shell completion script to standard output.
    #[command(
        after_long_help = help::DONE,
        long_about = "Print a completion script for SHELL to standard output, e.g.\n\n    \
        rtlab completions bash > /etc/bash_completion.d/rtlab\n    \
        rtlab completions zsh > \"${fpath[1]}/_rtlab\""
    )]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write man pages (rtlab.1 and one per command and subcommand) into a directory.
    #[command(after_long_help = help::DONE)]
    Man {
        /// Directory to write into (created if missing).
        #[arg(short, long, alias = "out", value_name = "DIR")]
        output: PathBuf,
    },
    /// Print the help of rtlab or of a command (`rtlab help tune apply`), as `--help` does.
    #[command(after_long_help = help::DONE)]
    Help {
        /// The command and subcommands, e.g. `tune apply`. None: rtlab's own help.
        #[arg(value_name = "COMMAND")]
        command: Vec<String>,
    },
}

/// The command line as clap builds it, with `rtlab help COMMAND...` in place of clap's help
/// subcommands (so `rtlab help --help` works and no page names a `help` that does not exist),
/// and `--version` saying what was built (`-V` the version alone).
pub fn command() -> clap::Command {
    fn no_help_subcommand(cmd: clap::Command) -> clap::Command {
        cmd.disable_help_subcommand(true)
            .mut_subcommands(no_help_subcommand)
    }
    let cmd = no_help_subcommand(<Cli as clap::CommandFactory>::command());
    match model::build::current() {
        Some(build) => cmd.long_version(build.long_version()),
        None => cmd,
    }
}

/// Parses a command line (program name first).
pub fn parse(args: &[std::ffi::OsString]) -> Result<Cli, clap::Error> {
    use clap::FromArgMatches;
    let mut cmd = command();
    let matches = cmd.try_get_matches_from_mut(args)?;
    Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut cmd))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
        command().debug_assert();
    }
}

/// Every command the README and the help texts show parses: the docs cannot name a flag that
/// does not exist or a value rtlab refuses (crates/cli/tests/docs_examples.rs runs those that
/// finish in seconds).
#[cfg(test)]
mod shown_examples {
    use std::ffi::OsString;

    use super::*;

    /// Every command path (`["tune", "apply"]`) with its long help.
    fn helps() -> Vec<(String, String)> {
        fn walk(cmd: &mut clap::Command, path: &str, out: &mut Vec<(String, String)>) {
            out.push((path.to_string(), cmd.render_long_help().to_string()));
            for sub in cmd.get_subcommands_mut() {
                let name = format!("{path} {}", sub.get_name());
                walk(sub, &name, out);
            }
        }
        let mut cmd = command();
        cmd.build();
        let mut out = Vec::new();
        walk(&mut cmd, "rtlab", &mut out);
        out
    }

    #[test]
    fn every_example_in_the_readme_and_the_help_parses() {
        let mut examples =
            testkit::examples::from_markdown(include_str!("../../../../README.md"), "README.md");
        for (path, help) in helps() {
            examples.extend(testkit::examples::from_help(
                &help,
                &format!("{path} --help"),
            ));
        }
        assert!(
            examples.len() > 60,
            "only {} examples found",
            examples.len()
        );
        let mut bad = Vec::new();
        for ex in &examples {
            let args: Vec<OsString> = ex.words.iter().map(OsString::from).collect();
            let parsed = parse(&args);
            if ex.shows_error() {
                // A refusal the README shows; whether rtlab refuses it as shown is for the
                // test that runs it, but clap must not be what fails an option it documents.
                continue;
            }
            // `rtlab --version` parses to clap's version display, which is what it shows.
            if let Err(e) = parsed.as_ref()
                && e.kind() != clap::error::ErrorKind::DisplayVersion
            {
                let first = e.to_string().lines().next().unwrap_or_default().to_string();
                bad.push(format!("{}: `{}`: {first}", ex.source, ex.text));
            }
            if !renamed::notices(&args).is_empty() {
                bad.push(format!(
                    "{}: `{}` uses a replaced spelling",
                    ex.source, ex.text
                ));
            }
        }
        assert!(
            bad.is_empty(),
            "examples that do not parse:\n{}",
            bad.join("\n")
        );
    }
}
