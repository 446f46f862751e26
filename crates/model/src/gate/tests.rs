//! The gate against a real result document written before #27 (`fail_above_ns`, two CPUs,
//! maxima 40 us, no overruns), changed field by field.

use super::*;
use crate::measure::RunStatus;

const BEFORE_27: &str = include_str!("run-before-27.json");

fn run() -> MeasureRun {
    MeasureRun::from_json(BEFORE_27).expect("a document written before #27 reads")
}

fn us(n: u64) -> Option<Nanos> {
    Some(Nanos::from_us(n))
}

#[test]
fn an_old_document_reads_and_its_budget_is_written_by_its_one_name() {
    let mut r = run();
    assert_eq!(r.params.budget_ns, None);
    r.params.budget_ns = us(50);
    let json = r.to_json();
    assert!(json.contains("\"budget_ns\": 50000"), "{json}");
    assert!(!json.contains("fail_above"), "{json}");
    let old = BEFORE_27.replace("\"fail_above_ns\": null", "\"fail_above_ns\": 50000");
    assert_eq!(
        MeasureRun::from_json(&old).unwrap().params.budget_ns,
        us(50)
    );
}

#[test]
fn a_maximum_equal_to_the_budget_passes_and_one_above_fails_per_cpu() {
    let r = run();
    assert!(judge(&r, us(40)).passed());
    assert!(judge(&r, None).passed());
    let v = judge(&r, Some(Nanos(39_999)));
    assert!(v.judgeable());
    let cpus: Vec<u32> = v
        .reasons
        .iter()
        .map(|reason| match reason {
            Reason::OverBudget { cpu, worst, ns, .. } => {
                assert_eq!((*worst, *ns), (Worst::Maximum, 40_000));
                *cpu
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(cpus, [0, 1]);
}

#[test]
fn missed_periods_are_no_failure_of_their_own_their_late_sample_is() {
    let mut r = run();
    r.cpus[1].raw.overruns = 2;
    assert!(judge(&r, us(40)).passed());
    assert!(!judge(&r, us(39)).passed());
}

#[test]
fn a_run_that_cannot_be_judged_never_passes_even_without_a_budget() {
    let mut r = run();
    r.status = RunStatus::Running;
    let v = judge(&r, None);
    assert!(!v.passed() && !v.judgeable(), "{v:?}");
    assert_eq!(v.failures().count(), 0);

    let mut r = run();
    r.status = RunStatus::BrokeThreshold;
    let v = judge(&r, None);
    assert!(matches!(&v.reasons[..], [Reason::Unjudgeable { why }] if why.contains("--break")));

    let mut r = run();
    r.cpus[1].raw.count = 0;
    let v = judge(&r, us(10));
    assert_eq!(
        v.reasons[0],
        Reason::Unjudgeable {
            why: "CPU 1 has no samples".into()
        }
    );
    // The CPU without samples is not also "over": only CPU 0's maximum is.
    assert!(matches!(v.reasons[1], Reason::OverBudget { cpu: 0, .. }));
    assert_eq!(v.reasons.len(), 2);
}

#[test]
fn an_interrupted_run_cannot_be_judged_and_fails_when_over_its_budget() {
    let mut r = run();
    r.status = RunStatus::Interrupted;
    let v = judge(&r, us(40));
    assert_eq!(v.outcome(), Outcome::CannotJudge);
    assert!(v.unjudgeable().unwrap().contains("interrupted"), "{v:?}");
    assert_eq!(judge(&r, us(39)).outcome(), Outcome::Fail);
}

#[test]
fn a_noise_run_is_judged_on_its_longest_single_interruption() {
    let mut r = run();
    let cpu = |cpu: u32, runtime_ns: u64, max_single_ns: u64| {
        serde_json::json!({"cpu": cpu, "runtime_ns": runtime_ns, "noise_ns": 900,
            "interruptions": 3, "max_single_ns": max_single_ns, "max_period_noise_ns": 900})
    };
    r.noise = Some(
        serde_json::from_value(serde_json::json!({
            "engine": "user", "counter": "tsc", "threshold_ns": 1000, "runtime_ns": 1000000,
            "period_ns": 1000000, "attribution": "none",
            "cpus": [cpu(0, 5_000_000, 20_000), cpu(1, 5_000_000, 60_000)]
        }))
        .unwrap(),
    );
    // The loop figures (maxima 40 us) are not what a noise run is held to.
    let v = judge(&r, us(50));
    assert_eq!(
        v.reasons,
        [Reason::OverBudget {
            cpu: 1,
            worst: Worst::Interruption,
            ns: 60_000,
            budget: Nanos::from_us(50)
        }]
    );
}

#[test]
fn a_workload_deadline_miss_fails_without_a_budget() {
    let mut r = run();
    r.workload = Some(crate::workload::WorkloadInfo {
        runtime_ns: Nanos::from_us(100),
        deadline_ns: Nanos::MILLISECOND,
        cpus: vec![crate::workload::WorkloadCpu {
            cpu: 0,
            jobs: 7,
            misses: 2,
            late_start: 2,
            ..Default::default()
        }],
    });
    let v = judge(&r, None);
    assert!(
        matches!(
            v.reasons[..],
            [Reason::DeadlineMissed {
                cpu: 0,
                misses: 2,
                jobs: 7,
                ..
            }]
        ),
        "{v:?}"
    );
}

#[test]
fn a_run_is_judged_against_its_own_budget_and_a_budget_given_now_says_so() {
    let mut r = run();
    r.params.budget_ns = us(30);
    let own = judge(&r, None);
    assert_eq!(own.outcome(), Outcome::Fail);
    assert_eq!(own.criteria.budget, us(30));
    assert_eq!(own.criteria.from, BudgetFrom::Run);
    assert_eq!(own.criteria.describe(), "budget 30us, as measured");

    let again = judge(&r, us(100));
    assert_eq!(again.outcome(), Outcome::Pass);
    assert_eq!(
        again.criteria.describe(),
        "judged against 100us given now; measured with 30us"
    );
    assert_eq!(
        judge(&r, us(30)).criteria.describe(),
        "judged against 30us given now, the budget it was measured with"
    );
    // Held to the budget it was measured with, a run is judged by its own criteria.
    assert_eq!(
        judge_held_to(&r, Nanos::from_us(30)).criteria.from,
        BudgetFrom::Run
    );
    assert_eq!(
        judge_held_to(&r, Nanos::from_us(100)).criteria.from,
        BudgetFrom::Given { measured: us(30) }
    );

    r.params.budget_ns = None;
    let none = judge(&r, None);
    assert_eq!(
        (none.outcome(), none.criteria.budget),
        (Outcome::Pass, None)
    );
    assert_eq!(
        none.criteria.describe(),
        "measured without a budget: judged on completeness only"
    );
    assert_eq!(
        judge(&r, us(10)).criteria.describe(),
        "judged against 10us given now; measured without a budget"
    );
}

#[test]
fn a_failed_criterion_outranks_a_run_that_cannot_be_judged() {
    let mut r = run();
    r.cpus[1].raw.count = 0;
    assert_eq!(judge(&r, None).outcome(), Outcome::CannotJudge);
    let v = judge(&r, us(10));
    assert_eq!(v.outcome(), Outcome::Fail);
    assert_eq!(v.unjudgeable(), Some("CPU 1 has no samples"));
    assert_eq!(
        v.cpus,
        [
            CpuCheck {
                cpu: 0,
                worst: Worst::Maximum,
                ns: Some(40_000),
                over: true
            },
            CpuCheck {
                cpu: 1,
                worst: Worst::Maximum,
                ns: None,
                over: false
            }
        ]
    );
    assert_eq!(
        (Outcome::Fail.word(), Outcome::CannotJudge.as_str()),
        ("FAIL", "unjudgeable")
    );
}

#[test]
fn a_timerlat_run_that_lost_events_cannot_pass() {
    let mut r = run();
    r.params.engine = crate::measure::Engine::Timerlat;
    r.timerlat = Some(crate::timerlat::TimerlatInfo {
        period_ns: Nanos::MILLISECOND,
        in_instance: true,
        user_threads: false,
        stop_ns: None,
        stack_ns: None,
        trace_clock: "local".into(),
        irq: r.cpus.clone(),
        user: vec![],
        lost_events: 0,
        stop: None,
        analyses: vec![],
    });
    assert_eq!(judge(&r, us(40)).outcome(), Outcome::Pass);
    r.timerlat.as_mut().unwrap().lost_events = 3;
    let v = judge(&r, us(40));
    assert_eq!(v.outcome(), Outcome::CannotJudge);
    assert!(v.unjudgeable().unwrap().contains("lost 3 events"), "{v:?}");
    // What it did measure over the budget still fails it.
    assert_eq!(judge(&r, us(10)).outcome(), Outcome::Fail);
}

/// Issue #45: a run whose load ended by itself partway was measured without it for the rest:
/// it cannot be judged as the run asked for, whatever its figures, and the reason says when.
#[test]
fn a_run_whose_load_ended_early_cannot_be_judged() {
    let mut r = run();
    let mut load = crate::load::report::tests::sample();
    r.load = Some(load.clone());
    assert!(judge(&r, us(40)).passed());
    load.generators[0].ended_ns = Some(Nanos::from_ms(1000));
    r.load = Some(load);
    let v = judge(&r, us(40));
    assert_eq!(v.outcome(), Outcome::CannotJudge);
    assert!(
        v.unjudgeable()
            .unwrap()
            .contains("ended by itself 1.0 s into"),
        "{v:?}"
    );
}
