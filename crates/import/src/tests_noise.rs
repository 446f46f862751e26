//! OS-noise importer tests: oslat's text and JSON reports made on the development VM, the
//! standalone v0.1 report from the corpus, the rtla osnoise histogram of the kernel's commit
//! message, and damaged copies of them.

use model::imported::Quantity;
use model::measure::{MeasureRun, Policy};

use crate::tests::{accounted, consistent, err, figures, fixture, read, when};
use crate::{Format, detect, import};

const US: u64 = 1000;

/// Samples stored at exactly `at_ns`'s bucket.
fn at(h: &model::Histogram, at_ns: u64) -> u64 {
    h.buckets()
        .filter(|&(lo, w, _)| lo <= at_ns && at_ns < lo + w)
        .map(|(_, _, c)| c)
        .sum()
}

fn info(run: &MeasureRun) -> &model::imported::ImportInfo {
    run.import.as_ref().expect("import record")
}

fn noted(run: &MeasureRun, needle: &str) -> bool {
    info(run).notes.iter().any(|n| n.contains(needle))
}

/// Samples per CPU in the histogram's exact region, and above its range.
fn known_unknown(run: &MeasureRun) -> Vec<(u64, u64)> {
    run.cpus
        .iter()
        .map(|c| {
            (
                c.raw.count - c.histogram.above_range(),
                c.histogram.above_range(),
            )
        })
        .collect()
}

#[test]
fn oslat_text_and_json_of_one_run_agree() {
    let text = read("local_oslat_2cpu.txt");
    let json = read("local_oslat_2cpu.json");
    for run in [&text, &json] {
        consistent(run);
        assert_eq!(info(run).quantity, Quantity::OsNoise);
        assert_eq!(info(run).tool, "oslat 2.40");
        // Sum of the 32 rows per CPU; min (1 us, rounded up by this oslat) stored 1 us
        // lower, max kept as oslat's own (4033 / 297 us): the worst case.
        assert_eq!(
            figures(run),
            vec![
                (0, 126_849_768, 0, 4033 * US),
                (1, 127_357_943, 0, 297 * US)
            ]
        );
        // Both maxima are beyond the last row, so its 132 and 200 samples are unknown.
        assert_eq!(
            known_unknown(run),
            vec![(126_849_636, 132), (127_357_743, 200)]
        );
        assert!(noted(run, "rounded up to the next whole microsecond"));
        assert!(noted(run, "332 samples were in oslat's last row"));
        assert!(noted(run, "not wake-up latency"));
        assert_eq!(run.params.policy, Policy::Other);
        // Loop period: 2.997 s over 127.4 M samples is 23 ns.
        assert_eq!(run.params.interval_ns.0, 2_997_000_000 / 127_357_943);
    }
    assert_eq!(info(&text).format, "oslat-text");
    assert_eq!(info(&json).format, "oslat-json");
    // Row 014 us of CPU 0 (107 samples) lies in [13, 14) us: stored at 13 us in both.
    for run in [&text, &json] {
        let h = &run.cpus[0].histogram;
        assert_eq!(at(h, 13 * US), 107);
        assert_eq!(at(h, 0), 126_847_516);
    }
    // The JSON knows its host and time; the text report does not.
    assert_eq!(json.host.hostname, "vm");
    assert_eq!(json.host.kernel_release, "6.18.44-fc-v595");
    // oslat's Duration, ending at the JSON's end_time (its start_time includes the 1-s
    // pre-heat).
    assert_eq!(json.ended_at, "2026-11-23T07:34:20.000000Z");
    assert_eq!(json.started_at, "2026-11-23T07:34:17.003000Z");
    assert_eq!(text.elapsed_ns.0, 2_997_000_000);
    assert_eq!(text.host.hostname, "unknown");
    assert!(noted(&text, "the host is unknown"));
    // The mean is rtlab's (lower edges), below oslat's upper-edge average of 1.000461 us.
    let mean = json.cpus[0].stats.mean_ns.unwrap();
    assert!(mean < 100.0, "{mean}");
}

#[test]
fn oslat_zero_omitted_rows_fifo_and_bias() {
    for name in [
        "local_oslat_z_fifo_bias.txt",
        "local_oslat_z_fifo_bias.json",
    ] {
        let run = read(name);
        consistent(&run);
        assert_eq!(run.params.policy, Policy::Fifo, "{name}");
        assert_eq!(run.params.priority, 1);
        // Rows 002..033 us with gaps ('...' / missing keys): 77,328,031 + 923 in the tail.
        assert_eq!(figures(&run), vec![(1, 77_328_954, 0, 50_924 * US)]);
        // With --bias 1 us the lowest row (002) also holds the gaps under the bias: it is
        // stored at the minimum (0), not at 1 us.
        assert_eq!(at(&run.cpus[0].histogram, 0), 77_328_031);
        assert_eq!(known_unknown(&run), vec![(77_328_886, 68)]);
        assert!(noted(&run, "rounded up"), "{name}");
    }
    assert!(noted(&read("local_oslat_z_fifo_bias.txt"), "--bias"));
    assert!(noted(&read("local_oslat_z_fifo_bias.json"), "--bias"));
}

#[test]
fn oslat_v0_1_report_from_the_corpus() {
    let run = read("xzpeter_oslat_v0.1.0_vm_8cpu_1h.txt");
    consistent(&run);
    assert_eq!(info(&run).tool, "oslat 0.1.0");
    let f = figures(&run);
    assert_eq!(f.len(), 8);
    assert_eq!(
        f.iter().map(|c| c.0).collect::<Vec<_>>(),
        (2..=9).collect::<Vec<_>>()
    );
    // CPU 2: 93,068,541,026 + 51 + 2 + 4 + 40 + 1 samples; maxlat 6 us (rounded up, kept as
    // the worst case): the samples lie inside row 006, so nothing is unknown.
    assert_eq!(f[0], (2, 93_068_541_124, 0, 6 * US));
    // CPU 5: maxlat 5 us, its highest row is 005.
    assert_eq!(f[3], (5, 93_068_541_411 + 51 + 2 + 3 + 41, 0, 5 * US));
    assert!(known_unknown(&run).iter().all(|&(_, u)| u == 0));
    assert_eq!(run.elapsed_ns.0, 3_600_740_000_000);
    assert!(noted(
        &run,
        "counter frequency as oslat measured it: CPU 2 2197 MHz"
    ));
}

#[test]
fn osnoise_hist_from_the_kernel_commit() {
    let run = read("kdoc_osnoise_hist_9cpu.txt");
    accounted(&run);
    assert_eq!(info(&run).quantity, Quantity::OsNoise);
    assert_eq!(info(&run).format, "rtla-osnoise-hist");
    let f = figures(&run);
    assert_eq!(f.len(), 9);
    assert_eq!(f[0], (0, 543, 0, 30 * US));
    assert_eq!(f[6], (6, 609, 0, 50 * US));
    // Rows are 10-us buckets at their lower bound: CPU 6's 126 noise events at 10 us.
    assert_eq!(at(&run.cpus[6].histogram, 10 * US), 126);
    assert!(noted(&run, "each sample is one noise occurrence"));
    assert_eq!(info(&run).resolution_ns, 10 * US, "rows step by 10 us");
    assert_eq!(run.elapsed_ns.0, 60_000_000_000);
    assert_eq!(
        detect(&fixture("kdoc_osnoise_hist_9cpu.txt")),
        Some(Format::RtlaOsnoiseHist)
    );
}

#[test]
fn oslat_json_is_never_read_as_cyclictest() {
    assert_eq!(
        detect(&fixture("local_oslat_2cpu.json")),
        Some(Format::OslatJson)
    );
    assert_eq!(
        detect(&fixture("local_oslat_2cpu.txt")),
        Some(Format::OslatText)
    );
    assert_eq!(
        detect(&fixture("xzpeter_oslat_v0.1.0_vm_8cpu_1h.txt")),
        Some(Format::OslatText)
    );
    assert_eq!(
        detect(&fixture("local_cyclictest_h200.json")),
        Some(Format::CyclictestJson)
    );
}

#[test]
fn damaged_oslat_reports_name_the_line() {
    let text = fixture("local_oslat_2cpu.txt");
    // Line 18: `    003 (us):	 374 347`.
    let e = err(&text.replace("003 (us):\t 374 347", "003 (us):\t 374"));
    assert_eq!(
        e,
        "f.txt: line 18: expected 2 counts after `003 (us):`, one per thread, found 1"
    );
    let e = err(&text.replace("003 (us):\t 374 347", "003 (us):\t 374 x"));
    assert_eq!(
        e,
        "f.txt: line 18: expected sample counts after `003 (us):`"
    );
    let e = err(&text.replace("     Maximum:\t 4033 297 (us)\n", ""));
    assert!(
        e.contains("expected a `Maximum:` row (is the file truncated?)"),
        "{e}"
    );
    let e = err(&text.replace("005 (us)", "002 (us)"));
    assert_eq!(e, "f.txt: line 20: expected a row above 002 (us)");
    let cut: String = text.lines().take(15).map(|l| format!("{l}\n")).collect();
    assert!(
        err(&cut).contains("expected `NNN (us):` bucket rows"),
        "{}",
        err(&cut)
    );

    let json = fixture("local_oslat_2cpu.json");
    let e = err(&json.replace("\"max\": 4033", "\"max\": \"big\""));
    assert!(e.starts_with("f.txt: line "), "{e}");
    assert!(e.contains("thread \"0\": expected a number `max`"), "{e}");
    let e = err(&json.replace("\"2\": 764", "\"two\": 764"));
    assert!(e.contains("histogram entry \"two\""), "{e}");
    let e = err(&json[..json.len() / 2]);
    assert!(e.contains("not valid JSON"), "{e}");
}

#[test]
fn damaged_osnoise_hist() {
    let text = fixture("kdoc_osnoise_hist_9cpu.txt");
    let e = err(&text.replace("count:      543", "count:      544"));
    assert!(
        e.contains("CPU-000: the rows hold 543 samples and `over:` 0, but `count:` says 544"),
        "{e}"
    );
    let e = err(&text.replace("CPU-004", "CPU-0x4"));
    assert!(e.starts_with("f.txt: line 4: "), "{e}");
    let lines: Vec<&str> = text.lines().take(9).collect();
    assert!(err(&lines.join("\n")).contains("expected the `over:` footer row"));
    let _ = import("f.txt", &text, when()).unwrap();
}

#[test]
fn rtla_timerlat_top_is_refused_and_a_cut_osnoise_top_names_what_is_missing() {
    let top = "                                     Timer Latency\n\
               0 00:00:10   |          IRQ Timer Latency (us)        |         Thread Timer Latency (us)\n";
    assert_eq!(
        err(top),
        "f.txt: this is `rtla timerlat top` output: it holds per-CPU totals, not a distribution, \
         so there is nothing to store as a run; run `rtla timerlat hist` and import its output"
    );
    // The first lines of corpus/rtla/kdoc_osnoise_top_4cpu.txt: `rtla osnoise top` output is
    // read as a noise run now, and without its rows it is cut.
    let top = "                                        Operating System Noise\n\
               duration:   0 00:01:00 | time is in us\n\
               CPU Period       Runtime        Noise  % CPU Aval   Max Noise   Max Single\n";
    assert_eq!(
        err(top),
        "f.txt: line 4: expected a row per CPU after the column line (is the file truncated?)"
    );
}
