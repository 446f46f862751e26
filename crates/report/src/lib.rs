//! rtlab report
