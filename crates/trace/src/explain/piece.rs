//! A piece of a spike's delay: the stretch of time, the phase of the spike it lies in, and
//! what it is attributed to. Attribution makes them; the parts and the phases an explanation
//! keeps are summed from them.

use model::explain::{Agent, Cause, PartKind, Phases};

/// Where in the spike a piece of time lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Phase {
    /// Deadline to the thread arming its timer, when it armed it past the deadline.
    Unarmed,
    /// Deadline (or the arming) to the timer's expiry handling.
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
    pub what: Agent,
    pub start: u64,
    pub end: u64,
}

/// The pieces before the timer fired and while the thread waited, each summed by kind and
/// what, largest first (equal ones in the order they first come).
pub(super) fn phases(pieces: &[Piece]) -> Phases {
    Phases {
        unarmed: causes(pieces, Phase::Unarmed),
        before_fire: causes(pieces, Phase::BeforeFire),
        waiting: causes(pieces, Phase::Waiting),
    }
}

fn causes(pieces: &[Piece], phase: Phase) -> Vec<Cause> {
    let mut sums: Vec<Cause> = Vec::new();
    // Empty pieces too: they place their sum in the order, as they always have.
    for p in pieces.iter().filter(|p| p.phase == phase) {
        match sums
            .iter_mut()
            .find(|c| c.what == p.what && c.kind == p.kind)
        {
            Some(c) => c.duration_ns += p.end - p.start,
            None => sums.push(Cause {
                kind: p.kind,
                what: p.what.clone(),
                duration_ns: p.end - p.start,
            }),
        }
    }
    // Stable: equal sums keep the order they first came in.
    sums.sort_by_key(|c| std::cmp::Reverse(c.duration_ns));
    sums.retain(|c| c.duration_ns > 0);
    sums
}
