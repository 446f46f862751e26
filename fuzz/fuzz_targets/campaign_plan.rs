//! Fuzz target `campaign_plan`: arbitrary UTF-8 text read as a campaign plan
//! (`model::campaign::Plan::parse`); every plan it accepts expands to its steps within the
//! bounds, with unique labels, and a refusal is one line.
#![no_main]

use libfuzzer_sys::fuzz_target;
use model::campaign::{MAX_STEPS, Plan};

fuzz_target!(|data: &[u8]| {
    let Some(text) = rtlab_fuzz::strict(data) else {
        return;
    };
    match Plan::parse(text, "fuzz.toml") {
        Ok(plan) => {
            let steps = plan.steps();
            assert!(!steps.is_empty() && steps.len() <= MAX_STEPS);
            let mut labels: Vec<&str> = steps.iter().map(|s| s.label.as_str()).collect();
            labels.sort_unstable();
            labels.dedup();
            assert_eq!(labels.len(), steps.len(), "every step has its own label");
            assert!(!steps.last().is_some_and(|s| s.reboot_after));
        }
        Err(e) => assert!(!e.0.contains('\n'), "a refusal is one line: {}", e.0),
    }
});
