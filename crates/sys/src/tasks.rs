//! (being written) thread enumeration.
