//! (being written) /proc/irq readers.
