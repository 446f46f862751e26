//! Fuzz target `import_osnoise`: arbitrary UTF-8 text read as `rtla osnoise top`, `rtla
//! hwnoise` and the osnoise tracer's trace (`import::import_as` with each format, detection
//! skipped), each noise run then written and read back (`MeasureRun::from_json`) and taken
//! through what rtlab does with it (`rtlab_fuzz::consume`).
#![no_main]

use import::Format;
use libfuzzer_sys::fuzz_target;
use model::measure::MeasureRun;

fuzz_target!(|data: &[u8]| {
    let Some(text) = rtlab_fuzz::strict(data) else {
        return;
    };
    for format in [
        Format::RtlaOsnoiseTop,
        Format::RtlaHwnoiseTop,
        Format::OsnoiseTrace,
    ] {
        if let Ok(run) = import::import_as(format, "fuzz.txt", text, rtlab_fuzz::modified()) {
            let back = MeasureRun::from_json(&run.to_json()).expect("an imported noise run reads back");
            assert_eq!(back.noise, run.noise);
            rtlab_fuzz::consume(&run);
        }
    }
});
