//! The inspection's checks on hand-made samples, and the sampler on fixture trees.

use std::time::Duration;

use model::CpuSet;
use model::audit::{Counts, RtCpus, Status};
use model::inspect::{FutexSeen, Inspection, KernelThreads, RunDelaySource, SCHEMA, ThreadReport};
use testkit::FakeRoot;

use super::*;

const LIMITS: Limits = Limits {
    run_delay_budget_ns: 100_000,
};

fn thread(tid: u32, sched: &str, prio: u32, cpus: &str) -> ThreadReport {
    ThreadReport {
        tid,
        name: format!("t{tid}"),
        sched: sched.to_string(),
        realtime: prio > 0,
        rt_priority: prio,
        cpus_allowed: Some(CpuSet::parse_list(cpus).unwrap()),
        last_cpu: Some(1),
        minor_faults: 0,
        major_faults: 0,
        voluntary_switches: Some(1000),
        involuntary_switches: Some(0),
        cpu_ns: 5_000_000,
        run_delay_ns: Some(20_000),
        max_run_delay_ns: Some(8_000),
        wakeups: None,
        migrations: Some(0),
        futex_waits: Vec::new(),
        syscall_readable: true,
        started_during: false,
        ended_during: false,
    }
}

/// A well set-up program on a 4-CPU machine with CPUs 2-3 isolated: a FIFO 49 thread pinned
/// to CPU 2, memory locked, a main thread at SCHED_OTHER.
fn good() -> Inspection {
    Inspection {
        schema: SCHEMA.to_string(),
        rtlab_version: "0".into(),
        build: None,
        kernel_release: "6.18.0".into(),
        pid: 100,
        name: "app".into(),
        command: vec!["./app".into()],
        window_ns: 2_000_000_000,
        interval_ns: 10_000_000,
        samples: 201,
        interrupted: false,
        run_delay_source: RunDelaySource::Schedstat,
        online_cpus: CpuSet::parse_list("0-3").unwrap(),
        rt_cpus: RtCpus {
            cpus: CpuSet::parse_list("2-3").unwrap(),
            source: "isolcpus".into(),
        },
        irq_threads: Some(KernelThreads {
            count: 20,
            lowest: 50,
            highest: 50,
        }),
        softirq_threads: Some(KernelThreads {
            count: 4,
            lowest: 0,
            highest: 0,
        }),
        locked_kb: Some(4096),
        rss_kb: Some(3000),
        threads: vec![
            thread(100, "OTHER nice 0", 0, "0-3"),
            thread(101, "FIFO 49", 49, "2"),
        ],
        counts: Counts::default(),
        findings: Vec::new(),
    }
}

fn status(i: &Inspection, id: &str) -> Status {
    checks::findings(i, &LIMITS)
        .into_iter()
        .find(|f| f.id == id)
        .unwrap_or_else(|| panic!("no {id}"))
        .status
}

fn finding(i: &Inspection, id: &str) -> model::audit::Finding {
    checks::findings(i, &LIMITS)
        .into_iter()
        .find(|f| f.id == id)
        .unwrap()
}

#[test]
fn a_good_program_passes_every_check() {
    let found = checks::findings(&good(), &LIMITS);
    assert_eq!(found.len(), checks::ids().count());
    for f in &found {
        assert_eq!(f.status, Status::Pass, "{}: {}", f.id, f.summary);
        assert!(f.fix.is_empty());
    }
    let p = finding(&good(), "inspect.priority");
    assert_eq!(
        p.summary,
        "highest priority 49, below the IRQ threads (FIFO 50)"
    );
}

#[test]
fn no_real_time_thread_fails() {
    let mut i = good();
    i.threads.truncate(1);
    let f = finding(&i, "inspect.realtime");
    assert_eq!(f.status, Status::Fail);
    assert!(
        f.fix[0].render().contains("chrt -f -p 49 100"),
        "{:?}",
        f.fix
    );
    // Nothing else judges threads that are not real-time.
    for id in [
        "inspect.priority",
        "inspect.affinity",
        "inspect.page_faults",
        "inspect.futex_pi",
    ] {
        assert_eq!(status(&i, id), Status::Pass, "{id}");
    }
}

#[test]
fn priority_99_fails_and_above_the_irq_threads_warns() {
    let mut i = good();
    i.threads[1] = thread(101, "FIFO 99", 99, "2");
    let f = finding(&i, "inspect.priority");
    assert_eq!(f.status, Status::Fail);
    assert_eq!(f.summary, "1 thread at priority 99: t101:101 FIFO 99");
    assert_eq!(f.fix[0].render(), "chrt -f -p 49 101");
    i.threads[1] = thread(101, "FIFO 60", 60, "2");
    let f = finding(&i, "inspect.priority");
    assert_eq!(f.status, Status::Warn);
    assert_eq!(f.fix[0].render(), "chrt -f -p 49 101");
    // Without IRQ threads, 60 is fine.
    i.irq_threads = None;
    assert_eq!(status(&i, "inspect.priority"), Status::Pass);
}

#[test]
fn affinity_every_cpu_fails_housekeeping_warns() {
    let mut i = good();
    i.threads[1].cpus_allowed = Some(CpuSet::parse_list("0-3").unwrap());
    let f = finding(&i, "inspect.affinity");
    assert_eq!(f.status, Status::Fail);
    assert_eq!(f.summary, "allowed on every CPU (0-3): t101:101");
    assert_eq!(f.fix[0].render(), "taskset -p -c 2 101");
    i.threads[1].cpus_allowed = Some(CpuSet::parse_list("1-2").unwrap());
    let f = finding(&i, "inspect.affinity");
    assert_eq!(f.status, Status::Warn);
    assert!(f.summary.contains("housekeeping"), "{}", f.summary);
    // No CPUs set apart: more than one CPU warns, one passes, the pin goes to the last CPU.
    i.rt_cpus = RtCpus {
        cpus: CpuSet::new(),
        source: "none".into(),
    };
    let f = finding(&i, "inspect.affinity");
    assert_eq!(f.status, Status::Warn);
    assert_eq!(f.fix[0].render(), "taskset -p -c 3 101");
    i.threads[1].cpus_allowed = Some(CpuSet::from_cpus([1]));
    assert_eq!(status(&i, "inspect.affinity"), Status::Pass);
    // A one-CPU machine has nothing to pin to.
    i.online_cpus = CpuSet::from_cpus([0]);
    i.threads[1].cpus_allowed = Some(CpuSet::from_cpus([0]));
    assert_eq!(status(&i, "inspect.affinity"), Status::Pass);
}

#[test]
fn memory_unlocked_fails_partly_locked_warns() {
    let mut i = good();
    i.locked_kb = Some(0);
    let f = finding(&i, "inspect.memory_lock");
    assert_eq!(f.status, Status::Fail);
    assert_eq!(f.evidence[0].value, "VmLck 0 kB, VmRSS 3000 kB");
    i.locked_kb = Some(1000);
    assert_eq!(status(&i, "inspect.memory_lock"), Status::Warn);
    i.locked_kb = None;
    assert_eq!(status(&i, "inspect.memory_lock"), Status::Unknown);
}

#[test]
fn page_faults_in_real_time_threads_fail() {
    let mut i = good();
    i.threads[0].minor_faults = 500; // the SCHED_OTHER main thread may fault
    assert_eq!(status(&i, "inspect.page_faults"), Status::Pass);
    i.threads[1].minor_faults = 300;
    i.threads[1].major_faults = 1;
    let f = finding(&i, "inspect.page_faults");
    assert_eq!(f.status, Status::Fail);
    assert_eq!(
        f.summary,
        "page faults over 2.0 s: t101:101 300 minor, 1 major"
    );
}

#[test]
fn non_pi_futex_waits_fail_pi_ones_pass() {
    let mut i = good();
    let seen = |op: &str, pi| FutexSeen {
        op: op.into(),
        priority_inheritance: pi,
        uaddr: "0x55d0c8a4a0c8".into(),
        samples: 201,
    };
    i.threads[1].futex_waits = vec![seen("FUTEX_LOCK_PI|FUTEX_PRIVATE_FLAG", true)];
    let f = finding(&i, "inspect.futex_pi");
    assert_eq!(f.status, Status::Pass);
    assert!(
        f.summary
            .contains("with inheritance: t101:101 in FUTEX_LOCK_PI"),
        "{}",
        f.summary
    );
    i.threads[1]
        .futex_waits
        .push(seen("FUTEX_WAIT_BITSET|FUTEX_PRIVATE_FLAG", false));
    let f = finding(&i, "inspect.futex_pi");
    assert_eq!(f.status, Status::Fail);
    assert_eq!(
        f.summary,
        "blocked without priority inheritance: t101:101 in FUTEX_WAIT_BITSET|FUTEX_PRIVATE_FLAG at 0x55d0c8a4a0c8 (201 of 201 samples)"
    );
    // Unreadable is not a pass.
    i.threads[1].syscall_readable = false;
    let f = finding(&i, "inspect.futex_pi");
    assert_eq!(f.status, Status::Unknown);
    assert!(
        f.summary
            .starts_with("/proc/100/task/101/syscall cannot be read"),
        "{}",
        f.summary
    );
    // A SCHED_OTHER thread waiting on a condition variable is not judged.
    let mut i = good();
    i.threads[0].futex_waits = vec![seen("FUTEX_WAIT", false)];
    assert_eq!(status(&i, "inspect.futex_pi"), Status::Pass);
}

#[test]
fn run_delay_over_the_budget_warns_and_migrations_warn() {
    let mut i = good();
    i.threads[1].max_run_delay_ns = Some(250_000);
    let f = finding(&i, "inspect.run_delay");
    assert_eq!(f.status, Status::Warn);
    assert!(
        f.summary
            .starts_with("over 100.0 us (most in one 10 ms interval"),
        "{}",
        f.summary
    );
    i.threads[1].max_run_delay_ns = None;
    assert_eq!(status(&i, "inspect.run_delay"), Status::Unknown);
    i.threads[1].migrations = Some(3);
    let f = finding(&i, "inspect.migrations");
    assert_eq!(f.status, Status::Warn);
    assert_eq!(f.summary, "migrated over 2.0 s: t101:101 ×3");
}

const STAT_MAIN: &str = "300 (app) S 1 300 300 0 -1 4194560 120 0 0 0 3 1 0 0 20 0 2 0 \
    5000 1000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n";
const STAT_RT: &str = "301 (loop) R 1 300 300 0 -1 1077936192 70 0 2 0 40 9 0 0 -100 0 2 0 \
    5001 1000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 -1 1 99 1 0 0 0\n";

fn process_tree() -> FakeRoot {
    FakeRoot::new()
        .cpus(2)
        .cmdline("quiet")
        .kernel("6.18.0", "#1 SMP PREEMPT_DYNAMIC")
        .file("proc/300/status", "Name:\tapp\nTgid:\t300\nVmLck:\t       0 kB\nVmRSS:\t    2000 kB\n")
        .file("proc/300/cmdline", "./app\0")
        .file("proc/300/task/300/stat", STAT_MAIN)
        .file("proc/300/task/300/status", "Cpus_allowed_list:\t0-1\nvoluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t0\n")
        .file("proc/300/task/300/schedstat", "100 0 3\n")
        .file("proc/300/task/300/syscall", "running\n")
        .file("proc/300/task/301/stat", STAT_RT)
        .file("proc/300/task/301/status", "Cpus_allowed_list:\t0-1\nvoluntary_ctxt_switches:\t9\nnonvoluntary_ctxt_switches:\t1\n")
        .file("proc/300/task/301/schedstat", "5000 700 12\n")
        .file("proc/300/task/301/syscall", "202 0x1000 0x189 0x0 0x0 0x0 0xffffffff 0x7f 0x7f\n")
}

/// A frozen tree: nothing grows, so the window shows the state only (policy, affinity,
/// memory, the futex), read through the same files as on a live machine.
#[test]
fn a_process_from_a_tree() {
    let fake = process_tree();
    let config = Config {
        pid: 300,
        duration: Duration::from_millis(30),
        interval: Duration::from_millis(10),
        rt_cpus: None,
        limits: LIMITS,
    };
    let i = inspect(&fake.root(), &config).unwrap();
    assert_eq!(i.name, "app");
    assert_eq!(i.command, ["./app"]);
    assert_eq!(i.threads.len(), 2);
    let rt = &i.threads[1];
    assert_eq!(
        (rt.tid, rt.sched.as_str(), rt.realtime),
        (301, "FIFO 99", true)
    );
    assert_eq!(
        (rt.minor_faults, rt.run_delay_ns, rt.max_run_delay_ns),
        (0, Some(0), Some(0))
    );
    assert_eq!(rt.futex_waits.len(), 1);
    assert!(rt.futex_waits[0].samples >= 1 && rt.futex_waits[0].samples < i.samples);
    // The main thread is not real-time: its syscall is not sampled.
    assert!(i.threads[0].futex_waits.is_empty());
    let by = |id: &str| i.findings.iter().find(|f| f.id == id).unwrap().status;
    assert_eq!(by("inspect.realtime"), Status::Pass);
    assert_eq!(by("inspect.priority"), Status::Fail);
    assert_eq!(by("inspect.affinity"), Status::Fail);
    assert_eq!(by("inspect.memory_lock"), Status::Fail);
    assert_eq!(by("inspect.futex_pi"), Status::Fail);
    assert_eq!(by("inspect.page_faults"), Status::Pass);
    assert!(i.failed());
}

#[test]
fn unknown_pids_and_threads_are_refused() {
    let fake = process_tree().file("proc/301/status", "Name:\tloop\nTgid:\t300\n");
    let config = |pid| Config {
        pid,
        duration: Duration::ZERO,
        interval: DEFAULT_INTERVAL,
        rt_cpus: None,
        limits: LIMITS,
    };
    assert_eq!(
        inspect(&fake.root(), &config(7)).unwrap_err(),
        InspectError::NoProcess { pid: 7 }
    );
    assert_eq!(
        inspect(&fake.root(), &config(301)).unwrap_err(),
        InspectError::NotAProcess {
            tid: 301,
            tgid: 300
        }
    );
}

#[test]
fn a_process_whose_id_was_reused_has_exited() {
    // The tree's main thread started at 5000 ticks; a window that sees 6000 sees another
    // process under the same id. Simulated by changing the file between two samples.
    let fake = process_tree();
    let root = fake.root();
    let path = fake.path().join("proc/300/task/300/stat");
    let swap = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        // Replaced by rename: the sampler never reads a half-written file.
        let next = path.with_extension("next");
        std::fs::write(&next, STAT_MAIN.replace(" 5000 1000 ", " 6000 1000 ")).unwrap();
        std::fs::rename(next, path).unwrap();
    });
    let err = sample(
        &root,
        300,
        Duration::from_millis(200),
        Duration::from_millis(5),
        &mut sleep,
    )
    .unwrap_err();
    swap.join().unwrap();
    assert!(
        matches!(err, InspectError::Exited { pid: 300, .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().starts_with("process 300 (app) exited "),
        "{err}"
    );
}

#[test]
fn threads_that_end_or_start_during_the_window_are_marked() {
    let fake = process_tree();
    let root = fake.root();
    let base = fake.path().to_path_buf();
    let change = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        // Each change is one rename, as a thread's directory comes and goes whole.
        let task = base.join("proc/300/task");
        std::fs::rename(task.join("301"), base.join("gone")).unwrap();
        let new = base.join("new");
        std::fs::create_dir_all(&new).unwrap();
        let stat = STAT_RT.replace("301 (loop)", "302 (late)");
        std::fs::write(new.join("stat"), stat).unwrap();
        std::fs::write(new.join("status"), "Cpus_allowed_list:\t1\n").unwrap();
        std::fs::write(new.join("schedstat"), "0 0 0\n").unwrap();
        std::fs::rename(new, task.join("302")).unwrap();
    });
    let w = sample(
        &root,
        300,
        Duration::from_millis(120),
        Duration::from_millis(10),
        &mut sleep,
    )
    .unwrap();
    change.join().unwrap();
    let ids: Vec<u32> = w.threads.keys().copied().collect();
    assert_eq!(ids, [300, 301, 302]);
    assert!(w.threads[&301].ended_during && !w.threads[&301].started_during);
    assert!(w.threads[&302].started_during && !w.threads[&302].ended_during);
    assert!(!w.threads[&300].ended_during);
}

#[test]
fn a_pause_that_asks_to_stop_ends_the_window_with_a_last_read() {
    let fake = process_tree();
    let mut pauses = 0;
    let mut stop_on_third = |d: Duration| {
        pauses += 1;
        std::thread::sleep(d);
        pauses == 3
    };
    let w = sample(
        &fake.root(),
        300,
        Duration::from_secs(3600),
        Duration::from_millis(5),
        &mut stop_on_third,
    )
    .unwrap();
    assert!(w.interrupted);
    // The first read, two interval reads, the last read.
    assert_eq!(w.samples, 4);
    assert!(w.elapsed < Duration::from_secs(5));
}
