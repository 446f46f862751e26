//! Fuzz target `import_cyclictest_hist`: arbitrary UTF-8 text read as a cyclictest `-h`/`-H`/`--histfile`
//! histogram (`import::import_as(Format::CyclictestHist, ..)`, detection skipped), the run then
//! taken through what rtlab does with it (`rtlab_fuzz::consume`).
#![no_main]

use import::Format;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(text) = rtlab_fuzz::strict(data) else {
        return;
    };
    if let Ok(run) = import::import_as(
        Format::CyclictestHist,
        "fuzz.txt",
        text,
        rtlab_fuzz::modified(),
    ) {
        rtlab_fuzz::consume(&run);
    }
});
