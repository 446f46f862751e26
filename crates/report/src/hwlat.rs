//! Hardware-latency results as text: what produced them, a per-CPU summary, the samples (the
//! worst first, as many as asked), the SMI count, and a hwlatdetect-style report
//! (`--format hwlatdetect`) for scripts that read one.

use std::fmt::Write;

use model::hwlat::{HwlatEngine, HwlatRun, HwlatSample};

fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

/// The summary table and the `shown` worst samples.
pub fn table(run: &HwlatRun, shown: usize) -> String {
    let mut out = String::new();
    let engine = match run.engine {
        HwlatEngine::Kernel => "the kernel's hwlat tracer".to_string(),
        HwlatEngine::User => "rtlab's user-space screen (interrupts on)".to_string(),
        HwlatEngine::Imported => format!(
            "an imported {}",
            run.import.as_ref().map_or("file", |i| i.format.as_str())
        ),
    };
    let p = &run.params;
    let _ = writeln!(
        out,
        "Hardware latency: {engine}; threshold {}{}{}; times in us",
        p.threshold_ns,
        p.width_ns
            .zip(p.window_ns)
            .map_or(String::new(), |(w, win)| format!(", {w} of every {win}")),
        p.hardlimit_ns
            .map_or(String::new(), |h| format!(", hard limit {h}")),
    );
    let _ = writeln!(
        out,
        "{:>4} {:>8} {:>10} {:>10}",
        "CPU", "Samples", "MaxInner", "MaxOuter"
    );
    for c in &run.cpus {
        let _ = writeln!(
            out,
            "{:>4} {:>8} {:>10} {:>10}",
            c.cpu,
            c.samples,
            us(c.max_inner_ns),
            us(c.max_outer_ns)
        );
    }
    let _ = writeln!(
        out,
        "max latency {} us over {} samples{}",
        us(run.max_ns()),
        run.samples.len(),
        match run.over_hardlimit() {
            0 => String::new(),
            n => format!(", {n} at or above the hard limit"),
        }
    );
    worst_samples(&mut out, run, shown);
    match (run.smi.during(), &run.smi.not_available) {
        (Some(n), _) => {
            let _ = writeln!(out, "SMIs during the run: {n}");
        }
        (None, Some(why)) => {
            let _ = writeln!(out, "SMI count: {why}");
        }
        (None, None) => {}
    }
    for w in &run.warnings {
        let _ = writeln!(out, "warning: {}", w.message);
    }
    out
}

/// The `shown` worst samples, a line each, worst first.
fn worst_samples(out: &mut String, run: &HwlatRun, shown: usize) {
    let mut worst: Vec<&HwlatSample> = run.samples.iter().collect();
    worst.sort_by(|a, b| b.latency_ns().cmp(&a.latency_ns()).then(a.seq.cmp(&b.seq)));
    for s in worst.iter().take(shown) {
        let _ = writeln!(
            out,
            "  #{:<5} CPU {:<3} inner {:>8} outer {:>8}{}{}{}",
            s.seq,
            s.cpu,
            us(s.inner_ns),
            us(s.outer_ns),
            s.ts_ns.map_or(String::new(), |t| format!(
                "  at {}.{:09}",
                t / 1_000_000_000,
                t % 1_000_000_000
            )),
            s.count.map_or(String::new(), |c| format!("  count {c}")),
            s.nmi_count
                .filter(|n| *n > 0)
                .map_or(String::new(), |n| format!(
                    "  {n} NMI ({} us)",
                    us(s.nmi_total_ns.unwrap_or(0))
                )),
        );
    }
}

/// hwlatdetect's report layout: the parameters, `Max Latency`, `Samples recorded`, `Samples
/// exceeding threshold`, `SMIs during run`, then one `ts:` line per sample.
pub fn hwlatdetect(run: &HwlatRun) -> String {
    let mut out = String::new();
    let p = &run.params;
    let _ = writeln!(
        out,
        "hwlatdetect:  test duration {} seconds",
        p.duration_ns.map_or(0, |d| d.get() / 1_000_000_000)
    );
    let _ = writeln!(
        out,
        "   detector: {}",
        match run.engine {
            HwlatEngine::Kernel => "tracer",
            HwlatEngine::User => "rtlab-user-screen",
            HwlatEngine::Imported => "imported",
        }
    );
    let _ = writeln!(out, "   parameters:");
    let _ = writeln!(
        out,
        "        Latency threshold: {}us",
        p.threshold_ns.get() / 1000
    );
    if let Some(w) = p.window_ns {
        let _ = writeln!(out, "        Sample window:     {}us", w.get() / 1000);
    }
    if let Some(w) = p.width_ns {
        let _ = writeln!(out, "        Sample width:      {}us", w.get() / 1000);
    }
    let _ = writeln!(out);
    let max = run.max_ns();
    if run.samples.is_empty() {
        let _ = writeln!(out, "Max Latency: Below threshold");
    } else {
        let _ = writeln!(out, "Max Latency: {}us", max.div_ceil(1000));
    }
    let _ = writeln!(out, "Samples recorded: {}", run.samples.len());
    let _ = writeln!(out, "Samples exceeding threshold: {}", run.samples.len());
    if let Some(n) = run.smi.during() {
        let _ = writeln!(out, "SMIs during run: {n}");
    }
    for s in &run.samples {
        let ts = s.wall.clone().or_else(|| {
            s.ts_ns
                .map(|t| format!("{}.{:09}", t / 1_000_000_000, t % 1_000_000_000))
        });
        let _ = writeln!(
            out,
            "ts: {}, inner:{}, outer:{}, cpu:{}",
            ts.unwrap_or_else(|| "-".to_string()),
            s.inner_ns.div_ceil(1000),
            s.outer_ns.div_ceil(1000),
            s.cpu
        );
    }
    out
}
