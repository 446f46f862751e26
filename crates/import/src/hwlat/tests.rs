//! hwlat import tests: the kernel documentation's hwlat trace, hwlatdetect's layouts written
//! from its source, and damaged copies.

use model::hwlat::{HwlatEngine, HwlatRun};

use super::{HwlatFormat, detect_hwlat, import_hwlat};
use crate::tests::{fixture, when};

fn read(name: &str) -> HwlatRun {
    let text = fixture(name);
    import_hwlat(name, &text, when()).unwrap_or_else(|e| panic!("{e}"))
}

fn err(text: &str) -> String {
    import_hwlat("f.txt", text, when()).unwrap_err().to_string()
}

fn noted(run: &HwlatRun, needle: &str) -> bool {
    run.import
        .as_ref()
        .unwrap()
        .notes
        .iter()
        .any(|n| n.contains(needle))
}

/// The document survives JSON and its bounds.
fn round_trip(run: &HwlatRun) {
    assert_eq!(&HwlatRun::from_json(&run.to_json()).unwrap(), run);
}

#[test]
fn the_hwlat_tracer_trace_of_the_kernel_documentation() {
    let text = fixture("kdoc_hwlat_tracer_trace.txt");
    assert_eq!(detect_hwlat(&text), Some(HwlatFormat::HwlatTrace));
    let run = read("kdoc_hwlat_tracer_trace.txt");
    round_trip(&run);
    assert_eq!(run.engine, HwlatEngine::Imported);
    assert_eq!(run.import.as_ref().unwrap().format, "hwlat-trace");
    assert_eq!(run.samples.len(), 12);
    let s = &run.samples[9];
    assert_eq!(
        (s.seq, s.cpu, s.inner_ns, s.outer_ns),
        (10, 1, 9_000, 11_000)
    );
    assert_eq!((s.nmi_total_ns, s.nmi_count), (Some(7_000), Some(1)));
    assert_eq!(s.ts_ns, Some(863_938_932_000));
    assert_eq!(s.wall.as_deref(), Some("1581527668.970010500"));
    assert_eq!(run.max_ns(), 18_000);
    // CPU 1: samples #1, #4, #9, #10.
    let c1 = run.cpus.iter().find(|c| c.cpu == 1).unwrap();
    assert_eq!(
        (c1.samples, c1.max_inner_ns, c1.max_outer_ns),
        (4, 11_000, 17_000)
    );
    // The smallest sample is 11 us (#9: 9/11): the tracer's default 10 us fits.
    assert_eq!(run.params.threshold_ns.get(), 10_000);
    assert!(noted(&run, "default 10 us is assumed"));
    let low = text.replace("9/11 ", "9/8  ");
    let run = import_hwlat("f.txt", &low, when()).unwrap();
    assert_eq!(run.params.threshold_ns.get(), 9_000);
    assert_eq!(run.elapsed_ns.get(), 886_114_702_000 - 678_473_449_000);
    assert!(run.smi.not_available.is_some());
}

#[test]
fn hwlatdetect_2_10_report_with_smis() {
    let run = read("hwlatdetect_2.10_report_hand.txt");
    round_trip(&run);
    assert_eq!(run.import.as_ref().unwrap().format, "hwlatdetect");
    assert_eq!(run.params.cpus.to_string(), "2-7");
    assert_eq!(run.params.threshold_ns.get(), 5_000);
    assert_eq!(run.params.window_ns.unwrap().get(), 1_000_000_000);
    assert_eq!(run.params.width_ns.unwrap().get(), 500_000_000);
    assert_eq!(run.params.duration_ns.unwrap().get(), 600_000_000_000);
    assert_eq!(run.elapsed_ns.get(), 600_000_000_000);
    assert_eq!(run.samples.len(), 4);
    let s = &run.samples[0];
    assert_eq!(
        (s.cpu, s.inner_ns, s.outer_ns, s.count),
        (3, 11_000, 12_000, Some(6))
    );
    assert_eq!(s.wall.as_deref(), Some("1581527483.343962693"));
    assert_eq!(run.max_ns(), 17_000);
    assert_eq!(run.cpus.len(), 6, "every CPU of the list, sampled or not");
    // 2 SMIs on CPU 3, 1 on CPU 5, none on the other CPUs of the list: the report's own
    // total of 3, not the largest per CPU (issue #45).
    assert_eq!(run.smi.during(), Some(3));
    assert_eq!(run.smi.cpus.iter().map(|c| c.after).sum::<u64>(), 3);
    assert!(noted(&run, "counted 3 SMIs"));
    assert!(noted(&run, "MTBF: 62.333 seconds"));
    assert!(run.warnings.is_empty());
}

#[test]
fn older_layouts_without_cpus() {
    let run = read("hwlatdetect_1.0_report_hand.txt");
    round_trip(&run);
    assert_eq!(run.samples.len(), 2);
    assert_eq!(run.params.threshold_ns.get(), 10_000);
    assert!(run.cpus.is_empty());
    assert_eq!(run.warnings[0].code, "cpu-unknown");
    assert!(run.smi.not_available.is_some());

    let text = fixture("hwlatdetect_2.6_report_file_hand.txt");
    assert_eq!(detect_hwlat(&text), Some(HwlatFormat::HwlatdetectSamples));
    let run = read("hwlatdetect_2.6_report_file_hand.txt");
    assert_eq!(run.import.as_ref().unwrap().format, "hwlatdetect-samples");
    assert_eq!(run.params.cpus.to_string(), "1,4-5");
    assert!(noted(&run, "threshold is not given"));
    // 1581527519.678961629 - 1581527483.343962693 s.
    assert_eq!(run.elapsed_ns.get(), 36_334_998_936);

    let run = read("hwlatdetect_kmodule_samples_hand.txt");
    assert_eq!(run.samples.len(), 2);
    assert_eq!(
        (run.samples[1].inner_ns, run.samples[1].outer_ns),
        (16_000, 9_000)
    );
    assert_eq!(
        run.samples[0].wall.as_deref(),
        Some("0001581527483.0343962693")
    );
}

#[test]
fn quiet_output_and_formatted_times() {
    let text = "1 SMIs occured on cpu 0\n\
                ts: 2026-05-08 12:00:01.123456789, delta:nan, inner:20, outer:3, cpu:0, count:2\n";
    assert_eq!(detect_hwlat(text), Some(HwlatFormat::HwlatdetectSamples));
    let run = import_hwlat("q.txt", text, when()).unwrap();
    assert_eq!(
        run.samples[0].wall.as_deref(),
        Some("2026-05-08 12:00:01.123456789")
    );
    assert_eq!(run.smi.during(), Some(1));
    // A report that names no CPU list and found nothing still says it counted no SMI
    // (issue #45: it was dropped).
    let text = "hwlatdetect:  test duration 30 seconds\n   detector: tracer\n   parameters:\n\
                Latency threshold: 10us\nSample window:     1000000us\nSample width:      500000us\n\
                Non-sampling period:  500000us\nOutput File:       None\n\nStarting test\n\
                test finished\nMax Latency: Below threshold\nSamples recorded: 0\n\
                Samples exceeding threshold: 0\nSMIs during run: 0\n";
    let run = import_hwlat("z.txt", text, when()).unwrap();
    assert_eq!(run.smi.during(), Some(0));
    assert_eq!(run.smi.not_available, None);
}

#[test]
fn hostile_reports_are_refused_naming_the_line() {
    let text = fixture("hwlatdetect_2.10_report_hand.txt");
    let e = err(&text.replace("cpu:4", "cpu:99999999"));
    assert!(
        e.starts_with("f.txt: line 21: CPU 99999999 is past the largest CPU"),
        "{e}"
    );
    let e = err(&text.replace(
        "inner:16, outer:9",
        "inner:99999999999999999999999, outer:9",
    ));
    assert!(
        e.contains("line 21: expected a whole number for `inner`"),
        "{e}"
    );
    let e = err(&text.replace("inner:16, outer:9", "inner:18446744073709551615, outer:9"));
    assert!(
        e.contains("line 21: inner 18446744073709551615 us is past 2^64 ns"),
        "{e}"
    );
    let e = err(&text.replace("inner:16, outer:9", "inner:-16, outer:9"));
    assert!(e.contains("line 21"), "{e}");
    let e = err(&text.replace("Latency threshold: 5us", "Latency threshold: 5\u{0}us"));
    assert!(
        e.contains("line 5: expected `Latency threshold: Nus`"),
        "{e}"
    );
    let e = err(&text.replace("test duration 600 seconds", "test duration lots seconds"));
    assert!(
        e.contains("line 1: expected `test duration N seconds`"),
        "{e}"
    );
    // Windows line ends read the same.
    let crlf = text.replace('\n', "\r\n");
    assert_eq!(
        import_hwlat("f.txt", &crlf, when()).unwrap().samples.len(),
        4
    );
    // A cut report says what it misses.
    let cut: String = text.lines().take(21).map(|l| format!("{l}\n")).collect();
    let run = import_hwlat("f.txt", &cut, when()).unwrap();
    assert!(noted(
        &run,
        "recorded 4 samples, the file lists 2 (is it cut?)"
    ));
    // 10 MB of garbage is no hwlat output.
    assert!(err(&"garbage \u{7f}\n".repeat(1_100_000)).contains("not a hwlat output"));
    let trace = fixture("kdoc_hwlat_tracer_trace.txt").replace("[004]", "[x04]");
    assert!(
        err(&trace).starts_with("f.txt: line 13: "),
        "{}",
        err(&trace)
    );
}

proptest::proptest! {
    #[test]
    fn never_panics(text in "\\PC{0,300}") {
        let _ = import_hwlat("f.txt", &format!("hwlatdetect:  test duration 1 seconds\n{text}"), when());
        let _ = import_hwlat("f.txt", &format!("ts: 1.0, inner:1, outer:2\n{text}"), when());
        let _ = import_hwlat("f.txt", &format!("# tracer: hwlat\n{text}"), when());
    }
}
