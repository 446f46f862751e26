//! Scheduling of the calling thread: its id, name, CPU affinity and policy (SCHED_FIFO, RR,
//! OTHER, BATCH, IDLE and DEADLINE through `sched_setattr`); and, for `rtlab tune`, the
//! affinity and policy of another thread.
//!
//! The calling-thread functions use pid 0 in the kernel's calls, so a measuring thread
//! configures itself before its loop; the `*_thread_*(tid, ..)` ones name their thread. Nothing here may be called inside the measuring
//! loop, and nothing here decides policy: refusals come back as [`Error`]s that name the call and
//! the fix, and the caller chooses whether to degrade.

use std::io;
use std::path::PathBuf;

use model::measure::Policy;
use model::{CpuSet, Nanos};

use crate::{Error, Result, Root};

/// `SCHED_DEADLINE` (include/uapi/linux/sched.h); libc does not define it.
const SCHED_DEADLINE: u32 = 6;

/// CPUs a mask can describe: the kernel's NR_CPUS tops out at 8192.
const MASK_CPUS: usize = 8192;
const WORD_BITS: usize = libc::c_ulong::BITS as usize;
/// The kernel's `cpumask` layout: an array of `unsigned long`, CPU n at bit n % W of word n / W.
type Mask = [libc::c_ulong; MASK_CPUS / WORD_BITS];

/// The fix for a refused real-time policy.
const RT_FIX: &str = "run as root, or give the binary CAP_SYS_NICE \
     (setcap cap_sys_nice+ep $(command -v rtlab)), or raise RLIMIT_RTPRIO \
     (ulimit -r 99, or `@realtime - rtprio 99` in /etc/security/limits.conf)";

/// `struct sched_attr` (include/uapi/linux/sched/types.h), `SCHED_ATTR_SIZE_VER1`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
    sched_util_min: u32,
    sched_util_max: u32,
}

/// `struct sched_param` as the kernel reads it (include/uapi/linux/sched/types.h): the
/// priority alone, whatever the C library's own struct holds.
#[repr(C)]
struct KernelSchedParam {
    sched_priority: libc::c_int,
}

const SCHED_ATTR_SIZE: u32 = std::mem::size_of::<SchedAttr>() as u32;
const _: () = assert!(SCHED_ATTR_SIZE == 56);

/// How a thread is scheduled: a policy, its priority (1–99 for fifo/rr, 0 otherwise) and, for
/// SCHED_DEADLINE, its runtime, relative deadline and period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedParams {
    /// The policy.
    pub policy: Policy,
    /// Real-time priority for fifo/rr (1–99); ignored (the kernel requires 0) for the others.
    pub priority: u8,
    /// SCHED_DEADLINE runtime (CPU time per period); required for deadline.
    pub dl_runtime: Option<Nanos>,
    /// SCHED_DEADLINE relative deadline; defaults to the period.
    pub dl_deadline: Option<Nanos>,
    /// SCHED_DEADLINE period; defaults to the deadline.
    pub dl_period: Option<Nanos>,
}

impl SchedParams {
    /// A fixed-priority real-time policy (`Fifo` or `Rr`) or a normal one with priority 0.
    pub fn new(policy: Policy, priority: u8) -> SchedParams {
        SchedParams {
            policy,
            priority,
            dl_runtime: None,
            dl_deadline: None,
            dl_period: None,
        }
    }

    /// SCHED_DEADLINE with `runtime` every `period` and the deadline equal to the period.
    pub fn deadline(runtime: Nanos, period: Nanos) -> SchedParams {
        SchedParams {
            dl_runtime: Some(runtime),
            dl_period: Some(period),
            ..SchedParams::new(Policy::Deadline, 0)
        }
    }
}

/// The calling thread's kernel thread id (gettid), as shown in traces and `/proc/PID/task`.
///
/// Asked with the raw system call, not libc's `gettid()`: the standard library refers to that
/// symbol weakly, and in a static musl binary linked with LTO the reference stays weak, is not
/// pulled from libc.a, and is null at run time (the dist build crashed in the measuring thread).
pub fn current_tid() -> u32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) };
    tid as u32
}

/// The CPUs the calling thread may run on (`sched_getaffinity(0)`).
pub fn affinity() -> Result<CpuSet> {
    let mut mask: Mask = [0; MASK_CPUS / WORD_BITS];
    // SAFETY: `mask` is writable for `size_of_val(&mask)` bytes, the size passed; the kernel
    // writes at most that many bytes (glibc zeroes any it does not write).
    let rc = unsafe {
        libc::sched_getaffinity(
            0,
            std::mem::size_of_val(&mask),
            mask.as_mut_ptr().cast::<libc::cpu_set_t>(),
        )
    };
    if rc != 0 {
        return Err(call_error("sched_getaffinity", io::Error::last_os_error()));
    }
    let mut cpus = CpuSet::new();
    for (i, word) in mask.iter().enumerate() {
        for bit in 0..WORD_BITS {
            if word & (1 << bit) != 0 {
                cpus.insert((i * WORD_BITS + bit) as u32);
            }
        }
    }
    Ok(cpus)
}

fn mask_of(cpus: &CpuSet) -> Result<Box<Mask>> {
    let mut mask: Box<Mask> = Box::new([0; MASK_CPUS / WORD_BITS]);
    for cpu in cpus.iter() {
        let cpu = cpu as usize;
        if cpu >= MASK_CPUS {
            return Err(Error::Unsupported {
                what: format!("pinning to CPU {cpu}"),
                why: format!("the kernel numbers CPUs below {MASK_CPUS}"),
            });
        }
        mask[cpu / WORD_BITS] |= 1 << (cpu % WORD_BITS);
    }
    Ok(mask)
}

/// Makes the process `cmd` starts run only on `cpus`: the affinity is set between fork and
/// exec, so the program and everything it starts inherit it from its first instruction.
pub fn pin_command(cmd: &mut std::process::Command, cpus: &CpuSet) -> Result<()> {
    use std::os::unix::process::CommandExt;
    let mask = mask_of(cpus)?;
    // SAFETY: the closure runs between fork and exec and only calls sched_setaffinity, an
    // async-signal-safe system call, on a mask prepared before the fork; it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            let rc = libc::sched_setaffinity(
                0,
                std::mem::size_of_val(&*mask),
                mask.as_ptr().cast::<libc::cpu_set_t>(),
            );
            if rc == 0 {
                Ok(())
            } else {
                Err(io::Error::last_os_error())
            }
        });
    }
    Ok(())
}

/// Sets the affinity of thread `tid` (`sched_setaffinity(tid)`): `tune revert` gives tasks
/// back the CPUs they had before a cpuset move narrowed them.
pub fn set_thread_affinity(tid: u32, cpus: &CpuSet) -> Result<()> {
    let mask = mask_of(cpus)?;
    let pid = libc::pid_t::try_from(tid).map_err(|_| Error::Unsupported {
        what: format!("sched_setaffinity({tid})"),
        why: "not a thread id".to_string(),
    })?;
    // SAFETY: `mask` is readable for the size passed; the kernel only reads it.
    let rc = unsafe {
        libc::sched_setaffinity(
            pid,
            std::mem::size_of_val(&*mask),
            mask.as_ptr().cast::<libc::cpu_set_t>(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(call_error(
            &format!("sched_setaffinity({tid}, CPUs {cpus})"),
            io::Error::last_os_error(),
        ))
    }
}

/// Restricts the calling thread to `cpus` (`sched_setaffinity(0)`).
pub fn pin_current_thread(cpus: &CpuSet) -> Result<()> {
    let mask = mask_of(cpus)?;
    // SAFETY: `mask` is readable for the size passed; the kernel only reads it.
    let rc = unsafe {
        libc::sched_setaffinity(
            0,
            std::mem::size_of_val(&*mask),
            mask.as_ptr().cast::<libc::cpu_set_t>(),
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    let call = format!("sched_setaffinity(CPUs {cpus})");
    Err(match err.raw_os_error() {
        Some(libc::EINVAL) => Error::Unsupported {
            what: call,
            why: format!(
                "none of these CPUs is online and allowed by this thread's cpuset \
                 (online: {}); pick CPUs from the online set",
                online_cpus_text()
            ),
        },
        Some(libc::EBUSY) => Error::Unsupported {
            what: call,
            why: "this thread runs under SCHED_DEADLINE, whose affinity must span its whole \
                  root domain; leave deadline threads unpinned, or give the CPU an exclusive \
                  cpuset partition of its own"
                .to_string(),
        },
        Some(libc::EPERM) => Error::PermissionDenied {
            path: PathBuf::from(call),
            fix: "run as root or with CAP_SYS_NICE".to_string(),
        },
        _ => call_error(&call, err),
    })
}

/// Switches the calling thread to `p`: fifo/rr with `p.priority` through
/// `sched_setscheduler`; other/batch/idle with priority 0; deadline through `sched_setattr`
/// (the deadline defaults to the period, the period to the deadline).
///
/// Refusals name the fix: missing privileges, a deadline thread pinned to part of its root
/// domain, bandwidth refused by admission control, or invalid parameters.
pub fn set_current_thread_policy(p: &SchedParams) -> Result<()> {
    match p.policy {
        Policy::Fifo | Policy::Rr => set_scheduler(0, p.policy, p.priority),
        Policy::Other | Policy::Batch | Policy::Idle => set_scheduler(0, p.policy, 0),
        Policy::Deadline => set_deadline(p),
    }
}

/// Switches another thread (`tid`: an IRQ thread, say) to fifo/rr with `priority`, or to
/// other/batch/idle (priority ignored; its nice value stays). Deadline is refused: it needs
/// runtime and period, which this call does not carry.
pub fn set_thread_scheduler(tid: u32, policy: Policy, priority: u8) -> Result<()> {
    let tid = libc::pid_t::try_from(tid).map_err(|_| Error::Unsupported {
        what: format!("thread {tid}"),
        why: "not a thread id".to_string(),
    })?;
    match policy {
        Policy::Deadline => Err(Error::Unsupported {
            what: format!("SCHED_DEADLINE for thread {tid}"),
            why: "only fifo, rr, other, batch and idle can be set on another thread".to_string(),
        }),
        Policy::Fifo | Policy::Rr => set_scheduler(tid, policy, priority),
        _ => set_scheduler(tid, policy, 0),
    }
}

fn set_scheduler(tid: libc::pid_t, policy: Policy, priority: u8) -> Result<()> {
    let number = match policy {
        Policy::Fifo => libc::SCHED_FIFO,
        Policy::Rr => libc::SCHED_RR,
        Policy::Other => libc::SCHED_OTHER,
        Policy::Batch => libc::SCHED_BATCH,
        Policy::Idle => libc::SCHED_IDLE,
        Policy::Deadline => unreachable!("deadline goes through sched_setattr"),
    };
    // The system call, not the C library's function: musl's sched_setscheduler sets nothing
    // and fails with ENOSYS (POSIX gives it per-process meaning, Linux per-thread), so a static
    // musl binary must make the call itself. The kernel's sched_param is one int.
    let param = KernelSchedParam {
        sched_priority: priority.into(),
    };
    // SAFETY: `param` is a valid kernel sched_param that the kernel only reads; `tid` 0 is
    // this thread, any other a thread id the kernel checks.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_setscheduler,
            tid,
            number,
            &param as *const KernelSchedParam,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    let call = format!(
        "sched_setscheduler({}SCHED_{}, priority {priority})",
        if tid == 0 {
            String::new()
        } else {
            format!("thread {tid}, ")
        },
        policy.as_str().to_uppercase()
    );
    Err(match err.raw_os_error() {
        Some(libc::EPERM) => Error::PermissionDenied {
            path: PathBuf::from(call),
            fix: format!(
                "{RT_FIX} (RLIMIT_RTPRIO is now {}); if already privileged, the thread's cpu \
                 cgroup may grant no real-time time (cpu.rt_runtime_us = 0 with \
                 CONFIG_RT_GROUP_SCHED)",
                rtprio_text()
            ),
        },
        Some(libc::EINVAL) if policy.takes_priority() => Error::Unsupported {
            what: call,
            why: "SCHED_FIFO and SCHED_RR take a priority from 1 to 99".to_string(),
        },
        _ => call_error(&call, err),
    })
}

fn set_deadline(p: &SchedParams) -> Result<()> {
    let runtime = p.dl_runtime.map_or(0, Nanos::get);
    let deadline = p.dl_deadline.or(p.dl_period).map_or(0, Nanos::get);
    let period = p.dl_period.or(p.dl_deadline).map_or(0, Nanos::get);
    let call = format!(
        "sched_setattr(SCHED_DEADLINE, runtime {runtime} ns, deadline {deadline} ns, \
         period {period} ns)"
    );
    if let Err(why) = check_deadline(runtime, deadline, period) {
        return Err(Error::Unsupported { what: call, why });
    }
    let attr = SchedAttr {
        size: SCHED_ATTR_SIZE,
        sched_policy: SCHED_DEADLINE,
        sched_runtime: runtime,
        sched_deadline: deadline,
        sched_period: period,
        ..SchedAttr::default()
    };
    // SAFETY: `attr` is a valid, fully initialised sched_attr whose `size` field matches its
    // layout; the kernel only reads it. pid 0 is this thread, flags must be 0.
    let rc = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) };
    if rc == 0 {
        return Ok(());
    }
    let share = runtime as f64 * 100.0 / period as f64;
    Err(deadline_refusal(
        call,
        io::Error::last_os_error(),
        affinity().ok(),
        share,
    ))
}

/// Why the kernel refused a SCHED_DEADLINE reservation, with the fix; `allowed` is the CPUs
/// the thread may run on when it asked (pinning matters for EPERM).
/// `share` is runtime/period in percent of a CPU.
fn deadline_refusal(call: String, err: io::Error, allowed: Option<CpuSet>, share: f64) -> Error {
    match err.raw_os_error() {
        Some(libc::EPERM) => deadline_eperm(call, allowed),
        Some(libc::EBUSY) => Error::Unsupported {
            what: call,
            why: format!(
                "admission control refused the bandwidth: runtime/period ({share:.1}% of a CPU) \
                 does not fit in what SCHED_DEADLINE may still use on these CPUs \
                 (kernel.sched_rt_runtime_us / sched_rt_period_us per CPU, minus other \
                 deadline tasks); use a smaller runtime or a longer period"
            ),
        },
        Some(libc::EINVAL) => Error::Unsupported {
            what: call,
            why: format!(
                "the kernel rejected these parameters: it needs 1024 ns <= runtime <= \
                 deadline <= period, and a period between kernel.sched_deadline_period_min_us \
                 and kernel.sched_deadline_period_max_us ({})",
                period_limits_text()
            ),
        },
        _ => call_error(&call, err),
    }
}

/// The kernel's `__checkparam_dl` rules, checked first so the message says which one failed.
fn check_deadline(runtime: u64, deadline: u64, period: u64) -> std::result::Result<(), String> {
    if runtime == 0 {
        return Err("SCHED_DEADLINE needs a runtime (CPU time per period)".to_string());
    }
    if deadline == 0 {
        return Err("SCHED_DEADLINE needs a period or a deadline".to_string());
    }
    if runtime < 1024 {
        return Err(format!(
            "runtime {runtime} ns is below the kernel's minimum of 1024 ns"
        ));
    }
    if runtime > deadline {
        return Err(format!(
            "runtime {runtime} ns exceeds the deadline {deadline} ns"
        ));
    }
    if deadline > period {
        return Err(format!(
            "deadline {deadline} ns exceeds the period {period} ns"
        ));
    }
    if period >= 1 << 63 {
        return Err(format!("period {period} ns is too large"));
    }
    Ok(())
}

/// EPERM from sched_setattr(SCHED_DEADLINE): a pinned thread, or missing privileges.
fn deadline_eperm(call: String, allowed: Option<CpuSet>) -> Error {
    let online = Root::host()
        .read_trimmed("/sys/devices/system/cpu/online")
        .and_then(|text| CpuSet::parse_list(&text).ok());
    let pinned = match (&allowed, &online) {
        (Some(allowed), Some(online)) => !online.is_subset(allowed),
        _ => false,
    };
    let fix = if pinned {
        format!(
            "this thread may only run on CPUs {} (set by pinning, taskset or its cpuset \
             cgroup) but the kernel admits a SCHED_DEADLINE task only \
             when its affinity spans its whole root domain (here the online CPUs {}), because \
             deadline bandwidth is accounted per root domain; leave the deadline thread \
             unpinned, or put its CPU in its own exclusive cpuset partition \
             (cpuset.cpu_exclusive=1 with sched_load_balance=0 in the parent) so the CPU is a \
             root domain of its own",
            allowed
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default(),
            online.as_ref().map(ToString::to_string).unwrap_or_default()
        )
    } else {
        "SCHED_DEADLINE needs CAP_SYS_NICE (RLIMIT_RTPRIO does not grant it): run as root, or \
         give the binary CAP_SYS_NICE (setcap cap_sys_nice+ep $(command -v rtlab))"
            .to_string()
    };
    Error::PermissionDenied {
        path: PathBuf::from(call),
        fix,
    }
}

/// The calling thread's policy and real-time priority (0 for non-real-time policies).
pub fn current_thread_policy() -> Result<(Policy, u8)> {
    let p = current_thread_params()?;
    Ok((p.policy, p.priority))
}

/// The calling thread's full scheduling parameters, deadline ones included (`sched_getattr`).
pub fn current_thread_params() -> Result<SchedParams> {
    thread_params(0)
}

/// Thread `tid`'s full scheduling parameters (`sched_getattr`; 0 is the calling thread).
pub fn thread_params(tid: u32) -> Result<SchedParams> {
    let tid = libc::pid_t::try_from(tid).map_err(|_| Error::Unsupported {
        what: format!("sched_getattr for thread {tid}"),
        why: "not a thread id".to_string(),
    })?;
    let mut attr = SchedAttr::default();
    // SAFETY: `attr` is writable for SCHED_ATTR_SIZE bytes, the size passed; the kernel writes
    // at most that many. pid 0 is this thread, any other a thread id the kernel checks; flags
    // must be 0.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid,
            &mut attr as *mut SchedAttr,
            SCHED_ATTR_SIZE,
            0,
        )
    };
    if rc != 0 {
        return Err(call_error("sched_getattr", io::Error::last_os_error()));
    }
    let policy = match attr.sched_policy {
        p if p == libc::SCHED_OTHER as u32 => Policy::Other,
        p if p == libc::SCHED_FIFO as u32 => Policy::Fifo,
        p if p == libc::SCHED_RR as u32 => Policy::Rr,
        p if p == libc::SCHED_BATCH as u32 => Policy::Batch,
        p if p == libc::SCHED_IDLE as u32 => Policy::Idle,
        SCHED_DEADLINE => {
            return Ok(SchedParams {
                dl_runtime: Some(Nanos(attr.sched_runtime)),
                dl_deadline: Some(Nanos(attr.sched_deadline)),
                dl_period: Some(Nanos(attr.sched_period)),
                ..SchedParams::new(Policy::Deadline, 0)
            });
        }
        other => {
            return Err(Error::Unsupported {
                what: "sched_getattr".to_string(),
                why: format!("the thread runs under policy {other}, which rtlab does not know"),
            });
        }
    };
    Ok(SchedParams::new(policy, attr.sched_priority as u8))
}

/// Names the calling thread (prctl PR_SET_NAME), as shown in `ps -L`, `top -H` and traces;
/// truncated to the kernel's 15 bytes (at a character boundary) and at any NUL.
pub fn set_current_thread_name(name: &str) {
    let mut buf = [0u8; 16];
    let mut len = name.find('\0').unwrap_or(name.len()).min(15);
    while !name.is_char_boundary(len) {
        len -= 1;
    }
    buf[..len].copy_from_slice(&name.as_bytes()[..len]);
    // SAFETY: `buf` is a NUL-terminated buffer of 16 bytes, which PR_SET_NAME reads at most.
    unsafe { libc::prctl(libc::PR_SET_NAME, buf.as_ptr()) };
}

/// The calling thread's name (prctl PR_GET_NAME).
pub fn current_thread_name() -> String {
    let mut buf = [0u8; 16];
    // SAFETY: PR_GET_NAME writes at most 16 bytes, NUL included, into `buf`.
    unsafe { libc::prctl(libc::PR_GET_NAME, buf.as_mut_ptr()) };
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..len]).into_owned()
}

fn call_error(call: &str, source: io::Error) -> Error {
    Error::from_syscall(call, source)
}

fn online_cpus_text() -> String {
    Root::host()
        .read_trimmed("/sys/devices/system/cpu/online")
        .unwrap_or_else(|| "unknown".to_string())
}

fn rtprio_text() -> String {
    match crate::mem::soft_limit(crate::mem::Limit::RtPrio) {
        None => "unlimited".to_string(),
        Some(limit) => limit.to_string(),
    }
}

fn period_limits_text() -> String {
    let root = Root::host();
    let read = |name: &str| {
        root.read_trimmed(format!("/proc/sys/kernel/{name}"))
            .unwrap_or_else(|| "?".to_string())
    };
    format!(
        "here {}..{} us",
        read("sched_deadline_period_min_us"),
        read("sched_deadline_period_max_us")
    )
}

mod prepared;
#[cfg(test)]
mod tests;

pub use prepared::PreparedPolicy;
