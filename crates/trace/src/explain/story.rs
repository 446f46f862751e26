//! An explanation told in sentences: who woke how late, whether the timer fired on time, what
//! held the CPU after the wake-up, and the largest part. Written for the engineer reading a
//! report, with the numbers that back each claim.

use std::fmt::Write as _;

use model::explain::{Explanation, PartKind};

use super::piece::{Phase, Piece};

/// A timer interrupt this late or less is "on time".
const ON_TIME_NS: u64 = 10_000;

/// Microseconds with one decimal below 10 us: `412 us`, `2.5 us`.
pub fn us(ns: u64) -> String {
    if ns < 10_000 {
        format!("{:.1} us", ns as f64 / 1000.0)
    } else {
        format!("{} us", (ns + 500) / 1000)
    }
}

/// The story of `x`, from its `pieces`; `measured` when the end is the thread's own clock
/// read (a run) rather than its switch-in.
pub(super) fn tell(x: &Explanation, pieces: &[Piece], measured: bool) -> String {
    let mut s = String::new();
    let who = match (&x.comm, x.pid) {
        (Some(c), Some(p)) => format!("{c} (pid {p})"),
        (None, Some(p)) => format!("pid {p}"),
        (Some(c), None) => c.clone(),
        (None, None) => "the thread".to_string(),
    };
    let cycle = x.cycle.map_or(String::new(), |c| format!(" at cycle {c}"));
    let _ = write!(
        s,
        "CPU {}: {who} woke {} late{cycle}.",
        x.cpu,
        us(x.latency_ns)
    );

    let m = &x.milestones;
    let inside_of = |label: &str| {
        x.parts
            .iter()
            .find(|p| p.kind == PartKind::Irq && p.what == label)
            .and_then(|p| p.inside.as_ref())
    };
    let top = |phase: Phase, n: usize| -> Vec<String> {
        let mut sums: Vec<(String, PartKind, u64)> = Vec::new();
        for p in pieces.iter().filter(|p| p.phase == phase) {
            match sums
                .iter_mut()
                .find(|(w, k, _)| *w == p.what && *k == p.kind)
            {
                Some(e) => e.2 += p.end - p.start,
                None => sums.push((p.what.clone(), p.kind, p.end - p.start)),
            }
        }
        sums.sort_by_key(|s| std::cmp::Reverse(s.2));
        sums.into_iter()
            .filter(|(_, _, d)| *d >= 1_000)
            .take(n)
            .map(|(w, k, d)| match k {
                PartKind::Irq => match inside_of(&w) {
                    Some(i) => format!("{w} ran {}: {}", us(d), super::inside::describe(i)),
                    None => format!("{w} ran {}", us(d)),
                },
                PartKind::Softirq => format!("{w} ran {}", us(d)),
                PartKind::TimerDelay => format!("{} with {w}", us(d)),
                PartKind::HigherPriorityTask => {
                    format!("{w}, of higher priority, held the CPU for {}", us(d))
                }
                PartKind::SamePriorityTask => format!(
                    "{w}, of the same priority, held the CPU for {} (FIFO does not preempt its equal)",
                    us(d)
                ),
                PartKind::NonPreemptible => format!(
                    "{w}, of lower priority as far as the trace shows, kept the CPU for {}: it \
                     could not be preempted (preemption or interrupts off), or its priority was \
                     raised while it ran (sched_setscheduler leaves no event)",
                    us(d)
                ),
                PartKind::IrqThread => format!("the IRQ thread {w} held the CPU for {}", us(d)),
                _ => format!("{w}: {}", us(d)),
            })
            .collect()
    };

    match m.timer_fired_ns {
        Some(f) if f <= ON_TIME_NS => {
            let _ = write!(s, " The timer fired on time (+{}).", us(f));
        }
        Some(f) => {
            let _ = write!(s, " The timer interrupt came {} late", us(f));
            let why = top(Phase::BeforeFire, 3);
            if why.is_empty() {
                s.push('.');
            } else {
                let _ = write!(s, ": {}.", why.join("; "));
            }
        }
        None => {}
    }
    if let Some(w) = m.woken_ns {
        let _ = write!(s, " The thread was woken at +{}", us(w));
        match m.switched_in_ns {
            Some(sw) if sw.saturating_sub(w) > ON_TIME_NS => {
                let why = top(Phase::Waiting, 3);
                let _ = write!(s, " and switched in at +{}", us(sw));
                if why.is_empty() {
                    s.push('.');
                } else {
                    let _ = write!(s, "; meanwhile {}.", why.join("; "));
                }
            }
            Some(sw) => {
                let _ = write!(s, " and switched in at +{}.", us(sw));
            }
            None => s.push('.'),
        }
    } else if let Some(sw) = m.switched_in_ns {
        let why = top(Phase::Waiting, 3);
        let _ = write!(s, " It was switched in at +{}", us(sw));
        if why.is_empty() {
            s.push('.');
        } else {
            let _ = write!(s, "; before that {}.", why.join("; "));
        }
    }
    if measured
        && let Some(sw) = m.switched_in_ns
        && x.latency_ns > sw
    {
        let _ = write!(
            s,
            " It read its clock {} after the switch-in.",
            us(x.latency_ns - sw)
        );
    }
    if let Some(p) = x.parts.first() {
        let _ = write!(
            s,
            " Largest part: {} ({}), {} or {:.0} %.",
            p.kind.describe(),
            p.what,
            us(p.duration_ns),
            p.share * 100.0
        );
    }
    // The patterns the handlers' work fits, each named once with its fix.
    let mut named = Vec::new();
    for p in &x.parts {
        if let Some(pattern) = p.inside.as_ref().and_then(|i| i.pattern)
            && !named.contains(&pattern)
        {
            named.push(pattern);
            let _ = write!(
                s,
                " Pattern: {} ({}). Fix: {}.",
                pattern.describe(),
                p.what,
                pattern.fix()
            );
        }
    }
    s
}
