//! `measure --trace`: a private tracefs instance recording the scheduler, IRQ and timer events
//! an explanation needs while the threads measure, frozen at a `--break` breach or at the end,
//! then read back: the windows around the worst spikes are kept with the run and explained
//! ([`spikes`]). Without `--break`, each new maximum latency sets the buffer aside in the
//! instance's snapshot buffer, so the run's worst spike is still held at the end.
//!
//! The instance is the only thing touched (its own buffer, clock and events); it is removed
//! when the run ends, on error (its guard's `Drop`), and, after a crash, by the next rtlab that
//! creates one. The trace clock is `mono`, the clock the threads measure with, so a spike's
//! deadline is a trace timestamp.

use model::measure::Warning;
use sys::Root;
use sys::trace_instance::{self, Instance};
use sys::tracefs::Tracefs;

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
    worst: WorstKept,
}

/// The worst latency so far kept in the instance's snapshot buffer: each tick the main thread
/// gives the run's maximum, and a new one swaps the recording buffer into the snapshot, so at
/// the end the run's worst spike is in one buffer or the other however long the run and
/// however small the buffer (issue #44: a 5069 us maximum went unexplained, overwritten).
#[derive(Debug, Default)]
struct WorstKept {
    /// Whether the kernel keeps a snapshot buffer and the trace clock is the threads' own.
    able: bool,
    /// The largest latency kept so far (ns).
    max_ns: u64,
    /// When the last snapshot was taken (trace clock, ns).
    at_ns: Option<u64>,
    /// Snapshots taken.
    times: u32,
    /// Why snapshots stopped (the first failure).
    failed: Option<String>,
    /// Ticks the current new worst has waited for a spike in progress to end.
    deferred: u32,
}

impl Session {
    /// The instance's tracefs directory (the break trigger writes its marker there).
    pub(crate) fn tracefs(&self) -> &Tracefs {
        self.instance.tracefs()
    }

    /// The run's largest latency so far is `max()`: a new worst is kept in the snapshot
    /// buffer (the recording goes on into an emptied one). `lateness()` says how far the
    /// latest measuring thread is past its deadline without having run: over
    /// [`IN_PROGRESS_NS`], a spike is in progress, which a swap would cut in two (its start
    /// set aside, then cleared at the next new maximum if the spike turns out to be it). The
    /// swap waits for it [`DEFER_TICKS`] ticks at most (the new worst must stay in the
    /// buffer), and without limit while the spike in progress is already half the new worst.
    /// Main thread only, once a tick.
    pub(crate) fn keep_worst(&mut self, max: impl Fn() -> u64, lateness: impl Fn() -> u64) {
        let w = &mut self.worst;
        if !w.able || w.failed.is_some() {
            return;
        }
        let max_ns = max();
        if max_ns <= w.max_ns {
            return;
        }
        let wait = || {
            let late = lateness();
            late > IN_PROGRESS_NS && (w.deferred < DEFER_TICKS || late >= max_ns / 2)
        };
        if wait() {
            w.deferred += 1;
            return;
        }
        // Emptying the snapshot takes a while (an RCU grace period): ask again before the
        // swap, and take the maximum as it is right then: a spike that ended meanwhile is in
        // the snapshot, and must count as kept (a later tick would clear it as a new one).
        let kept = self.instance.clear_snapshot().and_then(|()| {
            if wait() {
                return Ok(None);
            }
            let max_ns = max();
            self.instance.snapshot().map(|()| Some(max_ns))
        });
        match kept {
            Ok(Some(max_ns)) => {
                w.max_ns = max_ns;
                w.at_ns = Some(sys::clock::monotonic_ns());
                w.times += 1;
                w.deferred = 0;
            }
            Ok(None) => w.deferred += 1,
            Err(e) => w.failed = Some(e.to_string()),
        }
    }
}

/// How far past its deadline a measuring thread that has not run yet is a spike in progress,
/// which setting the buffer aside must not cut in two: above an RT thread's usual wake-up
/// latency, so that many threads rarely hold the snapshot back together.
pub(crate) const IN_PROGRESS_NS: u64 = 50_000;

/// How many ticks (100 ms each) a new worst waits for a smaller spike in progress to end
/// before it is set aside anyway: well within what a buffer of the smallest `--trace-buffer`
/// holds.
const DEFER_TICKS: u32 = 3;

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
    let worst = WorstKept {
        able: clock == "mono" && instance.has_snapshot() && !options.at_break_only,
        ..WorstKept::default()
    };
    Ok(Session {
        instance,
        root: root.clone(),
        options: options.clone(),
        clock: clock.to_string(),
        events,
        missing,
        worst,
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
                sys::raw_trace::Buffer::Recording,
            )
            .map_err(std::io::Error::other)
            .and_then(|c| crate::capture::write_file(&c, path))
        } else {
            files::output_target(path)
                .map_err(std::io::Error::other)
                .and_then(|(to, as_is)| instance.copy_trace(&to, as_is))
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

mod spikes;
#[cfg(test)]
mod tests;

pub(crate) use spikes::finish;
