//! A campaign plan (`rtlab campaign PLAN.toml`): the phases a long evaluation runs one after
//! the other — each a measurement with its label, duration, load, tuning and budget, or a
//! reboot test — read from TOML, every key checked where it enters and bounded, and a refusal
//! as one line naming the file, the line and the key.
//!
//! The plan is data: running it, its state on disk and resuming it are the CLI's
//! (`crates/cli/src/campaign`).

use serde::Deserialize;

use crate::load::LoadSpec;
use crate::nanos::parse_nanos;
use crate::{CpuSpec, Nanos};

/// The most `[[phase]]` tables in a plan.
pub const MAX_PHASES: usize = 256;
/// The most steps a plan expands to (phases times their `repeat`).
pub const MAX_STEPS: usize = 1024;
/// The longest phase name (it becomes the runs' label).
pub const MAX_NAME: usize = 64;
/// The most repetitions of one phase, and the most reboots of a reboot test.
pub const MAX_REPEAT: u32 = 100;
/// The largest plan file read.
pub const MAX_PLAN_BYTES: u64 = 1 << 20;
/// The shortest phase: `rtlab measure` checkpoints every second at the most.
pub const MIN_PHASE: Nanos = Nanos::from_secs(1);

/// A campaign plan, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The campaign's name (the state directory's default name).
    pub name: String,
    /// The CPUs every phase measures unless it says otherwise (`rtlab measure --cpus`).
    pub cpus: Option<String>,
    /// The budget every phase is judged against unless it says otherwise.
    pub budget: Nanos,
    /// The measuring threads' interval (`rtlab measure --interval`).
    pub interval: Option<Nanos>,
    /// The CPUs tuned phases tune for real-time work (`rtlab tune apply --rt-cpus`).
    pub rt_cpus: Option<String>,
    /// Reboot after every phase (as `reboot_after` on each).
    pub reboot_between: bool,
    /// The command that reboots (`systemctl reboot` unless given).
    pub reboot_command: Option<String>,
    /// The phases, in order.
    pub phases: Vec<Phase>,
}

/// One `[[phase]]` of a plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Phase {
    /// Its name: the label of its runs.
    pub name: String,
    /// What it does.
    pub kind: PhaseKind,
    /// Reboot once it is done.
    pub reboot_after: bool,
}

/// What a phase does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PhaseKind {
    /// Measure wake-up latency.
    Measure(MeasurePhase),
    /// Reboot `reboots` times, checking at every boot that the campaign's state and the store
    /// are intact (and with `audit`, that `rtlab audit` runs).
    RebootTest {
        /// How many reboots.
        reboots: u32,
        /// Run `rtlab audit` at every boot.
        audit: bool,
    },
}

/// A measuring phase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeasurePhase {
    /// How long each of its runs measures.
    pub duration: Nanos,
    /// The load it runs under (an rtlab load spec, checked).
    pub load: Option<String>,
    /// Tune the machine for `rt_cpus` before, revert after.
    pub tuned: bool,
    /// The CPUs measured.
    pub cpus: Option<String>,
    /// The budget its runs are judged against.
    pub budget: Nanos,
    /// How many runs (labelled `NAME#1` … `NAME#N` when more than one).
    pub repeat: u32,
}

/// One unit of work a plan expands to: a phase's run (one per `repeat`) or a reboot test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The index of its phase in the plan.
    pub phase: usize,
    /// The label of its run (the phase name, with `#k` when the phase repeats).
    pub label: String,
    /// Reboot once this step is done (the last step of a phase with `reboot_after`, or any
    /// step with `reboot_between`, except the campaign's last).
    pub reboot_after: bool,
}

/// Why a plan was refused: one line naming the file, the line and the key, and the fix.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PlanError(pub String);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlan {
    name: Option<String>,
    cpus: Option<String>,
    budget: Option<String>,
    interval: Option<String>,
    rt_cpus: Option<String>,
    reboot_between: Option<bool>,
    reboot_command: Option<String>,
    #[serde(default)]
    phase: Vec<RawPhase>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPhase {
    name: Option<String>,
    duration: Option<String>,
    load: Option<String>,
    tuned: Option<bool>,
    cpus: Option<String>,
    budget: Option<String>,
    repeat: Option<i64>,
    reboot_after: Option<bool>,
    reboots: Option<i64>,
    audit: Option<bool>,
}

impl Plan {
    /// Reads a plan from TOML `text`; `source` (the file name) starts every error.
    pub fn parse(text: &str, source: &str) -> Result<Plan, PlanError> {
        let raw: RawPlan = toml::from_str(text).map_err(|e| {
            PlanError(crate::toml_error::one_line(
                source,
                &e.to_string(),
                "campaign plan",
            ))
        })?;
        let lines = Lines::index(text);
        let mut plan = top_level(&raw, source, &lines)?;
        plan.reboot_between = raw.reboot_between.unwrap_or(false);
        plan.reboot_command = raw.reboot_command;
        plan.phases = phases(raw.phase, &plan, source, &lines)?;
        plan.check_steps(source, &lines)?;
        Ok(plan)
    }

    /// The steps are few enough, and their labels distinct (a repeated phase's `NAME#k` may be
    /// another phase's name).
    fn check_steps(&self, source: &str, lines: &Lines) -> Result<(), PlanError> {
        let steps: usize = self.phases.iter().map(Phase::steps).sum();
        if steps > MAX_STEPS {
            return Err(PlanError(format!(
                "{source}: the phases repeat to {steps} runs, more than {MAX_STEPS}; split the campaign"
            )));
        }
        let mut labels: Vec<(String, usize)> = self
            .steps()
            .into_iter()
            .map(|s| (s.label, s.phase))
            .collect();
        labels.sort();
        if let Some(pair) = labels.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(PlanError(format!(
                "{source}: {}phase {}: name: its runs' label \"{}\" is another phase's too (a repeated phase labels its runs NAME#1, NAME#2 ...); rename one",
                lines.phase(pair[1].1, Some("name")),
                pair[1].1 + 1,
                pair[0].0.escape_debug()
            )));
        }
        Ok(())
    }

    /// The steps the plan runs, in order.
    pub fn steps(&self) -> Vec<Step> {
        let mut out = Vec::new();
        for (i, phase) in self.phases.iter().enumerate() {
            let n = phase.steps();
            for k in 1..=n {
                let label = match &phase.kind {
                    PhaseKind::Measure(m) if m.repeat > 1 => format!("{}#{k}", phase.name),
                    _ => phase.name.clone(),
                };
                out.push(Step {
                    phase: i,
                    label,
                    reboot_after: self.reboot_between || (phase.reboot_after && k == n),
                });
            }
        }
        if let Some(last) = out.last_mut() {
            last.reboot_after = false;
        }
        out
    }
}

impl Phase {
    /// How many steps the phase expands to.
    fn steps(&self) -> usize {
        match &self.kind {
            PhaseKind::Measure(m) => m.repeat as usize,
            PhaseKind::RebootTest { .. } => 1,
        }
    }
}

/// The plan's top-level keys, checked (no phase yet).
fn top_level(raw: &RawPlan, source: &str, lines: &Lines) -> Result<Plan, PlanError> {
    let top =
        |key: &str, why: String| PlanError(format!("{source}: {}{key}: {why}", lines.top(key)));
    let name = match &raw.name {
        Some(n) => check_name(n).map_err(|why| top("name", why))?,
        None => "campaign".to_string(),
    };
    let budget = match &raw.budget {
        Some(b) => time(b).map_err(|why| top("budget", why))?,
        None => crate::gate::DEFAULT_BUDGET,
    };
    let interval = raw
        .interval
        .as_deref()
        .map(time)
        .transpose()
        .map_err(|why| top("interval", why))?;
    let cpu_list = |key: &str, given: &Option<String>| {
        given
            .as_deref()
            .map(cpu_spec)
            .transpose()
            .map_err(|why| top(key, why))
    };
    let cpus = cpu_list("cpus", &raw.cpus)?;
    let rt_cpus = cpu_list("rt_cpus", &raw.rt_cpus)?;
    if let Some(cmd) = &raw.reboot_command
        && (cmd.trim().is_empty() || cmd.len() > 4096 || cmd.contains('\0'))
    {
        return Err(top(
            "reboot_command",
            "must be a shell command of at most 4096 bytes".into(),
        ));
    }
    Ok(Plan {
        name,
        cpus,
        budget,
        interval,
        rt_cpus,
        reboot_between: false,
        reboot_command: None,
        phases: Vec::new(),
    })
}

/// The `[[phase]]` tables, checked, with what they inherit from `plan`'s top level.
fn phases(
    raw: Vec<RawPhase>,
    plan: &Plan,
    source: &str,
    lines: &Lines,
) -> Result<Vec<Phase>, PlanError> {
    if raw.is_empty() {
        return Err(PlanError(format!(
            "{source}: the plan has no phase; add at least one [[phase]] with a name and a duration"
        )));
    }
    if raw.len() > MAX_PHASES {
        return Err(PlanError(format!(
            "{source}: {} phases, more than the {MAX_PHASES} a plan may have; split the campaign",
            raw.len()
        )));
    }
    let mut phases = Vec::with_capacity(raw.len());
    for (i, p) in raw.into_iter().enumerate() {
        let at = |key: &str, why: String| {
            PlanError(format!(
                "{source}: {}phase {}: {key}: {}",
                lines.phase(i, Some(key)),
                i + 1,
                one_line(&why)
            ))
        };
        let phase = phase(p, plan.budget, plan.cpus.as_deref(), &at)?;
        if phases.iter().any(|q: &Phase| q.name == phase.name) {
            return Err(at(
                "name",
                format!(
                    "\"{}\" names an earlier phase too; every phase needs its own name (it labels the runs)",
                    phase.name
                ),
            ));
        }
        if let PhaseKind::Measure(m) = &phase.kind
            && m.tuned
            && plan.rt_cpus.is_none()
        {
            return Err(at(
                "tuned",
                "a tuned phase needs the top-level rt_cpus (the CPUs to tune, e.g. rt_cpus = \"2-3\")".into(),
            ));
        }
        phases.push(phase);
    }
    Ok(phases)
}

/// One raw phase, checked.
fn phase(
    p: RawPhase,
    budget: Nanos,
    cpus: Option<&str>,
    at: &dyn Fn(&str, String) -> PlanError,
) -> Result<Phase, PlanError> {
    let name = match &p.name {
        Some(n) => check_name(n).map_err(|why| at("name", why))?,
        None => return Err(at(
            "name",
            "missing; every phase needs a name (the label of its runs), e.g. name = \"RT-#2-busy\""
                .into(),
        )),
    };
    let reboot_after = p.reboot_after.unwrap_or(false);
    let kind = match p.reboots {
        Some(reboots) => reboot_test(&p, reboots, at)?,
        None => PhaseKind::Measure(measure_phase(p, budget, cpus, at)?),
    };
    Ok(Phase {
        name,
        kind,
        reboot_after,
    })
}

/// A reboot test's phase (`reboots = N`), which measures nothing.
fn reboot_test(
    p: &RawPhase,
    reboots: i64,
    at: &dyn Fn(&str, String) -> PlanError,
) -> Result<PhaseKind, PlanError> {
    for (key, given) in [
        ("duration", p.duration.is_some()),
        ("load", p.load.is_some()),
        ("tuned", p.tuned.is_some()),
        ("cpus", p.cpus.is_some()),
        ("budget", p.budget.is_some()),
        ("repeat", p.repeat.is_some()),
    ] {
        if given {
            return Err(at(
                key,
                "a reboot test (reboots = N) measures nothing; give it in a phase of its own"
                    .into(),
            ));
        }
    }
    let reboots = count(reboots).map_err(|why| at("reboots", why))?;
    Ok(PhaseKind::RebootTest {
        reboots,
        audit: p.audit.unwrap_or(false),
    })
}

/// A measuring phase: its duration, load, CPUs, budget and repeats (the CPUs and the budget
/// inherited from the plan when not given).
fn measure_phase(
    p: RawPhase,
    budget: Nanos,
    cpus: Option<&str>,
    at: &dyn Fn(&str, String) -> PlanError,
) -> Result<MeasurePhase, PlanError> {
    if p.audit.is_some() {
        return Err(at(
            "audit",
            "only a reboot test (reboots = N) runs the audit at every boot".into(),
        ));
    }
    let duration = match &p.duration {
        Some(d) => time(d).map_err(|why| at("duration", why))?,
        None => return Err(at("duration", "missing; give how long the phase measures, e.g. duration = \"8h\" (or reboots = N for a reboot test)".into())),
    };
    if duration < MIN_PHASE || duration > crate::limits::MAX_RUN {
        return Err(at(
            "duration",
            format!(
                "{duration} is outside 1s to {}; give e.g. \"8h\"",
                crate::limits::MAX_RUN
            ),
        ));
    }
    if let Some(load) = &p.load {
        LoadSpec::parse(load).map_err(|e| at("load", format!("\"{load}\": {e}")))?;
    }
    let cpus = match p.cpus {
        Some(c) => Some(cpu_spec(&c).map_err(|why| at("cpus", why))?),
        None => cpus.map(str::to_string),
    };
    let budget = match &p.budget {
        Some(b) => time(b).map_err(|why| at("budget", why))?,
        None => budget,
    };
    let repeat = match p.repeat {
        Some(r) => count(r).map_err(|why| at("repeat", why))?,
        None => 1,
    };
    Ok(MeasurePhase {
        duration,
        load: p.load,
        tuned: p.tuned.unwrap_or(false),
        cpus,
        budget,
        repeat,
    })
}

/// `text` on one line: control characters (a newline in a quoted value) escaped.
fn one_line(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

/// A name: 1 to [`MAX_NAME`] characters, none of them control characters.
fn check_name(name: &str) -> Result<String, String> {
    if name.trim().is_empty() {
        return Err("empty; give a name such as \"RT-#2-busy\"".into());
    }
    if name.chars().count() > MAX_NAME || name.chars().any(char::is_control) {
        return Err(format!(
            "\"{}\" is not a name: at most {MAX_NAME} characters, no control characters",
            name.escape_debug()
        ));
    }
    Ok(name.to_string())
}

/// A time with its unit ("8h", "100us").
fn time(text: &str) -> Result<Nanos, String> {
    parse_nanos(text).map_err(|e| format!("\"{}\": {e}", text.escape_debug()))
}

/// A CPU list or selector, checked, as written.
fn cpu_spec(text: &str) -> Result<String, String> {
    CpuSpec::parse(text)
        .map(|_| text.to_string())
        .map_err(|e| format!("\"{}\": {e}", text.escape_debug()))
}

/// A count from 1 to [`MAX_REPEAT`].
fn count(n: i64) -> Result<u32, String> {
    u32::try_from(n)
        .ok()
        .filter(|n| (1..=MAX_REPEAT).contains(n))
        .ok_or_else(|| format!("{n} is outside 1 to {MAX_REPEAT}"))
}

/// Where each key is in the TOML text, so a refusal can name the line.
#[derive(Default)]
struct Lines {
    /// The top-level keys and their lines.
    top: Vec<(String, usize)>,
    /// Per `[[phase]]` table: its header's line and its keys' lines.
    phases: Vec<(usize, Vec<(String, usize)>)>,
}

impl Lines {
    fn index(text: &str) -> Lines {
        let mut out = Lines::default();
        let mut in_phase = false;
        for (i, line) in text.lines().enumerate() {
            let l = line.trim();
            if l.starts_with('[') {
                let compact: String = l.chars().filter(|c| !c.is_whitespace()).collect();
                in_phase = compact.starts_with("[[phase]]");
                if in_phase {
                    out.phases.push((i + 1, Vec::new()));
                }
            } else if let Some((key, _)) = l.split_once('=') {
                let key = key.trim().trim_matches('"').to_string();
                match (in_phase, out.phases.last_mut()) {
                    (true, Some(table)) => table.1.push((key, i + 1)),
                    _ => out.top.push((key, i + 1)),
                }
            }
        }
        out
    }

    /// "line N: " for a top-level key, or nothing.
    fn top(&self, key: &str) -> String {
        self.top
            .iter()
            .find(|(k, _)| k == key)
            .map_or(String::new(), |(_, l)| format!("line {l}: "))
    }

    /// "line N: " for phase `index`'s `key` (or its header), or nothing.
    fn phase(&self, index: usize, key: Option<&str>) -> String {
        let Some((header, keys)) = self.phases.get(index) else {
            return String::new();
        };
        let line = key
            .and_then(|f| keys.iter().find(|(k, _)| k == f).map(|(_, l)| *l))
            .unwrap_or(*header);
        format!("line {line}: ")
    }
}

#[cfg(test)]
mod tests;
