//! The CPU's own time counter, read without the kernel: the invariant TSC on x86-64
//! (`rdtsc`), the virtual counter on arm64 (`cntvct_el0`), and, where neither is safe,
//! CLOCK_MONOTONIC_RAW through the vDSO. The noise detector polls one of these in its loop.
//!
//! This module owns choosing the counter (a TSC is used only when `/proc/cpuinfo` says it is
//! invariant: `constant_tsc` and `nonstop_tsc`), reading it (one instruction, no system call),
//! its frequency (arm64 says it in `cntfrq_el0`; a TSC is calibrated against
//! CLOCK_MONOTONIC_RAW), and pairing a counter value with a CLOCK_MONOTONIC_RAW time, so a
//! counter value can be placed on the trace's `mono_raw` clock.

use crate::Root;

/// Which counter a detector reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterKind {
    /// x86-64 time-stamp counter, invariant (constant rate, runs in deep idle).
    Tsc,
    /// arm64 virtual counter (`cntvct_el0`).
    Cntvct,
    /// CLOCK_MONOTONIC_RAW through the vDSO: ticks are nanoseconds.
    MonotonicRaw,
}

impl CounterKind {
    /// The name written into results (`tsc`, `cntvct`, `clock-monotonic-raw`).
    pub fn as_str(self) -> &'static str {
        match self {
            CounterKind::Tsc => "tsc",
            CounterKind::Cntvct => "cntvct",
            CounterKind::MonotonicRaw => "clock-monotonic-raw",
        }
    }
}

/// A counter the detector's loop reads: one associated function, inlined into the loop.
pub trait Ticks {
    /// The counter now.
    fn now() -> u64;
}

/// The x86-64 TSC.
pub struct Tsc;
/// The arm64 virtual counter.
pub struct Cntvct;
/// CLOCK_MONOTONIC_RAW in ns.
pub struct MonoRaw;

impl Ticks for Tsc {
    #[inline(always)]
    fn now() -> u64 {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: rdtsc has no memory effects; it is only chosen where cpuinfo lists
            // the TSC (every x86-64 CPU has one).
            unsafe { core::arch::x86_64::_rdtsc() }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            MonoRaw::now()
        }
    }
}

impl Ticks for Cntvct {
    #[inline(always)]
    fn now() -> u64 {
        #[cfg(target_arch = "aarch64")]
        {
            let v: u64;
            // SAFETY: reading cntvct_el0 is allowed at EL0 on Linux (the kernel sets
            // CNTKCTL_EL1.EL0VCTEN, the vDSO relies on it); the isb keeps the read in order.
            unsafe {
                core::arch::asm!("isb", "mrs {v}, cntvct_el0", v = out(reg) v,
                    options(nomem, nostack, preserves_flags));
            }
            v
        }
        #[cfg(not(target_arch = "aarch64"))]
        {
            MonoRaw::now()
        }
    }
}

impl Ticks for MonoRaw {
    #[inline(always)]
    fn now() -> u64 {
        crate::clock::read_ns(libc::CLOCK_MONOTONIC_RAW).unwrap_or(0)
    }
}

/// CLOCK_MONOTONIC_RAW now, ns.
pub fn monotonic_raw_ns() -> u64 {
    MonoRaw::now()
}

/// The counter to use on this machine, and why a raw counter was not used when it was not.
pub fn choose(root: &Root) -> (CounterKind, Option<String>) {
    if cfg!(target_arch = "x86_64") {
        let text = root.read("proc/cpuinfo").unwrap_or_default();
        let flags = text
            .lines()
            .find(|l| l.starts_with("flags"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, f)| f.split_whitespace().collect::<Vec<_>>())
            .unwrap_or_default();
        if ["tsc", "constant_tsc", "nonstop_tsc"]
            .iter()
            .all(|f| flags.contains(f))
        {
            return (CounterKind::Tsc, None);
        }
        return (
            CounterKind::MonotonicRaw,
            Some(
                "the TSC is not invariant here (/proc/cpuinfo lacks constant_tsc or nonstop_tsc)"
                    .into(),
            ),
        );
    }
    if cfg!(target_arch = "aarch64") {
        return (CounterKind::Cntvct, None);
    }
    (
        CounterKind::MonotonicRaw,
        Some("this architecture has no counter rtlab reads directly".into()),
    )
}

/// The counter's value now, for `kind`.
#[inline(always)]
pub fn read(kind: CounterKind) -> u64 {
    match kind {
        CounterKind::Tsc => Tsc::now(),
        CounterKind::Cntvct => Cntvct::now(),
        CounterKind::MonotonicRaw => MonoRaw::now(),
    }
}

/// A counter value and the CLOCK_MONOTONIC_RAW time it was read at: the counter read between
/// two clock reads, the pair with the narrowest bracket of a few tries kept.
pub fn pair(kind: CounterKind) -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..8 {
        let a = MonoRaw::now();
        let t = read(kind);
        let b = MonoRaw::now();
        let width = b.saturating_sub(a);
        if width < best.0 {
            best = (width, t, a + width / 2);
        }
    }
    (best.1, best.2)
}

/// The counter's frequency in Hz: `cntfrq_el0` on arm64; for a TSC, measured against
/// CLOCK_MONOTONIC_RAW over `over_ns` (the calling thread sleeps meanwhile); 1 GHz for the
/// clock itself.
pub fn frequency(kind: CounterKind, over_ns: u64) -> u64 {
    match kind {
        CounterKind::MonotonicRaw => 1_000_000_000,
        CounterKind::Cntvct => cntfrq().unwrap_or_else(|| measured_hz(kind, over_ns)),
        CounterKind::Tsc => measured_hz(kind, over_ns),
    }
}

fn measured_hz(kind: CounterKind, over_ns: u64) -> u64 {
    let (t0, r0) = pair(kind);
    crate::clock::sleep_ns(over_ns.max(1_000_000));
    let (t1, r1) = pair(kind);
    let ns = r1.saturating_sub(r0).max(1);
    let hz = u128::from(t1.saturating_sub(t0)) * 1_000_000_000 / u128::from(ns);
    u64::try_from(hz).unwrap_or(u64::MAX).max(1)
}

#[cfg(target_arch = "aarch64")]
fn cntfrq() -> Option<u64> {
    let v: u64;
    // SAFETY: cntfrq_el0 is readable at EL0.
    unsafe {
        core::arch::asm!("mrs {v}, cntfrq_el0", v = out(reg) v,
            options(nomem, nostack, preserves_flags));
    }
    (v > 0).then_some(v)
}

#[cfg(not(target_arch = "aarch64"))]
fn cntfrq() -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chosen_counter_moves_and_its_frequency_matches_the_clock() {
        let (kind, _) = choose(&Root::host());
        let a = read(kind);
        let b = read(kind);
        assert!(b >= a, "{kind:?} went backwards");
        let hz = frequency(kind, 20_000_000);
        assert!((1_000_000..=20_000_000_000).contains(&hz), "{hz}");
        let (t, raw) = pair(kind);
        assert!(t > 0 && raw > 0);
    }

    #[test]
    fn a_tsc_without_the_invariant_flags_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        std::fs::write(
            dir.path().join("proc/cpuinfo"),
            "processor\t: 0\nflags\t\t: fpu tsc msr\n",
        )
        .unwrap();
        let (kind, why) = choose(&Root::at(dir.path()));
        if cfg!(target_arch = "x86_64") {
            assert_eq!(kind, CounterKind::MonotonicRaw);
            assert!(why.unwrap().contains("constant_tsc"));
        }
        std::fs::write(
            dir.path().join("proc/cpuinfo"),
            "processor\t: 0\nflags\t\t: fpu tsc msr constant_tsc nonstop_tsc\n",
        )
        .unwrap();
        if cfg!(target_arch = "x86_64") {
            assert_eq!(choose(&Root::at(dir.path())).0, CounterKind::Tsc);
        }
    }
}
