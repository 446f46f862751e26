//! The report's "Why the spikes happened" section: a run's trace capture (`measure --trace`)
//! as the template's context — each explained spike's heading, story, parts and caveats, in
//! the words of [`crate::story`].

use serde::Serialize;

use crate::table::format_opt_us;

/// The trace's explanations of the spikes.
#[derive(Serialize)]
pub(super) struct WhyCtx {
    intro: String,
    spikes: Vec<SpikeCtx>,
    notes: Vec<String>,
}

#[derive(Serialize)]
pub(super) struct SpikeCtx {
    heading: String,
    story: String,
    parts: Vec<Vec<String>>,
    caveats: Vec<String>,
}

pub(super) fn why_ctx(t: &model::explain::TraceCapture) -> WhyCtx {
    let spikes = t
        .explanations
        .iter()
        .map(|x| SpikeCtx {
            heading: format!(
                "CPU {}{}: {} us late, main cause {}",
                x.cpu,
                x.cycle.map_or(String::new(), |c| format!(", cycle {c}")),
                format_opt_us(Some(x.latency_ns)),
                crate::story::agent::main_cause(x)
            ),
            story: crate::story::spike::tell(x),
            parts: x
                .parts
                .iter()
                .take(8)
                .map(|p| {
                    vec![
                        crate::story::agent::kind(p.kind).to_string(),
                        crate::story::agent::name(&p.what),
                        format!("{} us", format_opt_us(Some(p.duration_ns))),
                        format!("{:.1} %", p.share * 100.0),
                    ]
                })
                .collect(),
            caveats: std::iter::once(crate::story::spike::seen(x))
                .chain(
                    x.caveats
                        .iter()
                        .filter(|c| !crate::story::caveat::in_confidence(c))
                        .map(crate::story::caveat::say),
                )
                .collect(),
        })
        .collect();
    let mut notes = t.notes.clone();
    notes.extend(t.missing.iter().map(|m| format!("not traced: {m}")));
    WhyCtx {
        intro: format!(
            "From the kernel trace rtlab recorded during the run (instance {}, clock {}, {} KiB \
             per CPU, frozen at {}): each spike's delay from its deadline to the thread \
             running, split into what the CPU did meanwhile.",
            t.instance,
            t.clock,
            t.buffer_kb,
            if t.frozen_by == "break" {
                "the breach"
            } else {
                "the end"
            }
        ),
        spikes,
        notes,
    }
}
