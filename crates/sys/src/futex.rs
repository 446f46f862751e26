//! Raw futexes (futex(2)) on a 32-bit word: the priority-inheriting lock operations
//! (`FUTEX_LOCK_PI`, `FUTEX_UNLOCK_PI`) and plain wait/wake, for `rtlab pi check`. Made with the
//! system call, not a C library's mutex, so they behave the same with glibc, musl or a static
//! binary.
//!
//! The PI protocol (Documentation/locking/pi-futex.rst, futex(2)): the word holds the owner's
//! thread id, 0 when free; taking a free lock is a compare-and-swap 0 → tid in user space, and
//! only a contended lock enters the kernel, which records the waiter, boosts the owner to the
//! waiter's priority and hands the lock over on unlock. Every function here is a few atomic
//! operations and at most one system call: no allocation, fit for a measuring loop. Which lock
//! to use and what a timeout means is the caller's.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// How a timed lock attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockOutcome {
    /// The lock is held by the caller.
    Acquired,
    /// The timeout passed first.
    TimedOut,
    /// The kernel refused (the errno): a corrupted word, a dead owner, no PI support.
    Failed(i32),
}

fn futex(word: &AtomicU32, op: libc::c_int, val: u32, timeout: *const libc::timespec) -> i64 {
    // SAFETY: `word` is a live, aligned 32-bit atomic for the duration of the call; `timeout`
    // is null or points at a valid timespec the caller owns; the unused arguments are zero.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op | libc::FUTEX_PRIVATE_FLAG,
            val,
            timeout,
            std::ptr::null::<u32>(),
            0u32,
        ) as i64
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn timespec(d: Duration) -> libc::timespec {
    libc::timespec {
        // A timeout of more than i32::MAX seconds is capped there (time_t may be 32 bits).
        tv_sec: d.as_secs().min(i32::MAX as u64) as _,
        tv_nsec: d.subsec_nanos() as _,
    }
}

/// CLOCK_REALTIME now plus `after`: FUTEX_LOCK_PI's timeout is absolute on that clock.
fn realtime_after(after: Duration) -> libc::timespec {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is valid storage for clock_gettime.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut now) };
    let total = now.tv_nsec as u64 + u64::from(after.subsec_nanos());
    libc::timespec {
        tv_sec: now.tv_sec
            + after.as_secs().min(i32::MAX as u64) as libc::time_t
            + (total / 1_000_000_000) as libc::time_t,
        tv_nsec: (total % 1_000_000_000) as _,
    }
}

/// Takes the priority-inheriting lock `word` for thread `tid` (the caller's, from
/// `sched::current_tid`), waiting at most `timeout`. While the caller waits, the owner runs
/// at the caller's priority if that is higher.
pub fn pi_lock(word: &AtomicU32, tid: u32, timeout: Duration) -> LockOutcome {
    if word
        .compare_exchange(0, tid, Ordering::Acquire, Ordering::Relaxed)
        .is_ok()
    {
        return LockOutcome::Acquired;
    }
    let at = realtime_after(timeout);
    loop {
        if futex(word, libc::FUTEX_LOCK_PI, 0, &at) == 0 {
            return LockOutcome::Acquired;
        }
        match errno() {
            libc::EINTR | libc::EAGAIN => continue,
            libc::ETIMEDOUT => return LockOutcome::TimedOut,
            e => return LockOutcome::Failed(e),
        }
    }
}

/// Releases the priority-inheriting lock `word` held by `tid`: in user space when nobody
/// waits, else through the kernel, which hands it to the highest-priority waiter.
pub fn pi_unlock(word: &AtomicU32, tid: u32) -> Result<(), i32> {
    if word
        .compare_exchange(tid, 0, Ordering::Release, Ordering::Relaxed)
        .is_ok()
    {
        return Ok(());
    }
    if futex(word, libc::FUTEX_UNLOCK_PI, 0, std::ptr::null()) == 0 {
        Ok(())
    } else {
        Err(errno())
    }
}

/// Sleeps while `word` holds `expected`, at most `timeout` (FUTEX_WAIT, relative on
/// CLOCK_MONOTONIC). Returns at once when the word already differs; spurious wake-ups happen,
/// so the caller checks its condition again.
pub fn wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = timespec(timeout);
    futex(word, libc::FUTEX_WAIT, expected, &ts);
}

/// Wakes up to `count` threads sleeping in [`wait`] on `word`.
pub fn wake(word: &AtomicU32, count: u32) {
    futex(word, libc::FUTEX_WAKE, count, std::ptr::null());
}

/// A lock without priority inheritance, on the same word: 0 free, 1 held, 2 held with
/// waiters (Drepper, "Futexes Are Tricky", mutex 2). Waiters sleep in FUTEX_WAIT, and the
/// owner keeps its own priority: the inversion `pi check`'s control run shows.
pub fn plain_lock(word: &AtomicU32, timeout: Duration) -> LockOutcome {
    if word
        .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
        .is_ok()
    {
        return LockOutcome::Acquired;
    }
    let deadline = crate::clock::monotonic_ns().saturating_add(timeout.as_nanos() as u64);
    loop {
        if word.swap(2, Ordering::Acquire) == 0 {
            return LockOutcome::Acquired;
        }
        let now = crate::clock::monotonic_ns();
        if now >= deadline {
            return LockOutcome::TimedOut;
        }
        wait(word, 2, Duration::from_nanos(deadline - now));
    }
}

/// Releases [`plain_lock`], waking one waiter when there are any.
pub fn plain_unlock(word: &AtomicU32) {
    if word.swap(0, Ordering::Release) == 2 {
        wake(word, 1);
    }
}

/// A futex refusal in words, for a one-line error: `op` is the operation (`FUTEX_LOCK_PI`).
pub fn error_text(op: &str, errno: i32) -> String {
    let err = std::io::Error::from_raw_os_error(errno);
    if errno == libc::ENOSYS {
        format!("futex({op}): {err}: this kernel has no PI futexes (CONFIG_FUTEX_PI)")
    } else {
        format!("futex({op}): {err}")
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::sched::current_tid;

    #[test]
    fn a_free_pi_lock_is_taken_in_user_space_and_given_back() {
        let word = AtomicU32::new(0);
        let tid = current_tid();
        assert_eq!(
            pi_lock(&word, tid, Duration::from_millis(10)),
            LockOutcome::Acquired
        );
        assert_eq!(word.load(Ordering::Relaxed), tid);
        pi_unlock(&word, tid).unwrap();
        assert_eq!(word.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_held_pi_lock_times_out_then_is_handed_over() {
        let word = Arc::new(AtomicU32::new(0));
        let tid = current_tid();
        assert_eq!(
            pi_lock(&word, tid, Duration::from_millis(10)),
            LockOutcome::Acquired
        );
        let other = Arc::clone(&word);
        let waiter = std::thread::spawn(move || {
            let me = current_tid();
            let first = pi_lock(&other, me, Duration::from_millis(20));
            let second = pi_lock(&other, me, Duration::from_secs(5));
            if second == LockOutcome::Acquired {
                pi_unlock(&other, me).unwrap();
            }
            (first, second)
        });
        std::thread::sleep(Duration::from_millis(200));
        pi_unlock(&word, tid).unwrap();
        let (first, second) = waiter.join().unwrap();
        assert_eq!(first, LockOutcome::TimedOut);
        assert_eq!(second, LockOutcome::Acquired);
        assert_eq!(word.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn the_plain_lock_excludes_and_times_out() {
        let word = Arc::new(AtomicU32::new(0));
        assert_eq!(
            plain_lock(&word, Duration::from_millis(10)),
            LockOutcome::Acquired
        );
        let other = Arc::clone(&word);
        let waiter = std::thread::spawn(move || {
            let first = plain_lock(&other, Duration::from_millis(20));
            let second = plain_lock(&other, Duration::from_secs(5));
            plain_unlock(&other);
            (first, second)
        });
        std::thread::sleep(Duration::from_millis(200));
        plain_unlock(&word);
        let (first, second) = waiter.join().unwrap();
        assert_eq!(first, LockOutcome::TimedOut);
        assert_eq!(second, LockOutcome::Acquired);
    }
}
