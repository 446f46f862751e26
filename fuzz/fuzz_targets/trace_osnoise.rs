//! Fuzz target `trace_osnoise`: arbitrary bytes as the osnoise tracer's trace, read as rtlab's
//! noise engine reads it (`trace::osnoise::OsnoiseReport::read` on a `BufRead`), and
//! `trace::osnoise::detect` on the text when it is UTF-8.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(text) = rtlab_fuzz::strict(data) {
        let _ = trace::osnoise::detect(text);
    }
    let _ = trace::osnoise::OsnoiseReport::read(data);
});
