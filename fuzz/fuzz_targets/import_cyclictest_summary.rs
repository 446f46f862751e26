//! Fuzz target `import_cyclictest_summary`: arbitrary UTF-8 text read as cyclictest's `T:`
//! summary lines and as its `-v` sample stream (`import::import_as(Format::CyclictestSummary |
//! Format::CyclictestVerbose, ..)`, detection skipped), each run then taken through what rtlab
//! does with it (`rtlab_fuzz::consume`).
#![no_main]

use import::Format;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(text) = rtlab_fuzz::strict(data) else {
        return;
    };
    for format in [Format::CyclictestSummary, Format::CyclictestVerbose] {
        if let Ok(run) = import::import_as(format, "fuzz.txt", text, rtlab_fuzz::modified()) {
            rtlab_fuzz::consume(&run);
        }
    }
});
