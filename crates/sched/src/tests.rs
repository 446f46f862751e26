//! Whole task sets through `check`: the verdict per policy, response times, suggestions.

use model::CpuSet;
use model::sched::{DeadlineBandwidth, SchedPolicy, Verdict};

use super::*;

pub(crate) fn machine(cpus: u32) -> DeadlineBandwidth {
    DeadlineBandwidth {
        rt_runtime_us: 950_000,
        rt_period_us: 1_000_000,
        online: CpuSet::from_cpus(0..cpus),
        domains: vec![],
        server_bw: deadline::to_ratio(1_000_000_000, 50_000_000),
        server_source: "kernel default".into(),
        tasks_bw: 0,
        tasks: vec![],
        period_min_us: Some(100),
        period_max_us: Some(4_194_304),
    }
}

fn run(text: &str, policy: SchedPolicy) -> SchedReport {
    let set = parse(text, "t.toml").unwrap();
    check(&set, "t.toml", policy, Some(&machine(1)))
}

const BURNS: &str = r#"
[[task]]
name = "a"
period = "7ms"
wcet = "3ms"
[[task]]
name = "b"
period = "12ms"
wcet = "3ms"
[[task]]
name = "c"
period = "20ms"
wcet = "5ms"
"#;

#[test]
fn a_set_over_every_bound_passes_by_response_times() {
    let r = run(BURNS, SchedPolicy::Fifo);
    assert_eq!(r.verdict, Verdict::Schedulable);
    let fifo = analysis(&r.partitions[0], SchedPolicy::Fifo).unwrap();
    let resp: Vec<_> = fifo
        .tasks
        .iter()
        .map(|t| (t.name.as_str(), t.response_ns, t.priority))
        .collect();
    assert_eq!(
        resp,
        vec![
            ("a", Some(3_000_000), Some(49)),
            ("b", Some(6_000_000), Some(48)),
            ("c", Some(20_000_000), Some(47)),
        ]
    );
    let by_task: Vec<_> = r
        .results
        .iter()
        .map(|t| (t.name.as_str(), t.fifo.response_ns))
        .collect();
    assert_eq!(
        by_task,
        vec![
            ("a", Some(3_000_000)),
            ("b", Some(6_000_000)),
            ("c", Some(20_000_000))
        ]
    );
    assert!(
        r.results
            .iter()
            .all(|t| t.edf.verdict == Verdict::Schedulable)
    );
    let ll = fifo.tests.iter().find(|t| t.name == "liu-layland").unwrap();
    assert_eq!(ll.verdict, Verdict::Inconclusive);
    // EDF: implicit deadlines, U = 0.93 <= 1.
    let edf = analysis(&r.partitions[0], SchedPolicy::Edf).unwrap();
    assert_eq!(edf.verdict, Verdict::Schedulable);
    // SCHED_DEADLINE on one CPU: 93 % asked + 5 % server > 95 %.
    let dl = analysis(&r.partitions[0], SchedPolicy::Deadline).unwrap();
    assert_eq!(dl.verdict, Verdict::NotSchedulable);
}

#[test]
fn wrong_priorities_get_a_deadline_monotonic_suggestion() {
    let text = r#"
[[task]]
name = "logger"
period = "10ms"
wcet = "3ms"
priority = 80
[[task]]
name = "control"
period = "10ms"
deadline = "4ms"
wcet = "2ms"
priority = 70
"#;
    let r = run(text, SchedPolicy::Fifo);
    assert_eq!(r.verdict, Verdict::NotSchedulable);
    let fifo = analysis(&r.partitions[0], SchedPolicy::Fifo).unwrap();
    assert_eq!(fifo.tasks[1].verdict, Verdict::NotSchedulable);
    assert_eq!(fifo.tasks[1].response_ns, None);
    let s = fifo.suggestion.as_ref().unwrap();
    assert_eq!(s.method, "deadline-monotonic");
    assert_eq!(s.order[0].name, "control");
    assert_eq!(s.order[0].priority, 49);
    // EDF meets both: h(4) = 2, h(10) = 5.
    assert_eq!(
        analysis(&r.partitions[0], SchedPolicy::Edf)
            .unwrap()
            .verdict,
        Verdict::Schedulable
    );
    assert_eq!(run(text, SchedPolicy::Edf).verdict, Verdict::Schedulable);
}

#[test]
fn partitions_are_analysed_apart() {
    let text = r#"
[[task]]
name = "a"
period = "1ms"
wcet = "900us"
cpu = 1
[[task]]
name = "b"
period = "1ms"
wcet = "900us"
cpu = 2
"#;
    let r = run(text, SchedPolicy::Fifo);
    assert_eq!(r.partitions.len(), 2);
    assert_eq!(r.verdict, Verdict::Schedulable);
    assert!(r.notes.iter().all(|n| !n.contains("without a cpu")));
}

#[test]
fn an_overloaded_cpu_fails_everywhere_and_names_the_interval() {
    let text = r#"
[[task]]
name = "a"
period = "8ms"
wcet = "5ms"
deadline = "5ms"
[[task]]
name = "b"
period = "8ms"
wcet = "5ms"
"#;
    let r = run(text, SchedPolicy::Edf);
    assert_eq!(r.verdict, Verdict::NotSchedulable);
    let edf = analysis(&r.partitions[0], SchedPolicy::Edf).unwrap();
    let f = edf.first_failure.unwrap();
    // h(5ms) = 5ms, h(8ms) = 5 + 5 = 10ms > 8ms.
    assert_eq!(
        (f.t_ns, f.demand_ns, f.first),
        (8_000_000, 10_000_000, true)
    );
    assert_eq!(
        run(text, SchedPolicy::Fifo).verdict,
        Verdict::NotSchedulable
    );
}

#[test]
fn without_the_machine_deadline_is_undecided_never_a_pass() {
    let set = parse("[[task]]\nperiod = \"10ms\"\nwcet = \"1ms\"\n", "t.toml").unwrap();
    let r = check(&set, "t.toml", SchedPolicy::Deadline, None);
    assert_eq!(r.verdict, Verdict::Undecided);
    assert!(!r.passes());
    // Talk 002's reservations, 30 % and 20 %, on a two-CPU machine.
    let set = parse(
        "[[task]]\nname = \"a\"\nperiod = \"10ms\"\nwcet = \"3ms\"\n[[task]]\nname = \"b\"\nperiod = \"10ms\"\nwcet = \"2ms\"\n",
        "t.toml",
    )
    .unwrap();
    let r = check(&set, "t.toml", SchedPolicy::Deadline, Some(&machine(2)));
    assert_eq!(r.verdict, Verdict::Schedulable, "{:#?}", r.admission);
}

/// Issue #45: a SCHED_FIFO task of 9.7 ms every 10 ms meets its deadline by response time,
/// but needs 97 % of the CPU: RT throttling (950000 of 1000000 us) stops it 50 ms a second,
/// so the fixed-priority verdict is not schedulable, and says why.
#[test]
fn rt_throttling_is_in_the_fixed_priority_verdict() {
    let set = "[[task]]\nname = \"ctl\"\nperiod = \"10ms\"\nwcet = \"9.7ms\"\n";
    let report = run(set, SchedPolicy::Fifo);
    let fifo = analysis(&report.partitions[0], SchedPolicy::Fifo).unwrap();
    assert_eq!(fifo.verdict, Verdict::NotSchedulable);
    let rta = fifo
        .tests
        .iter()
        .find(|t| t.name == "response-time")
        .unwrap();
    assert_eq!(rta.verdict, Verdict::Schedulable);
    let throttle = fifo
        .tests
        .iter()
        .find(|t| t.name == "rt-throttling")
        .unwrap();
    assert_eq!(throttle.verdict, Verdict::NotSchedulable);
    assert!(
        throttle.note.contains("sched_rt_runtime_us 950000"),
        "{}",
        throttle.note
    );
    // Without the limit (-1) the same task is schedulable.
    let parsed = parse(set, "t.toml").unwrap();
    let unlimited = DeadlineBandwidth {
        rt_runtime_us: -1,
        ..machine(1)
    };
    let report = check(&parsed, "t.toml", SchedPolicy::Fifo, Some(&unlimited));
    let fifo = analysis(&report.partitions[0], SchedPolicy::Fifo).unwrap();
    assert_eq!(fifo.verdict, Verdict::Schedulable);
}
