//! `rtlab inspect PID`: checks the flags, has the audit room sample and judge the process
//! (with `--trace`, around a private tracefs instance recording the process's scheduler
//! events, read back into [`trace::run_delay`]), prints the table or JSON and exits 1 when a
//! finding failed, 2 when the process is unknown or exits during the window.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::Duration;

use anyhow::{Context, Result};
use audit::inspect::{Config, ExactDelay, InspectError, Limits, Pause, Window};
use model::inspect::Inspection;
use sys::Root;
use sys::signals::TerminationSignals;
use sys::trace_instance::Instance;
use sys::tracefs::Tracefs;
use trace::line::Line;
use trace::reader::Reader;
use trace::run_delay::RunDelays;

use crate::console;
use crate::exit::{Exit, UsageError};
use crate::flags::{InspectArgs, InspectFormat};

/// The longest window, and the sampling interval's bounds.
const MAX_DURATION: Duration = Duration::from_secs(3600);
const MIN_DURATION: Duration = Duration::from_millis(10);
const INTERVALS: (Duration, Duration) = (Duration::from_millis(1), Duration::from_secs(1));

/// Threads `--trace` follows at most: the kernel's event filter grows with each.
const MAX_TRACED: usize = 32;

/// The trace buffers together, KiB, split among the CPUs (1 to 8 MiB each): one process's
/// switches and wake-ups, a few thousand a second for a thread woken every millisecond, at
/// about 100 bytes each, fill 1 MiB in a few seconds only when every one lands on one CPU.
const TRACE_BUFFERS_KB: u64 = 64 * 1024;

/// Runs `rtlab inspect` with `args` on `root`.
pub fn run(args: &InspectArgs, root: &Root) -> Result<Exit> {
    let config = config(args)?;
    // SIGINT/SIGTERM end the window early: what was watched is judged and printed (exit 130).
    let signals = TerminationSignals::block().context("blocking SIGINT/SIGTERM")?;
    let mut pause = |d: Duration| signals.wait(d).is_some();
    let inspection = if args.trace {
        traced(root, &config, &mut pause)?
    } else {
        let window = sample(root, &config, &mut pause)?;
        audit::inspect::judge(root, &config, &window, None)
    };
    let format = if args.json {
        InspectFormat::Json
    } else {
        args.format
    };
    let text = match format {
        InspectFormat::Json => serde_json::to_string_pretty(&inspection)? + "\n",
        InspectFormat::Text => {
            let colour = std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
            report::inspect::inspect_table(&inspection, &|s, l| {
                crate::audit_cmd::paint(colour, s, l)
            })
        }
    };
    console::print_stdout(&text).context("writing to standard output")?;
    Ok(if inspection.interrupted {
        Exit::Interrupted
    } else if inspection.failed() {
        Exit::VerdictFailed
    } else {
        Exit::Ok
    })
}

fn sample(root: &Root, config: &Config, pause: Pause<'_>) -> Result<Window> {
    audit::inspect::sample(root, config.pid, config.duration, config.interval, pause).map_err(usage)
}

fn usage(e: InspectError) -> anyhow::Error {
    UsageError(e.to_string()).into()
}

/// The configuration, with the times bounded.
fn config(args: &InspectArgs) -> Result<Config> {
    let duration = Duration::from_nanos(args.duration.0);
    if !(MIN_DURATION..=MAX_DURATION).contains(&duration) {
        return Err(UsageError(format!(
            "--duration {}: give 10ms to 1h, e.g. --duration 10s",
            args.duration
        ))
        .into());
    }
    let interval = Duration::from_nanos(args.interval.0);
    if !(INTERVALS.0..=INTERVALS.1).contains(&interval) {
        return Err(UsageError(format!(
            "--interval {}: give 1ms to 1s, e.g. --interval 10ms",
            args.interval
        ))
        .into());
    }
    Ok(Config {
        pid: args.pid,
        duration,
        interval,
        rt_cpus: args.rt_cpus.clone(),
        limits: Limits {
            run_delay_budget_ns: args.run_delay_budget.0,
        },
    })
}

/// The threads to trace: all of the process's, or its real-time ones when there are more
/// than [`MAX_TRACED`].
fn traced_threads(root: &Root, pid: u32) -> Result<Vec<u32>> {
    let tids = match sys::thread_stats::thread_ids(root, pid) {
        Ok(t) => t,
        Err(e) if sys::thread_stats::is_gone(&e) => {
            return Err(usage(InspectError::NoProcess { pid }));
        }
        Err(e) => return Err(UsageError(e.to_string()).into()),
    };
    if tids.len() <= MAX_TRACED {
        return Ok(tids);
    }
    let rt: Vec<u32> = tids
        .iter()
        .filter(|&&t| sys::tasks::read_thread(root, pid, t).is_some_and(|t| t.is_realtime()))
        .copied()
        .collect();
    if rt.len() > MAX_TRACED {
        return Err(UsageError(format!(
            "--trace follows at most {MAX_TRACED} threads; process {pid} has {} real-time ones: inspect it without --trace",
            rt.len()
        ))
        .into());
    }
    Ok(rt)
}

/// Starts the instance recording `tids`' wake-ups and switches.
fn start_trace(root: &Root, tids: &[u32]) -> Result<Instance> {
    let top = Tracefs::find(root).ok_or_else(|| {
        UsageError(format!(
            "--trace: tracefs is not mounted (mount it with `{}`)",
            sys::tracefs::mount_hint()
        ))
    })?;
    let instance = Instance::create(&top).map_err(|e| {
        UsageError(format!(
            "--trace: cannot create a tracefs instance ({e}); run as root"
        ))
    })?;
    if instance
        .clocks()
        .unwrap_or_default()
        .iter()
        .any(|c| c == "mono")
    {
        instance.set_clock("mono")?;
    }
    let cpus = (instance.buffer_cpus().len() as u64).max(1);
    instance.set_buffer_kb((TRACE_BUFFERS_KB / cpus).clamp(1024, 8 * 1024))?;
    let any = |field: &[&str]| {
        tids.iter()
            .flat_map(|t| field.iter().map(move |f| format!("{f} == {t}")))
            .collect::<Vec<_>>()
            .join(" || ")
    };
    let events = [
        ("sched/sched_switch", any(&["prev_pid", "next_pid"])),
        ("sched/sched_wakeup", any(&["pid"])),
        ("sched/sched_wakeup_new", any(&["pid"])),
    ];
    for (event, filter) in &events {
        if !instance.has_event(event) {
            return Err(UsageError(format!("--trace: this kernel has no {event} event")).into());
        }
        instance.set_event_filter(event, filter)?;
        instance.enable_event(event)?;
    }
    instance.set_on(true)?;
    Ok(instance)
}

/// Samples the process while its scheduler events are traced, then judges it with the
/// exact waits.
fn traced(root: &Root, config: &Config, pause: Pause<'_>) -> Result<Inspection> {
    let tids = traced_threads(root, config.pid)?;
    let instance = start_trace(root, &tids)?;
    let window = sample(root, config, pause)?;
    instance.set_on(false)?;
    let lost: u64 = instance
        .buffer_cpus()
        .into_iter()
        .filter_map(|c| instance.cpu_stats(c).ok())
        .map(|s| s.overrun.saturating_add(s.dropped))
        .fold(0, u64::saturating_add);
    if lost > 0 {
        console::warning(&format!(
            "--trace: the buffer lost {lost} events; the longest waits may be missing"
        ));
    }
    let mut delays = RunDelays::new(tids);
    {
        let mut reader = Reader::new(instance.open_trace().context("reading the trace")?);
        while let Some((_, line)) = reader.next_line().context("reading the trace")? {
            if let Line::Event(e) = line {
                delays.feed(e.ts_ns, &trace::event::decode(&e));
            }
        }
    }
    drop(instance);
    let exact: BTreeMap<u32, ExactDelay> = delays
        .waits()
        .iter()
        .map(|(&tid, w)| {
            (
                tid,
                ExactDelay {
                    max_ns: w.max_ns,
                    wakeups: w.wakeups,
                },
            )
        })
        .collect();
    Ok(audit::inspect::judge(root, config, &window, Some(&exact)))
}
