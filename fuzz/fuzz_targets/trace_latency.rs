//! Fuzz target `trace_latency`: arbitrary UTF-8 text as a latency tracer's report (irqsoff,
//! preemptoff, wakeup_rt, ...): `trace::latency::detect` and `trace::latency::parse`, then
//! what `rtlab explain FILE` prints from it (the story, the longest steps, the stack).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // `rtlab explain` reads such a report whole and only when it is UTF-8.
    let Some(text) = rtlab_fuzz::strict(data) else {
        return;
    };
    let _ = trace::latency::detect(text);
    let Ok(report) = trace::latency::parse(text) else {
        return;
    };
    let _ = report.story();
    for (i, ns) in report.longest_steps(5) {
        let _ = (
            &report.entries[i].text,
            report.entries[i].offset_ns / 1000,
            ns,
        );
    }
    let _ = report::explain::wrap(&report.story(), 94);
});
