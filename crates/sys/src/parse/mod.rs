//! Pure parsers of kernel text: each is a function over `&str` that neither reads files nor
//! fails loudly. Unknown or malformed input yields `None` or an empty result, never a panic;
//! the readers in [`crate::cpu`] and [`crate::host`] fetch the text through a
//! [`Root`](crate::Root) and decide what "absent" means.
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
