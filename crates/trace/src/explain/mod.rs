//! Spike explanations from scheduler, IRQ and timer tracepoints.
//!
//! Two passes over a trace, both streaming: [`scan`] finds every timer wake-up of a sleeping
//! task and gathers per-handler and per-task statistics; [`collect`] keeps the events of the
//! windows around the spikes to explain; [`explain`] splits each spike's delay into parts and
//! phases, as data (`report::story` tells it in words). A run's own capture (small, kept with
//! the run) goes through the same functions. [`stats`] turns the first pass into the
//! whole-trace analyses of `rtlab explain irqs|sched|wakeups`.

mod asleep;
mod attribute;
mod fill;
mod functions;
mod handlers;
mod inside;
mod milestones;
mod owned;
mod piece;
mod preempt;
mod repair;
mod scan;
mod stats;
mod switches;
mod window;

pub use attribute::explain;
pub use milestones::Spike;
pub use owned::{Ev, TaskRef, What};
pub use preempt::Preemption;
pub use scan::{
    HandlerStats, KEEP, OFFSET_WINDOW_NS, Scan, TaskStats, TimerStats, Wakeup, is_break_marker,
    scan, scan_source,
};
pub use stats::{Analysis, stats, summary};
pub use window::{LOOKBACK_NS, Window, WindowSpec, collect, collect_source};

#[cfg(test)]
mod tests;
