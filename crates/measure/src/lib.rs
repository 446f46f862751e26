//! rtlab measure
