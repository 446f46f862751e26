//! Fuzz target `model_load_json`: arbitrary UTF-8 text as a load report (`rtlab.load/1`,
//! `model::load::LoadReport::from_json`), then rendered as `rtlab load` renders one (the
//! table and the live line) and written back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use model::load::LoadReport;

fuzz_target!(|data: &[u8]| {
    let Some(text) = rtlab_fuzz::strict(data) else {
        return;
    };
    if let Ok(report) = LoadReport::from_json(text) {
        let _ = report::load::load_table(&report);
        let _ = report::load::load_live_line(&report);
        let again = LoadReport::from_json(&report.to_json()).expect("a report rtlab wrote reads");
        assert_eq!(again, report);
    }
});
