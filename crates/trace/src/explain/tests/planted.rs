//! Issue #44's fixes on synthetic traces whose cause is known by construction: a task woken
//! while it still runs (never its own cause), and RT throttling as kernels before 6.12 do it
//! (the CPU left idle over a runnable real-time task). The real traces with planted causes are
//! graded by `crates/cli/tests/explain_truth.rs`.

use model::explain::{Agent, Caveat, PartKind, Task};

use super::{explain_worst, period};

/// Issue #44: a task whose timer fires while it still runs (it armed the timer and had not
/// gone to sleep yet) was never off the CPU: it is not woken late, and what happens to it
/// afterwards (here 50 ms off the CPU, as RT throttling does to a FIFO 99 hog) is not a delay
/// of that wake-up, nor is the task a cause of its own delay.
#[test]
fn a_task_woken_while_it_runs_is_no_spike_and_never_its_own_cause() {
    let ts = |us: u64| format!("{}.{:06}", us / 1_000_000, us % 1_000_000);
    let head = |task: &str, us: u64, flags: &str| format!("{task:>16} [000] {flags} {}: ", ts(us));
    let at = 1_000_000;
    let mut text = String::new();
    // A sleeping task's ordinary wake-up first, 20 us late, so the trace has one to compare.
    period(&mut text, at, 0, 20);
    let t = at + 2_000;
    text.push_str(&format!(
        "{}hrtimer_start: hrtimer=00000000000000a1 function=hrtimer_wakeup expires={e} softexpires={e} mode=ABS\n",
        head("rt-100", t, "d..2."),
        e = (t + 100) * 1000
    ));
    // The timer fires 2 us late, in the running task's context: it never slept.
    text.push_str(&format!(
        "{}hrtimer_expire_entry: hrtimer=00000000000000a1 now={} function=hrtimer_wakeup\n",
        head("rt-100", t + 102, "d.h1."),
        (t + 102) * 1000
    ));
    text.push_str(&format!(
        "{}sched_waking: comm=rt pid=100 prio=9 target_cpu=000\n",
        head("rt-100", t + 103, "d.h2.")
    ));
    // Then 50 ms off the CPU, and back.
    text.push_str(&format!(
        "{}sched_switch: prev_comm=rt prev_pid=100 prev_prio=9 prev_state=R ==> next_comm=swapper/0 next_pid=0 next_prio=120\n",
        head("rt-100", t + 200, "d..2.")
    ));
    text.push_str(&format!(
        "{}sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rt next_pid=100 next_prio=9\n",
        head("<idle>-0", t + 50_200, "d..2.")
    ));
    let (s, xs) = explain_worst(&text, 2);
    let worst = s.worst(2);
    let latencies: Vec<u64> = worst
        .iter()
        .map(|w| w.latency_ns(s.clock_offset_ns))
        .collect();
    assert_eq!(
        latencies,
        [20_000, 3_000],
        "the worst is the ordinary one: {latencies:?}"
    );
    let x = &xs[1];
    assert!(x.milestones.woken_running, "{:?}", x.milestones);
    assert_eq!(x.milestones.switched_in_ns, x.milestones.woken_ns);
    for part in &x.parts {
        assert_ne!(
            part.what,
            Agent::Task(Task::new("rt", 100, 9)),
            "blamed for itself: {part:?}"
        );
    }
}

/// Issue #44: RT throttling as kernels before 6.12 do it: a real-time task switched out
/// runnable for the idle task while a real-time thread's wake-up waits is throttling, not the
/// scheduler's switch from idle.
#[test]
fn a_real_time_task_switched_out_runnable_for_idle_is_rt_throttling() {
    let ts = |us: u64| format!("{}.{:06}", us / 1_000_000, us % 1_000_000);
    let head = |task: &str, us: u64| format!("{task:>16} [000] d..2. {}: ", ts(us));
    let at = 1_000_000;
    let deadline = at + 1_000;
    let lines = [
        head("rt-100", at)
            + &format!(
                "hrtimer_start: hrtimer=00000000000000a1 function=hrtimer_wakeup expires={e} softexpires={e} mode=ABS",
                e = deadline * 1000
            ),
        head("rt-100", at + 1)
            + "sched_switch: prev_comm=rt prev_pid=100 prev_prio=9 prev_state=S ==> next_comm=hog next_pid=200 next_prio=89",
        // The hog, runnable, loses the CPU to the idle task: the kernel throttled real-time tasks.
        head("hog-200", at + 500)
            + "sched_switch: prev_comm=hog prev_pid=200 prev_prio=89 prev_state=R ==> next_comm=swapper/0 next_pid=0 next_prio=120",
        head("<idle>-0", deadline + 10)
            + &format!(
                "hrtimer_expire_entry: hrtimer=00000000000000a1 now={} function=hrtimer_wakeup",
                (deadline + 10) * 1000
            ),
        head("<idle>-0", deadline + 11) + "sched_waking: comm=rt pid=100 prio=9 target_cpu=000",
        head("<idle>-0", deadline + 40_000)
            + "sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rt next_pid=100 next_prio=9",
    ];
    let text = lines.join("\n") + "\n";
    let (_, xs) = explain_worst(&text, 1);
    let x = &xs[0];
    assert_eq!(x.culprit, PartKind::RtThrottling, "{:?}", x.parts);
    assert!(x.parts[0].share > 0.9, "{:?}", x.parts);
    assert_eq!(x.parts[0].what, Agent::FromIdle);
}

/// Issue #44: an explanation says what the trace could not see. An ordinary task that keeps
/// the CPU after a real-time thread's wake-up is told as a section that could not be
/// preempted; without preemptirq events in the window nothing shows that section, and the
/// explanation says so (`no-section-events`). With them, it does not.
#[test]
fn a_trace_without_preemptirq_events_says_it_cannot_see_sections() {
    let ts = |us: u64| format!("{}.{:06}", us / 1_000_000, us % 1_000_000);
    let head = |task: &str, us: u64| format!("{task:>16} [000] d..2. {}: ", ts(us));
    let trace = |sections: bool| {
        let at = 1_000_000;
        let deadline = at + 1_000;
        let mut lines = vec![
            head("rt-100", at)
                + &format!(
                    "hrtimer_start: hrtimer=00000000000000a1 function=hrtimer_wakeup expires={e} softexpires={e} mode=ABS",
                    e = deadline * 1000
                ),
            head("rt-100", at + 1)
                + "sched_switch: prev_comm=rt prev_pid=100 prev_prio=9 prev_state=S ==> next_comm=dd next_pid=200 next_prio=120",
            head("dd-200", deadline + 10)
                + &format!(
                    "hrtimer_expire_entry: hrtimer=00000000000000a1 now={} function=hrtimer_wakeup",
                    (deadline + 10) * 1000
                ),
            head("dd-200", deadline + 11) + "sched_waking: comm=rt pid=100 prio=9 target_cpu=000",
        ];
        if sections {
            lines.push(
                head("dd-200", deadline + 20)
                    + "preempt_disable: caller=_raw_spin_lock+0x10/0x40 parent=shrink_slab+0x80/0x200",
            );
            lines.push(
                head("dd-200", deadline + 290)
                    + "preempt_enable: caller=_raw_spin_unlock+0x10/0x40 parent=shrink_slab+0x90/0x200",
            );
        }
        lines.push(
            head("dd-200", deadline + 300)
                + "sched_switch: prev_comm=dd prev_pid=200 prev_prio=120 prev_state=R ==> next_comm=rt next_pid=100 next_prio=9",
        );
        lines.join("\n") + "\n"
    };
    let (_, blind) = explain_worst(&trace(false), 1);
    assert_eq!(
        blind[0].culprit,
        PartKind::NonPreemptible,
        "{:?}",
        blind[0].parts
    );
    assert!(
        blind[0].caveats.contains(&Caveat::NoSectionEvents),
        "{:?}",
        blind[0].caveats
    );
    let (_, seen) = explain_worst(&trace(true), 1);
    assert!(
        !seen[0].caveats.contains(&Caveat::NoSectionEvents),
        "{:?}",
        seen[0].caveats
    );
}

/// Issue #44: where the trace holds the preemptirq tracepoints, a lower-priority task that
/// turned interrupts off (`irq_disable`) and had not turned them back on when the thread's
/// timer interrupt came is the cause of the late interrupt, named as a non-preemptible
/// section; without that event the same gap stays a timer delay the trace cannot see into
/// (`a_gap_after_interrupts_off_is_not_claimed_to_be_interrupts_off`).
#[test]
fn interrupts_off_in_the_trace_name_the_task_that_held_them() {
    let middle = |with_section: bool| {
        let mut m = vec![super::line(
            "<idle>",
            0,
            "d..2.",
            500,
            "sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=worker next_pid=600 next_prio=120",
        )];
        if with_section {
            m.push(super::line(
                "worker",
                600,
                "d..1.",
                900,
                "irq_disable: caller=console_flush_all+0x1a0 parent=vprintk_emit+0x120",
            ));
            m.push(super::line(
                "worker",
                600,
                "d..1.",
                1036,
                "irq_enable: caller=console_flush_all+0x2f0 parent=vprintk_emit+0x120",
            ));
        }
        m
    };
    let sw = "sched_switch: prev_comm=worker prev_pid=600 prev_prio=120 prev_state=R ==> next_comm=rt next_pid=500 next_prio=49";
    let x = super::synthetic(&middle(true), 1037, 1040, sw);
    let worker = Agent::Task(Task::new("worker", 600, 120));
    let main = &x.parts[0];
    assert_eq!(
        (main.kind, &main.what),
        (PartKind::NonPreemptible, &worker),
        "{:?}",
        x.parts
    );
    // From the deadline to the interrupts' return (36 us of the 40), and the 2 us it kept
    // the CPU after the wake-up.
    assert_eq!(main.duration_ns, 38_000, "{:?}", x.parts);
    let before_fire = &x.phases.as_ref().expect("phases").before_fire;
    assert_eq!(
        (before_fire[0].kind, before_fire[0].duration_ns),
        (PartKind::NonPreemptible, 36_000)
    );
    assert_eq!(x.culprit, PartKind::NonPreemptible);
    // Before the section (500-900 us the worker ran with no event) is no part of this delay,
    // and without the section the gap is the timer delay the trace cannot see into.
    let x = super::synthetic(&middle(false), 1037, 1040, sw);
    assert_eq!(x.parts[0].kind, PartKind::TimerDelay, "{:?}", x.parts);
    assert!(
        !x.parts.iter().any(|p| p.kind == PartKind::NonPreemptible
            && p.what == worker
            && p.duration_ns > 10_000)
    );
}
