//! cyclictest's verbose stream as a time series: each sample's second from its cycle and its
//! thread's true interval, per-second maxima that match the samples they were built from,
//! CPUs from the stream's own lines; on a real rt-tests 2.40 stream and on generated ones
//! whose every figure is known by construction.

use model::measure::{MeasureRun, Series};

use crate::tests::{consistent, noted, skipped, when};
use crate::{import, import_bytes};

const US: u64 = 1000;
const SECOND: u64 = 1_000_000_000;

/// A stream as cyclictest 2.x prints it for threads `intervals` (true intervals in us, each
/// printed plus the distance `distance`), pinned to `cpus`, each thread taking `latency(thread,
/// cycle)` for `cycles[thread]` cycles, in the order cyclictest interleaves them (by time).
fn stream(
    intervals: &[u64],
    distance: u64,
    cpus: &[u32],
    cycles: &[u64],
    latency: impl Fn(usize, u64) -> u64,
) -> String {
    let mut out = format!(
        "Using {} cpus.\n# /dev/cpu_dma_latency set to 0us\n",
        cpus.len()
    );
    for (t, (&i, &cpu)) in intervals.iter().zip(cpus).enumerate() {
        out += &format!(
            "Thread {t} using cpu {cpu}.\nThread {t} Interval: {}\n",
            i + distance
        );
    }
    let mut lines: Vec<(u64, usize, u64)> = Vec::new();
    for (t, &n) in cycles.iter().enumerate() {
        lines.extend((0..n).map(|c| (c * intervals[t], t, c)));
    }
    lines.sort();
    for (_, t, c) in lines {
        out += &format!("{t:8}:{c:8}:{:8}\n", latency(t, c));
    }
    out
}

/// The per-second maxima and counts computed straight from the generator: the oracle.
fn oracle(interval: u64, cycles: u64, latency: impl Fn(u64) -> u64) -> (Vec<u64>, Vec<u64>) {
    let seconds = ((cycles - 1) * interval / 1_000_000 + 1) as usize;
    let (mut max, mut count) = (vec![0; seconds], vec![0; seconds]);
    for c in 0..cycles {
        let s = (c * interval / 1_000_000) as usize;
        max[s] = max[s].max(latency(c) * US);
        count[s] += 1;
    }
    (max, count)
}

fn series(run: &MeasureRun, cpu: u32) -> &Series {
    &run.cpus.iter().find(|c| c.cpu == cpu).unwrap().series
}

/// A latency with a spike in a known second: mostly 5..20 us, 300 + thread us once.
fn spiky(t: usize, c: u64) -> u64 {
    if c == 4321 {
        300 + t as u64
    } else {
        5 + (c * 7 + t as u64 * 3) % 16
    }
}

#[test]
fn each_threads_second_comes_from_its_cycle_and_its_true_interval() {
    // -i 1000 -d 250: thread 0 prints 1250 (measures 1000), thread 1 prints 1500 (1250).
    let text = stream(&[1000, 1250], 250, &[2, 5], &[10_000, 8_000], spiky);
    let run = import("v.txt", &text, when()).unwrap();
    consistent(&run);
    assert_eq!(run.params.interval_ns.get(), 1000 * US);
    // The CPUs the `using cpu` lines name, not the thread numbers.
    assert_eq!(run.cpus.iter().map(|c| c.cpu).collect::<Vec<_>>(), [2, 5]);
    for (t, cpu, interval, cycles) in [(0, 2, 1000, 10_000), (1, 5, 1250, 8_000)] {
        let s = series(&run, cpu);
        assert_eq!(s.slot_ns.get(), SECOND);
        let (max, count) = oracle(interval, cycles, |c| spiky(t, c));
        assert_eq!(s.max_ns, max, "thread {t}");
        assert_eq!(s.count, count, "thread {t}");
    }
    // Both threads ran 10 s: the run's length.
    assert_eq!(run.elapsed_ns.get(), 10 * SECOND);
    let info = run.import.as_ref().unwrap();
    assert!(noted(&run, "250 us, the threads' step, taken off"));
    assert!(skipped(&run).is_empty(), "{:?}", info.notes);
}

#[test]
fn a_real_rt_tests_2_40_stream_reads_whole_and_its_threads_end_together() {
    let run = real("local_cyclictest_2.40_v_t2.txt.gz");
    consistent(&run);
    let info = run.import.as_ref().unwrap();
    // `Using 2 cpus.`, `Max CPUs = 2`, `Thread 0 using cpu 0.` are cyclictest's own lines.
    assert!(skipped(&run).is_empty(), "{:?}", info.notes);
    assert_eq!(run.params.interval_ns.get(), 1000 * US);
    let counts: Vec<u64> = run.cpus.iter().map(|c| c.raw.count).collect();
    assert_eq!(counts, [1500, 999]);
    // cyclictest stops every thread when thread 0 ends its 1500 loops: with the true
    // intervals (1000 and 1500 us) both ran 1.5 s; read as printed (1500 and 2000 us) they
    // would have run 2.25 s and 2.0 s.
    let seconds: Vec<usize> = run.cpus.iter().map(|c| c.series.max_ns.len()).collect();
    assert_eq!(seconds, [2, 2]);
    for c in &run.cpus {
        assert_eq!(c.series.max_ns.iter().max().copied(), Some(c.raw.max_ns));
        assert_eq!(c.series.count.iter().sum::<u64>(), c.raw.count);
    }
}

#[test]
fn one_thread_takes_the_default_distance_off_and_says_so() {
    let text = stream(&[200], 500, &[1], &[20_000], |_, c| 3 + c % 5);
    let run = import("v.txt", &text, when()).unwrap();
    assert_eq!(run.params.interval_ns.get(), 200 * US);
    assert_eq!(series(&run, 1).max_ns.len(), 4);
    assert!(noted(&run, "the default: one thread does not show it"));
    // Without any Thread line: 1 ms assumed, and said.
    let bare: String = text
        .lines()
        .filter(|l| !l.starts_with("Thread"))
        .map(|l| format!("{l}\n"))
        .collect();
    let run = import("v.txt", &bare, when()).unwrap();
    assert_eq!(series(&run, 0).max_ns.len(), 20);
    assert!(noted(&run, "assume cyclictest's default 1 ms"));
}

#[test]
fn an_oscilloscope_reduced_stream_keeps_each_groups_maximum_in_its_second() {
    // -o 10: one line per 10 cycles, at the cycle of the group's maximum, with that maximum.
    // Threads measure every 1000 and 1500 us (printed 1500 and 2000).
    let mut text = String::from("Thread 0 Interval: 1500\nThread 1 Interval: 2000\n");
    let mut truth: [Vec<u64>; 2] = [Vec::new(), Vec::new()];
    let mut put = |t: usize, cycle: u64, interval: u64, latency: u64| {
        let s = (cycle * interval / 1_000_000) as usize;
        if truth[t].len() <= s {
            truth[t].resize(s + 1, 0);
        }
        truth[t][s] = truth[t][s].max(latency * US);
        format!("{t:8}:{cycle:8}:{latency:8}\n")
    };
    for group in 0..500u64 {
        let latency = 10 + (group * 37) % 90;
        text += &put(0, group * 10 + group % 10, 1000, latency);
        text += &put(1, group * 10 + (group * 3) % 10, 1500, latency + 1);
    }
    let run = import("o.txt", &text, when()).unwrap();
    assert_eq!(series(&run, 0).max_ns, truth[0]);
    assert_eq!(series(&run, 1).max_ns, truth[1]);
    assert!(noted(&run, "cycles are missing"));
}

#[test]
fn a_month_long_stream_keeps_a_bounded_series_and_an_absurd_one_is_refused() {
    // Cycles up to 2.6e9 at 1 ms: a month, kept as at most MAX_SERIES_SLOTS slots of whole
    // seconds (159 s here), each the maximum of the seconds it holds.
    let month = 2_592_000_000u64;
    let text = format!(
        "Thread 0 Interval: 1500\nThread 1 Interval: 2000\n0:0:5\n0:1000:70\n0:{}:7\n0:{}:9\n",
        month / 2,
        month - 1
    );
    let run = import("m.txt", &text, when()).unwrap();
    let s = series(&run, 0);
    assert_eq!(s.slot_ns.get(), 159 * SECOND);
    assert!(s.max_ns.len() <= model::limits::MAX_SERIES_SLOTS);
    assert_eq!(s.count.iter().sum::<u64>(), 4);
    assert_eq!(s.max_ns[0], 70 * US);
    assert_eq!(s.max_ns.last().copied(), Some(9 * US));
    consistent(&run);
    // A cycle number no run reaches is refused with the length it implies, not stored.
    let err = import("h.txt", "0:0:5\n0:18446744073709551615:9\n", when()).unwrap_err();
    assert!(
        err.to_string().contains("outside the years 1970 to 9999"),
        "{err}"
    );
}

fn real(name: &str) -> MeasureRun {
    let path = format!(
        "{}/../../fixtures/imports/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    import_bytes(name, &std::fs::read(path).unwrap(), when()).unwrap()
}

#[test]
fn a_stream_ended_by_its_summary_or_its_histogram_is_still_the_stream() {
    for name in [
        "local_cyclictest_2.40_v_q.txt.gz",
        "local_cyclictest_2.40_v_h30.txt.gz",
    ] {
        let run = real(name);
        consistent(&run);
        let info = run.import.as_ref().unwrap();
        assert_eq!(info.format, "cyclictest-verbose", "{name}");
        // The summary line's `I:1000` (with -q), or the line printed without a distance (-h):
        // 3000 cycles of 1 ms are 3 s.
        assert_eq!(run.params.interval_ns.get(), 1000 * US, "{name}");
        assert_eq!(run.cpus[0].series.max_ns.len(), 3, "{name}");
        assert_eq!(run.cpus[0].raw.count, 3000, "{name}");
        assert_eq!(run.cpus[0].cpu, 1, "{name}: thread 0 ran on CPU 1");
        assert!(skipped(&run).is_empty(), "{name}: {:?}", info.notes);
    }
    assert_eq!(
        real("local_cyclictest_2.40_v_q.txt.gz").cpus[0].tid,
        Some(26437)
    );
}

#[test]
fn a_nanosecond_stream_is_read_as_nanoseconds() {
    // Made with -N: the stream says so nowhere; its -q summary line gives each thread's
    // minimum and maximum, which the samples must reproduce in nanoseconds.
    let run = real("local_cyclictest_2.40_v_N.txt.gz");
    consistent(&run);
    assert_eq!(run.import.as_ref().unwrap().resolution_ns, 1);
    assert!(noted(
        &run,
        "values are read as nanoseconds (cyclictest -N)"
    ));
    let figures: Vec<(u32, u64, u64)> = run
        .cpus
        .iter()
        .map(|c| (c.cpu, c.raw.min_ns, c.raw.max_ns))
        .collect();
    assert_eq!(figures, [(0, 11_686, 215_244), (1, 7_677, 388_114)]);
    for c in &run.cpus {
        assert_eq!(c.series.max_ns.iter().max().copied(), Some(c.raw.max_ns));
    }
    // The microsecond streams made beside it are read as microseconds.
    let us = real("local_cyclictest_2.40_v_q.txt.gz");
    assert_eq!(us.import.as_ref().unwrap().resolution_ns, 1000);
    assert!(noted(&us, "values are read as microseconds"));
}

#[test]
fn the_same_samples_in_either_unit_give_the_same_run() {
    // Known by construction: one set of latencies (2 to 400 us, heavy at the top) printed in
    // microseconds and in nanoseconds (x1000) must give the same figures, histogram and
    // series in nanoseconds.
    let latency = |t: usize, c: u64| {
        2 + (c * 7 + t as u64 * 13) % 40 + if c.is_multiple_of(997) { 350 } else { 0 }
    };
    let micro = stream(&[1000, 1500], 500, &[0, 1], &[5000, 3333], latency);
    let nano = stream(&[1000, 1500], 500, &[0, 1], &[5000, 3333], |t, c| {
        latency(t, c) * 1000
    });
    let (a, b) = (
        import("u.txt", &micro, when()).unwrap(),
        import("n.txt", &nano, when()).unwrap(),
    );
    assert_eq!(a.import.as_ref().unwrap().resolution_ns, 1000);
    assert_eq!(b.import.as_ref().unwrap().resolution_ns, 1);
    for (x, y) in a.cpus.iter().zip(&b.cpus) {
        assert_eq!(x.raw, y.raw);
        assert_eq!(x.histogram, y.histogram);
        assert_eq!(x.series, y.series);
        let (p, q) = (&x.stats, &y.stats);
        assert_eq!(
            (p.count, p.min_ns, p.max_ns, p.mean_ns, p.stddev_ns),
            (q.count, q.min_ns, q.max_ns, q.mean_ns, q.stddev_ns)
        );
        // Percentiles of whole microseconds are snapped to the microsecond; of nanoseconds,
        // read within the histogram's precision.
        for (u, n) in [
            (p.p50_ns, q.p50_ns),
            (p.p99_ns, q.p99_ns),
            (p.p99_9_ns, q.p99_9_ns),
        ] {
            let (u, n) = (u.unwrap() as f64, n.unwrap() as f64);
            assert!((u - n).abs() <= 0.01 * u, "{u} vs {n}");
        }
    }
}
