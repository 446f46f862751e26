//! The worst case over time across runs that followed each other (a campaign's phases): every
//! wake-up latency run's per-second maximum over all its CPUs, placed at the time it was
//! measured on one axis from the first run's start, a line per run name, so a phase that
//! drifts, a spike at the third hour of a long phase and the gaps between phases (reboots,
//! tuning) read on one plot, as the OSADL farm draws a system's long-term latency.

use std::collections::BTreeMap;

use model::Nanos;
use model::imported::Quantity;
use model::measure::MeasureRun;

use super::chart::{Axis, Chart, Line, Scale, Ticks};
use super::plots::{BIN_NS, Plot, budget_rules, decade_below, nice_above, quantity, time_unit, us};

/// Most steps drawn over the whole span; a longer campaign merges neighbouring slots.
const MAX_STEPS: u64 = 2000;

/// The steps of one run name's line: connected segments of (time, latency in us) points.
type Segments = Vec<Vec<(f64, f64)>>;

/// One run placed on the common axis: its offset from the first start and its per-slot
/// maxima and counts over all CPUs.
struct Placed<'a> {
    name: &'a str,
    offset_ns: u64,
    slot_ns: u64,
    max_ns: &'a [u64],
    count: &'a [u64],
}

/// The chart over `runs` (name, run) in the order given; `None` unless at least two wake-up
/// latency runs have a start time and a per-second series.
pub(super) fn worst_over_time(
    runs: &[(String, &MeasureRun)],
    budget: Option<Nanos>,
) -> Option<Plot> {
    let placed = place(runs)?;
    let end_ns = placed
        .iter()
        .map(|p| {
            p.offset_ns
                .saturating_add(p.slot_ns.saturating_mul(p.max_ns.len() as u64))
        })
        .max()?;
    let (unit, unit_ns) = time_unit(Nanos(end_ns));
    // Each run's steps are at least `step_ns` wide, so the whole span has at most MAX_STEPS.
    let step_ns = (end_ns / MAX_STEPS).max(1);
    let (lines, lowest, highest) = lines(&placed, step_ns, unit_ns);
    let highest = highest.max(budget.map_or(0, Nanos::get));
    let below_budget = budget.map_or(f64::INFINITY, |b| us(b.get()) * 0.9);
    let lo = decade_below(us(lowest.min(BIN_NS * 1000)).min(below_budget));
    let chart = Chart {
        title: "Worst case over time, all runs".to_string(),
        x: Axis {
            label: format!("time since the first run started ({unit})"),
            range: (0.0, end_ns as f64 / unit_ns),
            scale: Scale::Linear,
            ticks: Ticks::Plain,
        },
        y: Axis {
            label: "largest latency per step, all CPUs (log scale)".to_string(),
            range: (lo, nice_above(us(highest).max(lo) * 1.5)),
            scale: Scale::Log,
            ticks: Ticks::Latency,
        },
        lines,
        rules: budget_rules(budget, false),
    };
    Some(Plot {
        kind: "worst-over-time",
        title: "Worst case over time".to_string(),
        caption: format!(
            "The largest latency over all CPUs in each step of {}, every run placed at the \
             time it was measured, a colour per run name: the whole series of runs on one time \
             axis, with the gaps between them.",
            Nanos(step_ns.max(1_000_000_000))
        ),
        svg: chart.to_svg(),
    })
}

/// The wake-up latency runs with a start time and a series, placed from the first start;
/// `None` for fewer than two.
fn place<'a>(runs: &'a [(String, &'a MeasureRun)]) -> Option<Vec<Placed<'a>>> {
    let starts: Vec<(&str, &MeasureRun, f64)> = runs
        .iter()
        .filter(|(_, r)| quantity(r) == Quantity::WakeupLatency)
        .filter(|(_, r)| {
            r.all.series.slot_ns.get() > 0 && r.all.series.count.iter().any(|&n| n > 0)
        })
        .filter_map(|(n, r)| {
            let t = crate::export::parse_utc(&r.started_at)?;
            Some((n.as_str(), *r, crate::export::unix_secs(t)))
        })
        .collect();
    if starts.len() < 2 {
        return None;
    }
    let t0 = starts.iter().map(|s| s.2).fold(f64::INFINITY, f64::min);
    Some(
        starts
            .iter()
            .map(|(name, r, t)| Placed {
                name,
                offset_ns: ((t - t0) * 1e9) as u64,
                slot_ns: r.all.series.slot_ns.get(),
                max_ns: &r.all.series.max_ns,
                count: &r.all.series.count,
            })
            .collect(),
    )
}

/// A line per run name, in the order the names first come, of steps `step_ns` wide or more
/// (time in `unit_ns`); and the lowest (at least 1) and highest maximum drawn.
fn lines(placed: &[Placed<'_>], step_ns: u64, unit_ns: f64) -> (Vec<Line>, u64, u64) {
    let mut by_name: BTreeMap<&str, (usize, Segments)> = BTreeMap::new();
    let (mut lowest, mut highest) = (u64::MAX, 0u64);
    for (order, p) in placed.iter().enumerate() {
        let group = (step_ns / p.slot_ns.max(1)).max(1) as usize;
        let entry = by_name.entry(p.name).or_insert_with(|| (order, Vec::new()));
        let len = p.max_ns.len().min(p.count.len());
        let mut current: Vec<(f64, f64)> = Vec::new();
        for start in (0..len).step_by(group) {
            let end = (start + group).min(len);
            if p.count[start..end].iter().all(|&n| n == 0) {
                if !current.is_empty() {
                    entry.1.push(std::mem::take(&mut current));
                }
                continue;
            }
            let max = p.max_ns[start..end].iter().copied().max().unwrap_or(0);
            lowest = lowest.min(max.max(1));
            highest = highest.max(max);
            let at = |slot: usize| {
                p.offset_ns
                    .saturating_add(p.slot_ns.saturating_mul(slot as u64)) as f64
                    / unit_ns
            };
            current.push((at(start), us(max)));
            current.push((at(end), us(max)));
        }
        if !current.is_empty() {
            entry.1.push(current);
        }
    }
    let mut lines: Vec<(usize, Line)> = by_name
        .into_iter()
        .map(|(name, (order, segments))| {
            (
                order,
                Line {
                    label: name.to_string(),
                    segments,
                },
            )
        })
        .collect();
    lines.sort_by_key(|(order, _)| *order);
    (lines.into_iter().map(|(_, l)| l).collect(), lowest, highest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::run_with_series;

    #[test]
    fn runs_are_placed_at_their_start_and_named() {
        let a = run_with_series(
            "2026-11-24T10:00:00Z",
            &[5_000, 7_000, 0, 9_000],
            &[10, 10, 0, 10],
        );
        let b = run_with_series("2026-11-24T10:00:10Z", &[40_000, 6_000], &[10, 10]);
        let runs = vec![("idle".to_string(), &a), ("busy".to_string(), &b)];
        let plot = worst_over_time(&runs, Some(Nanos::from_us(50))).unwrap();
        assert_eq!(plot.kind, "worst-over-time");
        let svg = &plot.svg;
        assert!(
            svg.contains("\nidle\n") && svg.contains("\nbusy\n"),
            "{svg}"
        );
        assert!(svg.contains("budget 50 us"), "{svg}");
        assert!(
            svg.contains("time since the first run started (s)"),
            "{svg}"
        );
        // One run is not a series of runs.
        assert!(worst_over_time(&runs[..1], None).is_none());
    }
}
