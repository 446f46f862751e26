//! Spikes found in the lab on PREEMPT_RT kernels, rebuilt line by line: what the kernel's
//! events hid there (a task renamed while it ran, a timer armed past its deadline).

use model::explain::{Agent, PartKind};

use super::{explain_worst, line, synthetic};

/// Found in the lab: a hog started by `rtlab exec` is switched in under the launcher's name
/// and renames itself at `execve` while it runs (no event says so), so the switch-in names
/// `rtlab` and only the switch-out names `lab-hog`. The task that held the CPU is named as its
/// switch-out shows it, the program it had become.
#[test]
fn a_task_renamed_while_it_ran_is_named_as_its_switch_out_shows_it() {
    // Switched in before the window opens, and inside it (after the deadline).
    for switched_in in [500, 1100] {
        let middle = vec![line(
            "<idle>",
            0,
            "d..2.",
            switched_in,
            "sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rtlab next_pid=600 next_prio=1",
        )];
        let x = synthetic(
            &middle,
            1302,
            1802,
            "sched_switch: prev_comm=lab-hog prev_pid=600 prev_prio=1 prev_state=S ==> next_comm=rt next_pid=500 next_prio=49",
        );
        let holder = x
            .parts
            .iter()
            .find(|p| p.kind == PartKind::HigherPriorityTask)
            .expect("the hog's part");
        match &holder.what {
            Agent::Task(t) => assert_eq!((t.comm.as_str(), t.pid), ("lab-hog", 600)),
            other => panic!("{switched_in}: {other:?}"),
        }
        assert!(
            !format!("{:?}", x.parts).contains("\"rtlab\""),
            "{switched_in}: {:?}",
            x.parts
        );
    }
}

/// The trace of [`a_timer_armed_past_its_deadline_is_told_as_the_wait_before_the_arming`]:
/// `rt` (pid 500, FIFO 50) on CPU 1, deadlines 1000 and 2000 us; the hog (pid 600, FIFO 98)
/// preempts it at 1012 us and holds the CPU to 5000 us (the timer ticking at 2004, 3004 and
/// 4004 us); `rt` arms its second timer at 5010 us, and it fires at 5014 us.
fn preempted_before_arming() -> String {
    let hr = |us: u64| 100_000_000_000 + us * 1000;
    let arm = |us: u64| {
        format!(
            "hrtimer_start: hrtimer=00000000aaaa function=hrtimer_wakeup expires={e} softexpires={e} mode=ABS",
            e = hr(us)
        )
    };
    let fire = |us: u64| {
        format!(
            "hrtimer_expire_entry: hrtimer=00000000aaaa function=hrtimer_wakeup now={}",
            hr(us)
        )
    };
    let switch = |p: (&str, u32, u32), state: &str, n: (&str, u32, u32)| {
        format!(
            "sched_switch: prev_comm={} prev_pid={} prev_prio={} prev_state={state} ==> next_comm={} next_pid={} next_prio={}",
            p.0, p.1, p.2, n.0, n.1, n.2
        )
    };
    let (rt, idle, hog) = (("rt", 500, 49), ("swapper/1", 0, 120), ("lab-hog", 600, 1));
    let woken = "sched_wakeup: comm=rt pid=500 prio=49 target_cpu=001";
    let mut lines = vec![
        ("rt", 500, 0, arm(1000)),
        ("rt", 500, 1, switch(rt, "S", idle)),
        ("<idle>", 0, 1002, fire(1002)),
        ("<idle>", 0, 1003, woken.to_string()),
        ("<idle>", 0, 1005, switch(idle, "R", rt)),
        (
            "rt",
            500,
            1010,
            "sched_wakeup: comm=lab-hog pid=600 prio=1 target_cpu=001".to_string(),
        ),
        ("rt", 500, 1012, switch(rt, "R", hog)),
    ];
    for tick in [2004, 3004, 4004] {
        lines.push((
            "lab-hog",
            600,
            tick,
            "irq_handler_entry: irq=11 name=arch_timer".to_string(),
        ));
        lines.push((
            "lab-hog",
            600,
            tick + 5,
            "irq_handler_exit: irq=11 ret=handled".to_string(),
        ));
    }
    lines.extend([
        ("lab-hog", 600, 5000, switch(hog, "S", rt)),
        ("rt", 500, 5010, arm(2000)),
        ("rt", 500, 5012, switch(rt, "S", idle)),
        ("<idle>", 0, 5014, fire(5014)),
        ("<idle>", 0, 5015, woken.to_string()),
        ("<idle>", 0, 5030, switch(idle, "R", rt)),
        ("rt", 500, 5040, arm(6000)),
    ]);
    lines
        .iter()
        .map(|(task, pid, us, event)| line(task, *pid, "d..2.", *us, event))
        .collect()
}

/// Found in the lab: the thread, woken, is preempted by a FIFO 98 hog before it arms its next
/// timer, and arms it only when it runs again, past that timer's deadline; the timer then
/// fires at once. The delay is the hog holding the CPU while the thread, not yet back asleep,
/// waited to run, not a timer interrupt that came late.
#[test]
fn a_timer_armed_past_its_deadline_is_told_as_the_wait_before_the_arming() {
    let (_, xs) = explain_worst(&preempted_before_arming(), 1);
    let x = &xs[0];
    assert_eq!(x.latency_ns, 3_030_000);
    assert_eq!(x.milestones.timer_armed_ns, Some(3_010_000));
    assert_eq!(x.milestones.timer_fired_ns, Some(3_014_000));
    assert_eq!(x.culprit, PartKind::HigherPriorityTask, "{:?}", x.parts);
    let phases = x.phases.as_ref().expect("phases");
    let hog = &phases.unarmed[0];
    assert_eq!(hog.kind, PartKind::HigherPriorityTask);
    assert!(matches!(&hog.what, Agent::Task(t) if t.comm == "lab-hog"));
    // From the deadline to the hog's switch-out, less its timer interrupts.
    assert_eq!(hog.duration_ns, 3_000_000 - 3 * 5_000);
    // Nothing before the arming is a late timer interrupt.
    assert!(
        phases
            .before_fire
            .iter()
            .map(|c| c.duration_ns)
            .sum::<u64>()
            <= 4_000,
        "{:?}",
        phases.before_fire
    );
}
