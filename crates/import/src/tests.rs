//! Importer tests: real files (fixtures/imports), damaged copies of them, and arbitrary text.

use std::time::{Duration, SystemTime};

use model::measure::{MeasureRun, Policy};
use proptest::prelude::*;

use super::*;

pub(crate) fn fixture(name: &str) -> String {
    let path = format!(
        "{}/../../fixtures/imports/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Whether one of the run's import notes holds `needle`.
pub(crate) fn noted(run: &MeasureRun, needle: &str) -> bool {
    run.import
        .as_ref()
        .unwrap()
        .notes
        .iter()
        .any(|n| n.contains(needle))
}

/// The notes of lines the importer skipped.
pub(crate) fn skipped(run: &MeasureRun) -> Vec<&str> {
    let notes = &run.import.as_ref().unwrap().notes;
    notes
        .iter()
        .filter(|n| n.starts_with(crate::SKIPPED_NOTE))
        .map(String::as_str)
        .collect()
}

pub(crate) fn when() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

pub(crate) fn read(name: &str) -> MeasureRun {
    import(name, &fixture(name), when()).unwrap_or_else(|e| panic!("{e}"))
}

pub(crate) fn err(text: &str) -> String {
    import("f.txt", text, when()).unwrap_err().to_string()
}

/// (cpu, count, min_ns, max_ns) per CPU.
pub(crate) fn figures(run: &MeasureRun) -> Vec<(u32, u64, u64, u64)> {
    run.cpus
        .iter()
        .map(|c| (c.cpu, c.stats.count, c.raw.min_ns, c.raw.max_ns))
        .collect()
}

/// The invariants every run must keep: histogram and regions account for every sample.
pub(crate) fn consistent(run: &MeasureRun) {
    accounted(run);
    let back = MeasureRun::from_json(&run.to_json()).unwrap();
    assert_eq!(&back, run);
}

/// Histogram and regions account for every sample; the raw data survive JSON. (Derived
/// floats such as the standard deviation may come back one ULP off: serde_json is built
/// without `float_roundtrip`.)
pub(crate) fn accounted(run: &MeasureRun) {
    for c in &run.cpus {
        assert_eq!(c.histogram.count(), c.raw.count, "cpu {}", c.cpu);
        assert_eq!(c.regions.iter().map(|r| r.count).sum::<u64>(), c.raw.count);
        let s = &c.stats;
        if s.count > 0 {
            let (min, max) = (s.min_ns.unwrap(), s.max_ns.unwrap());
            let mean = s.mean_ns.unwrap();
            assert!(min as f64 <= mean && mean <= max as f64, "{s:?}");
            let not_given = run.import.as_ref().map_or(&[][..], |i| &i.not_given[..]);
            let percentiles = [s.p50_ns, s.p99_ns, s.p99_999_ns];
            if not_given.contains(&model::imported::Figure::Percentiles) {
                assert_eq!(percentiles, [None; 3], "{s:?}");
            }
            for p in percentiles {
                if not_given.contains(&model::imported::Figure::Percentiles) {
                    continue;
                }
                let p = p.unwrap();
                assert!(min <= p && p <= max, "{s:?}");
            }
        }
    }
    assert_eq!(
        run.all.raw.count,
        run.cpus.iter().map(|c| c.raw.count).sum::<u64>()
    );
    let back = MeasureRun::from_json(&run.to_json()).unwrap();
    for (a, b) in back.cpus.iter().zip(&run.cpus) {
        assert_eq!((&a.raw, &a.histogram), (&b.raw, &b.histogram));
    }
    assert_eq!(back.import, run.import);
}

#[test]
fn imx8mp_json_and_its_histfile_agree() {
    let json = read("analisi_imx8mp_baseline.json");
    let hist = read("analisi_imx8mp_baseline.hist");
    consistent(&json);
    consistent(&hist);
    let expected = vec![
        (0, 30_000, 5_000, 33_000),
        (1, 30_000, 5_000, 19_000),
        (2, 29_998, 5_000, 19_000),
        (3, 29_996, 5_000, 18_000),
    ];
    assert_eq!(figures(&json), expected);
    assert_eq!(figures(&hist), expected);
    for (a, b) in json.cpus.iter().zip(&hist.cpus) {
        assert_eq!(a.histogram, b.histogram);
    }
    assert_eq!(
        detect(&fixture("analisi_imx8mp_baseline.json")),
        Some(Format::CyclictestJson)
    );
    assert_eq!(
        detect(&fixture("analisi_imx8mp_baseline.hist")),
        Some(Format::CyclictestHist)
    );
}

#[test]
fn imx8mp_json_facts() {
    let run = read("analisi_imx8mp_baseline.json");
    assert_eq!(run.host.hostname, "sm2s-imx8mp");
    assert_eq!(run.host.kernel_release, "6.6.23-g7b249ebaa169");
    assert_eq!(run.host.arch, "aarch64");
    assert!(!run.host.preempt_rt);
    assert_eq!(run.started_at, "2026-01-12T11:52:32.000000Z");
    assert_eq!(run.elapsed_ns.get(), 30_000_000_000);
    assert_eq!((run.params.policy, run.params.priority), (Policy::Fifo, 99));
    assert_eq!(run.params.interval_ns.get(), 1_000_000);
    assert!(run.params.mlock);
    assert_eq!(
        run.params.duration_ns.map(|d| d.get()),
        Some(30_000_000_000)
    );
    let import = run.import.as_ref().unwrap();
    assert_eq!(import.tool, "cyclictest 2.60");
    assert_eq!(import.format, "cyclictest-json");
    assert_eq!(import.resolution_ns, 1000);
    assert!(
        import
            .command
            .as_deref()
            .unwrap()
            .starts_with("cyclictest -S -p 99")
    );
    // The histogram holds every sample at its whole microsecond: its sum is exact, and
    // the JSON's avg 8.64 us is its 8.6358 us rounded (issue #45).
    assert_eq!(run.cpus[0].raw.sum_ns, 259_075_000);
    assert!(run.cpus.iter().all(|c| c.histogram.above_range() == 0));
}

#[test]
fn json_overflows_are_counted_not_dropped() {
    let run = read("local_cyclictest_h200.json");
    consistent(&run);
    let cpu = &run.cpus[0];
    assert_eq!(cpu.raw.count, 2000);
    assert_eq!(cpu.histogram.above_range(), 82);
    assert_eq!(cpu.raw.max_ns, 8_888_000);
    assert_eq!(cpu.stats.p99_9_ns, Some(8_888_000));
    let notes = run.import.unwrap().notes.join("\n");
    assert!(
        notes.contains("82 samples were above the tool's histogram range (200 us)"),
        "{notes}"
    );
}

#[test]
fn stdout_histogram_matches_its_json() {
    let json = read("local_cyclictest_h200.json");
    let text = read("local_cyclictest_h200_stdout.txt");
    consistent(&text);
    assert_eq!(figures(&text), figures(&json));
    assert_eq!(text.cpus[0].histogram, json.cpus[0].histogram);
    assert_eq!(text.params.dma_latency_us, Some(0));
}

#[test]
fn histofall_column_and_short_footer_lines() {
    let hist = read("local_cyclictest_2t_H100.hist");
    let json = read("local_cyclictest_2t_H100.json");
    consistent(&hist);
    consistent(&json);
    assert_eq!(figures(&hist), figures(&json));
    assert_eq!(
        figures(&hist),
        vec![(0, 3000, 14_000, 3_382_000), (1, 3000, 14_000, 4_735_000)]
    );
    assert_eq!(hist.cpus[1].histogram.above_range(), 167);
}

#[test]
fn summary_lines() {
    let run = read("machinekit792_rpi2_3.18.9-rt5.txt");
    consistent(&run);
    assert_eq!(figures(&run), vec![(0, 10_000, 12_000, 66_000)]);
    let c = &run.cpus[0];
    assert_eq!(
        (c.tid, c.raw.last_ns, c.raw.sum_ns),
        (Some(27877), 13_000, 160_000_000)
    );
    assert_eq!(
        (c.stats.p50_ns, c.stats.p99_999_ns, c.stats.stddev_ns),
        (None, None, None),
        "summary lines give no percentiles and no stddev: none is shown"
    );
    assert_eq!(
        (run.all.stats.p99_9_ns, run.all.stats.stddev_ns),
        (None, None)
    );
    assert_eq!(c.stats.max_ns, Some(66_000));
    // The run reads back as it was written, the figures still absent.
    let back = MeasureRun::from_json(&run.to_json()).unwrap();
    assert_eq!(back, run);
    assert_eq!((run.params.policy, run.params.priority), (Policy::Fifo, 80));
    assert_eq!(run.params.interval_ns.get(), 10_000_000);
    assert_eq!(run.params.dma_latency_us, Some(0));
    assert_eq!(run.elapsed_ns.get(), 100_000_000_000);
    assert_eq!(run.import.unwrap().format, "cyclictest-summary");

    let q = read("local_cyclictest_summary_q.txt");
    assert_eq!(
        figures(&q),
        vec![(0, 2000, 13_000, 2_165_000), (1, 1013, 25_000, 2_947_000)]
    );
    let live = read("local_cyclictest_summary_live.txt");
    consistent(&live);
    assert_eq!(
        figures(&live),
        vec![(0, 1500, 13_000, 3_088_000), (1, 997, 25_000, 7_938_000)]
    );
    assert_eq!(live.cpus[1].tid, Some(22341));
}

#[test]
fn unknown_files_name_the_formats() {
    let e = err("hello\nworld\n");
    assert!(
        e.starts_with("f.txt: not a format rtlab import reads; it reads the output of cyclictest"),
        "{e}"
    );
    assert!(e.contains("`rtlab import --help`"), "{e}");
    assert!(e.len() < 300, "one short line: {e}");
    // An empty file says so.
    for empty in ["", "\n", "  \n\t\n"] {
        let e = err(empty);
        assert!(e.starts_with("f.txt: it is empty;"), "{e}");
    }
    assert!(err("{\"a\": 1}").contains("not a format"));
}

#[test]
fn damaged_json() {
    let text = fixture("analisi_imx8mp_baseline.json");
    let cut = &text[..text.len() / 2];
    assert!(err(cut).starts_with("f.txt: line "), "{}", err(cut));
    assert!(err(cut).contains("not valid JSON"));
    let e = err(&text.replace("\"cycles\": 30000,", "\"cycles\": 300,"));
    assert!(
        e.contains("thread \"0\": its histogram holds 30000 samples but `cycles` is 300"),
        "{e}"
    );
    assert!(e.starts_with("f.txt: line 19: "), "{e}");
    let e = err(&text.replace("\"cycles\": 29998,", "\"cycles\": \"many\","));
    assert!(
        e.contains("thread \"2\": expected a number `cycles`"),
        "{e}"
    );
    let e = err(&text.replace("\"5\": 4,", "\"five\": 4,"));
    assert!(e.contains("histogram entry \"five\""), "{e}");
    let e = err(&text.replace(
        "\"min\": 5,\n      \"max\": 33",
        "\"min\": 50,\n      \"max\": 33",
    ));
    assert!(e.contains("`min` 50 is above `max` 33"), "{e}");
}

#[test]
fn damaged_histograms() {
    let text = fixture("local_cyclictest_2t_H100.hist");
    let lines: Vec<&str> = text.lines().collect();
    let truncated = lines[..60].join("\n");
    assert_eq!(
        err(&truncated),
        "f.txt: line 61: expected a `# Total:` footer line (is the file truncated?)"
    );
    let wrong = text.replace("# Total: 000002835", "# Total: 000002836");
    let e = err(&wrong);
    assert!(
        e.contains("thread 0: the rows hold 2835 samples but `# Total:` says 2836"),
        "{e}"
    );
    assert!(e.starts_with("f.txt: line 102: "), "{e}");
    let garbage = text.replacen("000010 ", "0000x0 ", 1);
    assert!(
        err(&garbage).contains("line 12: expected a histogram row"),
        "{}",
        err(&garbage)
    );
    let skipped = text.replacen("000010 ", "000009 ", 1);
    assert!(
        err(&skipped).contains("line 12: expected bucket 10 with 3 counts"),
        "{}",
        err(&skipped)
    );
    let no_min: String = text
        .lines()
        .filter(|l| !l.starts_with("# Min"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(err(&no_min).contains("expected a `# Min Latencies:` footer line"));
}

#[test]
fn damaged_summary_lines() {
    let text = fixture("machinekit792_rpi2_3.18.9-rt5.txt");
    let e = err(&format!(
        "{text}T: 1 (27878) P:80 I:10000 C:  10000 Min:  12 Act:\n"
    ));
    assert_eq!(
        e,
        "f.txt: line 5: expected a cyclictest summary line `T: N (TID) P:.. I:.. C:.. Min:.. \
         Act:.. Avg:.. Max:..`"
    );
    let e = err(&text.replace("Avg:   16", "Avg:   99"));
    assert!(
        e.contains("line 4: thread 0: expected Min <= Avg <= Max, found 12 / 99 / 66"),
        "{e}"
    );
}

const TIMERLAT: &str = "kdoc_timerlat_hist_5cpu_deadline.txt";

#[test]
fn timerlat_hist_imports_the_thread_latency() {
    let run = read(TIMERLAT);
    accounted(&run);
    assert_eq!(detect(&fixture(TIMERLAT)), Some(Format::RtlaTimerlatHist));
    assert_eq!(
        figures(&run),
        vec![
            (0, 600_002, 1_000, 36_000),
            (1, 600_002, 1_000, 58_000),
            (2, 600_002, 1_000, 44_000),
            (3, 600_002, 1_000, 46_000),
            (4, 600_002, 1_000, 50_000),
        ]
    );
    // Thr-000's rows hold all 600002 samples at their whole microseconds: their sum is
    // exact, 5.342 us on average, which rtla's footer prints truncated as 5 (issue #45).
    assert_eq!(run.cpus[0].raw.sum_ns, 3_205_254_000);
    // Thr-000 rows: 35487 at 1 us, 122584 at 2 us, ... the median lies in the 6 us row.
    let p50 = run.cpus[0].stats.p50_ns.unwrap();
    assert!((6_000..7_000).contains(&p50), "{p50}");
    assert!(run.cpus.iter().all(|c| c.histogram.above_range() == 0));
    assert_eq!(run.elapsed_ns.get(), 600_000_000_000);
    assert_eq!(
        run.params.duration_ns.map(|d| d.get()),
        Some(600_000_000_000)
    );
    assert_eq!(
        run.params.interval_ns.get(),
        999_000,
        "600 s / 600002 samples"
    );
    // The IRQ columns are the run's timerlat section, as rtlab's engine writes it.
    assert_eq!(run.params.engine, model::measure::Engine::Timerlat);
    let timerlat = run.timerlat.as_ref().unwrap();
    assert_eq!(timerlat.irq.len(), 5);
    let irq1 = &timerlat.irq[1];
    assert_eq!(
        (irq1.cpu, irq1.raw.count, irq1.raw.min_ns, irq1.raw.max_ns),
        (1, 600_002, 0, 15_000)
    );
    assert!(timerlat.user.is_empty() && !timerlat.user_threads);
    let import = run.import.unwrap();
    assert_eq!(import.format, "rtla-timerlat-hist");
    assert_eq!(import.resolution_ns, 1000);
    let notes = import.notes.join("\n");
    assert!(notes.contains("thread latency (Thr-"), "{notes}");
}

#[test]
fn timerlat_overflow_goes_above_range() {
    let text = fixture(TIMERLAT)
        .replace("over:         0         0", "over:         0         4")
        .replace("count:   600002    600002", "count:   600002    600006")
        .replace("max:         16        36", "max:         16       900");
    let run = import("f.txt", &text, when()).unwrap();
    accounted(&run);
    let c = &run.cpus[0];
    assert_eq!((c.raw.count, c.histogram.above_range()), (600_006, 4));
    assert_eq!(c.raw.max_ns, 900_000);
    // 10 in a million above the 99.999th percentile: the 4 unknown samples are among them.
    assert!(c.stats.p99_999_ns.unwrap() < 900_000);
    let notes = run.import.unwrap().notes.join("\n");
    assert!(notes.contains("4 samples were above"), "{notes}");
}

#[test]
fn damaged_timerlat_hist() {
    let text = fixture(TIMERLAT);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        err(&lines[..40].join("\n")),
        "f.txt: line 41: expected the `over:` footer row (is the file truncated?)"
    );
    assert_eq!(
        err(&lines[..55].join("\n")),
        "f.txt: line 56: expected the `max:` footer row (is the file truncated?)"
    );
    assert_eq!(
        err(&text.replace("count:   600002    600002", "count:   600003    600002")),
        "f.txt: line 53: IRQ-000: the rows hold 600002 samples and `over:` 0, but `count:` \
         says 600003"
    );
    let e = err(&text.replacen("0        276489", "0        27x489", 1));
    assert!(
        e.starts_with("f.txt: line 5: expected a histogram row `INDEX` and 10 counts"),
        "{e}"
    );
    assert_eq!(
        err(&text.replacen("\n2          3282", "\n1          3282", 1)),
        "f.txt: line 7: expected an index above 1, found 1"
    );
    let e = err(&text.replace("max:         16        36", "max:         16"));
    assert_eq!(
        e,
        "f.txt: line 56: expected 10 numbers (or `-`) after `max:`, one per column"
    );
    let e = err(&text.replace("Thr-000", "Tread-000"));
    assert!(e.starts_with("f.txt: line 4: expected column names"), "{e}");
    let no_thread = "# RTLA timerlat histogram\nIndex   IRQ-000\n0  3\nover:  0\ncount: 3\nmin: 0\n\
                     avg: 0\nmax: 0\n";
    assert!(
        err(no_thread).starts_with("f.txt: line 2: expected `Thr-NNN` columns"),
        "{}",
        err(no_thread)
    );
    let e = err(&text.replace("# Duration:   0 00:10:00", "# Duration:   ten minutes"));
    assert!(e.starts_with("f.txt: line 3: expected a duration"), "{e}");
}

proptest! {
    #[test]
    fn never_panics_on_arbitrary_text(text in "\\PC{0,200}") {
        let _ = import("x", &text, when());
    }

    #[test]
    fn never_panics_on_mangled_fixtures(
        which in 0usize..10, at in 0usize..100_000, len in 0usize..40, junk in "[0-9 #:{}\",\nT().-]{0,12}",
    ) {
        let name = ["analisi_imx8mp_baseline.json", "local_cyclictest_2t_H100.hist",
                    "machinekit792_rpi2_3.18.9-rt5.txt", "local_cyclictest_h200_stdout.txt",
                    TIMERLAT, "local_oslat_2cpu.txt", "local_oslat_2cpu.json",
                    "local_oslat_z_fifo_bias.txt", "xzpeter_oslat_v0.1.0_vm_8cpu_1h.txt",
                    "kdoc_osnoise_hist_9cpu.txt"][which];
        let text = fixture(name);
        let at = at % (text.len() + 1);
        let end = (at + len).min(text.len());
        if text.is_char_boundary(at) && text.is_char_boundary(end) {
            let mangled = format!("{}{junk}{}", &text[..at], &text[end..]);
            if let Ok(run) = import("x", &mangled, when()) {
                for c in &run.cpus {
                    prop_assert_eq!(c.histogram.count(), c.raw.count);
                }
            }
        }
    }
}

/// Issue 13: counts whose sum passes 2^64 are an error naming the line, never a silent
/// "1 CPU, 0 samples" (each addend fits in 64 bits; only the sum overflows).
#[test]
fn counts_adding_up_past_64_bits_are_refused() {
    let big = u64::MAX / 2 + 1;
    let hist = format!(
        "# Histogram\n000000 {big}\n000001 {big}\n# Total: 0\n# Min Latencies: 00001\n\
         # Avg Latencies: 00001\n# Max Latencies: 00001\n# Histogram Overflows: 00000\n"
    );
    let e = err(&hist);
    assert!(e.contains("line 4") && e.contains("2^64"), "{e}");
    let over = format!(
        "# Histogram\n000000 1\n# Total: 1\n# Min Latencies: 00000\n# Avg Latencies: 00000\n\
         # Max Latencies: 00000\n# Histogram Overflows: {}\n",
        u64::MAX
    );
    let e = err(&over);
    assert!(e.contains("2^64"), "{e}");
    let rtla = format!(
        "# RTLA timerlat histogram\n# Time unit is microseconds (us)\nIndex IRQ-000 Thr-000\n\
         1 1 {big}\n2 1 {big}\nover: 0 0\ncount: 2 0\nmin: 1 1\navg: 1 1\nmax: 2 2\n"
    );
    let e = err(&rtla);
    assert!(e.contains("Thr-000") && e.contains("2^64"), "{e}");
    let json = format!(
        "{{\"file_version\": 1, \"num_threads\": 1, \"thread\": {{\"0\": {{\"histogram\": \
         {{\"0\": {big}, \"1\": {big}}}, \"cycles\": 5, \"min\": 0, \"avg\": 0, \"max\": 1}}}}}}"
    );
    let e = err(&json);
    assert!(e.contains("2^64"), "{e}");
}

/// Issue 13: a cyclictest JSON dated with non-ASCII text is read (the date is not), never a
/// panic on a character boundary.
#[test]
fn a_start_time_in_any_script_is_not_a_crash() {
    let original = fixture("local_cyclictest_2t_H100.json");
    let at = original.find("\"start_time\": \"").unwrap() + "\"start_time\": \"".len();
    let end = at + original[at..].find('"').unwrap();
    for start in [
        "Mon, 12 Jan 2026 12:52:32 +é10",
        "月, 12 Jan 2026 ١٢:52:32 +0100",
        "Mon, 1 Jan 2026 1:2:3 aé1",
    ] {
        let text = format!("{}{start}{}", &original[..at], &original[end..]);
        let _ = import("f.json", &text, when());
    }
}

/// Found by fuzzing (target import_cyclictest_json): a file without a start time whose cycle
/// count and interval make the run longer than the years since 1970 was dated before the
/// epoch, and writing that date panicked (`humantime`); a start late on 9999-12-31 with a
/// negative zone, or a long run from one, ends past what RFC 3339 writes. Both are refused.
#[test]
fn a_run_dated_outside_1970_to_9999_is_refused() {
    let thread = r#""thread": {"0": {"histogram": {"1": 1}, "cycles": 1, "min": 1, "max": 1, "avg": 1.0, "tid": 1, "prio": 99, "interval": 1000}}"#;
    let huge = thread.replace(r#""cycles": 1"#, r#""cycles": 18446744073709551615"#);
    for text in [
        format!(r#"{{"file_version": 1, "num_threads": 1, {huge}}}"#),
        format!(
            r#"{{"file_version": 1, "num_threads": 1, "start_time": "Fri, 31 Dec 9999 23:59:59 -2359", {thread}}}"#
        ),
    ] {
        let e = err(&text);
        assert!(e.contains("outside the years 1970 to 9999"), "{e}");
    }
    let fine = format!(
        r#"{{"file_version": 1, "num_threads": 1, "start_time": "Fri, 31 Dec 9999 23:00:00 +0000", {thread}}}"#
    );
    import("f.json", &fine, when()).unwrap_or_else(|e| panic!("{e}"));
}

/// Found by fuzzing (target import_cyclictest_summary): `T:4000000000 (1) ...` made CPU
/// 4000000000, beyond `MAX_CPU`, so the imported run wrote a result file that no rtlab reads
/// back. Every importer now refuses a CPU (or thread standing for one) beyond it, naming the
/// line.
#[test]
fn cpus_beyond_max_cpu_are_refused_by_every_importer() {
    let summary = "T:8192 (1) P:80 I:1000 C: 10 Min: 1 Act: 2 Avg: 2 Max: 3\n";
    assert!(
        err(summary).contains("line 1: thread 8192"),
        "{}",
        err(summary)
    );
    let ok = "T:8191 (1) P:80 I:1000 C: 10 Min: 1 Act: 2 Avg: 2 Max: 3\n";
    assert_eq!(
        figures(&import("f", ok, when()).unwrap()),
        vec![(8191, 10, 1000, 3000)]
    );
    let json = r#"{"file_version": 1, "num_threads": 1, "thread": {"4000000000": {"histogram": {"1": 1}, "cycles": 1, "min": 1, "max": 1, "avg": 1.0, "tid": 1, "prio": 99, "interval": 1000}}}"#;
    assert!(
        err(json).contains("thread number (0 to 8191)"),
        "{}",
        err(json)
    );
    let oslat = "Core:\t 0 9000\nCPU Freq:\t 2000 2000 (Mhz)\n001 (us):\t 1 1\nMinimum:\t 1 1 (us)\nAverage:\t 1.000 1.000 (us)\nMaximum:\t 1 1 (us)\nMax-Min:\t 0 0 (us)\nDuration:\t 1.000 1.000 (sec)\n";
    let e = import_as(Format::OslatText, "f", oslat, when())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("line 1: expected one CPU number (0 to 8191)"),
        "{e}"
    );
}

/// Found by fuzzing (target import_oslat): per-CPU counts that each fit in 64 bits but add up
/// past 2^64 were imported, and the result written could not be read back (`rtlab show`
/// refused it). An imported run must pass the checks a result file must.
#[test]
fn counts_that_add_up_past_2_pow_64_are_refused() {
    let text = "    Version: v0.1.0\n\n    core_i:    2 3\n    cpu_mhz:    2197 2197\n    \
                001 (us):    9306999999998541411 9306999999998541411\n    maxlat:    1 1 (us)\n    \
                runtime:    3600 3600 (s)\n";
    let e = import_as(Format::OslatText, "f", text, when())
        .unwrap_err()
        .to_string();
    assert!(e.contains("sample counts add up to more than 2^64"), "{e}");
}
