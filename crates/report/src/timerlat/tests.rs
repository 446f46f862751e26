//! The timerlat renderers over canned analyses: the rows a reader looks for, the shares, the
//! advice per main part, and escaping in the HTML.

use model::Nanos;
use model::timerlat::{Analysis, Blocking, Context, Interference, TimerlatInfo, TimerlatStop};

use super::*;
use crate::testdata::cpu;

fn item(name: &str, id: u64, ns: u64) -> Interference {
    Interference {
        name: name.into(),
        id,
        duration_ns: ns,
        count: 1,
    }
}

/// CPU 3 blocked by a SCHED_FIFO `cyclictest` thread: 133.5 us, 124.3 us of it the thread.
pub(crate) fn blocked() -> Analysis {
    Analysis {
        cpu: 3,
        activation: 4211,
        context: Context::Thread,
        total_ns: 133_500,
        at_ns: 100_000_010_000,
        irq_latency_ns: 2_000,
        irq_handler_delay_ns: 1_000,
        exit_from_idle: false,
        previous_irq: None,
        timerlat_irq_ns: 3_000,
        blocking: Some(Blocking {
            comm: "cyclictest".into(),
            pid: 8937,
            duration_ns: Some(124_300),
        }),
        stack: vec!["timerlat_irq".into(), "spin_loop".into()],
        nmi_ns: 0,
        irqs: vec![item("eth0", 33, 1_600)],
        softirqs: vec![item("NET_RX", 3, 2_400)],
        threads: vec![],
    }
}

/// CPU 1 idle, 14 us of its 17 us the way out of a C-state.
fn idle() -> Analysis {
    Analysis {
        cpu: 1,
        activation: 7,
        total_ns: 17_000,
        irq_latency_ns: 15_000,
        irq_handler_delay_ns: 14_000,
        exit_from_idle: true,
        timerlat_irq_ns: 1_500,
        blocking: Some(Blocking {
            comm: "<idle>".into(),
            pid: 0,
            duration_ns: None,
        }),
        stack: vec![],
        irqs: vec![],
        softirqs: vec![],
        ..blocked()
    }
}

fn info(analyses: Vec<Analysis>) -> TimerlatInfo {
    TimerlatInfo {
        period_ns: Nanos::MILLISECOND,
        in_instance: true,
        user_threads: false,
        stop_ns: Some(Nanos::from_us(100)),
        stack_ns: Some(Nanos::from_us(50)),
        trace_clock: "local".into(),
        irq: vec![cpu(1, None, &[15_000, 900], 0), cpu(3, None, &[2_000], 0)],
        user: vec![],
        lost_events: 0,
        stop: Some(TimerlatStop {
            cpu: 3,
            context: Context::Thread,
            activation: 4211,
            latency_ns: 133_500,
            stack: vec![],
            window: String::new(),
        }),
        analyses,
    }
}

#[test]
fn the_block_has_every_part_with_its_share() {
    let text = analysis_text(&blocked());
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "CPU 3, activation 4211: thread latency 133.5 us");
    let row = |start: &str| {
        lines
            .iter()
            .find(|l| l.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("no `{start}` row in\n{text}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(row("IRQ handler delay"), "IRQ handler delay 1.0 us 0.7 %");
    assert!(row("IRQ latency").starts_with("IRQ latency 2.0 us expiry"));
    assert_eq!(row("timerlat IRQ"), "timerlat IRQ duration 3.0 us 2.2 %");
    assert_eq!(
        row("blocking thread"),
        "blocking thread cyclictest:8937 124.3 us 93.1 %"
    );
    assert_eq!(row("IRQ interference"), "IRQ interference 1.6 us 1.2 %");
    assert_eq!(row("eth0:33"), "eth0:33 1.6 us 1.2 %");
    assert_eq!(row("softirq"), "softirq interference 2.4 us 1.8 %");
    assert_eq!(
        row("not accounted"),
        "not accounted for 1.2 us 0.9 % scheduler and context switch, or events not recorded"
    );
    assert_eq!(row("thread latency"), "thread latency 133.5 us 100.0 %");
    // The stack follows, innermost first; the time column lines up.
    let stack = text.find("    timerlat_irq").unwrap();
    assert!(stack < text.find("    spin_loop").unwrap());
    let col = |s: &str| {
        let l = lines.iter().rev().find(|l| l.contains(s)).unwrap();
        l.find(" us").unwrap()
    };
    assert_eq!(col("blocking"), col("IRQ handler delay"));
    assert_eq!(col("blocking"), col("thread latency"));
    // The stack follows the blocking thread: where it was.
    let blocking = text.find("blocking thread").unwrap();
    assert!(blocking < stack && stack < text.find("IRQ interference").unwrap());
}

#[test]
fn idle_and_the_irq_context_read_as_such() {
    let text = analysis_text(&idle());
    assert!(text.contains("exit from idle"), "{text}");
    assert!(
        text.contains("the CPU was idle when the timer fired"),
        "{text}"
    );
    assert!(!text.contains("blocking thread"), "{text}");
    let stop = Analysis {
        context: Context::Irq,
        total_ns: 85_000,
        irq_latency_ns: 85_000,
        irq_handler_delay_ns: 85_000,
        timerlat_irq_ns: 0,
        blocking: Some(Blocking {
            comm: "dd".into(),
            pid: 4000,
            duration_ns: None,
        }),
        ..blocked()
    };
    let text = analysis_text(&stop);
    assert!(text.starts_with(
        "CPU 3, activation 4211: IRQ latency 85.0 us (the trace ended before the thread ran)\n"
    ));
    assert!(text.contains("interrupted thread dd:4000"), "{text}");
    assert!(!text.contains("IRQ interference"), "{text}");
    let last = text
        .lines()
        .last()
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>();
    assert_eq!(last.join(" "), "IRQ latency 85.0 us 100.0 %");
}

#[test]
fn advice_follows_the_main_part() {
    let a = advice(&blocked());
    assert!(a.starts_with("cyclictest (pid 8937) was running"), "{a}");
    assert!(
        a.contains("124.3 us (93.1 %)") && a.contains("Move it off CPU 3"),
        "{a}"
    );
    let mut k = blocked();
    k.blocking.as_mut().unwrap().comm = "irq/33-eth0".into();
    let a = advice(&k);
    assert!(
        a.contains("threaded handler of IRQ 33 (eth0)") && a.contains("/proc/irq/33/"),
        "{a}"
    );
    k.blocking.as_mut().unwrap().comm = "ksoftirqd/3".into();
    assert!(advice(&k).contains("CPU 3's softirq thread"));
    k.blocking.as_mut().unwrap().comm = "rcuc/3".into();
    assert!(advice(&k).contains("rcu_nocbs=3"));
    k.blocking.as_mut().unwrap().comm = "ktimers/3".into();
    assert!(advice(&k).contains("nohz_full=3"));

    let a = advice(&idle());
    assert!(
        a.contains("/dev/cpu_dma_latency") && a.contains("max_cstate"),
        "{a}"
    );
    let mut busy = idle();
    busy.exit_from_idle = false;
    busy.previous_irq = Some(item("ahci", 40, 6_000));
    let a = advice(&busy);
    assert!(
        a.contains("IRQs-off") && a.contains("rtlab hwlat") && a.contains("ahci:40"),
        "{a}"
    );

    let mut irq = blocked();
    irq.blocking = None;
    irq.irqs = vec![item("eth0", 33, 100_000), item("nvme0q1", 51, 2_000)];
    let a = advice(&irq);
    assert!(
        a.contains("eth0:33") && a.contains("/proc/irq/33/smp_affinity_list"),
        "{a}"
    );
    irq.irqs = vec![item("local_timer", 236, 100_000)];
    assert!(advice(&irq).contains("cannot be moved"));

    let mut soft = blocked();
    soft.blocking = None;
    soft.softirqs = vec![item("NET_RX", 3, 90_000)];
    assert!(advice(&soft).contains("threaded NAPI"));
    soft.softirqs = vec![item("TIMER", 1, 90_000)];
    assert!(advice(&soft).contains("nohz_full"));

    let mut nmi = blocked();
    nmi.blocking = None;
    nmi.nmi_ns = 100_000;
    assert!(advice(&nmi).contains("nmi_watchdog=0"));

    let mut thr = blocked();
    thr.blocking = None;
    thr.threads = vec![item("kworker/3:1", 77, 100_000)];
    let a = advice(&thr);
    assert!(
        a.contains("kworker/3:1:77") && a.contains("isolcpus"),
        "{a}"
    );

    let bare = Analysis {
        irq_handler_delay_ns: 900,
        timerlat_irq_ns: 0,
        blocking: None,
        irqs: vec![],
        softirqs: vec![],
        ..blocked()
    };
    assert!(advice(&bare).contains("not covered by the tracer's noise events"));
}

#[test]
fn the_show_table_has_irq_and_thread_maxima_and_the_stop() {
    let thread = [
        cpu(1, None, &[17_000], 0),
        cpu(3, None, &[133_500, 9_000], 0),
    ];
    let text = timerlat_text(&info(vec![blocked()]), &thread);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "timerlat (kernel threads, period 1000 us): maxima in us"
    );
    let squeeze = |l: &str| l.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(squeeze(lines[1]), "CPU IRQ max thread max");
    assert_eq!(squeeze(lines[2]), "1 15.0 17.0");
    assert_eq!(squeeze(lines[3]), "3 2.0 133.5");
    assert!(lines[4].contains("CPU 3's thread latency reached 133.5 us at activation 4211"));
    assert!(lines[4].contains("threshold 100.0 us"));
}

#[test]
fn the_html_section_breaks_the_worst_down_and_escapes_names() {
    let mut evil = blocked();
    evil.blocking.as_mut().unwrap().comm = "<script>alert('x')</script>".into();
    evil.stack.push("<b>frame</b>".into());
    let thread = [cpu(1, None, &[17_000], 0), cpu(3, None, &[133_500], 0)];
    let page = analyses_html(&info(vec![evil, idle()]), &thread);
    assert!(
        page.starts_with("<section class=\"timerlat\">\n<h3>Inside the kernel (timerlat)</h3>")
    );
    assert!(
        !page.contains("<script>") && !page.contains("<b>frame"),
        "{page}"
    );
    assert!(page.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;:8937"));
    assert!(page.contains("&lt;b&gt;frame&lt;/b&gt;"));
    assert!(page.contains("<h4>The worst: CPU 3, activation 4211: thread latency 133.5 us</h4>"));
    // The bar: one segment per part as wide as its share.
    assert!(
        page.contains("flex:0 1 93.11%;background:#b42318"),
        "{page}"
    );
    assert!(
        page.contains("<td>3</td><td>2.0</td><td>133.5</td><td>blocking thread (93.1 %)</td>"),
        "{page}"
    );
    assert!(
        page.contains("<td>1</td><td>15.0</td><td>17.0</td><td>IRQ handler delay (82.4 %)</td>"),
        "{page}"
    );
    // The other CPU collapsed, with its advice.
    let details = page
        .find("<details class=\"timerlat-analysis\"><summary>CPU 1, activation 7")
        .unwrap();
    assert!(page[details..].contains("cpu_dma_latency"));
    assert!(page.contains("<p class=\"break\">The tracer stopped itself"));
    assert!(!page.contains("<script"), "no script at all");
    // Nothing analysed says so.
    let empty = analyses_html(&info(vec![]), &thread);
    assert!(empty.contains("No activation was analysed"));
    assert!(empty.ends_with("</section>\n"));
}
