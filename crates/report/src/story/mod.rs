//! Sentences made from what rtlab found: a spike's explanation ([`spike`]) with what each part
//! of its delay was ([`agent`]), the work inside its interrupt handlers ([`inside`]) and what
//! limits it ([`caveat`]), what to do about it ([`fix`]), and the kernel tracers' own
//! reports — a latency tracer's ([`latency`]), hwlat's ([`hwlat`]) and timerlat's
//! ([`timerlat`]); and the gate's reasons a run fails for ([`verdict`]). The data comes from `trace`
//! and `model`, which keep figures and structure only; every word a reader sees of them is
//! made here, so rewording a sentence changes no stored document.

pub mod agent;
pub mod caveat;
pub mod fix;
pub mod hwlat;
pub mod inside;
pub mod latency;
pub mod spike;
pub mod timerlat;
pub mod verdict;

#[cfg(test)]
mod tests;

/// Microseconds with one decimal below 10 us: `412 us`, `2.5 us`.
pub fn us(ns: u64) -> String {
    if ns < 10_000 {
        format!("{:.1} us", ns as f64 / 1000.0)
    } else {
        format!("{} us", (ns + 500) / 1000)
    }
}

/// `1 task`, `17 tasks`.
pub(crate) fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
