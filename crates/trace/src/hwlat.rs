//! The hwlat tracer's output.
