//! (being written) kconfig diff.
