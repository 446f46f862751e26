//! The clocks: CLOCK_MONOTONIC reads and absolute sleeps for the sampler (the only calls a
//! measuring thread makes in its loop), the wall clock for timestamps, and for load
//! generators a thread's CPU time and relative sleeps.

use std::time::SystemTime;

const NS_PER_SEC: u64 = 1_000_000_000;

/// Nanoseconds on `clock`; `None` if the kernel refuses it (a CPU clock of a process that is
/// gone).
#[inline(always)]
pub(crate) fn read_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * NS_PER_SEC + ts.tv_nsec as u64)
}

/// `ns` nanoseconds as a timespec. The seconds saturate at `i32::MAX` (68 years), which fits
/// every `time_t` rtlab is built for: 64-bit, and the 32-bit one of 32-bit ARM.
#[inline(always)]
fn timespec(ns: u64) -> libc::timespec {
    let secs = (ns / NS_PER_SEC).min(i32::MAX as u64);
    libc::timespec {
        // Lossless: `secs` fits in i32, and time_t is i32 or i64.
        tv_sec: secs as _,
        tv_nsec: (ns % NS_PER_SEC) as _,
    }
}

/// Nanoseconds on CLOCK_MONOTONIC (served by the vDSO: no system call on common platforms).
#[inline(always)]
pub fn monotonic_ns() -> u64 {
    // CLOCK_MONOTONIC always exists on Linux.
    read_ns(libc::CLOCK_MONOTONIC).unwrap_or(0)
}

/// CPU time this process has used, ns (CLOCK_PROCESS_CPUTIME_ID: every thread's, those that
/// have ended included); 0 when the clock cannot be read.
pub fn process_cpu_ns() -> u64 {
    read_ns(libc::CLOCK_PROCESS_CPUTIME_ID).unwrap_or(0)
}

/// Sleeps until CLOCK_MONOTONIC reaches `deadline_ns` (an absolute deadline, so sleep errors
/// never accumulate). Returns early only if a signal handler interrupted the sleep; callers
/// block signals in measuring threads, and re-sleeping is safe because the deadline is absolute.
#[inline(always)]
pub fn sleep_until_monotonic(deadline_ns: u64) {
    let ts = timespec(deadline_ns);
    loop {
        // SAFETY: `ts` is a valid timespec; the remaining-time pointer may be null for
        // TIMER_ABSTIME sleeps.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if rc != libc::EINTR {
            return;
        }
    }
}

/// Nanoseconds of CPU time the calling thread has used (CLOCK_THREAD_CPUTIME_ID: user plus
/// system time, a system call on most platforms). Load generators use it to hold a duty cycle
/// in CPU time rather than wall time, and to report what they consumed.
pub fn thread_cpu_ns() -> u64 {
    // The calling thread's CPU clock always exists on Linux.
    read_ns(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or(0)
}

/// Sleeps for `ns` nanoseconds on CLOCK_MONOTONIC (a relative sleep, as an ordinary
/// application's `nanosleep` is: the timer-storm generator relies on that).
pub fn sleep_ns(ns: u64) {
    let ts = timespec(ns);
    // SAFETY: `ts` is a valid timespec; a null remainder is allowed. An interrupted sleep
    // simply ends early, which is harmless for a load.
    unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &ts, std::ptr::null_mut()) };
}

/// The wall clock now.
pub fn wall_now() -> SystemTime {
    SystemTime::now()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_advances_and_absolute_sleep_waits() {
        let a = monotonic_ns();
        sleep_until_monotonic(a + 2_000_000);
        let b = monotonic_ns();
        assert!(b >= a + 2_000_000, "woke {} ns early", a + 2_000_000 - b);
        // A deadline in the past returns at once.
        sleep_until_monotonic(a);
        assert!(monotonic_ns() >= b);
    }

    #[test]
    fn thread_cpu_time_grows_with_work_not_with_sleep() {
        let a = thread_cpu_ns();
        sleep_ns(20_000_000);
        let b = thread_cpu_ns();
        assert!(b - a < 10_000_000, "sleeping used {} ns of CPU", b - a);
        // Work until the thread clock shows 10 ms of it. Bounded by wall time, generously: on
        // a loaded machine the thread gets only part of each wall-clock millisecond.
        let deadline = monotonic_ns() + 10_000_000_000;
        let mut x = 1u64;
        while thread_cpu_ns() - b < 10_000_000 {
            assert!(
                monotonic_ns() < deadline,
                "10 s of spinning never showed as 10 ms of thread CPU time"
            );
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
    }
}
