//! Termination signals (SIGINT, SIGTERM, SIGHUP) as values to wait for, not handlers: they are
//! blocked with `pthread_sigmask` and collected with `sigtimedwait`, so no measuring thread is
//! ever interrupted by a handler and shutdown is ordinary control flow in one thread.
//!
//! Once a signal has been taken, an orderly stop is under way: from then on the signals stay
//! blocked for the life of the process (guards no longer unblock them when dropped), so a
//! second Ctrl-C, a process-group signal or `timeout -s INT` arriving during the stop cannot
//! kill rtlab before its result is saved. Later signals stay pending and die with the process.
//!
//! This module blocks and waits; it must not install handlers, and it must not decide what a
//! signal means (stop, checkpoint, exit code — that is the caller's).

use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Set when any guard has taken a signal: an orderly stop is under way in this process.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// Whether a termination signal has been taken in this process (an orderly stop is under
/// way, and the signals stay blocked until it exits).
pub fn stopping() -> bool {
    STOPPING.load(Ordering::Acquire)
}

use crate::{Error, Result};

/// A signal that asks rtlab to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Signal {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM (kill, systemd stop).
    Terminate,
    /// SIGHUP (the terminal went away).
    Hangup,
}

impl Signal {
    /// Every termination signal.
    pub const ALL: [Signal; 3] = [Signal::Interrupt, Signal::Terminate, Signal::Hangup];

    /// The signal's number (for the conventional exit status 128 + number).
    pub fn number(self) -> i32 {
        match self {
            Signal::Interrupt => libc::SIGINT,
            Signal::Terminate => libc::SIGTERM,
            Signal::Hangup => libc::SIGHUP,
        }
    }

    /// The signal's name (`SIGINT`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Signal::Interrupt => "SIGINT",
            Signal::Terminate => "SIGTERM",
            Signal::Hangup => "SIGHUP",
        }
    }

    /// The termination signal with this number, if it is one.
    pub fn from_number(number: i32) -> Option<Signal> {
        Signal::ALL.into_iter().find(|s| s.number() == number)
    }
}

/// The number of the signal `text` names: a name with or without `SIG` (`USR1`, `SIGTERM`,
/// any case) or a number from 1 to 64.
pub fn number(text: &str) -> Option<i32> {
    const NAMES: [(&str, i32); 14] = [
        ("HUP", libc::SIGHUP),
        ("INT", libc::SIGINT),
        ("QUIT", libc::SIGQUIT),
        ("ABRT", libc::SIGABRT),
        ("KILL", libc::SIGKILL),
        ("USR1", libc::SIGUSR1),
        ("USR2", libc::SIGUSR2),
        ("PIPE", libc::SIGPIPE),
        ("ALRM", libc::SIGALRM),
        ("TERM", libc::SIGTERM),
        ("CONT", libc::SIGCONT),
        ("STOP", libc::SIGSTOP),
        ("TSTP", libc::SIGTSTP),
        ("WINCH", libc::SIGWINCH),
    ];
    let t = text.trim();
    if let Ok(n) = t.parse::<i32>() {
        return (1..=64).contains(&n).then_some(n);
    }
    let upper = t.to_ascii_uppercase();
    let name = upper.strip_prefix("SIG").unwrap_or(&upper);
    NAMES.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// Sends signal `signal` to process `pid` (kill(2)).
pub fn send(pid: i32, signal: i32) -> Result<()> {
    if pid <= 0 {
        return Err(Error::Io {
            path: format!("process {pid}").into(),
            source: std::io::Error::from_raw_os_error(libc::ESRCH),
        });
    }
    // SAFETY: kill takes plain integers; a positive pid names one process.
    if unsafe { libc::kill(pid, signal) } != 0 {
        return Err(Error::Io {
            path: format!("process {pid}").into(),
            source: std::io::Error::last_os_error(),
        });
    }
    Ok(())
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// SIGINT, SIGTERM and SIGHUP blocked in the thread that created this, to be collected with
/// [`wait`](TerminationSignals::wait).
///
/// Create it in `main` **before spawning any thread**: threads inherit the signal mask when they
/// are created, so every later thread has these signals blocked too and the kernel leaves a
/// process-directed signal pending until this thread waits for it. A thread spawned earlier
/// keeps them unblocked, and the signal may hit it with its default action (the process dies
/// without cleaning up).
///
/// Dropping it restores the creating thread's previous mask — unless a signal has been taken
/// (see [`stopping`]): then the mask stays as it is, so a signal that came during the stop
/// cannot end the process before the caller has saved its work. It is neither `Send` nor
/// `Sync`: a mask belongs to one thread.
pub struct TerminationSignals {
    set: libc::sigset_t,
    previous: libc::sigset_t,
    _one_thread: PhantomData<*const ()>,
}

impl TerminationSignals {
    /// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread (pthread_sigmask SIG_BLOCK).
    pub fn block() -> Result<TerminationSignals> {
        // SAFETY: an all-zero sigset_t is valid storage; sigemptyset/sigaddset initialise it
        // and cannot fail for valid signal numbers.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut previous: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is valid, writable storage and every number is a valid signal.
        unsafe {
            libc::sigemptyset(&mut set);
            for signal in Signal::ALL {
                libc::sigaddset(&mut set, signal.number());
            }
        }
        // SAFETY: `set` is initialised; `previous` is writable storage for the old mask.
        let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut previous) };
        if rc != 0 {
            return Err(Error::Io {
                path: "pthread_sigmask(SIG_BLOCK, SIGINT|SIGTERM|SIGHUP)".into(),
                source: std::io::Error::from_raw_os_error(rc),
            });
        }
        Ok(TerminationSignals {
            set,
            previous,
            _one_thread: PhantomData,
        })
    }

    /// Waits up to `timeout` for one of the signals (sigtimedwait) and takes it. `None` when
    /// none came in time; a zero timeout only polls. An interrupted wait is resumed for what is
    /// left of the timeout.
    pub fn wait(&self, timeout: Duration) -> Option<Signal> {
        // At most i32::MAX seconds, so the seconds fit a 32-bit time_t.
        let timeout = timeout.min(Duration::from_secs(i32::MAX.unsigned_abs().into()));
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let ts = libc::timespec {
                // Lossless: at most i32::MAX seconds (above), and time_t is i32 or i64.
                tv_sec: left.as_secs() as _,
                tv_nsec: left.subsec_nanos() as _,
            };
            // SAFETY: `self.set` is an initialised sigset_t, `ts` a valid timespec, and the
            // siginfo pointer may be null.
            let rc = unsafe { libc::sigtimedwait(&self.set, std::ptr::null_mut(), &ts) };
            if rc > 0 {
                STOPPING.store(true, Ordering::Release);
                return Signal::from_number(rc);
            }
            let errno = std::io::Error::last_os_error().raw_os_error();
            if errno != Some(libc::EINTR) || left.is_zero() {
                return None;
            }
        }
    }
}

impl Drop for TerminationSignals {
    fn drop(&mut self) {
        if stopping() {
            // An orderly stop is under way: later signals must not interrupt it.
            return;
        }
        // SAFETY: `self.previous` holds the mask pthread_sigmask reported in `block`, in the
        // same thread (the type is not Send).
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.previous, std::ptr::null_mut()) };
    }
}

impl fmt::Debug for TerminationSignals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TerminationSignals")
            .field("blocked", &Signal::ALL)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `signal` is blocked in the calling thread.
    fn blocked(signal: Signal) -> bool {
        // SAFETY: zeroed storage is valid for the mask pthread_sigmask writes; a null new set
        // only queries.
        unsafe {
            let mut now: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut now);
            libc::sigismember(&now, signal.number()) == 1
        }
    }

    /// Sends `signal` to the calling thread only.
    fn raise_here(signal: Signal) {
        // SAFETY: pthread_self is this live thread; the signal is blocked in it by the caller.
        let rc = unsafe { libc::pthread_kill(libc::pthread_self(), signal.number()) };
        assert_eq!(rc, 0);
    }

    #[test]
    fn names_and_numbers() {
        assert_eq!(Signal::Terminate.number(), 15);
        assert_eq!(Signal::Interrupt.name(), "SIGINT");
        assert_eq!(Signal::from_number(1), Some(Signal::Hangup));
        assert_eq!(Signal::from_number(9), None);
        assert_eq!(Signal::Hangup.to_string(), "SIGHUP");
    }

    #[test]
    fn collects_blocked_signals_and_keeps_them_blocked_once_stopping() {
        // Each test runs in its own thread, and masks are per thread. (Once a signal is
        // taken the process counts as stopping, so the other tests here do not check that
        // a drop restores the mask.)
        assert!(!blocked(Signal::Terminate));
        let signals = TerminationSignals::block().unwrap();
        assert!(Signal::ALL.into_iter().all(blocked));
        raise_here(Signal::Terminate);
        raise_here(Signal::Hangup);
        let mut got = [
            signals.wait(Duration::from_secs(5)),
            signals.wait(Duration::ZERO),
        ];
        got.sort_by_key(|s| s.map(Signal::number));
        assert_eq!(got, [Some(Signal::Hangup), Some(Signal::Terminate)]);
        assert!(stopping());
        // A second signal during the stop stays pending: dropping the guard does not
        // deliver it (which would end this test process).
        raise_here(Signal::Interrupt);
        drop(signals);
        assert!(blocked(Signal::Interrupt));
        let again = TerminationSignals::block().unwrap();
        assert_eq!(again.wait(Duration::ZERO), Some(Signal::Interrupt));
    }

    #[test]
    fn times_out_without_a_signal() {
        let signals = TerminationSignals::block().unwrap();
        let start = Instant::now();
        assert_eq!(signals.wait(Duration::from_millis(50)), None);
        let waited = start.elapsed();
        assert!(waited >= Duration::from_millis(50), "{waited:?}");
        assert!(waited < Duration::from_secs(2), "{waited:?}");
        assert_eq!(signals.wait(Duration::ZERO), None);
    }

    #[test]
    fn threads_spawned_after_blocking_inherit_the_mask() {
        let signals = TerminationSignals::block().unwrap();
        let inherited = std::thread::spawn(|| blocked(Signal::Interrupt))
            .join()
            .unwrap();
        assert!(inherited);
        drop(signals);
    }
}
