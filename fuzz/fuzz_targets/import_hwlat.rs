//! Fuzz target `import_hwlat`: arbitrary UTF-8 text through `import::hwlat::detect_hwlat` and
//! `import::hwlat::import_hwlat` (hwlatdetect's report, its sample lines, the hwlat tracer's
//! trace); a result must write and read back equal (`HwlatRun::from_json`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use model::hwlat::HwlatRun;

fuzz_target!(|data: &[u8]| {
    let Some(text) = rtlab_fuzz::strict(data) else {
        return;
    };
    let _ = import::hwlat::detect_hwlat(text);
    if let Ok(run) = import::hwlat::import_hwlat("fuzz.txt", text, rtlab_fuzz::modified()) {
        let back = HwlatRun::from_json(&run.to_json()).expect("an imported hwlat result reads back");
        assert_eq!(back, run);
        let _ = (run.max_ns(), run.over_hardlimit(), run.smi.during());
    }
});
