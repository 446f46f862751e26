//! Fuzz target `trace_hwlat`: arbitrary UTF-8 text as the hwlat tracer's output:
//! `trace::hwlat::detect` and `trace::hwlat::parse`, then the worst sample, and the story and
//! per-CPU table `rtlab explain FILE` prints (`report::explain::hwlat_text`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(text) = rtlab_fuzz::strict(data) else {
        return;
    };
    let _ = trace::hwlat::detect(text);
    let Ok(report) = trace::hwlat::parse(text) else {
        return;
    };
    let _ = report.worst();
    // The story and the per-CPU table, as `rtlab explain FILE` prints them.
    let _ = report::explain::hwlat_text(&report);
});
