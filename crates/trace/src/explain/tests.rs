//! Explanations of real traces captured on the development VM (fixtures/traces/local): a
//! SCHED_FIFO 99 hog on the CPU cyclictest measures, and an idle machine.

use std::io::BufReader;

use model::explain::PartKind;

use super::*;

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/../../fixtures/traces/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Scans `text`, explains its `n` worst timer wake-ups.
fn explain_worst(text: &str, n: usize) -> (Scan, Vec<model::explain::Explanation>) {
    let s = scan(BufReader::new(text.as_bytes())).unwrap();
    let worst: Vec<Wakeup> = s.worst(n).into_iter().cloned().collect();
    let specs: Vec<WindowSpec> = worst
        .iter()
        .map(|w| WindowSpec {
            cpu: w.cpu,
            from_ts: w.deadline_ts(s.clock_offset_ns).saturating_sub(LOOKBACK_NS),
            to_ts: w.switched_ts,
        })
        .collect();
    let windows = collect(BufReader::new(text.as_bytes()), &specs, true).unwrap();
    let out = worst
        .iter()
        .zip(&windows)
        .map(|(w, win)| {
            let spike = Spike {
                cpu: w.cpu,
                pid: Some(w.pid),
                comm: Some(w.comm.clone()),
                deadline_ts: w.deadline_ts(s.clock_offset_ns),
                end_ts: None,
                cycle: None,
            };
            explain(win, &spike, s.clock_offset_ns)
        })
        .collect();
    (s, out)
}

#[test]
fn a_fifo_99_hog_is_named_with_its_duration() {
    let text = fixture("local/cyclictest_fifo99_hog_cpu1.txt");
    let (s, xs) = explain_worst(&text, 4);
    for x in &xs {
        eprintln!("{}\n{:#?}\n", x.story, x.parts);
    }
    assert!(
        s.clock_offset_ns.abs() < 2_000,
        "mono clock: {}",
        s.clock_offset_ns
    );
    let x = &xs[0];
    assert_eq!(x.cpu, 1);
    assert_eq!(x.comm.as_deref(), Some("cyclictest"));
    assert_eq!(x.culprit, PartKind::HigherPriorityTask);
    let hog = &x.parts[0];
    assert!(
        hog.what
            .starts_with("hog (pid 29010, real-time priority 99)"),
        "{}",
        hog.what
    );
    // The hog busy-loops 3 ms per burst; cyclictest reported a 3031 us maximum.
    assert!(
        (2_400_000..=3_600_000).contains(&hog.duration_ns),
        "{}",
        hog.duration_ns
    );
    assert!(
        x.latency_ns > 2_500_000 && x.latency_ns < 3_200_000,
        "{}",
        x.latency_ns
    );
    assert!(
        x.story.contains("of higher priority, held the CPU"),
        "{}",
        x.story
    );
}

#[test]
fn tracepoint_wakeup_latencies_agree_with_cyclictest() {
    // cyclictest on this trace: `T: 0 (29009) P:80 I:1000 C: 500 Min: 12 Act: 25 Avg: 39
    // Max: 3031` (its clock read comes a few us after the switch-in the trace shows).
    let text = fixture("local/cyclictest_fifo99_hog_cpu1.txt");
    let s = scan(BufReader::new(text.as_bytes())).unwrap();
    let lat: Vec<u64> = s
        .wakeups
        .iter()
        .filter(|w| w.pid == 29009)
        .map(|w| w.latency_ns(s.clock_offset_ns))
        .collect();
    let n = lat.len() as u64;
    let max = *lat.iter().max().unwrap();
    let avg = lat.iter().sum::<u64>() / n;
    eprintln!(
        "n {n} min {} avg {avg} max {max}",
        lat.iter().min().unwrap()
    );
    assert!((495..=500).contains(&n), "{n}");
    assert!((2_950_000..=3_031_000).contains(&max), "{max}");
    assert!(avg <= 39_000, "{avg}");
    let h = &s.wakeup_histograms()[&1];
    // The hog's own wake-ups are there too (it sleeps with usleep, at FIFO 99).
    let hog = s.wakeups.iter().filter(|w| w.comm == "hog").count() as u64;
    assert!(hog >= 3, "{hog}");
    assert_eq!(h.count(), n + hog);
}

#[test]
fn trace_cmd_report_reads_like_the_kernel_trace_it_came_from() {
    let kernel = scan(BufReader::new(
        fixture("local/cyclictest_idle_2cpu.txt").as_bytes(),
    ))
    .unwrap();
    let report = scan(BufReader::new(
        fixture("local/trace_cmd_report_instance.txt").as_bytes(),
    ))
    .unwrap();
    assert_eq!(
        kernel.read.malformed, 0,
        "{:?}",
        kernel.read.first_malformed
    );
    assert_eq!(
        report.read.malformed, 0,
        "{:?}",
        report.read.first_malformed
    );
    assert!(kernel.has_flags && !report.has_flags);
    // The same capture: the same events (the report adds 56 older break markers of the
    // top-level buffer, left there by earlier test runs) and the same wake-ups.
    assert_eq!(report.read.events, kernel.read.events + 56);
    let ct = |s: &Scan| -> Vec<(u64, u64)> {
        s.wakeups
            .iter()
            .filter(|w| w.comm == "cyclictest" && w.prio < 100)
            .map(|w| (w.expires_ns, w.latency_ns(s.clock_offset_ns) / 1000))
            .collect()
    };
    let (a, b) = (ct(&kernel), ct(&report));
    assert!(a.len() >= 295, "{}", a.len());
    assert_eq!(a, b);
    assert_eq!(report.markers.len(), 56);
    let irqs = kernel
        .handlers
        .keys()
        .filter(|k| k.starts_with("irq "))
        .count();
    assert!(irqs >= 1, "{:?}", kernel.handlers.keys());
}
