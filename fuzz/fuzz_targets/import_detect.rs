//! Fuzz target `import_detect`: arbitrary bytes as a file given to `rtlab import`
//! (`import::import_bytes`, as the command does): decompressed when they start as gzip, xz or
//! zstd (bounded), a trace-cmd file or non-UTF-8 bytes refused, the format detected by content
//! and read, and an imported run taken through what rtlab does with it
//! (`rtlab_fuzz::consume`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(text) = rtlab_fuzz::strict(data) {
        let _ = import::detect(text);
    }
    if let Ok(run) = import::import_bytes("fuzz.txt", data, rtlab_fuzz::modified()) {
        rtlab_fuzz::consume(&run);
    }
});
