//! The bounds rtlab puts on every number and file that comes from outside: command-line
//! values, files from other machines, kernel text. Each is applied where the value enters
//! (the CLI's parsers, the readers of files, the parsers of kernel text), so nothing further
//! in can be asked to allocate, loop or add beyond them. A value past a bound is refused with
//! one line that names it and the bound; a bound is never applied by silently cutting data.
//!
//! The figures are chosen to hold every real case with room to spare: the largest kernels,
//! runs of months, result files of hundreds of CPUs.

use crate::Nanos;

pub use crate::cpuset::MAX_CPU;

/// The longest run `rtlab measure` plans: a year. Multi-day runs are ordinary; a longer one is
/// a typing slip (`20000d`), and splitting it into runs loses nothing.
pub const MAX_RUN: Nanos = Nanos::from_secs(366 * 86_400);

/// The most worst-samples kept per CPU (`--spikes`). The table is searched for its smallest
/// entry when a larger sample replaces it, in the measuring loop: it must stay small.
pub const MAX_SPIKES: u32 = 1024;

/// The most slots of the maximum-over-time series kept per CPU. A run longer than this many
/// seconds gets longer slots (whole seconds, as few as fit), chosen before it starts, so a
/// 30-day run keeps 159-second slots in 256 KiB per CPU instead of 41 MiB of locked memory.
pub const MAX_SERIES_SLOTS: usize = 16_384;

/// The largest result document read (`show`, `export`, `compare`, `report`): a run of
/// hundreds of CPUs with full series is well below it.
pub const MAX_RESULT_BYTES: u64 = 512 << 20;

/// The largest file `rtlab import` reads whole (cyclictest, rtla and oslat outputs).
pub const MAX_IMPORT_BYTES: u64 = 512 << 20;

/// The largest kernel config read (`--kconfig`, `kconfig diff`, `/proc/config.gz` unpacked);
/// real ones are a few hundred KiB.
pub const MAX_KCONFIG_BYTES: u64 = 64 << 20;

/// The largest saved kernel log read (`--dmesg`); the kernel's own buffer is at most 32 MiB.
pub const MAX_KERNEL_LOG_BYTES: u64 = 256 << 20;

/// The largest tune journal read; one line per change, each well under a KiB.
pub const MAX_JOURNAL_BYTES: u64 = 64 << 20;

/// The largest IRQ rules file read (`--irq-rules-file`): one short line per rule.
pub const MAX_RULES_BYTES: u64 = 1 << 20;

/// The most bytes one metadata part of a trace.dat may hold once decompressed (kallsyms of a
/// kernel with every module is some 20 MiB; the event formats a few MiB).
pub const MAX_TRACEDAT_SECTION_BYTES: u64 = 256 << 20;

/// The most event formats a trace.dat may describe (a kernel with every tracepoint has some
/// 3,000).
pub const MAX_TRACEDAT_FORMATS: u32 = 100_000;

/// The largest ring-buffer page (sub-buffer) a trace.dat may hold: the kernel's
/// `buffer_subbuf_size_kb` goes to 1 MiB.
pub const MAX_TRACEDAT_PAGE_BYTES: u32 = 8 << 20;

/// The largest compressed chunk of trace data, decompressed (trace-cmd writes chunks of a
/// few pages).
pub const MAX_TRACEDAT_CHUNK_BYTES: u32 = 64 << 20;

/// The most option sections (version 7) or options in one section a trace.dat may chain.
pub const MAX_TRACEDAT_OPTIONS: usize = 4096;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bounds_hold_what_they_promise() {
        // 30 days at the slot count fits with whole-second slots of at most 159 s.
        let month = 30 * 86_400u64;
        assert_eq!(month.div_ceil(MAX_SERIES_SLOTS as u64), 159);
        assert!(MAX_RUN.get() > 365 * 86_400 * 1_000_000_000);
    }
}
