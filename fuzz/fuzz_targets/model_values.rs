//! Fuzz target `model_values`: arbitrary UTF-8 text as the small values rtlab reads from
//! flags and files: a time value (`model::nanos::parse_nanos`, `--duration 1.5ms`), a size
//! (`model::load::spec::parse_size`, `io:64M`) and an IRQ rules file
//! (`model::irq_rule::parse_rules`, `--irq-rules-file`), each rule matched against an IRQ. A
//! size that reads prints as one that reads back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use model::irq_rule;
use model::load::spec::{format_size, parse_size};
use model::nanos::{self, parse_nanos};

fuzz_target!(|data: &[u8]| {
    let Some(text) = rtlab_fuzz::strict(data) else {
        return;
    };
    if let Ok(ns) = parse_nanos(text) {
        let _ = nanos::format_us(ns, 3);
        let _ = ns.to_duration();
    }
    if let Ok(bytes) = parse_size(text) {
        assert_eq!(parse_size(&format_size(bytes)), Ok(bytes));
    }
    if let Ok(rules) = irq_rule::parse_rules(text) {
        let names = ["eth0".to_string(), "virtio1-req.0".to_string()];
        for rule in rules.iter().take(16) {
            let _ = rule.matches("24", &names);
            let _ = rule.to_string();
        }
    }
});
