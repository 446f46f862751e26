//! One inversion group: three SCHED_FIFO threads pinned to one CPU, and the rounds they play.
//!
//! Each round (after pi_stress, rt-tests): the low thread takes the lock, wakes the high
//! thread — which preempts it at once, tries the lock and blocks — then wakes the medium one
//! and works for `hold` of its own CPU time before unlocking. With priority inheritance the
//! low thread runs at the high one's priority while it is waited on, so the medium one cannot
//! preempt it and the high one gets the lock after about `hold`. Without it the medium one
//! spins and starves the low one, and the high one's attempt times out at `deadline`: an
//! inversion caught. The medium thread's spin ends when the high one is done, or at the
//! watchdog (`deadline` + [`GRACE_NS`]) — it never holds the CPU longer.
//!
//! The rounds allocate nothing: atomics, futex calls and clock reads only.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use model::pi::{PiGroup, PiLockKind};
use sys::clock::{monotonic_ns, thread_cpu_ns};
use sys::futex::{self, LockOutcome};

/// How long past the deadline the medium thread may spin before its watchdog stops it.
pub(super) const GRACE_NS: u64 = 10_000_000;

/// How long a waiting thread sleeps before it looks at `stop` again.
const RECHECK: Duration = Duration::from_millis(20);

/// The value of `go_*` that ends the threads.
const FINISHED: u32 = u32::MAX;

/// What a group's threads share.
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) cpu: u32,
    pub(super) kind: PiLockKind,
    /// The high thread's deadline for each attempt, ns.
    pub(super) deadline_ns: u64,
    /// The low thread's CPU time with the lock held, ns.
    pub(super) hold_ns: u64,
    /// No round starts at or after this CLOCK_MONOTONIC time.
    pub(super) end_ns: u64,
    /// No round starts once this many were played.
    pub(super) max_rounds: u64,
    lock: AtomicU32,
    go_high: AtomicU32,
    go_medium: AtomicU32,
    ready: AtomicU32,
    done: AtomicU32,
    stop: AtomicBool,
    inversions: AtomicU64,
    missed: AtomicU64,
    max_wait_ns: AtomicU64,
    total_wait_ns: AtomicU64,
    /// The first setup or kernel error of any of the threads.
    pub(super) error: Mutex<Option<String>>,
}

impl Shared {
    pub(super) fn new(
        cpu: u32,
        kind: PiLockKind,
        deadline_ns: u64,
        hold_ns: u64,
        end_ns: u64,
        max_rounds: u64,
    ) -> Shared {
        Shared {
            cpu,
            kind,
            deadline_ns,
            hold_ns,
            end_ns,
            max_rounds,
            lock: AtomicU32::new(0),
            go_high: AtomicU32::new(0),
            go_medium: AtomicU32::new(0),
            ready: AtomicU32::new(0),
            done: AtomicU32::new(0),
            stop: AtomicBool::new(false),
            inversions: AtomicU64::new(0),
            missed: AtomicU64::new(0),
            max_wait_ns: AtomicU64::new(0),
            total_wait_ns: AtomicU64::new(0),
            error: Mutex::new(None),
        }
    }

    /// Records the first error and stops the group.
    pub(super) fn fail(&self, why: String) {
        if let Ok(mut slot) = self.error.lock()
            && slot.is_none()
        {
            *slot = Some(why);
        }
        self.stop.store(true, Ordering::Release);
        self.finish();
    }

    /// Stops the group without an error (an interrupted check).
    pub(super) fn halt(&self) {
        self.stop.store(true, Ordering::Release);
        self.finish();
    }

    /// Whether the low thread is done and the others were released.
    pub(super) fn finished(&self) -> bool {
        self.go_high.load(Ordering::Acquire) == FINISHED
    }

    /// Releases the high and medium threads for good.
    fn finish(&self) {
        for go in [&self.go_high, &self.go_medium] {
            go.store(FINISHED, Ordering::Release);
            futex::wake(go, 1);
        }
        futex::wake(&self.ready, 1);
    }

    /// The figures so far.
    pub(super) fn figures(&self) -> PiGroup {
        let inversions = self.inversions.load(Ordering::Acquire);
        let missed = self.missed.load(Ordering::Acquire);
        PiGroup {
            cpu: self.cpu,
            inversions,
            in_time: inversions.saturating_sub(missed),
            missed,
            max_wait_ns: self.max_wait_ns.load(Ordering::Acquire),
            total_wait_ns: self.total_wait_ns.load(Ordering::Acquire),
        }
    }

    fn lock(&self, tid: u32, timeout_ns: u64) -> LockOutcome {
        let timeout = Duration::from_nanos(timeout_ns);
        match self.kind {
            PiLockKind::FutexPi => futex::pi_lock(&self.lock, tid, timeout),
            PiLockKind::FutexPlain => futex::plain_lock(&self.lock, timeout),
        }
    }

    fn unlock(&self, tid: u32) -> Result<(), i32> {
        match self.kind {
            PiLockKind::FutexPi => futex::pi_unlock(&self.lock, tid),
            PiLockKind::FutexPlain => {
                futex::plain_unlock(&self.lock);
                Ok(())
            }
        }
    }
}

/// The low thread: drives the rounds.
pub(super) fn low(g: &Shared) {
    let tid = sys::sched::current_tid();
    let mut round: u32 = 0;
    loop {
        if !both_ready(g) {
            break;
        }
        if u64::from(round) >= g.max_rounds || monotonic_ns() >= g.end_ns {
            break;
        }
        g.ready.store(0, Ordering::Release);
        round += 1;
        if g.lock(tid, g.deadline_ns) != LockOutcome::Acquired {
            g.fail(format!(
                "CPU {}: the low thread could not take a free lock",
                g.cpu
            ));
            return;
        }
        // The high thread preempts here and blocks on the lock; then the medium one is woken.
        g.go_high.store(round, Ordering::Release);
        futex::wake(&g.go_high, 1);
        g.go_medium.store(round, Ordering::Release);
        futex::wake(&g.go_medium, 1);
        let until = thread_cpu_ns().saturating_add(g.hold_ns);
        while thread_cpu_ns() < until {
            std::hint::spin_loop();
        }
        if let Err(errno) = g.unlock(tid) {
            g.fail(futex_error("FUTEX_UNLOCK_PI", errno));
            return;
        }
        // Leave the CPU idle as long as the lock was held: rounds back to back would keep it
        // busy at real-time priority and run into real-time throttling, whose pause (50 ms
        // a second by default) would show up as a wait.
        sys::clock::sleep_ns(g.hold_ns);
    }
    g.finish();
}

/// Waits until the high and medium threads wait for the next round; false when stopped.
fn both_ready(g: &Shared) -> bool {
    loop {
        if g.stop.load(Ordering::Acquire) {
            return false;
        }
        let now = g.ready.load(Ordering::Acquire);
        if now >= 2 {
            return true;
        }
        futex::wait(&g.ready, now, RECHECK);
    }
}

/// Says "ready" and waits for the next round's number on `go`; `None` when finished.
fn next_round(g: &Shared, go: &AtomicU32, seen: u32) -> Option<u32> {
    g.ready.fetch_add(1, Ordering::AcqRel);
    futex::wake(&g.ready, 1);
    loop {
        let now = go.load(Ordering::Acquire);
        if now == FINISHED || g.stop.load(Ordering::Acquire) {
            return None;
        }
        if now != seen {
            return Some(now);
        }
        futex::wait(go, now, RECHECK);
    }
}

/// The high thread: blocks on the lock each round and times its wait.
pub(super) fn high(g: &Shared) {
    let tid = sys::sched::current_tid();
    let mut seen = 0;
    while let Some(round) = next_round(g, &g.go_high, seen) {
        seen = round;
        let start = monotonic_ns();
        let outcome = g.lock(tid, g.deadline_ns);
        let waited = monotonic_ns().saturating_sub(start).min(g.deadline_ns);
        match outcome {
            LockOutcome::Acquired => {
                if let Err(errno) = g.unlock(tid) {
                    g.fail(futex_error("FUTEX_UNLOCK_PI", errno));
                    return;
                }
                if waited >= g.deadline_ns {
                    g.missed.fetch_add(1, Ordering::AcqRel);
                }
            }
            LockOutcome::TimedOut => {
                g.missed.fetch_add(1, Ordering::AcqRel);
            }
            LockOutcome::Failed(errno) => {
                g.fail(futex_error("FUTEX_LOCK_PI", errno));
                return;
            }
        }
        g.inversions.fetch_add(1, Ordering::AcqRel);
        g.max_wait_ns.fetch_max(waited, Ordering::AcqRel);
        g.total_wait_ns.fetch_add(waited, Ordering::AcqRel);
        g.done.store(round, Ordering::Release);
    }
}

/// The medium thread: spins while the high one waits, bounded by its watchdog.
pub(super) fn medium(g: &Shared) {
    let mut seen = 0;
    while let Some(round) = next_round(g, &g.go_medium, seen) {
        seen = round;
        let watchdog = monotonic_ns().saturating_add(g.deadline_ns + GRACE_NS);
        while g.done.load(Ordering::Acquire) != round && monotonic_ns() < watchdog {
            std::hint::spin_loop();
        }
    }
}

fn futex_error(op: &str, errno: i32) -> String {
    futex::error_text(op, errno)
}
