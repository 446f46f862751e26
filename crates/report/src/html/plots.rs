//! What the report plots, from a measurement's raw data: the latency histogram in the OSADL
//! look, the exceedance (survival) curve that makes tails comparable, the per-second maximum
//! over time, and, for several runs, their all-CPU exceedance curves on one chart.
//!
//! Histograms are re-binned from the model's log-linear buckets into equal bins of a round
//! width (1, 2 or 5 × 10^k us, at least 1 us, at most [`MAX_BINS`] bins), each bucket counted
//! in the bin holding its lowest value. Samples above the histogram's range are counted in the
//! exceedance curves (they exceed every latency drawn) and named in the histogram's caption.
//! Everything here is pure: data in, [`Plot`]s (SVG text) out.

use rtlab_model::measure::{MeasureRun, Series};
use rtlab_model::{Histogram, Nanos};

use super::chart::{Chart, Line, YScale};

/// Most bins a histogram or exceedance curve is drawn with.
const MAX_BINS: u64 = 400;
/// Most steps a max-over-time line is drawn with; longer runs merge neighbouring slots.
const MAX_STEPS: usize = 1000;

/// One plot of the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Plot {
    /// What it shows, as used in file names and anchors: `histogram`, `exceedance`,
    /// `max-over-time`, or `runs-exceedance` for the chart over several runs.
    pub(crate) kind: &'static str,
    /// Its heading.
    pub(crate) title: String,
    /// How to read it, and what it leaves out; one or two sentences.
    pub(crate) caption: String,
    /// The chart as a standalone SVG document.
    pub(crate) svg: String,
}

/// The plots of one run, in report order; a plot without data is left out (no samples: no
/// histogram; no per-second series: no max-over-time).
pub(super) fn run_plots(run: &MeasureRun, name: &str) -> Vec<Plot> {
    [
        histogram(run, name),
        exceedance(run, name),
        max_over_time(run, name),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The width of a bin, in ns, for latencies up to `max_ns`: the smallest of 1, 2, 5 × 10^k us
/// that needs at most [`MAX_BINS`] bins.
fn bin_width_ns(max_ns: u64) -> u64 {
    let mut decade = 1_000u64;
    loop {
        for step in [1, 2, 5] {
            let width = decade * step;
            if max_ns / width < MAX_BINS {
                return width;
            }
        }
        decade = decade.saturating_mul(10);
    }
}

/// Counts per bin of `width` ns, up to the last non-empty bin (empty for an empty histogram).
fn binned(histogram: &Histogram, width: u64) -> Vec<u64> {
    let mut bins: Vec<u64> = Vec::new();
    for (lo, _, count) in histogram.buckets() {
        let k = (lo / width) as usize;
        if bins.len() <= k {
            bins.resize(k + 1, 0);
        }
        bins[k] += count;
    }
    bins
}

/// Highest value any bucket of `histograms` can hold (0 when all are empty).
fn top_ns<'a>(histograms: impl IntoIterator<Item = &'a Histogram>) -> u64 {
    histograms
        .into_iter()
        .filter_map(|h| h.buckets().last().map(|(lo, width, _)| lo + width - 1))
        .max()
        .unwrap_or(0)
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1_000.0
}

/// `1 us`, `20 us`, `1000 us`.
fn width_text(width_ns: u64) -> String {
    format!("{} us", width_ns / 1_000)
}

/// The OSADL latency plot: samples per bin (log) against latency (linear), a line per CPU.
fn histogram(run: &MeasureRun, name: &str) -> Option<Plot> {
    let cpus: Vec<_> = run.cpus.iter().filter(|c| c.stats.count > 0).collect();
    let top = top_ns(cpus.iter().map(|c| &c.histogram));
    if cpus.iter().all(|c| c.histogram.buckets().next().is_none()) {
        return None;
    }
    let width = bin_width_ns(top);
    let mut lines = Vec::new();
    let mut highest = 1u64;
    let mut last_bin = 0usize;
    for c in &cpus {
        let bins = binned(&c.histogram, width);
        highest = highest.max(bins.iter().copied().max().unwrap_or(0));
        last_bin = last_bin.max(bins.len());
        // One empty bin past the last sample, so every line comes back to the baseline.
        let points = (0..=bins.len())
            .map(|k| {
                let count = bins.get(k).copied().unwrap_or(0);
                (us(k as u64 * width), count as f64)
            })
            .collect();
        lines.push(Line {
            label: format!("CPU {}", c.cpu),
            segments: vec![points],
        });
    }
    let above: u64 = cpus.iter().map(|c| c.histogram.above_range()).sum();
    let mut caption = format!(
        "Samples per {} bin on a logarithmic scale against latency, one line per CPU (the \
         OSADL latency plot); a line on the baseline is an empty bin.",
        width_text(width)
    );
    if above > 0 {
        caption.push_str(&format!(
            " {above} sample{} above the histogram's range (about 17.2 s) {} not drawn.",
            plural(above),
            if above == 1 { "is" } else { "are" }
        ));
    }
    let chart = Chart {
        title: format!("Latency histogram: {name}"),
        x_label: "latency (us)".to_string(),
        y_label: format!("samples per {} bin", width_text(width)),
        x_range: (0.0, us((last_bin as u64 + 1) * width)),
        y_range: (0.5, next_power_of_ten(highest as f64 * 1.5)),
        y_scale: YScale::Log,
        lines,
    };
    Some(Plot {
        kind: "histogram",
        title: "Latency histogram".to_string(),
        caption,
        svg: chart.to_svg(),
    })
}

/// Fraction of the samples at or above each bin edge, one line per histogram; ends one edge
/// past the last sample in range (where only above-range samples remain).
fn exceedance_line(label: String, histogram: &Histogram, width: u64) -> Line {
    let bins = binned(histogram, width);
    let n = histogram.count().max(1) as f64;
    let mut remaining = histogram.count();
    let mut points = Vec::with_capacity(bins.len() + 1);
    for (k, &count) in bins.iter().enumerate() {
        points.push((us(k as u64 * width), remaining as f64 / n));
        remaining -= count;
    }
    points.push((us(bins.len() as u64 * width), remaining as f64 / n));
    Line {
        label,
        segments: vec![points],
    }
}

/// The y range of exceedance charts over histograms of up to `most` samples: from a power of
/// ten below one sample's share (so a single sample stands clear of the baseline) to 1.
fn exceedance_range(most: u64) -> (f64, f64) {
    let floor = 10f64.powf((0.5 / most.max(1) as f64).log10().floor());
    (floor, 1.0)
}

/// The exceedance plot of one run: a line per CPU.
fn exceedance(run: &MeasureRun, name: &str) -> Option<Plot> {
    let cpus: Vec<_> = run.cpus.iter().filter(|c| c.stats.count > 0).collect();
    if cpus.is_empty() {
        return None;
    }
    let top = top_ns(cpus.iter().map(|c| &c.histogram));
    let width = bin_width_ns(top);
    let lines = cpus
        .iter()
        .map(|c| exceedance_line(format!("CPU {}", c.cpu), &c.histogram, width))
        .collect();
    let most = cpus.iter().map(|c| c.histogram.count()).max().unwrap_or(1);
    let chart = Chart {
        title: format!("Latency exceedance: {name}"),
        x_label: "latency (us)".to_string(),
        y_label: "fraction of samples at or above".to_string(),
        x_range: (0.0, us((top / width + 2) * width)),
        y_range: exceedance_range(most),
        y_scale: YScale::Log,
        lines,
    };
    Some(Plot {
        kind: "exceedance",
        title: "Latency exceedance".to_string(),
        caption: format!(
            "Fraction of each CPU's samples at or above a latency, on a logarithmic scale ({} \
             bins): where a line crosses 1e-3, one sample in a thousand was slower; the \
             further right a line reaches, the longer that CPU's tail. A line drops to the \
             baseline past its largest sample.",
            width_text(width)
        ),
        svg: chart.to_svg(),
    })
}

/// The all-CPU exceedance curves of several runs on one chart; `None` for fewer than two
/// runs or when none has samples.
pub(super) fn runs_exceedance(runs: &[(&str, &MeasureRun)]) -> Option<Plot> {
    let with_samples: Vec<_> = runs
        .iter()
        .filter(|(_, r)| r.all.histogram.count() > 0)
        .collect();
    if runs.len() < 2 || with_samples.is_empty() {
        return None;
    }
    let top = top_ns(with_samples.iter().map(|(_, r)| &r.all.histogram));
    let width = bin_width_ns(top);
    let lines = with_samples
        .iter()
        .map(|(name, r)| exceedance_line(name.to_string(), &r.all.histogram, width))
        .collect();
    let most = with_samples
        .iter()
        .map(|(_, r)| r.all.histogram.count())
        .max()
        .unwrap_or(1);
    let chart = Chart {
        title: "Latency exceedance, all CPUs of each run".to_string(),
        x_label: "latency (us)".to_string(),
        y_label: "fraction of samples at or above".to_string(),
        x_range: (0.0, us((top / width + 2) * width)),
        y_range: exceedance_range(most),
        y_scale: YScale::Log,
        lines,
    };
    Some(Plot {
        kind: "runs-exceedance",
        title: "Latency exceedance, all CPUs of each run".to_string(),
        caption: format!(
            "Every run's samples over all its CPUs: the fraction at or above each latency, on a \
             logarithmic scale ({} bins). A line further right has the longer tail.",
            width_text(width)
        ),
        svg: chart.to_svg(),
    })
}

/// How a time axis of `total` reads: seconds up to 10 minutes, minutes up to 10 hours,
/// hours beyond; returns the unit's name and its length in ns.
fn time_unit(total: Nanos) -> (&'static str, f64) {
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

/// The largest latency per second (per slot), a line per CPU.
fn max_over_time(run: &MeasureRun, name: &str) -> Option<Plot> {
    let cpus: Vec<_> = run
        .cpus
        .iter()
        .filter(|c| c.series.slot_ns.get() > 0 && c.series.count.iter().any(|&n| n > 0))
        .collect();
    if cpus.is_empty() {
        return None;
    }
    let slot = cpus[0].series.slot_ns;
    let slots = cpus
        .iter()
        .map(|c| c.series.max_ns.len())
        .max()
        .unwrap_or(1);
    let group = slots.div_ceil(MAX_STEPS).max(1);
    let total = Nanos(slot.get().saturating_mul(slots as u64));
    let (unit, unit_ns) = time_unit(total);
    let mut highest = 0u64;
    let lines = cpus
        .iter()
        .map(|c| {
            highest = highest.max(c.series.max_ns.iter().copied().max().unwrap_or(0));
            Line {
                label: format!("CPU {}", c.cpu),
                segments: steps(&c.series, group, unit_ns),
            }
        })
        .collect();
    let step = Nanos(slot.get().saturating_mul(group as u64));
    let mut caption = format!(
        "The largest latency in each {step} of the run, one line per CPU: a spike that recurs \
         with a period shows here although the histogram hides it. A gap is a stretch without \
         any sample."
    );
    if group > 1 {
        caption.push_str(&format!(" Each step merges {group} slots of {slot}."));
    }
    let chart = Chart {
        title: format!("Maximum latency over time: {name}"),
        x_label: format!("time since start ({unit})"),
        y_label: format!("largest latency per {step} (us)"),
        x_range: (0.0, total.get() as f64 / unit_ns),
        y_range: (0.0, (us(highest) * 1.1).max(1.0)),
        y_scale: YScale::Linear,
        lines,
    };
    Some(Plot {
        kind: "max-over-time",
        title: "Maximum latency over time".to_string(),
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
    fn bins_are_round_and_few() {
        assert_eq!(bin_width_ns(0), 1_000);
        assert_eq!(bin_width_ns(399_999), 1_000);
        assert_eq!(bin_width_ns(400_000), 2_000);
        assert_eq!(bin_width_ns(1_500_000), 5_000);
        assert_eq!(bin_width_ns(3_629_000), 10_000);
        assert_eq!(bin_width_ns(u64::MAX) % 1_000, 0);
        for max in [0, 5_000, 77_777, 3_000_000, 17_000_000_000] {
            assert!(max / bin_width_ns(max) < MAX_BINS, "{max}");
        }
    }

    #[test]
    fn binning_keeps_every_in_range_sample() {
        let mut h = Histogram::new();
        for v in [0, 999, 1_000, 1_500, 7_250, 7_999, 1_000_000_000_000_000] {
            h.record(v);
        }
        let bins = binned(&h, 1_000);
        assert_eq!(bins, vec![2, 2, 0, 0, 0, 0, 0, 2]);
        assert_eq!(bins.iter().sum::<u64>() + h.above_range(), h.count());
    }

    #[test]
    fn exceedance_falls_from_one_to_what_is_above_range() {
        let mut h = Histogram::new();
        for v in [500, 1_500, 2_500, 2_600, u64::MAX] {
            h.record(v);
        }
        let line = exceedance_line("all".into(), &h, 1_000);
        assert_eq!(
            line.segments[0],
            vec![(0.0, 1.0), (1.0, 0.8), (2.0, 0.6), (3.0, 0.2)]
        );
        assert_eq!(exceedance_range(5), (0.1, 1.0));
        assert_eq!(exceedance_range(1_000), (1e-4, 1.0));
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
