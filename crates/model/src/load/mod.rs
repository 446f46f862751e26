//! Load: what runs beside a measurement, as written ([`spec`]) and as achieved ([`report`]).

pub mod report;
pub mod spec;

pub use report::{ENDED_EARLY, GeneratorReport, LoadReport};
pub use spec::{GeneratorKind, GeneratorSpec, LoadSpec, LoadSpecError};
