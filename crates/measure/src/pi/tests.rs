use std::sync::{Mutex, MutexGuard};

use super::*;

/// One live check at a time: each asserts that this process has no real-time thread left.
fn serial() -> MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

fn config(duration_ms: u64, groups: u32) -> PiConfig {
    let cpus = sys::sched::affinity().unwrap();
    PiConfig::new(Nanos(duration_ms * 1_000_000), groups, cpus)
}

/// The threads of this process at a real-time policy now, by name.
fn rt_threads() -> Vec<String> {
    let root = sys::Root::host();
    let pid = std::process::id();
    sys::tasks::all_threads(&root)
        .unwrap()
        .into_iter()
        .filter(|t| t.pid == pid && t.is_realtime())
        .map(|t| format!("{} {}", t.comm, t.sched_label()))
        .collect()
}

#[test]
fn bad_bounds_are_one_line() {
    assert!(
        config(1000, 0)
            .validate()
            .unwrap_err()
            .contains("--groups 0")
    );
    assert!(config(1000, 65).validate().is_err());
    let mut one_cpu = config(1000, 2);
    one_cpu.cpus = CpuSet::from_cpus([0]);
    assert!(
        one_cpu
            .validate()
            .unwrap_err()
            .contains("one group per CPU")
    );
    assert!(config(10, 1).validate().unwrap_err().contains("--duration"));
    let mut c = config(1000, 1);
    c.hold = c.deadline;
    assert!(c.validate().is_err());
}

#[test]
fn pi_holds_every_inversion_and_the_control_catches_them() {
    let privileges = sys::privilege::Privileges::current();
    if !privileges.can_use_priority(40) {
        testkit::live::skip("SCHED_FIFO 40 needs root or CAP_SYS_NICE");
        return;
    }
    let _one = serial();
    let groups = sys::sched::affinity().unwrap().len().min(2) as u32;
    let check = run_check(&config(1000, groups), &mut |tick| {
        std::thread::sleep(tick);
        false
    })
    .unwrap();
    assert!(
        check.pi.groups.iter().all(|g| g.inversions > 50),
        "{check:#?}"
    );
    assert_eq!(check.pi.missed(), 0, "{check:#?}");
    // With inheritance the high thread waits about the hold (1 ms) on average; a single wait
    // may be longer where the hypervisor or a higher-priority thread takes the CPU.
    for g in &check.pi.groups {
        assert!(g.total_wait_ns / g.inversions < 10_000_000, "{check:#?}");
    }
    let rounds = 3 * u64::from(groups);
    assert_eq!(check.control.inversions(), rounds, "{check:#?}");
    assert_eq!(
        check.control.missed(),
        rounds,
        "the control caught nothing: {check:#?}"
    );
    assert_eq!(check.verdict, model::pi::PiVerdict::Held);
    assert!(rt_threads().is_empty(), "left at RT: {:?}", rt_threads());
}

#[test]
fn an_interrupted_check_stops_and_leaves_no_rt_thread() {
    let privileges = sys::privilege::Privileges::current();
    if !privileges.can_use_priority(40) {
        testkit::live::skip("SCHED_FIFO 40 needs root or CAP_SYS_NICE");
        return;
    }
    let _one = serial();
    let started = std::time::Instant::now();
    let mut ticks = 0;
    let err = run_check(&config(60_000, 1), &mut |tick| {
        std::thread::sleep(tick);
        ticks += 1;
        ticks > 4
    })
    .unwrap_err();
    assert_eq!(err, INTERRUPTED);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(rt_threads().is_empty(), "left at RT: {:?}", rt_threads());
}
