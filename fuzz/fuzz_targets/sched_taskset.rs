//! Fuzz target `sched_taskset`: arbitrary UTF-8 text read as a task set (TOML, or JSON when it
//! starts with `{`; `sched::parse`), and every set it accepts analysed under each policy on a
//! two-CPU machine and on an unknown one (`sched::check`), its report rendered and serialized.
#![no_main]

use libfuzzer_sys::fuzz_target;
use model::CpuSet;
use model::sched::{DeadlineBandwidth, SchedPolicy};

fuzz_target!(|data: &[u8]| {
    let Some(text) = rtlab_fuzz::strict(data) else {
        return;
    };
    let source = if text.trim_start().starts_with('{') { "fuzz.json" } else { "fuzz.toml" };
    let Ok(set) = sched::parse(text, source) else {
        return;
    };
    let machine = DeadlineBandwidth {
        rt_runtime_us: 950_000,
        rt_period_us: 1_000_000,
        online: CpuSet::from_cpus([0, 1]),
        domains: vec![CpuSet::from_cpus([1])],
        server_bw: 52_428,
        server_source: "fuzz".into(),
        tasks_bw: 0,
        tasks: vec![],
        period_min_us: Some(100),
        period_max_us: Some(4_194_304),
    };
    for (policy, bw) in [
        (SchedPolicy::Fifo, Some(&machine)),
        (SchedPolicy::Deadline, None),
    ] {
        let report = sched::check(&set, source, policy, bw);
        let _ = report::sched::table(&report);
        let _ = serde_json::to_string(&report).expect("a report serializes");
    }
});
