//! The rules of `rtlab exec`, as pure functions over what was asked and what the machine
//! says: which real-time priority a program may be started at (talk 002: never 99, below the
//! IRQ threads), whether a SCHED_DEADLINE reservation is one the kernel can accept, whether
//! the CPUs exist, whether the started program locked its memory, and the exit status rtlab
//! hands back. Reading the machine and starting the program are `sys::launch`'s.

use model::{CpuSet, Nanos};

/// The top real-time priority, where the kernel's migration and watchdog threads run.
pub const TOP_PRIORITY: u8 = 99;

/// The priority PREEMPT_RT gives its IRQ threads when nobody changed them.
pub const DEFAULT_IRQ_THREAD_PRIORITY: u32 = 50;

/// Whether a program may start at real-time `priority`: `Err` with the one-line reason when
/// it must not; otherwise the warnings to print. `irq_threads` are the priorities of the
/// machine's IRQ threads (empty where interrupts are not threaded).
pub fn judge_priority(
    priority: u8,
    force: bool,
    irq_threads: &[u32],
) -> Result<Vec<String>, String> {
    let mut warnings = Vec::new();
    if priority >= TOP_PRIORITY {
        if !force {
            return Err(format!(
                "priority {priority} is refused: the kernel's own migration and watchdog \
                 threads run at 99, and a program there competes with them (a busy loop at 99 \
                 can stall CPU hot-plug and the stop-machine work); use 98 or lower, best below \
                 the IRQ threads (49 with their default 50), or add --allow-prio-99"
            ));
        }
        warnings.push(format!(
            "priority {priority} (--allow-prio-99): the program competes with the kernel's migration \
             and watchdog threads"
        ));
    }
    let lowest_irq = irq_threads.iter().copied().min();
    if let Some(lowest) = lowest_irq
        && u32::from(priority) >= lowest
    {
        let at_or_below = irq_threads
            .iter()
            .filter(|&&p| p <= u32::from(priority))
            .count();
        warnings.push(format!(
            "priority {priority} is at or above {at_or_below} of the {} IRQ threads \
             (lowest FIFO {lowest}): while the program runs, their interrupts wait; start it \
             at {} or lower unless it must preempt interrupt handling",
            irq_threads.len(),
            lowest.saturating_sub(1).max(1)
        ));
    }
    Ok(warnings)
}

/// The kernel's rules for a SCHED_DEADLINE reservation (`__checkparam_dl`): 1024 ns <=
/// runtime <= deadline <= period; the error names the rule and the values.
pub fn check_reservation(runtime: Nanos, deadline: Nanos, period: Nanos) -> Result<(), String> {
    if runtime.get() < 1024 {
        return Err(format!(
            "--deadline: runtime {runtime} is below the kernel's minimum of 1024ns"
        ));
    }
    if runtime > deadline {
        return Err(format!(
            "--deadline: runtime {runtime} exceeds the deadline {deadline}; the kernel needs \
             runtime <= deadline <= period"
        ));
    }
    if deadline > period {
        return Err(format!(
            "--deadline: deadline {deadline} exceeds the period {period}; the kernel needs \
             runtime <= deadline <= period"
        ));
    }
    Ok(())
}

/// `--cpus` must name online CPUs (and, inside the RT cpuset, CPUs of that cpuset).
pub fn check_cpus(cpus: &CpuSet, online: &CpuSet, cpuset: Option<&CpuSet>) -> Result<(), String> {
    let missing = cpus.difference(online);
    if !missing.is_empty() {
        return Err(format!(
            "--cpus {cpus}: CPU {missing} is not online here (online: {online})"
        ));
    }
    if let Some(granted) = cpuset {
        let outside = cpus.difference(granted);
        if !outside.is_empty() {
            return Err(format!(
                "--cpus {cpus}: CPU {outside} is outside the RT cpuset that `tune apply` made \
                 (CPUs {granted}); pick from those, or pass --no-cpuset"
            ));
        }
    }
    Ok(())
}

/// What to say when the started program has not locked its memory (`VmLck` of 0 kB): locks
/// do not survive exec, so the program must call mlockall itself. `None` when it locked.
pub fn memory_lock_warning(program: &str, locked_kib: u64, rss_kib: u64) -> Option<String> {
    (locked_kib == 0).then(|| {
        format!(
            "{program} has not locked its memory (VmLck 0 kB of VmRSS {rss_kib} kB): a page \
             fault can stall it for milliseconds; it should call \
             mlockall(MCL_CURRENT | MCL_FUTURE) at its start (a lock does not survive exec, \
             so rtlab cannot take it for the program)"
        )
    })
}

/// rtlab's exit status for the program's end, as a shell gives it: its exit code, or 128 +
/// the signal that ended it.
pub fn exit_status(code: Option<i32>, signal: Option<i32>) -> u8 {
    match (code, signal) {
        (Some(code), _) => (code & 0xff) as u8,
        (None, Some(signal)) => (128 + (signal & 0x7f)) as u8,
        (None, None) => 2,
    }
}

/// rtlab's exit status when the program could not be executed, as shells give it: 127 when
/// it was not found, 126 when it was found but could not run.
pub fn exec_failure_status(errno_not_found: bool) -> u8 {
    if errno_not_found { 127 } else { 126 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_99_is_refused_without_force_and_warned_with_it() {
        let err = judge_priority(99, false, &[]).unwrap_err();
        assert!(err.contains("migration and watchdog"), "{err}");
        assert!(err.contains("--allow-prio-99"), "{err}");
        let warnings = judge_priority(99, true, &[]).unwrap();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
    }

    #[test]
    fn a_priority_below_the_irq_threads_is_fine() {
        assert!(judge_priority(49, false, &[50, 50, 50]).unwrap().is_empty());
        assert!(judge_priority(80, false, &[]).unwrap().is_empty());
    }

    #[test]
    fn a_priority_at_or_above_the_irq_threads_is_warned() {
        let warnings = judge_priority(50, false, &[50, 50, 90]).unwrap();
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("2 of the 3 IRQ threads"),
            "{warnings:?}"
        );
        assert!(warnings[0].contains("at 49 or lower"), "{warnings:?}");
    }

    #[test]
    fn reservations_follow_the_kernel_rules() {
        let ms = |n: u64| Nanos(n * 1_000_000);
        assert!(check_reservation(ms(3), ms(10), ms(10)).is_ok());
        assert!(check_reservation(ms(3), ms(5), ms(10)).is_ok());
        let e = check_reservation(ms(11), ms(10), ms(10)).unwrap_err();
        assert!(e.contains("runtime 11ms exceeds the deadline 10ms"), "{e}");
        let e = check_reservation(ms(3), ms(20), ms(10)).unwrap_err();
        assert!(e.contains("deadline 20ms exceeds the period 10ms"), "{e}");
        assert!(check_reservation(Nanos(1000), ms(1), ms(1)).is_err());
    }

    #[test]
    fn cpus_must_be_online_and_in_the_cpuset() {
        let set = |t: &str| CpuSet::parse_list(t).unwrap();
        assert!(check_cpus(&set("1"), &set("0-3"), None).is_ok());
        let e = check_cpus(&set("7"), &set("0-3"), None).unwrap_err();
        assert!(e.contains("CPU 7 is not online"), "{e}");
        let e = check_cpus(&set("1"), &set("0-3"), Some(&set("2-3"))).unwrap_err();
        assert!(e.contains("outside the RT cpuset"), "{e}");
    }

    #[test]
    fn an_unlocked_program_is_named() {
        let w = memory_lock_warning("./app", 0, 1200).unwrap();
        assert!(
            w.contains("./app has not locked") && w.contains("1200 kB"),
            "{w}"
        );
        assert!(memory_lock_warning("./app", 1300, 1200).is_none());
    }

    #[test]
    fn exit_statuses_are_the_shells() {
        assert_eq!(exit_status(Some(0), None), 0);
        assert_eq!(exit_status(Some(3), None), 3);
        assert_eq!(exit_status(None, Some(2)), 130);
        assert_eq!(exit_status(None, Some(9)), 137);
        assert_eq!(exec_failure_status(true), 127);
        assert_eq!(exec_failure_status(false), 126);
    }
}
