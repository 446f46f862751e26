//! What a part of a spike's delay was, as data: the handler, the task or the state of the CPU
//! the trace names, with the figures that identify it. `report::story` words it; a document
//! written before `rtlab.explain/2` keeps its words ([`Agent::Said`]).

use serde::{Deserialize, Serialize};

/// A task as the trace names it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    /// Its name (`comm`).
    pub comm: String,
    /// Its pid (0: the idle task).
    pub pid: u32,
    /// Its kernel priority (0..=99 real-time, lower is more urgent; 100..=139 normal), when
    /// the trace shows it.
    pub prio: Option<i32>,
}

/// What a part of the delay was: who or what held the CPU, or what the CPU was doing.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Agent {
    /// A device interrupt's handler (`irq_handler_entry`): `irq 36 virtio1-req.0`.
    Irq {
        /// The interrupt number.
        irq: u32,
        /// The handler's name.
        name: String,
    },
    /// An architecture vector's handler (`local_timer_entry`, `reschedule_entry`): its name,
    /// `local_timer`.
    Vector {
        /// The vector's name.
        name: String,
    },
    /// A softirq: its name (`TIMER`, `NET_RX`), or its number where the trace gives no name.
    Softirq {
        /// The name or number.
        name: String,
    },
    /// A task that held the CPU.
    Task(Task),
    /// A fair-scheduled task sharing the CPU with the fair-scheduled thread (their priorities
    /// decide nothing).
    FairShare(Task),
    /// Before the timer fired, the CPU idle: waking from an idle state, or stalled.
    Idle,
    /// Before the timer fired, a task ran with no event traced: interrupts off without a
    /// tracepoint, or the CPU stalled. `irqs_off`: the last event had interrupts off.
    Untraced {
        /// The task running, when known.
        task: Option<Task>,
        /// Interrupts were off at its last event.
        irqs_off: bool,
    },
    /// The thread's timer expiry and its wake-up.
    Expiry,
    /// From the switch-in to the thread reading its clock.
    ClockRead,
    /// No switch in the trace shows what ran.
    NoSwitch,
    /// The switch from the idle task to the thread.
    FromIdle,
    /// The thread itself asleep, in this state as its switch-out printed it (`D`, `S`).
    Asleep {
        /// The state.
        state: String,
    },
    /// What an rtlab before `rtlab.explain/2` stored: words.
    #[serde(untagged)]
    Said(String),
}

impl Task {
    /// A task with its priority known.
    pub fn new(comm: &str, pid: u32, prio: i32) -> Task {
        Task {
            comm: comm.to_string(),
            pid,
            prio: Some(prio),
        }
    }
}
