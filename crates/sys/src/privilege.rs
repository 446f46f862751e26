//! What the process is allowed to do for real-time work: its effective uid, the capabilities
//! that matter (CAP_SYS_NICE for real-time policies, CAP_IPC_LOCK for locking memory) and the
//! resource limits that stand in for them (RLIMIT_RTPRIO, RLIMIT_MEMLOCK).
//!
//! This module only observes: it must not try a privileged call to find out (that is the
//! caller's job, with the real error in hand), and it changes no limit or capability.

use crate::Root;
use crate::mem::{Limit, soft_limit};

/// CAP_IPC_LOCK's bit in the capability sets (include/uapi/linux/capability.h).
const CAP_IPC_LOCK: u32 = 14;
/// CAP_SYS_NICE's bit.
const CAP_SYS_NICE: u32 = 23;

/// The process's privileges for real-time work, as the kernel sees them now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Privileges {
    /// Effective user id.
    pub euid: u32,
    /// CAP_SYS_NICE is effective: any real-time policy and priority.
    pub cap_sys_nice: bool,
    /// CAP_IPC_LOCK is effective: lock any amount of memory.
    pub cap_ipc_lock: bool,
    /// Soft RLIMIT_RTPRIO (the highest fifo/rr priority allowed without CAP_SYS_NICE);
    /// `None` = unlimited.
    pub rtprio_limit: Option<u64>,
    /// Soft RLIMIT_MEMLOCK in bytes; `None` = unlimited.
    pub memlock_limit: Option<u64>,
}

impl Privileges {
    /// Reads the effective capabilities (CapEff in `/proc/self/status`) and the limits
    /// (getrlimit). Where `/proc` cannot be read, uid 0 is taken to hold every capability.
    pub fn current() -> Privileges {
        // SAFETY: geteuid has no preconditions and cannot fail.
        let euid = unsafe { libc::geteuid() };
        let caps = Root::host()
            .read("/proc/self/status")
            .ok()
            .and_then(|status| cap_eff(&status))
            .unwrap_or(if euid == 0 { u64::MAX } else { 0 });
        Privileges {
            euid,
            cap_sys_nice: caps & (1 << CAP_SYS_NICE) != 0,
            cap_ipc_lock: caps & (1 << CAP_IPC_LOCK) != 0,
            rtprio_limit: soft_limit(Limit::RtPrio),
            memlock_limit: soft_limit(Limit::MemLock),
        }
    }

    /// Whether SCHED_FIFO/SCHED_RR at `prio` will be allowed: priority 0 always, otherwise
    /// with CAP_SYS_NICE or an RLIMIT_RTPRIO of at least `prio`. (The kernel checks the
    /// capability, not the uid: root in a container without CAP_SYS_NICE is refused.)
    pub fn can_use_priority(&self, prio: u8) -> bool {
        prio == 0 || self.cap_sys_nice || self.rtprio_limit.is_none_or(|l| l >= u64::from(prio))
    }

    /// Whether mlockall is sure to succeed whatever the process's size: with CAP_IPC_LOCK or an
    /// unlimited RLIMIT_MEMLOCK. (A finite limit may still suffice for a small process.)
    pub fn can_lock_memory(&self) -> bool {
        self.cap_ipc_lock || self.memlock_limit.is_none()
    }
}

/// One line on how to grant real-time scheduling and memory locking.
pub fn rt_fix_hint() -> &'static str {
    "run as root, or grant the capabilities (sudo setcap cap_sys_nice,cap_ipc_lock+ep \
     $(command -v rtlab)), or raise the limits (`ulimit -r 99 -l unlimited`, or \
     `@realtime - rtprio 99` and `@realtime - memlock unlimited` in /etc/security/limits.conf)"
}

/// The effective capability set from `/proc/PID/status` text (`CapEff:\t000001fffeffffff`).
fn cap_eff(status: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let hex = line.strip_prefix("CapEff:")?.trim();
        u64::from_str_radix(hex, 16).ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_effective_capabilities() {
        let status = "Name:\trtlab\nCapInh:\t0000000000000000\nCapPrm:\t000001ffffffffff\n\
                      CapEff:\t0000000000800000\nCapBnd:\t000001ffffffffff\n";
        assert_eq!(cap_eff(status), Some(1 << CAP_SYS_NICE));
        assert_eq!(cap_eff("CapEff:\tzz\n"), None);
        assert_eq!(cap_eff("Name:\tx\n"), None);
    }

    #[test]
    fn judges_what_is_allowed() {
        let nobody = Privileges {
            euid: 1000,
            cap_sys_nice: false,
            cap_ipc_lock: false,
            rtprio_limit: Some(0),
            memlock_limit: Some(8 << 20),
        };
        assert!(nobody.can_use_priority(0));
        assert!(!nobody.can_use_priority(1));
        assert!(!nobody.can_lock_memory());
        let limited = Privileges {
            rtprio_limit: Some(50),
            memlock_limit: None,
            ..nobody
        };
        assert!(limited.can_use_priority(50) && !limited.can_use_priority(51));
        assert!(limited.can_lock_memory());
        let capable = Privileges {
            cap_sys_nice: true,
            cap_ipc_lock: true,
            ..nobody
        };
        assert!(capable.can_use_priority(99) && capable.can_lock_memory());
    }

    #[test]
    fn reads_this_process_and_agrees_with_the_kernel() {
        let p = Privileges::current();
        eprintln!("{p:?}");
        // SAFETY: getuid has no preconditions.
        assert_eq!(p.euid == 0, unsafe { libc::geteuid() } == 0);
        let fifo_ok = std::thread::spawn(|| {
            let params = crate::sched::SchedParams::new(model::measure::Policy::Fifo, 1);
            crate::sched::set_current_thread_policy(&params).is_ok()
        })
        .join()
        .unwrap();
        assert_eq!(p.can_use_priority(1), fifo_ok);
        assert!(rt_fix_hint().contains("setcap cap_sys_nice"));
    }
}
