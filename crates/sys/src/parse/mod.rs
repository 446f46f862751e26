//! Pure parsers of kernel text: each is a function over `&str` that reads no files and never
//! panics. A line-oriented file whose line does not have the kernel's form is refused with a
//! [`LineError`] naming the 1-based line (the readers in [`crate::cpu`], [`crate::irq`],
//! [`crate::cgroup`] and [`crate::host`], which fetch the text through a [`Root`](crate::Root),
//! add the file: [`LineError::in_file`]); lines of a form the parser does not use (other
//! file systems in mountinfo, counters in `/proc/stat`) are passed over as the kernel's own
//! content, and where a parser tolerates more than that it says so. Parsers of free text
//! (the command line, kernel config, kernel log, one-value files) answer `None` or an empty
//! result for what they do not recognise.
//!
//! - [`cgroup`]: cgroup mounts from mountinfo and a process's place in them.
//! - [`cmdline`]: `/proc/cmdline` boot parameters, with the kernel's quoting rules.
//! - [`cpuinfo`]: `/proc/cpuinfo` records and the CPU model (x86 and ARM).
//! - [`interrupts`]: `/proc/interrupts` rows, per-CPU counts and the local timer row.
//! - [`irq`]: a `/proc/interrupts` description split into chip, hardware IRQ, trigger and
//!   handler names.
//! - [`kconfig`]: values from kernel config text (`/proc/config.gz`, `/boot/config-*`).
//! - [`klog`]: kernel log lines (`/dev/kmsg` records, `dmesg` and journal text).
//! - [`preempt`]: the preemption model, from debugfs, the version string or the config.
//! - [`stat`]: CPU time lines of `/proc/stat` and `/proc/PID/stat`.
//! - [`task`]: per-thread `stat` (flags, policy, RT priority), `status` fields, `environ` and
//!   `cmdline`.
//! - [`thread`]: a thread's counters (`stat` faults and CPU time, `schedstat`, `sched`
//!   migrations, `status` memory and switches) and the futex wait in its `syscall`.

pub mod cgroup;
pub mod cmdline;
pub mod cpuinfo;
pub mod interrupts;
pub mod irq;
pub mod kconfig;
pub mod klog;
pub mod preempt;
pub mod stat;
pub mod task;
pub mod thread;

/// A line of kernel text that does not have the expected form: where (1-based) and what was
/// expected. [`in_file`](LineError::in_file) makes it the crate's [`Error::Parse`](crate::Error)
/// naming the file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: cannot parse {what}")]
pub struct LineError {
    /// 1-based line number.
    pub line: usize,
    /// What the line should have been.
    pub what: &'static str,
}

impl LineError {
    /// The error for line `index` (0-based, as `enumerate` counts) expecting `what`.
    pub(crate) fn at(index: usize, what: &'static str) -> LineError {
        LineError {
            line: index.saturating_add(1),
            what,
        }
    }

    /// The same error, naming the kernel file `path` it was read from.
    pub fn in_file(self, path: impl Into<std::path::PathBuf>) -> crate::Error {
        crate::Error::Parse {
            path: path.into(),
            line: self.line,
            what: self.what.to_string(),
        }
    }
}
