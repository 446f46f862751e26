//! The long-term view graded against histories whose answer is known by construction: a
//! kernel change planted in the middle of a history with maxima drawn from known ranges, plot
//! points checked against every interval they stand for, and history documents read as
//! outside input.

use super::*;

/// A deterministic uniform draw in `[lo, hi)`.
fn uniform(x: &mut u64, lo: u64, hi: u64) -> u64 {
    *x = x
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    lo + (*x >> 11) % (hi - lo)
}

const FIVE_MIN: u64 = 300_000_000_000;

fn point(n: i64, max_ns: Option<u64>, kernel: &str) -> HistoryPoint {
    HistoryPoint {
        start_ns: 1_700_000_100_000_000_000 + n * FIVE_MIN as i64,
        length_ns: FIVE_MIN,
        max_ns,
        samples: if max_ns.is_some() { 300_000 } else { 0 },
        breaches: u64::from(max_ns.is_some_and(|m| m > 35_000)),
        kernel_release: kernel.into(),
        engine: "timerlat".into(),
        cpus: "2-3".into(),
        budget_ns: Some(35_000),
    }
}

/// 2,000 intervals: the first 1,200 on one kernel with maxima uniform in 10-20 us (median
/// 15 us), the rest on the next kernel with maxima in 20-40 us (median 30 us, worst under
/// 40 us). The view must find the change where it was planted and measure it.
#[test]
fn a_planted_kernel_change_is_one_span_boundary_with_its_drift() {
    let mut x = 7;
    let points: Vec<HistoryPoint> = (0..2_000)
        .map(|n| {
            if n < 1_200 {
                point(n, Some(uniform(&mut x, 10_000, 20_000)), "6.12.57-rt")
            } else {
                point(n, Some(uniform(&mut x, 20_000, 40_000)), "6.12.74-rt")
            }
        })
        .collect();
    let s = spans(&points);
    assert_eq!(s.len(), 2);
    assert_eq!((s[0].intervals, s[1].intervals), (1_200, 800));
    assert_eq!(s[1].from_ns, points[1_200].start_ns);
    assert_eq!(s[0].to_ns, points[1_200].start_ns);
    assert_eq!(s[1].change, vec!["kernel 6.12.57-rt → 6.12.74-rt"]);
    assert!(s[0].change.is_empty() && s[0].median_change_percent.is_none());
    let median = |s: &Span| s.median_max_ns.unwrap() as f64;
    assert!(
        (median(&s[0]) - 15_000.0).abs() < 500.0,
        "{}",
        median(&s[0])
    );
    assert!(
        (median(&s[1]) - 30_000.0).abs() < 1_000.0,
        "{}",
        median(&s[1])
    );
    let drift = s[1].median_change_percent.unwrap();
    assert!((drift - 100.0).abs() < 10.0, "{drift}");
    // Exact figures, against the maxima themselves.
    for (span, part) in s.iter().zip([&points[..1_200], &points[1_200..]]) {
        let mut m: Vec<u64> = part.iter().map(|p| p.max_ns.unwrap()).collect();
        m.sort_unstable();
        assert_eq!(span.worst_ns, m.last().copied());
        assert_eq!(span.median_max_ns, Some(m[m.len() / 2 - 1]));
        assert_eq!(span.p99_max_ns, Some(m[(m.len() * 99).div_ceil(100) - 1]));
        let breaches = part.iter().filter(|p| p.max_ns.unwrap() > 35_000).count();
        assert_eq!(span.breaches, breaches as u64);
    }
    assert_eq!(s[0].breaches, 0);
}

#[test]
fn every_setup_change_starts_a_span_and_is_named() {
    let mut points: Vec<HistoryPoint> = (0..6).map(|n| point(n, Some(10_000), "k1")).collect();
    points[2].cpus = "1-3".into();
    points[3].cpus = "1-3".into();
    points[4].cpus = "1-3".into();
    points[4].budget_ns = None;
    points[5].cpus = "1-3".into();
    points[5].budget_ns = None;
    points[5].engine = "user".into();
    let s = spans(&points);
    let changes: Vec<Vec<String>> = s.iter().map(|s| s.change.clone()).collect();
    assert_eq!(
        changes,
        vec![
            vec![],
            vec!["CPUs 2-3 → 1-3".to_string()],
            vec!["budget 35000 ns → none".to_string()],
            vec!["engine timerlat → user".to_string()],
        ]
    );
    assert_eq!(s.iter().map(|s| s.intervals).sum::<u64>(), 6);
    assert!(spans(&[]).is_empty());
}

/// Every plotted point stands for intervals whose maxima it never hides: the overall worst is
/// plotted at its time, and no interval's maximum is above its point's.
#[test]
fn plot_points_keep_every_maximum_and_every_gap() {
    let mut x = 3;
    let points: Vec<HistoryPoint> = (0..10_000)
        .map(|n| {
            // A gap of 500 intervals with nothing measured.
            let max = (!(4_000..4_500).contains(&n)).then(|| uniform(&mut x, 5_000, 50_000));
            point(n, max, "k")
        })
        .collect();
    for width in [1, 7, 640, 20_000] {
        let plot = plot_points(&points, width);
        assert!(plot.len() <= width.min(9_500), "{width}: {}", plot.len());
        let worst = points.iter().filter_map(|p| p.max_ns).max().unwrap();
        assert_eq!(plot.iter().map(|p| p.max_ns).max(), Some(worst));
        for p in points.iter().filter(|p| p.max_ns.is_some()) {
            let covering = plot
                .iter()
                .find(|q| q.start_ns <= p.start_ns && p.start_ns < q.end_ns)
                .unwrap_or_else(|| panic!("{width}: interval {} not plotted", p.start_ns));
            assert!(covering.max_ns >= p.max_ns.unwrap());
        }
        // The gap stays a gap when a point is narrower than it.
        if width >= 640 {
            let gap = (points[4_000].start_ns, points[4_499].start_ns);
            assert!(
                plot.iter().all(|q| q.end_ns <= gap.0 || q.start_ns > gap.1),
                "{width}"
            );
        }
    }
    assert!(plot_points(&points[4_000..4_500], 100).is_empty());
}

fn doc_json(edit: impl Fn(&mut HistoryDoc)) -> String {
    let mut i = IntervalBuilder::new().finish("board-1", 600_000_000_000, FIVE_MIN, Some(50_000));
    i.engine = "user".into();
    let start = 600_000_100_000;
    let x = Incident {
        id: incident_id("board-1", start),
        host: "board-1".into(),
        start_ns: start,
        end_ns: start + 5,
        cpu: 2,
        worst_ns: 80_000,
        breaches: 3,
        budget_ns: 50_000,
        engine: "user".into(),
        kernel_release: "6.12".into(),
        cause: "thread interference: hog:12 (97 %)".into(),
        run_id: Some("0123456789ab".into()),
        run_bytes: Some(100),
    };
    let mut d = HistoryDoc::new("board-1", vec![i], vec![x]);
    edit(&mut d);
    d.to_json()
}

#[test]
fn a_history_document_is_read_as_outside_input() {
    let good = HistoryDoc::from_json(&doc_json(|_| {})).unwrap();
    assert_eq!((good.intervals.len(), good.incidents.len()), (1, 1));
    assert_eq!(HistoryDoc::from_json(&good.to_json()).unwrap(), good);
    let refused = |edit: &dyn Fn(&mut HistoryDoc), why: &str| {
        let e = HistoryDoc::from_json(&doc_json(edit)).unwrap_err();
        assert!(e.contains(why), "{e} lacks {why}");
    };
    refused(&|d| d.schema = "rtlab.result/1".into(), "its schema");
    refused(&|d| d.incidents[0].id = "000000000000".into(), "its id");
    refused(
        &|d| d.incidents[0].host = "a\nb".into(),
        "control character",
    );
    refused(&|d| d.incidents[0].end_ns = 0, "ends before");
    refused(
        &|d| d.incidents[0].run_id = Some("../../etc".into()),
        "run_id",
    );
    refused(
        &|d| d.intervals[0].host = String::new(),
        "interval 0: its host is empty",
    );
    refused(
        &|d| d.intervals[0].host = "h".repeat(257),
        "longer than 256",
    );
    refused(&|d| d.intervals[0].length_ns = 0, "length is 0");
    refused(&|d| d.intervals[0].buckets.clear(), "coarse buckets");
    let e = HistoryDoc::from_json(r#"{"schema":"rtlab.monitor/1","extra":1}"#).unwrap_err();
    assert!(e.contains("unknown field"), "{e}");
    assert!(HistoryDoc::from_json("[]").is_err());
}
