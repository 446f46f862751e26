//! Line classification on lines from real traces: this machine's `trace` file (6.18, five-column
//! flags), the kernel documentation's `trace_pipe` (four-column flags), trace-cmd 3.1 report
//! (no flags, instance prefix), markers, lost events, and damage.

use super::*;

fn ev(line: &str) -> Event<'_> {
    match parse(line) {
        Line::Event(e) => e,
        other => panic!("not an event: {other:?}"),
    }
}

#[test]
fn kernel_trace_line_with_five_flag_columns() {
    let e = ev(
        "      cyclictest-30756   [000] d..3. 13555.497867: sched_waking: comm=migration/0 pid=18 prio=0 target_cpu=000",
    );
    assert_eq!(e.task, "cyclictest");
    assert_eq!(e.pid, 30756);
    assert_eq!(e.cpu, 0);
    assert_eq!(e.ts_ns, 13_555_497_867_000);
    assert_eq!(e.ts_digits, 6);
    assert_eq!(e.name, "sched_waking");
    assert_eq!(e.fields, "comm=migration/0 pid=18 prio=0 target_cpu=000");
    let f = e.flags.unwrap();
    assert!(f.irqs_off && !f.hardirq && !f.need_resched);
    assert_eq!(f.preempt_depth, 3);
    let e = ev(
        "          <idle>-0       [001] dNh1. 13555.496016: hrtimer_expire_entry: hrtimer=0000000009a021c4 function=tick_nohz_handler now=13555496014195",
    );
    assert_eq!((e.task, e.pid, e.cpu), ("<idle>", 0, 1));
    let f = e.flags.unwrap();
    assert!(f.irqs_off && f.hardirq && f.need_resched);
}

// Debian's 6.1-rt (the out-of-tree PREEMPT_RT patch) prints seven flag columns: need-resched-lazy
// and preempt-lazy-depth beside the mainline ones. Lines from the lab's trace (issue #26), where
// none was read and no spike was explained.
#[test]
fn rt_patch_trace_line_with_seven_flag_columns() {
    let e =
        ev("         rtlab/1-156     [001] dn.h2..     8.368158: local_timer_entry: vector=236");
    assert_eq!((e.task, e.pid, e.cpu), ("rtlab/1", 156, 1));
    assert_eq!(e.ts_ns, 8_368_158_000);
    assert_eq!(e.name, "local_timer_entry");
    let f = e.flags.unwrap();
    assert!(f.irqs_off && f.need_resched && f.hardirq && !f.softirq);
    assert_eq!(f.preempt_depth, 2);
    let e = ev(
        "          <idle>-0       [001] d...2..     8.288970: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=ksoftirqd/1 next_pid=29 next_prio=120",
    );
    let f = e.flags.unwrap();
    assert!(f.irqs_off && !f.need_resched && !f.hardirq);
    assert_eq!(f.preempt_depth, 2);
    assert!(
        matches!(
            parse(
                "  app-7 [000] .Lsh1.1 1.000000: sched_waking: comm=a pid=1 prio=120 target_cpu=000"
            ),
            Line::Malformed(_)
        ),
        "a word of seven characters that is no flags column is not taken for one"
    );
    let f = Flags::parse("..L.3.2").unwrap();
    assert!(!f.need_resched);
    assert_eq!(f.preempt_depth, 3);
    assert!(
        Flags::parse("d..2.1").is_none(),
        "six columns are no known layout"
    );
}

#[test]
fn documentation_trace_pipe_with_four_flag_columns() {
    let e = ev(
        "     kworker/0:1-59    [000] d..4   136.677022: sched_wakeup: comm=sshd pid=1995 prio=120 success=1 target_cpu=001",
    );
    assert_eq!(
        (e.task, e.pid, e.ts_ns),
        ("kworker/0:1", 59, 136_677_022_000)
    );
    assert_eq!(e.flags.unwrap().preempt_depth, 4);
}

#[test]
fn trace_cmd_report_lines() {
    let e = ev(
        "tcprobe:             bash-31634 [001] 13659.399797: sched_switch:         bash:31634 [120] R ==> bash:31637 [120]",
    );
    assert_eq!((e.task, e.pid, e.cpu, e.flags), ("bash", 31634, 1, None));
    assert_eq!(e.fields, "bash:31634 [120] R ==> bash:31637 [120]");
    let e = ev(
        "              ls-4734  [002] 106439.675591: sched_switch:          prev_comm=trace-cmd prev_pid=4734 prev_prio=120 prev_state=1024 next_comm=migration/2 next_pid=18 next_prio=0",
    );
    assert_eq!((e.task, e.pid, e.cpu), ("ls", 4734, 2));
    let e = ev(
        "                    <...>-5642  [000]   279.524651: print:                tracing_mark_write: rtlab: break: CPU 1 woke 987654 ns late",
    );
    assert_eq!((e.task, e.name), ("<...>", "print"));
    assert_eq!(
        e.fields,
        "tracing_mark_write: rtlab: break: CPU 1 woke 987654 ns late"
    );
    assert_eq!(parse("cpus=6"), Line::Comment);
    assert_eq!(parse("CPU 3 is empty"), Line::Comment);
    assert_eq!(parse(" gid=4"), Line::Continuation("gid=4"));
}

#[test]
fn tasks_with_dashes_spaces_and_tgid() {
    let e = ev("  Web Content-kid-4242 (  4200) [003] ...1. 100.000000001: sched_switch: x");
    assert_eq!((e.task, e.pid, e.cpu), ("Web Content-kid", 4242, 3));
    assert_eq!((e.ts_ns, e.ts_digits), (100_000_000_001, 9));
}

#[test]
fn markers_lost_events_and_buffer_starts() {
    assert_eq!(
        parse("CPU:1 [LOST 1234 EVENTS]"),
        Line::Lost {
            cpu: Some(1),
            events: Some(1234)
        }
    );
    assert_eq!(
        parse("CPU:0 [1200 EVENTS DROPPED]"),
        Line::Lost {
            cpu: Some(0),
            events: Some(1200)
        }
    );
    assert_eq!(
        parse("##### CPU 2 buffer started ####"),
        Line::BufferStarted { cpu: 2 }
    );
    assert_eq!(parse("# tracer: nop"), Line::Comment);
    assert_eq!(parse(""), Line::Comment);
    assert_eq!(parse(" => __schedule"), Line::Continuation("=> __schedule"));
}

#[test]
fn damaged_lines_are_malformed_not_errors() {
    for bad in [
        "      cyclictest-30756   [000] d..3. 13555.4978",
        "      cyclictest-30756   [000] d..3. 13555.497867",
        "      cyclictest   [000] d..3. 13555.497867: sched_waking: x",
        "      cyclictest-30756   [0x0] d..3. 13555.497867: sched_waking: x",
        "      cyclictest-30756   [000] q..3. 13555.497867: sched_waking: x",
        "garbage [7] here",
    ] {
        assert!(matches!(parse(bad), Line::Malformed(_)), "{bad}");
    }
}

#[test]
fn timestamps() {
    assert_eq!(timestamp("0.000001"), Some((1_000, 6)));
    assert_eq!(timestamp("5.5"), Some((5_500_000_000, 1)));
    assert_eq!(timestamp("1.1234567891"), None);
    assert_eq!(timestamp("x.1"), None);
    assert_eq!(timestamp("18446744073.709551615"), Some((u64::MAX, 9)));
    assert_eq!(timestamp("18446744074.0"), None);
}

proptest::proptest! {
    #[test]
    fn never_panics(line in "\\PC{0,120}") {
        let _ = parse(&line);
    }
}

/// Issue 13: a CPU number no kernel has makes the line malformed, so nothing downstream sizes
/// per-CPU state by it (a `[4000000000]` column once asked for 128 GB).
#[test]
fn a_cpu_beyond_the_kernel_limit_is_not_an_event() {
    let ok = "  a-1 [8191] .... 1.000000: irq_handler_exit: irq=1 ret=handled";
    assert!(matches!(parse(ok), Line::Event(e) if e.cpu == 8191));
    for bad in [
        "  a-1 [8192] .... 1.000000: irq_handler_exit: irq=1 ret=handled",
        "  a-1 [4000000000] .... 1.000000: irq_handler_exit: irq=1 ret=handled",
        "##### CPU 4000000000 buffer started ####",
    ] {
        assert!(matches!(parse(bad), Line::Malformed(_)), "{bad}");
    }
    assert_eq!(
        parse("CPU:4000000000 [LOST 3 EVENTS]"),
        Line::Malformed("CPU:4000000000 [LOST 3 EVENTS]")
    );
}
