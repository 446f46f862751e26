//! Tests of the LAVA export: exact lines in both forms, budgets, runs that cannot be judged,
//! noise runs, names, and the baseline rule.
use super::*;
use crate::testdata;
use model::gate::judge;
use model::measure::RunStatus;
use model::noise::{NOISE_SCHEMA, NoiseInfo};

#[test]
fn every_figure_of_a_run_is_a_reported_case() {
    let text = render(
        &cases(
            &testdata::two_cpus(),
            &judge(&testdata::two_cpus(), None),
            None,
        ),
        Form::Commands,
    );
    let expected = "\
lava-test-case run-status --result pass
lava-test-case cpu0-min-latency --result pass --measurement 12.345 --units us
lava-test-case cpu0-avg-latency --result pass --measurement 26.861 --units us
lava-test-case cpu0-p99-latency --result pass --measurement 66.000 --units us
lava-test-case cpu0-p99.99-latency --result pass --measurement 66.000 --units us
lava-test-case cpu0-max-latency --result pass --measurement 66.000 --units us
lava-test-case cpu0-samples --result pass --measurement 4 --units count
lava-test-case cpu0-overruns --result pass --measurement 0 --units count
lava-test-case cpu1-min-latency --result pass --measurement 13.000 --units us
lava-test-case cpu1-avg-latency --result pass --measurement 92.333 --units us
lava-test-case cpu1-p99-latency --result pass --measurement 250.000 --units us
lava-test-case cpu1-p99.99-latency --result pass --measurement 250.000 --units us
lava-test-case cpu1-max-latency --result pass --measurement 250.000 --units us
lava-test-case cpu1-samples --result pass --measurement 3 --units count
lava-test-case cpu1-overruns --result pass --measurement 1 --units count
lava-test-case all-min-latency --result pass --measurement 12.345 --units us
lava-test-case all-avg-latency --result pass --measurement 54.921 --units us
lava-test-case all-p99-latency --result pass --measurement 250.000 --units us
lava-test-case all-p99.99-latency --result pass --measurement 250.000 --units us
lava-test-case all-max-latency --result pass --measurement 250.000 --units us
lava-test-case all-samples --result pass --measurement 7 --units count
lava-test-case all-overruns --result pass --measurement 1 --units count
lava-test-case verdict --result pass
";
    // With so few samples the percentiles are the maxima (the histogram caps at the max).
    assert_eq!(text, expected);
}

#[test]
fn the_result_file_form_has_the_same_cases() {
    let run = testdata::two_cpus();
    let text = render(
        &cases(&run, &judge(&run, None), Some("idle")),
        Form::Results,
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "idle-run-status pass");
    assert_eq!(lines[5], "idle-cpu0-max-latency pass 66.000 us");
    assert_eq!(lines[6], "idle-cpu0-samples pass 4 count");
    assert_eq!(lines.len(), 23);
}

#[test]
fn a_budget_fails_each_maximum_over_it_and_passes_one_equal_to_it() {
    let run = testdata::two_cpus();
    let text = render(
        &cases(&run, &judge(&run, Some(Nanos::from_us(66))), None),
        Form::Results,
    );
    assert!(
        text.contains("\ncpu0-max-latency pass 66.000 us\n"),
        "{text}"
    );
    assert!(
        text.contains("\ncpu1-max-latency fail 250.000 us\n"),
        "{text}"
    );
    assert!(
        text.contains("\nall-max-latency fail 250.000 us\n"),
        "{text}"
    );
    // Other figures stay reported.
    assert!(
        text.contains("\ncpu1-min-latency pass 13.000 us\n"),
        "{text}"
    );
}

#[test]
fn a_run_that_cannot_be_judged_never_passes() {
    let run = testdata::one_empty_cpu();
    let text = render(
        &cases(&run, &judge(&run, Some(Nanos::from_us(100))), None),
        Form::Results,
    );
    assert!(text.starts_with("run-status fail\n"), "{text}");
    assert!(
        text.contains("\ncpu0-max-latency unknown 3.000 us\n"),
        "{text}"
    );
    assert!(text.contains("\ncpu1-min-latency unknown\n"), "{text}");
    assert!(text.contains("\ncpu1-max-latency unknown\n"), "{text}");
    assert!(text.contains("\ncpu1-samples unknown 0 count\n"), "{text}");
    assert!(!text.contains(" pass"), "{text}");

    // A spike over the budget in a run cut short is still a failure.
    let broken = testdata::two_cpus_broken();
    let text = render(
        &cases(&broken, &judge(&broken, Some(Nanos::from_us(200))), None),
        Form::Results,
    );
    assert!(text.starts_with("run-status fail\n"), "{text}");
    assert!(
        text.contains("\ncpu1-max-latency fail 250.000 us\n"),
        "{text}"
    );
    assert!(
        text.contains("\ncpu0-max-latency unknown 66.000 us\n"),
        "{text}"
    );
}

fn noise_run() -> MeasureRun {
    let mut run = testdata::two_cpus();
    run.schema = NOISE_SCHEMA.into();
    run.noise = Some(NoiseInfo {
        cpus: vec![
            NoiseCpu {
                cpu: 0,
                runtime_ns: 2_000_000_000,
                noise_ns: 20_000_000,
                interruptions: 7,
                max_single_ns: 41_250,
                max_period_noise_ns: 12_000_000,
                ..NoiseCpu::default()
            },
            NoiseCpu {
                cpu: 1,
                runtime_ns: 2_000_000_000,
                noise_ns: 1_000,
                interruptions: 1,
                max_single_ns: 1_000,
                max_period_noise_ns: 1_000,
                ..NoiseCpu::default()
            },
        ],
        ..NoiseInfo::default()
    });
    run
}

#[test]
fn a_noise_run_has_noise_figures_not_latencies() {
    let text = render(
        &cases(
            &noise_run(),
            &judge(&noise_run(), Some(Nanos::from_us(10))),
            None,
        ),
        Form::Results,
    );
    let expected = "\
run-status pass
cpu0-max-noise fail 41.250 us
cpu0-max-period-noise pass 12000.000 us
cpu0-noise pass 1.000 %
cpu0-interruptions pass 7 count
cpu1-max-noise pass 1.000 us
cpu1-max-period-noise pass 1.000 us
cpu1-noise pass 0.000 %
cpu1-interruptions pass 1 count
all-max-noise fail 41.250 us
all-max-period-noise pass 12000.000 us
all-noise pass 0.500 %
all-interruptions pass 8 count
verdict fail
";
    assert_eq!(text, expected);
}

#[test]
fn an_imported_noise_tool_and_a_workload_name_their_quantity() {
    use model::imported::{ImportInfo, Quantity};
    use model::workload::WorkloadInfo;
    let mut oslat = testdata::two_cpus();
    oslat.import = Some(ImportInfo {
        quantity: Quantity::OsNoise,
        ..ImportInfo::default()
    });
    let text = render(&cases(&oslat, &judge(&oslat, None), None), Form::Results);
    assert!(
        text.contains("\ncpu1-max-noise pass 250.000 us\n"),
        "{text}"
    );
    assert!(!text.contains("latency"), "{text}");
    let mut workload = testdata::two_cpus();
    workload.workload = Some(WorkloadInfo {
        runtime_ns: Nanos::from_us(300),
        deadline_ns: Nanos::from_us(500),
        cpus: Vec::new(),
    });
    let text = render(
        &cases(&workload, &judge(&workload, None), None),
        Form::Results,
    );
    assert!(
        text.contains("\nall-max-response pass 250.000 us\n"),
        "{text}"
    );
}

#[test]
fn names_are_lava_safe_or_refused() {
    assert!(check_name("board-1_rt.v2").is_ok());
    for bad in [
        "",
        "two words",
        "a/b",
        "é",
        "x;rm",
        &"a".repeat(MAX_PREFIX + 1),
    ] {
        let e = check_name(bad).unwrap_err();
        assert!(!e.contains('\n'), "{e}");
    }
    for case in cases(
        &testdata::two_cpus(),
        &judge(&testdata::two_cpus(), None),
        Some("p"),
    ) {
        assert!(check_name(&case.name).is_ok(), "{}", case.name);
    }
}

fn with_max(max_ns: u64) -> MeasureRun {
    testdata::run_of(vec![testdata::cpu(0, Some(1), &[1_000, max_ns], 0)])
}

#[test]
fn the_baseline_is_the_lowest_maximum_and_fails_at_half_the_runs_over_it() {
    // Four runs: the lowest maximum is 20 us; one run over it is under the limit (4 / 2 = 2).
    let runs = [
        with_max(20_000),
        with_max(20_000),
        with_max(20_000),
        with_max(31_000),
    ];
    let b = baseline(&runs, None).unwrap();
    assert_eq!((b.baseline_ns, b.over, b.passed), (Some(20_000), 1, true));
    assert_eq!(
        render(&b.cases(Some("nightly")), Form::Commands),
        "lava-test-case nightly-baseline-max-latency --result pass --measurement 20.000 --units us\n\
         lava-test-case nightly-runs-over-baseline --result pass --measurement 1 --units runs\n"
    );
    // Two of four over: half, so it fails.
    let runs = [
        with_max(20_000),
        with_max(20_000),
        with_max(21_000),
        with_max(31_000),
    ];
    let b = baseline(&runs, None).unwrap();
    assert_eq!((b.over, b.passed), (2, false));
    assert_eq!(
        render(&b.cases(None), Form::Results),
        "baseline-max-latency pass 20.000 us\nruns-over-baseline fail 2 runs\n"
    );
    // Three runs: 3 / 2 = 1, so a single run over the lowest maximum fails (the rule as
    // test-definitions implement it, integer division).
    let runs = [with_max(20_000), with_max(20_000), with_max(20_001)];
    assert!(!baseline(&runs, None).unwrap().passed);
    let runs = [with_max(20_000), with_max(20_000), with_max(20_000)];
    assert!(baseline(&runs, None).unwrap().passed);
}

#[test]
fn a_given_baseline_replaces_the_lowest_maximum() {
    let runs = [
        with_max(20_000),
        with_max(40_000),
        with_max(45_000),
        with_max(30_000),
    ];
    let b = baseline(&runs, Some(Nanos::from_us(35))).unwrap();
    assert_eq!((b.baseline_ns, b.over, b.passed), (Some(35_000), 2, false));
    let b = baseline(&runs, Some(Nanos::from_us(40))).unwrap();
    assert_eq!((b.over, b.passed), (1, true));
    assert!(
        b.describe()
            .contains("1 of 4 runs over the baseline 40.000 us (given)")
    );
}

#[test]
fn a_run_that_cannot_be_judged_counts_as_over_the_baseline() {
    let mut interrupted = with_max(1_000);
    interrupted.status = RunStatus::Running;
    let runs = [
        with_max(20_000),
        with_max(20_000),
        with_max(20_000),
        interrupted,
    ];
    let b = baseline(&runs, None).unwrap();
    assert_eq!((b.baseline_ns, b.over, b.passed), (Some(20_000), 1, true));
    let mut none = runs.clone();
    for r in &mut none {
        r.status = RunStatus::Running;
    }
    let b = baseline(&none, None).unwrap();
    assert_eq!((b.baseline_ns, b.over, b.passed), (None, 4, false));
    assert_eq!(
        render(&b.cases(None), Form::Results),
        "baseline-max-latency unknown\nruns-over-baseline fail 4 runs\n"
    );
}

#[test]
fn a_baseline_of_too_few_or_mixed_runs_is_refused() {
    for n in 0..MIN_BASELINE_RUNS {
        let runs = vec![with_max(5_000); n];
        let e = baseline(&runs, None).unwrap_err();
        assert!(e.contains("at least 3 runs"), "{e}");
    }
    let runs = [with_max(5_000), noise_run(), with_max(6_000)];
    let e = baseline(&runs, None).unwrap_err();
    assert!(
        e.contains("different things (wake-up latency and OS noise)"),
        "{e}"
    );
    // Runs measured at another interval are not compared, here as in `rtlab compare`.
    let mut other = with_max(4_000);
    other.params.interval_ns = Nanos::from_us(200);
    let runs = [with_max(5_000), with_max(6_000), other];
    let e = baseline(&runs, None).unwrap_err();
    assert!(
        e.contains("run 3 is not compared with run 1: interval 200us against"),
        "{e}"
    );
    let runs = [noise_run(), noise_run(), noise_run()];
    let b = baseline(&runs, None).unwrap();
    assert_eq!(
        render(&b.cases(None), Form::Results),
        "baseline-max-noise pass 41.250 us\nruns-over-baseline pass 0 runs\n"
    );
}

#[test]
fn missed_deadlines_and_the_runs_own_budget_fail_cases_as_they_fail_the_verdict() {
    let mut run = testdata::two_cpus();
    run.workload = Some(testdata::missed_deadlines(0, 4));
    let text = render(&cases(&run, &judge(&run, None), None), Form::Results);
    assert!(
        text.contains("\ncpu0-deadline-misses fail 4 count\n"),
        "{text}"
    );
    assert!(text.ends_with("\nverdict fail\n"), "{text}");

    // Measured with a 100us budget: CPU 1's 250us maximum fails with no --budget given.
    let mut run = testdata::two_cpus();
    run.params.budget_ns = Some(Nanos::from_us(100));
    let text = render(&cases(&run, &judge(&run, None), None), Form::Results);
    assert!(
        text.contains("\ncpu1-max-latency fail 250.000 us\n"),
        "{text}"
    );
    assert!(
        text.contains("\ncpu0-max-latency pass 66.000 us\n"),
        "{text}"
    );
    assert!(
        text.contains("\nall-max-latency fail 250.000 us\n"),
        "{text}"
    );
    assert!(text.ends_with("\nverdict fail\n"), "{text}");
}
