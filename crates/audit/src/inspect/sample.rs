//! Sampling one process over a window: every thread read in full at the start and at the
//! end, and in between, every interval, each thread's `schedstat` (for the largest run delay
//! accumulated in one interval) and each real-time thread's `syscall` (for the futex it is
//! blocked in). New threads are picked up when they appear; threads that end keep what was
//! read of them.
//!
//! Only the cheap files are read each interval: one `schedstat` per thread, plus one
//! `syscall` per real-time thread, so a 10 ms interval costs well under 1% of a CPU for a few
//! dozen threads. Reading `syscall` never stops the thread: the kernel reports `running`
//! for one on a CPU.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use model::inspect::FutexSeen;
use sys::Root;
use sys::parse::thread::{SchedStat, SyscallAbi, futex_wait};
use sys::thread_stats::{
    ProcessStatus, ThreadSample, is_gone, process_status, thread_counters, thread_ids,
    thread_sample, thread_schedstat, thread_syscall,
};

use super::InspectError;

/// What one thread did over the window, as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Track {
    /// The first full read.
    pub first: ThreadSample,
    /// The last full read (the first, for a thread read only once).
    pub last: ThreadSample,
    /// The last `schedstat` read, for the next interval's difference.
    prev: Option<SchedStat>,
    /// The most run delay accumulated between two consecutive reads, ns.
    pub max_interval_delay_ns: Option<u64>,
    /// Futex waits seen, by operation and address, in order of first sight.
    pub futex: Vec<FutexSeen>,
    /// Whether its `syscall` file was read at least once (it is sampled only while the
    /// thread is real-time, and needs ptrace access).
    pub syscall_read: bool,
    /// Whether reading its `syscall` file was refused.
    pub syscall_refused: bool,
    /// Whether it started after the first sample.
    pub started_during: bool,
    /// Whether it ended before the last sample.
    pub ended_during: bool,
}

impl Track {
    fn new(first: ThreadSample, started_during: bool) -> Track {
        Track {
            prev: first.schedstat,
            last: first.clone(),
            first,
            max_interval_delay_ns: None,
            futex: Vec::new(),
            syscall_read: false,
            syscall_refused: false,
            started_during,
            ended_during: false,
        }
    }

    /// Takes a new `schedstat` reading: the run delay since the previous one.
    fn delay(&mut self, now: SchedStat) {
        if let Some(prev) = self.prev {
            let grew = now.run_delay_ns.saturating_sub(prev.run_delay_ns);
            self.max_interval_delay_ns = Some(self.max_interval_delay_ns.unwrap_or(0).max(grew));
        }
        self.prev = Some(now);
    }

    fn saw_futex(&mut self, op: &'static str, pi: bool, uaddr: u64) {
        let uaddr = format!("{uaddr:#x}");
        match self
            .futex
            .iter_mut()
            .find(|f| f.op == op && f.uaddr == uaddr)
        {
            Some(seen) => seen.samples = seen.samples.saturating_add(1),
            None => self.futex.push(FutexSeen {
                op: op.to_string(),
                priority_inheritance: pi,
                uaddr,
                samples: 1,
            }),
        }
    }
}

/// The window as sampled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// The process's `status` at the end.
    pub status: ProcessStatus,
    /// Every thread seen, by id.
    pub threads: BTreeMap<u32, Track>,
    /// Samples taken (the first and last full reads included).
    pub samples: u32,
    /// From the first sample to the last.
    pub elapsed: Duration,
    /// Whether it ended early because the caller asked (a termination signal).
    pub interrupted: bool,
}

/// Where the sampled process is, for its checks of life.
struct Target<'a> {
    root: &'a Root,
    pid: u32,
    name: String,
    start_ticks: u64,
    began: Instant,
}

impl Target<'_> {
    /// The error for a process that has gone (or whose id another process now has).
    fn exited(&self) -> InspectError {
        InspectError::Exited {
            pid: self.pid,
            name: self.name.clone(),
            after_ms: self.began.elapsed().as_millis() as u64,
        }
    }

    /// Fails when the process has exited: its directory is gone, its id belongs to a process
    /// started later, or every thread left is a zombie.
    fn check_alive(&self, tracks: &BTreeMap<u32, Track>) -> Result<(), InspectError> {
        match thread_counters(self.root, self.pid, self.pid) {
            Ok(c) if c.start_ticks == self.start_ticks => {}
            Ok(_) => return Err(self.exited()),
            Err(e) if is_gone(&e) => return Err(self.exited()),
            Err(e) => return Err(InspectError::Read(e.to_string())),
        }
        let alive = sys::tasks::read_thread(self.root, self.pid, self.pid)
            .is_some_and(|t| !t.is_dead())
            || tracks
                .iter()
                .any(|(_, t)| !t.ended_during && t.first.task.tid != self.pid);
        if alive { Ok(()) } else { Err(self.exited()) }
    }
}

/// Waits between samples: given how long, it waits and answers whether the window should end
/// now (a termination signal taken). [`sleep`] never ends it.
pub type Pause<'a> = &'a mut dyn FnMut(Duration) -> bool;

/// A [`Pause`] that sleeps and never ends the window early.
pub fn sleep(how_long: Duration) -> bool {
    std::thread::sleep(how_long);
    false
}

/// Samples process `pid` for `duration`, every `interval`, waiting with `pause` (which may
/// end the window early: the last full read is then taken at once). Errors when the process
/// does not exist, is a thread of another, or exits before the window ends.
pub fn sample(
    root: &Root,
    pid: u32,
    duration: Duration,
    interval: Duration,
    pause: Pause<'_>,
) -> Result<Window, InspectError> {
    let status = match process_status(root, pid) {
        Ok(s) => s,
        Err(e) if is_gone(&e) => return Err(InspectError::NoProcess { pid }),
        Err(e) => return Err(InspectError::Read(e.to_string())),
    };
    if status.tgid != pid {
        return Err(InspectError::NotAProcess {
            tid: pid,
            tgid: status.tgid,
        });
    }
    let start_ticks = thread_counters(root, pid, pid)
        .map_err(|_| InspectError::NoProcess { pid })?
        .start_ticks;
    let target = Target {
        root,
        pid,
        name: status.name.clone(),
        start_ticks,
        began: Instant::now(),
    };
    let mut tracks: BTreeMap<u32, Track> = BTreeMap::new();
    discover(&target, &mut tracks, false)?;
    target.check_alive(&tracks)?;
    let (between, interrupted) = watch(&target, &mut tracks, duration, interval, pause)?;
    target.check_alive(&tracks)?;
    discover(&target, &mut tracks, true)?;
    last_reads(&target, &mut tracks);
    let elapsed = target.began.elapsed();
    let status = process_status(root, pid).map_err(|_| target.exited())?;
    target.check_alive(&tracks)?;
    Ok(Window {
        status,
        threads: tracks,
        // The first full read, the interval reads, the last full read.
        samples: between.saturating_add(2),
        elapsed,
        interrupted,
    })
}

/// The interval reads until the window ends: how many rounds, and whether `pause` ended it.
fn watch(
    target: &Target<'_>,
    tracks: &mut BTreeMap<u32, Track>,
    duration: Duration,
    interval: Duration,
    pause: Pause<'_>,
) -> Result<(u32, bool), InspectError> {
    let abi = SyscallAbi::host();
    let mut rounds: u32 = 0;
    let mut tick: u32 = 0;
    loop {
        // The next interval boundary still ahead: a round that took longer than an interval
        // (thousands of threads) skips the boundaries it overran instead of stretching the
        // window.
        let passed = target.began.elapsed().as_nanos() / interval.as_nanos().max(1);
        tick = tick
            .saturating_add(1)
            .max(u32::try_from(passed).unwrap_or(u32::MAX).saturating_add(1));
        let due = interval.saturating_mul(tick);
        if due >= duration {
            return Ok((rounds, pause_until(pause, target.began + duration)));
        }
        if pause_until(pause, target.began + due) {
            return Ok((rounds, true));
        }
        target.check_alive(tracks)?;
        discover(target, tracks, true)?;
        for (tid, track) in tracks.iter_mut().filter(|(_, t)| !t.ended_during) {
            poll(target.root, target.pid, *tid, track, abi);
        }
        rounds = rounds.saturating_add(1);
    }
}

/// The last full read of every thread still there; the others have ended.
fn last_reads(target: &Target<'_>, tracks: &mut BTreeMap<u32, Track>) {
    for (tid, track) in tracks.iter_mut().filter(|(_, t)| !t.ended_during) {
        match thread_sample(target.root, target.pid, *tid) {
            Ok(last) => {
                if let Some(s) = last.schedstat {
                    track.delay(s);
                }
                track.last = last;
            }
            Err(_) => track.ended_during = true,
        }
    }
}

/// Adds the threads not yet tracked, each read in full.
fn discover(
    target: &Target<'_>,
    tracks: &mut BTreeMap<u32, Track>,
    during: bool,
) -> Result<(), InspectError> {
    let ids = match thread_ids(target.root, target.pid) {
        Ok(ids) => ids,
        Err(e) if is_gone(&e) => return Err(target.exited()),
        Err(e) => return Err(InspectError::Read(e.to_string())),
    };
    for tid in ids {
        if tracks.contains_key(&tid) {
            continue;
        }
        match thread_sample(target.root, target.pid, tid) {
            Ok(first) => {
                tracks.insert(tid, Track::new(first, during));
            }
            Err(e) if is_gone(&e) => {}
            Err(e) => return Err(InspectError::Read(e.to_string())),
        }
    }
    Ok(())
}

/// One interval's reads of one thread: `schedstat`, and `syscall` when it is real-time.
fn poll(root: &Root, pid: u32, tid: u32, track: &mut Track, abi: SyscallAbi) {
    match thread_schedstat(root, pid, tid) {
        Ok(s) => track.delay(s),
        Err(e) if is_gone(&e) && !root.exists(format!("/proc/{pid}/task/{tid}")) => {
            track.ended_during = true;
            return;
        }
        Err(_) => {}
    }
    if !track.last.task.is_realtime() {
        return;
    }
    match thread_syscall(root, pid, tid) {
        Ok(call) => {
            track.syscall_read = true;
            if let Some(wait) = futex_wait(abi, &call) {
                track.saw_futex(wait.op, wait.priority_inheritance, wait.uaddr);
            }
        }
        Err(sys::Error::PermissionDenied { .. }) => track.syscall_refused = true,
        Err(_) => {}
    }
}

/// Pauses until `when`; whether the window should end now.
fn pause_until(pause: Pause<'_>, when: Instant) -> bool {
    let now = Instant::now();
    when > now && pause(when - now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_delay_is_the_largest_growth_between_reads() {
        let mut t = Track::new(
            ThreadSample {
                schedstat: Some(SchedStat {
                    run_delay_ns: 100,
                    ..SchedStat::default()
                }),
                ..ThreadSample::default()
            },
            false,
        );
        assert_eq!(t.max_interval_delay_ns, None);
        for d in [150, 150, 900, 1000] {
            t.delay(SchedStat {
                run_delay_ns: d,
                ..SchedStat::default()
            });
        }
        assert_eq!(t.max_interval_delay_ns, Some(750));
    }

    #[test]
    fn futex_waits_are_counted_by_operation_and_address() {
        let mut t = Track::new(ThreadSample::default(), false);
        t.saw_futex("FUTEX_WAIT", false, 0x10);
        t.saw_futex("FUTEX_WAIT", false, 0x10);
        t.saw_futex("FUTEX_LOCK_PI", true, 0x20);
        assert_eq!(t.futex.len(), 2);
        assert_eq!((t.futex[0].samples, t.futex[0].uaddr.as_str()), (2, "0x10"));
        assert!(t.futex[1].priority_inheritance);
    }
}
