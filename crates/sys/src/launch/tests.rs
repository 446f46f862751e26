use std::ffi::OsString;

use model::measure::Policy;
use model::{CpuSet, Nanos};

use super::*;
use crate::process::reap;
use crate::sched::SchedParams;

fn words(list: &[&str]) -> Vec<OsString> {
    list.iter().map(OsString::from).collect()
}

fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn the_program_runs_and_its_exit_status_comes_back() {
    let pid = spawn(
        &Root::host(),
        &words(&["sh", "-c", "exit 3"]),
        &LaunchSetup::default(),
    )
    .expect("sh starts");
    let exit = reap(pid, true).unwrap().unwrap();
    assert_eq!(exit.code, Some(3));
}

#[test]
fn a_missing_program_is_an_exec_failure_not_a_setup_one() {
    let err = spawn(
        &Root::host(),
        &words(&["/nonexistent/rtlab-no-such-program"]),
        &LaunchSetup::default(),
    )
    .unwrap_err();
    match err {
        LaunchError::Exec { errno, .. } => assert_eq!(errno, libc::ENOENT),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_empty_command_is_refused() {
    assert!(matches!(
        spawn(&Root::host(), &[], &LaunchSetup::default()),
        Err(LaunchError::Setup(_))
    ));
}

#[test]
fn the_child_takes_the_affinity_before_exec() {
    let cpu = crate::sched::affinity().unwrap().first().unwrap();
    let setup = LaunchSetup {
        cpus: Some(CpuSet::from_cpus([cpu])),
        ..LaunchSetup::default()
    };
    let script = format!("grep -q '^Cpus_allowed_list:[[:space:]]*{cpu}$' /proc/self/status");
    let pid = spawn(&Root::host(), &words(&["sh", "-c", &script]), &setup).unwrap();
    assert_eq!(reap(pid, true).unwrap().unwrap().code, Some(0));
}

#[test]
fn memory_use_reads_this_process() {
    let mem = memory_use(&Root::host(), std::process::id()).expect("own status");
    assert!(mem.rss_kib > 0, "{mem:?}");
}

#[test]
fn a_fifo_program_runs_at_its_priority_and_a_pinned_deadline_is_explained() {
    if !is_root() {
        testkit::live::skip("needs root for SCHED_FIFO and SCHED_DEADLINE");
        return;
    }
    let fifo = PreparedPolicy::new(&SchedParams::new(Policy::Fifo, 7)).unwrap();
    let setup = LaunchSetup {
        policy: Some(fifo),
        ..LaunchSetup::default()
    };
    // Field 40 of stat is rt_priority, 41 the policy (1 = SCHED_FIFO); comm has no spaces.
    let script = "set -- $(cat /proc/self/stat); shift 39; [ \"$1 $2\" = '7 1' ]";
    let pid = spawn(&Root::host(), &words(&["sh", "-c", script]), &setup).unwrap();
    assert_eq!(reap(pid, true).unwrap().unwrap().code, Some(0));

    let online = CpuSet::parse_list(
        &Root::host()
            .read_trimmed("/sys/devices/system/cpu/online")
            .unwrap(),
    )
    .unwrap();
    if online.len() < 2 {
        testkit::live::skip("one CPU: a pinned deadline task spans its root domain; not checked");
        return;
    }
    let deadline =
        PreparedPolicy::new(&SchedParams::deadline(Nanos(1_000_000), Nanos(10_000_000))).unwrap();
    let setup = LaunchSetup {
        cpus: Some(CpuSet::from_cpus([online.first().unwrap()])),
        policy: Some(deadline),
        ..LaunchSetup::default()
    };
    let err = spawn(&Root::host(), &words(&["true"]), &setup).unwrap_err();
    let LaunchError::Setup(err) = err else {
        panic!("{err:?}")
    };
    let text = err.to_string();
    assert!(text.contains("root domain"), "{text}");
}
