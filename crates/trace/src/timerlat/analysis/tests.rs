//! The analyser over hand-written timerlat traces (the kernel's line formats, shortened) and
//! the kernel documentation's example trace.

use model::timerlat::{Context, MAX_INTERFERENCES, MAX_STACK_FRAMES};

use super::super::stream::record;
use super::*;

/// An analyser fed `text` line by line.
fn analyse(text: &str) -> Analyser {
    let mut a = Analyser::new();
    for line in text.lines() {
        a.feed(&record(line));
    }
    a
}

/// CPU 3 runs a SCHED_FIFO hog (`spin`, pid 8937) at the measuring priority: the timer fires
/// while it runs, the timerlat IRQ takes 3 us, an Ethernet IRQ and NET_RX interfere, and
/// the hog keeps the CPU 124.3 us before the timerlat thread runs; the stack follows.
const BLOCKING: &str = "\
# tracer: timerlat
       spin-8937    [003] d.h1. 100.000010000: #4211 context irq timer_latency 2000 ns
       spin-8937    [003] d.h1. 100.000012000: irq_noise: local_timer:236 start 100.000009000 duration 3000 ns
       spin-8937    [003] d.h1. 100.000021600: irq_noise: eth0-rx-0:33 start 100.000020000 duration 1600 ns
       spin-8937    [003] ..s1. 100.000032400: softirq_noise: NET_RX:3 start 100.000030000 duration 2400 ns
       spin-8937    [003] d..2. 100.000140000: thread_noise: spin:8937 start 100.000012000 duration 124300 ns
 timerlat/3-900     [003] ..... 100.000141500: #4211 context thread timer_latency 133500 ns
 timerlat/3-900     [003] ..... 100.000141600: <stack trace>
 => timerlat_irq
 => __hrtimer_run_queues
 => hrtimer_interrupt
 => spin_loop
";

#[test]
fn a_blocking_thread_dominates() {
    let an = analyse(BLOCKING);
    let worst = an.worst();
    assert_eq!(worst.len(), 1);
    let a = &worst[0];
    assert_eq!(
        (a.cpu, a.activation, a.context, a.total_ns, a.irq_latency_ns),
        (3, 4211, Context::Thread, 133_500, 2_000)
    );
    assert_eq!((a.irq_handler_delay_ns, a.timerlat_irq_ns), (1_000, 3_000));
    assert!(!a.exit_from_idle);
    assert_eq!(a.previous_irq, None);
    let b = a.blocking.as_ref().unwrap();
    assert_eq!(
        (b.comm.as_str(), b.pid, b.duration_ns),
        ("spin", 8937, Some(124_300))
    );
    assert_eq!(a.dominant(), ("blocking thread", 124_300));
    assert!(
        (a.share(124_300) - 93.1).abs() < 0.05,
        "{}",
        a.share(124_300)
    );
    assert_eq!(
        a.irqs,
        vec![Interference {
            name: "eth0-rx-0".into(),
            id: 33,
            duration_ns: 1_600,
            count: 1
        }]
    );
    assert_eq!(
        (a.softirqs[0].name.as_str(), a.softirqs[0].id),
        ("NET_RX", 3)
    );
    assert!(a.threads.is_empty());
    assert_eq!(
        a.stack,
        [
            "timerlat_irq",
            "__hrtimer_run_queues",
            "hrtimer_interrupt",
            "spin_loop"
        ]
    );
    assert_eq!(an.last(3).as_ref(), Some(a));
    assert_eq!(an.last(0), None);
}

#[test]
fn a_later_smaller_activation_keeps_the_worst_and_its_stack() {
    let text = format!(
        "{BLOCKING}\
 spin-8937 [003] d.h1. 100.001010000: #4212 context irq timer_latency 1500 ns
 spin-8937 [003] d.h1. 100.001012000: irq_noise: local_timer:236 start 100.001009000 duration 2500 ns
 timerlat/3-900 [003] ..... 100.001020000: #4212 context thread timer_latency 9000 ns
"
    );
    let an = analyse(&text);
    let worst = an.worst();
    assert_eq!((worst[0].activation, worst[0].stack.len()), (4211, 4));
    let last = an.last(3).unwrap();
    assert_eq!((last.activation, last.total_ns), (4212, 9_000));
    assert!(last.stack.is_empty() && last.irqs.is_empty());
    // A third, worse one takes the worst's place in the slot the second used.
    let text = format!(
        "{text}\
 spin-8937 [003] d.h1. 100.002010000: #4213 context irq timer_latency 1500 ns
 timerlat/3-900 [003] ..... 100.002300000: #4213 context thread timer_latency 290000 ns
"
    );
    let an = analyse(&text);
    assert_eq!(an.worst()[0].activation, 4213);
    assert_eq!(an.last(3).unwrap().activation, 4213);
}

#[test]
fn exit_from_idle_and_a_previous_irq() {
    // The timer expires at 50.000005; an IRQ that ended at 50.000003 is long gone.
    let idle = "\
 <idle>-0 [001] d.h1. 50.000003000: irq_noise: ahci:40 start 50.000002000 duration 1000 ns
 <idle>-0 [001] d.h1. 50.000020000: #7 context irq timer_latency 15000 ns
 <idle>-0 [001] d.h1. 50.000021500: irq_noise: local_timer:236 start 50.000019000 duration 1500 ns
 timerlat/1-77 [001] ..... 50.000023000: #7 context thread timer_latency 17000 ns
";
    let a = analyse(idle).last(1).unwrap();
    assert!(a.exit_from_idle);
    assert_eq!(a.irq_handler_delay_ns, 14_000);
    assert_eq!(a.previous_irq, None);
    assert_eq!(a.dominant(), ("IRQ handler delay", 14_000));
    let b = a.blocking.unwrap();
    assert_eq!((b.pid, b.duration_ns), (0, None));
    // The same with the IRQ still running at the expiry: it may have delayed the handler.
    let busy = idle.replace(
        "50.000003000: irq_noise: ahci:40 start 50.000002000 duration 1000",
        "50.000008000: irq_noise: ahci:40 start 50.000002000 duration 6000",
    );
    let a = analyse(&busy).last(1).unwrap();
    assert!(!a.exit_from_idle);
    assert_eq!(
        a.previous_irq,
        Some(Interference {
            name: "ahci".into(),
            id: 40,
            duration_ns: 6_000,
            count: 1
        })
    );
}

#[test]
fn irq_softirq_nmi_and_thread_interference() {
    let text = "\
 bash-500 [002] d.h1. 7.000010000: #1 context irq timer_latency 1000 ns
 bash-500 [002] d.h1. 7.000011000: irq_noise: local_timer:236 start 7.000009500 duration 1200 ns
 bash-500 [002] d.h1. 7.000015000: irq_noise: nvme0q2:51 start 7.000012000 duration 3000 ns
 bash-500 [002] d.h1. 7.000019000: irq_noise: nvme0q2:51 start 7.000016000 duration 2000 ns
 bash-500 [002] dNh2. 7.000019500: nmi_noise: start 7.000019000 duration 500 ns
 bash-500 [002] ..s1. 7.000030000: softirq_noise: BLOCK:4 start 7.000020000 duration 9000 ns
 bash-500 [002] d..2. 7.000031000: thread_noise: bash:500 start 7.000011000 duration 800 ns
 ksoftirqd/2-30 [002] d..2. 7.000050000: thread_noise: ksoftirqd/2:30 start 7.000031000 duration 19000 ns
 timerlat/2-80 [002] d..2. 7.000051000: thread_noise: timerlat/2:80 start 7.000050000 duration 300 ns
 timerlat/2-80 [002] ..... 7.000052000: #1 context thread timer_latency 43000 ns
 timerlat/2-80 [002] ..... 7.000060000: #1 context user-ret timer_latency 51000 ns
";
    let a = analyse(text).last(2).unwrap();
    assert_eq!(a.context, Context::Thread);
    assert_eq!(Analysis::sum(&a.irqs), 5_000);
    // nvme0q2 twice: one entry, counted twice.
    assert_eq!(a.irqs.len(), 1);
    assert_eq!(a.irqs[0].count, 2);
    assert_eq!(a.nmi_ns, 500);
    assert_eq!(Analysis::sum(&a.softirqs), 9_000);
    assert_eq!(a.blocking.as_ref().unwrap().duration_ns, Some(800));
    // ksoftirqd is interference; the measuring thread itself is not.
    assert_eq!(a.threads.len(), 1);
    assert_eq!(
        (a.threads[0].name.as_str(), a.threads[0].id),
        ("ksoftirqd/2", 30)
    );
    assert_eq!(a.dominant(), ("thread interference", 19_000));
    // The delay: the handler started 7.000009500, the timer expired 7.000009000.
    assert_eq!(a.irq_handler_delay_ns, 500);
}

#[test]
fn a_stop_at_the_irq_with_its_stack() {
    let text = "\
 timerlat/0-70 [000] ..... 9.000100000: #11 context thread timer_latency 6000 ns
 dd-4000 [000] d.h1. 9.001090000: #12 context irq timer_latency 85000 ns
 dd-4000 [000] d.h1. 9.001090100: <stack trace>
 => timerlat_irq
 => __hrtimer_run_queues
 => _raw_spin_unlock_irqrestore
";
    let an = analyse(text);
    let a = an.last(0).unwrap();
    assert_eq!(
        (a.context, a.activation, a.total_ns, a.irq_handler_delay_ns),
        (Context::Irq, 12, 85_000, 85_000)
    );
    assert_eq!(a.stack.len(), 3);
    let b = a.blocking.as_ref().unwrap();
    assert_eq!((b.comm.as_str(), b.pid, b.duration_ns), ("dd", 4000, None));
    assert_eq!(an.worst(), vec![a]);
}

#[test]
fn lost_events_drop_the_split_activation() {
    let text = "\
 hog-9 [003] d.h1. 3.000010000: #5 context irq timer_latency 1000 ns
CPU:3 [LOST 812 EVENTS]
 timerlat/3-90 [003] ..... 3.000200000: #5 context thread timer_latency 190000 ns
";
    let an = analyse(text);
    assert_eq!(an.last(3), None);
    assert!(an.worst().is_empty());
    // A loss on another CPU (or after the thread sample) leaves it alone.
    let other = text.replace("CPU:3", "CPU:1");
    assert_eq!(analyse(&other).worst()[0].total_ns, 190_000);
    // A loss on an unnamed CPU drops every CPU's.
    let all = text.replace("CPU:3 [LOST 812 EVENTS]", "[LOST EVENTS]");
    assert!(matches!(
        record("[LOST EVENTS]"),
        Record::Lost { cpu: None, .. }
    ));
    assert!(analyse(&all).worst().is_empty());
    // After a loss the worst finished activation stays, without a later stack.
    let text = "\
 hog-9 [003] d.h1. 3.000010000: #5 context irq timer_latency 1000 ns
 timerlat/3-90 [003] ..... 3.000200000: #5 context thread timer_latency 190000 ns
CPU:3 [LOST 3 EVENTS]
 => stray_frame
";
    let an = analyse(text);
    assert_eq!(an.last(3), None);
    let w = an.worst();
    assert_eq!((w[0].total_ns, w[0].stack.len()), (190_000, 0));
}

#[test]
fn interleaved_cpus_keep_their_own_state() {
    let text = "\
 a-10 [000] d.h1. 1.000010000: #1 context irq timer_latency 1000 ns
 b-20 [001] d.h1. 1.000010500: #1 context irq timer_latency 1500 ns
 a-10 [000] d.h1. 1.000011000: irq_noise: local_timer:236 start 1.000009500 duration 900 ns
 b-20 [001] d.h1. 1.000012000: irq_noise: local_timer:236 start 1.000009500 duration 1100 ns
 b-20 [001] d..2. 1.000040000: thread_noise: b:20 start 1.000012000 duration 28000 ns
 a-10 [000] d..2. 1.000015000: thread_noise: a:10 start 1.000011000 duration 4000 ns
 timerlat/0-1 [000] ..... 1.000016000: #1 context thread timer_latency 7000 ns
 timerlat/0-1 [000] ..... 1.000016100: <stack trace>
 => from_cpu_0
 timerlat/1-2 [001] ..... 1.000041000: #1 context thread timer_latency 32000 ns
";
    let an = analyse(text);
    let w = an.worst();
    assert_eq!(
        w.iter().map(|a| (a.cpu, a.total_ns)).collect::<Vec<_>>(),
        [(1, 32_000), (0, 7_000)]
    );
    assert_eq!(w[0].blocking.as_ref().unwrap().duration_ns, Some(28_000));
    assert_eq!(w[1].blocking.as_ref().unwrap().duration_ns, Some(4_000));
    assert_eq!(w[1].stack, ["from_cpu_0"]);
    assert!(w[0].stack.is_empty());
    assert_eq!(an.cpus().collect::<Vec<_>>(), [0, 1]);
}

#[test]
fn lists_stacks_and_names_are_capped() {
    let mut text = String::from(
        " x-1 [000] d.h1. 1.000010000: #1 context irq timer_latency 1000 ns\n \
         x-1 [000] d.h1. 1.000011000: irq_noise: local_timer:236 start 1.000009500 duration 900 ns\n",
    );
    for i in 0..100 {
        text.push_str(&format!(
            " x-1 [000] d.h1. 1.0001{i:05}: irq_noise: dev{i}:{i} start 1.000012000 duration 10 ns\n"
        ));
    }
    let long = "n".repeat(300);
    text.push_str(&format!(
        " x-1 [000] d..2. 1.000200000: thread_noise: {long}:77 start 1.000012000 duration 5 ns\n"
    ));
    text.push_str(
        " timerlat/0-1 [000] ..... 1.000300000: #1 context thread timer_latency 290000 ns\n",
    );
    text.push_str(" timerlat/0-1 [000] ..... 1.000300100: <stack trace>\n");
    for i in 0..100 {
        text.push_str(&format!(" => frame_{i}\n"));
    }
    let a = analyse(&text).last(0).unwrap();
    assert_eq!(a.irqs.len(), MAX_INTERFERENCES);
    assert_eq!(Analysis::sum(&a.irqs), 1_000);
    let others = a.irqs.last().unwrap();
    assert_eq!(
        (others.name.as_str(), others.id, others.duration_ns),
        (OTHERS, 0, 10 * (100 - (MAX_INTERFERENCES as u64 - 1)))
    );
    assert_eq!(a.irqs[0].name, "dev0");
    assert_eq!(a.stack.len(), MAX_STACK_FRAMES);
    assert_eq!(a.threads[0].name.len(), MAX_NAME);
    // Exactly the cap: every entry kept, none folded.
    let mut list = List::default();
    for i in 0..MAX_INTERFERENCES as u64 {
        list.push("irq", i, 1);
    }
    assert!(list.as_slice().iter().all(|i| i.name == "irq"));
    list.push("one more", 99, 1);
    assert_eq!(list.as_slice().last().unwrap().name, OTHERS);
    assert_eq!(list.as_slice().last().unwrap().duration_ns, 2);
    // A name cut inside a multi-byte character is cut before it.
    let mut s = String::new();
    put_name(&mut s, &format!("{}é", "a".repeat(MAX_NAME - 1)));
    assert_eq!(s.len(), MAX_NAME - 1);
}

#[test]
fn a_thread_sample_of_another_activation_is_not_joined() {
    let text = "\
 x-1 [000] d.h1. 1.000010000: #1 context irq timer_latency 1000 ns
 timerlat/0-1 [000] ..... 1.000300000: #2 context thread timer_latency 290000 ns
";
    let an = analyse(text);
    assert!(an.worst().is_empty());
    assert_eq!(an.last(0), None);
}

#[test]
fn the_kernel_documentation_example_samples_only() {
    let path = format!(
        "{}/../../fixtures/traces/rtla/kdoc_timerlat_tracer_trace.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path).unwrap();
    let an = analyse(&text);
    let w = an.worst();
    assert_eq!(
        w.iter()
            .map(|a| (a.cpu, a.activation, a.context, a.total_ns, a.irq_latency_ns))
            .collect::<Vec<_>>(),
        [
            (0, 1, Context::Thread, 11_700, 932),
            (1, 1, Context::Thread, 9_820, 2_833)
        ]
    );
    // No noise events: the IRQ latency stands for the handler delay, and the idle CPU's
    // delay is its exit from idle.
    assert_eq!(w[0].irq_handler_delay_ns, 932);
    assert!(w[0].exit_from_idle);
    assert_eq!(an.last(1).unwrap().activation, 2);
}

proptest::proptest! {
    #[test]
    fn random_lines_never_panic(lines in proptest::collection::vec("\\PC{0,120}", 0..40)) {
        let mut a = Analyser::new();
        for l in &lines {
            a.feed(&record(l));
        }
        let _ = a.worst();
        let _ = a.last(0);
    }

    #[test]
    fn random_timerlat_traces_never_panic_and_stay_bounded(
        events in proptest::collection::vec((0u8..8, 0u32..3, 0u64..4, 0u64..400_000, 0u64..2_000_000), 0..200)
    ) {
        let mut a = Analyser::new();
        for (kind, cpu, act, ns, at) in events {
            let ts = format!("{}.{:09}", 1 + at / 1_000_000_000, at % 1_000_000_000);
            let start = format!("1.{:09}", at / 2);
            let line = match kind {
                0 => format!(" x-{act} [{cpu:03}] d.h1. {ts}: #{act} context irq timer_latency {ns} ns"),
                1 => format!(" t-9 [{cpu:03}] ..... {ts}: #{act} context thread timer_latency {ns} ns"),
                2 => format!(" x-1 [{cpu:03}] d.h1. {ts}: irq_noise: eth:{act} start {start} duration {ns} ns"),
                3 => format!(" x-1 [{cpu:03}] ..s1. {ts}: softirq_noise: TIMER:1 start {start} duration {ns} ns"),
                4 => format!(" x-1 [{cpu:03}] d..2. {ts}: thread_noise: x:{act} start {start} duration {ns} ns"),
                5 => format!(" x-1 [{cpu:03}] d.h1. {ts}: <stack trace>"),
                6 => format!(" => f{ns}"),
                _ => format!("CPU:{cpu} [LOST {ns} EVENTS]"),
            };
            a.feed(&record(&line));
        }
        for w in a.worst() {
            proptest::prop_assert!(w.irqs.len() <= MAX_INTERFERENCES);
            proptest::prop_assert!(w.stack.len() <= MAX_STACK_FRAMES);
        }
        proptest::prop_assert!(a.worst().len() <= 3);
    }
}

#[test]
fn the_same_source_again_adds_to_its_entry() {
    let mut a = Analyser::new();
    for line in [
        "  hog-512 [001] d.h1. 10.000100: #1 context irq timer_latency 100 ns",
        "  hog-512 [001] d.h1. 10.000102: irq_noise: local_timer:236 start 10.000099900 duration 500 ns",
        "  hog-512 [001] d.h1. 10.000200: irq_noise: local_timer:236 start 10.000199000 duration 700 ns",
        "  hog-512 [001] d.h1. 10.000300: irq_noise: local_timer:236 start 10.000299000 duration 800 ns",
        "  hog-512 [001] d.h1. 10.000310: irq_noise: eth0:33 start 10.000309000 duration 900 ns",
        "  timerlat/1-77 [001] ....  10.000400: #1 context thread timer_latency 300000 ns",
    ] {
        a.feed(&crate::timerlat::stream::record(line));
    }
    let w = a.worst();
    let irqs = &w[0].irqs;
    assert_eq!(irqs.len(), 2, "{irqs:?}");
    assert_eq!(
        (irqs[0].name.as_str(), irqs[0].count, irqs[0].duration_ns),
        ("local_timer", 2, 1_500)
    );
    assert_eq!((irqs[1].name.as_str(), irqs[1].count), ("eth0", 1));
}

#[test]
fn threads_are_listed_longest_first_and_idle_is_not_interference() {
    let mut a = Analyser::new();
    for line in [
        "  <idle>-0 [001] d.h1. 10.000100: #1 context irq timer_latency 100 ns",
        "  <idle>-0 [001] d..2. 10.000200: thread_noise: swapper/1:0 start 10.000100000 duration 90000 ns",
        "  kworker-40 [001] d..2. 10.000300: thread_noise: kworker/1:1:40 start 10.000200000 duration 1000 ns",
        "  lab-hog-255 [001] d..2. 10.009000: thread_noise: lab-hog:255 start 10.000300000 duration 8700000 ns",
        "  timerlat/1-77 [001] ....  10.009100: #1 context thread timer_latency 9000000 ns",
    ] {
        a.feed(&crate::timerlat::stream::record(line));
    }
    let w = a.worst();
    let names: Vec<&str> = w[0].threads.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["lab-hog", "kworker/1:1"]);
}
