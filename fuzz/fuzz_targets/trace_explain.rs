//! Fuzz target `trace_explain`: arbitrary bytes as a trace file through `rtlab explain FILE`'s
//! pipeline: the first pass (`trace::explain::scan`), the wake-ups chosen as the command
//! chooses them (before each breach marker, then the worst), the second pass over their
//! windows (`trace::explain::collect`), each spike explained (`trace::explain::explain`) and
//! the document rendered as text and JSON (`report::explain`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use model::explain::{ExplainDoc, SCHEMA};
use trace::explain::{self, Wakeup, WindowSpec};

/// How many of the worst wake-ups are explained (`--worst`'s default).
const WORST: usize = 3;

fuzz_target!(|data: &[u8]| {
    let Ok(scan) = explain::scan(data) else {
        return;
    };
    let _ = scan.worst(usize::MAX);
    if scan.read.events == 0 || scan.wakeups.is_empty() {
        return;
    }
    let offset = scan.clock_offset_ns;
    // As `explain_cmd::chosen`: the wake-up before each marker, then the worst.
    let mut chosen: Vec<Wakeup> = Vec::new();
    for (_, _, _, last) in &scan.markers {
        if let Some(w) = last
            && !chosen.contains(w)
        {
            chosen.push(w.clone());
        }
    }
    let marked = chosen.len();
    for w in scan.worst(WORST) {
        if !chosen.contains(w) {
            chosen.push(w.clone());
        }
    }
    chosen.truncate(WORST.max(marked));
    let specs: Vec<WindowSpec> = chosen.iter().map(|w| w.window_spec(offset)).collect();
    let Ok(windows) = explain::collect(data, &specs, true) else {
        return;
    };
    let explanations = chosen
        .iter()
        .zip(&windows)
        .map(|(w, win)| {
            let _ = w.latency_ns(offset);
            let spike = w.spike(offset);
            explain::explain(win, &spike, offset)
        })
        .collect();
    let doc = ExplainDoc {
        schema: SCHEMA.to_string(),
        source: "fuzz".to_string(),
        trace: None,
        explanations,
        notes: Vec::new(),
        timerlat: Vec::new(),
    };
    let _ = report::explain::explain_text(&doc);
    let _ = report::explain::explain_json(&doc);
});
