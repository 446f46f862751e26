//! The report's plots over long tails, budgets and noise runs: 1 us bins on a logarithmic
//! latency axis, the budget line, noise runs kept off the latency chart, and the load of an
//! interrupted run.

use model::Nanos;

use super::tests::{data_lines, file, full_run, has_text, names, one};
use super::*;
use crate::testdata;

#[test]
fn an_interrupted_runs_load_does_not_read_complete() {
    let mut run = full_run();
    run.status = model::measure::RunStatus::Interrupted;
    let page = one(&run, "RT-#1").page;
    assert!(
        page.contains("load cpu:60% (stopped early with the interrupted run): 3.0 s"),
        "{page}"
    );
    assert!(!page.contains("(complete)"), "{page}");
}

#[test]
fn a_budget_is_drawn_on_every_latency_plot() {
    let run = full_run();
    let plain = one(&run, "RT-#1");
    assert!(plain.svg_files.iter().all(|f| !f.svg.contains("budget")));
    let report = html_report(
        &[ReportRun {
            run: &run,
            name: "RT-#1",
            source: "stored run 0123456789ab",
            key: "0123456789ab",
        }],
        &ReportOptions {
            budget: Some(Nanos::from_us(50)),
            timeline: false,
        },
    );
    assert_eq!(report.svg_files.len(), 3);
    for f in &report.svg_files {
        assert!(f.svg.contains(">budget 50 us</text>"), "{}", f.name);
        assert!(f.svg.contains("stroke-dasharray"), "{}", f.name);
    }
    assert!(report.page.contains("The dashed line is the budget, 50us."));
}

/// The `d` attribute of a data path.
fn path_d(line: &str) -> &str {
    line.split("d=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
}

#[test]
fn a_long_tail_keeps_the_body_in_one_microsecond_bins() {
    // A body from 5 to 15 us and one sample at 11 ms: the old linear 50 us bins put the body
    // in one bin; here it is eleven points, and the tail a ring two decades to the right.
    let mut samples: Vec<u64> = (5..=15u64)
        .flat_map(|us| std::iter::repeat_n(us * 1_000, 10))
        .collect();
    samples.push(11_000_000);
    let run = testdata::run_of(vec![testdata::cpu(0, None, &samples, 0)]);
    let report = one(&run, "tail");
    let histogram = file(&report, "0123456789ab-histogram.svg");
    let lines = data_lines(histogram);
    assert_eq!(lines.len(), 1, "{histogram}");
    let d = path_d(lines[0]);
    let (body, tail) = d[1..].split_once('M').unwrap();
    assert_eq!(body.split(['L', ' ']).count(), 11, "{d}");
    assert_eq!(tail.matches('a').count(), 2, "{d}");
    for tick in [
        "1 us",
        "10 us",
        "100 us",
        "1 ms",
        "10 ms",
        "latency (log scale)",
    ] {
        assert!(has_text(histogram, tick), "{tick}: {histogram}");
    }
    // The maximum over time and the exceedance use the same logarithmic latency axis.
    let exceedance = file(&report, "0123456789ab-exceedance.svg");
    assert!(has_text(exceedance, "10 ms") && has_text(exceedance, "1 us"));
}

#[test]
fn noise_runs_are_not_drawn_with_latency_runs() {
    use model::imported::{ImportInfo, Quantity};
    let latency = [full_run(), testdata::two_cpus()];
    let mut noise = testdata::two_cpus();
    noise.import = Some(ImportInfo {
        tool: "oslat".into(),
        format: "oslat-text".into(),
        file: "oslat.txt".into(),
        resolution_ns: 1_000,
        command: None,
        quantity: Quantity::OsNoise,
        notes: Vec::new(),
        not_given: Vec::new(),
        not_stated: Vec::new(),
    });
    let run = |run, name, key| ReportRun {
        run,
        name,
        source: "stored run",
        key,
    };
    let report = html_report(
        &[
            run(&latency[0], "RT", "a"),
            run(&noise, "oslat", "b"),
            run(&latency[1], "Van", "c"),
        ],
        &ReportOptions {
            budget: Some(Nanos::from_us(100)),
            timeline: false,
        },
    );
    let overlay = file(&report, "runs-exceedance.svg");
    assert_eq!(data_lines(overlay).len(), 2, "{overlay}");
    assert!(!has_text(overlay, "oslat"));
    assert!(report.page.contains(
        "wake-up latency (RT, load cpu:60%, Van); OS noise, the time taken from a busy loop \
         (oslat)."
    ));
    // One noise run has nothing to be compared with; its own plots say noise, with no budget.
    assert!(!names(&report).contains(&"runs-noise-exceedance.svg"));
    let histogram = file(&report, "b-histogram.svg");
    assert!(
        has_text(histogram, "OS noise histogram: oslat"),
        "{histogram}"
    );
    assert!(has_text(histogram, "noise (log scale)"));
    assert!(!histogram.contains("budget"));
    assert!(file(&report, "a-histogram.svg").contains(">budget 100 us</text>"));
}
