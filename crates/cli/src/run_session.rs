//! One `rtlab run` evaluation as it goes: the three phases, each measured by a `rtlab measure`
//! child process (and with `--noise` a noise phase, a `rtlab noise` child) (so it gets everything a measurement has — restore on exit, the load's
//! guardian, the live view — and a phase that dies takes nothing else with it), the signals
//! passed on to the phase running, and the end: the comparison, the report and the verdict
//! against --budget. `rtlab run` and `run --tuned` drive it.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result};
use model::measure::{MeasureRun, RunStatus};
use sys::Root;
use sys::process::StopSignal;
use sys::signals::{Signal, TerminationSignals};

use crate::console::{self, Console};
use crate::exit::{Exit, UsageError};
use crate::flags::{RunArgs, TextOrJson};
use crate::run_verdict;

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
    /// (label, result) of every latency phase measured, in order.
    pub runs: Vec<(String, MeasureRun)>,
    /// (label, result) of every noise phase (`--noise`), in order.
    pub noise_runs: Vec<(String, MeasureRun)>,
    /// The signal that stopped the evaluation, if one did.
    pub stopped: Option<Signal>,
    /// The warning codes a phase has printed already: later phases do not repeat them.
    pub warned: Vec<String>,
    /// The audit's counts before the first phase.
    pub audit: model::audit::Counts,
    /// What measures every phase (`--engine`, resolved against this kernel).
    pub engine: model::measure::Engine,
    /// Which latency phases (by label) the verdict is on: each is measured with --budget, so
    /// its stored run carries the budget it is judged against (`show`, `report` and the
    /// server judge it alike); the others are measured without one.
    pub judged: fn(&str) -> bool,
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
            let label = self.label(&format!("{}{suffix}", phase.label));
            self.console.note(&format!(
                "phase {} of {}: {label} for {}",
                n + 1,
                PHASES.len(),
                self.args.duration
            ));
            let (run, code, signal) = self.measure_phase(phase, &label, cpus, placement)?;
            let interrupted = signal.is_some()
                || code == Some(130)
                || run
                    .as_ref()
                    .is_some_and(|r| r.status == RunStatus::Interrupted);
            if !self.json() {
                run_verdict::phase_line(n, PHASES.len(), &label, run.as_ref(), interrupted)?;
            }
            if let Some(run) = run {
                for w in &run.warnings {
                    if !self.warned.contains(&w.code) {
                        self.warned.push(w.code.clone());
                    }
                }
                self.runs.push((label.clone(), run));
            }
            if interrupted {
                self.stopped = Some(signal.unwrap_or(Signal::Interrupt));
                self.console.verdict(&format!(
                    "interrupted during the {label} phase: comparing the phases measured so far"
                ));
            }
        }
        if let (Some(duration), None) = (self.args.noise, self.stopped) {
            let label = self.label(&format!("noise{suffix}"));
            self.console
                .note(&format!("noise phase: {label} for {duration}"));
            let cmd = self.noise_command(&label, duration, cpus, placement)?;
            let (run, code, signal) = self.child_result(cmd, &label, placement)?;
            if let Some(run) = run {
                self.noise_runs.push((label.clone(), run));
            }
            if signal.is_some() || code == Some(130) {
                self.stopped = Some(signal.unwrap_or(Signal::Interrupt));
            }
        }
        Ok(())
    }

    /// Prints the comparison of every phase and `extra` (more result lines), writes the
    /// report, and judges the phases whose label `judged` accepts against --budget.
    ///
    /// With `--format json` standard output gets the `rtlab.evaluation/1` document instead.
    pub fn finish(&mut self, extra: &str) -> Result<Exit> {
        let judged = self.judged;
        let args = self.args;
        if self.runs.is_empty() {
            self.console
                .verdict("nothing was measured: no comparison, no report");
            if self.json() {
                let (exit, doc) = run_verdict::document(&[], self.about(None));
                console::print_stdout(&(serde_json::to_string_pretty(&doc)? + "\n"))?;
                return Ok(exit);
            }
            return Ok(Exit::Interrupted);
        }
        if !self.json() {
            let pairs: Vec<(String, &MeasureRun)> =
                self.runs.iter().map(|(l, r)| (l.clone(), r)).collect();
            console::print_stdout(&crate::compare_cmd::render_table(&pairs))?;
            console::print_stdout(extra)?;
            for (label, run) in &self.noise_runs {
                console::print_stdout(&format!("\n{label}: {}", report::noise::table(run)))?;
            }
        }
        let report = if args.no_report {
            None
        } else {
            Some(self.write_report()?)
        };
        let phases = run_verdict::judge(&self.runs, &self.noise_runs, args.budget, &judged);
        if self.json() {
            let about = self.about(report.map(|p| p.display().to_string()));
            let (exit, doc) = run_verdict::document(&phases, about);
            console::print_stdout(&(serde_json::to_string_pretty(&doc)? + "\n"))?;
            return Ok(exit);
        }
        if let Some(path) = report {
            console::print_stdout(&format!("report: {}\n", path.display()))?;
        }
        let failed = phases
            .iter()
            .filter_map(|p| p.verdict.as_ref())
            .any(|v| run_verdict::outcome(v) == model::evaluation::Outcome::Fail);
        if self.stopped.is_some() && !failed {
            console::print_stdout(
                "verdict: INTERRUPTED: not every phase was measured; those that were are above\n",
            )?;
            return Ok(Exit::Interrupted);
        }
        if self.stopped.is_some() {
            // A phase measured over its budget fails whatever stopped a later one.
            console::print_stdout(
                "interrupted: not every phase was measured, and one that was already fails\n",
            )?;
        }
        let (exit, lines) = run_verdict::text(&phases, args.budget, args.tuned);
        // The verdict ends standard output, where a script keeps it (`rtlab run > eval.txt`).
        console::print_stdout(&lines)?;
        Ok(exit)
    }

    /// A phase's label: its name, after `--label TEXT` when given.
    fn label(&self, phase: &str) -> String {
        match &self.args.label {
            Some(text) => format!("{text} {phase}"),
            None => phase.to_string(),
        }
    }

    /// Whether standard output is the `rtlab.evaluation/1` document (`--format json`).
    pub fn json(&self) -> bool {
        self.args.format == TextOrJson::Json
    }

    /// The evaluation's facts besides its phases, for the document.
    fn about(&self, report: Option<String>) -> run_verdict::About<'_> {
        run_verdict::About {
            session: &self.id,
            budget: self.args.budget,
            tuned: self.args.tuned,
            audit: self.audit,
            report,
            interrupted: self.stopped.is_some(),
        }
    }
}

impl Session<'_> {
    /// Writes the HTML report of every phase (--output, else the default name); returns
    /// where.
    fn write_report(&mut self) -> Result<PathBuf> {
        let args = self.args;
        let path = match &args.output {
            Some(p) => p.clone(),
            None => default_report_name(&self.runs[0].1),
        };
        let session = &self.id;
        let named: Vec<crate::runs::NamedRun> = self
            .runs
            .iter()
            .chain(&self.noise_runs)
            .map(|(label, run)| crate::runs::NamedRun {
                run: run.clone(),
                name: label.clone(),
                source: format!("phase \"{label}\" of session {session}"),
                key: label
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                    .collect(),
            })
            .collect();
        // Each phase is judged against what it was measured with: the judged ones against
        // --budget, the others (the phases before tuning, noise) on completeness.
        let options = report::html::ReportOptions {
            budget: None,
            timeline: false,
        };
        crate::report_cmd::write(&named, &options, &path, None)
            .with_context(|| format!("writing the report to {}", path.display()))?;
        Ok(path)
    }
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
    ) -> Result<PhaseResult> {
        let cmd = self.phase_command(phase, label, cpus, placement)?;
        self.child_result(cmd, label, placement)
    }

    /// Runs one phase's child command ([`run_child`]).
    fn child_result(
        &mut self,
        cmd: Command,
        label: &str,
        placement: &Placement,
    ) -> Result<PhaseResult> {
        run_child(
            cmd,
            label,
            self.signals,
            &mut self.console,
            placement.journal.is_some(),
            &mut |_| Ok(()),
        )
    }

    /// This rtlab binary ([`rtlab_command`]).
    fn rtlab_command(&self, placement: &Placement) -> Result<Command> {
        rtlab_command(self.root, placement.journal.as_deref())
    }

    /// The `rtlab noise` command line of the noise phase (through `rtlab tune run` when placed
    /// in a tuning's RT cpuset).
    fn noise_command(
        &self,
        label: &str,
        duration: model::Nanos,
        cpus: Option<&str>,
        placement: &Placement,
    ) -> Result<Command> {
        let args = self.args;
        let mut cmd = self.rtlab_command(placement)?;
        cmd.args(["noise", "--format", "json", "--duration"])
            .arg(duration.to_string())
            .args(["--session", &self.id, "--label", label]);
        if let Some(cpus) = cpus {
            cmd.args(["--cpus", cpus]);
        }
        if let Some(db) = &args.db.db {
            cmd.arg("--db").arg(db);
        }
        if args.quiet {
            cmd.arg("--quiet");
        }
        Ok(cmd)
    }

    /// The `rtlab measure` command line of one phase (through `rtlab tune run` when placed in
    /// a tuning's RT cpuset).
    fn phase_command(
        &self,
        phase: &Phase,
        label: &str,
        cpus: Option<&str>,
        placement: &Placement,
    ) -> Result<Command> {
        let args = self.args;
        let mut cmd = self.rtlab_command(placement)?;
        cmd.args([
            "measure",
            "--format",
            "json",
            "--engine",
            self.engine.as_str(),
        ])
        .arg("--duration")
        .arg(args.duration.to_string())
        .args(["--session", &self.id, "--label", label]);
        if (self.judged)(label) {
            cmd.arg("--budget").arg(args.budget.to_string());
        }
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
        if !self.warned.is_empty() {
            cmd.arg("--shown-warnings").arg(self.warned.join(","));
        }
        Ok(cmd)
    }
}

/// This rtlab binary (with `--root` when not on the host), run through `rtlab tune run` in the
/// RT cpuset of the tuning in `journal` when given.
pub(crate) fn rtlab_command(root: &Root, journal: Option<&Path>) -> Result<Command> {
    let exe = std::env::current_exe().context("finding the rtlab binary")?;
    let mut cmd = Command::new(&exe);
    if !root.is_host() {
        cmd.arg("--root").arg(root.base());
    }
    if let Some(journal) = journal {
        cmd.args(["tune", "run", "--journal"])
            .arg(journal)
            .arg("--")
            .arg(&exe);
        if !root.is_host() {
            cmd.arg("--root").arg(root.base());
        }
    }
    Ok(cmd)
}

/// A phase's result (none when a signal stopped it before it measured), its child's exit
/// code, and the signal passed on to it.
pub(crate) type PhaseResult = (Option<MeasureRun>, Option<i32>, Option<Signal>);

/// Runs one phase's child command (`rtlab measure` or `rtlab noise` printing its document)
/// in its own process group, dying with this process, passing signals on; `spawned` hears
/// its process id once it runs. Its result, exit code and the signal passed on.
pub(crate) fn run_child(
    mut cmd: Command,
    label: &str,
    signals: &TerminationSignals,
    console: &mut Console,
    tuned: bool,
    spawned: &mut dyn FnMut(u32) -> Result<()>,
) -> Result<PhaseResult> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    sys::process::die_with_parent(&mut cmd);
    let mut child = cmd.spawn().context("starting the phase's rtlab")?;
    spawned(child.id())?;
    let mut stdout = child.stdout.take().expect("stdout was piped");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let mut passed_on = None;
    let status = loop {
        if let Some(status) = child.try_wait().context("waiting for the phase's rtlab")? {
            break status;
        }
        // A second signal is taken and dropped: the child is stopping already.
        if let Some(signal) = signals.wait(Duration::from_millis(50))
            && passed_on.is_none()
        {
            passed_on = Some(signal);
            let _ = sys::process::signal_process(child.id(), StopSignal::Terminate);
            console.verdict(&format!(
                "{signal}: stopping the {label} phase{}",
                if tuned {
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
            "the {label} phase failed (its rtlab exited {}); its message is above",
            code.map_or("on a signal".to_string(), |c| c.to_string())
        ))
        .into()),
    }
}

/// `rtlab-report-<host>-<date>.html` in the current directory, or `...-2.html` and on where
/// that exists: a second evaluation the same day never overwrites the first's report.
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
    let named = |n: u32| match n {
        1 => Path::new(".").join(format!("rtlab-report-{host}-{date}.html")),
        n => Path::new(".").join(format!("rtlab-report-{host}-{date}-{n}.html")),
    };
    (1..10_000)
        .map(named)
        .find(|p| !p.exists())
        .unwrap_or_else(|| named(10_000))
}
