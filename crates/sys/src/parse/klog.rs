//! (being written) kernel log lines.
