//! rtlab's trace room: reading kernel traces as text and explaining latency spikes from them.
//!
//! - [`line`]: one line of ftrace (`trace`, `trace_pipe`, per-CPU files) or `trace-cmd report`
//!   text as a borrowed [`line::Line`]: an event (task, pid, CPU, flags, timestamp, name, its
//!   fields), a lost-events marker, a buffer-start marker, a comment, or something else.
//! - [`event`]: the events an explanation needs, decoded from their fields (both the kernel's
//!   `key=value` print formats and trace-cmd's plugin formats).
//! - [`source`]: where events come from, text or binary: the passes take any [`source::Source`].
//! - [`dat`]: a trace-cmd recording (trace.dat) as a source: binary records decoded straight
//!   into events and kinds by the file's own formats.
//! - [`reader`]: a streaming reader over any `BufRead`: one reused line buffer, so a trace larger
//!   than memory still reads.
//! - [`latency`]: the latency tracers' reports (irqsoff, preemptoff, preemptirqsoff, wakeup,
//!   wakeup_rt): the worst section, where it started and ended, the functions in it.
//! - [`hwlat`]: the hwlat tracer's samples (inner/outer latency, NMI counts) per CPU.
//! - [`timerlat`]: the timerlat tracer's own trace, summarised per CPU and context.
//! - [`noise`]: noise interruptions a detector saw, each given its cause (IRQ, softirq, NMI,
//!   thread, or nothing the kernel recorded) and the time each class took.
//! - [`osnoise`]: the osnoise tracer's own trace: per-period summaries and noise events per CPU.
//! - [`run_delay`]: every wait of chosen threads from runnable to running, from wake-up,
//!   preemption and switch events (`rtlab inspect --trace`).
//! - [`explain`]: for a spike (CPU, deadline, wake-up, measuring thread), the timeline from the
//!   timer's expiry to the thread running, and the delay attributed to its parts.
//!
//! Everything here is data in, data out: no clock, and no file system access but reading the
//! file a caller opened.

pub mod dat;
mod error;
pub mod event;
pub mod explain;
mod handoff;
pub mod hwlat;
pub mod latency;
pub mod line;
pub mod noise;
pub mod osnoise;
pub mod reader;
pub mod run_delay;
pub mod source;
mod swar;
pub mod timerlat;

pub use error::ParseError;

/// The first bytes of a trace-cmd recording (`trace.dat`): binary, not the text rtlab reads;
/// `trace-cmd report FILE` turns it into text.
pub const TRACE_CMD_DATA_MAGIC: &[u8] = b"\x17\x08\x44tracing";

/// Whether `head` (a file's first bytes) is a trace-cmd recording.
pub fn is_trace_cmd_data(head: &[u8]) -> bool {
    head.starts_with(TRACE_CMD_DATA_MAGIC)
}
