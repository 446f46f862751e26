//! Exit statuses and the error that means "the input was wrong" (exit 2).
//!
//! 0: ran, every verdict passed. 1: ran, a verdict failed. 2: bad input or setup error.
//! 130: interrupted by a signal, result kept.

use std::process::ExitCode;

/// How a command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Ran; every verdict passed.
    Ok,
    /// Ran; a verdict failed (latency over a budget, a break fired).
    VerdictFailed,
    /// Stopped early by SIGINT/SIGTERM.
    Interrupted,
    /// A started program's own exit status, handed on (`rtlab exec`).
    Status(u8),
}

impl Exit {
    /// The process exit code.
    pub fn code(self) -> ExitCode {
        match self {
            Exit::Ok => ExitCode::SUCCESS,
            Exit::VerdictFailed => ExitCode::from(1),
            Exit::Interrupted => ExitCode::from(130),
            Exit::Status(code) => ExitCode::from(code),
        }
    }
}

/// A problem with what the person asked for, or with the machine's readiness; printed as one
/// line, exit status 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}
