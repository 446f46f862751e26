//! The result of `rtlab pi check`, schema `rtlab.pi/1`: does priority inheritance hold on this
//! machine? pi_stress-style inversion groups (a low, a medium and a high real-time thread on
//! one CPU; the low one holds a lock the high one needs while the medium one spins) run once
//! with a priority-inheriting futex and once, as a control, with a plain one; per group, how
//! many inversions the high thread got through within its deadline and how long it waited.
//!
//! Pure data with its verdict: the engine that fills it is `measure::pi`, the table
//! `report::pi`.

use serde::{Deserialize, Serialize};

/// The schema id of a PI check document.
pub const PI_SCHEMA: &str = "rtlab.pi/1";

/// Which lock a run used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PiLockKind {
    /// FUTEX_LOCK_PI / FUTEX_UNLOCK_PI: the owner inherits a waiter's priority.
    FutexPi,
    /// A plain futex wait/wake lock: no inheritance (the control).
    FutexPlain,
}

impl PiLockKind {
    /// How tables name it.
    pub fn label(self) -> &'static str {
        match self {
            PiLockKind::FutexPi => "PI futex",
            PiLockKind::FutexPlain => "plain futex (control)",
        }
    }
}

/// The real-time priorities of each group's threads (SCHED_FIFO).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PiPriorities {
    /// The thread that takes the lock first.
    pub low: u8,
    /// The thread that spins and would starve the low one.
    pub medium: u8,
    /// The thread that needs the lock.
    pub high: u8,
}

/// One inversion group's figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PiGroup {
    /// The CPU its three threads were pinned to.
    pub cpu: u32,
    /// Inversions staged: the high thread blocked on the lock the low one held.
    pub inversions: u64,
    /// Of those, how many the high thread got the lock within the deadline.
    pub in_time: u64,
    /// Of those, how many it did not (the lock was not handed over before the deadline).
    pub missed: u64,
    /// The longest the high thread waited for the lock, ns (capped at the deadline).
    pub max_wait_ns: u64,
    /// The sum of the high thread's waits, ns (mean = sum / inversions).
    pub total_wait_ns: u64,
}

/// The groups of one run, all with one kind of lock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PiRun {
    /// The lock used.
    pub lock: PiLockKind,
    /// How long the run lasted, ns.
    pub elapsed_ns: u64,
    /// One entry per group.
    pub groups: Vec<PiGroup>,
}

impl PiRun {
    /// All inversions of the run.
    pub fn inversions(&self) -> u64 {
        self.groups.iter().map(|g| g.inversions).sum()
    }

    /// All missed deadlines of the run.
    pub fn missed(&self) -> u64 {
        self.groups.iter().map(|g| g.missed).sum()
    }

    /// The longest wait of any group, ns.
    pub fn max_wait_ns(&self) -> u64 {
        self.groups.iter().map(|g| g.max_wait_ns).max().unwrap_or(0)
    }
}

/// What the check concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PiVerdict {
    /// Every PI inversion was resolved within its deadline, and the control caught inversions.
    Held,
    /// Every PI inversion was resolved in time, but the control caught none: the check could
    /// not tell inheritance apart from luck here.
    HeldUnconfirmed,
    /// A high thread on a PI lock missed its deadline.
    Missed,
}

/// The whole check (`rtlab.pi/1`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PiCheck {
    /// Always [`PI_SCHEMA`].
    pub schema: String,
    /// The thread priorities used.
    pub priorities: PiPriorities,
    /// The high thread's deadline for each lock attempt, ns.
    pub deadline_ns: u64,
    /// How long the low thread holds the lock (its own CPU time), ns.
    pub hold_ns: u64,
    /// The run with the priority-inheriting lock.
    pub pi: PiRun,
    /// The control run with the plain lock.
    pub control: PiRun,
    /// The conclusion, derived from the two runs by [`PiCheck::judge`].
    pub verdict: PiVerdict,
}

impl PiCheck {
    /// The verdict two runs give: any PI miss fails; a control that caught nothing leaves
    /// the pass unconfirmed.
    pub fn judge(pi: &PiRun, control: &PiRun) -> PiVerdict {
        if pi.missed() > 0 || pi.inversions() == 0 {
            PiVerdict::Missed
        } else if control.missed() == 0 {
            PiVerdict::HeldUnconfirmed
        } else {
            PiVerdict::Held
        }
    }

    /// The document as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(lock: PiLockKind, inversions: u64, missed: u64) -> PiRun {
        PiRun {
            lock,
            elapsed_ns: 1,
            groups: vec![PiGroup {
                cpu: 0,
                inversions,
                in_time: inversions - missed,
                missed,
                max_wait_ns: 5,
                total_wait_ns: 9,
            }],
        }
    }

    #[test]
    fn the_verdict_needs_pi_without_misses_and_a_control_with_some() {
        let pi = run(PiLockKind::FutexPi, 100, 0);
        let caught = run(PiLockKind::FutexPlain, 5, 5);
        let none = run(PiLockKind::FutexPlain, 5, 0);
        assert_eq!(PiCheck::judge(&pi, &caught), PiVerdict::Held);
        assert_eq!(PiCheck::judge(&pi, &none), PiVerdict::HeldUnconfirmed);
        let bad = run(PiLockKind::FutexPi, 100, 1);
        assert_eq!(PiCheck::judge(&bad, &caught), PiVerdict::Missed);
        assert_eq!(
            PiCheck::judge(&run(PiLockKind::FutexPi, 0, 0), &caught),
            PiVerdict::Missed
        );
    }

    #[test]
    fn the_document_round_trips() {
        let pi = run(PiLockKind::FutexPi, 100, 0);
        let control = run(PiLockKind::FutexPlain, 5, 5);
        let check = PiCheck {
            schema: PI_SCHEMA.to_string(),
            priorities: PiPriorities {
                low: 20,
                medium: 30,
                high: 40,
            },
            deadline_ns: 100_000_000,
            hold_ns: 1_000_000,
            verdict: PiCheck::judge(&pi, &control),
            pi,
            control,
        };
        let json = check.to_json();
        assert!(json.contains("\"lock\": \"futex-pi\""), "{json}");
        assert!(json.contains("\"verdict\": \"held\""), "{json}");
        let back: PiCheck = serde_json::from_str(&json).unwrap();
        assert_eq!(back, check);
    }
}
