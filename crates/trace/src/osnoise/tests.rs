//! Tests of the osnoise trace reader: the kernel documentation's example, noise events, and
//! damaged or endless input.
use super::*;

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/../../fixtures/imports/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_kernel_documentation_example() {
    let text = fixture("kdoc_osnoise_tracer_trace_8cpu.txt");
    assert!(detect(&text));
    let r = OsnoiseReport::parse(&text).unwrap();
    assert_eq!(r.tracer.as_deref(), Some("osnoise"));
    assert_eq!(
        (r.summary_lines, r.noise_events, r.unknown_lines),
        (8, 0, 0)
    );
    assert_eq!(r.cpus.len(), 8);
    let c2 = &r.cpus[&2];
    assert_eq!(
        (c2.periods, c2.runtime_us, c2.noise_us),
        (1, 1_000_000, 5675)
    );
    assert_eq!((c2.max_period_noise_us, c2.max_single_us), (5675, 202));
    assert_eq!(
        c2.counts,
        PerSource {
            hw: 6,
            nmi: 0,
            irq: 1013,
            softirq: 25,
            thread: 21
        }
    );
    assert_eq!(r.first_summary_ns, Some(81_637_220_000));
    assert_eq!(r.last_summary_ns, Some(81_638_326_000));
}

#[test]
fn noise_events_become_named_sources() {
    let text = fixture("osnoise_tracer_events_hand.txt");
    assert!(detect(&text));
    let r = OsnoiseReport::parse(&text).unwrap();
    assert_eq!(r.online_cpus, Some(16));
    assert_eq!((r.summary_lines, r.noise_events), (1, 8));
    let c = &r.cpus[&8];
    assert_eq!(
        c.samples,
        NoiseStats {
            count: 3,
            total_ns: 8812 + 12950 + 6100,
            max_ns: 12950
        }
    );
    let timer = c.sources[&(Source::Irq, "local_timer".to_string())];
    assert_eq!(
        timer,
        NoiseStats {
            count: 2,
            total_ns: 1845 + 2848,
            max_ns: 2848
        }
    );
    assert!(
        c.sources
            .contains_key(&(Source::Irq, "irq 24 virtio0-input.0".to_string()))
    );
    assert!(
        c.sources
            .contains_key(&(Source::Softirq, "softirq NET_RX".to_string()))
    );
    assert!(
        c.sources
            .contains_key(&(Source::Thread, "migration/8 (pid 54)".to_string()))
    );
    let hw = c.sources[&(Source::Hw, UNATTRIBUTED.to_string())];
    assert_eq!((hw.count, hw.total_ns), (1, 6100));
    assert_eq!(c.class_ns.irq, 1845 + 2848 + 7004);
    assert_eq!(c.class_ns.hw, 6100);
}

#[test]
fn damaged_summary_lines_name_their_line() {
    let text = fixture("kdoc_osnoise_tracer_trace_8cpu.txt");
    let bad = text.replace("5675  99.43250", "5675  99,43250");
    let e = OsnoiseReport::parse(&bad).unwrap_err();
    assert_eq!(e.line, 13);
    assert!(e.what.contains("% of CPU available"), "{e}");
    let bad = text.replace("   1013     25", "   1013 99999999999999999999999");
    assert!(
        OsnoiseReport::parse(&bad)
            .unwrap_err()
            .what
            .contains("whole number")
    );
    let bad = text.replace("[003]", "[99999999]");
    assert!(
        OsnoiseReport::parse(&bad)
            .unwrap_err()
            .what
            .contains("past the largest CPU")
    );
    let bad = text.replace("1000000        656", "100        656");
    assert!(
        OsnoiseReport::parse(&bad)
            .unwrap_err()
            .what
            .contains("more than the period")
    );
    let bad = text.replace("     18      0   1007", "     18      0");
    assert!(
        OsnoiseReport::parse(&bad)
            .unwrap_err()
            .what
            .contains("expected 9 figures")
    );
    // Windows line ends, NUL bytes and a cut last line.
    // trace-cmd report's layout names the entry.
    let tc = text.replace("81.638154: 1000000", "81.638154: osnoise: 1000000");
    assert_eq!(
        OsnoiseReport::parse(&tc).unwrap().cpus[&1].runtime_us,
        1_000_000
    );
    let crlf = text.replace('\n', "\r\n");
    assert_eq!(OsnoiseReport::parse(&crlf).unwrap().summary_lines, 8);
    let nul = text.replace("1721  99", "17\u{0}1  99");
    assert!(
        OsnoiseReport::parse(&nul)
            .unwrap_err()
            .what
            .contains("whole number")
    );
    let cut = &text[..text.len() - 30];
    assert!(
        OsnoiseReport::parse(cut).is_err() || OsnoiseReport::parse(cut).unwrap().summary_lines == 7
    );
}

#[test]
fn sums_past_2_pow_64_are_refused() {
    let line = "  <...>-1 [000] ....  1.000001: 18446744073709551615 0 100.00000 0 0 0 0 0 0\n";
    let e = OsnoiseReport::parse(&line.repeat(2)).unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.what.contains("past 2^64"), "{e}");
}

#[test]
fn long_lines_and_endless_names_stay_bounded() {
    let mut text = String::from("# tracer: osnoise\n");
    text.push_str(&"x".repeat(MAX_LINE_BYTES * 2));
    text.push('\n');
    for i in 0..(MAX_NAMES_PER_CPU + 10) {
        text.push_str(&format!(
            " t-1 [001] .... 1.000000: thread_noise: task{i}:{i} start 1.000000000 duration 5 ns\n"
        ));
    }
    let r = OsnoiseReport::parse(&text).unwrap();
    assert_eq!(r.unknown_lines, 1);
    let c = &r.cpus[&1];
    assert_eq!(c.sources.len(), MAX_NAMES_PER_CPU + 1);
    assert_eq!(c.sources[&(Source::Thread, OTHER.to_string())].count, 10);
    assert!(!detect("# tracer: hwlat\n"));
}

proptest::proptest! {
    #[test]
    fn never_panics(text in "\\PC{0,300}") {
        let _ = OsnoiseReport::parse(&format!("# tracer: osnoise\n{text}"));
        let _ = detect(&text);
    }
}
