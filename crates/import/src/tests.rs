//! Importer tests: real files (fixtures/imports), damaged copies of them, and arbitrary text.

use std::time::{Duration, SystemTime};

use model::measure::{MeasureRun, Policy};
use proptest::prelude::*;

use super::*;

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/../../fixtures/imports/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn when() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

fn read(name: &str) -> MeasureRun {
    import(name, &fixture(name), when()).unwrap_or_else(|e| panic!("{e}"))
}

fn err(text: &str) -> String {
    import("f.txt", text, when()).unwrap_err().to_string()
}

/// (cpu, count, min_ns, max_ns) per CPU.
fn figures(run: &MeasureRun) -> Vec<(u32, u64, u64, u64)> {
    run.cpus
        .iter()
        .map(|c| (c.cpu, c.stats.count, c.raw.min_ns, c.raw.max_ns))
        .collect()
}

/// The invariants every run must keep: histogram and regions account for every sample.
fn consistent(run: &MeasureRun) {
    for c in &run.cpus {
        assert_eq!(c.histogram.count(), c.raw.count, "cpu {}", c.cpu);
        assert_eq!(c.regions.iter().map(|r| r.count).sum::<u64>(), c.raw.count);
        let s = &c.stats;
        if s.count > 0 {
            let (min, max) = (s.min_ns.unwrap(), s.max_ns.unwrap());
            let mean = s.mean_ns.unwrap();
            assert!(min as f64 <= mean && mean <= max as f64, "{s:?}");
            for p in [s.p50_ns, s.p99_ns, s.p99_999_ns] {
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
    assert_eq!(&back, run);
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
    // avg 8.64 us over 30000 cycles.
    assert_eq!(run.cpus[0].raw.sum_ns, 259_200_000);
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
        c.stats.p50_ns,
        Some(66_000),
        "percentiles are unknown: read as the maximum"
    );
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
        e.starts_with("f.txt: not a format rtlab import reads; it reads cyclictest --json"),
        "{e}"
    );
    assert!(err("").contains("not a format"));
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

proptest! {
    #[test]
    fn never_panics_on_arbitrary_text(text in "\\PC{0,200}") {
        let _ = import("x", &text, when());
    }

    #[test]
    fn never_panics_on_mangled_fixtures(
        which in 0usize..4, at in 0usize..100_000, len in 0usize..40, junk in "[0-9 #:{}\",\nT().-]{0,12}",
    ) {
        let name = ["analisi_imx8mp_baseline.json", "local_cyclictest_2t_H100.hist",
                    "machinekit792_rpi2_3.18.9-rt5.txt", "local_cyclictest_h200_stdout.txt"][which];
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
