//! `rtlab trace record`: a plain capture in a private tracefs instance (the events `rtlab
//! explain` reads, or `--events`), for a duration or until Ctrl-C, written as a trace.dat (the
//! ring buffers' raw pages, read once recording stopped) or as the kernel's trace text;
//! nothing else in tracefs is touched and the instance is removed.

use std::time::{Duration, Instant};

use anyhow::Result;
use model::CpuSpec;
use sys::Root;
use sys::signals::TerminationSignals;

use crate::console;
use crate::exit::{Exit, UsageError};
use crate::flags::{RecordArgs, RecordFormat, TraceCommand};

/// `rtlab trace`.
pub fn run(command: &TraceCommand, root: &Root) -> Result<Exit> {
    match command {
        TraceCommand::Record(args) => record(args, root),
    }
}

fn record(args: &RecordArgs, root: &Root) -> Result<Exit> {
    if args.duration.get() == 0 {
        return Err(UsageError("--duration 0 records nothing; give e.g. 10s".to_string()).into());
    }
    files::check_creatable(&args.output)
        .map_err(|e| UsageError(format!("-o {}: {e}", args.output.display())))?;
    let possible = sys::cpu::possible(root)?;
    let online = sys::cpu::online(root)?;
    let cpus = args
        .cpus
        .as_ref()
        .unwrap_or(&CpuSpec::All)
        .resolve(&possible, &online, &online)
        .map_err(|e| UsageError(format!("--cpus: {e}")))?;
    let signals = TerminationSignals::block()?;
    let rec = measure::Recording::start(root, args.buffer, cpus.iter(), args.events.as_deref())
        .map_err(|why| UsageError(format!("rtlab trace record: {why}")))?;
    let mut console = console::Console::new(false);
    for m in rec.missing() {
        console.warn(&format!("not recorded: {m}"));
    }
    let started = Instant::now();
    let total = args.duration.to_duration();
    let mut interrupted = false;
    while started.elapsed() < total {
        let left = total - started.elapsed();
        if signals.wait(left.min(Duration::from_millis(200))).is_some() {
            interrupted = true;
            break;
        }
    }
    let kinds = match rec.events().len() {
        1 => rec.events()[0].clone(),
        n => format!("{n} kinds"),
    };
    let clock = rec.clock().to_string();
    let measure::Recorded {
        bytes,
        events,
        lost,
    } = rec
        .finish(root, &args.output, args.format == RecordFormat::Dat)
        .map_err(|e| {
            UsageError(format!(
                "-o {}: {}",
                args.output.display(),
                files::plain_io(&e)
            ))
        })?;
    // A signal that came while the trace was written is taken here, not at the exit.
    let _ = signals.wait(Duration::ZERO);
    console::print_stdout(&format!(
        "recorded {events} {} ({kinds}) in {:.1} s{} on {} (clock {clock}) into {} ({} KiB){}\n",
        if events == 1 { "event" } else { "events" },
        started.elapsed().as_secs_f64(),
        if interrupted {
            " (stopped by a signal)"
        } else {
            ""
        },
        cpus.with_noun(),
        args.output.display(),
        bytes / 1024,
        if lost > 0 {
            format!(
                "; {lost} {} overwritten (the buffer filled): raise --buffer",
                if lost == 1 {
                    "event was"
                } else {
                    "events were"
                }
            )
        } else {
            String::new()
        }
    ))?;
    Ok(Exit::Ok)
}
