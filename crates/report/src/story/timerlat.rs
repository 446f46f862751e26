//! The timerlat tracer's per-CPU latencies (`trace::timerlat::TimerlatReport`) in words and as
//! a table: the worst thread latency and its CPU's worst IRQ latency, then per CPU the
//! activations and the IRQ and thread minimum, mean and maximum.

use std::fmt::Write as _;

use trace::timerlat::{ContextStats, TimerlatReport};

/// `11.7 us`: one decimal, as rtla prints them.
fn us(ns: u64) -> String {
    format!("{:.1} us", ns as f64 / 1000.0)
}

/// The summary in words and a per-CPU table.
pub fn tell(r: &TimerlatReport) -> String {
    let mut out = String::new();
    let worst = r
        .cpus
        .iter()
        .max_by_key(|(_, (_, thr))| thr.max_ns)
        .map(|(cpu, (irq, thr))| (*cpu, *irq, *thr));
    if let Some((cpu, irq, thr)) = worst {
        let _ = write!(
            out,
            "timerlat: the worst thread latency is {} on CPU {cpu} (activation #{}); that \
             CPU's worst IRQ latency is {}. IRQ latency is timer expiry to its handler \
             (interrupts off, or the hardware); the rest of the thread latency is the \
             scheduler and what held the CPU before the timerlat thread ran.\n\n",
            us(thr.max_ns),
            thr.max_id,
            us(irq.max_ns)
        );
    }
    let _ = writeln!(
        out,
        "CPU  activations  irq min  irq avg  irq max  thread min  thread avg  thread max"
    );
    for (cpu, (irq, thr)) in &r.cpus {
        let avg = |c: &ContextStats| us(c.sum_ns / c.count.max(1));
        let _ = writeln!(
            out,
            "{cpu:>3}  {:>11}  {:>7}  {:>7}  {:>7}  {:>10}  {:>10}  {:>10}",
            thr.count.max(irq.count),
            us(irq.min_ns),
            avg(irq),
            us(irq.max_ns),
            us(thr.min_ns),
            avg(thr),
            us(thr.max_ns)
        );
    }
    out
}
