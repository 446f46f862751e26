//! Oracles for the figures of imported histograms (issue #45): every cyclictest and rtla
//! histogram in `fixtures/imports` is recounted here from its rows alone, with none of the
//! importers' code, and so are histograms generated from known samples. The mean and standard
//! deviation are the rows' own moments wherever the rows hold every sample (the tools' printed
//! averages are truncated), and each percentile is the nearest-rank sample at the tool's
//! resolution, never a fraction finer than the data.

use model::measure::MeasureRun;
use model::stats::LatencyStats;
use proptest::prelude::*;

use super::tests::{fixture, when};
use super::*;

/// One thread's (or CPU's) column: its rows as (value in units, samples), and the samples the
/// tool left out of them.
#[derive(Debug, Default)]
struct Column {
    rows: Vec<(u64, u64)>,
    over: u64,
}

impl Column {
    fn n(&self) -> u64 {
        self.rows.iter().map(|r| r.1).sum()
    }

    /// Mean and population standard deviation of the rows, in units.
    fn moments(&self) -> (f64, f64) {
        let n = self.n() as f64;
        let mean = self
            .rows
            .iter()
            .map(|&(v, c)| v as f64 * c as f64)
            .sum::<f64>()
            / n;
        let var = self
            .rows
            .iter()
            .map(|&(v, c)| (v as f64 - mean).powi(2) * c as f64)
            .sum::<f64>()
            / n;
        (mean, var.sqrt())
    }

    /// The nearest-rank quantile `q` over every sample: `None` where it falls among those
    /// left out of the rows (above them).
    fn nearest_rank(&self, q: f64) -> Option<u64> {
        let total = self.n() + self.over;
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for &(v, c) in &self.rows {
            seen += c;
            if seen >= rank {
                return Some(v);
            }
        }
        None
    }
}

fn numbers(s: &str) -> Vec<u64> {
    s.split_whitespace()
        .filter_map(|t| t.parse().ok())
        .collect()
}

/// cyclictest -h's rows (`bucket count count ...`) and overflows, one column per thread (a
/// histofall column, the threads' sum, is left out: the footer's averages count threads).
fn cyclictest_columns(text: &str) -> Vec<Column> {
    let footer = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(numbers)
            .unwrap_or_default()
    };
    let threads = [
        footer("# Avg Latencies:"),
        footer("# Min Latencies:"),
        footer("# Total:"),
    ]
    .into_iter()
    .find(|f| !f.is_empty())
    .map_or(0, |f| f.len());
    let mut columns: Vec<Column> = (0..threads).map(|_| Column::default()).collect();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let n = numbers(line);
        if n.len() < 2 || line.split_whitespace().count() != n.len() {
            continue;
        }
        for (t, c) in columns.iter_mut().enumerate() {
            if let Some(&count) = n.get(1 + t).filter(|&&c| c > 0) {
                c.rows.push((n[0], count));
            }
        }
    }
    for (c, over) in columns.iter_mut().zip(footer("# Histogram Overflows:")) {
        c.over = over;
    }
    columns
}

/// An rtla histogram's columns whose header starts with `prefix` (`Thr-`, `CPU-`), with
/// their `over:` counts.
fn rtla_columns(text: &str, prefix: &str) -> Vec<Column> {
    let mut lines = text.lines().skip_while(|l| !l.starts_with("Index"));
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    let picked: Vec<usize> = (1..header.len())
        .filter(|&i| header[i].starts_with(prefix))
        .collect();
    let mut columns: Vec<Column> = picked.iter().map(|_| Column::default()).collect();
    for line in lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(first) = words.first() else { continue };
        let values: Vec<u64> = words[1..].iter().filter_map(|w| w.parse().ok()).collect();
        if *first == "over:" {
            for (c, &i) in columns.iter_mut().zip(&picked) {
                c.over = values[i - 1];
            }
        } else if let Ok(v) = first.parse::<u64>() {
            for (c, &i) in columns.iter_mut().zip(&picked) {
                if values[i - 1] > 0 {
                    c.rows.push((v, values[i - 1]));
                }
            }
        }
    }
    columns
}

/// The run's figures for one column against the oracle's, `unit_ns` per unit. `exact`: the
/// rows hold each sample at its value (one bucket per unit), so the moments must be theirs.
fn check(what: &str, stats: &LatencyStats, col: &Column, unit_ns: u64, exact: bool) {
    assert_eq!(stats.count, col.n() + col.over, "{what}: count");
    if col.n() == 0 {
        return;
    }
    let (mean, std) = col.moments();
    if col.over == 0 {
        let sd = stats.stddev_ns.expect("stddev") / unit_ns as f64;
        assert!(
            (sd - std).abs() < 1e-6 * std.max(1.0),
            "{what}: stddev {sd} against the rows' {std}"
        );
        if exact {
            let m = stats.mean_ns.expect("mean") / unit_ns as f64;
            assert!(
                (m - mean).abs() < 1e-6 * mean.max(1.0),
                "{what}: mean {m} against the rows' {mean}"
            );
        }
    }
    let quantiles = [
        (0.5, stats.p50_ns),
        (0.9, stats.p90_ns),
        (0.99, stats.p99_ns),
        (0.999, stats.p99_9_ns),
        (0.9999, stats.p99_99_ns),
        (0.99999, stats.p99_999_ns),
    ];
    for (q, got) in quantiles {
        let got = got.expect("percentile");
        assert_eq!(
            got % unit_ns,
            0,
            "{what}: p{} {got} ns is finer than the data",
            q * 100.0
        );
        let Some(want) = col.nearest_rank(q) else {
            continue;
        };
        // One bucket of rtlab's histogram holds one value per unit below 1 ms; above it a
        // bucket is at most 0.1 % of its value wide.
        let want_ns = want * unit_ns;
        let slack = if want_ns < 1 << 20 {
            0
        } else {
            want_ns / 1000 + unit_ns
        };
        assert!(
            got.abs_diff(want_ns) <= slack,
            "{what}: p{} {got} ns against the rows' {want_ns} ns",
            q * 100.0
        );
    }
}

const CYCLICTEST: [&str; 7] = [
    "analisi_imx8mp_baseline.hist",
    "local_cyclictest_2t_H100.hist",
    "local_cyclictest_b30_h100.txt",
    "local_cyclictest_h200_stdout.txt",
    "releases/cyclictest_0.28_hist.txt",
    "releases/cyclictest_0.56_hist.txt",
    "releases/cyclictest_2.7_hist.txt",
];

#[test]
fn cyclictest_histograms_are_recounted_from_their_rows() {
    for name in CYCLICTEST {
        let text = fixture(name);
        let run = import(name, &text, when()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let columns = cyclictest_columns(&text);
        assert_eq!(columns.len(), run.cpus.len(), "{name}");
        for (c, col) in run.cpus.iter().zip(&columns) {
            check(
                &format!("{name} thread {}", c.cpu),
                &c.stats,
                col,
                1000,
                true,
            );
        }
    }
}

#[test]
fn rtla_histograms_are_recounted_from_their_rows() {
    for (name, prefix) in [
        ("kdoc_timerlat_hist_5cpu_deadline.txt", "Thr-"),
        ("kdoc_osnoise_hist_9cpu.txt", "CPU-"),
    ] {
        let text = fixture(name);
        let run = import(name, &text, when()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let columns = rtla_columns(&text, prefix);
        assert_eq!(columns.len(), run.cpus.len(), "{name}");
        let one_unit = columns
            .iter()
            .any(|c| c.rows.windows(2).any(|w| w[1].0 - w[0].0 == 1));
        for (c, col) in run.cpus.iter().zip(&columns) {
            check(
                &format!("{name} cpu {}", c.cpu),
                &c.stats,
                col,
                1000,
                one_unit,
            );
        }
    }
}

/// cyclictest -h's output for `threads` (whole microseconds each), with its footer's average
/// truncated as cyclictest prints it.
fn cyclictest_output(threads: &[Vec<u64>]) -> String {
    let top = threads.iter().flatten().copied().max().unwrap_or(0);
    let mut out = String::from("# /dev/cpu_dma_latency set to 0us\n# Histogram\n");
    for v in 0..=top {
        let counts: Vec<String> = threads
            .iter()
            .map(|t| format!("{:06}", t.iter().filter(|&&s| s == v).count()))
            .collect();
        if counts.iter().any(|c| c != "000000") {
            out += &format!("{v:06} {}\n", counts.join("\t"));
        }
    }
    let footer = |name: &str, f: &dyn Fn(&Vec<u64>) -> u64| {
        let values: Vec<String> = threads.iter().map(|t| format!("{:05}", f(t))).collect();
        format!("# {name}: {}\n", values.join(" "))
    };
    out += &footer("Min Latencies", &|t| *t.iter().min().unwrap());
    out += &footer("Avg Latencies", &|t| t.iter().sum::<u64>() / t.len() as u64);
    out += &footer("Max Latencies", &|t| *t.iter().max().unwrap());
    out += &footer("Histogram Overflows", &|_| 0);
    out += "# Histogram Overflow at cycle number:\n";
    for t in 0..threads.len() {
        out += &format!("# Thread {t}:\n");
    }
    out
}

fn population(samples: &[u64]) -> (f64, f64) {
    let n = samples.len() as f64;
    let mean = samples.iter().sum::<u64>() as f64 / n;
    let var = samples
        .iter()
        .map(|&s| (s as f64 - mean).powi(2))
        .sum::<f64>()
        / n;
    (mean, var.sqrt())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Generated histograms with known samples: the figures are the samples' own.
    #[test]
    fn generated_histograms_give_their_samples_figures(
        threads in prop::collection::vec(prop::collection::vec(0u64..1500, 1..300), 1..4)
    ) {
        let text = cyclictest_output(&threads);
        let run: MeasureRun = import("gen.txt", &text, when()).unwrap();
        prop_assert_eq!(run.cpus.len(), threads.len());
        for (c, samples) in run.cpus.iter().zip(&threads) {
            let (mean, std) = population(samples);
            let s = &c.stats;
            prop_assert!((s.mean_ns.unwrap() / 1000.0 - mean).abs() < 1e-6 * mean.max(1.0));
            prop_assert!((s.stddev_ns.unwrap() / 1000.0 - std).abs() < 1e-6 * std.max(1.0));
            let mut sorted = samples.clone();
            sorted.sort_unstable();
            for (q, got) in [(0.5, s.p50_ns), (0.99, s.p99_ns), (0.999, s.p99_9_ns)] {
                let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
                let want = sorted[rank - 1] * 1000;
                let got = got.unwrap();
                let slack = if want < 1 << 20 { 0 } else { want / 1000 + 1000 };
                prop_assert!(got.abs_diff(want) <= slack, "p{} {} against {}", q, got, want);
            }
        }
    }
}

/// What a file states of its run is shown, and what it does not is "not stated", never a
/// default passed off as a fact (issue #45): cyclictest's `-v` stream states its interval in
/// its `Thread N Interval:` lines, its summary lines state priority and interval, a histogram
/// alone states neither, and no cyclictest text states mlock.
#[test]
fn settings_a_file_does_not_state_are_not_stated() {
    use model::imported::Setting::{DmaLatency, Interval, Mlock, Policy};
    let stated = |run: &MeasureRun| -> Vec<model::imported::Setting> {
        model::imported::Setting::ALL
            .into_iter()
            .filter(|s| !run.states(*s))
            .collect()
    };
    let verbose = "# /dev/cpu_dma_latency set to 0us\nThread 0 Interval: 1500\nThread 1 Interval: 2000\n\
                   0:0:5\n1:0:7\n0:1:6\n1:1:8\n";
    let run = import("v.txt", verbose, when()).unwrap();
    // cyclictest prints each thread's interval plus the distance to the next (500 us here):
    // thread 0 measured every 1000 us.
    assert_eq!(run.params.interval_ns.get(), 1_000_000);
    assert_eq!(stated(&run), vec![Policy, Mlock]);
    // Without the lines the interval is not stated, and nothing else changes.
    let bare = "0:0:5\n1:0:7\n0:1:6\n1:1:8\n";
    let run = import("v.txt", bare, when()).unwrap();
    assert_eq!(stated(&run), vec![Policy, Interval, Mlock, DmaLatency]);
    let hist = import("h.txt", &cyclictest_output(&[vec![5, 6, 7]]), when()).unwrap();
    // The generated output has cyclictest's dma latency line.
    assert_eq!(stated(&hist), vec![Policy, Interval, Mlock]);
    let summary = fixture("local_cyclictest_summary_q.txt");
    let run = import("s.txt", &summary, when()).unwrap();
    assert_eq!(run.params.interval_ns.get(), 500_000);
    assert_eq!(stated(&run), vec![Mlock]);
    // A cyclictest JSON document's command line states every setting.
    assert!(stated(&read_json()).is_empty());
}

fn read_json() -> MeasureRun {
    let name = "analisi_imx8mp_baseline.json";
    import(name, &fixture(name), when()).unwrap()
}
