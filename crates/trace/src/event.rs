//! The events an explanation needs, decoded from an event line's fields: the scheduler's
//! switches, wake-ups and migrations; hard and soft interrupts; hrtimers; IPIs; workqueue items;
//! the preemptirq events where a kernel has them; trace markers; and the function tracers'
//! calls and returns (`function`, `funcgraph_entry`, `funcgraph_exit`).
//!
//! Both print formats are read: the kernel's own `key=value` (`trace`, `trace_pipe`,
//! `trace-cmd report -R`) and trace-cmd's plugin formats (`bash:31634 [120] R ==> ...` for
//! sched_switch, `comm:pid [prio] CPU:001` for wake-ups, `function=hrtimer_wakeup/0x0`).
//! Task names may hold spaces: values run to the next known key.

use crate::line::Event;

mod func;
mod pairs;

use pairs::in_order;
pub use pairs::{Pairs, value};

/// A decoded event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind<'a> {
    /// `sched_switch`: the CPU changed from `prev` to `next`.
    Switch {
        /// The task that stopped running.
        prev: Task<'a>,
        /// Its state (`R`, `R+` preempted; `S`, `D` blocked...).
        prev_state: &'a str,
        /// The task that runs now.
        next: Task<'a>,
    },
    /// `sched_waking` (the wake-up starts, on the waker's CPU).
    Waking {
        /// The task woken.
        task: Task<'a>,
        /// Where it will run, when printed.
        target_cpu: Option<u32>,
    },
    /// `sched_wakeup` / `sched_wakeup_new` (the task is runnable on `target_cpu`).
    Wakeup {
        /// The task woken.
        task: Task<'a>,
        /// Where it will run, when printed.
        target_cpu: Option<u32>,
    },
    /// `sched_migrate_task`.
    Migrate {
        /// The task moved.
        task: Task<'a>,
        /// From.
        orig_cpu: u32,
        /// To.
        dest_cpu: u32,
    },
    /// `irq_handler_entry`.
    IrqEntry {
        /// IRQ number.
        irq: u32,
        /// The handler's name (`virtio1-req.0`, `eth0`).
        name: &'a str,
    },
    /// `irq_handler_exit`.
    IrqExit {
        /// IRQ number.
        irq: u32,
    },
    /// `softirq_entry`.
    SoftirqEntry {
        /// Vector number.
        vec: u32,
        /// Its name (`TIMER`, `NET_RX`, `SCHED`, `RCU`...).
        action: &'a str,
    },
    /// `softirq_exit`.
    SoftirqExit {
        /// Vector number.
        vec: u32,
    },
    /// `softirq_raise`.
    SoftirqRaise {
        /// Vector number.
        vec: u32,
    },
    /// `hrtimer_start`: a timer armed, to expire at `expires_ns`.
    HrtimerStart {
        /// The timer.
        hrtimer: Timer<'a>,
        /// Its callback (`hrtimer_wakeup` for a sleeping task).
        function: &'a str,
        /// Expiry on the timer's clock, ns.
        expires_ns: u64,
    },
    /// `hrtimer_expire_entry`: the callback starts; `now_ns` is the expiry handling time.
    HrtimerExpireEntry {
        /// The timer.
        hrtimer: Timer<'a>,
        /// Its callback.
        function: &'a str,
        /// The clock's time when the expiry was handled, ns.
        now_ns: u64,
    },
    /// `hrtimer_expire_exit`.
    HrtimerExpireExit {
        /// The timer.
        hrtimer: Timer<'a>,
    },
    /// `local_timer_entry` / `local_timer_exit` (x86's timer vector) and similar
    /// `irq_vectors` events: an architecture interrupt outside irq_handler_*.
    VectorEntry {
        /// The event's name without `_entry` (`local_timer`, `reschedule`, `call_function`).
        what: &'a str,
    },
    /// The matching exit.
    VectorExit {
        /// See [`Kind::VectorEntry`].
        what: &'a str,
    },
    /// `ipi_entry` / `ipi_send_cpu` / `ipi_raise` ...: inter-processor interrupts.
    Ipi {
        /// The event's name.
        what: &'a str,
    },
    /// `workqueue_execute_start`.
    WorkStart {
        /// The work function.
        function: &'a str,
    },
    /// `workqueue_execute_end`.
    WorkEnd,
    /// `irq_disable` (preemptirq): interrupts went off, at `caller`.
    IrqsOff {
        /// Where.
        caller: &'a str,
    },
    /// `irq_enable`.
    IrqsOn {
        /// Where.
        caller: &'a str,
    },
    /// `preempt_disable`.
    PreemptOff {
        /// Where.
        caller: &'a str,
    },
    /// `preempt_enable`.
    PreemptOn {
        /// Where.
        caller: &'a str,
    },
    /// An NMI handler ran (`nmi:nmi_handler`, printed after it returned).
    Nmi {
        /// The handler (`perf_event_nmi_handler`).
        handler: &'a str,
        /// How long it ran, ns.
        delta_ns: u64,
    },
    /// A `trace_marker` write (`tracing_mark_write: TEXT`, trace-cmd's `print`).
    Marker {
        /// The text written.
        text: &'a str,
    },
    /// The function tracer's entry (`function`): a traced kernel function was called.
    Function {
        /// The function (`do_nanosleep`).
        func: Func<'a>,
        /// Its caller; `Func::Name("")` where the trace does not show it (trace-cmd 3.3
        /// prints none by default).
        parent: Func<'a>,
    },
    /// The function_graph tracer's entry (`funcgraph_entry`): a function was entered at call
    /// depth `depth`.
    GraphEntry {
        /// The function.
        func: Func<'a>,
        /// Its depth in the graph (0 outermost).
        depth: u32,
        /// How long it ran, when the entry stands for the whole call: trace-cmd prints a call
        /// that returned before the next event as one leaf line (`1.500 us |  func();`).
        leaf_ns: Option<u64>,
    },
    /// The function_graph tracer's return (`funcgraph_exit`) from the call at `depth`.
    GraphExit {
        /// Its depth in the graph.
        depth: u32,
        /// How long the call ran, ns, when the record or line gives it.
        duration_ns: Option<u64>,
    },
    /// Any other event, or one whose fields did not decode.
    Other,
}

/// An hrtimer as an event names it: its (hashed) address as a text trace prints it, or the
/// address a binary record holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timer<'a> {
    /// As printed (`0000000009a021c4`, trace-cmd's `0xffff888627c1c6f8`).
    Text(&'a str),
    /// As recorded.
    Addr(u64),
}

impl Timer<'_> {
    /// The same number for the same timer within one trace, whichever way it is named: the
    /// printed hex read as the address (other text hashed), so no string is kept per timer.
    #[inline]
    pub fn key(&self) -> u64 {
        match *self {
            Timer::Addr(a) => a,
            Timer::Text(t) => {
                let hex = t.strip_prefix("0x").unwrap_or(t);
                u64::from_str_radix(hex, 16).unwrap_or_else(|_| {
                    use std::hash::{BuildHasher, BuildHasherDefault};
                    BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
                        .hash_one(t)
                        | (1 << 63)
                })
            }
        }
    }
}

impl std::fmt::Display for Timer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Timer::Text(t) => f.write_str(t),
            Timer::Addr(a) => write!(f, "0x{a:x}"),
        }
    }
}

/// A kernel function as an event names it: by name, or by address where the recording holds
/// no symbol for it (shown as trace-cmd shows it, `0xffffffff81234560`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func<'a> {
    /// Its symbol.
    Name(&'a str),
    /// Its address.
    Addr(u64),
}

impl std::fmt::Display for Func<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Func::Name(n) => f.write_str(n),
            Func::Addr(a) => write!(f, "0x{a:x}"),
        }
    }
}

/// A task as an event names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Task<'a> {
    /// Its name.
    pub comm: &'a str,
    /// Its pid (thread id).
    pub pid: u32,
    /// The kernel's priority: 0..=99 real-time (lower is more urgent: 99 - rt_priority for
    /// FIFO/RR), 100..=139 normal, -1 deadline.
    pub prio: i32,
}

impl Task<'_> {
    /// A person's view of the priority: `FIFO/RR 99`, `normal (nice 0)`, `deadline`.
    pub fn describe_prio(&self) -> String {
        match self.prio {
            i32::MIN => "priority unknown".to_string(),
            p if p < 0 => "SCHED_DEADLINE".to_string(),
            p @ 0..=99 => format!("real-time priority {}", 99 - p),
            p => format!("normal (nice {})", p - 120),
        }
    }

    /// Whether it runs in a real-time class (FIFO, RR, deadline).
    pub fn is_rt(&self) -> bool {
        self.prio < 100
    }
}

/// Decodes `event`'s fields; [`Kind::Other`] when the event is not one rtlab reads or its
/// fields do not decode.
pub fn decode<'a>(event: &Event<'a>) -> Kind<'a> {
    decode_fields(event.name, event.fields).unwrap_or(Kind::Other)
}

fn decode_fields<'a>(name: &'a str, f: &'a str) -> Option<Kind<'a>> {
    match name {
        "sched_switch" | "sched_waking" | "sched_wakeup" | "sched_wakeup_new"
        | "sched_migrate_task" => sched_fields(name, f),
        "irq_handler_entry" | "irq_handler_exit" | "softirq_entry" | "softirq_exit"
        | "softirq_raise" | "nmi_handler" => interrupt_fields(name, f),
        "hrtimer_start" | "hrtimer_expire_entry" | "hrtimer_expire_exit" => timer_fields(name, f),
        "function" | "funcgraph_entry" | "funcgraph_exit" => func::fields(name, f),
        _ => other_fields(name, f),
    }
}

/// The scheduler's events: switches, wake-ups, migrations.
fn sched_fields<'a>(name: &'a str, f: &'a str) -> Option<Kind<'a>> {
    Some(match name {
        "sched_switch" => switch(f)?,
        "sched_waking" => {
            let (task, target_cpu) = wakeup(f)?;
            Kind::Waking { task, target_cpu }
        }
        "sched_migrate_task" => {
            let p = Pairs::of(f);
            Kind::Migrate {
                task: Task {
                    comm: p.get("comm")?,
                    pid: p.num("pid")?,
                    prio: p.num("prio")?,
                },
                orig_cpu: cpu_number(p.get("orig_cpu")?)?,
                dest_cpu: cpu_number(p.get("dest_cpu")?)?,
            }
        }
        _ => {
            let (task, target_cpu) = wakeup(f)?;
            Kind::Wakeup { task, target_cpu }
        }
    })
}

/// Interrupt handlers, softirqs and NMIs.
fn interrupt_fields<'a>(name: &'a str, f: &'a str) -> Option<Kind<'a>> {
    Some(match name {
        "irq_handler_entry" => {
            let p = Pairs::of(f);
            Kind::IrqEntry {
                irq: p.num("irq")?,
                name: p.get("name")?,
            }
        }
        "irq_handler_exit" => Kind::IrqExit {
            irq: Pairs::of(f).num("irq")?,
        },
        "nmi_handler" => {
            // `perf_event_nmi_handler() delta_ns: 4470 handled: 1` (%ps of the handler).
            let (head, rest) = f.split_once("delta_ns:")?;
            let handler = head.trim().trim_end_matches("()");
            let handler = handler.split('+').next().unwrap_or(handler);
            Kind::Nmi {
                handler,
                delta_ns: rest.split_whitespace().next()?.parse().ok()?,
            }
        }
        _ => {
            // `vec=7 [action=SCHED]`
            let rest = f.strip_prefix("vec=")?;
            let vec = rest.split_whitespace().next()?.parse().ok()?;
            // The kernel's layout read straight (its first `action=`), any other searched.
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            let action = match rest[digits..].strip_prefix(" [action=") {
                Some(a) => a,
                None => f.split_once("action=").map_or("", |(_, a)| a),
            }
            .trim_end_matches(']');
            match name {
                "softirq_entry" => Kind::SoftirqEntry { vec, action },
                "softirq_exit" => Kind::SoftirqExit { vec },
                _ => Kind::SoftirqRaise { vec },
            }
        }
    })
}

/// hrtimers started and expiring.
fn timer_fields<'a>(name: &'a str, f: &'a str) -> Option<Kind<'a>> {
    // The kernel's layout, read straight; any other as pairs.
    match name {
        "hrtimer_start" => {
            if let Some([hrtimer, function, expires, soft]) =
                in_order(f, ["hrtimer", "function", "expires", "softexpires"])
            {
                return Some(Kind::HrtimerStart {
                    hrtimer: Timer::Text(hrtimer),
                    function: function_name(function),
                    expires_ns: soft.parse().or_else(|_| expires.parse()).ok()?,
                });
            }
        }
        "hrtimer_expire_entry" => {
            if let Some([hrtimer, function, now]) = in_order(f, ["hrtimer", "function", "now"]) {
                return Some(Kind::HrtimerExpireEntry {
                    hrtimer: Timer::Text(hrtimer),
                    function: function_name(function),
                    now_ns: now.parse().ok()?,
                });
            }
        }
        _ => {
            if let Some([hrtimer]) = in_order(f, ["hrtimer"]) {
                return Some(Kind::HrtimerExpireExit {
                    hrtimer: Timer::Text(hrtimer),
                });
            }
        }
    }
    let p = Pairs::of(f);
    Some(match name {
        "hrtimer_start" => Kind::HrtimerStart {
            hrtimer: Timer::Text(p.get("hrtimer")?),
            function: function_name(p.get("function")?),
            // The deadline asked for is the soft expiry (the hard one adds the slack).
            expires_ns: p.num("softexpires").or_else(|| p.num("expires"))?,
        },
        "hrtimer_expire_entry" => Kind::HrtimerExpireEntry {
            hrtimer: Timer::Text(p.get("hrtimer")?),
            function: function_name(p.get("function")?),
            now_ns: p.num("now")?,
        },
        _ => Kind::HrtimerExpireExit {
            hrtimer: Timer::Text(p.get("hrtimer")?),
        },
    })
}

/// Workqueue items, preemptirq sections, markers, IPIs and x86's interrupt vectors.
fn other_fields<'a>(name: &'a str, f: &'a str) -> Option<Kind<'a>> {
    Some(match name {
        "workqueue_execute_start" => {
            // kernel: `work struct 0x...: function foo`; the same in trace-cmd.
            let function = f
                .rsplit_once("function ")
                .map(|(_, func)| func.trim())
                .or_else(|| value(f, "function"))?;
            Kind::WorkStart { function }
        }
        "workqueue_execute_end" => Kind::WorkEnd,
        "irq_disable" | "irq_enable" | "preempt_disable" | "preempt_enable" => {
            let caller = value(f, "caller").unwrap_or("");
            match name {
                "irq_disable" => Kind::IrqsOff { caller },
                "irq_enable" => Kind::IrqsOn { caller },
                "preempt_disable" => Kind::PreemptOff { caller },
                _ => Kind::PreemptOn { caller },
            }
        }
        "tracing_mark_write" => Kind::Marker { text: f.trim_end() },
        "print" | "bprint" => Kind::Marker {
            text: f.strip_prefix("tracing_mark_write:").unwrap_or(f).trim(),
        },
        n if n.starts_with("ipi_") => Kind::Ipi { what: n },
        n if n.ends_with("_entry") && is_vector(n) => Kind::VectorEntry {
            what: &n[..n.len() - "_entry".len()],
        },
        n if n.ends_with("_exit") && is_vector(n) => Kind::VectorExit {
            what: &n[..n.len() - "_exit".len()],
        },
        _ => return None,
    })
}

/// x86's `irq_vectors` events (`local_timer_entry`, `reschedule_exit`...).
pub(crate) fn is_vector(name: &str) -> bool {
    [
        "local_timer",
        "reschedule",
        "call_function",
        "call_function_single",
        "irq_work",
        "x86_platform_ipi",
        "thermal_apic",
        "deferred_error_apic",
        "threshold_apic",
        "error_apic",
        "spurious_apic",
    ]
    .iter()
    .any(|v| {
        name.strip_prefix(v)
            .is_some_and(|r| r == "_entry" || r == "_exit")
    })
}

/// `hrtimer_wakeup/0x0` (trace-cmd) or `hrtimer_wakeup` → `hrtimer_wakeup`.
fn function_name(text: &str) -> &str {
    match text.bytes().position(|c| c == b'/') {
        Some(slash) => &text[..slash],
        None => text,
    }
}

/// sched_switch in either format.
fn switch(f: &str) -> Option<Kind<'_>> {
    const KEYS: [&str; 7] = [
        "prev_comm",
        "prev_pid",
        "prev_prio",
        "prev_state",
        "next_comm",
        "next_pid",
        "next_prio",
    ];
    if f.starts_with("prev_comm=") {
        let v = match in_order(f, KEYS) {
            Some(v) => v,
            None => {
                let p = Pairs::of(f);
                let mut v = [""; 7];
                for (value, key) in v.iter_mut().zip(KEYS) {
                    *value = p.get(key)?;
                }
                v
            }
        };
        let mut state = v[3];
        while let Some(s) = state.strip_suffix("==>") {
            state = s;
        }
        return Some(Kind::Switch {
            prev: Task {
                comm: v[0],
                pid: v[1].parse().ok()?,
                prio: v[2].parse().ok()?,
            },
            prev_state: state.trim_ascii(),
            next: Task {
                comm: v[4],
                pid: v[5].parse().ok()?,
                prio: v[6].parse().ok()?,
            },
        });
    }
    // trace-cmd: `bash:31634 [120] R ==> bash:31637 [120]`
    let (left, right) = f.split_once(" ==> ")?;
    let (prev, state) = plugin_task(left)?;
    let (next, _) = plugin_task(right)?;
    Some(Kind::Switch {
        prev,
        prev_state: state.trim_ascii(),
        next,
    })
}

/// Wake-ups in either format: `comm=X pid=N prio=P [success=1] target_cpu=C` or
/// `X:N [P] [success=1] CPU:C`.
fn wakeup(f: &str) -> Option<(Task<'_>, Option<u32>)> {
    if f.starts_with("comm=") {
        // The kernel's layout since 4.x; older kernels add `success=1` (read as pairs).
        if let Some([comm, pid, prio, target]) = in_order(f, ["comm", "pid", "prio", "target_cpu"])
        {
            let task = Task {
                comm,
                pid: pid.parse().ok()?,
                prio: prio.parse().ok()?,
            };
            return Some((task, target_cpu(Some(target))?));
        }
        let p = Pairs::of(f);
        let task = Task {
            comm: p.get("comm")?,
            pid: p.num("pid")?,
            prio: p.num("prio")?,
        };
        return Some((task, target_cpu(p.get("target_cpu"))?));
    }
    let (task, rest) = plugin_task(f)?;
    let cpu = rest
        .split_once("CPU:")
        .and_then(|(_, c)| c.split_whitespace().next());
    Some((task, target_cpu(cpu)?))
}

/// A CPU field's number; `None` when it is not one or beyond [`model::cpuset::MAX_CPU`]:
/// a CPU no kernel has is a damaged line, and what reads events sizes per-CPU state by it.
fn cpu_number(text: &str) -> Option<u32> {
    text.trim_ascii()
        .parse::<u64>()
        .ok()
        .filter(|&c| c <= u64::from(model::cpuset::MAX_CPU))
        .map(|c| c as u32)
}

/// A wake-up's target CPU: `Some(None)` when absent or not a number (the event's own CPU stands
/// in, as before), `None` (the event does not decode) when it is a number beyond any CPU.
fn target_cpu(text: Option<&str>) -> Option<Option<u32>> {
    let digits = text
        .map(str::trim_ascii)
        .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()));
    match digits {
        Some(d) => cpu_number(d).map(Some),
        None => Some(None),
    }
}

/// `comm:pid [prio] REST` → the task and REST.
fn plugin_task(text: &str) -> Option<(Task<'_>, &str)> {
    let open = text.find(" [")?;
    let close = open + text[open..].find(']')?;
    let (comm, pid) = text[..open].trim_ascii().rsplit_once(':')?;
    Some((
        Task {
            comm,
            pid: pid.parse().ok()?,
            prio: text[open + 2..close].trim_ascii().parse().ok()?,
        },
        &text[close + 1..],
    ))
}

#[cfg(test)]
mod tests;
