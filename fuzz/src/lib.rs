//! What rtlab's fuzz targets share: turning the fuzzer's bytes into text the way the real
//! readers do (strict UTF-8 where rtlab refuses other bytes, lossy where it replaces them),
//! and the walk a loaded measurement takes through rtlab after it is read (statistics
//! derived again, every renderer and export), so that a target feeding a result file or an
//! imported one also fuzzes what consumes it.
//!
//! Each target under `fuzz_targets/` is one parser family; see docs/fuzzing.md.

use std::borrow::Cow;
use std::time::{Duration, SystemTime};

use model::Nanos;
use model::measure::{self, MeasureRun};

/// The bytes as text when they are UTF-8, as `std::fs::read_to_string` and `Root::read` give
/// it; `None` where rtlab refuses the file.
pub fn strict(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// The bytes as text with invalid sequences replaced, as rtlab reads kernel logs
/// (`String::from_utf8_lossy`).
pub fn lossy(data: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// A fixed file modification time for the importers (2026-01-01T00:00:00Z), so a run is
/// reproducible.
pub fn modified() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600)
}

/// Everything rtlab does with a measurement it has read from a file or a store: the
/// statistics derived again from the raw data (as the store does on load), the aggregate, the
/// budget check, the per-CPU table, the cyclictest-style outputs, the CSV, JUnit and
/// OpenMetrics exports, and the JSON written back and read again.
pub fn consume(run: &MeasureRun) {
    let _ = measure::aggregate(&run.cpus);
    for c in &run.cpus {
        let _ = measure::cpu_result(
            c.cpu,
            c.tid,
            c.raw,
            c.histogram.clone(),
            c.spikes.clone(),
            c.series.clone(),
        );
    }
    // Judged both ways: against the budget the run carries (or none), and against one given.
    let _ = model::gate::judge(run, None);
    let verdict = model::gate::judge(run, Some(Nanos::from_us(100)));
    let _ = report::story::verdict::line(&verdict);
    let _ = report::measure_table(run);
    let _ = report::cyclictest::summary(run);
    let _ = report::cyclictest::dma_latency_line(run);
    let _ = report::cyclictest::default_histogram_max_us(run);
    let _ = report::cyclictest::histogram(run, 40, true);
    let _ = report::export::csv(run);
    let _ = report::export::junit(run, Some(Nanos::from_us(100)));
    let _ = report::export::openmetrics(run, &verdict);
    let json = run.to_json();
    let again = MeasureRun::from_json(&json).expect("a run rtlab wrote reads back");
    assert_eq!(&again, run, "a run reads back equal to the one written");
}

/// [`consume`], then the HTML report over the run (plots and all): slower, so only the target
/// that reads result files runs it.
pub fn consume_with_html(run: &MeasureRun) {
    consume(run);
    // With a budget, so the budget line is drawn on every latency axis too, and the
    // timeline over runs (a campaign report's) asked for.
    let options = report::html::ReportOptions {
        budget: Some(Nanos::from_us(100)),
        timeline: true,
    };
    let _ = report::html::html_report(
        &[report::html::ReportRun {
            run,
            name: "fuzz",
            source: "file fuzz.json",
            key: "fuzz",
        }],
        &options,
    );
}
