//! Noise runs as text: the per-CPU table with rtla osnoise's columns (runtime, noise, % CPU
//! available, max noise per period, max single, HW/NMI/IRQ/softirq/thread counts), the culprits
//! that took the most time, and oslat's text layout (`--format oslat`) for scripts that read it.

use std::fmt::Write;

use model::measure::MeasureRun;
use model::noise::{NoiseCpu, NoiseInfo, Source};

/// Culprits shown per CPU in the table.
const SHOWN_CULPRITS: usize = 5;
/// oslat's default bucket count.
const OSLAT_BUCKETS: u64 = 32;

fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

/// The osnoise-style table, the culprits and what attribution could not do.
pub fn table(run: &MeasureRun) -> String {
    let Some(noise) = &run.noise else {
        return String::new();
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "OS noise: {} (counter {}), threshold {}, {} of every {}; times in us",
        noise.engine.describe(),
        noise.counter,
        noise.threshold_ns,
        noise.runtime_ns,
        noise.period_ns
    );
    let _ = writeln!(
        out,
        "{:>4} {:>12} {:>10} {:>9} {:>9} {:>10} {:>8} {:>6} {:>6} {:>8} {:>8} {:>8} {:>8}",
        "CPU",
        "Runtime",
        "Noise",
        "%Avail",
        "MaxNoise",
        "MaxSingle",
        "Count",
        "HW",
        "NMI",
        "IRQ",
        "Softirq",
        "Thread",
        "Loop ns"
    );
    let total = noise.total();
    for c in noise
        .cpus
        .iter()
        .chain((noise.cpus.len() > 1).then_some(&total))
    {
        row(&mut out, c, std::ptr::eq(c, &total));
    }
    culprits(&mut out, noise);
    if let Some(note) = &noise.attribution_note {
        let _ = writeln!(out, "attribution: {note}");
    }
    for w in &run.warnings {
        let _ = writeln!(out, "warning: {}", w.message);
    }
    out
}

fn row(out: &mut String, c: &NoiseCpu, all: bool) {
    let count = |s: Source| {
        c.counts
            .map_or_else(|| "-".to_string(), |k| k.get(s).to_string())
    };
    let _ = writeln!(
        out,
        "{:>4} {:>12} {:>10} {:>9} {:>9} {:>10} {:>8} {:>6} {:>6} {:>8} {:>8} {:>8} {:>8}",
        if all {
            "all".to_string()
        } else {
            c.cpu.to_string()
        },
        us(c.runtime_ns),
        us(c.noise_ns),
        c.available_pct()
            .map_or_else(|| "-".to_string(), |p| format!("{p:.5}")),
        us(c.max_period_noise_ns),
        us(c.max_single_ns),
        c.interruptions,
        count(Source::Hw),
        count(Source::Nmi),
        count(Source::Irq),
        count(Source::Softirq),
        count(Source::Thread),
        c.loop_ns()
            .map_or_else(|| "-".to_string(), |l| format!("{l:.1}")),
    );
}

fn culprits(out: &mut String, noise: &NoiseInfo) {
    for c in &noise.cpus {
        if c.culprits.is_empty() && c.steal_ns.is_none() && c.unexplained == 0 {
            continue;
        }
        let _ = writeln!(out, "CPU {}:", c.cpu);
        // `count` is how often the cause was the main one; its time counts wherever it took
        // part (a thread inside another's interruption), so a cause may have time and no count.
        for k in c.culprits.iter().take(SHOWN_CULPRITS) {
            let _ = writeln!(
                out,
                "  {:<8} {:<56} main cause {:>6}x, {:>10} us in all, longest {:>8} us",
                k.source.column(),
                k.name,
                k.count,
                us(k.total_ns),
                us(k.max_ns)
            );
        }
        // The rest, so that the lines add up to the CPU's attributed time.
        let rest = &c.culprits[c.culprits.len().min(SHOWN_CULPRITS)..];
        if !rest.is_empty() {
            let _ = writeln!(
                out,
                "  {:<8} {:<56} main cause {:>6}x, {:>10} us in all",
                "other",
                format!("{} more causes", rest.len()),
                rest.iter().map(|k| k.count).sum::<u64>(),
                us(rest.iter().map(|k| k.total_ns).sum())
            );
        }
        if c.unexplained > 0 {
            let _ = writeln!(
                out,
                "  {} interruptions fell outside the trace and have no cause",
                c.unexplained
            );
        }
        if let Some(steal) = c.steal_ns {
            let _ = writeln!(out, "  steal time (hypervisor): {} us", us(steal));
        }
    }
}

/// oslat's header lines: its version, the runtime, the threads' priority, the CPUs.
fn oslat_header(out: &mut String, run: &MeasureRun) {
    let _ = writeln!(out, "oslat V rtlab-{}", run.rtlab_version);
    let _ = writeln!(
        out,
        "Total runtime: \t\t{} seconds",
        run.params
            .duration_ns
            .map_or(0, |d| d.get() / 1_000_000_000)
    );
    let _ = writeln!(
        out,
        "Thread priority: \t{}",
        if run.params.policy.takes_priority() {
            format!(
                "SCHED_{}:{}",
                run.params.policy.as_str().to_uppercase(),
                run.params.priority
            )
        } else {
            "default".to_string()
        }
    );
    let _ = writeln!(out, "CPU list: \t\t{}", run.params.cpus);
}

/// oslat's text report (rt-tests 2.x layout): one column per CPU, the row labelled `L` holding
/// gaps in `[L-1, L)` us, the last row every gap at or past 31 us, minimum and maximum
/// rounded up to the microsecond as oslat prints them.
pub fn oslat(run: &MeasureRun) -> String {
    let mut out = String::new();
    let cpus: Vec<_> = run.cpus.iter().collect();
    let join = |f: &dyn Fn(&model::measure::CpuResult) -> String| {
        cpus.iter().map(|c| f(c)).collect::<Vec<_>>().join(" ")
    };
    let mhz = run
        .noise
        .as_ref()
        .and_then(|n| n.counter_hz)
        .map_or(1_000, |hz| hz / 1_000_000);
    oslat_header(&mut out, run);
    let _ = writeln!(out, "\n        Core:\t {}", join(&|c| c.cpu.to_string()));
    let _ = writeln!(out, "Counter Freq:\t {} (Mhz)", join(&|_| mhz.to_string()));
    for row in 1..=OSLAT_BUCKETS {
        let counts = join(&|c| {
            let below = |us: u64| c.histogram.count_below(us * 1_000);
            let n = if row == OSLAT_BUCKETS {
                c.raw.count.saturating_sub(below(row - 1))
            } else {
                below(row).saturating_sub(below(row - 1))
            };
            n.to_string()
        });
        let tail = if row == OSLAT_BUCKETS {
            " (including overflows)"
        } else {
            ""
        };
        let _ = writeln!(out, "    {row:03} (us):\t {counts}{tail}");
    }
    let ceil_us = |ns: u64| ns.div_ceil(1_000);
    let _ = writeln!(
        out,
        "     Minimum:\t {} (us)",
        join(&|c| ceil_us(c.raw.min_ns).to_string())
    );
    let _ = writeln!(
        out,
        "     Average:\t {} (us)",
        join(&|c| format!("{:.3}", c.raw.mean_ns().unwrap_or(0.0) / 1000.0))
    );
    let _ = writeln!(
        out,
        "     Maximum:\t {} (us)",
        join(&|c| ceil_us(c.raw.max_ns).to_string())
    );
    let _ = writeln!(
        out,
        "     Max-Min:\t {} (us)",
        join(&|c| ceil_us(c.raw.max_ns)
            .saturating_sub(ceil_us(c.raw.min_ns))
            .to_string())
    );
    let secs = run.elapsed_ns.get() as f64 / 1e9;
    let _ = writeln!(
        out,
        "    Duration:\t {} (sec)",
        join(&|_| format!("{secs:.3}"))
    );
    out
}
