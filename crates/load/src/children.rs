//! Forked worker processes of one generator (`messaging:...:process`): forking them tied to
//! rtlab's life, their CPU time while they run and after they are reaped, and stopping them.
//!
//! The workers count their operations in [`SharedCounters`](sys::mem::SharedCounters) mapped
//! before the fork; this module only owns the processes. They are forked from the thread
//! that starts the load, which lives as long as the load does (the parent-death signal follows
//! the forking thread), and they are stopped with SIGKILL: a worker holds nothing that needs a
//! polite end, and its figures are already in shared memory.

use sys::process::{ChildExit, StopSignal};

use crate::generator::LoadError;

/// A generator's worker processes.
#[derive(Debug)]
pub struct Children {
    generator: String,
    pids: Vec<u32>,
    forked: usize,
    /// CPU time of the workers already reaped.
    reaped_cpu_ns: u64,
    /// How the reaped workers ended.
    exits: Vec<ChildExit>,
}

impl Children {
    /// None yet; `generator` names the spec item in errors.
    pub fn new(generator: impl Into<String>) -> Children {
        Children {
            generator: generator.into(),
            pids: Vec::new(),
            forked: 0,
            reaped_cpu_ns: 0,
            exits: Vec::new(),
        }
    }

    /// Forks a worker that runs `body` and exits with its return value. `body` runs in a
    /// single-threaded copy of this process: it must not take locks other threads may hold
    /// (see [`sys::process::fork_worker`]).
    pub fn fork(&mut self, body: impl FnOnce() -> i32) -> Result<u32, LoadError> {
        let pid = sys::process::fork_worker(body).map_err(|e| {
            LoadError::setup(
                &self.generator,
                format!(
                    "cannot fork worker {} ({e}); lower the task count or raise `ulimit -u`",
                    self.pids.len() + 1
                ),
            )
        })?;
        self.pids.push(pid);
        self.forked += 1;
        Ok(pid)
    }

    /// Workers forked (running, ended, or stopped).
    pub fn len(&self) -> usize {
        self.forked
    }

    /// Whether none was forked.
    pub fn is_empty(&self) -> bool {
        self.forked == 0
    }

    /// Workers not yet reaped.
    pub fn running(&self) -> usize {
        self.pids.len()
    }

    /// CPU time all workers have used so far: exact per-process CPU clocks for those alive,
    /// plus what the reaped ones used.
    pub fn cpu_ns(&self) -> u64 {
        self.reaped_cpu_ns
            + self
                .pids
                .iter()
                .filter_map(|&pid| sys::process::cpu_time_of(pid))
                .sum::<u64>()
    }

    /// Reaps, without waiting, the workers that ended by themselves (not by
    /// [`stop`](Children::stop)); see [`ended_early`](Children::ended_early).
    pub fn reap_exited(&mut self) {
        let mut i = 0;
        while i < self.pids.len() {
            match sys::process::reap(self.pids[i], false) {
                Ok(Some(exit)) => {
                    self.reaped_cpu_ns += exit.cpu_ns;
                    self.exits.push(exit);
                    self.pids.swap_remove(i);
                }
                Ok(None) => i += 1,
                Err(_) => {
                    self.pids.swap_remove(i);
                }
            }
        }
    }

    /// How many workers ended on their own before the stop, and how many of those failed.
    pub fn ended_early(&self) -> (usize, usize) {
        let failed = self.exits.iter().filter(|e| !e.success()).count();
        (self.exits.len(), failed)
    }

    /// Kills every worker, reaps them all, and returns the CPU time they used in total.
    pub fn stop(&mut self) -> u64 {
        self.reap_exited();
        for &pid in &self.pids {
            let _ = sys::process::signal_process(pid, StopSignal::Kill);
        }
        for pid in self.pids.drain(..) {
            if let Ok(Some(exit)) = sys::process::reap(pid, true) {
                self.reaped_cpu_ns += exit.cpu_ns;
            }
        }
        self.reaped_cpu_ns
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn workers_are_counted_stopped_and_reaped() {
        let mut children = Children::new("messaging:1x1:socket:process");
        for _ in 0..2 {
            children
                .fork(|| {
                    let start = Instant::now();
                    let mut x = 0u64;
                    loop {
                        x = std::hint::black_box(x.wrapping_add(1));
                        if start.elapsed() > Duration::from_secs(60) {
                            return 0;
                        }
                    }
                })
                .unwrap();
        }
        children.fork(|| 3).unwrap();
        assert_eq!(children.len(), 3);
        std::thread::sleep(Duration::from_millis(100));
        let live = children.cpu_ns();
        assert!(live > 20_000_000, "{live}");
        children.reap_exited();
        assert_eq!(children.running(), 2);
        assert_eq!(children.ended_early(), (1, 1));
        let pids = children.pids.clone();
        let total = children.stop();
        assert!(total >= live, "{total} < {live}");
        assert_eq!(children.running(), 0);
        assert_eq!(children.len(), 3);
        for pid in pids {
            assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
        }
    }
}
