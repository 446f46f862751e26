//! The noise run's own trace: a private tracefs instance on the `mono_raw` clock (the clock the
//! detector's counter is placed on) recording the events that name an interruption's cause —
//! hard IRQs and x86 vectors, softirqs, NMIs, scheduler switches — on the measured CPUs only.
//! When the run ends it is stopped, read back CPU by CPU into [`trace::noise`]'s attribution,
//! and removed; a killed rtlab's instance is removed by the next one that creates one.

use model::measure::Warning;
use sys::Root;
use sys::trace_instance::{self, Instance};
use sys::tracefs::Tracefs;
use trace::line::Line;
use trace::noise::{Attribution, CpuAttributor, Window};
use trace::reader::Reader;

/// The events attribution reads, and what is lost without each.
const EVENTS: [(&str, &str); 11] = [
    ("sched/sched_switch", "time other threads took is not seen"),
    ("irq/irq_handler_entry", "interrupt handlers are not seen"),
    ("irq/irq_handler_exit", "interrupt handlers are not seen"),
    ("irq/softirq_entry", "softirqs are not seen"),
    ("irq/softirq_exit", "softirqs are not seen"),
    ("nmi/nmi_handler", "NMIs are not seen"),
    (
        "irq_vectors/local_timer_entry",
        "(x86 only) the timer interrupt is not seen",
    ),
    (
        "irq_vectors/local_timer_exit",
        "(x86 only) the timer interrupt is not seen",
    ),
    (
        "irq_vectors/reschedule_entry",
        "(x86 only) rescheduling IPIs are not seen",
    ),
    (
        "irq_vectors/reschedule_exit",
        "(x86 only) rescheduling IPIs are not seen",
    ),
    (
        "irq_vectors/call_function_single_entry",
        "(x86 only) function-call IPIs are not seen",
    ),
];

/// More x86 vectors, enabled when present (their absence loses little).
const MORE_VECTORS: [&str; 8] = [
    "irq_vectors/call_function_single_exit",
    "irq_vectors/call_function_entry",
    "irq_vectors/call_function_exit",
    "irq_vectors/irq_work_entry",
    "irq_vectors/irq_work_exit",
    "irq_vectors/x86_platform_ipi_entry",
    "irq_vectors/x86_platform_ipi_exit",
    "irq_vectors/thermal_apic_entry",
];

/// Per-CPU buffer of the instance, KiB: at a busy CPU's few hundred thousand events a second
/// this holds tens of seconds; what it loses is counted, never attributed.
const BUFFER_KB: u64 = 32 * 1024;

/// A noise run's trace being recorded.
pub(crate) struct NoiseTrace {
    instance: Instance,
    /// What attribution lacks (events the kernel does not have).
    pub(crate) missing: Vec<String>,
    /// CLOCK_MONOTONIC_RAW when tracing started.
    started_raw: u64,
}

/// Starts the instance; `None` and a warning saying why when tracing cannot work here.
pub(crate) fn start(
    root: &Root,
    cpus: impl IntoIterator<Item = u32>,
    warnings: &mut Vec<Warning>,
) -> Option<NoiseTrace> {
    match open(root, cpus) {
        Ok(t) => Some(t),
        Err(why) => {
            warnings.push(Warning::new(
                "noise-unattributed",
                format!("{why}: interruptions are measured but not attributed"),
            ));
            None
        }
    }
}

fn open(root: &Root, cpus: impl IntoIterator<Item = u32>) -> Result<NoiseTrace, String> {
    let Some(top) = Tracefs::find(root) else {
        return Err(format!(
            "tracefs is not mounted (mount it with `{}`)",
            sys::tracefs::mount_hint()
        ));
    };
    let instance =
        Instance::create(&top).map_err(|e| format!("cannot create a tracefs instance ({e})"))?;
    let clocks = instance.clocks().unwrap_or_default();
    if !clocks.iter().any(|c| c == "mono_raw") {
        return Err("this kernel's tracefs has no mono_raw trace clock".to_string());
    }
    instance
        .set_clock("mono_raw")
        .and_then(|()| instance.set_buffer_kb(BUFFER_KB))
        .and_then(|()| instance.set_cpumask(&trace_instance::cpumask_hex(cpus)))
        .map_err(|e| format!("cannot configure the tracefs instance ({e})"))?;
    let mut missing = Vec::new();
    let mut enabled = 0;
    for (event, loss) in EVENTS {
        let x86_only = loss.starts_with("(x86 only)");
        match instance.has_event(event) {
            true => match instance.enable_event(event) {
                Ok(()) => enabled += 1,
                Err(e) => missing.push(format!("{event} ({e}): {loss}")),
            },
            false if !x86_only || cfg!(target_arch = "x86_64") => {
                missing.push(format!("{event}: {loss}"));
            }
            false => {}
        }
    }
    for event in MORE_VECTORS {
        if instance.has_event(event) {
            let _ = instance.enable_event(event);
        }
    }
    if enabled == 0 {
        return Err("the kernel has none of the events attribution reads".to_string());
    }
    instance
        .set_on(true)
        .map_err(|e| format!("cannot start tracing ({e})"))?;
    Ok(NoiseTrace {
        instance,
        missing,
        started_raw: sys::counter::monotonic_raw_ns(),
    })
}

/// One CPU to attribute: its detector thread and its interruptions on the trace clock.
pub(crate) struct CpuWindows {
    pub cpu: u32,
    pub tid: Option<u32>,
    pub windows: Vec<Window>,
}

impl NoiseTrace {
    /// Stops tracing, attributes each CPU's windows from its events, removes the instance.
    /// The second value says what limited the attribution (a buffer that overran, a
    /// read error), if anything did.
    pub(crate) fn finish(self, cpus: Vec<CpuWindows>) -> (Vec<(u32, Attribution)>, Vec<String>) {
        let _ = self.instance.set_on(false);
        let stopped_raw = sys::counter::monotonic_raw_ns();
        let mut notes = Vec::new();
        let mut out = Vec::new();
        for c in cpus {
            let stats = self.instance.cpu_stats(c.cpu).unwrap_or_default();
            let mut from = self.started_raw;
            if stats.overrun > 0 {
                from = stats.oldest_ns.unwrap_or(stopped_raw);
                notes.push(format!(
                    "CPU {}: the trace buffer overran ({} events lost), so interruptions before the oldest event left are not attributed",
                    c.cpu, stats.overrun
                ));
            }
            let mut attributor = CpuAttributor::new(c.tid, c.windows);
            match self.instance.open_cpu_trace(c.cpu) {
                Ok(f) => {
                    let mut reader = Reader::new(f);
                    loop {
                        match reader.next_line() {
                            Ok(Some((_, Line::Event(ev)))) => attributor.event(&ev),
                            Ok(Some(_)) => {}
                            Ok(None) => break,
                            Err(e) => {
                                notes.push(format!("CPU {}: reading its trace: {e}", c.cpu));
                                break;
                            }
                        }
                    }
                }
                Err(e) => notes.push(format!("CPU {}: cannot read its trace ({e})", c.cpu)),
            }
            out.push((c.cpu, attributor.finish((from, stopped_raw))));
        }
        let _ = self.instance.remove();
        (out, notes)
    }
}
