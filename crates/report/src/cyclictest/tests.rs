//! Tests of the cyclictest formats, the layouts pasted from real cyclictest output.

use super::*;
use crate::testdata;
use model::Nanos;
use proptest::prelude::*;

/// A CPU whose samples reproduce one thread of a real cyclictest run: `rows` as
/// (microsecond, count), `listed` the overflow cycles cyclictest printed, `overflows` their
/// total; the first listed overflow is `big` ns, the other overflows `other` ns. In-range
/// samples sit in the middle of their microsecond.
fn replay(
    rows: &[(u64, usize)],
    listed: &[u64],
    overflows: usize,
    big: u64,
    other: u64,
) -> Vec<u64> {
    let n = rows.iter().map(|r| r.1).sum::<usize>() + overflows;
    let last_listed = *listed.last().unwrap();
    let mut overflow_cycles: Vec<u64> = listed.to_vec();
    overflow_cycles.extend((last_listed + 1..).take(overflows - listed.len()));
    let mut in_range = rows
        .iter()
        .flat_map(|&(us, count)| std::iter::repeat_n(us * 1_000 + 500, count));
    (0..n as u64)
        .map(
            |cycle| match overflow_cycles.iter().position(|&c| c == cycle) {
                Some(0) => big,
                Some(_) => other,
                None => in_range.next().unwrap(),
            },
        )
        .collect()
}

/// `cyclictest -S -p 95 -m -i 1000 -l 500 -q -H 20` on a 2-CPU VM (rt-tests 2.40), without
/// its first line (`# /dev/cpu_dma_latency set to 0us`).
const REAL_H20: &str = "\
# Histogram\n\
000000 000000\t000000\t000000\n\
000001 000000\t000000\t000000\n\
000002 000000\t000000\t000000\n\
000003 000000\t000000\t000000\n\
000004 000000\t000000\t000000\n\
000005 000000\t000000\t000000\n\
000006 000000\t000000\t000000\n\
000007 000000\t000000\t000000\n\
000008 000000\t000000\t000000\n\
000009 000000\t000000\t000000\n\
000010 000000\t000000\t000000\n\
000011 000000\t000000\t000000\n\
000012 000001\t000000\t000001\n\
000013 000000\t000000\t000000\n\
000014 000003\t000016\t000019\n\
000015 000067\t000096\t000163\n\
000016 000177\t000137\t000314\n\
000017 000061\t000036\t000097\n\
000018 000026\t000028\t000054\n\
000019 000025\t000029\t000054\n\
# Total: 000000360 000000342 000000702\n\
# Min Latencies: 00012 00014\n\
# Avg Latencies: 00019 00019\n\
# Max Latencies: 00060 00048 00060\n\
# Histogram Overflows: 00140 00158 00298\n\
# Histogram Overflow at cycle number:\n\
# Thread 0: 00002 00006 00024 00028 00072 00120 00166 00173 00180 00181 00182 00183 00184 00204 00206 00208 00210 00211 00214 00216 # 00120 others\n\
# Thread 1: 00000 00002 00006 00010 00014 00018 00022 00026 00030 00038 00042 00054 00076 00077 00079 00087 00088 00090 00098 00118 # 00138 others\n\
\n";

fn real_h20_run() -> MeasureRun {
    let t0 = replay(
        &[
            (12, 1),
            (14, 3),
            (15, 67),
            (16, 177),
            (17, 61),
            (18, 26),
            (19, 25),
        ],
        &[
            2, 6, 24, 28, 72, 120, 166, 173, 180, 181, 182, 183, 184, 204, 206, 208, 210, 211, 214,
            216,
        ],
        140,
        60_000,
        25_000,
    );
    let t1 = replay(
        &[(14, 16), (15, 96), (16, 137), (17, 36), (18, 28), (19, 29)],
        &[
            0, 2, 6, 10, 14, 18, 22, 26, 30, 38, 42, 54, 76, 77, 79, 87, 88, 90, 98, 118,
        ],
        158,
        48_000,
        24_000,
    );
    testdata::run_of(vec![
        testdata::cpu(0, Some(5937), &t0, 0),
        testdata::cpu(1, Some(5938), &t1, 0),
    ])
}

#[test]
fn histogram_reproduces_real_cyclictest_output() {
    let run = real_h20_run();
    assert_eq!(histogram(&run, 20, true), REAL_H20);
    // -h is the same without the all-threads column.
    let plain = histogram(&run, 20, false);
    assert!(plain.contains("\n000016 000177\t000137\n"), "{plain}");
    assert!(
        plain.contains("\n# Total: 000000360 000000342\n"),
        "{plain}"
    );
    assert!(
        plain.contains("\n# Max Latencies: 00060 00048\n"),
        "{plain}"
    );
    assert!(
        plain.contains("\n# Histogram Overflows: 00140 00158\n"),
        "{plain}"
    );
}

#[test]
fn summary_line_matches_real_cyclictest() {
    // machinekit792_rpi2_3.18.9-rt5.txt (corpus): a Raspberry Pi 2, `-p 80 -i 10000 -l 10000`.
    let real = "T: 0 (27877) P:80 I:10000 C:  10000 Min:     12 Act:   13 Avg:   16 Max:      66";
    let mut samples = vec![12_000];
    samples.extend(std::iter::repeat_n(16_000, 9_997));
    samples.extend([66_000, 13_999]);
    let mut run = testdata::run_of(vec![testdata::cpu(0, Some(27877), &samples, 0)]);
    run.params.priority = 80;
    run.params.interval_ns = Nanos::from_ms(10);
    assert_eq!(
        summary(&run),
        format!("# /dev/cpu_dma_latency set to 0us\n{real}\n")
    );

    // This VM, `cyclictest -S -p 95 -m -i 1000 -l 500 -q`, thread 0.
    let real = "T: 0 ( 5937) P:95 I:1000 C:    500 Min:     14 Act:   16 Avg:   21 Max:      66";
    let mut samples = vec![14_999, 66_999];
    samples.extend(std::iter::repeat_n(21_000, 497));
    samples.push(16_999);
    let mut run = testdata::run_of(vec![testdata::cpu(0, Some(5937), &samples, 0)]);
    run.params.dma_latency_us = None;
    assert_eq!(summary(&run), format!("{real}\n"));
}

/// Every digit replaced by `9`: lines with the same shape compare equal.
fn shape(line: &str) -> String {
    line.chars()
        .map(|c| if c.is_ascii_digit() { '9' } else { c })
        .collect()
}

#[test]
fn summary_lines_have_cyclictest_shape() {
    // This VM, `cyclictest -S -p 95 -m -i 1000 -l 500 -q`, thread 0.
    let real = "T: 0 ( 5937) P:95 I:1000 C:    500 Min:     14 Act:   16 Avg:   21 Max:      66";
    let text = summary(&testdata::two_cpus());
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "# /dev/cpu_dma_latency set to 0us",
            "T: 0 ( 4242) P:95 I:1000 C:      4 Min:     12 Act:   66 Avg:   26 Max:      66",
            "T: 1 ( 4243) P:95 I:1000 C:      3 Min:     13 Act:  250 Avg:   92 Max:     250",
        ]
    );
    for line in &lines[1..] {
        assert_eq!(line.len(), real.len(), "{line}");
        let fields = |l: &str| l.match_indices(':').map(|(i, _)| i).collect::<Vec<_>>();
        assert_eq!(fields(line), fields(real), "{line}");
        assert_eq!(shape(&line[..5]), shape(&real[..5]));
    }
}

#[test]
fn two_cpu_histogram_exactly() {
    let expected = "\
# Histogram\n\
000000 000000\t000000\t000000\n\
000001 000000\t000000\t000000\n\
000002 000000\t000000\t000000\n\
000003 000000\t000000\t000000\n\
000004 000000\t000000\t000000\n\
000005 000000\t000000\t000000\n\
000006 000000\t000000\t000000\n\
000007 000000\t000000\t000000\n\
000008 000000\t000000\t000000\n\
000009 000000\t000000\t000000\n\
000010 000000\t000000\t000000\n\
000011 000000\t000000\t000000\n\
000012 000001\t000000\t000001\n\
000013 000000\t000002\t000002\n\
000014 000001\t000000\t000001\n\
000015 000001\t000000\t000001\n\
# Total: 000000003 000000002 000000005\n\
# Min Latencies: 00012 00013\n\
# Avg Latencies: 00026 00092\n\
# Max Latencies: 00066 00250 00250\n\
# Histogram Overflows: 00001 00001 00002\n\
# Histogram Overflow at cycle number:\n\
# Thread 0: 00003\n\
# Thread 1: 00002\n\
\n";
    assert_eq!(histogram(&testdata::two_cpus(), 16, true), expected);
}

#[test]
fn overflow_list_is_truncated_like_cyclictest() {
    // Every sample overflows at 1 us; cyclictest keeps max_us cycle numbers.
    let text = histogram(&testdata::two_cpus(), 1, false);
    assert!(text.ends_with(
        "# Histogram Overflows: 00004 00003\n\
         # Histogram Overflow at cycle number:\n\
         # Thread 0: 00000 # 00003 others\n\
         # Thread 1: 00000 # 00002 others\n\n"
    ));
    // Fewer spikes kept than overflows: the rest are counted as others.
    let mut run = testdata::two_cpus();
    run.cpus[0].spikes.truncate(1); // the worst only: 66 us at cycle 3
    let text = histogram(&run, 10, false);
    assert!(
        text.contains("# Thread 0: 00003 # 00003 others\n"),
        "{text}"
    );
}

#[test]
fn one_thread_has_no_summary_column() {
    let run = testdata::run_of(vec![testdata::cpu(0, Some(1), &[2_500, 3_100], 0)]);
    let expected = "\
# Histogram\n\
000000 000000\n\
000001 000000\n\
000002 000001\n\
000003 000001\n\
# Total: 000000002\n\
# Min Latencies: 00002\n\
# Avg Latencies: 00002\n\
# Max Latencies: 00003\n\
# Histogram Overflows: 00000\n\
# Histogram Overflow at cycle number:\n\
# Thread 0:\n\
\n";
    assert_eq!(
        histogram(&run, default_histogram_max_us(&run), true),
        expected
    );
}

#[test]
fn above_range_sample_is_an_overflow() {
    let run = testdata::above_range();
    let max_us = default_histogram_max_us(&run);
    assert_eq!(max_us, RANGE_END_NS.div_ceil(1_000));
    // A small bound keeps the text small; the far sample overflows whatever the bound.
    let text = histogram(&run, 10, true);
    assert!(text.contains("\n000005 000001\t000000\t000001\n"), "{text}");
    assert!(
        text.contains("\n# Total: 000000001 000000002 000000003\n"),
        "{text}"
    );
    assert!(
        text.contains("\n# Max Latencies: 20179869 00006 20179869\n"),
        "{text}"
    );
    assert!(
        text.contains("\n# Histogram Overflows: 00001 00000 00001\n"),
        "{text}"
    );
    assert!(
        text.contains("\n# Thread 0: 00001\n# Thread 1:\n"),
        "{text}"
    );
    let (rows, overflows) = totals_and_overflows(&histogram(&run, 100, false));
    assert_eq!(rows, [1, 2]);
    assert_eq!(overflows, [1, 0]);
}

#[test]
fn empty_cpu_prints_zeros() {
    let run = testdata::one_empty_cpu();
    let text = summary(&run);
    assert!(
        text.ends_with(
            "T: 1 (    0) P:95 I:1000 C:      0 Min:      0 Act:    0 Avg:    0 Max:       0\n"
        ),
        "{text}"
    );
    assert_eq!(default_histogram_max_us(&run), 4);
    let text = histogram(&run, 4, true);
    assert!(text.contains("\n# Min Latencies: 00002 00000\n"), "{text}");
    let empty = testdata::run_of(vec![testdata::cpu(0, None, &[], 0)]);
    assert_eq!(default_histogram_max_us(&empty), 1);
    assert_eq!(
        histogram(&empty, 0, true).lines().nth(1),
        Some("# Total: 000000000")
    );
}

/// Per-thread `# Total` and `# Histogram Overflows` figures of a histogram text.
fn totals_and_overflows(text: &str) -> (Vec<u64>, Vec<u64>) {
    let numbers = |prefix: &str| -> Vec<u64> {
        let line = text.lines().find(|l| l.starts_with(prefix)).unwrap();
        line[prefix.len()..]
            .split_whitespace()
            .map(|n| n.parse().unwrap())
            .collect()
    };
    (numbers("# Total:"), numbers("# Histogram Overflows:"))
}

proptest! {
    #[test]
    fn totals_and_overflows_add_up_to_the_samples(
        a in proptest::collection::vec(prop_oneof![0u64..40_000, 0u64..3_000_000], 0..200),
        b in proptest::collection::vec(0u64..100_000, 0..200),
        max_us in 0u64..200,
    ) {
        let run = testdata::run_of(vec![
            testdata::cpu(0, None, &a, 0),
            testdata::cpu(1, None, &b, 0),
        ]);
        let text = histogram(&run, max_us, false);
        let (totals, overflows) = totals_and_overflows(&text);
        prop_assert_eq!(totals[0] + overflows[0], a.len() as u64);
        prop_assert_eq!(totals[1] + overflows[1], b.len() as u64);
        // The rows add up to the totals.
        let mut sums = [0u64; 2];
        for line in text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
            let (_, counts) = line.split_once(' ').unwrap();
            for (j, c) in counts.split('\t').enumerate() {
                sums[j] += c.parse::<u64>().unwrap();
            }
        }
        prop_assert_eq!(sums.to_vec(), totals);
        // Rows below 16 us are exact.
        for (j, samples) in [&a, &b].into_iter().enumerate() {
            let exact = samples.iter().filter(|&&v| v < max_us.min(16) * 1_000).count();
            let rows: u64 = text.lines().take(1 + max_us.min(16) as usize).skip(1)
                .map(|l| l[7..].split('\t').nth(j).unwrap().parse::<u64>().unwrap())
                .sum();
            prop_assert_eq!(rows, exact as u64);
        }
        // With the default bound nothing overflows.
        let (_, none) = totals_and_overflows(&histogram(&run, default_histogram_max_us(&run), false));
        prop_assert_eq!(none, vec![0, 0]);
    }
}
