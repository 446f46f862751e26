//! The [`Generator`] trait every load implements, the counters it publishes, and what it is
//! given to start.

use std::path::Path;
use std::sync::Arc;

use model::CpuSet;
use sys::Root;

use crate::guardian::Watcher;

/// What a generator has done since it started. Counters only grow; a window's figures are the
/// difference of two readings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Operations completed (the unit is the generator's [`Generator::unit`]).
    pub ops: u64,
    /// Bytes copied, written or sent.
    pub bytes: u64,
    /// CPU time its tasks used, user plus system, in nanoseconds.
    pub cpu_ns: u64,
}

impl Counters {
    /// The growth from `earlier` to `self`.
    pub fn since(&self, earlier: &Counters) -> Counters {
        Counters {
            ops: self.ops.saturating_sub(earlier.ops),
            bytes: self.bytes.saturating_sub(earlier.bytes),
            cpu_ns: self.cpu_ns.saturating_sub(earlier.cpu_ns),
        }
    }
}

/// A generator could not start (or could not be built from its spec).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The kernel refused or lacks something the generator needs.
    #[error("{generator}: {source}")]
    Sys {
        /// The generator's spec item.
        generator: String,
        /// What the kernel said.
        #[source]
        source: sys::Error,
    },
    /// Any other reason, in words with the fix.
    #[error("{generator}: {reason}")]
    Setup {
        /// The generator's spec item.
        generator: String,
        /// What went wrong and what to do.
        reason: String,
    },
}

impl LoadError {
    /// A setup failure of `generator` described in words.
    pub fn setup(generator: impl Into<String>, reason: impl Into<String>) -> LoadError {
        LoadError::Setup {
            generator: generator.into(),
            reason: reason.into(),
        }
    }

    /// A kernel failure of `generator`.
    pub fn sys(generator: impl Into<String>, source: sys::Error) -> LoadError {
        LoadError::Sys {
            generator: generator.into(),
            source,
        }
    }
}

/// What a generator is given to start.
pub struct StartContext<'a> {
    /// The CPUs its tasks may run on (its `@CPULIST`, else `--load-cpus`, else every online
    /// CPU); never empty.
    pub cpus: &'a CpuSet,
    /// A private directory (mode 0700) for its files, removed with everything in it when the
    /// load ends, even if rtlab is killed.
    pub workdir: &'a Path,
    /// Where to read kernel files (cache sizes, limits).
    pub root: &'a Root,
    /// Registers process groups that must die with rtlab (external commands).
    pub watcher: &'a Arc<Watcher>,
    /// Seed for the generator's pseudo-random choices, different per generator and run.
    pub seed: u64,
}

/// A load generator: a value that starts tasks, counts what they achieve, and stops them.
///
/// `start` returns once every task is running (or with the reason one could not start, having
/// stopped those that had). `achieved` is cheap and may be called at any time while running.
/// `stop` ends every task and waits for them, then returns the final counters; it is called
/// exactly once after a successful `start`, also when rtlab is interrupted. Tasks must notice
/// a stop request within about 100 ms.
pub trait Generator: Send {
    /// Starts the tasks.
    fn start(&mut self, ctx: &StartContext<'_>) -> Result<(), LoadError>;

    /// The counters so far (cumulative since start).
    fn achieved(&self) -> Counters;

    /// What is running, in words: task count, sizes, placement
    /// (`2 workers busy 60% of each ~10 ms slice, one pinned to each of CPUs 0-1`). Meaningful
    /// after `start`.
    fn describe(&self) -> String;

    /// What one operation is, singular (`loop`, `wakeup`, `message`, `fault`, `fsync`, `fork`).
    fn unit(&self) -> &'static str;

    /// Threads or processes running at once.
    fn tasks(&self) -> u32;

    /// Stops every task and waits for it; returns the final counters.
    fn stop(&mut self) -> Counters;

    /// Anything that qualifies the figures (a fallback taken, a command's exit status).
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }

    /// Whether the generator has ended by itself (a command that exited): looked at once a
    /// tick while the load runs. The generators rtlab runs itself never end before `stop`.
    fn ended(&mut self) -> bool {
        false
    }
}
