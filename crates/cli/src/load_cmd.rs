//! `rtlab load`: runs a load spec alone, with a live line of achieved figures, and prints
//! what it achieved; in `--control` mode it is the load process of `rtlab measure --load`.
//! Also the hidden `rtlab guardian` that cleans up after a load whose rtlab was killed.

use std::io::{BufRead, Write};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use load::{LoadOptions, LoadSet};
use model::load::{LoadReport, LoadSpec};
use model::{CpuSet, CpuSpec, Nanos};
use sys::Root;
use sys::signals::TerminationSignals;

use crate::console::{self, Console};
use crate::exit::{Exit, UsageError};
use crate::flags::{LoadArgs, LoadFormat, LoadPlacementArgs};

/// How often the live line and the control loop look around.
const TICK: Duration = Duration::from_millis(100);
/// How often the live line is redrawn.
const LIVE_EVERY: Duration = Duration::from_secs(1);

/// Checks a spec and its placement against the machine, before anything starts, and builds
/// the options to run it with.
pub fn options(spec: &LoadSpec, placement: &LoadPlacementArgs, root: &Root) -> Result<LoadOptions> {
    let possible = sys::cpu::possible(root).context("reading the CPUs this machine has")?;
    let online = sys::cpu::online(root).context("reading the online CPUs")?;
    let load_cpus: Option<CpuSet> = placement
        .load_cpus
        .as_ref()
        .map(|s: &CpuSpec| {
            s.resolve(&possible, &online, &online)
                .map_err(|e| UsageError(format!("--load-cpus {s}: {e}")))
        })
        .transpose()?;
    load::placements(spec, load_cpus.as_ref(), &online).map_err(|e| UsageError(e.to_string()))?;
    // The default, /var/tmp, is on disk where an io load must write; a minimal board image
    // (busybox, an initramfs) may have none, and a load without io needs no disk (issue #26).
    let needs_disk = spec
        .generators
        .iter()
        .any(|g| matches!(g.kind, model::load::GeneratorKind::Io { .. }));
    let workdir_base = placement.load_dir.clone().unwrap_or_else(|| {
        let base = LoadOptions::host().workdir_base;
        if base.is_dir() || needs_disk {
            base
        } else {
            std::env::temp_dir()
        }
    });
    if !workdir_base.is_dir() {
        return Err(UsageError(format!(
            "--load-dir {}: not a directory; give an existing directory on a disk",
            workdir_base.display()
        ))
        .into());
    }
    let exe = std::env::current_exe().context("finding rtlab's own executable")?;
    // The guardian removes the load's cgroup under the same root.
    let mut guardian_args = Vec::new();
    if !root.is_host() {
        guardian_args.push("--root".to_string());
        guardian_args.push(root.base().display().to_string());
    }
    guardian_args.push("guardian".to_string());
    Ok(LoadOptions {
        root: root.clone(),
        load_cpus,
        workdir_base,
        guardian: Some((exe, guardian_args)),
        cgroup: placement.load_cgroup,
    })
}

/// Runs `rtlab load`.
pub fn run(args: &LoadArgs, root: &Root) -> Result<Exit> {
    let options = options(&args.spec, &args.placement, root)?;
    if let Some(path) = &args.output {
        files::check_creatable(path)
            .map_err(|e| UsageError(format!("--output {}: {e}", path.display())))?;
    }
    // Before any thread or child exists, so all of them inherit the blocked mask.
    let signals = TerminationSignals::block().context("blocking SIGINT/SIGTERM")?;
    let control = args.control.then(control_channel);
    let mut console = Console::new(args.quiet || args.control);

    let mut set = LoadSet::start(&args.spec, &options).map_err(|e| UsageError(e.to_string()))?;
    announce(args, &set, &mut console)?;
    let status = drive(args, &mut set, control.as_ref(), &signals, &mut console);
    console.clear_live();
    let report = set.stop(status);

    if args.control {
        console::print_stdout(&(report.to_json() + "\n")).context("writing to standard output")?;
        return Ok(Exit::Ok);
    }
    if let Some(path) = &args.output {
        files::write_atomically(path, report.to_json().as_bytes())
            .with_context(|| format!("writing the load report to {}", path.display()))?;
    }
    let text = match args.format {
        LoadFormat::Text => report::load::load_table(&report),
        LoadFormat::Json => report.to_json() + "\n",
    };
    console::print_stdout(&text).context("writing to standard output")?;
    // A signal that came while stopping is taken here, not at the exit.
    let _ = signals.wait(Duration::ZERO);
    // The load asked for did not run to the end: not what was asked, so not a success.
    if let Some(why) = report.incomplete() {
        console::warning(&why);
        return Ok(Exit::VerdictFailed);
    }
    Ok(if status == "interrupted" {
        Exit::Interrupted
    } else {
        Exit::Ok
    })
}

/// Says what runs: the `ready` line of the control protocol, else each generator (and, on a
/// terminal, how to stop it).
fn announce(args: &LoadArgs, set: &LoadSet, console: &mut Console) -> Result<()> {
    if args.control {
        let ready = format!("ready {}\n", one_line(&set.report()));
        console::print_stdout(&ready).context("writing to standard output")?;
    } else {
        for (item, description) in set.descriptions() {
            console.note(&format!("{item}: {description}"));
        }
        if console.live() {
            console.note(&format!(
                "load running{}; Ctrl-C stops it",
                args.duration
                    .map(|d| format!(" for {d}"))
                    .unwrap_or_default()
            ));
        }
    }
    Ok(())
}

/// Runs the load until its duration is over, a signal (alone) or the control channel (driven
/// by `measure`) stops it, opening the reporting window after the warm-up or when told;
/// returns the status: `complete` or `interrupted`.
fn drive(
    args: &LoadArgs,
    set: &mut LoadSet,
    control: Option<&mpsc::Receiver<Control>>,
    signals: &TerminationSignals,
    console: &mut Console,
) -> &'static str {
    let started = Instant::now();
    let warmup = args.warmup.to_duration();
    let mut marked = warmup.is_zero();
    let end = args.duration.map(|d| started + warmup + d.to_duration());
    let mut last_live = Instant::now();
    let mut status = "complete";
    loop {
        // Driven by `measure`, the control channel is what is waited on, so `mark` and the
        // stop take effect at once and the window matches the measurement. Signals are
        // taken and ignored there: the measuring rtlab decides when the load ends (a
        // process-group signal meant for it must not stop the load under its measurement),
        // and its end, or its death, closes the channel. Alone, the signals are waited on.
        let (signal, message) = match control {
            Some(rx) => {
                let message = match rx.recv_timeout(TICK) {
                    Ok(m) => Some(m),
                    Err(mpsc::RecvTimeoutError::Timeout) => None,
                    Err(mpsc::RecvTimeoutError::Disconnected) => Some(Control::Stop),
                };
                let _ = signals.wait(Duration::ZERO);
                (None, message)
            }
            None => (signals.wait(TICK), None),
        };
        if signal.is_some() {
            // Without --duration, Ctrl-C is how the load is meant to end.
            if args.duration.is_some() {
                status = "interrupted";
            }
            break;
        }
        match message {
            Some(Control::Mark) => {
                set.mark();
                marked = true;
            }
            Some(Control::Stop) => break,
            None => {}
        }
        set.poll();
        if !marked && started.elapsed() >= warmup {
            set.mark();
            marked = true;
        }
        if end.is_some_and(|end| Instant::now() >= end) {
            break;
        }
        if console.live() && last_live.elapsed() >= LIVE_EVERY {
            last_live = Instant::now();
            let elapsed = Nanos(started.elapsed().as_nanos() as u64);
            let left = args.duration.map(|d| format!("/{d}")).unwrap_or_default();
            console.draw_live(&[format!(
                "rtlab load {}{left}  {}",
                Nanos(elapsed.get() / 1_000_000_000 * 1_000_000_000),
                report::load::load_live_line(&set.report())
            )]);
        }
    }
    status
}

/// A report as one JSON line (for the control protocol).
fn one_line(report: &LoadReport) -> String {
    serde_json::to_string(report).expect("a load report always serializes")
}

/// What `rtlab measure` says to its load process on standard input.
enum Control {
    /// Open the reporting window now.
    Mark,
    /// Stop (end of input: also when the measuring rtlab died).
    Stop,
}

fn control_channel() -> mpsc::Receiver<Control> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("rtlab-control".into())
        .spawn(move || {
            for line in std::io::stdin().lock().lines() {
                match line.as_deref().map(str::trim) {
                    Ok("mark") => {
                        if tx.send(Control::Mark).is_err() {
                            return;
                        }
                    }
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
            let _ = tx.send(Control::Stop);
        })
        .expect("starting the control reader");
    rx
}

/// Runs the hidden `rtlab guardian`: waits for its input to end, then cleans up whatever is
/// still registered (see `load::guardian`).
pub fn guardian(root: &Root) -> Result<Exit> {
    // Ctrl-C and `kill` of rtlab must not take the guardian along before it has cleaned up;
    // it ends when its input does.
    let _signals = TerminationSignals::block().context("blocking SIGINT/SIGTERM")?;
    let problems = load::guardian::run(std::io::stdin().lock(), root);
    let mut err = std::io::stderr().lock();
    for p in &problems {
        let _ = writeln!(err, "rtlab guardian: could not clean up {p}");
    }
    Ok(Exit::Ok)
}
