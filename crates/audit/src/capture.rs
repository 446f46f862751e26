//! (being written) capture.
