//! What to do about an analysed timerlat activation: one or two sentences on its largest part
//! — the blocking thread (and what a kernel thread of that name is), the IRQ handler's delay
//! (idle states, or an IRQs-off section or the hardware), IRQ, softirq, NMI or thread
//! interference, or the part no event accounts for.

use model::timerlat::{Analysis, Context, Interference};

use super::{Kind, main_part, parts, source};

/// `12.3 us (45.6 %)`.
fn amount(a: &Analysis, ns: u64) -> String {
    format!("{} us ({:.1} %)", crate::format_us(ns), a.share(ns))
}

/// What to do about `a`'s largest part, in one or two sentences.
pub fn advice(a: &Analysis) -> String {
    let parts = parts(a);
    let Some(p) = main_part(&parts) else {
        return format!("Nothing to explain: the {} was 0 us.", a.context.describe());
    };
    let ns = p.ns.unwrap_or(0);
    match p.kind {
        Kind::Blocking => blocking(a, ns),
        Kind::Delay => delay(a, ns),
        Kind::TimerIrq => format!(
            "The timerlat IRQ handler itself took {}: the tracer's own work plus every other \
             hrtimer expiring on CPU {} in the same interrupt; move timers off the CPU \
             (nohz_full=, timer migration) or accept it as this CPU's floor.",
            amount(a, ns),
            a.cpu
        ),
        Kind::Irq => irq(a, p.items, ns),
        Kind::Softirq => softirq(a, p.items, ns),
        Kind::Nmi => format!(
            "NMIs took {}: the hard-lockup watchdog or perf sampling on CPU {}; boot with \
             nmi_watchdog=0 (or sysctl kernel.nmi_watchdog=0) and keep perf off the CPU.",
            amount(a, ns),
            a.cpu
        ),
        Kind::Thread => thread(a, p.items, ns),
        Kind::Rest => rest(a, ns),
    }
}

/// The largest item of a list.
fn top(items: &[Interference]) -> Option<&Interference> {
    items
        .iter()
        .filter(|i| i.name != trace::timerlat::analysis::OTHERS)
        .max_by_key(|i| i.duration_ns)
}

fn blocking(a: &Analysis, ns: u64) -> String {
    let (comm, pid) = a
        .blocking
        .as_ref()
        .map_or(("?", 0), |b| (b.comm.as_str(), b.pid));
    let mut out = format!(
        "{comm} (pid {pid}) was running when the timer fired and kept CPU {} for {} before \
         the timerlat thread ran{}.",
        a.cpu,
        amount(a, ns),
        if a.stack.is_empty() {
            ""
        } else {
            " (the stack shows where it was)"
        }
    );
    match kernel_thread(comm) {
        Some(what) => {
            out.push(' ');
            out.push_str(&what);
        }
        None => out.push_str(&format!(
            " Move it off CPU {} (its affinity, a cpuset, or `rtlab tune`) or run it below \
             the measuring thread's priority.",
            a.cpu
        )),
    }
    out
}

/// What a kernel thread of that name is and what to do about it; `None` for any other name.
pub(crate) fn kernel_thread(comm: &str) -> Option<String> {
    let (base, rest) = comm.split_once('/')?;
    let cpu = rest.split(['-', ':']).next().unwrap_or(rest);
    Some(match base {
        "ksoftirqd" => format!(
            "ksoftirqd/{cpu} is CPU {cpu}'s softirq thread (network, block, timer and RCU work \
             the interrupts left over): find which softirq with `rtlab explain` and move its \
             source (the device's IRQ, the timers) off the CPU."
        ),
        "rcuc" => format!(
            "rcuc/{cpu} runs CPU {cpu}'s RCU callbacks: offload them with rcu_nocbs={cpu} (and \
             rcu_nocb_poll) on the kernel command line."
        ),
        "rcuop" | "rcuog" | "rcuos" => format!(
            "{comm} is an RCU callback-offload thread: keep it on the housekeeping CPUs (its \
             affinity, or `rtlab tune`)."
        ),
        "ktimers" => format!(
            "ktimers/{cpu} runs CPU {cpu}'s timer softirq (PREEMPT_RT): timers expire on this \
             CPU; keep them off with nohz_full={cpu} and timer migration \
             (kernel.timer_migration=1)."
        ),
        "irq" => {
            let (n, name) = rest.split_once('-').unwrap_or((rest, ""));
            format!(
                "{comm} is the threaded handler of IRQ {n}{}: move the IRQ off the CPU \
                 (/proc/irq/{n}/smp_affinity_list, or `rtlab tune`) or give the thread a \
                 priority below the measuring thread's (chrt -p).",
                if name.is_empty() {
                    String::new()
                } else {
                    format!(" ({name})")
                }
            )
        }
        "kworker" => "A kworker runs workqueue items: keep unbound work off the CPU with \
                      /sys/devices/virtual/workqueue/cpumask (or `rtlab tune`); per-CPU work \
                      comes from whatever queues it there."
            .to_string(),
        "migration" => format!(
            "migration/{cpu} is CPU {cpu}'s stopper thread (task migration, CPU hotplug, \
             stop_machine): something moved tasks or reconfigured CPUs during the run."
        ),
        "watchdog" => format!(
            "watchdog/{cpu} is the soft-lockup watchdog: boot with nowatchdog or leave the CPU \
             out of /proc/sys/kernel/watchdog_cpumask."
        ),
        _ => return None,
    })
}

fn delay(a: &Analysis, ns: u64) -> String {
    if a.exit_from_idle {
        return format!(
            "CPU {} was idle and took {} to wake up for the timer: limit deep C-states — hold \
             /dev/cpu_dma_latency at 0 while measuring (`rtlab tune` does), or boot with \
             processor.max_cstate=1 intel_idle.max_cstate=0; idle=poll is the last resort.",
            a.cpu,
            amount(a, ns)
        );
    }
    let previous = a.previous_irq.as_ref().map_or(String::new(), |p| {
        format!(
            " The IRQ {} was running at the expiry and may account for up to {} us of it.",
            source(p),
            crate::format_us(p.duration_ns)
        )
    });
    let measured = if a.context == Context::Irq || a.timerlat_irq_ns > 0 {
        "started"
    } else {
        "started at most"
    };
    format!(
        "The timer's IRQ handler {measured} {} late with the CPU busy: an IRQs-off or \
         preempt-off section, or the hardware{}; run `rtlab hwlat` to rule out SMIs and \
         firmware.{previous}",
        amount(a, ns),
        if a.stack.is_empty() {
            ""
        } else {
            " (the stack says where the CPU was)"
        }
    )
}

/// Per-CPU vectors with no `/proc/irq/N` to move (x86's names in `irq_noise`).
fn per_cpu_vector(name: &str) -> bool {
    [
        "local_timer",
        "reschedule",
        "call_function",
        "call_function_single",
        "irq_work",
        "thermal_apic",
        "threshold_apic",
        "spurious_apic",
        "error_apic",
        "x86_platform_ipi",
    ]
    .contains(&name)
}

fn irq(a: &Analysis, items: &[Interference], ns: u64) -> String {
    let Some(i) = top(items) else {
        return format!(
            "IRQs took {} before the timerlat thread ran.",
            amount(a, ns)
        );
    };
    let what = format!(
        "IRQs took {} before the timerlat thread ran, most of it {} ({} us)",
        amount(a, ns),
        source(i),
        crate::format_us(i.duration_ns)
    );
    if per_cpu_vector(&i.name) {
        format!(
            "{what}: a per-CPU interrupt that cannot be moved; find who sends it (IPIs from \
             other CPUs, local timers) and keep that work off CPU {}.",
            a.cpu
        )
    } else {
        format!(
            "{what}: move IRQ {} off CPU {} (echo a housekeeping CPU list to \
             /proc/irq/{}/smp_affinity_list, or `rtlab tune`).",
            i.id, a.cpu, i.id
        )
    }
}

fn softirq(a: &Analysis, items: &[Interference], ns: u64) -> String {
    let name = top(items).map_or("", |i| i.name.as_str());
    let what = format!(
        "Softirqs took {} before the timerlat thread ran{}",
        amount(a, ns),
        if name.is_empty() {
            String::new()
        } else {
            format!(", most of it {name}")
        }
    );
    let fix = match name {
        "NET_RX" | "NET_TX" => {
            "network processing on this CPU: move the NIC's IRQs away, or turn on threaded \
             NAPI (echo 1 > /sys/class/net/DEV/threaded) and place its threads elsewhere"
        }
        "TIMER" | "HRTIMER" => {
            "timers expiring on this CPU: keep them off with nohz_full= and timer migration \
             (kernel.timer_migration=1)"
        }
        "RCU" => "RCU callbacks: offload them with rcu_nocbs= on the kernel command line",
        "BLOCK" | "IRQ_POLL" => "block I/O completions: move the disk's IRQs off the CPU",
        "SCHED" => {
            "load balancing: take the CPU out of the scheduler's domains (isolcpus=, or a \
             cpuset without load balancing)"
        }
        "TASKLET" | "HI" => "driver tasklets: move the driver's IRQs off the CPU",
        _ => "move the IRQs that raise them off the CPU",
    };
    format!("{what}: {fix}.")
}

fn thread(a: &Analysis, items: &[Interference], ns: u64) -> String {
    let first = top(items).map_or(String::new(), |i| format!(", first {}", source(i)));
    format!(
        "Other threads ran {} before the timerlat thread{first}: they had its priority or \
         more. Isolate CPU {} (isolcpus=, a cpuset, or `rtlab tune`) and keep the measured \
         CPU's threads below the measuring priority.",
        amount(a, ns),
        a.cpu
    )
}

fn rest(a: &Analysis, ns: u64) -> String {
    format!(
        "{} of the {} is not covered by the tracer's noise events: the scheduler's path to \
         the thread, or events that were not recorded (enable the osnoise events, and check \
         for lost events).",
        amount(a, ns),
        a.context.describe()
    )
}
