//! Fuzz target `model_load_spec`: arbitrary UTF-8 text in the load spec language
//! (`model::load::spec::LoadSpec::parse`, `--load 'cpu:60%@0-1,io:64M'`), its CPUs checked
//! against a small machine. A spec that reads prints as one that reads back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use model::CpuSet;
use model::load::spec::LoadSpec;

fuzz_target!(|data: &[u8]| {
    let Some(text) = rtlab_fuzz::strict(data) else {
        return;
    };
    if let Ok(spec) = LoadSpec::parse(text) {
        let _ = spec.check_cpus(&CpuSet::from_cpus(0..4));
        let printed = spec.to_string();
        assert_eq!(LoadSpec::parse(&printed).as_ref(), Ok(&spec), "{printed}");
    }
});
