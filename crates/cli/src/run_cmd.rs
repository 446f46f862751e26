//! `rtlab run`: the one-command evaluation of talk 000 — the audit's top findings, then a
//! measurement of every CPU in three phases (idle, `cpu:60%`, full load), each saved in the
//! run store under one session, then the comparison of the phases with the verdict against
//! `--budget`, and an HTML report.
//!
//! Each phase is a `rtlab measure` child process (this binary), so it gets everything a
//! measurement has — restore on exit, the load's guardian, the live view on a terminal — and a
//! phase that dies takes nothing else with it.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use clap::Args;
use model::audit::Status;
use model::measure::{MeasureRun, RunStatus};
use model::{CpuSpec, Nanos};
use sys::Root;
use sys::process::StopSignal;
use sys::signals::{Signal, TerminationSignals};

use crate::console::{self, Console};
use crate::exit::{Exit, UsageError};
use crate::store_args::DbArgs;

pub const RUN_LONG: &str = "\
Evaluate this machine's real-time behaviour in one command, the way talk 000 does it by hand: \
print the audit's top findings and their fixes; measure wake-up latency on every CPU in three \
phases of --phase each — idle, under `cpu:60%` load, and under full load (`cpu:100%`, \
`timer-storm` and `messaging` together); save the three runs in the run store under one \
session; print the comparison table of the phases (Min / Avg / p99.9 / Max per CPU) with the \
verdict against --budget; and write an HTML report with the latency plots.

With --tuned the evaluation shows what tuning buys: the three phases are measured on the RT \
CPUs (--rt-cpus) as the machine is; then the runtime part of `rtlab tune plan`'s plan for \
--rt-cpus and --housekeeping is applied, without asking (IRQ affinity, workqueues, cpusets and \
the rest; boot parameters are left out: they need a reboot); the phases are measured again \
(labelled `idle, tuned` and so on) from inside the RT cpuset, with their load started in the \
housekeeping cpuset on the housekeeping CPUs, where tuning puts everything else; and the \
tuning is reverted — also when a phase fails or Ctrl-C or SIGTERM stops the evaluation. The \
comparison has all six phases and a line per phase on what tuning bought (max and p99.9, \
before and after); the verdict is on the tuned phases. A change the kernel refuses is reported \
and the evaluation goes on with a partial tuning. The journal of originals (--journal) is \
closed when the revert is done; if rtlab is killed before that, `rtlab tune revert` puts \
everything back.

Run it as root (SCHED_FIFO threads, /dev/cpu_dma_latency, the kernel log, and with --tuned the \
tuning). Ctrl-C or SIGTERM stops the phase being measured and ends the evaluation; the phases \
measured so far are kept and compared.";

pub const RUN_AFTER: &str = "\
EXAMPLES:
    sudo rtlab run                               three 20 s phases, report in this directory
    sudo rtlab run --phase 1m --budget 50us      longer phases, a tighter budget
    sudo rtlab run --cpus 2-7 -o tuned.html      only the RT CPUs
    sudo rtlab run --tuned --rt-cpus 2-7         before and after tuning CPUs 2-7, reverted
    sudo rtlab run --tuned --rt-cpus 3 --profile strict --phase 1m --budget 50us

EXIT STATUS:
    0    every phase's worst wake-up latency is within --budget (with --tuned: every tuned
         phase's)
    1    a phase went over --budget, or a phase cannot be judged (it measured no samples on
         some CPU, or did not finish)
    2    bad input or setup error; with --tuned also a tuning that could not be fully
         reverted (the message says so: run `rtlab tune revert`)
    130  interrupted: the phases measured so far are kept (and the tuning reverted)";

/// Options of `rtlab run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// How long each of the three phases measures (s, m, h).
    #[arg(long, value_name = "TIME", value_parser = crate::args::parse_time, default_value = "20s")]
    pub phase: Nanos,
    /// The latency budget: a phase whose worst wake-up is later fails the evaluation.
    #[arg(long, value_name = "TIME", value_parser = crate::args::parse_time, default_value = "100us")]
    pub budget: Nanos,
    /// CPUs to measure (as for `rtlab measure --cpus`). Default: every CPU rtlab may run on.
    #[arg(short = 'a', long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Where to write the HTML report. Default: rtlab-report-<host>-<date>.html here.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write no HTML report.
    #[arg(long, conflicts_with = "output")]
    pub no_report: bool,
    /// No live view or notes on standard error; only the results.
    #[arg(short, long)]
    pub quiet: bool,
    /// How long each load runs before its phase measures (as `rtlab measure --warmup`).
    /// Default 2s.
    #[arg(long, value_name = "TIME", value_parser = crate::args::parse_time)]
    pub warmup: Option<Nanos>,
    /// Measure the phases, tune the machine for real-time work on --rt-cpus (`rtlab tune
    /// apply`, without asking), measure them again, and revert the tuning: the report shows
    /// what tuning bought. --cpus defaults to the RT CPUs.
    #[arg(long, requires = "rt_cpus", help_heading = "Tuning")]
    pub tuned: bool,
    /// With --tuned: the CPUs to tune for real-time work (`2-7`, `3`).
    #[arg(long, value_name = "LIST", requires = "tuned", help_heading = "Tuning")]
    pub rt_cpus: Option<CpuSpec>,
    /// With --tuned: the CPUs for everything else (default: every other online CPU).
    #[arg(long, value_name = "LIST", requires = "tuned", help_heading = "Tuning")]
    pub housekeeping: Option<CpuSpec>,
    /// With --tuned: how far to tune (as `rtlab tune plan --profile`). Default balanced.
    #[arg(
        long,
        value_enum,
        value_name = "PROFILE",
        requires = "tuned",
        help_heading = "Tuning"
    )]
    pub profile: Option<crate::tune_cmd::ProfileArg>,
    /// With --tuned: an IRQ rule, as for `rtlab tune plan --irq-rule` (repeatable):
    /// `irq/*-eth0=fifo:80@0-1`.
    #[arg(
        long = "irq-rule",
        value_name = "RULE",
        value_parser = crate::tune_cmd::parse_rule,
        requires = "tuned",
        help_heading = "Tuning"
    )]
    pub irq_rules: Vec<model::tune::IrqRule>,
    /// With --tuned: the journal of originals the revert reads (default
    /// /var/lib/rtlab/tune-journal.jsonl).
    #[arg(long, value_name = "PATH", requires = "tuned", help_heading = "Tuning")]
    pub journal: Option<PathBuf>,
    /// Drive the phases with a scripted clock instead of real sleeps (tests only).
    #[arg(long, value_name = "SCRIPT", hide = true)]
    pub fake_clock: Option<String>,
    /// The store.
    #[command(flatten)]
    pub db: DbArgs,
}

/// One phase: its label and the load it runs under.
struct Phase {
    label: &'static str,
    load: Option<&'static str>,
}

const PHASES: [Phase; 3] = [
    Phase {
        label: "idle",
        load: None,
    },
    Phase {
        label: "cpu:60%",
        load: Some("cpu:60%"),
    },
    Phase {
        label: "full load",
        load: Some("cpu:100%,timer-storm,messaging"),
    },
];

/// Runs `rtlab run` (with `--tuned`: [`crate::run_tuned`]).
pub fn run(args: &RunArgs, root: &Root) -> Result<Exit> {
    if let Some(cpus) = &args.cpus {
        CpuSpec::parse(cpus).map_err(|e| UsageError(format!("--cpus {cpus}: {e}")))?;
    }
    // Every output is checked before the first phase: the store every phase saves into, and
    // the report (named after the host and date in the current directory unless -o).
    if let Some(path) = &args.output {
        sys::fs::check_creatable(path)
            .map_err(|e| UsageError(format!("--output {}: {e}", path.display())))?;
    } else if !args.no_report {
        sys::fs::check_creatable(Path::new("rtlab-report.html")).map_err(|e| {
            UsageError(format!(
                "the report goes into the current directory, which cannot be written ({e}); give -o FILE or --no-report"
            ))
        })?;
    }
    crate::store_cmd::check_usable(args.db.db.as_deref()).map_err(|e| {
        UsageError(format!(
            "the run store cannot be used: {e:#}; every phase is saved there, so give a writable --db PATH"
        ))
    })?;
    let tuning = if args.tuned {
        Some(crate::run_tuned::prepare(args, root)?)
    } else {
        None
    };
    // Blocked before any thread or child exists: a signal stops the phase running (it is
    // passed on to its child) and the evaluation ends in order — compared, reported and,
    // with --tuned, reverted — instead of killing this process halfway.
    let signals = TerminationSignals::block().context("blocking SIGINT/SIGTERM")?;
    let audit = audit::run(
        root,
        &audit::Options::default(),
        &audit::Selection::default(),
    )
    .map_err(|e| UsageError(e.to_string()))?;
    console::print_stdout(&audit_brief(&audit))?;

    let mut session = Session {
        args,
        root,
        id: session_id(),
        signals: &signals,
        console: Console::new(args.quiet),
        runs: Vec::new(),
        stopped: None,
    };
    let exit = match tuning {
        Some(tuning) => crate::run_tuned::run(&mut session, tuning),
        None => session
            .measure_phases(args.cpus.as_deref(), "", &Placement::default())
            .and_then(|()| session.finish("", &|_| true)),
    };
    // A second Ctrl-C may still be pending: taken here, it does not end the process as the
    // mask is restored.
    while signals.wait(Duration::ZERO).is_some() {}
    exit
}

/// Where a phase's measurement and its load run.
#[derive(Debug, Default)]
pub(crate) struct Placement {
    /// Measure inside the RT cpuset of this tuning journal (`rtlab tune run --journal`).
    pub journal: Option<PathBuf>,
    /// CPUs for the load's generators (`--load-cpus`).
    pub load_cpus: Option<String>,
    /// The cgroup the load starts in (`--load-join`).
    pub load_join: Option<String>,
}

/// One evaluation: its options, the phases measured so far, the signals collected.
pub(crate) struct Session<'a> {
    pub args: &'a RunArgs,
    pub root: &'a Root,
    /// The session id the phases are stored under.
    pub id: String,
    pub signals: &'a TerminationSignals,
    pub console: Console,
    /// (label, result) of every phase measured, in order.
    pub runs: Vec<(String, MeasureRun)>,
    /// The signal that stopped the evaluation, if one did.
    pub stopped: Option<Signal>,
}

impl Session<'_> {
    /// Measures the three phases on `cpus`, labelled `idle{suffix}` and so on; stops at the
    /// first phase a signal interrupts (recorded in `stopped`) or that fails (the error).
    pub fn measure_phases(
        &mut self,
        cpus: Option<&str>,
        suffix: &str,
        placement: &Placement,
    ) -> Result<()> {
        for (n, phase) in PHASES.iter().enumerate() {
            if self.stopped.is_some() {
                break;
            }
            let label = format!("{}{suffix}", phase.label);
            self.console.note(&format!(
                "phase {} of {}: {label} for {}",
                n + 1,
                PHASES.len(),
                self.args.phase
            ));
            let (run, code, signal) = self.measure_phase(phase, &label, cpus, placement)?;
            let interrupted = signal.is_some()
                || code == Some(130)
                || run
                    .as_ref()
                    .is_some_and(|r| r.status == RunStatus::Interrupted);
            if let Some(run) = run {
                self.runs.push((label.clone(), run));
            }
            if interrupted {
                self.stopped = Some(signal.unwrap_or(Signal::Interrupt));
                self.console.verdict(&format!(
                    "interrupted during the {label} phase: comparing the phases measured so far"
                ));
            }
        }
        Ok(())
    }

    /// Prints the comparison of every phase and `extra` (more result lines), writes the
    /// report, and judges the phases whose label `judged` accepts against --budget.
    pub fn finish(&mut self, extra: &str, judged: &dyn Fn(&str) -> bool) -> Result<Exit> {
        let args = self.args;
        if self.runs.is_empty() {
            self.console
                .verdict("nothing was measured: no comparison, no report");
            return Ok(Exit::Interrupted);
        }
        let pairs: Vec<(String, &MeasureRun)> =
            self.runs.iter().map(|(l, r)| (l.clone(), r)).collect();
        console::print_stdout(&crate::compare_cmd::render_table(&pairs))?;
        console::print_stdout(extra)?;

        let mut over = Vec::new();
        let mut unjudged = Vec::new();
        for (label, run) in self.runs.iter().filter(|(l, _)| judged(l)) {
            if let Some(why) = run.unjudgeable() {
                unjudged.push(format!("{label}: {why}"));
            } else if let Some(max) = run.all.stats.max_ns
                && max > args.budget.get()
            {
                over.push(format!("{label} max {} us", report::format_us(max)));
            }
        }
        if !args.no_report {
            let path = match &args.output {
                Some(p) => p.clone(),
                None => default_report_name(&self.runs[0].1),
            };
            let session = &self.id;
            let named: Vec<crate::report_cmd::NamedRun> = self
                .runs
                .iter()
                .map(|(label, run)| crate::report_cmd::NamedRun {
                    run: run.clone(),
                    name: label.clone(),
                    source: format!("phase \"{label}\" of session {session}"),
                    key: label
                        .chars()
                        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                        .collect(),
                })
                .collect();
            crate::report_cmd::write(&named, &path, None)
                .with_context(|| format!("writing the report to {}", path.display()))?;
            self.console.verdict(&format!("report: {}", path.display()));
        }
        if self.stopped.is_some() {
            return Ok(Exit::Interrupted);
        }
        let what = if args.tuned { "tuned phase" } else { "phase" };
        if !unjudged.is_empty() {
            // A phase that measured nothing cannot be within the budget.
            for line in &unjudged {
                self.console
                    .verdict(&format!("{what} cannot be judged: {line}"));
            }
            if !over.is_empty() {
                self.console.verdict(&format!(
                    "over the {} budget: {}",
                    args.budget,
                    over.join(", ")
                ));
            }
            return Ok(Exit::VerdictFailed);
        }
        if over.is_empty() {
            self.console.verdict(&format!(
                "every {what} stayed within the {} budget",
                args.budget
            ));
            Ok(Exit::Ok)
        } else {
            self.console.verdict(&format!(
                "over the {} budget: {}",
                args.budget,
                over.join(", ")
            ));
            Ok(Exit::VerdictFailed)
        }
    }
}

/// The audit in a few lines: counts and the failing and warning findings with their first fix.
fn audit_brief(report: &model::audit::AuditReport) -> String {
    let mut out = format!("audit: {}\n", report::audit::summary_line(report));
    let mut shown = 0;
    // Failures first, then warnings, then advice.
    let with = |s: Status| report.findings.iter().filter(move |f| f.status == s);
    for f in with(Status::Fail)
        .chain(with(Status::Warn))
        .chain(with(Status::Info))
        .take(8)
    {
        out.push_str(&format!(
            "  {:<4}  {}: {}\n",
            report::audit::status_label(f),
            f.id,
            f.summary
        ));
        if let Some(fix) = f.fix.first() {
            out.push_str(&format!("        fix: {}\n", fix.render()));
        }
        shown += 1;
    }
    let problems = (report.counts.fail + report.counts.warn + report.counts.info) as usize;
    if problems > shown {
        out.push_str(&format!(
            "  ... and {} more: `rtlab audit` lists them all\n",
            problems - shown
        ));
    }
    out.push('\n');
    out
}

impl Session<'_> {
    /// Measures one phase in a child `rtlab measure` (through `rtlab tune run` when placed in
    /// a tuning's RT cpuset); returns its result (none when a signal stopped it before it
    /// measured), its exit code, and the signal that was passed on to it.
    ///
    /// The child has its own process group, so a Ctrl-C reaches this process only, which
    /// passes one SIGTERM on: the child stops in order and its result comes back. It dies
    /// with this process (SIGKILL) instead of measuring on unattended.
    fn measure_phase(
        &mut self,
        phase: &Phase,
        label: &str,
        cpus: Option<&str>,
        placement: &Placement,
    ) -> Result<(Option<MeasureRun>, Option<i32>, Option<Signal>)> {
        let (args, root) = (self.args, self.root);
        let exe = std::env::current_exe().context("finding the rtlab binary")?;
        let mut cmd = Command::new(&exe);
        if !root.is_host() {
            cmd.arg("--root").arg(root.base());
        }
        if let Some(journal) = &placement.journal {
            cmd.args(["tune", "run", "--journal"])
                .arg(journal)
                .arg("--")
                .arg(&exe);
            if !root.is_host() {
                cmd.arg("--root").arg(root.base());
            }
        }
        cmd.args(["measure", "--format", "json", "--duration"])
            .arg(args.phase.to_string())
            .args(["--session", &self.id, "--label", label]);
        if let Some(cpus) = cpus {
            cmd.args(["--cpus", cpus]);
        }
        if let Some(load) = phase.load {
            cmd.args(["--load", load]);
            if let Some(warmup) = args.warmup {
                cmd.arg("--warmup").arg(warmup.to_string());
            }
            if let Some(load_cpus) = &placement.load_cpus {
                cmd.args(["--load-cpus", load_cpus]);
            }
            if let Some(dir) = &placement.load_join {
                cmd.args(["--load-join", dir]);
            }
        }
        if let Some(db) = &args.db.db {
            cmd.arg("--db").arg(db);
        }
        if let Some(script) = &args.fake_clock {
            cmd.args(["--fake-clock", script]);
        }
        if args.quiet {
            cmd.arg("--quiet");
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        sys::process::die_with_parent(&mut cmd);
        let mut child = cmd.spawn().context("starting rtlab measure")?;
        let mut stdout = child.stdout.take().expect("stdout was piped");
        let reader = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stdout.read_to_string(&mut text);
            text
        });
        let mut passed_on = None;
        let status = loop {
            if let Some(status) = child.try_wait().context("waiting for rtlab measure")? {
                break status;
            }
            // A second signal is taken and dropped: the child is stopping already.
            if let Some(signal) = self.signals.wait(Duration::from_millis(50))
                && passed_on.is_none()
            {
                passed_on = Some(signal);
                let _ = sys::process::signal_process(child.id(), StopSignal::Terminate);
                self.console.verdict(&format!(
                    "{signal}: stopping the {label} phase{}",
                    if placement.journal.is_some() {
                        "; the tuning is reverted after it"
                    } else {
                        ""
                    }
                ));
            }
        };
        let text = reader.join().unwrap_or_default();
        let code = status.code();
        match MeasureRun::from_json(&text) {
            Ok(run) => Ok((Some(run), code, passed_on)),
            Err(_) if passed_on.is_some() || code == Some(130) => Ok((None, code, passed_on)),
            Err(_) => Err(UsageError(format!(
                "the {label} phase failed (rtlab measure exited {}); its message is above",
                code.map_or("on a signal".to_string(), |c| c.to_string())
            ))
            .into()),
        }
    }
}

/// A session id: the start time and this process, enough to be unique on one machine.
fn session_id() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("run-{secs}-{}", std::process::id())
}

/// `rtlab-report-<host>-<date>.html` in the current directory.
fn default_report_name(first: &MeasureRun) -> PathBuf {
    let host: String = first
        .host
        .hostname
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let date: String = first.started_at.chars().take(10).collect();
    Path::new(".").join(format!("rtlab-report-{host}-{date}.html"))
}
