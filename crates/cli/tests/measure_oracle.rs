//! An oracle for every figure of a measured run (issue #45): `rtlab measure` replays latencies
//! drawn from known distributions on its scripted clock, and each figure of the document is
//! recomputed here from the drawn list alone (none of rtlab's code): count, minimum, maximum,
//! sum and sum of squares, mean and population standard deviation exactly; each percentile
//! against the nearest-rank sample and the bucket bound `docs/output-schemas.md` promises
//! (never below, at most one bucket width above); the worst samples with their periods; and
//! the per-second maxima. The table's and the CSV export's figures are checked against the
//! same truth, so a surface cannot round differently.

use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;

/// A small deterministic generator (xorshift64*), so the drawn lists are the same every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Latencies in ns from a named shape: every region of the histogram is visited (exact below
/// 2048 ns, fine to 2^20 ns, relative above), always below the 10-ms interval so no period is
/// overrun.
fn draw(shape: &str, n: usize, seed: u64) -> Vec<u64> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|_| {
            let u = rng.unit();
            let v = match shape {
                // Mostly 1-3 us with a log-uniform tail to 8 ms.
                "heavy" => {
                    if u < 0.9 {
                        1_000.0 + 2_000.0 * rng.unit()
                    } else {
                        (3_000f64.ln() + (8_000_000f64 / 3_000.0).ln() * rng.unit()).exp()
                    }
                }
                // Two modes: 20 us and 900 us (a cache-cold path), 2 % in the second.
                "bimodal" => {
                    if u < 0.98 {
                        19_000.0 + 2_000.0 * rng.unit()
                    } else {
                        880_000.0 + 40_000.0 * rng.unit()
                    }
                }
                // Bounded: uniform on [1500 ns, 2 ms].
                _ => 1_500.0 + 1_998_500.0 * u,
            };
            v.round() as u64
        })
        .collect()
}

/// How far above the true value a percentile may read: one bucket width of the scheme
/// (`log-linear-1024/2^34ns`): 1 ns below 2048 ns, 2^k/1024 ns in [2^k, 2^(k+1)).
fn bucket_width(v: u64) -> u64 {
    if v < 2048 {
        return 1;
    }
    let k = 63 - v.leading_zeros();
    (1u64 << k) / 1024
}

fn measure(dir: &Path, values: &[u64]) -> Value {
    let script: Vec<String> = values.iter().map(|v| format!("{v}ns")).collect();
    let out = dir.join("run.json");
    let run = Command::cargo_bin("rtlab")
        .unwrap()
        .env("NO_COLOR", "1")
        .args([
            "measure",
            "--cpus",
            "0",
            "-i",
            "10ms",
            "--spikes",
            "20",
            "--no-store",
            "-q",
        ])
        .arg("--cycles")
        .arg(values.len().to_string())
        .arg("--fake-clock")
        .arg(script.join(","))
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap()
}

/// The nearest-rank sample of `sorted` at `q` (rank ⌈q·n⌉).
fn nearest_rank(sorted: &[u64], q: f64) -> u64 {
    let n = sorted.len();
    let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
    sorted[rank - 1]
}

fn check(shape: &str, values: &[u64], doc: &Value) {
    let cpu = &doc["cpus"][0];
    let (stats, raw) = (&cpu["stats"], &cpu["raw"]);
    let n = values.len() as u64;
    let sum: u128 = values.iter().map(|v| u128::from(*v)).sum();
    let sum_sq: u128 = values.iter().map(|v| u128::from(*v) * u128::from(*v)).sum();
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let (min, max) = (sorted[0], sorted[sorted.len() - 1]);
    let int = |v: &Value| v.as_u64().unwrap_or_else(|| panic!("{shape}: {v}"));
    assert_eq!(int(&stats["count"]), n, "{shape}: count");
    assert_eq!(int(&raw["count"]), n, "{shape}: raw count");
    assert_eq!(int(&stats["min_ns"]), min, "{shape}: min");
    assert_eq!(int(&stats["max_ns"]), max, "{shape}: max");
    assert_eq!(u128::from(int(&raw["sum_ns"])), sum, "{shape}: sum");
    assert_eq!(
        raw["sum_sq_ns2"]
            .as_u64()
            .map(u128::from)
            .or_else(|| raw["sum_sq_ns2"].as_str().and_then(|s| s.parse().ok())),
        Some(sum_sq),
        "{shape}: sum of squares"
    );
    assert_eq!(int(&stats["overruns"]), 0, "{shape}: overruns");
    // Mean and population standard deviation, to float precision.
    let mean = sum as f64 / n as f64;
    let var = values
        .iter()
        .map(|v| (*v as f64 - mean).powi(2))
        .sum::<f64>()
        / n as f64;
    let got_mean = stats["mean_ns"].as_f64().unwrap();
    let got_sd = stats["stddev_ns"].as_f64().unwrap();
    assert!(
        (got_mean - mean).abs() <= 1e-6 * mean,
        "{shape}: mean {got_mean} vs {mean}"
    );
    assert!(
        (got_sd - var.sqrt()).abs() <= 1e-6 * var.sqrt().max(1.0),
        "{shape}: stddev {got_sd} vs {}",
        var.sqrt()
    );
    for (key, q) in [
        ("p50_ns", 0.5),
        ("p90_ns", 0.9),
        ("p99_ns", 0.99),
        ("p99_9_ns", 0.999),
        ("p99_99_ns", 0.9999),
        ("p99_999_ns", 0.99999),
    ] {
        let truth = nearest_rank(&sorted, q);
        let got = int(&stats[key]);
        assert!(
            truth <= got && got < truth + bucket_width(truth) && got <= max,
            "{shape}: {key} {got} for the true {truth} (bucket width {})",
            bucket_width(truth)
        );
    }
    check_spikes(shape, values, cpu);
    check_series(shape, values, cpu);
}

/// The worst samples, worst first, each at its own period.
fn check_spikes(shape: &str, values: &[u64], cpu: &Value) {
    let spikes = cpu["spikes"].as_array().unwrap();
    assert_eq!(spikes.len(), 20, "{shape}: --spikes 20");
    let mut worst = values.to_vec();
    worst.sort_unstable_by(|a, b| b.cmp(a));
    for (i, s) in spikes.iter().enumerate() {
        let latency = s["latency_ns"].as_u64().unwrap();
        let cycle = s["cycle"].as_u64().unwrap() as usize;
        assert_eq!(latency, worst[i], "{shape}: spike {i}");
        assert_eq!(
            values[cycle], latency,
            "{shape}: spike {i} at cycle {cycle}"
        );
        assert_eq!(
            s["at_ns"].as_u64().unwrap(),
            cycle as u64 * 10_000_000,
            "{shape}: spike {i}'s deadline"
        );
    }
}

/// One slot per second: the maximum and count of the periods whose deadline falls in it.
fn check_series(shape: &str, values: &[u64], cpu: &Value) {
    let series = &cpu["series"];
    assert_eq!(series["slot_ns"], 1_000_000_000u64, "{shape}");
    let per_slot = 100; // 10-ms periods
    let want_max: Vec<u64> = values
        .chunks(per_slot)
        .map(|c| *c.iter().max().unwrap())
        .collect();
    let want_count: Vec<u64> = values.chunks(per_slot).map(|c| c.len() as u64).collect();
    let got = |k: &str| -> Vec<u64> {
        series[k]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect()
    };
    assert_eq!(got("max_ns"), want_max, "{shape}: per-second maxima");
    assert_eq!(got("count"), want_count, "{shape}: per-second counts");
}

/// The CSV export's figures are the document's: integers exactly, the mean and standard
/// deviation rounded to the nanosecond.
fn check_csv(shape: &str, dir: &Path, doc: &Value) {
    let csv = Command::cargo_bin("rtlab")
        .unwrap()
        .args(["export", "--format", "csv"])
        .arg(dir.join("run.json"))
        .output()
        .unwrap();
    let text = String::from_utf8(csv.stdout).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    let stats = &doc["cpus"][0]["stats"];
    let column = |name: &str| -> f64 {
        let i = header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("{shape}: no CSV column {name} in {header:?}"));
        row[i].parse().unwrap()
    };
    assert_eq!(
        column("samples"),
        stats["count"].as_f64().unwrap(),
        "{shape}"
    );
    for key in [
        "min_ns",
        "p50_ns",
        "p90_ns",
        "p99_ns",
        "p99_9_ns",
        "p99_99_ns",
        "p99_999_ns",
        "max_ns",
    ] {
        assert_eq!(
            column(key),
            stats[key].as_f64().unwrap(),
            "{shape}: csv {key}"
        );
    }
    for key in ["mean_ns", "stddev_ns"] {
        let want = stats[key].as_f64().unwrap();
        assert!(
            (column(key) - want).abs() <= 0.5,
            "{shape}: csv {key} {} vs {want}",
            column(key)
        );
    }
}

/// `rtlab show`'s table row for CPU 0: each figure the document's, in microseconds to 0.1.
fn check_table(shape: &str, dir: &Path, doc: &Value) {
    let show = Command::cargo_bin("rtlab")
        .unwrap()
        .env("NO_COLOR", "1")
        .arg("show")
        .arg(dir.join("run.json"))
        .output()
        .unwrap();
    let text = String::from_utf8(show.stdout).unwrap();
    let header: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with("CPU "))
        .unwrap_or_else(|| panic!("{shape}: no table in {text}"))
        .split_whitespace()
        .collect();
    let row: Vec<&str> = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some("0"))
        .unwrap()
        .split_whitespace()
        .collect();
    let stats = &doc["cpus"][0]["stats"];
    for (column, key) in [
        ("min", "min_ns"),
        ("avg", "mean_ns"),
        ("stddev", "stddev_ns"),
        ("p50", "p50_ns"),
        ("p90", "p90_ns"),
        ("p99", "p99_ns"),
        ("p99.9", "p99_9_ns"),
        ("p99.99", "p99_99_ns"),
        ("p99.999", "p99_999_ns"),
        ("max", "max_ns"),
    ] {
        let i = header
            .iter()
            .position(|h| *h == column)
            .unwrap_or_else(|| panic!("{shape}: no column {column} in {header:?}"));
        let shown: f64 = row[i].parse().unwrap();
        let us = stats[key].as_f64().unwrap() / 1000.0;
        assert!(
            (shown - us).abs() <= 0.05 + 1e-9,
            "{shape}: the table's {column} {shown} vs the document's {us} us"
        );
    }
}

#[test]
fn every_figure_of_a_measured_run_is_the_drawn_samples() {
    for (shape, seed) in [("heavy", 7), ("bimodal", 11), ("bounded", 13)] {
        let dir = tempfile::tempdir().unwrap();
        // 4000 periods of 10 ms: 40 per-second slots, p99.99 and beyond at the tail's edge.
        let values = draw(shape, 4000, seed);
        let doc = measure(dir.path(), &values);
        check(shape, &values, &doc);
        check_csv(shape, dir.path(), &doc);
        check_table(shape, dir.path(), &doc);
    }
}

#[test]
fn the_bucket_bound_is_the_documented_one() {
    assert_eq!(bucket_width(2047), 1);
    assert_eq!(bucket_width(2048), 2);
    assert_eq!(bucket_width((1 << 20) - 1), 512);
    assert_eq!(bucket_width(1 << 20), 1024);
    // 0.098 % above 2^20 ns, as the schema says.
    assert!(bucket_width(5_000_000) as f64 / 5_000_000.0 <= 0.00098);
}
