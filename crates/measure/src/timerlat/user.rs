//! The timerlat engine's user-space measuring threads (`--user-threads`, Linux 6.6 and later):
//! one thread per CPU, pinned to it, SCHED_FIFO 95 as the kernel's own threads, named
//! `timerlatu/N` as rtla names them, that waits for each activation by reading the CPU's
//! `timerlat_fd`. The kernel records the thread's wake-up (the thread latency) and, at its next
//! read, its return to user space: the third figure, closest to what an application thread
//! sees. The loop is one system call per activation and nothing else.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use model::CpuSet;
use model::measure::Policy;
use sys::sched::{PreparedPolicy, SchedParams};
use sys::timerlat::TimerlatFd;

use crate::env::RunError;

/// The priority of the threads: the kernel's timerlat threads' (and rtla's).
const PRIORITY: u8 = 95;
/// How long a thread may take to set itself up.
const READY_WITHIN: Duration = Duration::from_secs(5);

/// The threads, measuring until [`UserThreads::stop`]; stopped and joined when dropped.
pub(super) struct UserThreads {
    stop: Arc<AtomicBool>,
    threads: Vec<(u32, JoinHandle<Result<(), String>>)>,
}

impl UserThreads {
    /// Starts a thread per CPU of `cpus` reading `timerlat_fd` under the tracefs at `top`;
    /// returns once every thread waits for its first activation, or with the first thread's
    /// error.
    pub(super) fn start(top: &std::path::Path, cpus: &[u32]) -> Result<UserThreads, RunError> {
        let policy =
            PreparedPolicy::new(&SchedParams::new(Policy::Fifo, PRIORITY)).map_err(|source| {
                RunError::Kernel {
                    what: "preparing SCHED_FIFO 95 for the timerlat user threads".to_string(),
                    source,
                }
            })?;
        let mut threads = UserThreads {
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::with_capacity(cpus.len()),
        };
        let (ready, readies) = mpsc::channel();
        for &cpu in cpus {
            let (stop, ready) = (threads.stop.clone(), ready.clone());
            let top = top.to_path_buf();
            let handle = std::thread::Builder::new()
                .name(format!("timerlatu/{cpu}"))
                .spawn(move || {
                    let fd = set_up(&top, cpu, &policy);
                    let failed = fd.as_ref().err().cloned();
                    let _ = ready.send((cpu, failed));
                    measure(fd?, &stop)
                })
                .map_err(|e| RunError::Thread {
                    cpu,
                    message: format!("starting its timerlat user thread: {e}"),
                })?;
            threads.threads.push((cpu, handle));
        }
        for _ in cpus {
            match readies.recv_timeout(READY_WITHIN) {
                Ok((_, None)) => {}
                Ok((cpu, Some(message))) => return Err(RunError::Thread { cpu, message }),
                Err(_) => {
                    return Err(RunError::Setup(
                        "a timerlat user thread did not start within 5 s".to_string(),
                    ));
                }
            }
        }
        Ok(threads)
    }

    /// Tells every thread to end after its next activation.
    pub(super) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }

    /// Waits for every thread to end; the first thread's error, if one failed.
    pub(super) fn join(mut self) -> Result<(), RunError> {
        self.stop();
        let mut first = Ok(());
        for (cpu, handle) in std::mem::take(&mut self.threads) {
            let result = match handle.join() {
                Ok(r) => r,
                Err(_) => Err("its timerlat user thread panicked".to_string()),
            };
            if let (Err(message), Ok(())) = (result, &first) {
                first = Err(RunError::Thread { cpu, message });
            }
        }
        first
    }
}

impl Drop for UserThreads {
    fn drop(&mut self) {
        self.stop();
        for (_, handle) in std::mem::take(&mut self.threads) {
            let _ = handle.join();
        }
    }
}

/// Pins the calling thread to `cpu`, takes SCHED_FIFO 95 and opens the CPU's `timerlat_fd`.
fn set_up(top: &std::path::Path, cpu: u32, policy: &PreparedPolicy) -> Result<TimerlatFd, String> {
    sys::sched::pin_current_thread(&CpuSet::from_cpus([cpu]))
        .map_err(|e| format!("pinning its timerlat user thread: {e}"))?;
    policy
        .apply()
        .map_err(|errno| format!("{}", policy.refusal(errno, None)))?;
    TimerlatFd::open(top, cpu).map_err(|e| e.to_string())
}

/// The loop: a read per activation until told to stop.
fn measure(mut fd: TimerlatFd, stop: &AtomicBool) -> Result<(), String> {
    while !stop.load(Ordering::Acquire) {
        fd.wait()
            .map_err(|e| format!("reading its timerlat_fd: {e}"))?;
    }
    Ok(())
}
