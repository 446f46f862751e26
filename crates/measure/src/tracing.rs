//! `measure --trace`: a private tracefs instance recording the scheduler, IRQ and timer events
//! an explanation needs while the threads measure, frozen at a `--break` breach or at the end,
//! then read back: the windows around the worst spikes are kept with the run and explained.
//!
//! The instance is the only thing touched (its own buffer, clock and events); it is removed
//! when the run ends, on error (its guard's `Drop`), and, after a crash, by the next rtlab that
//! creates one. The trace clock is `mono`, the clock the threads measure with, so a spike's
//! deadline is a trace timestamp.

use model::explain::{Explanation, TraceCapture};
use model::measure::{MeasureRun, Warning};
use sys::Root;
use sys::trace_instance::{self, Instance};
use sys::tracefs::Tracefs;
use trace::explain::{self, LOOKBACK_NS, Spike, WindowSpec};

use crate::config::TraceOptions;

/// The events an explanation reads, and what it loses without each.
const EVENTS: [(&str, &str); 16] = [
    (
        "sched/sched_switch",
        "which task held the CPU is inferred from event lines only",
    ),
    (
        "sched/sched_waking",
        "the wake-up time comes from sched_wakeup alone",
    ),
    ("sched/sched_wakeup", "wake-ups are not seen"),
    ("sched/sched_migrate_task", "migrations are not seen"),
    ("irq/irq_handler_entry", "interrupt handlers are not seen"),
    (
        "irq/irq_handler_exit",
        "interrupt handlers' durations are not known",
    ),
    ("irq/softirq_entry", "softirqs are not seen"),
    ("irq/softirq_exit", "softirqs' durations are not known"),
    (
        "timer/hrtimer_start",
        "timer deadlines are taken from the measurement only",
    ),
    (
        "timer/hrtimer_expire_entry",
        "when the timer fired is not known: a late timer interrupt reads as scheduler delay",
    ),
    (
        "timer/hrtimer_expire_exit",
        "the timer handler's end is not known",
    ),
    ("ipi", "inter-processor interrupts are not seen"),
    (
        "workqueue/workqueue_execute_start",
        "workqueue items are not named",
    ),
    (
        "workqueue/workqueue_execute_end",
        "workqueue items' durations are not known",
    ),
    (
        "irq_vectors/local_timer_entry",
        "(x86 only) the timer interrupt's own entry is not seen",
    ),
    (
        "irq_vectors/local_timer_exit",
        "(x86 only) the timer interrupt's own exit is not seen",
    ),
];

/// Events only debug kernels have (`CONFIG_PREEMPTIRQ_TRACEPOINTS`): they name the sections
/// with interrupts or preemption off.
const SECTION_EVENTS: [&str; 4] = [
    "preemptirq/irq_disable",
    "preemptirq/irq_enable",
    "preemptirq/preempt_disable",
    "preemptirq/preempt_enable",
];

/// A trace being recorded.
#[derive(Debug)]
pub(crate) struct Session {
    instance: Instance,
    root: Root,
    options: TraceOptions,
    clock: String,
    events: Vec<String>,
    missing: Vec<String>,
}

impl Session {
    /// The instance's tracefs directory (the break trigger writes its marker there).
    pub(crate) fn tracefs(&self) -> &Tracefs {
        self.instance.tracefs()
    }
}

/// Sets up and starts the instance; `None` (and a warning saying why) when tracing cannot
/// work here.
pub(crate) fn start(
    root: &Root,
    options: &TraceOptions,
    cpus: impl IntoIterator<Item = u32>,
    warnings: &mut Vec<Warning>,
) -> Option<Session> {
    match open(root, options, cpus, None) {
        Ok(s) => Some(s),
        Err(why) => {
            warnings.push(Warning::new(
                "trace-unavailable",
                format!("--trace: {why}; the run goes on without a trace"),
            ));
            None
        }
    }
}

/// Sets up and starts an instance recording `cpus` with `events` (group or group/event
/// names; `None`: the explanation's set).
fn open(
    root: &Root,
    options: &TraceOptions,
    cpus: impl IntoIterator<Item = u32>,
    wanted: Option<&[String]>,
) -> Result<Session, String> {
    let Some(top) = Tracefs::find(root) else {
        return Err(format!(
            "tracefs is not mounted (mount it with `{}`)",
            sys::tracefs::mount_hint()
        ));
    };
    let instance =
        Instance::create(&top).map_err(|e| format!("cannot create a tracefs instance ({e})"))?;
    let clocks = instance.clocks().unwrap_or_default();
    let clock = if clocks.iter().any(|c| c == "mono") {
        "mono"
    } else {
        "local"
    };
    instance
        .set_clock(clock)
        .and_then(|()| instance.set_buffer_kb(options.buffer_kb))
        .and_then(|()| instance.set_cpumask(&trace_instance::cpumask_hex(cpus)))
        .map_err(|e| format!("cannot configure the tracefs instance ({e})"))?;
    let exists = |event: &str| instance.has_event(event);
    let mut events = Vec::new();
    let mut missing = Vec::new();
    match wanted {
        Some(list) => {
            for event in list {
                if !exists(event) {
                    return Err(format!(
                        "the kernel has no trace event `{event}` (see {}/available_events)",
                        top.dir().display()
                    ));
                }
                instance
                    .enable_event(event)
                    .map_err(|e| format!("cannot enable {event} ({e})"))?;
                events.push(event.clone());
            }
        }
        None => {
            for (event, loss) in EVENTS {
                if exists(event) {
                    match instance.enable_event(event) {
                        Ok(()) => events.push(event.to_string()),
                        Err(e) => missing.push(format!("{event} ({e}): {loss}")),
                    }
                } else if !loss.starts_with("(x86 only)") || cfg!(target_arch = "x86_64") {
                    missing.push(format!("{event}: {loss}"));
                }
            }
            let sections: Vec<&str> = SECTION_EVENTS.into_iter().filter(|e| exists(e)).collect();
            if sections.is_empty() {
                missing.push(
                    "preemptirq/*: the kernel lacks CONFIG_PREEMPTIRQ_TRACEPOINTS, so sections \
                     with interrupts or preemption off are seen only as gaps"
                        .to_string(),
                );
            }
            for e in sections {
                if instance.enable_event(e).is_ok() {
                    events.push(e.to_string());
                }
            }
        }
    }
    if clock != "mono" {
        missing.push(
            "trace_clock mono: this kernel lacks it; spikes are placed through the hrtimer \
             clock offset"
                .to_string(),
        );
    }
    instance
        .set_on(true)
        .map_err(|e| format!("cannot start tracing ({e})"))?;
    Ok(Session {
        instance,
        root: root.clone(),
        options: options.clone(),
        clock: clock.to_string(),
        events,
        missing,
    })
}

/// `rtlab trace record`: a private instance recording until stopped, then saved as text.
#[derive(Debug)]
pub struct Recording {
    session: Session,
}

impl Recording {
    /// Starts recording `events` (`None`: the set `rtlab explain` reads) on `cpus` into a
    /// `buffer_kb` KiB buffer per CPU. The error says why tracing cannot work here, or names
    /// the event the kernel lacks.
    pub fn start(
        root: &Root,
        buffer_kb: u64,
        cpus: impl IntoIterator<Item = u32>,
        events: Option<&[String]>,
    ) -> Result<Recording, String> {
        let options = TraceOptions {
            buffer_kb,
            ..TraceOptions::default()
        };
        open(root, &options, cpus, events).map(|session| Recording { session })
    }

    /// The events recorded.
    pub fn events(&self) -> &[String] {
        &self.session.events
    }

    /// The explanation's events the kernel lacks, and what each costs.
    pub fn missing(&self) -> &[String] {
        &self.session.missing
    }

    /// The trace clock (`mono` where the kernel has it).
    pub fn clock(&self) -> &str {
        &self.session.clock
    }

    /// Stops, writes the trace to `path` (whole, or not at all) as the kernel's text or, with
    /// `binary`, as a trace.dat of the raw buffers, and removes the instance; what it wrote:
    /// bytes, events, and events lost to full buffers.
    pub fn finish(
        self,
        root: &Root,
        path: &std::path::Path,
        binary: bool,
    ) -> std::io::Result<Recorded> {
        let session = self.session;
        let instance = session.instance;
        let _ = instance.set_on(false);
        let stats: Vec<sys::trace_instance::CpuStats> = instance
            .buffer_cpus()
            .into_iter()
            .filter_map(|c| instance.cpu_stats(c).ok())
            .collect();
        let events = stats.iter().map(|s| s.entries).fold(0, u64::saturating_add);
        let lost = stats
            .iter()
            .map(|s| s.overrun.saturating_add(s.dropped))
            .fold(0, u64::saturating_add);
        let written = if binary {
            crate::capture::contents(
                &instance,
                root,
                &session.events,
                &session.clock,
                session.options.buffer_kb,
            )
            .map_err(std::io::Error::other)
            .and_then(|c| crate::capture::write_file(&c, path))
        } else {
            instance.copy_trace(path)
        };
        let _ = instance.remove();
        written.map(|bytes| Recorded {
            bytes,
            events,
            lost,
        })
    }
}

/// What [`Recording::finish`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// Bytes of trace text.
    pub bytes: u64,
    /// Events in the buffers when recording stopped (what the file holds).
    pub events: u64,
    /// Events overwritten or dropped because a buffer filled.
    pub lost: u64,
}

/// Whether the trace showed anything of the spike (its timer, wake-up or switch-in): an
/// explanation without them only restates the latency.
fn grounded(x: &Explanation) -> bool {
    let m = &x.milestones;
    m.timer_fired_ns.is_some() || m.woken_ns.is_some() || m.switched_in_ns.is_some()
}

fn window_spec(s: &Spike) -> WindowSpec {
    WindowSpec {
        cpu: s.cpu,
        from_ts: s.deadline_ts.saturating_sub(LOOKBACK_NS),
        to_ts: s.end_ts.unwrap_or(s.deadline_ts) + 20_000,
    }
}

/// The lines of `w` from shortly before the spike's deadline, under a heading.
fn kept_lines(spike: &Spike, w: &explain::Window) -> String {
    let from = spike.deadline_ts.saturating_sub(LOOKBACK_NS / 4);
    let mut out = format!(
        "# rtlab: CPU {} cycle {} deadline {}.{:09}\n",
        spike.cpu,
        spike.cycle.unwrap_or(0),
        spike.deadline_ts / 1_000_000_000,
        spike.deadline_ts % 1_000_000_000
    );
    for (line, e) in w.text.lines().zip(&w.events) {
        if e.ts_ns >= from {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Stops the trace, explains the worst spikes of `run` (the breach first; those captured
/// during the run as they came) and removes the instance.
pub(crate) fn finish(session: Session, run: &MeasureRun) -> TraceCapture {
    let Session {
        instance,
        root,
        options,
        clock,
        events,
        missing,
    } = session;
    let _ = instance.set_on(false);
    // What each CPU's buffer still holds, before reading it empties it.
    let oldest: Vec<(u32, Option<u64>)> = instance
        .buffer_cpus()
        .into_iter()
        .map(|c| (c, instance.cpu_stats(c).ok().and_then(|s| s.oldest_ns)))
        .collect();
    let frozen_by = if run.break_event.as_ref().is_some_and(|b| b.trace_frozen) {
        "break"
    } else {
        "end"
    };
    let mut capture = TraceCapture {
        instance: instance.name().to_string(),
        clock,
        buffer_kb: options.buffer_kb,
        events,
        missing,
        frozen_by: frozen_by.to_string(),
        ..TraceCapture::default()
    };
    let trace = crate::capture::read_trace(&instance, &root, options.buffer_kb, &mut capture);
    if let Some(dir) = &options.keep_dir {
        match crate::capture::keep(&trace, dir, run) {
            Ok(path) => capture
                .notes
                .push(format!("the whole trace is in {}", path.display())),
            Err(e) => capture
                .notes
                .push(format!("--trace-dir: could not keep the trace ({e})")),
        }
    }
    let mut done = explain_spikes(&trace, &oldest, run, options.explain, &mut capture);
    drop(trace);
    done.retain(|(s, x, ..)| {
        let ok = grounded(x);
        if !ok {
            capture.notes.push(format!(
                "CPU {} cycle {}: the trace holds no event of this spike (events were lost or \
                 not recorded)",
                s.cpu,
                s.cycle.unwrap_or(0)
            ));
        }
        ok
    });
    done.sort_by_key(|(s, ..)| std::cmp::Reverse(s.end_ts.unwrap_or(0) - s.deadline_ts));
    done.dedup_by_key(|(s, ..)| (s.cpu, s.cycle));
    done.truncate(options.explain);
    for (_, x, window, lost) in done {
        capture.explanations.push(x);
        capture.window.push_str(&window);
        capture.lost_events += lost;
    }
    let name = instance.name().to_string();
    if let Err(e) = instance.remove() {
        capture.notes.push(format!(
            "the tracefs instance {name} could not be removed ({e})"
        ));
    }
    capture
}

/// The spikes to explain: the breach first, then each CPU's worst, then the next worst, at
/// most `n`.
fn chosen(run: &MeasureRun, n: usize) -> Vec<Spike> {
    let mut all: Vec<(u64, Spike)> = Vec::new();
    for c in &run.cpus {
        for s in &c.spikes {
            all.push((
                s.latency_ns,
                Spike {
                    cpu: c.cpu,
                    pid: c.tid,
                    comm: None,
                    deadline_ts: s.monotonic_ns.saturating_sub(s.latency_ns),
                    end_ts: Some(s.monotonic_ns),
                    cycle: Some(s.cycle),
                },
            ));
        }
    }
    all.sort_by_key(|(l, _)| std::cmp::Reverse(*l));
    let mut out: Vec<Spike> = Vec::new();
    if let Some(b) = &run.break_event
        && let Some(i) = all
            .iter()
            .position(|(_, s)| s.cpu == b.cpu && s.cycle == Some(b.cycle))
    {
        out.push(all.remove(i).1);
    }
    for c in &run.cpus {
        if out.len() < n
            && !out.iter().any(|s| s.cpu == c.cpu)
            && let Some(i) = all.iter().position(|(_, s)| s.cpu == c.cpu)
        {
            out.push(all.remove(i).1);
        }
    }
    out.extend(
        all.into_iter()
            .map(|(_, s)| s)
            .take(n.saturating_sub(out.len())),
    );
    out
}

/// Explains from the final buffer the chosen spikes not captured during the run.
fn explain_spikes(
    trace: &crate::capture::Trace<'_>,
    oldest: &[(u32, Option<u64>)],
    run: &MeasureRun,
    n: usize,
    capture: &mut TraceCapture,
) -> Vec<(Spike, Explanation, String, u64)> {
    let mut spikes = chosen(run, n);
    // Spikes older than what a CPU's buffer still holds cannot be explained.
    let mut old: Vec<String> = Vec::new();
    spikes.retain(|s| {
        let oldest = oldest
            .iter()
            .find(|(c, _)| *c == s.cpu)
            .and_then(|(_, o)| *o);
        let kept = oldest.is_none_or(|o| o + LOOKBACK_NS / 4 <= s.deadline_ts);
        if !kept {
            old.push(format!("CPU {} cycle {}", s.cpu, s.cycle.unwrap_or(0)));
        }
        kept
    });
    if !old.is_empty() {
        capture.notes.push(format!(
            "{} of the worst spikes ({}) are older than the trace buffer held at the end: \
             without --break the buffer keeps only the last stretch of the run (raise \
             --trace-buffer), with --break TIME it is frozen at the first spike over TIME",
            old.len(),
            old.join(", ")
        ));
    }
    let need_scan = capture.clock != "mono" || spikes.len() < n;
    let scan = if need_scan {
        match trace.scan() {
            Ok(s) => Some(s),
            Err(e) => {
                capture.notes.push(format!("reading the trace failed: {e}"));
                return Vec::new();
            }
        }
    } else {
        None
    };
    let offset = match (&scan, capture.clock.as_str()) {
        (Some(s), c) if c != "mono" => s.clock_offset_ns,
        _ => 0,
    };
    // Too few of the run's worst spikes left in the buffer: add the worst wake-ups of the
    // measuring threads it still holds, so the end of the run is explained at least.
    if let Some(scan) = &scan
        && spikes.len() < n
    {
        let added = add_last_wakeups(scan, run, &mut spikes, n, offset);
        if added > 0 && !old.is_empty() {
            capture.notes.push(format!(
                "explained instead: the {added} worst wake-ups of the measuring threads the \
                 buffer still held (the run's last stretch), measured from the trace: deadline \
                 to switch-in"
            ));
        }
    }
    if spikes.is_empty() {
        return Vec::new();
    }
    let specs: Vec<WindowSpec> = spikes.iter().map(window_spec).collect();
    let windows = match trace.collect(&specs) {
        Ok(w) => w,
        Err(e) => {
            capture.notes.push(format!("reading the trace failed: {e}"));
            return Vec::new();
        }
    };
    spikes
        .into_iter()
        .zip(&windows)
        .map(|(spike, window)| {
            let x = explain::explain(window, &spike, offset);
            let text = kept_lines(&spike, window);
            (spike, x, text, window.lost_markers)
        })
        .collect()
}

/// Adds to `spikes`, up to `n`, the worst wake-ups of the run's measuring threads that the
/// trace still holds and no spike already covers; how many were added.
fn add_last_wakeups(
    scan: &explain::Scan,
    run: &MeasureRun,
    spikes: &mut Vec<Spike>,
    n: usize,
    offset: i64,
) -> usize {
    let tids: Vec<(u32, u32)> = run
        .cpus
        .iter()
        .filter_map(|c| Some((c.cpu, c.tid?)))
        .collect();
    let mut extra: Vec<&explain::Wakeup> = scan
        .wakeups
        .iter()
        .filter(|w| tids.contains(&(w.cpu, w.pid)))
        .filter(|w| {
            !spikes
                .iter()
                .any(|s| s.cpu == w.cpu && s.deadline_ts.abs_diff(w.deadline_ts(offset)) < 1_000)
        })
        .collect();
    extra.sort_by_key(|w| std::cmp::Reverse(w.latency_ns(offset)));
    let added = extra.len().min(n - spikes.len());
    spikes.extend(extra.into_iter().take(added).map(|w| Spike {
        cpu: w.cpu,
        pid: Some(w.pid),
        comm: None,
        deadline_ts: w.deadline_ts(offset),
        // The trace's switch-in stands for the clock read it does not show.
        end_ts: Some(w.switched_ts),
        cycle: None,
    }));
    added
}
