//! Trying again: exponential backoff with jitter, the server's `Retry-After` honoured, all
//! within a time budget the caller gives. Only [`Class::Retryable`] failures are retried.
//!
//! The waiting goes through a [`Clock`], so tests run a whole schedule without sleeping.

use std::time::{Duration, Instant};

use crate::error::{Class, PushError};

/// When to try again and for how long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The wait after the first failure; it doubles after each.
    pub first: Duration,
    /// The longest wait between two tries.
    pub cap: Duration,
    /// No try starts, and no wait ends, later than this after the first try started.
    pub budget: Duration,
}

impl RetryPolicy {
    /// `rtlab push`: 0.5 s doubling to 30 s, for a minute.
    pub const PUSH: RetryPolicy = RetryPolicy {
        first: Duration::from_millis(500),
        cap: Duration::from_secs(30),
        budget: Duration::from_secs(60),
    };

    /// The same schedule within `budget` (zero: one try).
    pub fn within(budget: Duration) -> RetryPolicy {
        RetryPolicy {
            budget,
            ..RetryPolicy::PUSH
        }
    }

    /// The wait before try `retry + 2` (after `retry + 1` failures), before jitter:
    /// `first * 2^retry`, at most `cap`.
    pub fn base_delay(&self, retry: u32) -> Duration {
        let factor = 1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX);
        self.first.saturating_mul(factor).min(self.cap)
    }
}

/// Time as the retry loop sees it.
pub trait Clock {
    /// Time since some fixed start.
    fn now(&self) -> Duration;
    /// Waits `d`.
    fn sleep(&mut self, d: Duration);
}

/// The real clock.
#[derive(Debug)]
pub struct RealClock(Instant);

impl Default for RealClock {
    fn default() -> Self {
        RealClock(Instant::now())
    }
}

impl Clock for RealClock {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }
    fn sleep(&mut self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// Jitter: a small generator (xorshift64*), seeded per process. Its quality only spreads
/// boards' retries apart.
#[derive(Clone, Debug)]
pub struct Jitter(u64);

impl Jitter {
    /// Seeded from the time and the process id.
    pub fn from_entropy() -> Jitter {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Jitter::seeded(nanos ^ (u64::from(std::process::id()) << 32))
    }

    /// A fixed sequence (tests).
    pub fn seeded(seed: u64) -> Jitter {
        Jitter(seed | 1)
    }

    /// A wait in [base/2, base] ("equal jitter"): never much shorter than the schedule,
    /// never in step with another board's.
    pub fn spread(&mut self, base: Duration) -> Duration {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let r = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d);
        let half = base / 2;
        let extra_ns = (half.as_nanos() as u64).checked_add(1).map_or(0, |n| r % n);
        half + Duration::from_nanos(extra_ns)
    }
}

/// An upload that did not succeed: the last error and how many tries were made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failed {
    /// The last try's error.
    pub error: PushError,
    /// Tries made.
    pub attempts: u32,
}

/// Calls `attempt` until it succeeds, fails for good, or the budget is spent.
pub fn with_retry<T>(
    policy: &RetryPolicy,
    clock: &mut dyn Clock,
    jitter: &mut Jitter,
    mut attempt: impl FnMut() -> Result<T, PushError>,
) -> Result<T, Failed> {
    let start = clock.now();
    let mut attempts: u32 = 0;
    loop {
        attempts = attempts.saturating_add(1);
        let error = match attempt() {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        if error.class != Class::Retryable {
            return Err(Failed { error, attempts });
        }
        let wait = match error.retry_after {
            Some(asked) => asked,
            None => jitter.spread(policy.base_delay(attempts - 1)),
        };
        let spent = clock.now().saturating_sub(start);
        if spent.saturating_add(wait) >= policy.budget {
            return Err(Failed { error, attempts });
        }
        clock.sleep(wait);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A clock that moves only when slept on, and by `per_try` on each try.
    #[derive(Default)]
    pub(crate) struct FakeClock {
        pub(crate) now: Duration,
        pub(crate) slept: Vec<Duration>,
    }

    impl Clock for FakeClock {
        fn now(&self) -> Duration {
            self.now
        }
        fn sleep(&mut self, d: Duration) {
            self.slept.push(d);
            self.now += d;
        }
    }

    fn err(class: Class) -> PushError {
        PushError::new(class, "http://h", "x")
    }

    #[test]
    fn the_schedule_doubles_to_the_cap() {
        let p = RetryPolicy::PUSH;
        let ms = |r| p.base_delay(r).as_millis();
        assert_eq!(
            [ms(0), ms(1), ms(2), ms(3), ms(6), ms(7), ms(40)],
            [500, 1000, 2000, 4000, 30000, 30000, 30000]
        );
    }

    #[test]
    fn jitter_stays_between_half_and_all_of_the_wait() {
        let mut j = Jitter::seeded(42);
        let base = Duration::from_secs(4);
        let waits: Vec<Duration> = (0..1000).map(|_| j.spread(base)).collect();
        assert!(waits.iter().all(|w| *w >= base / 2 && *w <= base));
        // Spread out, not one value.
        let (lo, hi) = (waits.iter().min().unwrap(), waits.iter().max().unwrap());
        assert!(*hi - *lo > Duration::from_secs(1), "{lo:?}..{hi:?}");
        assert_eq!(j.spread(Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn retryable_failures_are_tried_again_within_the_budget() {
        let mut clock = FakeClock::default();
        let mut tries = 0;
        let r: Result<(), Failed> = with_retry(
            &RetryPolicy::PUSH,
            &mut clock,
            &mut Jitter::seeded(7),
            || {
                tries += 1;
                Err(err(Class::Retryable))
            },
        );
        let failed = r.unwrap_err();
        assert_eq!(failed.attempts, tries);
        // 0.25-0.5, 0.5-1, 1-2, 2-4, 4-8, 8-16, 15-30 s: 6 or 7 waits fit in a minute.
        assert!((6..=8).contains(&tries), "{tries} tries");
        assert!(clock.now < Duration::from_secs(60));
        for (i, w) in clock.slept.iter().enumerate() {
            let base = RetryPolicy::PUSH.base_delay(i as u32);
            assert!(*w >= base / 2 && *w <= base, "wait {i}: {w:?}");
        }
    }

    #[test]
    fn success_after_failures_returns_the_value() {
        let mut clock = FakeClock::default();
        let mut tries = 0;
        let r = with_retry(
            &RetryPolicy::PUSH,
            &mut clock,
            &mut Jitter::seeded(1),
            || {
                tries += 1;
                if tries < 3 {
                    Err(err(Class::Retryable))
                } else {
                    Ok(tries)
                }
            },
        );
        assert_eq!(r, Ok(3));
        assert_eq!(clock.slept.len(), 2);
    }

    #[test]
    fn other_failures_are_not_retried() {
        for class in [Class::Refused, Class::Credentials, Class::Target] {
            let mut clock = FakeClock::default();
            let r: Result<(), Failed> = with_retry(
                &RetryPolicy::PUSH,
                &mut clock,
                &mut Jitter::seeded(1),
                || Err(err(class)),
            );
            assert_eq!(r.unwrap_err().attempts, 1);
            assert!(clock.slept.is_empty());
        }
    }

    #[test]
    fn retry_after_is_honoured_and_a_wait_past_the_budget_is_not_made() {
        let mut clock = FakeClock::default();
        let mut asked = err(Class::Retryable);
        asked.retry_after = Some(Duration::from_secs(7));
        let mut tries = 0;
        let r = with_retry(
            &RetryPolicy::PUSH,
            &mut clock,
            &mut Jitter::seeded(1),
            || {
                tries += 1;
                if tries == 1 {
                    Err(asked.clone())
                } else {
                    Ok(())
                }
            },
        );
        assert_eq!(r, Ok(()));
        assert_eq!(clock.slept, vec![Duration::from_secs(7)]);

        let mut clock = FakeClock::default();
        asked.retry_after = Some(Duration::from_secs(120));
        let r: Result<(), Failed> = with_retry(
            &RetryPolicy::PUSH,
            &mut clock,
            &mut Jitter::seeded(1),
            || Err(asked.clone()),
        );
        assert_eq!(r.unwrap_err().attempts, 1);
        assert!(clock.slept.is_empty());
    }

    #[test]
    fn a_zero_budget_is_one_try() {
        let mut clock = FakeClock::default();
        let r: Result<(), Failed> = with_retry(
            &RetryPolicy::within(Duration::ZERO),
            &mut clock,
            &mut Jitter::seeded(1),
            || Err(err(Class::Retryable)),
        );
        assert_eq!(r.unwrap_err().attempts, 1);
    }
}
