//! Reading a task set: TOML (one `[[task]]` table per task) or the same structure as JSON,
//! every field checked where it enters, and a refusal as one line that names the file, the
//! line where the text has one, the task and the field.
//!
//! The kernel's own rule for a reservation, `runtime <= deadline <= period`, holds for every
//! task here with the WCET in place of the runtime: a job that needs longer than its deadline
//! cannot be scheduled by any policy, so such a set is bad input, not a verdict.

use std::collections::HashSet;

use model::Nanos;
use model::limits::MAX_CPU;
use model::nanos::parse_nanos;
use model::sched::{MAX_TASK_TIME, MAX_TASKS, SchedPolicy, Task, TaskSet};
use serde::Deserialize;

/// Why a task set was refused: one line naming where and what, and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TaskSetError(pub String);

/// A time as the file wrote it: text with a unit, or a bare number (refused: which unit?).
#[derive(Deserialize)]
#[serde(untagged)]
enum TimeText {
    Text(String),
    Number(f64),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSet {
    policy: Option<String>,
    #[serde(default, alias = "tasks")]
    task: Vec<RawTask>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTask {
    name: Option<String>,
    period: Option<TimeText>,
    wcet: Option<TimeText>,
    deadline: Option<TimeText>,
    priority: Option<i64>,
    cpu: Option<i64>,
    jitter: Option<TimeText>,
    blocking: Option<TimeText>,
    runtime: Option<TimeText>,
}

/// The text's form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    Toml,
    Json,
}

/// Reads a task set from `text`; `source` (the file name) starts every error.
pub fn parse(text: &str, source: &str) -> Result<TaskSet, TaskSetError> {
    if text.trim().is_empty() {
        return Err(TaskSetError(format!(
            "{source}: it is empty; write one [[task]] table per task with name, period and wcet"
        )));
    }
    let form = if source.ends_with(".json") || text.trim_start().starts_with('{') {
        Form::Json
    } else {
        Form::Toml
    };
    let raw: RawSet = match form {
        Form::Json => serde_json::from_str(text)
            .map_err(|e| TaskSetError(format!("{source}: not a task set: {e}")))?,
        Form::Toml => toml::from_str(text).map_err(|e| {
            TaskSetError(model::toml_error::one_line(
                source,
                &e.to_string(),
                "task set",
            ))
        })?,
    };
    let lines = match form {
        Form::Toml => TomlLines::index(text),
        Form::Json => TomlLines::default(),
    };
    validate(raw, source, &lines)
}

/// Where each `[[task]]` table starts in a TOML text, so a refusal can name the line.
#[derive(Default)]
struct TomlLines {
    /// Per task table: its header's line and the lines of its `key = value` pairs.
    tables: Vec<(usize, Vec<(String, usize)>)>,
}

impl TomlLines {
    fn index(text: &str) -> TomlLines {
        let mut tables: Vec<(usize, Vec<(String, usize)>)> = Vec::new();
        let mut in_task = false;
        for (i, line) in text.lines().enumerate() {
            let l = line.trim();
            if l.starts_with('[') {
                let compact: String = l.chars().filter(|c| !c.is_whitespace()).collect();
                in_task = compact.starts_with("[[task]]");
                if in_task {
                    tables.push((i + 1, Vec::new()));
                }
            } else if in_task
                && let Some((key, _)) = l.split_once('=')
                && let Some(table) = tables.last_mut()
            {
                table
                    .1
                    .push((key.trim().trim_matches('"').to_string(), i + 1));
            }
        }
        TomlLines { tables }
    }

    /// "line N: " for task `index`'s `field` (or its header), or nothing.
    fn at(&self, index: usize, field: Option<&str>) -> String {
        let Some((header, keys)) = self.tables.get(index) else {
            return String::new();
        };
        let line = field
            .and_then(|f| keys.iter().find(|(k, _)| k == f).map(|(_, l)| *l))
            .unwrap_or(*header);
        format!("line {line}: ")
    }
}

/// Checks every task and builds the set.
fn validate(raw: RawSet, source: &str, lines: &TomlLines) -> Result<TaskSet, TaskSetError> {
    let policy = match raw.policy.as_deref() {
        None => None,
        Some(p) => Some(policy_named(p).ok_or_else(|| {
            TaskSetError(format!(
                "{source}: policy = \"{p}\" is not a policy; use \"fifo\", \"edf\" or \"deadline\""
            ))
        })?),
    };
    if raw.task.is_empty() {
        return Err(TaskSetError(format!(
            "{source}: no tasks; write one [[task]] table per task with name, period and wcet"
        )));
    }
    if raw.task.len() > MAX_TASKS {
        return Err(TaskSetError(format!(
            "{source}: {} tasks, more than rtlab analyses ({MAX_TASKS}); split the set by CPU",
            raw.task.len()
        )));
    }
    let mut tasks = Vec::with_capacity(raw.task.len());
    let mut names = HashSet::new();
    for (index, t) in raw.task.into_iter().enumerate() {
        let task = validate_task(t, index, source, lines)?;
        if !names.insert(task.name.clone()) {
            return Err(TaskSetError(format!(
                "{source}: {}task \"{}\" is named twice; give each task its own name",
                lines.at(index, Some("name")),
                task.name
            )));
        }
        tasks.push(task);
    }
    let given = tasks.iter().filter(|t| t.priority.is_some()).count();
    if given != 0 && given != tasks.len() {
        let missing = tasks.iter().position(|t| t.priority.is_none()).unwrap_or(0);
        return Err(TaskSetError(format!(
            "{source}: {}task \"{}\" has no priority while {given} others have one; give every \
             task a priority, or none for rate-monotonic order",
            lines.at(missing, None),
            tasks[missing].name
        )));
    }
    Ok(TaskSet { policy, tasks })
}

/// A policy by the name a task set or flag uses.
pub fn policy_named(name: &str) -> Option<SchedPolicy> {
    match name {
        "fifo" | "rr" | "fixed-priority" => Some(SchedPolicy::Fifo),
        "edf" => Some(SchedPolicy::Edf),
        "deadline" | "sched_deadline" => Some(SchedPolicy::Deadline),
        _ => None,
    }
}

fn validate_task(
    t: RawTask,
    index: usize,
    source: &str,
    lines: &TomlLines,
) -> Result<Task, TaskSetError> {
    let name = t.name.unwrap_or_else(|| format!("task{}", index + 1));
    let who = |field: Option<&str>| format!("{source}: {}task \"{name}\"", lines.at(index, field));
    if name.is_empty() || name.len() > 64 || name.chars().any(char::is_control) {
        return Err(TaskSetError(format!(
            "{}: name must be 1 to 64 printable characters",
            who(Some("name"))
        )));
    }
    let period = task_time(&who, "period", t.period, true)?.unwrap_or_default();
    let wcet = task_time(&who, "wcet", t.wcet, true)?.unwrap_or_default();
    let deadline = task_time(&who, "deadline", t.deadline, false)?.unwrap_or(period);
    let jitter = task_time(&who, "jitter", t.jitter, false)?.unwrap_or_default();
    let blocking = task_time(&who, "blocking", t.blocking, false)?.unwrap_or_default();
    let runtime = task_time(&who, "runtime", t.runtime, false)?;
    let runtime = check_times(&who, period, wcet, deadline, runtime)?;
    let priority = match t.priority {
        None => None,
        Some(p @ 1..=99) => Some(p as u8),
        Some(p) => {
            return Err(TaskSetError(format!(
                "{}: priority {p} is outside SCHED_FIFO's 1-99 (higher runs first)",
                who(Some("priority"))
            )));
        }
    };
    let cpu = match t.cpu {
        None => None,
        Some(c) if (0..=i64::from(MAX_CPU)).contains(&c) => Some(c as u32),
        Some(c) => {
            return Err(TaskSetError(format!(
                "{}: cpu {c} is not a CPU number (0-{MAX_CPU})",
                who(Some("cpu"))
            )));
        }
    };
    Ok(Task {
        name,
        period,
        wcet,
        deadline,
        priority,
        cpu,
        jitter,
        blocking,
        runtime,
        jitter_source: None,
    })
}

/// A task's time `field`: a string with a unit, at most a day; `None` when absent and not
/// `required`. `who` names the task (and the field's line) in errors.
fn task_time(
    who: &impl Fn(Option<&str>) -> String,
    field: &str,
    value: Option<TimeText>,
    required: bool,
) -> Result<Option<Nanos>, TaskSetError> {
    let Some(value) = value else {
        if required {
            return Err(TaskSetError(format!(
                "{}: no {field}; add e.g. {field} = \"4ms\"",
                who(None)
            )));
        }
        return Ok(None);
    };
    let text = match value {
        TimeText::Text(s) => s,
        TimeText::Number(n) => {
            return Err(TaskSetError(format!(
                "{}: {field} = {n} has no unit; write it as a string with one, e.g. {field} = \"{n}us\"",
                who(Some(field))
            )));
        }
    };
    let v = parse_nanos(&text)
        .map_err(|e| TaskSetError(format!("{}: {field}: {e}", who(Some(field)))))?;
    if v > MAX_TASK_TIME {
        return Err(TaskSetError(format!(
            "{}: {field} = \"{text}\" is longer than a day; check the unit",
            who(Some(field))
        )));
    }
    Ok(Some(v))
}

/// The kernel's order of a task's times: 0 < wcet <= deadline <= period, and
/// 0 < runtime <= deadline. Returns the runtime (the wcet when not given).
fn check_times(
    who: &impl Fn(Option<&str>) -> String,
    period: Nanos,
    wcet: Nanos,
    deadline: Nanos,
    runtime: Option<Nanos>,
) -> Result<Nanos, TaskSetError> {
    if wcet == Nanos::ZERO {
        return Err(TaskSetError(format!(
            "{}: wcet is zero; give the worst-case execution time of one job",
            who(Some("wcet"))
        )));
    }
    if deadline > period {
        return Err(TaskSetError(format!(
            "{}: deadline {deadline} is longer than the period {period}; the kernel needs \
             runtime <= deadline <= period (use a deadline up to the period)",
            who(Some("deadline"))
        )));
    }
    if wcet > deadline {
        return Err(TaskSetError(format!(
            "{}: wcet {wcet} is longer than the deadline {deadline}; no policy can meet it \
             (the kernel needs runtime <= deadline <= period)",
            who(Some("wcet"))
        )));
    }
    let runtime = runtime.unwrap_or(wcet);
    if runtime == Nanos::ZERO || runtime > deadline {
        return Err(TaskSetError(format!(
            "{}: runtime {runtime} must be above zero and at most the deadline {deadline} \
             (the kernel needs runtime <= deadline <= period)",
            who(Some("runtime"))
        )));
    }
    Ok(runtime)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
policy = "fifo"

[[task]]
name = "control"
period = "4ms"
wcet = "1ms"          # worst-case execution time
deadline = "4ms"
priority = 80
cpu = 2
jitter = "50us"
blocking = "100us"

[[task]]
name = "log"
period = "100ms"
wcet = "10ms"
priority = 10
"#;

    #[test]
    fn reads_the_issue_example() {
        let set = parse(GOOD, "t.toml").unwrap();
        assert_eq!(set.policy, Some(SchedPolicy::Fifo));
        let c = &set.tasks[0];
        assert_eq!(c.period, Nanos::from_ms(4));
        assert_eq!(c.jitter, Nanos::from_us(50));
        assert_eq!(c.blocking, Nanos::from_us(100));
        assert_eq!(c.runtime, Nanos::from_ms(1));
        assert_eq!(c.cpu, Some(2));
        assert_eq!(set.tasks[1].deadline, Nanos::from_ms(100));
    }

    #[test]
    fn json_is_the_same_structure() {
        let json = r#"{"tasks": [{"name": "a", "period": "10ms", "wcet": "2ms"}]}"#;
        let set = parse(json, "t.json").unwrap();
        assert_eq!(set.tasks[0].wcet, Nanos::from_ms(2));
    }

    fn refusal(text: &str) -> String {
        parse(text, "t.toml").unwrap_err().0
    }

    #[test]
    fn a_typo_names_the_line_and_field() {
        let e = refusal("[[task]]\nname = \"a\"\nperiod = \"4ms\"\nwcte = \"1ms\"\n");
        assert!(e.starts_with("t.toml: line 4"), "{e}");
        assert!(e.contains("wcte"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn impossible_numbers_name_the_task_and_field() {
        let e = refusal("[[task]]\nname = \"a\"\nperiod = \"4ms\"\nwcet = \"5ms\"\n");
        assert!(e.contains("line 4: task \"a\": wcet 5ms"), "{e}");
        let e = refusal(
            "[[task]]\nname = \"a\"\nperiod = \"4ms\"\nwcet = \"1ms\"\ndeadline = \"5ms\"\n",
        );
        assert!(e.contains("line 5: task \"a\": deadline 5ms"), "{e}");
        let e = refusal("[[task]]\nname = \"a\"\nperiod = 4\nwcet = \"1ms\"\n");
        assert!(e.contains("period = 4 has no unit"), "{e}");
        let e =
            refusal("[[task]]\nname = \"a\"\nperiod = \"4ms\"\nwcet = \"1ms\"\npriority = 100\n");
        assert!(e.contains("line 5") && e.contains("1-99"), "{e}");
        let e = refusal("[[task]]\nname = \"a\"\nwcet = \"1ms\"\n");
        assert!(e.contains("line 1: task \"a\": no period"), "{e}");
        let e = refusal("[[task]]\nname = \"a\"\nperiod = \"4ms\"\nwcet = \"0ms\"\n");
        assert!(e.contains("wcet is zero"), "{e}");
        let e = refusal("[[task]]\nperiod = \"400000s\"\nwcet = \"1ms\"\n");
        assert!(e.contains("longer than a day"), "{e}");
    }

    #[test]
    fn sets_that_cannot_be_analysed_are_refused() {
        assert!(refusal("").contains("it is empty"));
        assert!(refusal(" \n").contains("it is empty"));
        let e = refusal(
            "[[task]]\nname = \"a\"\nperiod = \"4ms\"\nwcet = \"1ms\"\n[[task]]\nname = \"a\"\nperiod = \"4ms\"\nwcet = \"1ms\"\n",
        );
        assert!(e.contains("line 6: task \"a\" is named twice"), "{e}");
        let e = refusal(
            "[[task]]\nname = \"a\"\nperiod = \"4ms\"\nwcet = \"1ms\"\npriority = 3\n[[task]]\nname = \"b\"\nperiod = \"4ms\"\nwcet = \"1ms\"\n",
        );
        assert!(e.contains("line 6: task \"b\" has no priority"), "{e}");
        assert!(refusal("policy = \"cfs\"\n").contains("not a policy"));
        assert!(refusal("[task\n").starts_with("t.toml: line 1"));
        let e = parse("{\"task\": [{\"name\": 3}]}", "t.json")
            .unwrap_err()
            .0;
        assert!(
            e.starts_with("t.json: not a task set") && !e.contains('\n'),
            "{e}"
        );
    }
}
