//! Live tests of scheduling, affinity and SCHED_DEADLINE admission on this machine.

use std::sync::Mutex;

use super::*;

/// Deadline tests reserve bandwidth of the whole machine: one at a time.
static DEADLINE: Mutex<()> = Mutex::new(());

fn on_new_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::spawn(f).join().unwrap()
}

fn online() -> CpuSet {
    CpuSet::parse_list(&online_cpus_text()).unwrap()
}

#[test]
fn names_and_identifies_the_thread() {
    on_new_thread(|| {
        assert_ne!(current_tid(), std::process::id());
        set_current_thread_name("rtlab/3");
        assert_eq!(current_thread_name(), "rtlab/3");
        set_current_thread_name("rtlab/measure-cpu-12345");
        assert_eq!(current_thread_name(), "rtlab/measure-c");
        set_current_thread_name("ééééééééé");
        assert_eq!(current_thread_name(), "ééééééé");
    });
}

#[test]
fn pins_a_thread_and_reads_the_affinity_back() {
    on_new_thread(|| {
        let all = affinity().unwrap();
        let last = CpuSet::from_cpus([all.last().unwrap()]);
        pin_current_thread(&last).unwrap();
        assert_eq!(affinity().unwrap(), last);
        // SAFETY: sched_getcpu has no preconditions.
        assert_eq!(Some(unsafe { libc::sched_getcpu() } as u32), last.first());
        pin_current_thread(&all).unwrap();
        assert_eq!(affinity().unwrap(), all);
        let err = pin_current_thread(&CpuSet::from_cpus([8000])).unwrap_err();
        assert!(err.to_string().contains("online"), "{err}");
    });
}

#[test]
fn sets_fixed_priority_policies_and_reads_them_back() {
    let seen = on_new_thread(|| {
        let mut seen = vec![];
        for (policy, prio) in [
            (Policy::Fifo, 10),
            (Policy::Rr, 20),
            (Policy::Batch, 0),
            (Policy::Idle, 5),
            (Policy::Other, 0),
        ] {
            set_current_thread_policy(&SchedParams::new(policy, prio)).unwrap();
            seen.push(current_thread_policy().unwrap());
        }
        seen
    });
    let want = [
        (Policy::Fifo, 10),
        (Policy::Rr, 20),
        (Policy::Batch, 0),
        (Policy::Idle, 0),
        (Policy::Other, 0),
    ];
    assert_eq!(seen, want);
}

#[test]
fn sets_another_threads_policy() {
    use std::sync::mpsc::channel;
    let (seen_tx, seen_rx) = channel();
    let (go_tx, go_rx) = channel::<()>();
    let other = std::thread::spawn(move || {
        seen_tx.send((current_tid(), None)).unwrap();
        while go_rx.recv().is_ok() {
            seen_tx
                .send((current_tid(), Some(current_thread_policy().unwrap())))
                .unwrap();
        }
    });
    let (tid, _) = seen_rx.recv().unwrap();
    let mut seen = vec![];
    for (policy, prio) in [(Policy::Fifo, 7), (Policy::Other, 42)] {
        set_thread_scheduler(tid, policy, prio).unwrap();
        go_tx.send(()).unwrap();
        seen.push(seen_rx.recv().unwrap().1);
    }
    let err = set_thread_scheduler(tid, Policy::Deadline, 0).unwrap_err();
    drop(go_tx);
    other.join().unwrap();
    assert_eq!(seen, [Some((Policy::Fifo, 7)), Some((Policy::Other, 0))]);
    assert!(err.to_string().contains("only fifo, rr"), "{err}");
}

#[test]
fn refuses_priorities_outside_1_to_99() {
    for prio in [0, 100] {
        let err = on_new_thread(move || {
            set_current_thread_policy(&SchedParams::new(Policy::Fifo, prio)).unwrap_err()
        });
        assert!(err.to_string().contains("from 1 to 99"), "{err}");
    }
}

#[test]
fn checks_deadline_parameters_before_the_kernel() {
    let bad = |runtime: Option<u64>, deadline: Option<u64>, period: Option<u64>| {
        let p = SchedParams {
            dl_runtime: runtime.map(Nanos),
            dl_deadline: deadline.map(Nanos),
            dl_period: period.map(Nanos),
            ..SchedParams::new(Policy::Deadline, 0)
        };
        on_new_thread(move || set_current_thread_policy(&p).unwrap_err().to_string())
    };
    assert!(bad(None, None, Some(1_000_000)).contains("needs a runtime"));
    assert!(bad(Some(1000), None, None).contains("needs a period"));
    assert!(bad(Some(1000), None, Some(1_000_000)).contains("1024 ns"));
    assert!(bad(Some(2_000_000), None, Some(1_000_000)).contains("exceeds the deadline"));
    let msg = bad(Some(100_000), Some(2_000_000), Some(1_000_000));
    assert!(
        msg.contains("deadline 2000000 ns exceeds the period"),
        "{msg}"
    );
    // Accepted by our checks, refused by the kernel: a period below its minimum.
    let msg = bad(Some(10_000), None, Some(20_000));
    assert!(msg.contains("sched_deadline_period_min_us"), "{msg}");
}

#[test]
fn deadline_on_an_unpinned_thread_is_admitted() {
    let _one = DEADLINE.lock().unwrap_or_else(|e| e.into_inner());
    let p = SchedParams::deadline(Nanos::from_us(100), Nanos::from_ms(1));
    let (spans_all, got, pin) = on_new_thread(move || {
        let spans_all = online().is_subset(&affinity().unwrap());
        let got = set_current_thread_policy(&p).and_then(|()| current_thread_params());
        // Narrowing a deadline thread's affinity is refused too (EBUSY).
        let pin = pin_current_thread(&CpuSet::from_cpus([0]));
        (spans_all, got, pin)
    });
    eprintln!("deadline unpinned: {got:?}; then pinning: {pin:?}");
    if spans_all {
        let want = SchedParams {
            dl_deadline: Some(Nanos::from_ms(1)),
            ..p
        };
        assert_eq!(got.unwrap(), want);
        if online().len() > 1 {
            let err = pin.unwrap_err().to_string();
            assert!(err.contains("SCHED_DEADLINE"), "{err}");
        }
    } else {
        eprintln!("the test process is pinned: expecting the root-domain refusal");
        assert!(got.unwrap_err().to_string().contains("root domain"));
    }
}

#[test]
fn deadline_on_a_pinned_thread_is_refused_with_the_root_domain_explained() {
    if online().len() < 2 {
        return testkit::live::skip("one CPU online: pinning cannot narrow the root domain");
    }
    let _one = DEADLINE.lock().unwrap_or_else(|e| e.into_inner());
    let err = on_new_thread(|| {
        pin_current_thread(&CpuSet::from_cpus([online().last().unwrap()])).unwrap();
        let p = SchedParams::deadline(Nanos::from_us(100), Nanos::from_ms(1));
        set_current_thread_policy(&p).unwrap_err()
    });
    assert!(matches!(err, Error::PermissionDenied { .. }), "{err:?}");
    let msg = err.to_string();
    eprintln!("deadline pinned: {msg}");
    assert!(msg.contains("whole root domain"), "{msg}");
    assert!(msg.contains("exclusive cpuset partition"), "{msg}");
}

#[test]
fn deadline_beyond_the_machine_is_refused_by_admission_control() {
    let _one = DEADLINE.lock().unwrap_or_else(|e| e.into_inner());
    // Each thread asks for 90% of a CPU; the machine has at most 95% of each CPU for
    // deadline tasks, so one thread more than there are CPUs cannot fit.
    let p = SchedParams::deadline(Nanos::from_us(900), Nanos::from_ms(1));
    let (release, wait) = std::sync::mpsc::channel::<()>();
    let wait = std::sync::Arc::new(Mutex::new(wait));
    let mut threads = Vec::new();
    let mut results = Vec::new();
    for _ in 0..=online().len() {
        let (tx, rx) = std::sync::mpsc::channel();
        let wait = wait.clone();
        threads.push(std::thread::spawn(move || {
            tx.send(set_current_thread_policy(&p)).unwrap();
            let _ = wait.lock().unwrap().recv();
        }));
        results.push(rx.recv().unwrap());
    }
    drop(release);
    threads.into_iter().for_each(|t| t.join().unwrap());
    let err = results.pop().unwrap().unwrap_err().to_string();
    eprintln!("deadline over capacity: {err}");
    assert!(err.contains("admission control"), "{err}");
    assert!(results.iter().all(Result::is_ok), "{results:?}");
}
