//! Fuzz target `import_detect`: arbitrary bytes as a file given to `rtlab import`: refused
//! unless UTF-8 (as the command does), the format detected by content and read
//! (`import::import`), and an imported run taken through what rtlab does with it
//! (`rtlab_fuzz::consume`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(text) = rtlab_fuzz::strict(data) else {
        return;
    };
    let _ = import::detect(text);
    if let Ok(run) = import::import("fuzz.txt", text, rtlab_fuzz::modified()) {
        rtlab_fuzz::consume(&run);
    }
});
