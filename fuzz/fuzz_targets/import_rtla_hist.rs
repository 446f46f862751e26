//! Fuzz target `import_rtla_hist`: arbitrary UTF-8 text read as `rtla timerlat hist` and as `rtla
//! osnoise hist` output (`import::import_as` with each format, detection skipped), each run
//! then taken through what rtlab does with it (`rtlab_fuzz::consume`).
#![no_main]

use import::Format;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(text) = rtlab_fuzz::strict(data) else {
        return;
    };
    for format in [Format::RtlaTimerlatHist, Format::RtlaOsnoiseHist] {
        if let Ok(run) = import::import_as(format, "fuzz.txt", text, rtlab_fuzz::modified()) {
            rtlab_fuzz::consume(&run);
        }
    }
});
