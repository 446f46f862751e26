//! The generators, one per file, and [`build`]: the spec item to the running value.
//!
//! - [`cpu`]: duty-cycled busy workers, one per CPU.
//! - [`timer_storm`]: ordinary threads sleeping random sub-millisecond spans.
//! - [`messaging`]: hackbench-like senders and receivers over socket pairs or pipes.
//! - [`memory`]: streaming copies beyond the last-level cache and a page-fault storm.
//! - [`io`]: writes and fsyncs under a size cap.
//! - [`net`]: TCP streams and UDP datagrams over loopback.
//! - [`fork`]: fork, exec and exit of short-lived processes.
//! - [`cmd`]: an external command in its own process group.

pub mod cmd;
pub mod cpu;
pub mod fork;
pub mod io;
pub mod memory;
pub mod messaging;
pub mod net;
pub mod timer_storm;

use model::load::{GeneratorKind, GeneratorSpec};

use crate::Generator;

/// The generator for one spec item, not yet started.
pub fn build(spec: &GeneratorSpec) -> Box<dyn Generator> {
    let item = spec.to_string();
    match &spec.kind {
        GeneratorKind::Cpu { percent } => Box::new(cpu::CpuLoad::new(item, *percent)),
        GeneratorKind::TimerStorm { threads } => {
            Box::new(timer_storm::TimerStorm::new(item, *threads))
        }
        GeneratorKind::Messaging {
            groups,
            fds,
            transport,
            tasks,
        } => Box::new(messaging::Messaging::new(
            item, *groups, *fds, *transport, *tasks,
        )),
        GeneratorKind::Memory { bytes, workers } => {
            Box::new(memory::MemoryLoad::new(item, *bytes, *workers))
        }
        GeneratorKind::Io { bytes, workers } => Box::new(io::IoLoad::new(item, *bytes, *workers)),
        GeneratorKind::Net { protocols, flows } => {
            Box::new(net::NetLoad::new(item, *protocols, *flows))
        }
        GeneratorKind::Fork { workers } => Box::new(fork::ForkStorm::new(item, *workers)),
        GeneratorKind::Cmd { command } => Box::new(cmd::CmdLoad::new(item, command.clone())),
    }
}
