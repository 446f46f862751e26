//! Fuzz target `model_cpuset`: arbitrary UTF-8 text as a CPU list (`model::CpuSet::parse_list`,
//! sysfs's `online`, `isolated`, `--cpus`), a CPU mask (`model::CpuSet::parse_mask`,
//! `smp_affinity`, `Cpus_allowed`) and a selector (`model::CpuSpec::parse`, resolved against
//! a small machine). A set that reads prints as a list that reads back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use model::{CpuSet, CpuSpec};

fuzz_target!(|data: &[u8]| {
    let Some(text) = rtlab_fuzz::strict(data) else {
        return;
    };
    for set in [CpuSet::parse_list(text), CpuSet::parse_mask(text)]
        .into_iter()
        .flatten()
    {
        let printed = set.to_string();
        assert_eq!(CpuSet::parse_list(&printed).as_ref(), Ok(&set), "{printed}");
        let _ = (set.first(), set.last(), set.len());
    }
    if let Ok(spec) = CpuSpec::parse(text) {
        let printed = spec.to_string();
        assert_eq!(CpuSpec::parse(&printed).as_ref(), Ok(&spec), "{printed}");
        let possible = CpuSet::from_cpus(0..8);
        let online = CpuSet::from_cpus(0..6);
        let allowed = CpuSet::from_cpus(1..6);
        let _ = spec.resolve(&possible, &online, &allowed);
    }
});
