//! A piece of a spike's delay: the stretch of time, the phase of the spike it lies in, and
//! what it is attributed to. Attribution makes them; the story and the parts are told from
//! them.

use model::explain::PartKind;

/// Where in the spike a piece of time lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Phase {
    /// Deadline to the timer's expiry handling.
    BeforeFire,
    /// Expiry handling to the wake-up.
    Firing,
    /// Wake-up to switch-in.
    Waiting,
    /// Switch-in to the clock read.
    Returning,
}

/// A piece of the delay.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Piece {
    pub phase: Phase,
    pub kind: PartKind,
    pub what: String,
    pub start: u64,
    pub end: u64,
}
