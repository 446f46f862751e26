//! `rtlab explain` graded on traces whose cause is known by construction (issue #44): the
//! truth corpus of `fixtures/truth` (its README says how each trace was made and what a truth
//! file holds). Every explanation of the delayed thread is graded:
//!
//! * **wrong**: the thread named as a cause of its own delay; or, where the truth names the
//!   planted culprit, another task as the main cause, the culprit with another kind, or the
//!   culprit's share more than 20 points off the planted one; or, where the truth plants a
//!   kind of cause and no task (RT throttling), a task named as the main cause;
//! * **right**: the planted culprit as the main cause, of its kind, with its share (or the
//!   planted kind of cause);
//! * **other**: no task is the main cause (a late timer interrupt while the CPU was idle or
//!   stalled, an interrupt handler): noise of the machine the trace was made on, which the
//!   truth does not cover.
//!
//! The test prints the grade per case and fails on any wrong explanation, and on a case where
//! fewer than the planted number of spikes were found right.

mod common;

use std::path::{Path, PathBuf};

use serde_json::Value;

/// What a truth file expects of the explanations of one thread.
#[derive(Debug)]
struct Expect {
    delayed: String,
    min_latency_ns: u64,
    culprit_pid: Option<u64>,
    kind: Option<String>,
    share: Option<f64>,
    spikes: usize,
}

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/truth")
}

/// Every case: its trace and what its truth file expects.
fn cases() -> Vec<(String, PathBuf, Vec<Expect>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(corpus()).unwrap() {
        let path = entry.unwrap().path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(case) = name.strip_suffix(".truth.toml") else {
            continue;
        };
        let truth: toml::Table = toml::from_str(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(truth["case"].as_str(), Some(case), "{name}");
        let expects = truth["expect"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: no [[expect]]"))
            .iter()
            .map(|e| Expect {
                delayed: e["delayed"].as_str().unwrap().to_string(),
                min_latency_ns: e["min_latency_us"].as_integer().unwrap() as u64 * 1_000,
                culprit_pid: e
                    .get("culprit_pid")
                    .and_then(|v| v.as_integer())
                    .map(|v| v as u64),
                kind: e.get("kind").and_then(|v| v.as_str()).map(str::to_string),
                share: e.get("share").and_then(|v| v.as_float()),
                spikes: e.get("spikes").and_then(|v| v.as_integer()).unwrap_or(0) as usize,
            })
            .collect();
        let trace = corpus().join(format!("{case}.dat"));
        assert!(trace.is_file(), "{name}: no {case}.dat beside it");
        out.push((case.to_string(), trace, expects));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// A part's task pid, when the part is a task.
fn task_pid(part: &Value) -> Option<u64> {
    let what = &part["what"];
    (what["kind"] == "task")
        .then(|| what["pid"].as_u64())
        .flatten()
}

#[derive(Default)]
struct Grade {
    right: usize,
    wrong: Vec<String>,
    other: usize,
}

/// One explanation against the truth.
fn grade(x: &Value, e: &Expect, g: &mut Grade) {
    let pid = x["pid"].as_u64();
    let late = x["latency_ns"].as_u64().unwrap_or(0);
    let parts = x["parts"].as_array().cloned().unwrap_or_default();
    let at = format!("{} us late", late / 1_000);
    if let Some(own) = parts.iter().find(|p| pid.is_some() && task_pid(p) == pid) {
        g.wrong
            .push(format!("{at}: blamed for its own delay: {}", own["what"]));
        return;
    }
    let Some(main) = parts.first() else {
        g.other += 1;
        return;
    };
    let Some(culprit) = e.culprit_pid else {
        // No task planted: right when the planted kind of cause is named (or, without one,
        // when nothing wrong is), wrong when a task is named in its place.
        let kind = x["culprit"].as_str().unwrap_or_default();
        match (&e.kind, task_pid(main)) {
            (None, _) => g.right += 1,
            (Some(k), _) if k == kind => g.right += 1,
            (Some(k), Some(_)) => g.wrong.push(format!(
                "{at}: a task, {}, named as the main cause ({kind}) where the planted cause is {k}",
                main["what"]
            )),
            (Some(_), None) => g.other += 1,
        }
        return;
    };
    match task_pid(main) {
        None => g.other += 1,
        Some(p) if p != culprit => g.wrong.push(format!(
            "{at}: main cause {} is not the planted culprit (pid {culprit})",
            main["what"]
        )),
        Some(_) => {
            let kind = x["culprit"].as_str().unwrap_or_default();
            let share = main["share"].as_f64().unwrap_or(0.0);
            if e.kind.as_deref().is_some_and(|k| k != kind) {
                g.wrong
                    .push(format!("{at}: the culprit as {kind}, not {:?}", e.kind));
            } else if e.share.is_some_and(|s| (s - share).abs() > 0.2) {
                g.wrong.push(format!(
                    "{at}: the culprit's share {share:.2}, planted {:?}",
                    e.share
                ));
            } else {
                g.right += 1;
            }
        }
    }
}

#[test]
fn explain_is_graded_on_traces_with_planted_causes() {
    let cases = cases();
    assert!(cases.len() >= 3, "the corpus: {cases:?}");
    let mut failures = Vec::new();
    eprintln!("case                      delayed          right  wrong  other");
    for (case, trace, expects) in &cases {
        let out = common::run_ok(&[
            "explain",
            trace.to_str().unwrap(),
            "--worst",
            "20",
            "--format",
            "json",
        ]);
        let doc: Value = serde_json::from_str(&out).unwrap();
        let xs = doc["explanations"].as_array().cloned().unwrap_or_default();
        for e in expects {
            let mut g = Grade::default();
            for x in xs.iter().filter(|x| {
                x["comm"] == e.delayed.as_str()
                    && x["latency_ns"].as_u64().unwrap_or(0) >= e.min_latency_ns
            }) {
                grade(x, e, &mut g);
            }
            eprintln!(
                "{case:<25} {:<16} {:>5}  {:>5}  {:>5}",
                e.delayed,
                g.right,
                g.wrong.len(),
                g.other
            );
            failures.extend(
                g.wrong
                    .iter()
                    .map(|w| format!("{case}: {}: {w}", e.delayed)),
            );
            if g.right < e.spikes {
                failures.push(format!(
                    "{case}: {}: {} spikes explained right, {} planted",
                    e.delayed, g.right, e.spikes
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "explain is wrong:\n{}",
        failures.join("\n")
    );
}
