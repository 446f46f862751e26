//! `rtlab inspect PID`: whether a running program is set up for real time. The process is
//! sampled over a window ([`sample`]), each thread's counters are turned into what it did in
//! the window ([`judge`]), and the checks ([`checks`]) judge that against the machine: the
//! IRQ and softirq threads' priorities and the real-time CPUs the audit finds.
//!
//! It only reads: nothing on the machine or in the process changes. An exact run delay from
//! the scheduler's tracepoints is measured by the caller (it needs a trace, which this room
//! does not parse) and handed to [`judge`].

pub mod checks;
pub mod sample;

use std::collections::BTreeMap;
use std::time::Duration;

use model::CpuSet;
use model::audit::Counts;
use model::inspect::{Inspection, KernelThreads, RunDelaySource, SCHEMA, ThreadReport};
use sys::Root;

pub use checks::Limits;
pub use sample::{Pause, Window, sample, sleep};

use crate::context::{Ctx, Options};

/// What to inspect and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// The process.
    pub pid: u32,
    /// How long to watch it.
    pub duration: Duration,
    /// How often to sample `schedstat` and `syscall`.
    pub interval: Duration,
    /// The real-time CPUs, when the user named them; else found as the audit finds them.
    pub rt_cpus: Option<CpuSet>,
    /// What the checks are judged against.
    pub limits: Limits,
}

/// The default sampling interval: run delay accumulated in one 10 ms interval bounds the
/// longest wait inside it closely enough to tell a 100 us problem from a 10 ms one, and one
/// or two small reads per thread every 10 ms cost well under 1% of a CPU.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(10);

/// Why a process could not be inspected (all exit status 2).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InspectError {
    /// No such process.
    #[error(
        "no process {pid}: it does not exist (or is in another PID namespace); `ps -e` lists the processes"
    )]
    NoProcess {
        /// The id given.
        pid: u32,
    },
    /// The id is a thread of another process.
    #[error("{tid} is a thread of process {tgid}, not a process: inspect {tgid}")]
    NotAProcess {
        /// The id given.
        tid: u32,
        /// Its process.
        tgid: u32,
    },
    /// The process exited before the window ended.
    #[error("process {pid} ({name}) exited {after_ms} ms into the inspection; nothing to judge")]
    Exited {
        /// The process.
        pid: u32,
        /// Its name.
        name: String,
        /// When it was seen gone.
        after_ms: u64,
    },
    /// A file could not be read for another reason (permissions, a malformed file).
    #[error("{0}")]
    Read(String),
}

/// One thread's exact run delay from the scheduler's tracepoints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExactDelay {
    /// The longest wait from wake-up (or preemption) to running, ns.
    pub max_ns: u64,
    /// Wake-ups seen.
    pub wakeups: u64,
}

/// Samples and judges process `config.pid` (without a trace).
pub fn inspect(root: &Root, config: &Config) -> Result<Inspection, InspectError> {
    let window = sample(
        root,
        config.pid,
        config.duration,
        config.interval,
        &mut sleep,
    )?;
    Ok(judge(root, config, &window, None))
}

/// USER_HZ, the unit of `stat`'s CPU times: 100 on every Linux architecture.
const TICK_NS: u64 = 10_000_000;

/// What one tracked thread did in the window.
fn thread_report(track: &sample::Track, exact: Option<&ExactDelay>) -> ThreadReport {
    let (a, b) = (&track.first, &track.last);
    let grew = |x: u64, y: u64| y.saturating_sub(x);
    let opt = |x: Option<u64>, y: Option<u64>| Some(grew(x?, y?));
    let sched = match (a.schedstat, b.schedstat) {
        (Some(x), Some(y)) => Some((
            grew(x.cpu_ns, y.cpu_ns),
            grew(x.run_delay_ns, y.run_delay_ns),
        )),
        _ => None,
    };
    let ticks = grew(
        a.counters
            .utime_ticks
            .saturating_add(a.counters.stime_ticks),
        b.counters
            .utime_ticks
            .saturating_add(b.counters.stime_ticks),
    );
    let task = &b.task;
    ThreadReport {
        tid: task.tid,
        name: task.comm.clone(),
        sched: task.sched_label(),
        realtime: task.is_realtime(),
        rt_priority: task.rt_priority,
        cpus_allowed: task.cpus_allowed.clone(),
        last_cpu: b.counters.processor,
        minor_faults: grew(a.counters.minor_faults, b.counters.minor_faults),
        major_faults: grew(a.counters.major_faults, b.counters.major_faults),
        voluntary_switches: opt(a.voluntary_switches, b.voluntary_switches),
        involuntary_switches: opt(a.involuntary_switches, b.involuntary_switches),
        cpu_ns: sched.map_or(ticks.saturating_mul(TICK_NS), |s| s.0),
        run_delay_ns: sched.map(|s| s.1),
        max_run_delay_ns: match exact {
            Some(e) => Some(e.max_ns),
            None => track.max_interval_delay_ns,
        },
        wakeups: exact.map(|e| e.wakeups),
        migrations: opt(a.migrations, b.migrations),
        futex_waits: track.futex.clone(),
        syscall_readable: !track.syscall_refused,
        started_during: track.started_during,
        ended_during: track.ended_during,
    }
}

/// The priorities of the kernel threads whose names start with one of `prefixes`.
fn kernel_threads(tasks: &[sys::tasks::Task], prefixes: &[&str]) -> Option<KernelThreads> {
    let group: Vec<&sys::tasks::Task> = tasks
        .iter()
        .filter(|t| t.is_kernel_thread() && !t.is_dead())
        .filter(|t| prefixes.iter().any(|p| t.comm.starts_with(p)))
        .collect();
    let prio = |t: &&sys::tasks::Task| if t.is_realtime() { t.rt_priority } else { 0 };
    Some(KernelThreads {
        count: u32::try_from(group.len()).unwrap_or(u32::MAX),
        lowest: group.iter().map(prio).min()?,
        highest: group.iter().map(prio).max()?,
    })
}

/// Turns a sampled window into the inspection, with its findings. `exact` holds the run
/// delays measured from a trace, by thread id, when there is one.
pub fn judge(
    root: &Root,
    config: &Config,
    window: &Window,
    exact: Option<&BTreeMap<u32, ExactDelay>>,
) -> Inspection {
    let ctx = Ctx::new(
        root.clone(),
        Options {
            rt_cpus: config.rt_cpus.clone(),
            ..Options::default()
        },
    );
    let tasks = sys::tasks::all_threads(root).unwrap_or_default();
    let threads = window
        .threads
        .values()
        .map(|t| thread_report(t, exact.and_then(|e| e.get(&t.first.task.tid))))
        .collect();
    let mut inspection = Inspection {
        schema: SCHEMA.to_string(),
        rtlab_version: env!("CARGO_PKG_VERSION").to_string(),
        build: model::build::current().cloned(),
        kernel_release: ctx.host().kernel_release.clone(),
        pid: config.pid,
        name: window.status.name.clone(),
        command: sys::tasks::process_cmdline(root, config.pid).unwrap_or_default(),
        window_ns: u64::try_from(window.elapsed.as_nanos()).unwrap_or(u64::MAX),
        interval_ns: u64::try_from(config.interval.as_nanos()).unwrap_or(u64::MAX),
        samples: window.samples,
        interrupted: window.interrupted,
        run_delay_source: if exact.is_some() {
            RunDelaySource::Trace
        } else {
            RunDelaySource::Schedstat
        },
        online_cpus: ctx.online().clone(),
        rt_cpus: ctx.rt().clone(),
        irq_threads: kernel_threads(&tasks, &["irq/"]),
        softirq_threads: kernel_threads(&tasks, &["ksoftirqd/", "ktimers/"]),
        locked_kb: window.status.locked_kb,
        rss_kb: window.status.rss_kb,
        threads,
        counts: Counts::default(),
        findings: Vec::new(),
    };
    inspection.findings = checks::findings(&inspection, &config.limits);
    inspection.counts = Counts::of(&inspection.findings);
    inspection
}

#[cfg(test)]
mod tests;
