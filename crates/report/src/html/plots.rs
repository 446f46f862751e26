//! What the report plots, decided from raw data: per run the latency histogram in the OSADL
//! look, the exceedance curve and the largest latency per second; over several runs their
//! all-CPU exceedance curves on one chart.
//!
//! Latency axes are logarithmic, and histograms count 1 us bins: a run with a body at 10 us
//! and a tail at 11 ms shows both, each bin as it was counted (docs/decisions/0011). A bin
//! is `[k, k+1)` us; the model's log-linear buckets are re-binned by their highest value, as
//! the percentiles read them (they are 1 us wide or finer up to about 1 ms, and at most 0.1 %
//! of their value beyond). Empty
//! bins are gaps, not drops to the baseline. Samples above the histogram's range are counted
//! in the exceedance curves (they exceed every latency drawn) and named in the histogram's
//! caption. A latency budget, when given, is a dashed line on every latency axis.
//!
//! A run imported from a noise tool (oslat, rtla osnoise) is drawn with the same plots,
//! titled and labelled as noise; the caller keeps noise and latency runs on separate
//! comparison charts. Everything here is pure: data in, [`Plot`]s (SVG text) out.

use model::imported::Quantity;
use model::measure::{MeasureRun, Series};
use model::{Histogram, Nanos};

use super::chart::{Axis, Chart, Line, Rule, Scale, Ticks, latency_tick};

/// Most steps a max-over-time line is drawn with; longer runs merge neighbouring slots.
const MAX_STEPS: usize = 1000;
/// One bin: 1 us, in ns.
pub(super) const BIN_NS: u64 = 1_000;

/// One plot of the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Plot {
    /// What it shows, as used in file names and anchors: `histogram`, `exceedance`,
    /// `max-over-time`, or `runs-exceedance` (`runs-noise-exceedance`) for the chart over
    /// several runs.
    pub(crate) kind: &'static str,
    /// Its heading.
    pub(crate) title: String,
    /// How to read it, and what it leaves out; one or two sentences.
    pub(crate) caption: String,
    /// The chart as a standalone SVG document.
    pub(crate) svg: String,
}

/// What a run's samples are, in the words its plots use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Words {
    /// `Latency`, `OS noise`: starts a title.
    title: &'static str,
    /// `latency`, `noise`: names the axis.
    axis: &'static str,
}

fn words(quantity: Quantity) -> Words {
    match quantity {
        Quantity::WakeupLatency => Words {
            title: "Latency",
            axis: "latency",
        },
        Quantity::OsNoise => Words {
            title: "OS noise",
            axis: "noise",
        },
        Quantity::ResponseTime => Words {
            title: "Response time",
            axis: "response time",
        },
    }
}

/// What a run measured: wake-up latency unless it was imported from a noise tool.
pub(crate) fn quantity(run: &MeasureRun) -> Quantity {
    run.quantity()
}

/// The plots of one run, in report order; a plot without data is left out (no samples: no
/// histogram; no per-second series: no max-over-time). `budget` is drawn on wake-up latency
/// runs only (a noise run is not judged against a latency budget).
pub(super) fn run_plots(run: &MeasureRun, name: &str, budget: Option<Nanos>) -> Vec<Plot> {
    let budget = budget.filter(|_| quantity(run) == Quantity::WakeupLatency);
    [
        histogram(run, name, budget),
        exceedance(run, name, budget),
        max_over_time(run, name, budget),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The non-empty 1 us bins of `histogram` as (k, count), k ascending: bin k holds `[k, k+1)`
/// us. Each bucket is counted in the bin of its highest value, as the percentiles read it, so
/// a tool's whole-microsecond values land in their own bin; no bin lies past the exact
/// maximum `max_ns` when it is known.
fn us_bins(histogram: &Histogram, max_ns: Option<u64>) -> Vec<(u64, u64)> {
    let last = max_ns.map_or(u64::MAX, |m| m / BIN_NS);
    let mut bins: Vec<(u64, u64)> = Vec::new();
    for (lo, width, count) in histogram.buckets() {
        let k = (lo.saturating_add(width.saturating_sub(1)) / BIN_NS).min(last);
        match bins.last_mut() {
            Some((previous, n)) if *previous == k => *n = n.saturating_add(count),
            _ if count > 0 => bins.push((k, count)),
            _ => {}
        }
    }
    bins
}

/// `bins` split where a bin is missing, each bin mapped by `point`.
fn runs_of_bins(
    bins: &[(u64, u64)],
    point: impl Fn(u64, u64) -> (f64, f64),
) -> Vec<Vec<(f64, f64)>> {
    let mut segments: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut previous: Option<u64> = None;
    for &(k, count) in bins {
        if previous.is_none_or(|p| p + 1 != k) {
            segments.push(Vec::new());
        }
        if let Some(segment) = segments.last_mut() {
            segment.push(point(k, count));
        }
        previous = Some(k);
    }
    segments
}

/// The smallest of 1, 2, 5 × 10^n at or above `value` (positive).
pub(super) fn nice_above(value: f64) -> f64 {
    let decade = 10f64.powf(value.max(f64::MIN_POSITIVE).log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * decade)
        .find(|&v| v >= value * (1.0 - 1e-12))
        .unwrap_or(10.0 * decade)
}

/// The power of ten at or below `value` (positive).
pub(super) fn decade_below(value: f64) -> f64 {
    10f64.powf(value.max(f64::MIN_POSITIVE).log10().floor())
}

/// The latency axis (in us, logarithmic) for bins `first_k` to `last_k`: from the decade below
/// the first bin's centre (and the budget) to a round value a fifth past the last bin's end (and
/// the budget).
fn latency_axis(label: String, first_k: u64, last_k: u64, budget: Option<Nanos>) -> Axis {
    let budget_us = budget.map_or(0.0, |b| us(b.get()));
    let below_budget = budget.map_or(f64::INFINITY, |_| budget_us * 0.9);
    let lo = decade_below((first_k as f64 + 0.5).min(below_budget));
    let hi = nice_above(((last_k + 1) as f64).max(budget_us) * 1.2);
    Axis {
        label,
        range: (lo, hi.max(lo * 10.0)),
        scale: Scale::Log,
        ticks: Ticks::Latency,
    }
}

/// The budget as a rule on a latency axis.
pub(super) fn budget_rules(budget: Option<Nanos>, vertical: bool) -> Vec<Rule> {
    budget
        .map(|b| Rule {
            vertical,
            at: us(b.get()),
            label: format!("budget {}", latency_tick(us(b.get()))),
        })
        .into_iter()
        .collect()
}

/// Lowest and highest bin over `bins` (None when all are empty).
fn bin_span<'a>(bins: impl IntoIterator<Item = &'a Vec<(u64, u64)>>) -> Option<(u64, u64)> {
    bins.into_iter()
        .filter_map(|b| Some((b.first()?.0, b.last()?.0)))
        .reduce(|(a, b), (c, d)| (a.min(c), b.max(d)))
}

pub(super) fn us(ns: u64) -> f64 {
    ns as f64 / 1_000.0
}

/// The OSADL latency plot: samples per 1 us bin (log) against latency (log), a line per CPU.
fn histogram(run: &MeasureRun, name: &str, budget: Option<Nanos>) -> Option<Plot> {
    let w = words(quantity(run));
    let cpus: Vec<_> = run.cpus.iter().filter(|c| c.stats.count > 0).collect();
    let bins: Vec<Vec<(u64, u64)>> = cpus
        .iter()
        .map(|c| us_bins(&c.histogram, c.stats.max_ns))
        .collect();
    let (first, last) = bin_span(&bins)?;
    let highest = bins.iter().flatten().map(|&(_, n)| n).max().unwrap_or(1);
    let lines = cpus
        .iter()
        .zip(&bins)
        .map(|(c, b)| Line {
            label: format!("CPU {}", c.cpu),
            segments: runs_of_bins(b, |k, n| (k as f64 + 0.5, n as f64)),
        })
        .collect();
    let above: u64 = cpus.iter().map(|c| c.histogram.above_range()).sum();
    let mut caption = format!(
        "The OSADL latency plot: samples per 1 us bin on a logarithmic scale against {axis} \
         on a logarithmic scale, one line per CPU. Each point is one bin, drawn at its centre; \
         an empty bin is a gap in the line, and a bin with empty neighbours is a ring. The run's \
         histogram resolves 1 us up to about 1 ms and 0.1 % beyond; each of its buckets is \
         counted in the bin of its highest value, as the percentiles are.",
        axis = w.axis
    );
    if let Some(b) = budget {
        caption.push_str(&format!(" The dashed line is the budget, {b}."));
    }
    if above > 0 {
        caption.push_str(&format!(
            " {above} sample{} above the histogram's range (about 17.2 s) {} not drawn.",
            plural(above),
            if above == 1 { "is" } else { "are" }
        ));
    }
    let chart = Chart {
        title: format!("{} histogram: {name}", w.title),
        x: latency_axis(format!("{} (log scale)", w.axis), first, last, budget),
        y: Axis {
            label: "samples per 1 us bin".to_string(),
            range: (0.5, next_power_of_ten(highest as f64 * 1.5)),
            scale: Scale::Log,
            ticks: Ticks::Plain,
        },
        lines,
        rules: budget_rules(budget, true),
    };
    Some(Plot {
        kind: "histogram",
        title: format!("{} histogram", w.title),
        caption,
        svg: chart.to_svg(),
    })
}

/// Fraction of the samples at or above each latency, as a line falling across every
/// non-empty bin: at bin k's start all from k up remain, at its end those past it. Past the
/// last bin only the above-range samples remain (the baseline when there are none).
fn exceedance_line(label: String, histogram: &Histogram, max_ns: Option<u64>) -> Line {
    let n = histogram.count().max(1) as f64;
    let mut remaining = histogram.count();
    let mut points = Vec::new();
    for (k, count) in us_bins(histogram, max_ns) {
        points.push((k as f64, remaining as f64 / n));
        remaining = remaining.saturating_sub(count);
        points.push(((k + 1) as f64, remaining as f64 / n));
    }
    Line {
        label,
        segments: vec![points],
    }
}

/// The y axis of exceedance charts over histograms of up to `most` samples: from a power of
/// ten below one sample's share (so a single sample stands clear of the baseline) to 1.
fn exceedance_axis(most: u64) -> Axis {
    let floor = 10f64.powf((0.5 / most.max(1) as f64).log10().floor());
    Axis {
        label: "fraction of samples at or above".to_string(),
        range: (floor, 1.0),
        scale: Scale::Log,
        ticks: Ticks::Plain,
    }
}

/// The exceedance plot of one run: a line per CPU.
fn exceedance(run: &MeasureRun, name: &str, budget: Option<Nanos>) -> Option<Plot> {
    let w = words(quantity(run));
    let cpus: Vec<_> = run.cpus.iter().filter(|c| c.stats.count > 0).collect();
    let bins: Vec<_> = cpus
        .iter()
        .map(|c| us_bins(&c.histogram, c.stats.max_ns))
        .collect();
    let (first, last) = bin_span(&bins)?;
    let lines = cpus
        .iter()
        .map(|c| exceedance_line(format!("CPU {}", c.cpu), &c.histogram, c.stats.max_ns))
        .collect();
    let most = cpus.iter().map(|c| c.histogram.count()).max().unwrap_or(1);
    let chart = Chart {
        title: format!("{} exceedance: {name}", w.title),
        x: latency_axis(format!("{} (log scale)", w.axis), first, last, budget),
        y: exceedance_axis(most),
        lines,
        rules: budget_rules(budget, true),
    };
    Some(Plot {
        kind: "exceedance",
        title: format!("{} exceedance", w.title),
        caption: format!(
            "Fraction of each CPU's samples at or above a {axis}, both axes logarithmic (1 us \
             bins): where a line crosses 1e-3, one sample in a thousand was slower; the further \
             right a line reaches, the longer that CPU's tail. A line drops to the baseline \
             past its largest sample.",
            axis = w.axis
        ),
        svg: chart.to_svg(),
    })
}

/// The all-CPU exceedance curves of several runs of one `quantity` on one chart, each
/// labelled by its legend text; `None` for fewer than two runs or when none has samples.
pub(super) fn runs_exceedance(
    runs: &[(String, &MeasureRun)],
    quantity: Quantity,
    budget: Option<Nanos>,
) -> Option<Plot> {
    let w = words(quantity);
    let budget = budget.filter(|_| quantity == Quantity::WakeupLatency);
    let with_samples: Vec<_> = runs
        .iter()
        .filter(|(_, r)| r.all.histogram.count() > 0)
        .collect();
    if runs.len() < 2 {
        return None;
    }
    let bins: Vec<_> = with_samples
        .iter()
        .map(|(_, r)| us_bins(&r.all.histogram, r.all.stats.max_ns))
        .collect();
    let (first, last) = bin_span(&bins)?;
    let lines = with_samples
        .iter()
        .map(|(name, r)| exceedance_line(name.clone(), &r.all.histogram, r.all.stats.max_ns))
        .collect();
    let most = with_samples
        .iter()
        .map(|(_, r)| r.all.histogram.count())
        .max()
        .unwrap_or(1);
    let title = format!("{} exceedance, all CPUs of each run", w.title);
    let chart = Chart {
        title: title.clone(),
        x: latency_axis(format!("{} (log scale)", w.axis), first, last, budget),
        y: exceedance_axis(most),
        lines,
        rules: budget_rules(budget, true),
    };
    Some(Plot {
        kind: match quantity {
            Quantity::WakeupLatency => "runs-exceedance",
            Quantity::OsNoise => "runs-noise-exceedance",
            Quantity::ResponseTime => "runs-response-exceedance",
        },
        title,
        caption: format!(
            "Every run's samples over all its CPUs: the fraction at or above each {}, both axes \
             logarithmic (1 us bins). A line further right has the longer tail.",
            w.axis
        ),
        svg: chart.to_svg(),
    })
}

/// How a time axis of `total` reads: seconds up to 10 minutes, minutes up to 10 hours,
/// hours beyond; returns the unit's name and its length in ns.
pub(super) fn time_unit(total: Nanos) -> (&'static str, f64) {
    if total.get() <= 600 * 1_000_000_000 {
        ("s", 1e9)
    } else if total.get() <= 36_000 * 1_000_000_000 {
        ("min", 60e9)
    } else {
        ("h", 3_600e9)
    }
}

/// A max-over-time line: a step per group of `group` slots (the group's maximum), broken
/// where a group has no sample.
fn steps(series: &Series, group: usize, unit_ns: f64) -> Vec<Vec<(f64, f64)>> {
    let slot = series.slot_ns.get() as f64;
    let mut segments = Vec::new();
    let mut current: Vec<(f64, f64)> = Vec::new();
    let len = series.max_ns.len().min(series.count.len());
    for start in (0..len).step_by(group) {
        let end = (start + group).min(len);
        let samples: u64 = series.count[start..end].iter().sum();
        if samples == 0 {
            if !current.is_empty() {
                segments.push(std::mem::take(&mut current));
            }
            continue;
        }
        let max = series.max_ns[start..end].iter().copied().max().unwrap_or(0);
        let (t0, t1) = (start as f64 * slot / unit_ns, end as f64 * slot / unit_ns);
        current.push((t0, us(max)));
        current.push((t1, us(max)));
    }
    if !current.is_empty() {
        segments.push(current);
    }
    segments
}

/// The largest latency per second (per slot), a line per CPU, on a logarithmic latency axis
/// so that a body at tens of microseconds and spikes at milliseconds both read.
fn max_over_time(run: &MeasureRun, name: &str, budget: Option<Nanos>) -> Option<Plot> {
    let w = words(quantity(run));
    let cpus: Vec<_> = run
        .cpus
        .iter()
        .filter(|c| c.series.slot_ns.get() > 0 && c.series.count.iter().any(|&n| n > 0))
        .collect();
    let slot = cpus.first()?.series.slot_ns;
    let slots = cpus
        .iter()
        .map(|c| c.series.max_ns.len())
        .max()
        .unwrap_or(1);
    let group = slots.div_ceil(MAX_STEPS).max(1);
    let total = Nanos(slot.get().saturating_mul(slots as u64));
    let (unit, unit_ns) = time_unit(total);
    let maxima = || {
        cpus.iter().flat_map(|c| {
            c.series
                .max_ns
                .iter()
                .zip(&c.series.count)
                .filter(|&(_, &n)| n > 0)
                .map(|(&m, _)| m)
        })
    };
    let highest = maxima()
        .max()
        .unwrap_or(0)
        .max(budget.map_or(0, Nanos::get));
    let lowest = maxima().filter(|&m| m > 0).min().unwrap_or(BIN_NS);
    let lines = cpus
        .iter()
        .map(|c| Line {
            label: format!("CPU {}", c.cpu),
            segments: steps(&c.series, group, unit_ns),
        })
        .collect();
    let step = Nanos(slot.get().saturating_mul(group as u64));
    let mut caption = format!(
        "The largest {axis} in each {step} of the run, one line per CPU, on a logarithmic \
         scale: a spike that recurs with a period shows here although the histogram hides it. \
         A gap is a stretch without any sample.",
        axis = w.axis
    );
    if group > 1 {
        caption.push_str(&format!(" Each step merges {group} slots of {slot}."));
    }
    // Down to the decade below the lowest maximum, and below the budget, so that its line
    // stands clear of the axis.
    let below_budget = budget.map_or(f64::INFINITY, |b| us(b.get()) * 0.9);
    let lo = decade_below(us(lowest).min(below_budget));
    let chart = Chart {
        title: format!("Maximum {} over time: {name}", w.axis),
        x: Axis {
            label: format!("time since start ({unit})"),
            range: (0.0, total.get() as f64 / unit_ns),
            scale: Scale::Linear,
            ticks: Ticks::Plain,
        },
        y: Axis {
            label: format!("largest {} per {step} (log scale)", w.axis),
            range: (lo, nice_above(us(highest).max(lo) * 1.5)),
            scale: Scale::Log,
            ticks: Ticks::Latency,
        },
        lines,
        rules: budget_rules(budget, false),
    };
    Some(Plot {
        kind: "max-over-time",
        title: format!("Maximum {} over time", w.axis),
        caption,
        svg: chart.to_svg(),
    })
}

/// The smallest power of ten at or above `value` (at least 10).
fn next_power_of_ten(value: f64) -> f64 {
    10f64.powf(value.max(10.0).log10().ceil())
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_one_microsecond_and_keep_every_in_range_sample() {
        let mut h = Histogram::new();
        for v in [
            0,
            999,
            1_000,
            1_500,
            7_250,
            7_999,
            11_000_000,
            1_000_000_000_000_000,
        ] {
            h.record(v);
        }
        let bins = us_bins(&h, None);
        assert_eq!(bins[..3], [(0, 2), (1, 2), (7, 2)]);
        // 11 ms sits in a bucket 8192 ns wide: counted by its highest value, 0.1 % above,
        // unless the exact maximum is known.
        let (k, n) = bins[3];
        assert!((11_000..=11_009).contains(&k) && n == 1, "{bins:?}");
        assert_eq!(us_bins(&h, Some(11_000_000))[3], (11_000, 1));
        assert_eq!(
            bins.iter().map(|b| b.1).sum::<u64>() + h.above_range(),
            h.count()
        );
        // Whole microseconds (as tools write them) each land in their own bin, at every width.
        let mut h = Histogram::new();
        for us in [17, 18, 33, 35, 63, 500, 999] {
            h.record(us * 1_000);
        }
        let ks: Vec<u64> = us_bins(&h, None).iter().map(|b| b.0).collect();
        assert_eq!(ks, [17, 18, 33, 35, 63, 500, 999]);
    }

    #[test]
    fn empty_bins_are_gaps_and_lone_bins_stand_alone() {
        let bins = [(5, 10), (6, 20), (7, 5), (9, 1), (40, 2), (41, 1)];
        let segments = runs_of_bins(&bins, |k, n| (k as f64 + 0.5, n as f64));
        assert_eq!(
            segments,
            vec![
                vec![(5.5, 10.0), (6.5, 20.0), (7.5, 5.0)],
                vec![(9.5, 1.0)],
                vec![(40.5, 2.0), (41.5, 1.0)],
            ]
        );
    }

    #[test]
    fn the_latency_axis_spans_the_body_and_the_tail_in_round_values() {
        // Body from 5 us, tail to 11 ms: 1 us to 20 ms.
        let axis = latency_axis("latency".into(), 5, 11_000, None);
        assert_eq!(axis.range, (1.0, 20_000.0));
        // A budget beyond the samples widens it; a short run still gets a decade.
        let axis = latency_axis("latency".into(), 0, 3, Some(Nanos::from_us(100)));
        assert_eq!(axis.range, (0.1, 200.0));
        assert_eq!(latency_axis("l".into(), 12, 14, None).range, (10.0, 100.0));
        // A budget below the samples starts the axis below it.
        let axis = latency_axis("l".into(), 12, 14, Some(Nanos::from_us(10)));
        assert_eq!(axis.range, (1.0, 20.0));
        assert_eq!(nice_above(21.0), 50.0);
        assert_eq!(nice_above(100.0), 100.0);
    }

    #[test]
    fn exceedance_falls_across_each_bin_to_what_is_above_range() {
        let mut h = Histogram::new();
        for v in [500, 1_500, 2_500, 2_600, u64::MAX] {
            h.record(v);
        }
        let line = exceedance_line("all".into(), &h, None);
        assert_eq!(
            line.segments[0],
            vec![
                (0.0, 1.0),
                (1.0, 0.8),
                (1.0, 0.8),
                (2.0, 0.6),
                (2.0, 0.6),
                (3.0, 0.2)
            ]
        );
        assert_eq!(exceedance_axis(5).range, (0.1, 1.0));
        assert_eq!(exceedance_axis(1_000).range, (1e-4, 1.0));
    }

    #[test]
    fn time_series_steps_break_at_empty_slots() {
        let series = Series {
            slot_ns: Nanos::from_secs(1),
            max_ns: vec![5_000, 0, 7_000, 9_000],
            count: vec![10, 0, 10, 10],
        };
        assert_eq!(
            steps(&series, 1, 1e9),
            vec![
                vec![(0.0, 5.0), (1.0, 5.0)],
                vec![(2.0, 7.0), (3.0, 7.0), (3.0, 9.0), (4.0, 9.0)],
            ]
        );
        assert_eq!(
            steps(&series, 2, 1e9),
            vec![vec![(0.0, 5.0), (2.0, 5.0), (2.0, 9.0), (4.0, 9.0)]]
        );
        assert_eq!(time_unit(Nanos::from_secs(600)).0, "s");
        assert_eq!(time_unit(Nanos::from_secs(601)).0, "min");
        assert_eq!(time_unit(Nanos::from_secs(3 * 86_400)).0, "h");
    }
}
