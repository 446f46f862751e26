//! Reading explanations old and new, the handler fixes, the analyses' tag.

use super::*;

#[test]
fn handlers_get_the_fix_of_what_they_are() {
    assert_eq!(HandlerFix::of("irq 41 eth0-rx-0"), HandlerFix::HardIrq);
    assert_eq!(HandlerFix::of("local_timer interrupt"), HandlerFix::Vector);
    assert_eq!(HandlerFix::of("softirq NET_RX"), HandlerFix::Network);
    assert_eq!(HandlerFix::of("softirq NET_TX"), HandlerFix::Network);
    assert_eq!(HandlerFix::of("softirq TIMER"), HandlerFix::Timers);
    assert_eq!(HandlerFix::of("softirq HRTIMER"), HandlerFix::Timers);
    assert_eq!(HandlerFix::of("softirq RCU"), HandlerFix::Rcu);
    assert_eq!(HandlerFix::of("softirq SCHED"), HandlerFix::Sched);
    assert_eq!(HandlerFix::of("softirq BLOCK"), HandlerFix::Block);
    assert_eq!(HandlerFix::of("softirq TASKLET"), HandlerFix::Tasklet);
    // Unnamed softirqs by their vector number, in the kernel's order.
    assert_eq!(HandlerFix::of("softirq 3"), HandlerFix::Network);
    assert_eq!(HandlerFix::of("softirq 9"), HandlerFix::Rcu);
    assert_eq!(HandlerFix::of("softirq 12"), HandlerFix::OtherSoftirq);
    assert!(HandlerFix::of("softirq RCU").is_softirq());
    assert!(!HandlerFix::of("irq 9 acpi").is_softirq());
}

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/../../fixtures/explanations/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A capture an rtlab before `rtlab.explain/2` wrote (a real run's, as stored in its
/// result file and in the store's `trace_json`): its sentences are read, kept to be told
/// as they were, and written back as they were read (nothing is lost).
#[test]
fn explanations_written_before_explain_2_still_read() {
    let old: TraceCapture =
        serde_json::from_str(&fixture("trace_capture_before_explain2.json")).unwrap();
    assert_eq!(old.explanations.len(), 8);
    for x in &old.explanations {
        assert_eq!(x.phases, None);
        assert!(
            x.old_story
                .as_deref()
                .unwrap_or_default()
                .starts_with("CPU ")
        );
        assert!(x.caveats.iter().all(|c| matches!(c, Caveat::Said(_))));
    }
    let again = serde_json::to_value(&old).unwrap();
    let second = &again["explanations"][1];
    assert_eq!(
        second["story"],
        old.explanations[1].old_story.as_deref().unwrap()
    );
    assert!(second.get("phases").is_none(), "{second}");
    // Caveats in words stay words.
    let said = second["caveats"][0].as_str().unwrap_or_default();
    assert!(said.starts_with("4 switch(es) on CPU 1"), "{said}");
    let back: TraceCapture = serde_json::from_value(again).unwrap();
    assert_eq!(back, old, "an old capture reads back equal to itself");
}

/// Explanations as written now: the phases, and caveats tagged by kind with their figures.
#[test]
fn explanations_keep_structure_not_sentences() {
    let told: serde_json::Value = serde_json::from_str(&fixture("told.json")).unwrap();
    for case in told.as_array().unwrap() {
        let x: Explanation = serde_json::from_value(case["explanation"].clone()).unwrap();
        assert!(x.phases.is_some() && x.old_story.is_none());
        let again = serde_json::to_value(&x).unwrap();
        assert_eq!(again, case["explanation"]);
    }
    let c = Caveat::Migrated {
        from: 0,
        to: 1,
        at_ns: -500_000,
    };
    let json = serde_json::to_string(&c).unwrap();
    assert_eq!(
        json,
        r#"{"kind":"migrated","from":0,"to":1,"at_ns":-500000}"#
    );
    assert_eq!(serde_json::from_str::<Caveat>(&json).unwrap(), c);
    let unit = serde_json::to_string(&Caveat::NoWakeup).unwrap();
    assert_eq!(unit, r#"{"kind":"no-wakeup"}"#);
    let unknown = r#"{"kind":"lost-events","times":1,"x":1}"#;
    assert!(serde_json::from_str::<Caveat>(unknown).is_err());
}

/// What a part was is a tagged object with its figures, every kind of it; the words an
/// rtlab before `rtlab.explain/2` stored there read as words.
#[test]
fn what_a_part_was_is_data_not_words() {
    let hog = Task::new("hog", 812, 0);
    let cases = [
        (
            Agent::Irq {
                irq: 36,
                name: "virtio1-req.0".to_string(),
            },
            r#"{"kind":"irq","irq":36,"name":"virtio1-req.0"}"#,
        ),
        (
            Agent::Vector {
                name: "local_timer".to_string(),
            },
            r#"{"kind":"vector","name":"local_timer"}"#,
        ),
        (
            Agent::Softirq {
                name: "TIMER".to_string(),
            },
            r#"{"kind":"softirq","name":"TIMER"}"#,
        ),
        (
            Agent::Task(hog.clone()),
            r#"{"kind":"task","comm":"hog","pid":812,"prio":0}"#,
        ),
        (
            Agent::FairShare(Task {
                prio: None,
                ..hog.clone()
            }),
            r#"{"kind":"fair-share","comm":"hog","pid":812,"prio":null}"#,
        ),
        (Agent::Idle, r#"{"kind":"idle"}"#),
        (
            Agent::Untraced {
                task: Some(hog),
                irqs_off: true,
            },
            r#"{"kind":"untraced","task":{"comm":"hog","pid":812,"prio":0},"irqs_off":true}"#,
        ),
        (Agent::Expiry, r#"{"kind":"expiry"}"#),
        (Agent::ClockRead, r#"{"kind":"clock-read"}"#),
        (Agent::NoSwitch, r#"{"kind":"no-switch"}"#),
        (Agent::FromIdle, r#"{"kind":"from-idle"}"#),
        (
            Agent::Asleep {
                state: "D".to_string(),
            },
            r#"{"kind":"asleep","state":"D"}"#,
        ),
        (
            Agent::Said("irq 36 virtio1-req.0".to_string()),
            r#""irq 36 virtio1-req.0""#,
        ),
    ];
    for (agent, json) in cases {
        assert_eq!(serde_json::to_string(&agent).unwrap(), json);
        assert_eq!(
            serde_json::from_str::<Agent>(json).unwrap(),
            agent,
            "{json}"
        );
    }
    for bad in [
        r#"{"kind":"irq","irq":36}"#,
        r#"{"kind":"task","comm":"x","pid":1,"prio":0,"extra":1}"#,
        r#"{"kind":"nonsense"}"#,
        r#"{"kind":"irq","irq":-1,"name":"x"}"#,
        "36",
    ] {
        assert!(serde_json::from_str::<Agent>(bad).is_err(), "{bad}");
    }
}

#[test]
fn trace_stats_carry_their_analysis_as_a_tag() {
    let doc = TraceStats {
        schema: STATS_SCHEMA.to_string(),
        source: "t".to_string(),
        trace: TraceSummary::default(),
        threshold_ns: 50_000,
        rows: StatsRows::Sched(Vec::new()),
    };
    let value = serde_json::to_value(&doc).unwrap();
    assert_eq!(value["analysis"], "sched");
    assert_eq!(value["rows"], serde_json::json!([]));
    let back: TraceStats = serde_json::from_value(value).unwrap();
    assert_eq!(back, doc);
}
