//! Fuzz target `trace_latency`: arbitrary UTF-8 text as a latency tracer's report (irqsoff,
//! preemptoff, wakeup_rt, ...): `trace::latency::detect` and `trace::latency::parse`, then
//! what `rtlab explain FILE` prints from it (`report::explain::latency_text`: the story, the
//! longest steps, the stack).
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
    // The story, the longest steps and the stack, as `rtlab explain FILE` prints them.
    let _ = report::explain::latency_text(&report);
});
