//! `rtlab explain` graded on traces whose cause is known by construction (issue #44): the
//! truth corpus of `fixtures/truth` (its README says how each trace was made and what a truth
//! file holds). Every explanation of the delayed thread is graded:
//!
//! * **wrong**: the thread named as a cause of its own delay; a handler pattern the truth did
//!   not plant (a cause with no evidence); or, where the truth names the planted culprits,
//!   another task as the main cause, a culprit with another kind, or the culprits' share more
//!   than 20 points off the planted one; or, where the truth plants a kind of cause and no
//!   task (RT throttling), a task named as the main cause (unless the machine's own tasks
//!   are allowed: `bystanders = "any"`); or another interrupt handler than the planted one
//!   (`culprit_irq`);
//! * **right**: a planted culprit as the main cause, of its kind, with the culprits' share (or
//!   the planted kind of cause); where the truth allows the cause to be told as a late timer
//!   interrupt (`timer-delay`: interrupts off, on a kernel without the preemptirq
//!   tracepoints), the task it came in counts as the one named;
//! * **other**: no task is the main cause (a late timer interrupt while the CPU was idle or
//!   stalled, an interrupt handler), or a task the truth allows (`bystander_pid`), or a
//!   lower-priority task that kept the CPU where a culprit is planted (without preemptirq
//!   tracepoints, and under emulation, a non-preemptible section and a stalled CPU read the
//!   same): noise of the machine the trace was made on, which the truth does not cover.
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
    /// The planted culprits (`culprit_pid`: one pid or several, for several causes in one
    /// window): the main cause must be one of them.
    culprits: Vec<u64>,
    /// The planted culprits by name (`culprit_comm`, one or several), where their pids are not
    /// known beforehand (a shell loop and the programs it forks).
    culprit_comms: Vec<String>,
    /// The kinds of cause the planted one may be told as (`kind`: one, or several where the
    /// kernel decides which the trace can show, such as interrupts off: a non-preemptible
    /// section with the preemptirq tracepoints, a late timer interrupt while the culprit ran
    /// without them).
    kinds: Vec<String>,
    /// The planted interrupt handler by name (`culprit_irq`: `ttyS0`): a main cause that is
    /// another device's handler is wrong.
    culprit_irq: Option<String>,
    /// What the planted cause's main part must be (`what`: its `what.kind`, such as `idle` for
    /// a CPU woken from its idle state): the same kind of part told of something else is
    /// graded other.
    what: Option<String>,
    /// Whether the machine's own tasks may be the main cause of some wake-ups (`bystanders =
    /// "any"`): where no task is planted, a task named is graded other, not wrong (the thread
    /// itself never).
    any_bystander: bool,
    /// The planted share of the delay, of all the culprits' parts together.
    share: Option<f64>,
    spikes: usize,
    /// The handler patterns the planted cause may show (`patterns`; none by default).
    patterns: Vec<String>,
    /// Whether every planted culprit held the CPU in each graded wake-up (`together`: several
    /// causes in one window), so that each must be named.
    together: bool,
    /// Tasks not planted that may delay the thread too (`bystander_pid`: the other tasks at or
    /// above its priority on its CPU, such as the console's IRQ thread): one named as the main
    /// cause is graded other.
    bystanders: Vec<u64>,
    /// How many of the worst spikes to explain (`worst`, 20 by default): a planted cause that
    /// delays by less than the machine's own noise is found further down.
    worst: usize,
}

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/truth")
}

/// The truth files of the corpus: those of `fixtures/truth` and of its directories (one per
/// machine the cases were recorded on, such as `lab-rt-6.12-amd64`).
fn truth_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![corpus()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.to_str().is_some_and(|p| p.ends_with(".truth.toml")) {
                files.push(path);
            }
        }
    }
    files
}

/// A truth file's value at `key`: one string or several.
fn strings(name: &str, e: &toml::Value, key: &str) -> Vec<String> {
    match e.get(key) {
        None => Vec::new(),
        Some(toml::Value::String(c)) => vec![c.clone()],
        Some(toml::Value::Array(cs)) => cs
            .iter()
            .map(|c| {
                c.as_str()
                    .unwrap_or_else(|| panic!("{name}: {key}"))
                    .to_string()
            })
            .collect(),
        Some(other) => panic!("{name}: {key} {other:?}"),
    }
}

/// A truth file's `[[expect]]`.
fn expect(name: &str, e: &toml::Value) -> Expect {
    let pids = |key: &str| match e.get(key) {
        None => Vec::new(),
        Some(toml::Value::Integer(pid)) => vec![*pid as u64],
        Some(toml::Value::Array(pids)) => pids
            .iter()
            .map(|p| p.as_integer().unwrap_or_else(|| panic!("{name}: {key}")) as u64)
            .collect(),
        Some(other) => panic!("{name}: {key} {other:?}"),
    };
    let culprits = pids("culprit_pid");
    Expect {
        delayed: e["delayed"].as_str().unwrap().to_string(),
        min_latency_ns: e["min_latency_us"].as_integer().unwrap() as u64 * 1_000,
        culprits,
        culprit_comms: strings(name, e, "culprit_comm"),
        kinds: strings(name, e, "kind"),
        what: e.get("what").and_then(|v| v.as_str()).map(str::to_string),
        any_bystander: e.get("bystanders").and_then(|v| v.as_str()) == Some("any"),
        culprit_irq: e
            .get("culprit_irq")
            .and_then(|v| v.as_str())
            .map(str::to_string),
        share: e.get("share").and_then(|v| v.as_float()),
        spikes: e.get("spikes").and_then(|v| v.as_integer()).unwrap_or(0) as usize,
        patterns: e
            .get("patterns")
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|p| p.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
        together: e.get("together").and_then(|v| v.as_bool()).unwrap_or(false),
        bystanders: pids("bystander_pid"),
        worst: e.get("worst").and_then(|v| v.as_integer()).unwrap_or(20) as usize,
    }
}

/// Every case: its name (its path under the corpus), its trace (`CASE.dat`, or the kernel's
/// text as `CASE.txt`) and what its truth file expects.
fn cases() -> Vec<(String, PathBuf, Vec<Expect>)> {
    let mut out = Vec::new();
    for path in truth_files() {
        let name = path
            .strip_prefix(corpus())
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let case = name.strip_suffix(".truth.toml").unwrap();
        let truth: toml::Table = toml::from_str(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let stem = Path::new(case).file_name().unwrap().to_str().unwrap();
        assert_eq!(truth["case"].as_str(), Some(stem), "{name}");
        let expects = truth["expect"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: no [[expect]]"))
            .iter()
            .map(|e| expect(&name, e))
            .collect();
        let trace = ["dat", "txt"]
            .iter()
            .map(|ext| corpus().join(format!("{case}.{ext}")))
            .find(|t| t.is_file())
            .unwrap_or_else(|| panic!("{name}: no {case}.dat or {case}.txt beside it"));
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

/// The task that ran through a stretch the trace cannot see into (a timer interrupt late
/// while it ran, no event saying why): the one lead such a part gives, a culprit's where the
/// culprit held interrupts off on a kernel without the preemptirq tracepoints.
fn untraced_pid(part: &Value) -> Option<u64> {
    let what = &part["what"];
    (what["kind"] == "untraced")
        .then(|| what["task"]["pid"].as_u64())
        .flatten()
}

#[derive(Default)]
struct Grade {
    right: usize,
    wrong: Vec<String>,
    other: usize,
}

impl Expect {
    /// Whether the truth plants a task.
    fn planted(&self) -> bool {
        !self.culprits.is_empty() || !self.culprit_comms.is_empty()
    }

    /// Whether `part` is a planted culprit's: the task it names, or, where the truth allows
    /// the planted cause to be told as a late timer interrupt (interrupts off on a kernel
    /// without the preemptirq tracepoints), the task that ran through it unseen.
    fn is_culprit(&self, part: &Value) -> bool {
        let unseen = self.kinds.iter().any(|k| k == "timer-delay");
        let (pid, comm) = match (task_pid(part), untraced_pid(part)) {
            (Some(p), _) => (p, &part["what"]["comm"]),
            (None, Some(p)) if unseen => (p, &part["what"]["task"]["comm"]),
            _ => return false,
        };
        self.culprits.contains(&pid) || self.culprit_comms.iter().any(|c| comm == c.as_str())
    }
}

/// The handler patterns an explanation names, which the truth does not allow.
fn unplanted_patterns(parts: &[Value], e: &Expect) -> Vec<String> {
    parts
        .iter()
        .filter_map(|p| p["inside"]["pattern"].as_str())
        .filter(|p| !e.patterns.iter().any(|a| a == p))
        .map(str::to_string)
        .collect()
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
    let unplanted = unplanted_patterns(&parts, e);
    if !unplanted.is_empty() {
        g.wrong.push(format!(
            "{at}: a pattern with no planted cause: {}",
            unplanted.join(", ")
        ));
        return;
    }
    let Some(main) = parts.first() else {
        g.other += 1;
        return;
    };
    let kind = x["culprit"].as_str().unwrap_or_default();
    if let (Some(want), true) = (&e.culprit_irq, main["what"]["kind"] == "irq")
        && main["what"]["name"] != want.as_str()
    {
        g.wrong.push(format!(
            "{at}: main cause {}, not the planted irq {want}",
            main["what"]
        ));
        return;
    }
    if !e.planted() {
        grade_kind(main, kind, &at, e, g);
        return;
    }
    let named = task_pid(main).or(untraced_pid(main).filter(|_| e.is_culprit(main)));
    match named {
        None => g.other += 1,
        // A task the truth allows, or a lower-priority one that kept the CPU: on a machine
        // without preemptirq tracepoints (and under emulation) a non-preemptible section and
        // a stalled CPU read the same, and the truth plants neither.
        Some(p) if e.bystanders.contains(&p) && !e.is_culprit(main) => g.other += 1,
        Some(_) if !e.is_culprit(main) && main["kind"] == "non-preemptible" => g.other += 1,
        Some(_) if !e.is_culprit(main) => g.wrong.push(format!(
            "{at}: main cause {} is not a planted culprit (pid {:?}, name {:?})",
            main["what"], e.culprits, e.culprit_comms
        )),
        Some(_) => {
            // The culprits' parts together: several planted causes share the delay.
            let share: f64 = parts
                .iter()
                .filter(|p| e.is_culprit(p))
                .map(|p| p["share"].as_f64().unwrap_or(0.0))
                .sum();
            let unnamed: Vec<u64> = e
                .culprits
                .iter()
                .filter(|c| !parts.iter().any(|p| task_pid(p) == Some(**c)))
                .copied()
                .collect();
            if e.together && !unnamed.is_empty() {
                g.wrong.push(format!(
                    "{at}: planted culprits {unnamed:?} held the CPU too, but are not named"
                ));
            } else if !e.kinds.is_empty() && !e.kinds.iter().any(|k| k == kind) {
                g.wrong
                    .push(format!("{at}: the culprit as {kind}, not {:?}", e.kinds));
            } else if e.share.is_some_and(|s| (s - share).abs() > 0.2) {
                g.wrong.push(format!(
                    "{at}: the culprits' share {share:.2}, planted {:?}",
                    e.share
                ));
            } else {
                g.right += 1;
            }
        }
    }
}

/// An explanation's main part where the truth plants no task: right when the planted kind of
/// cause is named (or, without one, when nothing wrong is), wrong when a task is named in its
/// place (unless the machine's own tasks may be: other).
fn grade_kind(main: &Value, kind: &str, at: &str, e: &Expect, g: &mut Grade) {
    let what_fits = e
        .what
        .as_ref()
        .is_none_or(|w| main["what"]["kind"] == w.as_str());
    match (e.kinds.is_empty(), task_pid(main)) {
        (true, _) => g.right += 1,
        _ if e.kinds.iter().any(|k| k == kind) && what_fits => g.right += 1,
        (false, Some(_)) if e.any_bystander => g.other += 1,
        (false, Some(_)) => g.wrong.push(format!(
            "{at}: a task, {}, named as the main cause ({kind}) where the planted cause is {:?}",
            main["what"], e.kinds
        )),
        (false, None) => g.other += 1,
    }
}

#[test]
fn explain_is_graded_on_traces_with_planted_causes() {
    let cases = cases();
    assert!(cases.len() >= 3, "the corpus: {cases:?}");
    let mut failures = Vec::new();
    eprintln!("case                                delayed          right  wrong  other");
    for (case, trace, expects) in &cases {
        let worst = expects
            .iter()
            .map(|e| e.worst)
            .max()
            .unwrap_or(20)
            .to_string();
        let out = common::run_ok(&[
            "explain",
            trace.to_str().unwrap(),
            "--spikes",
            &worst,
            "--format",
            "json",
        ]);
        let doc: Value = serde_json::from_str(&out).unwrap();
        let xs = doc["explanations"].as_array().cloned().unwrap_or_default();
        for e in expects {
            let mut g = Grade::default();
            for x in xs.iter().take(e.worst).filter(|x| {
                x["comm"] == e.delayed.as_str()
                    && x["latency_ns"].as_u64().unwrap_or(0) >= e.min_latency_ns
            }) {
                grade(x, e, &mut g);
            }
            eprintln!(
                "{case:<35} {:<16} {:>5}  {:>5}  {:>5}",
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
