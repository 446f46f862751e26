//! One fixture per released layout (fixtures/imports/releases, written from the rt-tests
//! sources its README cites): each reads, with the figures its layout gives, and a line
//! rtlab does not know is skipped with a note rather than refused.

use model::measure::{MeasureRun, Policy};

use crate::tests::{consistent, figures, fixture, noted, read, skipped, when};
use crate::{Format, detect, import, import_bytes};

const US: u64 = 1000;

fn release(name: &str) -> MeasureRun {
    read(&format!("releases/{name}"))
}

/// Thread 0: 90 samples in the rows (3..15 us) and 2 above the 20-us range, maximum 25 us;
/// thread 1: 90 samples, 4..11 us. Every layout from 0.56 on says so.
const FULL: [(u32, u64, u64, u64); 2] = [(0, 92, 3 * US, 25 * US), (1, 90, 4 * US, 11 * US)];

#[test]
fn cyclictest_histograms_of_every_release_layout() {
    // 0.28-0.55: no overflow count, no per-thread minimum, average or maximum.
    let old = release("cyclictest_0.28_hist.txt");
    consistent(&old);
    assert_eq!(
        figures(&old),
        vec![(0, 90, 3 * US, 15 * US), (1, 90, 4 * US, 11 * US)]
    );
    assert!(noted(&old, "before 0.56"));
    assert!(noted(&old, "no maximum per thread"));
    assert!(noted(&old, "no minimum or average"));
    // The mean is the histogram's: 436 us over 90 samples.
    assert_eq!(old.cpus[0].raw.sum_ns, 436 * US);

    for name in [
        "cyclictest_0.56_hist.txt",
        "cyclictest_0.73_hist_H.txt",
        "cyclictest_1.3_hist_smi.txt",
        "cyclictest_2.7_hist.txt",
    ] {
        let run = release(name);
        consistent(&run);
        assert_eq!(figures(&run), FULL.to_vec(), "{name}");
        assert_eq!(run.cpus[0].histogram.above_range(), 2, "{name}");
        assert_eq!(run.import.as_ref().unwrap().format, "cyclictest-hist");
        assert!(skipped(&run).is_empty(), "{name}: {:?}", skipped(&run));
    }
    // 0.56 gives the maximum but not the minimum or average.
    assert!(noted(
        &release("cyclictest_0.56_hist.txt"),
        "no minimum or average"
    ));
    // From 0.73 the footer's (truncated) average: 5 us.
    for name in ["cyclictest_0.73_hist_H.txt", "cyclictest_2.7_hist.txt"] {
        let run = release(name);
        assert_eq!(run.cpus[0].raw.sum_ns, 5 * US * 92, "{name}");
    }
    // 2.7 and later print no `# Total:` and leave empty rows out.
    assert!(noted(&release("cyclictest_2.7_hist.txt"), "no `# Total:`"));
    // --smi summary lines still give thread ids, priority and interval.
    let smi = release("cyclictest_1.3_hist_smi.txt");
    assert_eq!(smi.cpus[0].tid, Some(4321));
    assert_eq!((smi.params.policy, smi.params.priority), (Policy::Fifo, 80));
    assert_eq!(smi.params.interval_ns.get(), 1_000_000);
    assert_eq!(smi.params.dma_latency_us, Some(0));
}

#[test]
fn an_unknown_line_in_a_histogram_is_skipped_with_a_note() {
    let text = fixture("releases/cyclictest_2.7_hist.txt").replace(
        "# Min Latencies:",
        "Some future cyclictest line\n# Min Latencies:",
    );
    let run = import("f.hist", &text, when()).unwrap();
    assert_eq!(figures(&run), FULL.to_vec());
    assert_eq!(
        skipped(&run),
        vec![
            "skipped line 11, not part of cyclictest's histogram output as rtlab knows it: \
             `Some future cyclictest line`"
        ]
    );
}

#[test]
fn the_verbose_stream_is_every_sample_exactly() {
    let run = release("cyclictest_verbose.txt");
    consistent(&run);
    assert_eq!(
        detect(&fixture("releases/cyclictest_verbose.txt")),
        Some(Format::CyclictestVerbose)
    );
    assert_eq!(run.import.as_ref().unwrap().format, "cyclictest-verbose");
    assert_eq!(
        figures(&run),
        vec![(0, 90, 3 * US, 15 * US), (1, 90, 4 * US, 11 * US)]
    );
    // Exact sums, so an exact mean and standard deviation; nothing above any range.
    assert_eq!(
        (run.cpus[0].raw.sum_ns, run.cpus[1].raw.sum_ns),
        (436 * US, 459 * US)
    );
    assert_eq!(run.cpus[0].histogram.above_range(), 0);
    let s = &run.cpus[0].stats;
    // The median sample is 4 us (within the histogram's resolution).
    assert!(
        s.p50_ns.is_some_and(|p| (4 * US..4 * US + 10).contains(&p)),
        "{s:?}"
    );
    assert_eq!(s.max_ns, Some(15 * US));
    assert!(s.stddev_ns.is_some());
    assert_eq!(run.params.dma_latency_us, Some(0));
    assert!(skipped(&run).is_empty());

    // As it was piped into gzip: the same run.
    let packed = std::fs::read(format!(
        "{}/../../fixtures/imports/releases/cyclictest_verbose.txt.gz",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let unpacked = import_bytes("v.gz", &packed, when()).unwrap();
    assert_eq!(unpacked.cpus, run.cpus);
}

#[test]
fn a_verbose_stream_with_gaps_and_noise_says_so() {
    let text = fixture("releases/cyclictest_verbose.txt")
        .replacen("       0:       5:", "       0:       7:", 1)
        .replace("policy:", "WARNING: something else\npolicy:");
    let run = import("v.txt", &text, when()).unwrap();
    assert!(noted(&run, "2 cycles are missing from the stream"));
    assert_eq!(skipped(&run).len(), 1);
    assert!(skipped(&run)[0].contains("`WARNING: something else`"));
    assert_eq!(run.cpus[0].raw.count, 90);
}

#[test]
fn oslat_1_9_report_with_cpu_freq() {
    let run = release("oslat_1.9_text.txt");
    consistent(&run);
    let info = run.import.as_ref().unwrap();
    assert_eq!(info.tool, "oslat 1.90");
    assert_eq!(
        figures(&run),
        vec![(1, 100_060, 0, 40 * US), (2, 100_022, 0, 4 * US)]
    );
    // CPU 1's maximum (40 us) is beyond the last row (32 us): its 2 samples there are unknown.
    assert_eq!(run.cpus[0].histogram.above_range(), 2);
    assert!(noted(&run, "CPU 1 2600 MHz"));
    assert!(skipped(&run).is_empty());

    let text = fixture("releases/oslat_1.9_text.txt")
        .replace("     Minimum:", "   Something:\t 1 2 (us)\n     Minimum:");
    let run = import("o.txt", &text, when()).unwrap();
    assert_eq!(skipped(&run).len(), 1, "{:?}", skipped(&run));
    assert!(skipped(&run)[0].contains("oslat's report"));
}

#[test]
fn cyclictest_json_without_a_histogram_gives_no_percentiles() {
    let run = release("cyclictest_2.7_nohist.json");
    consistent(&run);
    assert_eq!(
        figures(&run),
        vec![(0, 3000, 14 * US, 3382 * US), (1, 3000, 14 * US, 4735 * US)]
    );
    let info = run.import.as_ref().unwrap();
    assert_eq!(info.tool, "cyclictest 2.70");
    assert_eq!(
        info.not_given,
        vec![
            model::imported::Figure::Percentiles,
            model::imported::Figure::Stddev
        ]
    );
    let s = &run.cpus[1].stats;
    assert_eq!(
        (s.p99_9_ns, s.stddev_ns, s.max_ns),
        (None, None, Some(4735 * US))
    );
    // The average is cyclictest's (58.55 us).
    assert_eq!(run.cpus[1].raw.sum_ns, 58_550 * 3000);
    assert!(noted(&run, "has no histogram"));
}

#[test]
fn an_unknown_line_in_an_rtla_histogram_is_skipped_with_a_note() {
    let text = fixture("kdoc_timerlat_hist_5cpu_deadline.txt");
    let plain = import("t.txt", &text, when()).unwrap();
    let noisy = text.replacen("over:", "Some later rtla line\nover:", 1);
    let run = import("t.txt", &noisy, when()).unwrap();
    assert_eq!(run.cpus, plain.cpus);
    assert_eq!(skipped(&run).len(), 1, "{:?}", skipped(&run));
    assert!(skipped(&run)[0].ends_with("`Some later rtla line`"));
}
