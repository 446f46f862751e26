//! `fork[:WORKERS]`: a storm of short-lived processes. Each worker thread forks a child that
//! executes `/bin/true`, waits for it, and starts the next, as fast as it can: process
//! creation (copying page tables and marking the parent's pages copy-on-write, with the TLB
//! flushes that brings), exec, exit and reaping, over and over, as a build or a shell script
//! does.
//!
//! What is achieved: forks (each a child that ran and was reaped). The children's CPU time,
//! from `wait4`, is counted with the workers'. Without `/bin/true` or `/usr/bin/true` the
//! children exit without executing anything, and a note says so.

use std::ffi::CString;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use model::CpuSet;

use crate::worker::{DEFAULT_STACK, Workers};
use crate::{Counters, Generator, LoadError, StartContext};

/// Programs the children execute, the first one present.
const TRUE: [&str; 2] = ["/bin/true", "/usr/bin/true"];
/// Wait after a failed fork (the process limit was reached) before trying again.
const BACKOFF: Duration = Duration::from_millis(10);

/// Processes forking, executing a trivial program and exiting.
#[derive(Debug)]
pub struct ForkStorm {
    workers_wanted: u32,
    cpus: CpuSet,
    program: Option<CString>,
    /// Children that did not exit 0, and forks the kernel refused.
    failed: Arc<AtomicU64>,
    refused: Arc<AtomicU64>,
    workers: Workers,
}

impl ForkStorm {
    /// `workers` forking threads, each with one child in flight.
    pub fn new(item: String, workers: u32) -> ForkStorm {
        ForkStorm {
            workers: Workers::new(item),
            workers_wanted: workers,
            cpus: CpuSet::new(),
            program: None,
            failed: Arc::default(),
            refused: Arc::default(),
        }
    }
}

impl Generator for ForkStorm {
    fn start(&mut self, ctx: &StartContext<'_>) -> Result<(), LoadError> {
        self.cpus = ctx.cpus.clone();
        self.program = TRUE
            .iter()
            .find(|p| std::path::Path::new(p).is_file())
            .and_then(|p| CString::new(*p).ok());
        for w in 0..self.workers_wanted {
            let program = self.program.clone();
            let failed = Arc::clone(&self.failed);
            let refused = Arc::clone(&self.refused);
            self.workers.spawn(
                &format!("rtlab-fork{w}"),
                ctx.cpus,
                DEFAULT_STACK,
                move |shared, meter| {
                    while !shared.stopping() {
                        let child = sys::process::fork_worker(|| match &program {
                            Some(p) => sys::process::exec_or_exit(p),
                            None => 0,
                        });
                        let Ok(pid) = child else {
                            refused.fetch_add(1, Ordering::Relaxed);
                            std::thread::sleep(BACKOFF);
                            continue;
                        };
                        if let Ok(Some(exit)) = sys::process::reap(pid, true) {
                            shared.add_cpu_ns(exit.cpu_ns);
                            if !exit.success() {
                                failed.fetch_add(1, Ordering::Relaxed);
                            }
                            meter.count(1, 0);
                        }
                        meter.tick(shared);
                    }
                },
            )?;
        }
        Ok(())
    }

    fn achieved(&self) -> Counters {
        self.workers.counters()
    }

    fn describe(&self) -> String {
        let what = match &self.program {
            Some(p) => format!("executing {}", p.to_string_lossy()),
            None => "exiting at once".to_string(),
        };
        format!(
            "{} worker(s) forking children {what}, one in flight each, on CPUs {}",
            self.workers_wanted, self.cpus
        )
    }

    fn unit(&self) -> &'static str {
        "fork"
    }

    fn tasks(&self) -> u32 {
        self.workers.len() as u32
    }

    fn stop(&mut self) -> Counters {
        self.workers.stop()
    }

    fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.program.is_none() {
            notes.push(format!(
                "neither {} exists: children exit without executing a program",
                TRUE.join(" nor ")
            ));
        }
        let failed = self.failed.load(Ordering::Relaxed);
        if failed > 0 {
            notes.push(format!("{failed} children exited with a failure"));
        }
        let refused = self.refused.load(Ordering::Relaxed);
        if refused > 0 {
            notes.push(format!(
                "the kernel refused {refused} forks (process limit); raise `ulimit -u` or use \
                 fewer workers"
            ));
        }
        notes
    }
}
