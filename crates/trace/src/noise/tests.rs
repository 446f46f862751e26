//! Noise attribution on synthetic event streams whose causes are known by construction.

use super::*;
use crate::line::{Line, parse};

fn feed(a: &mut CpuAttributor, text: &str) {
    for l in text.lines() {
        if let Line::Event(ev) = parse(l) {
            a.event(&ev);
        }
    }
}

const TRACE: &str = "\
 rtlab/1-500 [001] d.h1. 100.000000: local_timer_entry: vector=236
 rtlab/1-500 [001] d.h1. 100.000004: local_timer_exit: vector=236
 rtlab/1-500 [001] d..2. 100.000010: sched_switch: prev_comm=rtlab/1 prev_pid=500 prev_prio=120 prev_state=R+ ==> next_comm=inject next_pid=600 next_prio=49
 inject-600 [001] d.h1. 100.000100: irq_handler_entry: irq=24 name=virtio0-input.0
 inject-600 [001] d.h1. 100.000110: irq_handler_exit: irq=24 ret=handled
 inject-600 [001] d..2. 100.000510: sched_switch: prev_comm=inject prev_pid=600 prev_prio=49 prev_state=S ==> next_comm=rtlab/1 next_pid=500 next_prio=120
 rtlab/1-500 [001] ..s1. 100.001000: softirq_entry: vec=1 [action=TIMER]
 rtlab/1-500 [001] ..s1. 100.001020: softirq_exit: vec=1 [action=TIMER]
 rtlab/1-500 [001] d.Z1. 100.002003: nmi_handler: perf_event_nmi_handler() delta_ns: 3000 handled: 1
 rtlab/1-500 [001] d..1. 100.009000: sched_waking: comm=x pid=7 prio=120 target_cpu=001
";

fn window(from_us: u64, to_us: u64) -> Window {
    window_ns(from_us * 1000, to_us * 1000)
}

fn window_ns(from_ns: u64, to_ns: u64) -> Window {
    Window {
        start_ns: 100_000_000_000 + from_ns,
        end_ns: 100_000_000_000 + to_ns,
    }
}

#[test]
fn each_window_gets_its_cause_and_the_classes_their_time() {
    let windows = vec![
        window(0, 6),         // the timer tick, 4 us of 6
        window(9, 512),       // the injected thread, with an IRQ inside
        window(999, 1_021),   // a softirq
        window(1_999, 2_004), // an NMI
        window(5_000, 5_008), // nothing recorded
    ];
    let mut a = CpuAttributor::new(Some(500), windows);
    feed(&mut a, TRACE);
    let out = a.finish((window(0, 0).start_ns, window(10_000, 10_000).start_ns));
    assert_eq!(
        out.counts,
        PerSource {
            hw: 1,
            nmi: 1,
            irq: 1,
            softirq: 1,
            thread: 1
        }
    );
    // Microsecond timestamps: what ends at an event ends at the end of its microsecond.
    assert_eq!(out.time_ns.thread, 500_999 - 10_999);
    assert_eq!(out.time_ns.irq, 4_999 + 10_999);
    assert_eq!(out.time_ns.softirq, 20_999);
    assert_eq!(out.time_ns.nmi, 3_999);
    let thread = &out.culprits[0];
    assert_eq!(thread.name, "inject (pid 600, real-time priority 50)");
    assert_eq!((thread.count, thread.total_ns), (1, 490_000));
    assert_eq!(
        out.time_ns.total(),
        6_000 + 503_000 + 22_000 + 5_000 + 8_000
    );
    let hw = out
        .culprits
        .iter()
        .find(|c| c.source == Source::Hw)
        .unwrap();
    assert_eq!((hw.count, hw.total_ns), (1, 8_000));
    assert_eq!(out.hw_windows, vec![window(5_000, 5_008)]);
    assert_eq!(out.unexplained, 0);
}

#[test]
fn a_switch_the_trace_lacks_is_inferred_from_the_task_events_ran_in() {
    // No switch out of the idle task is recorded: the detector's return shows only in
    // the task of its next event; the idle task's time is nobody's noise. (The detector is
    // an ordinary task here: a real-time one switched out runnable for an ordinary task is
    // RT throttling, `an_rt_throttle_of_the_detector_is_named_as_such`.)
    let trace = "\
 rtlab/1-500 [001] d..2. 100.000000: sched_switch: prev_comm=rtlab/1 prev_pid=500 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
 <idle>-0 [001] d.h1. 100.000100: local_timer_entry: vector=236
 <idle>-0 [001] d.h1. 100.000102: local_timer_exit: vector=236
 rtlab/1-500 [001] d.h1. 100.500000: local_timer_entry: vector=236
 rtlab/1-500 [001] d.h1. 100.500003: local_timer_exit: vector=236
 rtlab/1-500 [001] d..2. 100.600000: sched_switch: prev_comm=rtlab/1 prev_pid=500 prev_prio=120 prev_state=R ==> next_comm=hog next_pid=9 next_prio=120
 hog-9 [001] d..2. 100.600050: sched_switch: prev_comm=hog prev_pid=9 prev_prio=120 prev_state=S ==> next_comm=rtlab/1 next_pid=500 next_prio=120
";
    let mut a = CpuAttributor::new(
        Some(500),
        vec![window(499_999, 500_005), window(599_999, 600_052)],
    );
    feed(&mut a, trace);
    let out = a.finish((window(0, 0).start_ns, window(700_000, 700_000).start_ns));
    assert_eq!(out.counts.irq, 1);
    assert_eq!(out.counts.thread, 1);
    assert!(
        out.culprits.iter().all(|c| !c.name.contains("swapper")),
        "{:?}",
        out.culprits
    );
    assert_eq!(out.culprits[0].name, "hog (pid 9, normal (nice 0))");
}

/// The injector's bursts: a SCHED_FIFO 50 thread on the CPU for 400 us at 10 us past
/// 0 and 20 ms, and 600 us at 40 ms (the printed switches; each really happened within
/// its microsecond).
const BURSTS: &str = "\
 rtlab/1-500 [001] d..2. 100.000010: sched_switch: prev_comm=rtlab/1 prev_pid=500 prev_prio=120 prev_state=R+ ==> next_comm=inject next_pid=600 next_prio=49
 inject-600 [001] d..2. 100.000410: sched_switch: prev_comm=inject prev_pid=600 prev_prio=49 prev_state=S ==> next_comm=rtlab/1 next_pid=500 next_prio=120
 rtlab/1-500 [001] d..2. 100.020010: sched_switch: prev_comm=rtlab/1 prev_pid=500 prev_prio=120 prev_state=R+ ==> next_comm=inject next_pid=600 next_prio=49
 inject-600 [001] d..2. 100.020410: sched_switch: prev_comm=inject prev_pid=600 prev_prio=49 prev_state=S ==> next_comm=rtlab/1 next_pid=500 next_prio=120
 rtlab/1-500 [001] d..2. 100.040010: sched_switch: prev_comm=rtlab/1 prev_pid=500 prev_prio=120 prev_state=R+ ==> next_comm=inject next_pid=600 next_prio=49
 inject-600 [001] d..2. 100.040610: sched_switch: prev_comm=inject prev_pid=600 prev_prio=49 prev_state=S ==> next_comm=rtlab/1 next_pid=500 next_prio=120
";

fn bursts(windows: Vec<Window>) -> Attribution {
    let mut a = CpuAttributor::new(Some(500), windows);
    feed(&mut a, BURSTS);
    a.finish((window(0, 0).start_ns, window(50_000, 50_000).start_ns))
}

fn injector(out: &Attribution) -> &Culprit {
    out.culprits
        .iter()
        .find(|c| c.name == "inject (pid 600, real-time priority 50)")
        .unwrap()
}

#[test]
fn a_stall_next_to_a_thread_s_run_is_the_hardware_s_not_a_second_run() {
    // #26: on a noisy hypervisor a stall often comes right after (or before) a burst, so
    // the detector sees a second gap next to the run, which the run's microsecond edges
    // overlap by under 1 us. Nothing switched in that gap: it is the hardware's.
    let after = window_ns(410_400, 440_400);
    let before = window_ns(19_980_000, 20_010_400);
    let windows = vec![
        window_ns(9_500, 410_300),         // the first burst
        after,                             // a 30 us stall 400 ns after it
        before,                            // a 30 us stall ending 400 ns into the printed switch-in
        window_ns(20_010_500, 20_410_600), // the second burst
        window_ns(40_009_000, 40_611_500), // the third, with no stall
    ];
    let out = bursts(windows);
    let inject = injector(&out);
    assert_eq!(inject.count, 3, "{:?}", out.culprits);
    assert_eq!((out.counts.thread, out.counts.hw), (3, 2));
    assert_eq!(out.hw_windows, vec![after, before]);
    // The runs' edges in the stalls stay the thread's time, counted once.
    let runs = [400_300 + 599, 400 + 400_100, 600_999];
    assert_eq!(inject.total_ns, runs.iter().sum::<u64>());
    assert_eq!(inject.max_ns, 600_999);
    let hw = out
        .culprits
        .iter()
        .find(|c| c.source == Source::Hw)
        .unwrap();
    assert_eq!((hw.count, hw.total_ns), (2, 30_000 - 599 + 30_400 - 400));
}

#[test]
fn a_thread_run_split_by_a_stall_is_one_interruption() {
    // #26: two gaps within one run (switch-in to switch-out) are one interruption of the
    // thread; the gap it took less of is counted as the hardware's, its time stays the
    // thread's and its longest is the whole run.
    let first = window_ns(40_009_000, 40_300_000);
    let windows = vec![
        window(9, 411),
        window(20_009, 20_411),
        first,
        window_ns(40_300_100, 40_611_500),
    ];
    let out = bursts(windows);
    let inject = injector(&out);
    assert_eq!(inject.count, 3, "{:?}", out.culprits);
    assert_eq!((out.counts.thread, out.counts.hw), (3, 1));
    assert_eq!(inject.max_ns, 290_000 + 310_899);
    assert_eq!(inject.total_ns, 2 * 400_999 + 290_000 + 310_899);
    assert_eq!(out.time_ns.total(), 402_000 * 2 + 291_000 + 311_400);
    // Only 1 us of the split gap is not the thread's: no hardware window.
    assert_eq!(out.hw_windows, vec![]);
}

#[test]
fn windows_outside_the_trace_are_unexplained() {
    let mut a = CpuAttributor::new(Some(500), vec![window(0, 6), window(10_000, 10_010)]);
    feed(&mut a, TRACE);
    let out = a.finish((window(1, 1).start_ns, window(10_000, 10_000).start_ns));
    assert_eq!(out.unexplained, 2);
    assert_eq!(out.counts.total(), 0);
}

#[test]
fn culprits_past_the_limit_are_summed() {
    let all: Vec<Culprit> = (0..40)
        .map(|i| Culprit {
            source: Source::Irq,
            name: format!("irq {i}"),
            count: 1,
            total_ns: 100 + i,
            max_ns: 100 + i,
        })
        .collect();
    let top = top_culprits(all);
    assert_eq!(top.len(), MAX_CULPRITS);
    let last = top.last().unwrap();
    assert_eq!(last.name, OTHERS);
    assert_eq!(last.count, 40 - (MAX_CULPRITS as u64 - 1));
}

/// Issue #45: a real-time detector switched out runnable for an ordinary task is RT
/// throttling: the whole stretch to its return is one cause of that name (not the ordinary
/// task that ran in it, nor `hw` where the CPU idled); the same switch for a real-time task
/// is that task's.
#[test]
fn an_rt_throttle_of_the_detector_is_named_as_such() {
    let throttle = "\
 rtlab/1-500 [001] d..2. 100.000010: sched_switch: prev_comm=rtlab/1 prev_pid=500 prev_prio=98 prev_state=R ==> next_comm=tokio next_pid=75 next_prio=120
 tokio-75 [001] d..2. 100.000600: sched_switch: prev_comm=tokio prev_pid=75 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
 <idle>-0 [001] d..2. 100.049010: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rtlab/1 next_pid=500 next_prio=98
 rtlab/1-500 [001] d..2. 100.060000: sched_switch: prev_comm=rtlab/1 prev_pid=500 prev_prio=98 prev_state=R+ ==> next_comm=hog next_pid=700 next_prio=49
 hog-700 [001] d..2. 100.060500: sched_switch: prev_comm=hog prev_pid=700 prev_prio=49 prev_state=S ==> next_comm=rtlab/1 next_pid=500 next_prio=98
";
    let mut a = CpuAttributor::new(Some(500), vec![window(9, 49_011), window(59_999, 60_501)]);
    feed(&mut a, throttle);
    let out = a.finish((window(0, 0).start_ns, window(70_000, 70_000).start_ns));
    assert_eq!(out.counts.thread, 2, "{out:?}");
    assert_eq!(out.counts.hw, 0, "{out:?}");
    let throttling = out
        .culprits
        .iter()
        .find(|c| c.name == RT_THROTTLING)
        .expect("the throttle named");
    assert_eq!(throttling.count, 1);
    assert!(throttling.total_ns >= 49_000_000, "{throttling:?}");
    assert!(
        !out.culprits.iter().any(|c| c.name.starts_with("tokio")),
        "{out:?}"
    );
    // The real-time hog that preempted it is itself the cause.
    assert!(
        out.culprits.iter().any(|c| c.name.starts_with("hog")),
        "{out:?}"
    );
}

/// A throttle that leaves the CPU idle, on a kernel that does not trace switches out of the
/// idle task: the detector's return shows only as its next event, which ends the throttle.
#[test]
fn an_rt_throttle_ends_at_the_detector_s_next_event_when_its_switch_is_not_traced() {
    let throttle = "\
 rtlab/1-500 [001] d..2. 100.000010: sched_switch: prev_comm=rtlab/1 prev_pid=500 prev_prio=98 prev_state=R ==> next_comm=swapper/1 next_pid=0 next_prio=120
 rtlab/1-500 [001] d..2. 100.048050: sched_switch: prev_comm=rtlab/1 prev_pid=500 prev_prio=98 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
";
    let mut a = CpuAttributor::new(Some(500), vec![window(9, 48_000)]);
    feed(&mut a, throttle);
    let out = a.finish((window(0, 0).start_ns, window(70_000, 70_000).start_ns));
    assert_eq!(out.counts.thread, 1, "{out:?}");
    let c = &out.culprits[0];
    assert_eq!(c.name, RT_THROTTLING);
    assert!(c.total_ns >= 47_900_000, "{c:?}");
}
