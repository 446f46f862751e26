//! `rtlab pi check`: builds a [`measure::pi::PiConfig`] from the arguments, runs it with
//! SIGINT/SIGTERM collected on this thread, writes and prints the result, and turns the
//! verdict into the exit status.

use std::time::Duration;

use anyhow::{Context, Result};
use model::pi::PiVerdict;
use sys::Root;
use sys::signals::TerminationSignals;

use crate::console::{self, Console};
use crate::exit::{Exit, UsageError};
use crate::flags::{PiCheckArgs, PiCommand, PiFormat};

/// Runs `rtlab pi`.
pub fn run(command: &PiCommand, root: &Root) -> Result<Exit> {
    match command {
        PiCommand::Check(args) => check(args, root),
    }
}

fn check(args: &PiCheckArgs, root: &Root) -> Result<Exit> {
    let signals = TerminationSignals::block().context("blocking SIGINT/SIGTERM")?;
    if let Some(path) = &args.output {
        files::check_creatable(path)
            .map_err(|e| UsageError(format!("--output {}: {e}", path.display())))?;
    }
    let allowed = sys::sched::affinity().context("reading this process's CPU affinity")?;
    let cpus = match &args.cpus {
        Some(cpus) => {
            let online = sys::cpu::online(root).context("reading the online CPUs")?;
            tune::launch::check_cpus(cpus, &online, None).map_err(UsageError)?;
            let outside = cpus.difference(&allowed);
            if !outside.is_empty() {
                return Err(UsageError(format!(
                    "--cpus {cpus}: rtlab may not run on CPU {outside} (its affinity is {allowed})"
                ))
                .into());
            }
            cpus.clone()
        }
        None => allowed,
    };
    let config = measure::pi::PiConfig::new(args.duration, args.groups, cpus);
    config.validate().map_err(UsageError)?;
    let privileges = sys::privilege::Privileges::current();
    if !privileges.can_use_priority(config.priorities.high) {
        return Err(UsageError(format!(
            "pi check runs threads at SCHED_FIFO {}: {}",
            config.priorities.high,
            sys::privilege::rt_fix_hint()
        ))
        .into());
    }
    let mut console = Console::new(false);
    let outcome =
        measure::pi::run_check(&config, &mut |tick: Duration| signals.wait(tick).is_some());
    let result = match outcome {
        Ok(result) => result,
        Err(why) if why == measure::pi::INTERRUPTED => {
            console.warn("interrupted: no verdict");
            return Ok(Exit::Interrupted);
        }
        Err(why) => return Err(UsageError(format!("pi check: {why}")).into()),
    };
    if let Some(path) = &args.output {
        files::write_atomically(path, (result.to_json() + "\n").as_bytes())
            .with_context(|| format!("writing the result to {}", path.display()))?;
    }
    let format = if args.json {
        PiFormat::Json
    } else {
        args.format
    };
    let text = match format {
        PiFormat::Text => report::pi::table(&result),
        PiFormat::Json => result.to_json() + "\n",
    };
    console::print_stdout(&text).context("writing to standard output")?;
    Ok(match result.verdict {
        PiVerdict::Held => Exit::Ok,
        PiVerdict::HeldUnconfirmed => {
            console.warn(
                "the plain-lock control caught no inversion: this check could not show what \
                 priority inheritance prevents here",
            );
            Exit::Ok
        }
        PiVerdict::Missed => Exit::VerdictFailed,
    })
}
