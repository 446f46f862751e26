//! Fuzz target `tune_journal`: arbitrary bytes as a tuning journal (`rtlab tune revert|status`
//! reads it after a crash, so any text may be there): UTF-8 only, as the reader takes it, then
//! `tune::journal::parse`; each entry written back reads back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(text) = rtlab_fuzz::strict(data) else {
        return;
    };
    if let Ok(entries) = tune::journal::parse(text) {
        let mut written = String::new();
        for e in &entries {
            written.push_str(&serde_json::to_string(e).expect("an entry serializes"));
            written.push('\n');
        }
        assert_eq!(tune::journal::parse(&written).as_ref(), Ok(&entries));
    }
});
