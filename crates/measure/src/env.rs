//! Where and with what clock a run happens ([`Environment`], [`ClockChoice`]), and why one
//! could not be done ([`RunError`]): the words shared by the run's orchestration and its
//! measuring threads.

use sys::Root;

use crate::clock::FakeScript;

/// Which clock the threads use.
#[derive(Clone, Debug)]
pub enum ClockChoice {
    /// CLOCK_MONOTONIC, real threads with real scheduling: a measurement.
    Real,
    /// Scripted latencies, no scheduling changes: for tests of the logic.
    Fake(FakeScript),
}

/// Where a run happens.
#[derive(Clone, Debug)]
pub struct Environment {
    /// Kernel tree (the host, or a fixture for tests).
    pub root: Root,
    /// The clock.
    pub clock: ClockChoice,
}

/// Why a run could not be done. Each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Missing privileges for the requested policy.
    #[error("{0}")]
    Privileges(String),
    /// The kernel refused a step of the setup.
    #[error("{what}: {source}")]
    Kernel {
        /// The step.
        what: String,
        /// The kernel's answer.
        #[source]
        source: sys::Error,
    },
    /// A setup step other than privileges and kernel calls failed (a tracer missing, its
    /// output unreadable).
    #[error("{0}")]
    Setup(String),
    /// A measuring thread could not be prepared.
    #[error("CPU {cpu}: {message}")]
    Thread {
        /// The CPU.
        cpu: u32,
        /// What went wrong.
        message: String,
    },
}
