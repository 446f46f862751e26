//! Events kept for an explanation: the few an explanation reads, owned, so a window of them
//! outlives the line buffer they were read from.

use model::explain::{Agent, Task as Named};

use crate::event::{Kind, Task};
use crate::line::Event;

/// The priority of a task whose priority the trace does not show (a switch rtlab inferred).
pub(super) const UNKNOWN_PRIO: i32 = i32::MIN;

/// How long a real-time task switched out runnable counts as waiting on its CPU: RT throttling
/// keeps real-time tasks off a CPU for the rest of a period (`sched_rt_period_us`, 1 s by
/// default) at most, and a task that left the CPU without a traced migration (one recorded on
/// a CPU the trace does not cover) must not make it look throttled for ever.
const THROTTLE_MAX_NS: u64 = 1_000_000_000;

/// The most waiting real-time tasks tracked per CPU (bounded: trace input is hostile).
const THROTTLE_MAX_WAITING: usize = 64;

/// RT throttling as one CPU's switches show it: the real-time tasks switched out runnable
/// there and not run since (with when), and whether the CPU runs an ordinary task (or the idle
/// task) while one of them waits, which only RT throttling (or, since 6.12, the fair server)
/// does. The waiting task need not be the one switched out for the ordinary task: a
/// throttled CPU may first run the real-time thread whose wake-up preempted the hog, and go
/// to an ordinary task when that thread sleeps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Throttle {
    waiting: Vec<(u32, u64)>,
    /// Whether the CPU is throttled now.
    pub throttled: bool,
}

impl Throttle {
    /// A switch at `ts_ns` from `prev` (left in `prev_state`) to `next`.
    pub(super) fn switch(
        &mut self,
        ts_ns: u64,
        prev: (i32, u32),
        prev_state: &str,
        next: (i32, u32),
    ) {
        let real_time = |prio: i32| prio < 100 && prio != UNKNOWN_PRIO;
        let (prev_prio, prev_pid) = prev;
        let (next_prio, next_pid) = next;
        self.waiting.retain(|&(pid, since)| {
            pid != next_pid && ts_ns.saturating_sub(since) < THROTTLE_MAX_NS
        });
        if real_time(prev_prio)
            && prev_pid != 0
            && prev_state.starts_with('R')
            && self.waiting.len() < THROTTLE_MAX_WAITING
        {
            self.waiting.push((prev_pid, ts_ns));
        }
        self.throttled = next_prio >= 100 && next_prio != UNKNOWN_PRIO && !self.waiting.is_empty();
    }

    /// `pid` was woken (so it was not runnable) or migrated away: it no longer waits here.
    pub(super) fn gone(&mut self, pid: u32) {
        self.waiting.retain(|&(p, _)| p != pid);
        if self.waiting.is_empty() {
            self.throttled = false;
        }
    }
}

/// A task, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskRef {
    /// Name.
    pub comm: String,
    /// Pid.
    pub pid: u32,
    /// Kernel priority (0..=99 real-time, lower is more urgent; 100..=139 normal).
    pub prio: i32,
}

impl From<&Task<'_>> for TaskRef {
    fn from(t: &Task<'_>) -> TaskRef {
        TaskRef {
            comm: t.comm.to_string(),
            pid: t.pid,
            prio: t.prio,
        }
    }
}

impl TaskRef {
    /// The task as an explanation names it, its priority absent where unknown.
    pub fn named(&self) -> Named {
        Named {
            comm: self.comm.clone(),
            pid: self.pid,
            prio: (self.prio != UNKNOWN_PRIO).then_some(self.prio),
        }
    }

    /// Whether the task is an IRQ thread (`irq/41-eth0`).
    pub fn is_irq_thread(&self) -> bool {
        self.comm.starts_with("irq/")
    }
}

/// What an explanation reads of an event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum What {
    /// The CPU switched tasks.
    Switch {
        /// From.
        prev: TaskRef,
        /// Its state as printed.
        prev_state: String,
        /// To.
        next: TaskRef,
    },
    /// A task was woken (`sched_waking` or `sched_wakeup`).
    Woken {
        /// Which.
        task: TaskRef,
        /// The CPU it will run on, when printed.
        target_cpu: Option<u32>,
    },
    /// A task moved between CPUs.
    Migrate {
        /// Which.
        pid: u32,
        /// From.
        from: u32,
        /// To.
        to: u32,
    },
    /// An interrupt handler (or an architecture vector) started: `irq 36 virtio1-req.0`.
    IrqIn(Agent),
    /// One ended.
    IrqOut,
    /// A softirq started: `softirq TIMER`.
    SoftIn(Agent),
    /// One ended.
    SoftOut,
    /// An hrtimer's expiry was handled.
    TimerFired {
        /// Timer address.
        hrtimer: String,
        /// Callback.
        function: String,
        /// Its clock's time, ns.
        now_ns: u64,
    },
    /// An hrtimer was armed.
    TimerArmed {
        /// Timer address.
        hrtimer: String,
        /// Callback.
        function: String,
        /// Expiry, ns on the timer's clock.
        expires_ns: u64,
    },
    /// A trace marker.
    Marker(String),
    /// A softirq was raised (`softirq_raise`): its name (`TIMER`).
    SoftRaise(String),
    /// Interrupts went off (the preemptirq tracepoint `irq_disable`), at this caller.
    IrqsOff(String),
    /// Interrupts went back on (`irq_enable`).
    IrqsOn,
    /// A traced kernel function was called (the function tracer, function_graph's entry).
    Call {
        /// The function.
        func: String,
        /// Its depth in function_graph's graph (none for the function tracer).
        depth: Option<u32>,
        /// How long it ran, when the entry stands for the whole call (a leaf).
        ns: Option<u64>,
    },
    /// function_graph returned from the call at `depth`, after `ns` where given.
    Return {
        /// The call's depth.
        depth: u32,
        /// How long it ran, ns.
        ns: Option<u64>,
    },
    /// Anything else (it still shows the CPU was running traced code).
    Other(String),
}

/// The kernel's name of softirq `vec` (`softirq_to_name` in kernel/softirq.c), else the
/// number.
fn softirq_name(vec: u32) -> String {
    const NAMES: [&str; 10] = [
        "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER",
        "RCU",
    ];
    NAMES
        .get(vec as usize)
        .map_or_else(|| vec.to_string(), |n| (*n).to_string())
}

/// A function tracer's call or return.
fn function_what(kind: &Kind<'_>) -> Option<What> {
    Some(match kind {
        Kind::Function { func, .. } => What::Call {
            func: func.to_string(),
            depth: None,
            ns: None,
        },
        Kind::GraphEntry {
            func,
            depth,
            leaf_ns,
        } => What::Call {
            func: func.to_string(),
            depth: Some(*depth),
            ns: *leaf_ns,
        },
        Kind::GraphExit { depth, duration_ns } => What::Return {
            depth: *depth,
            ns: *duration_ns,
        },
        _ => return None,
    })
}

/// An event kept for an explanation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ev {
    /// Trace clock, ns.
    pub ts_ns: u64,
    /// CPU.
    pub cpu: u32,
    /// The running task's pid.
    pub pid: u32,
    /// The running task's name.
    pub task: String,
    /// Whether rtlab inferred this event (a switch the trace does not show).
    pub inferred: bool,
    /// Recorded in a hard or soft interrupt (flags column), when the trace has flags.
    pub in_irq: Option<bool>,
    /// Interrupts were off (flags column), when the trace has flags.
    pub irqs_off: Option<bool>,
    /// What happened.
    pub what: What,
}

impl Ev {
    /// Keeps `event` (decoded as `kind`).
    pub fn new(event: &Event<'_>, kind: &Kind<'_>) -> Ev {
        let what = match kind {
            Kind::Switch {
                prev,
                prev_state,
                next,
            } => What::Switch {
                prev: prev.into(),
                prev_state: prev_state.to_string(),
                next: next.into(),
            },
            Kind::Waking { task, target_cpu } | Kind::Wakeup { task, target_cpu } => What::Woken {
                task: task.into(),
                target_cpu: *target_cpu,
            },
            Kind::Migrate {
                task,
                orig_cpu,
                dest_cpu,
            } => What::Migrate {
                pid: task.pid,
                from: *orig_cpu,
                to: *dest_cpu,
            },
            Kind::IrqEntry { irq, name } => What::IrqIn(Agent::Irq {
                irq: *irq,
                name: name.to_string(),
            }),
            Kind::VectorEntry { what } => What::IrqIn(Agent::Vector {
                name: what.to_string(),
            }),
            Kind::IrqExit { .. } | Kind::VectorExit { .. } => What::IrqOut,
            Kind::SoftirqEntry { action, vec } => What::SoftIn(Agent::Softirq {
                name: if action.is_empty() {
                    vec.to_string()
                } else {
                    action.to_string()
                },
            }),
            Kind::SoftirqExit { .. } => What::SoftOut,
            Kind::HrtimerExpireEntry {
                hrtimer,
                function,
                now_ns,
            } => What::TimerFired {
                hrtimer: hrtimer.to_string(),
                function: function.to_string(),
                now_ns: *now_ns,
            },
            Kind::HrtimerStart {
                hrtimer,
                function,
                expires_ns,
            } => What::TimerArmed {
                hrtimer: hrtimer.to_string(),
                function: function.to_string(),
                expires_ns: *expires_ns,
            },
            Kind::Marker { text } => What::Marker(text.to_string()),
            Kind::SoftirqRaise { vec } => What::SoftRaise(softirq_name(*vec)),
            Kind::IrqsOff { caller } => What::IrqsOff(caller.to_string()),
            Kind::IrqsOn { .. } => What::IrqsOn,
            _ => function_what(kind).unwrap_or_else(|| What::Other(event.name.to_string())),
        };
        Ev {
            ts_ns: event.ts_ns,
            cpu: event.cpu,
            pid: event.pid,
            task: event.task.to_string(),
            inferred: false,
            in_irq: event.flags.map(|f| f.hardirq || f.softirq || f.nmi),
            irqs_off: event.flags.map(|f| f.irqs_off),
            what,
        }
    }
}
