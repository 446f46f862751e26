//! The EXIT STATUS sections of the commands whose help does not carry its own (those that do:
//! measure, load, audit, run, compare, explain, show, export, tune irqd), for `--help` and the
//! man pages.

/// Commands with no verdict: they did what was asked, or the input was wrong.
pub const DONE: &str = "\
EXIT STATUS:
    0    done
    2    bad input or setup error (the message names the value and the fix)";

/// `rtlab import`.
pub const IMPORT: &str = "\
EXIT STATUS:
    0    every file was read and stored
    2    a file could not be read, is not in a format rtlab reads, or holds figures no tool
         writes (counts past 2^64, a CPU above 8191): the message names the file and line, and
         nothing is stored";

/// `rtlab report`.
pub const REPORT: &str = "\
EXIT STATUS:
    0    the report was written and every run passed (against the criteria it was measured
         with, or --budget)
    1    the report was written, and a run failed or cannot be judged (each reason on standard
         error, as the report's first screen says it)
    2    bad input: a RUN that names nothing or cannot be read, an unwritable --output";

/// `rtlab tune plan`.
pub const TUNE_PLAN: &str = "\
EXIT STATUS:
    0    the plan was printed (nothing is changed)
    2    bad input: --rt-cpus that leave no housekeeping CPU or name offline CPUs, a bad IRQ
         rule";

/// `rtlab tune apply`.
pub const TUNE_APPLY: &str = "\
EXIT STATUS:
    0    every change was made (or nothing was confirmed, and nothing applied)
    1    applied, but the kernel refused some changes (listed; the rest stand, and `rtlab tune
         revert` takes them back)
    2    bad input, no terminal to confirm on without --yes, or a journal that cannot be written";

/// `rtlab tune revert`.
pub const TUNE_REVERT: &str = "\
EXIT STATUS:
    0    everything the journal records is back
    1    something could not be put back (listed; the journal is kept for another try)
    2    no journal there, or it cannot be read";

/// `rtlab tune status`.
pub const TUNE_STATUS: &str = "\
EXIT STATUS:
    0    nothing applied, or every applied step still holds
    1    a file drifted since apply (changed by someone else)
    2    the journal cannot be read";

/// `rtlab tune run`.
pub const TUNE_RUN: &str = "\
EXIT STATUS:
    the command's own, once it runs (rtlab becomes it)
    2    no tuning applied, the RT cpuset cannot be joined, or the command cannot be started";

/// `rtlab explain irqs|sched|wakeups`.
pub const ANALYSIS: &str = "\
EXIT STATUS:
    0    analysed (the tables flag what is over --budget; that is not a failed verdict)
    2    the file cannot be read or holds no trace events";

/// Commands that only group subcommands (`rtlab tune`, `trace`, `kconfig`).
pub const GROUP: &str = "\
EXIT STATUS:
    each subcommand's, listed in its help (`rtlab help COMMAND SUBCOMMAND`); 2 for a missing
    or unknown subcommand";

/// `rtlab trace record`.
pub const TRACE_RECORD: &str = "\
EXIT STATUS:
    0    the trace was written (also when Ctrl-C ended the recording early)
    2    bad input or setup error: an output that cannot be written (checked first), no
         tracefs, unknown events";
