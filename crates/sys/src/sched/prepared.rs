//! A scheduling policy prepared in one process and applied in another: `rtlab exec` builds the
//! kernel's `sched_attr` before the fork, the child applies it with one system call between
//! fork and exec (no allocation, nothing but the call), and the parent explains a refusal.

use std::io;
use std::path::PathBuf;

use model::CpuSet;
use model::measure::Policy;

use super::{
    RT_FIX, SCHED_ATTR_SIZE, SCHED_DEADLINE, SchedAttr, SchedParams, call_error, check_deadline,
    deadline_refusal, rtprio_text,
};
use crate::{Error, Result};

/// A checked `sched_attr`, ready to apply to the calling thread with [`PreparedPolicy::apply`].
#[derive(Clone, Copy, Debug)]
pub struct PreparedPolicy {
    params: SchedParams,
    attr: SchedAttr,
}

impl PreparedPolicy {
    /// Checks `params` (priority range, the kernel's deadline rules) and lays out the
    /// kernel's structure; the error says which rule failed.
    pub fn new(params: &SchedParams) -> Result<PreparedPolicy> {
        let mut attr = SchedAttr {
            size: SCHED_ATTR_SIZE,
            ..SchedAttr::default()
        };
        match params.policy {
            Policy::Fifo | Policy::Rr => {
                if !(1..=99).contains(&params.priority) {
                    return Err(Error::Unsupported {
                        what: format!("priority {}", params.priority),
                        why: "SCHED_FIFO and SCHED_RR take a priority from 1 to 99".to_string(),
                    });
                }
                attr.sched_policy = if params.policy == Policy::Fifo {
                    libc::SCHED_FIFO as u32
                } else {
                    libc::SCHED_RR as u32
                };
                attr.sched_priority = params.priority.into();
            }
            Policy::Deadline => {
                let runtime = params.dl_runtime.map_or(0, |n| n.get());
                let deadline = params
                    .dl_deadline
                    .or(params.dl_period)
                    .map_or(0, |n| n.get());
                let period = params
                    .dl_period
                    .or(params.dl_deadline)
                    .map_or(0, |n| n.get());
                check_deadline(runtime, deadline, period).map_err(|why| Error::Unsupported {
                    what: call_text(params),
                    why,
                })?;
                attr.sched_policy = SCHED_DEADLINE;
                attr.sched_runtime = runtime;
                attr.sched_deadline = deadline;
                attr.sched_period = period;
            }
            Policy::Other => attr.sched_policy = libc::SCHED_OTHER as u32,
            Policy::Batch => attr.sched_policy = libc::SCHED_BATCH as u32,
            Policy::Idle => attr.sched_policy = libc::SCHED_IDLE as u32,
        }
        Ok(PreparedPolicy {
            params: *params,
            attr,
        })
    }

    /// The parameters it was made from.
    pub fn params(&self) -> &SchedParams {
        &self.params
    }

    /// Applies the policy to the calling thread (`sched_setattr(0, attr, 0)`); the error is
    /// the raw errno. Async-signal-safe: one system call on memory prepared beforehand, so it
    /// may run between fork and exec.
    pub fn apply(&self) -> std::result::Result<(), i32> {
        // SAFETY: `attr` is a valid, fully initialised sched_attr whose `size` matches its
        // layout; the kernel only reads it. pid 0 is this thread, flags must be 0.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_sched_setattr,
                0,
                &self.attr as *const SchedAttr,
                0,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error().raw_os_error().unwrap_or(0))
        }
    }

    /// Why the kernel refused [`PreparedPolicy::apply`] with `errno`, with the fix; `allowed`
    /// is the CPUs the thread could run on when it asked.
    pub fn refusal(&self, errno: i32, allowed: Option<CpuSet>) -> Error {
        let call = call_text(&self.params);
        let err = io::Error::from_raw_os_error(errno);
        if self.params.policy == Policy::Deadline {
            let share = self.attr.sched_runtime as f64 * 100.0 / self.attr.sched_period as f64;
            return deadline_refusal(call, err, allowed, share);
        }
        match errno {
            libc::EPERM => Error::PermissionDenied {
                path: PathBuf::from(call),
                fix: format!(
                    "{RT_FIX} (RLIMIT_RTPRIO is now {}); if already privileged, the cpu cgroup \
                     may grant no real-time time (cpu.rt_runtime_us = 0 with \
                     CONFIG_RT_GROUP_SCHED)",
                    rtprio_text()
                ),
            },
            _ => call_error(&call, err),
        }
    }
}

/// The call as messages name it: `sched_setattr(SCHED_FIFO, priority 10)`.
fn call_text(p: &SchedParams) -> String {
    match p.policy {
        Policy::Deadline => format!(
            "sched_setattr(SCHED_DEADLINE, runtime {} ns, deadline {} ns, period {} ns)",
            p.dl_runtime.map_or(0, |n| n.get()),
            p.dl_deadline.or(p.dl_period).map_or(0, |n| n.get()),
            p.dl_period.or(p.dl_deadline).map_or(0, |n| n.get())
        ),
        policy => format!(
            "sched_setattr(SCHED_{}, priority {})",
            policy.as_str().to_uppercase(),
            p.priority
        ),
    }
}
