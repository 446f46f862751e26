//! `rtlab worst` graded against tails known by construction, through the path people take with
//! the longest records: a cyclictest `-v` log (`rtlab import`, then `rtlab worst`). Each log is
//! drawn from a latency distribution whose once-per-day level is known in closed form: light
//! (exponential), heavy (a GPD tail with shape 0.2) and bounded (shape -0.3) tails, and a
//! regime change halfway. The first three must be trusted with the truth inside the 95 %
//! interval in all seeds but one; the change must not be trusted, and every headline must name
//! what to expect or how much longer to measure. (With the block-maxima fit keeping its trust
//! when peaks over threshold disagree with it: at 20 minutes 12 of the 12 light and heavy logs
//! were trusted, and at five minutes at 1 ms 8 of 8; every interval held the truth. Before,
//! five-minute logs were trusted in half.)

mod common;

use std::path::Path;

use serde_json::Value;
use testkit::SplitMix;

/// How long a log is and how often its thread woke up.
#[derive(Clone, Copy)]
struct Length {
    seconds: u64,
    interval_us: u64,
}

/// Twenty minutes at a 10-ms interval (100 samples a second): 1200 per-second maxima, 120
/// blocks of 10 s, a short run.
const TWENTY_MIN: Length = Length {
    seconds: 1200,
    interval_us: 10_000,
};

/// Five minutes at cyclictest's 1-ms interval: 300 per-second maxima.
const FIVE_MIN: Length = Length {
    seconds: 300,
    interval_us: 1000,
};

impl Length {
    /// Samples per day: the once-per-day level is exceeded by one sample in this many.
    fn per_day(self) -> f64 {
        86_400.0 * 1e6 / self.interval_us as f64
    }
}
/// Seeds per tail.
const SEEDS: u64 = 4;

/// A latency distribution: a floor plus a generalized Pareto excess (shape 0: exponential).
#[derive(Clone, Copy)]
struct Tail {
    floor_us: f64,
    scale_us: f64,
    shape: f64,
}

impl Tail {
    /// The value exceeded with probability `p`.
    fn quantile_above(self, p: f64) -> f64 {
        let excess = if self.shape.abs() < 1e-12 {
            -self.scale_us * p.ln()
        } else {
            self.scale_us / self.shape * (p.powf(-self.shape) - 1.0)
        };
        self.floor_us + excess
    }

    /// The true once-per-day level at the twenty-minute logs' interval, in nanoseconds.
    fn day_ns(self) -> f64 {
        self.day_ns_at(TWENTY_MIN)
    }

    /// The true once-per-day level of a thread sampling as `len` does, in nanoseconds.
    fn day_ns_at(self, len: Length) -> f64 {
        self.quantile_above(1.0 / len.per_day()) * 1e3
    }
}

const LIGHT: Tail = Tail {
    floor_us: 20.0,
    scale_us: 5.0,
    shape: 0.0,
};
const HEAVY: Tail = Tail {
    floor_us: 20.0,
    scale_us: 3.0,
    shape: 0.2,
};
const BOUNDED: Tail = Tail {
    floor_us: 20.0,
    scale_us: 10.0,
    shape: -0.3,
};

/// A cyclictest 2.x `-v -i 10000` log of one thread: its header lines, then one line per
/// cycle, the latency drawn from `first` for the first half and `second` after.
fn log(seed: u64, first: Tail, second: Tail) -> String {
    stream(seed, |rng, late| {
        let tail = if late { second } else { first };
        tail.quantile_above(rng.open01())
    })
}

/// The log of latencies `draw(rng, in_the_second_half)`, in microseconds.
fn stream(seed: u64, draw: impl Fn(&mut SplitMix, bool) -> f64) -> String {
    stream_in(seed, TWENTY_MIN, 1.0, draw)
}

/// The log of latencies `draw(rng, in_the_second_half)` (microseconds), printed in units of
/// `1 / per_us` microseconds: 1 as cyclictest prints by default, 1000 with -N.
fn stream_in(
    seed: u64,
    len: Length,
    per_us: f64,
    draw: impl Fn(&mut SplitMix, bool) -> f64,
) -> String {
    let mut rng = SplitMix(seed);
    let cycles = len.seconds * 1_000_000 / len.interval_us;
    let mut out = format!(
        "# /dev/cpu_dma_latency set to 0us\nThread 0 using cpu 1.\nThread 0 Interval: {}\n",
        len.interval_us + 500
    );
    for c in 0..cycles {
        // cyclictest prints whole units, rounded down.
        let v = (draw(&mut rng, c >= cycles / 2) * per_us).floor() as u64;
        out += &format!("{:8}:{c:8}:{v:8}\n", 0);
    }
    out
}

/// `rtlab import` of the log into a store of its own, then `rtlab worst last --format json`:
/// the all-CPUs entry.
fn worst(dir: &Path, name: &str, text: &str) -> Value {
    worst_all(dir, name, text).swap_remove(0)
}

/// As [`worst`], every entry: all CPUs first, then each CPU.
fn worst_all(dir: &Path, name: &str, text: &str) -> Vec<Value> {
    let file = dir.join(format!("{name}.txt"));
    std::fs::write(&file, text).unwrap();
    let db = dir.join(format!("{name}.sqlite"));
    let out = common::rtlab_with_store(&db)
        .args(["import", "--host", "synthetic"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = common::rtlab_with_store(&db)
        .args(["worst", "last", "--format", "json"])
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["groups"][0]["cpus"].as_array().unwrap().clone()
}

/// A cyclictest 2.x `-v -t2 -a 2,3 -i 10000` log of twenty minutes: thread 0 every 10 ms on
/// CPU 2, thread 1 every 10.5 ms (cyclictest's default distance of 500 us) on CPU 3, both drawn
/// from `tail`, interleaved in time as cyclictest prints them.
fn two_threads(seed: u64, tail: Tail) -> (String, [u64; 2]) {
    let mut rng = SplitMix(seed);
    let intervals = [10_000u64, 10_500];
    let mut out = String::from("# /dev/cpu_dma_latency set to 0us\n");
    for (t, i) in intervals.iter().enumerate() {
        out += &format!(
            "Thread {t} using cpu {}.\nThread {t} Interval: {}\n",
            t + 2,
            i + 500
        );
    }
    let cycles = intervals.map(|i| TWENTY_MIN.seconds * 1_000_000 / i);
    let mut lines: Vec<(u64, usize, u64)> = Vec::new();
    for t in 0..2 {
        lines.extend((0..cycles[t]).map(|c| (c * intervals[t], t, c)));
    }
    lines.sort();
    for (_, t, c) in lines {
        let v = tail.quantile_above(rng.open01()).floor() as u64;
        out += &format!("{t:8}:{c:8}:{v:8}\n");
    }
    (out, cycles)
}

/// The trusted fit's once-per-day estimate, if the verdict trusts one and the level is
/// supported: (value, lower, upper) in ns.
fn day(cpu: &Value) -> Option<(f64, f64, f64)> {
    let key = match cpu["verdict"]["method"].as_str()? {
        "block_maxima" => "block_maxima",
        _ => "peaks_over_threshold",
    };
    let level = cpu[key]["return_levels"]
        .as_array()?
        .iter()
        .find(|r| r["per"] == "day")?;
    if level.get("withheld").is_some() {
        return None;
    }
    let e = &level["level_ns"];
    Some((
        e["value"].as_f64()?,
        e["lower"].as_f64().unwrap_or(0.0),
        e["upper"].as_f64().unwrap_or(f64::INFINITY),
    ))
}

/// Runs every seed of one tail: how many were trusted with a supported day level, and how many
/// of those held the truth inside the interval.
fn grade(tail: Tail, name: &str, len: Length) -> (u64, u64, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let truth = tail.day_ns_at(len);
    let (mut trusted, mut covered, mut seen) = (0, 0, Vec::new());
    for seed in 0..SEEDS {
        let cpu = worst(
            dir.path(),
            &format!("{name}{seed}"),
            &stream_in(seed * 7 + 1, len, 1.0, |rng, _| {
                tail.quantile_above(rng.open01())
            }),
        );
        let headline = cpu["verdict"]["headline"].as_str().unwrap().to_string();
        assert!(
            headline.starts_with("expect up to ") || headline.starts_with("not enough evidence"),
            "{name} seed {seed}: {headline}"
        );
        if let Some((_, lo, hi)) = day(&cpu) {
            trusted += 1;
            if lo <= truth && truth <= hi {
                covered += 1;
            }
            assert!(
                headline.starts_with("expect up to "),
                "{name} seed {seed}: {headline}"
            );
        }
        seen.push(headline);
    }
    (trusted, covered, seen)
}

#[test]
fn known_tails_imported_from_cyclictest_logs_are_estimated_inside_their_intervals() {
    for (tail, name) in [(LIGHT, "light"), (HEAVY, "heavy"), (BOUNDED, "bounded")] {
        let (trusted, covered, seen) = grade(tail, name, TWENTY_MIN);
        eprintln!("{name}: truth {:.1} us: {seen:#?}", tail.day_ns() / 1e3);
        // Twenty minutes of a clean tail: trusted in all seeds but one (the checks run at 1 %
        // each, and the two methods must agree on the shape; one that is not says how much
        // longer to measure).
        assert!(
            trusted + 1 >= SEEDS,
            "{name}: trusted in {trusted} of {SEEDS}: {seen:?}"
        );
        // 95 % intervals: all but one of the trusted seeds hold the truth.
        assert!(
            covered + 1 >= trusted,
            "{name}: truth {:.1} us inside {covered} of {trusted} intervals: {seen:?}",
            tail.day_ns() / 1e3
        );
    }
}

#[test]
fn five_minute_logs_at_cyclictests_default_interval_are_estimated_too() {
    // Five minutes at 1 ms, what a person runs first. Before peaks over threshold stopped
    // taking the block-maxima fit's trust with it when their shapes disagreed, half of these
    // were untrusted. Tried by hand on seeds 1 to 8 of each: 15 of 16 trusted (one light log's
    // largest maxima read as a second cause), and all 15 intervals held the truth.
    for (tail, name) in [(LIGHT, "light5"), (HEAVY, "heavy5")] {
        let (trusted, covered, seen) = grade(tail, name, FIVE_MIN);
        let truth = tail.day_ns_at(FIVE_MIN) / 1e3;
        eprintln!("{name}: truth {truth:.1} us: {seen:#?}");
        assert!(
            trusted + 1 >= SEEDS,
            "{name}: trusted in {trusted} of {SEEDS}: {seen:#?}"
        );
        assert!(
            covered + 1 >= trusted,
            "{name}: truth {truth:.1} us inside {covered} of {trusted} intervals: {seen:#?}"
        );
    }
}

#[test]
fn each_thread_of_a_two_thread_log_and_their_union_are_estimated() {
    // The truth of each thread is its own tail at its own rate; of all CPUs together, a level
    // either thread exceeds once a day between them.
    let dir = tempfile::tempdir().unwrap();
    let (mut trusted, mut covered, mut seen) = (0, 0, Vec::new());
    for seed in [3, 11] {
        let (text, cycles) = two_threads(seed, HEAVY);
        let entries = worst_all(dir.path(), &format!("two{seed}"), &text);
        assert_eq!(entries.len(), 3, "all CPUs, CPU 2, CPU 3");
        let per_day = |t: usize| cycles[t] as f64 * 86_400.0 / TWENTY_MIN.seconds as f64;
        let truths = [
            HEAVY.quantile_above(1.0 / (per_day(0) + per_day(1))),
            HEAVY.quantile_above(1.0 / per_day(0)),
            HEAVY.quantile_above(1.0 / per_day(1)),
        ];
        for (entry, truth_us) in entries.iter().zip(truths) {
            let who = entry["cpu"]
                .as_u64()
                .map_or("all".to_string(), |c| c.to_string());
            if let Some((v, lo, hi)) = day(entry) {
                trusted += 1;
                covered += u64::from(lo <= truth_us * 1e3 && truth_us * 1e3 <= hi);
                seen.push(format!(
                    "{who}: {v:.0} [{lo:.0}, {hi:.0}] truth {:.0}",
                    truth_us * 1e3
                ));
            } else {
                seen.push(format!("{who}: {}", entry["verdict"]["headline"]));
            }
        }
        assert_eq!(entries[1]["cpu"], 2, "thread 0 ran on CPU 2");
    }
    eprintln!("{seen:#?}");
    assert!(trusted >= 5, "trusted {trusted} of 6: {seen:#?}");
    assert!(
        covered + 1 >= trusted,
        "{covered} of {trusted} covered: {seen:#?}"
    );
}

#[test]
fn a_nanosecond_log_is_estimated_as_its_microsecond_twin() {
    // cyclictest -N prints nanoseconds and says so nowhere: read as microseconds, the level
    // would be a thousand times the truth.
    let dir = tempfile::tempdir().unwrap();
    let (mut trusted, mut seen) = (0, Vec::new());
    for (tail, name) in [(LIGHT, "light"), (HEAVY, "heavy"), (BOUNDED, "bounded")] {
        let text = stream_in(5, TWENTY_MIN, 1000.0, |rng, _| {
            tail.quantile_above(rng.open01())
        });
        let cpu = worst(dir.path(), &format!("ns-{name}"), &text);
        let truth = tail.day_ns();
        if let Some((_, lo, hi)) = day(&cpu) {
            trusted += 1;
            assert!(
                lo <= truth && truth <= hi,
                "{name}: {truth} outside [{lo}, {hi}]"
            );
        }
        seen.push(cpu["verdict"]["headline"].as_str().unwrap().to_string());
    }
    assert!(trusted >= 2, "trusted {trusted} of 3: {seen:#?}");
}

#[test]
fn a_change_halfway_is_not_trusted_and_says_how_long_to_measure() {
    let dir = tempfile::tempdir().unwrap();
    let heavier = Tail {
        floor_us: 40.0,
        scale_us: 10.0,
        shape: 0.0,
    };
    for seed in 0..2 {
        let cpu = worst(
            dir.path(),
            &format!("change{seed}"),
            &log(seed + 100, LIGHT, heavier),
        );
        assert_eq!(cpu["verdict"]["trusted"], false, "seed {seed}: {cpu:#}");
        let headline = cpu["verdict"]["headline"].as_str().unwrap();
        assert!(
            headline.starts_with("not enough evidence: the conditions changed during the run")
                && headline.contains("measure about ")
                && headline.contains(" more under the same load"),
            "seed {seed}: {headline}"
        );
        // An untrusted fit gives no figure: each of its levels says why not.
        let mut levels = 0;
        for method in ["block_maxima", "peaks_over_threshold"] {
            for level in cpu[method]["return_levels"]
                .as_array()
                .into_iter()
                .flatten()
            {
                levels += 1;
                assert!(
                    level["level_ns"].is_null() || level["withheld"].is_string(),
                    "seed {seed}: {method} printed {level} from an untrusted fit"
                );
            }
        }
        assert!(levels > 0, "seed {seed}: no fit was made: {cpu:#}");
    }
}

#[test]
fn the_truths_are_what_the_tails_say() {
    // Light: 20 + 5 ln(8.64e6) us; bounded: below its end, 20 + 10 / 0.3 us.
    assert!((LIGHT.day_ns() / 1e3 - (20.0 + 5.0 * TWENTY_MIN.per_day().ln())).abs() < 1e-9);
    assert!(BOUNDED.day_ns() / 1e3 < 20.0 + 10.0 / 0.3);
    assert!(HEAVY.day_ns() > LIGHT.day_ns());
}

/// A rare second cause above a light tail: before the `top-follows` check, a trusted fit read
/// its four wake-ups as a heavy tail and put its whole interval above the truth (seed 0:
/// 941.7 us to 88.18 ms against 683.1 us). Now a figure given must hold the truth, or the
/// headline says the largest values come from a second cause and how long to measure.
#[test]
fn a_rare_second_mode_is_found_or_estimated_inside_its_interval() {
    // The light tail, and once in 30,000 cycles (four times in a log) a wake-up of 400 us
    // plus an exponential 50 us: the once-per-day level is the rare mode's,
    // 400 + 50 ln(8.64e6 / 30,000) = 683 us, far above anything the light tail reaches.
    let (rare_p, rare) = (
        1.0 / 30_000.0,
        Tail {
            floor_us: 400.0,
            scale_us: 50.0,
            shape: 0.0,
        },
    );
    let truth = rare.quantile_above(1.0 / (TWENTY_MIN.per_day() * rare_p)) * 1e3;
    let dir = tempfile::tempdir().unwrap();
    for seed in 0..2 {
        let text = stream(seed + 200, |rng, _| {
            let u = rng.open01();
            match rng.open01() < rare_p {
                true => rare.quantile_above(u),
                false => LIGHT.quantile_above(u),
            }
        });
        let cpu = worst(dir.path(), &format!("rare{seed}"), &text);
        let headline = cpu["verdict"]["headline"].as_str().unwrap();
        eprintln!("seed {seed}: {headline}; truth {:.1} us", truth / 1e3);
        match day(&cpu) {
            Some((_, lo, hi)) => assert!(
                lo <= truth && truth <= hi,
                "seed {seed}: {headline}; truth {:.1} us",
                truth / 1e3
            ),
            None => assert!(
                headline.starts_with(
                    "not enough evidence: the largest values come from a rarer second cause"
                ),
                "{headline}"
            ),
        }
    }
}
