//! `rtlab run`: the one-command evaluation of talk 000 — the audit's top findings, then a
//! measurement of every CPU in three phases (idle, `cpu:60%`, full load), each saved in the
//! run store under one session, then the comparison of the phases with the verdict against
//! `--budget`, and an HTML report.
//!
//! Each phase is a `rtlab measure` child process (this binary), so it gets everything a
//! measurement has — restore on exit, the load's guardian, the live view on a terminal — and a
//! phase that dies takes nothing else with it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use clap::Args;
use model::audit::Status;
use model::measure::{MeasureRun, RunStatus};
use model::{CpuSpec, Nanos};
use sys::Root;

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

Run it as root (SCHED_FIFO threads, /dev/cpu_dma_latency, the kernel log). A phase stopped by \
Ctrl-C ends the evaluation; the phases measured so far are kept and compared.";

pub const RUN_AFTER: &str = "\
EXAMPLES:
    sudo rtlab run                               three 20 s phases, report in this directory
    sudo rtlab run --phase 1m --budget 50us      longer phases, a tighter budget
    sudo rtlab run --cpus 2-7 -o tuned.html      only the RT CPUs

EXIT STATUS:
    0    every phase's worst wake-up latency is within --budget
    1    a phase went over --budget
    2    bad input or setup error
    130  interrupted: the phases measured so far are kept";

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

/// Runs `rtlab run`.
pub fn run(args: &RunArgs, root: &Root) -> Result<Exit> {
    if let Some(cpus) = &args.cpus {
        CpuSpec::parse(cpus).map_err(|e| UsageError(format!("--cpus {cpus}: {e}")))?;
    }
    if let Some(path) = &args.output {
        sys::fs::check_creatable(path)
            .map_err(|e| UsageError(format!("--output {}: {e}", path.display())))?;
    }
    let mut console = Console::new(args.quiet);
    let audit = audit::run(
        root,
        &audit::Options::default(),
        &audit::Selection::default(),
    )
    .map_err(|e| UsageError(e.to_string()))?;
    console::print_stdout(&audit_brief(&audit))?;

    let session = session_id();
    let mut runs: Vec<(String, MeasureRun)> = Vec::new();
    let mut interrupted = false;
    for phase in &PHASES {
        console.note(&format!(
            "phase {} of {}: {} for {}",
            runs.len() + 1,
            PHASES.len(),
            phase.label,
            args.phase
        ));
        let (run, code) = measure_phase(args, root, phase, &session)?;
        let stopped = run.status == RunStatus::Interrupted || code == Some(130);
        runs.push((phase.label.to_string(), run));
        if stopped {
            interrupted = true;
            console.verdict(&format!(
                "interrupted during the {} phase: comparing the phases measured so far",
                phase.label
            ));
            break;
        }
    }

    let pairs: Vec<(String, &MeasureRun)> = runs.iter().map(|(l, r)| (l.clone(), r)).collect();
    console::print_stdout(&crate::compare_cmd::render_table(&pairs))?;

    let mut over = Vec::new();
    for (label, run) in &runs {
        if let Some(max) = run.all.stats.max_ns
            && max > args.budget.get()
        {
            over.push(format!("{label} max {} us", report::format_us(max)));
        }
    }
    if !args.no_report {
        let path = match &args.output {
            Some(p) => p.clone(),
            None => default_report_name(&runs[0].1),
        };
        let named: Vec<crate::report_cmd::NamedRun> = runs
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
        console.verdict(&format!("report: {}", path.display()));
    }
    if interrupted {
        return Ok(Exit::Interrupted);
    }
    if over.is_empty() {
        console.verdict(&format!(
            "every phase stayed within the {} budget",
            args.budget
        ));
        Ok(Exit::Ok)
    } else {
        console.verdict(&format!(
            "over the {} budget: {}",
            args.budget,
            over.join(", ")
        ));
        Ok(Exit::VerdictFailed)
    }
}

/// The audit in a few lines: counts and the failing and warning findings with their first fix.
fn audit_brief(report: &model::audit::AuditReport) -> String {
    let mut out = format!("audit: {}\n", report::audit::summary_line(report));
    let mut shown = 0;
    // Failures first, then warnings, then advice (warn status, info severity).
    let advice = |f: &&model::audit::Finding| f.severity == model::audit::Severity::Info;
    let fails = report.findings.iter().filter(|f| f.status == Status::Fail);
    let warns = report.findings.iter().filter(|f| f.status == Status::Warn);
    for f in fails
        .chain(warns.clone().filter(|f| !advice(f)))
        .chain(warns.filter(advice))
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
    let problems = (report.counts.fail + report.counts.warn) as usize;
    if problems > shown {
        out.push_str(&format!(
            "  ... and {} more: `rtlab audit` lists them all\n",
            problems - shown
        ));
    }
    out.push('\n');
    out
}

/// Measures one phase in a child `rtlab measure`; returns the result and the child's exit code.
fn measure_phase(
    args: &RunArgs,
    root: &Root,
    phase: &Phase,
    session: &str,
) -> Result<(MeasureRun, Option<i32>)> {
    let exe = std::env::current_exe().context("finding the rtlab binary")?;
    let mut cmd = Command::new(exe);
    if !root.is_host() {
        cmd.arg("--root").arg(root.base());
    }
    cmd.args(["measure", "--format", "json", "--duration"])
        .arg(args.phase.to_string())
        .args(["--session", session, "--label", phase.label]);
    if let Some(cpus) = &args.cpus {
        cmd.args(["--cpus", cpus]);
    }
    if let Some(load) = phase.load {
        cmd.args(["--load", load]);
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
    let out = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .output()
        .context("starting rtlab measure")?;
    let code = out.status.code();
    let text = String::from_utf8_lossy(&out.stdout);
    match MeasureRun::from_json(&text) {
        Ok(run) => Ok((run, code)),
        Err(_) => Err(UsageError(format!(
            "the {} phase failed (rtlab measure exited {}); its message is above",
            phase.label,
            code.map_or("on a signal".to_string(), |c| c.to_string())
        ))
        .into()),
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
