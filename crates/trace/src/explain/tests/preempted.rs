//! A run's thread preempted after its switch-in and before it read its clock: the task that
//! preempted it is the cause (issue #49's planted hog found it told as "the return").

use std::io::BufReader;

use model::explain::{Agent, PartKind, Task};

use super::super::*;
use super::line;

/// The trace of [`a_hog_preempting_the_thread_before_it_reads_its_clock_is_the_cause`].
fn preempted_after_switch_in() -> String {
    let mut t = String::new();
    t += &line(
        "rt",
        500,
        "d..1.",
        0,
        "hrtimer_start: hrtimer=00000000aaaa function=hrtimer_wakeup expires=100001000000 softexpires=100001000000 mode=ABS",
    );
    t += &line(
        "rt",
        500,
        "d..2.",
        1,
        "sched_switch: prev_comm=rt prev_pid=500 prev_prio=4 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120",
    );
    t += &line(
        "<idle>",
        0,
        "d.h1.",
        1000,
        "hrtimer_expire_entry: hrtimer=00000000aaaa function=hrtimer_wakeup now=100001000000",
    );
    t += &line(
        "<idle>",
        0,
        "dNh3.",
        1001,
        "sched_wakeup: comm=rt pid=500 prio=4 target_cpu=001",
    );
    t += &line(
        "<idle>",
        0,
        "dNh1.",
        1001,
        "hrtimer_expire_exit: hrtimer=00000000aaaa",
    );
    t += &line(
        "<idle>",
        0,
        "d..2.",
        1003,
        "sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rt next_pid=500 next_prio=4",
    );
    t += &line(
        "rt",
        500,
        "dNh3.",
        1005,
        "sched_wakeup: comm=perl pid=700 prio=1 target_cpu=001",
    );
    t += &line(
        "rt",
        500,
        "d..2.",
        1006,
        "sched_switch: prev_comm=rt prev_pid=500 prev_prio=4 prev_state=R ==> next_comm=perl next_pid=700 next_prio=1",
    );
    t += &line(
        "perl",
        700,
        "d..2.",
        41006,
        "sched_switch: prev_comm=perl prev_pid=700 prev_prio=1 prev_state=S ==> next_comm=rt next_pid=500 next_prio=4",
    );
    t
}

/// A run's thread switched in on time, then preempted before it read its clock by a FIFO 98
/// hog for 40 ms (the hog woke at that moment): the hog is the cause, not "the return to the
/// thread" (found by `rtlab monitor`'s planted-hog test, issue #49).
#[test]
fn a_hog_preempting_the_thread_before_it_reads_its_clock_is_the_cause() {
    let t = preempted_after_switch_in();
    let s = scan(BufReader::new(t.as_bytes())).unwrap();
    let w = s.wakeups[0].clone();
    let spike = Spike {
        end_ts: Some(100_041_010_000),
        ..w.spike(s.clock_offset_ns)
    };
    let windows = collect(
        BufReader::new(t.as_bytes()),
        &[WindowSpec {
            cpu: 1,
            from_ts: spike.deadline_ts.saturating_sub(LOOKBACK_NS),
            to_ts: 100_041_010_000,
        }],
        false,
    )
    .unwrap();
    let x = explain(&windows[0], &spike, s.clock_offset_ns);
    assert_eq!(x.latency_ns, 40_010_000);
    assert_eq!(x.culprit, PartKind::HigherPriorityTask, "{:?}", x.parts);
    assert!(
        matches!(&x.parts[0].what, Agent::Task(Task { comm, pid: 700, .. }) if comm == "perl"),
        "{:?}",
        x.parts
    );
    assert!(x.parts[0].duration_ns >= 40_000_000, "{:?}", x.parts);
    // The switch-in that ended the wait is the one after the hog.
    assert_eq!(x.milestones.switched_in_ns, Some(40_006_000));
}
