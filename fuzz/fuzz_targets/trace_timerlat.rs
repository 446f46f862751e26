//! Fuzz target `trace_timerlat`: arbitrary UTF-8 text as the timerlat tracer's trace:
//! `trace::timerlat::detect` and `trace::timerlat::parse` (with the auto-analysis of its
//! noise events and stacks, `trace::timerlat::analysis`), then its story, table and analyses
//! (`report::explain::timerlat_text`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(text) = rtlab_fuzz::strict(data) else {
        return;
    };
    let _ = trace::timerlat::detect(text);
    if let Ok(report) = trace::timerlat::parse(text) {
        let _ = report::explain::timerlat_text(&report);
    }
});
