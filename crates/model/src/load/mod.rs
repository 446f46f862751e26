//! Load: what runs beside a measurement, as written ([`spec`]) and as achieved ([`report`]).

pub mod report;
pub mod spec;

pub use report::{GeneratorReport, LoadReport};
pub use spec::{GeneratorKind, GeneratorSpec, LoadSpec, LoadSpecError};
