//! The osnoise tracer's trace imported as a noise run: the kernel documentation's example,
//! a trace with the noise events on, and damaged or one-sided traces.

use model::measure::MeasureRun;
use model::noise::{MAX_CULPRITS, NOISE_SCHEMA, PerSource, Source};

use crate::tests::{err, fixture, read};
use crate::{Format, detect};

#[test]
fn the_kernel_documentation_trace() {
    let text = fixture("kdoc_osnoise_tracer_trace_8cpu.txt");
    assert_eq!(detect(&text), Some(Format::OsnoiseTrace));
    let run = read("kdoc_osnoise_tracer_trace_8cpu.txt");
    assert_eq!(run.schema, NOISE_SCHEMA);
    assert_eq!(MeasureRun::from_json(&run.to_json()).unwrap(), run);
    assert_eq!(run.unjudgeable(), None);
    let info = run.import.as_ref().unwrap();
    assert_eq!(
        (info.format.as_str(), info.tool.as_str()),
        ("osnoise-trace", "osnoise tracer")
    );
    let noise = run.noise.as_ref().unwrap();
    assert_eq!(noise.counter, "osnoise-tracer");
    assert_eq!(noise.runtime_ns.get(), 1_000_000_000);
    assert_eq!(noise.cpus.len(), 8);
    let c7 = &noise.cpus[7];
    assert_eq!(
        (c7.noise_ns, c7.max_single_ns, c7.max_period_noise_ns),
        (7_816_000, 107_000, 7_816_000)
    );
    assert_eq!(
        c7.counts,
        Some(PerSource {
            hw: 8,
            nmi: 0,
            irq: 1016,
            softirq: 39,
            thread: 19
        })
    );
    assert_eq!(c7.interruptions, 8 + 1016 + 39 + 19);
    // 99.21840 % as the tracer printed.
    assert!((c7.available_pct().unwrap() - 99.218_40).abs() < 0.000_01);
    assert!(c7.culprits.is_empty() && c7.time_ns.is_none());
    assert!(
        noise
            .attribution_note
            .as_deref()
            .unwrap()
            .contains("events were off")
    );
    assert_eq!(run.elapsed_ns.get(), 1_106_000 + 1_000_000_000);
}

#[test]
fn noise_events_name_the_culprits() {
    let run = read("osnoise_tracer_events_hand.txt");
    let noise = run.noise.as_ref().unwrap();
    let c = &noise.cpus[0];
    assert_eq!(c.cpu, 8);
    // Three sample_threshold events: three interruptions above the threshold.
    assert_eq!(c.interruptions, 3);
    let names: Vec<(Source, &str, u64, u64)> = c
        .culprits
        .iter()
        .map(|k| (k.source, k.name.as_str(), k.count, k.total_ns))
        .collect();
    assert_eq!(
        names,
        vec![
            (Source::Irq, "irq 24 virtio0-input.0", 1, 7004),
            (Source::Hw, "unattributed", 1, 6100),
            (Source::Irq, "local_timer", 2, 4693),
            (Source::Softirq, "softirq NET_RX", 1, 4100),
            (Source::Thread, "migration/8 (pid 54)", 1, 3068),
        ]
    );
    let t = c.time_ns.unwrap();
    assert_eq!(
        (t.irq, t.softirq, t.thread, t.hw),
        (11_697, 4100, 3068, 6100)
    );
    assert_eq!(MeasureRun::from_json(&run.to_json()).unwrap(), run);
}

#[test]
fn culprits_past_the_limit_are_summed_as_other() {
    let mut text = String::from("# tracer: osnoise\n");
    for i in 0..50u64 {
        text.push_str(&format!(
            " osnoise/0-9 [000] d.h. 1.{i:06}: irq_noise: dev{i}:{} start 1.000000000 duration {} ns\n",
            i + 30,
            1000 + i
        ));
    }
    text.push_str(" <...>-9 [000] .... 2.000000: 1000000 60 99.99400 5 0 0 50 0 0\n");
    let run = crate::import("t.txt", &text, crate::tests::when()).unwrap();
    let c = &run.noise.as_ref().unwrap().cpus[0];
    assert_eq!(c.culprits.len(), MAX_CULPRITS - Source::ALL.len() + 1);
    assert_eq!(c.culprits[0].name, "irq 79 dev49");
    let other = c.culprits.last().unwrap();
    assert_eq!((other.name.as_str(), other.count), ("other", 50 - 27));
    assert!(MeasureRun::from_json(&run.to_json()).is_ok());
}

#[test]
fn damaged_and_one_sided_traces() {
    let text = fixture("kdoc_osnoise_tracer_trace_8cpu.txt");
    let e = err(&text.replace("[005]", "[99999999]"));
    assert!(
        e.starts_with("f.txt: line 16: CPU 99999999 is past the largest CPU"),
        "{e}"
    );
    let e = err(&text.replace("1000000       5675", "1000000   99999999"));
    assert!(
        e.contains("line 13: CPU 2: noise 99999999 us is more than"),
        "{e}"
    );
    // Only events, no summary line: nothing to measure the noise against.
    let events = fixture("osnoise_tracer_events_hand.txt");
    let only: String = events
        .lines()
        .filter(|l| !l.contains("99.99720"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(
        err(&only).contains("no per-period summary lines"),
        "{}",
        err(&only)
    );
    // A summary line with a count past 2^64, and Windows line ends.
    let e = err(&text.replace("   1006     16", "   1006 18446744073709551616"));
    assert!(e.contains("line 12: expected a whole number"), "{e}");
    let crlf = text.replace('\n', "\r\n");
    let noisy = format!("{text}garbage at the end\n");
    let run = crate::import("f.txt", &noisy, crate::tests::when()).unwrap();
    let notes = &run.import.as_ref().unwrap().notes;
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("skipped lines: 1 lines are not part of the osnoise trace")),
        "{notes:?}"
    );
    assert_eq!(
        crate::import("f.txt", &crlf, crate::tests::when())
            .unwrap()
            .noise
            .unwrap()
            .cpus
            .len(),
        8
    );
}
