//! Fuzz target `model_measure_json`: arbitrary bytes as a result file (`rtlab.measure/1`,
//! perhaps from another machine): read as `rtlab show|report|export|compare FILE` reads it
//! (UTF-8 only, `model::measure::MeasureRun::from_json`), then taken through everything that
//! consumes a loaded run: statistics derived again and aggregated, the table, the cyclictest
//! outputs, the CSV, JUnit and OpenMetrics exports and the HTML report
//! (`rtlab_fuzz::consume_with_html`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use model::measure::MeasureRun;

fuzz_target!(|data: &[u8]| {
    let Some(text) = rtlab_fuzz::strict(data) else {
        return;
    };
    if let Ok(run) = MeasureRun::from_json(text) {
        rtlab_fuzz::consume_with_html(&run);
    }
});
