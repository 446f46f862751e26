//! `fork[:WORKERS]`: a storm of short-lived processes. Each worker is a process of its own
//! that forks a child executing `/bin/true`, waits for it, and starts the next, as fast as it
//! can: process creation (copying page tables and marking pages copy-on-write, with the TLB
//! flushes that brings), exec, exit and reaping, over and over, as a build or a shell script
//! does. Workers are processes rather than threads because forks from threads of one process
//! serialise on its memory map lock: sixteen forking threads load about a quarter of sixteen
//! CPUs, sixteen forking processes load all of them.
//!
//! What is achieved: forks (each a child that ran and was reaped). The children's CPU time,
//! from `wait4`, is counted with the workers'. A worker stops when asked, after reaping the
//! child in flight, so no orphan is left. Without `/bin/true` or `/usr/bin/true` the children
//! exit without executing anything, and a note says so.

use std::ffi::CString;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use model::CpuSet;
use sys::mem::SharedCounters;

use crate::children::Children;
use crate::{Counters, Generator, LoadError, StartContext};

/// Programs the children execute, the first one present.
const TRUE: [&str; 2] = ["/bin/true", "/usr/bin/true"];
/// Wait after a failed fork (the process limit was reached) before trying again.
const BACKOFF: Duration = Duration::from_millis(10);
/// How long workers get to finish their child in flight when stopped.
const GRACE: Duration = Duration::from_secs(1);

/// Shared slots: the stop flag, then per worker these four counters.
const STOP: usize = 0;
const FORKS: usize = 0;
const CHILD_CPU_NS: usize = 1;
const FAILED: usize = 2;
const REFUSED: usize = 3;
const PER_WORKER: usize = 4;

/// Processes forking, executing a trivial program and exiting.
#[derive(Debug)]
pub struct ForkStorm {
    item: String,
    workers_wanted: u32,
    cpus: CpuSet,
    program: Option<CString>,
    slots: Option<Arc<SharedCounters>>,
    children: Children,
    stopped: Option<Counters>,
}

impl ForkStorm {
    /// `workers` forking processes, each with one child in flight.
    pub fn new(item: String, workers: u32) -> ForkStorm {
        ForkStorm {
            children: Children::new(&item),
            item,
            workers_wanted: workers,
            cpus: CpuSet::new(),
            program: None,
            slots: None,
            stopped: None,
        }
    }

    /// Sum of counter `which` over the workers.
    fn sum(&self, which: usize) -> u64 {
        self.slots.as_ref().map_or(0, |slots| {
            (0..self.workers_wanted as usize)
                .map(|w| {
                    slots
                        .slot(1 + w * PER_WORKER + which)
                        .load(Ordering::Relaxed)
                })
                .sum()
        })
    }
}

/// One worker's loop, in its own process: fork, exec, reap, count, until `slots` says stop.
fn worker(program: Option<&CString>, slots: &SharedCounters, w: usize) -> i32 {
    let counter = |which: usize| slots.slot(1 + w * PER_WORKER + which);
    while slots.slot(STOP).load(Ordering::Relaxed) == 0 {
        let child = sys::process::fork_worker(|| match program {
            Some(p) => sys::process::exec_or_exit(p),
            None => 0,
        });
        let Ok(pid) = child else {
            counter(REFUSED).fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(BACKOFF);
            continue;
        };
        if let Ok(Some(exit)) = sys::process::reap(pid, true) {
            counter(CHILD_CPU_NS).fetch_add(exit.cpu_ns, Ordering::Relaxed);
            if !exit.success() {
                counter(FAILED).fetch_add(1, Ordering::Relaxed);
            }
            counter(FORKS).fetch_add(1, Ordering::Relaxed);
        }
    }
    0
}

impl Generator for ForkStorm {
    fn start(&mut self, ctx: &StartContext<'_>) -> Result<(), LoadError> {
        self.cpus = ctx.cpus.clone();
        self.program = TRUE
            .iter()
            .find(|p| std::path::Path::new(p).is_file())
            .and_then(|p| CString::new(*p).ok());
        let slots = Arc::new(
            SharedCounters::new(1 + self.workers_wanted as usize * PER_WORKER)
                .map_err(|e| LoadError::sys(&self.item, e))?,
        );
        self.slots = Some(Arc::clone(&slots));
        for w in 0..self.workers_wanted as usize {
            let program = self.program.as_ref();
            self.children
                .fork_placed(ctx.cpus, || worker(program, &slots, w))?;
        }
        self.children.go();
        Ok(())
    }

    fn achieved(&self) -> Counters {
        if let Some(c) = self.stopped {
            return c;
        }
        Counters {
            ops: self.sum(FORKS),
            bytes: 0,
            // The workers' own time, and their children's as they reap them.
            cpu_ns: self.children.cpu_ns() + self.sum(CHILD_CPU_NS),
        }
    }

    fn describe(&self) -> String {
        let what = match &self.program {
            Some(p) => format!("executing {}", p.to_string_lossy()),
            None => "exiting at once".to_string(),
        };
        format!(
            "{} worker process{} forking children {what}, one in flight each, on {}",
            self.workers_wanted,
            if self.workers_wanted == 1 { "" } else { "es" },
            self.cpus.with_noun()
        )
    }

    fn unit(&self) -> &'static str {
        "fork"
    }

    fn tasks(&self) -> u32 {
        self.children.len() as u32
    }

    fn stop(&mut self) -> Counters {
        if self.stopped.is_none() {
            let mut counters = self.achieved();
            if let Some(slots) = &self.slots {
                slots.slot(STOP).store(1, Ordering::Relaxed);
            }
            // A reaped worker's CPU time includes the children it reaped.
            counters.cpu_ns = self.children.stop_within(GRACE);
            counters.ops = self.sum(FORKS);
            self.stopped = Some(counters);
        }
        self.achieved()
    }

    fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.program.is_none() {
            notes.push(format!(
                "neither {} exists: children exit without executing a program",
                TRUE.join(" nor ")
            ));
        }
        let failed = self.sum(FAILED);
        if failed > 0 {
            notes.push(format!("{failed} children exited with a failure"));
        }
        let refused = self.sum(REFUSED);
        if refused > 0 {
            notes.push(format!(
                "the kernel refused {refused} forks (process limit); raise `ulimit -u` or use \
                 fewer workers"
            ));
        }
        notes
    }
}
