//! Fuzz target `push_queue`: arbitrary bytes as a push queue file (`rtlab push` reads every
//! file in its queue directory, which anything may have written to): UTF-8 only, as the
//! reader takes it, then `push::QueuedRun::from_json`; a file that reads writes back to one
//! that reads back equal, under the same name. The same text as a target URL: a URL that
//! parses is in normal form (parsing it again gives it back).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(text) = rtlab_fuzz::strict(data) else {
        return;
    };
    if let Ok(run) = push::QueuedRun::from_json(text) {
        let again = push::QueuedRun::from_json(&run.to_json()).expect("a queue file reads back");
        assert_eq!(again, run);
        assert_eq!(again.file_name(), run.file_name());
    }
    if let Ok(target) = push::Target::parse(text) {
        assert_eq!(push::Target::parse(target.as_str()).as_ref(), Ok(&target));
    }
});
