//! The report's "OS noise" section: a noise run's per-CPU table with rtla osnoise's columns
//! and its attribution — the named culprits per CPU — as the template's context.

use model::noise::{NoiseInfo, Source};
use serde::Serialize;

use super::facts::TableCtx;

/// The noise figures of one run.
#[derive(Serialize)]
pub(super) struct NoiseCtx {
    intro: String,
    columns: TableCtx,
    culprits: TableCtx,
    notes: Vec<String>,
}

fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

pub(super) fn noise_ctx(n: &NoiseInfo) -> NoiseCtx {
    let mut notes: Vec<String> = n.attribution_note.iter().cloned().collect();
    notes.extend(n.cpus.iter().filter(|c| c.unexplained > 0).map(|c| {
        format!(
            "CPU {}: {} interruptions fell outside the trace and have no cause",
            c.cpu, c.unexplained
        )
    }));
    NoiseCtx {
        intro: format!(
            "Measured by {} (counter {}): every gap of {} or more between two counter reads is \
             an interruption{}. The columns are rtla osnoise's; HW counts interruptions nothing \
             the kernel recorded explains{}.",
            n.engine.describe(),
            n.counter,
            n.threshold_ns,
            match n.attribution.as_str() {
                "trace" => ", attributed from a kernel trace recorded meanwhile",
                "tracer" => ", attributed by the osnoise tracer",
                _ => ", not attributed",
            },
            n.hypervisor.as_ref().map_or(String::new(), |h| format!(
                " (here, under {h}, the hypervisor's share among them)"
            )),
        ),
        columns: columns(n),
        culprits: culprits(n),
        notes,
    }
}

/// Per CPU, rtla osnoise's columns.
fn columns(n: &NoiseInfo) -> TableCtx {
    let head = [
        "CPU",
        "runtime (us)",
        "noise (us)",
        "% available",
        "max noise / period (us)",
        "max single (us)",
        "interruptions",
        "HW",
        "NMI",
        "IRQ",
        "softirq",
        "thread",
        "steal (us)",
    ];
    let rows = n
        .cpus
        .iter()
        .map(|c| {
            let count = |s: Source| c.counts.map_or("-".to_string(), |k| k.get(s).to_string());
            vec![
                c.cpu.to_string(),
                us(c.runtime_ns),
                us(c.noise_ns),
                c.available_pct()
                    .map_or("-".to_string(), |p| format!("{p:.4}")),
                us(c.max_period_noise_ns),
                us(c.max_single_ns),
                c.interruptions.to_string(),
                count(Source::Hw),
                count(Source::Nmi),
                count(Source::Irq),
                count(Source::Softirq),
                count(Source::Thread),
                c.steal_ns.map_or("-".to_string(), us),
            ]
        })
        .collect();
    TableCtx {
        head: head.iter().map(|h| h.to_string()).collect(),
        rows,
        foot: Vec::new(),
    }
}

/// Per CPU, its eight main culprits.
fn culprits(n: &NoiseInfo) -> TableCtx {
    let rows = n
        .cpus
        .iter()
        .flat_map(|c| {
            c.culprits.iter().take(8).map(move |k| {
                vec![
                    c.cpu.to_string(),
                    k.source.column().to_string(),
                    k.name.clone(),
                    k.count.to_string(),
                    us(k.total_ns),
                    us(k.max_ns),
                ]
            })
        })
        .collect();
    TableCtx {
        head: [
            "CPU",
            "class",
            "cause",
            "main cause of",
            "time (us)",
            "longest (us)",
        ]
        .iter()
        .map(|h| h.to_string())
        .collect(),
        rows,
        foot: Vec::new(),
    }
}
