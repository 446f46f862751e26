//! The comparison table of the Linaro 2023 talk: several runs side by side, one row per run, column groups
//! Min / Avg / p99.9 / Max with one column per CPU, the CPUs grouped by cluster when the host
//! is heterogeneous (big.LITTLE, hybrid), and each later run's change against the first.
//!
//! This module owns the data ([`Comparison`], built from labelled runs; serialized as the JSON
//! schema [`SCHEMA`]), the regression verdict ([`verdict`]: `--fail-if-worse`), how CPUs are
//! grouped and named ([`clusters`]) and the three renderings: terminal text ([`text`]),
//! Markdown ([`markdown`]) and HTML ([`html`]). Like the rest of the crate it never prints or
//! touches files; which runs to compare and what each is called is the caller's business.
//!
//! Figures are the runs' derived statistics (`cpus[].stats`), in microseconds with one decimal
//! as [`crate::format_us`] prints them. A run that did not measure a CPU shows `-` there.
//! Deltas are `(run - first) / first` of the exact nanoseconds, as whole percent (`+12%`,
//! `-31%`, `0%`), and `-` where either figure is missing or the first is zero.

pub mod clusters;
pub mod html;
pub mod markdown;
pub mod text;
pub mod verdict;

#[cfg(test)]
mod rb5_example;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use model::imported::Quantity;
use model::measure::{MeasureRun, RunStatus};

pub use clusters::{Cluster, cpu_kind_name};
pub use html::{compare_html, compare_html_page};
pub use markdown::compare_markdown;
pub use text::compare_text;
pub use verdict::{Regression, Verdict};

/// The schema id of the JSON form.
pub const SCHEMA: &str = "rtlab.compare/1";

/// Runs side by side: the column layout (CPUs by cluster) and every run's figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Comparison {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// Whether the compared CPUs are of more than one kind (capacity, core type, model or
    /// maximum frequency), so the columns are grouped by cluster under a header naming each.
    pub heterogeneous: bool,
    /// The column groups, in order; one group holding every CPU when not heterogeneous.
    pub clusters: Vec<Cluster>,
    /// One row per run, the first being the baseline of deltas and verdict.
    pub runs: Vec<RunFigures>,
    /// The `--fail-if-worse` verdict, when one was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
}

/// One run's row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunFigures {
    /// What the row is called (a label, an id, a file name: the caller's choice).
    pub label: String,
    /// The host the run was made on.
    pub hostname: String,
    /// Its kernel release.
    pub kernel_release: String,
    /// When the run started (RFC 3339 UTC, as recorded).
    pub started_at: String,
    /// What the run measured; written only when it is not wake-up latency (an imported
    /// oslat or rtla osnoise run).
    #[serde(default, skip_serializing_if = "is_wakeup")]
    pub quantity: Quantity,
    /// What measured it; written only when it is not rtlab's own threads (`timerlat`: the
    /// kernel's tracer, whose figures are its thread latency).
    #[serde(default, skip_serializing_if = "is_user_engine")]
    pub engine: model::measure::Engine,
    /// The load the run measured under (`rtlab measure --load`, canonical spec); absent when
    /// none ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<String>,
    /// Its measuring interval (ns); absent in documents written before issue #43.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_ns: Option<u64>,
    /// One entry per column, in column order (the clusters' CPUs one after the other).
    pub cpus: Vec<CpuFigures>,
}

/// One run's figures on one CPU. All are absent when the run did not measure the CPU or has no
/// sample from it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuFigures {
    /// CPU number.
    pub cpu: u32,
    /// Samples measured (0 when not measured).
    pub samples: u64,
    /// Exact minimum (ns).
    pub min_ns: Option<u64>,
    /// Exact mean (ns).
    pub mean_ns: Option<f64>,
    /// 99.9th percentile (ns), from the histogram.
    pub p99_9_ns: Option<u64>,
    /// Exact maximum (ns).
    pub max_ns: Option<u64>,
}

/// A column group of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Figure {
    /// The minimum.
    #[serde(rename = "min")]
    Min,
    /// The mean.
    #[serde(rename = "avg")]
    Avg,
    /// The 99.9th percentile.
    #[serde(rename = "p99.9")]
    P99_9,
    /// The maximum.
    #[serde(rename = "max")]
    Max,
}

impl Figure {
    /// The column groups in table order.
    pub const ALL: [Figure; 4] = [Figure::Min, Figure::Avg, Figure::P99_9, Figure::Max];

    /// The group's heading: `Min`, `Avg`, `p99.9`, `Max`.
    pub fn title(self) -> &'static str {
        match self {
            Figure::Min => "Min",
            Figure::Avg => "Avg",
            Figure::P99_9 => "p99.9",
            Figure::Max => "Max",
        }
    }

    /// The name used in messages and JSON: `min`, `avg`, `p99.9`, `max`.
    pub fn name(self) -> &'static str {
        match self {
            Figure::Min => "min",
            Figure::Avg => "avg",
            Figure::P99_9 => "p99.9",
            Figure::Max => "max",
        }
    }
}

impl CpuFigures {
    /// The figure in nanoseconds, if the run has it.
    pub fn get(&self, figure: Figure) -> Option<f64> {
        match figure {
            Figure::Min => self.min_ns.map(|v| v as f64),
            Figure::Avg => self.mean_ns,
            Figure::P99_9 => self.p99_9_ns.map(|v| v as f64),
            Figure::Max => self.max_ns.map(|v| v as f64),
        }
    }

    /// The figure as the tables print it: microseconds with one decimal, or `-`.
    pub fn cell(&self, figure: Figure) -> String {
        match figure {
            Figure::Min => crate::table::format_opt_us(self.min_ns),
            Figure::Avg => crate::table::format_opt_us_f64(self.mean_ns),
            Figure::P99_9 => crate::table::format_opt_us(self.p99_9_ns),
            Figure::Max => crate::table::format_opt_us(self.max_ns),
        }
    }
}

impl Comparison {
    /// Lays out `runs` (label, run) side by side. The columns are every CPU any run measured,
    /// grouped by kind when they are of more than one kind (see [`clusters`]); each CPU's
    /// topology is taken from the first run whose host describes it.
    pub fn new(runs: &[(String, &MeasureRun)]) -> Comparison {
        let measured: Vec<u32> = {
            let mut cpus: Vec<u32> = runs
                .iter()
                .flat_map(|(_, r)| r.cpus.iter().map(|c| c.cpu))
                .collect();
            cpus.sort_unstable();
            cpus.dedup();
            cpus
        };
        let hosts: Vec<_> = runs.iter().map(|(_, r)| &r.host).collect();
        let (heterogeneous, clusters) = clusters::group(&measured, &hosts);
        let columns: Vec<u32> = clusters.iter().flat_map(|c| c.cpus.clone()).collect();
        let rows = runs
            .iter()
            .map(|(label, run)| RunFigures {
                // A run that did not complete says so wherever its row is shown.
                label: match run.status {
                    RunStatus::Complete => label.clone(),
                    other => format!("{label} ({})", other.as_str()),
                },
                hostname: run.host.hostname.clone(),
                kernel_release: run.host.kernel_release.clone(),
                started_at: run.started_at.clone(),
                quantity: run.quantity(),
                engine: run.params.engine,
                load: run.load.as_ref().map(|l| l.spec.clone()),
                interval_ns: Some(run.params.interval_ns.get()),
                cpus: columns.iter().map(|&cpu| figures_of(run, cpu)).collect(),
            })
            .collect();
        Comparison {
            schema: SCHEMA.to_string(),
            heterogeneous,
            clusters,
            runs: rows,
            verdict: None,
        }
    }

    /// Judges every later run against the first (see [`Verdict`]), keeps the verdict in the
    /// comparison (so every rendering shows it) and returns it.
    pub fn judge(&mut self, fail_if_worse_pct: f64) -> &Verdict {
        self.verdict.insert(verdict::judge(self, fail_if_worse_pct))
    }

    /// What every run measured, or `None` when the runs measured different things (wake-up
    /// latency and OS noise), whose figures must not be compared.
    pub fn quantity(&self) -> Option<Quantity> {
        let first = self
            .runs
            .first()
            .map_or(Quantity::WakeupLatency, |r| r.quantity);
        self.runs
            .iter()
            .all(|r| r.quantity == first)
            .then_some(first)
    }

    /// The warning every rendering prints when the runs measured different things: which
    /// runs measured what.
    pub fn mixed_warning(&self) -> Option<String> {
        if self.quantity().is_some() {
            return None;
        }
        let of = |q: Quantity| {
            self.runs
                .iter()
                .filter(|r| r.quantity == q)
                .map(|r| r.label.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        Some(format!(
            "these runs measured different things and their figures are not comparable: \
             wake-up latency ({}), OS noise ({})",
            of(Quantity::WakeupLatency),
            of(Quantity::OsNoise)
        ))
    }

    /// Every warning a rendering prints above the table: runs that measured different things,
    /// and runs from different machines (their figures compare machines, not a change).
    pub fn warnings(&self) -> Vec<String> {
        let mut out: Vec<String> = self.mixed_warning().into_iter().collect();
        out.extend((1..self.runs.len()).filter_map(|row| self.not_compared_note(row)));
        out.extend(self.engine_note());
        let unnamed = |h: &str| h.is_empty() || h == "unknown";
        let mut hosts: Vec<&str> = Vec::new();
        for r in &self.runs {
            if !unnamed(&r.hostname) && !hosts.contains(&r.hostname.as_str()) {
                hosts.push(&r.hostname);
            }
        }
        let nameless: Vec<&str> = self
            .runs
            .iter()
            .filter(|r| unnamed(&r.hostname))
            .map(|r| r.label.as_str())
            .collect();
        if !nameless.is_empty() && self.runs.len() > 1 {
            out.push(format!(
                "{} {} no machine (imported from a file that does not say): whether these \
                 runs come from one machine is not known; `rtlab import FILE --host NAME` \
                 names it",
                nameless.join(", "),
                if nameless.len() == 1 { "names" } else { "name" }
            ));
        }
        if hosts.len() > 1 {
            let each: Vec<String> = hosts
                .iter()
                .map(|h| {
                    let runs: Vec<&str> = self
                        .runs
                        .iter()
                        .filter(|r| r.hostname == *h)
                        .map(|r| r.label.as_str())
                        .collect();
                    format!("{h}: {}", runs.join(", "))
                })
                .collect();
            out.push(format!(
                "these runs come from different machines ({}): the changes compare machines, \
                 not one machine before and after",
                each.join("; ")
            ));
        }
        out
    }

    /// When a run of the kernel's timerlat tracer is compared with runs of rtlab's own
    /// threads: which is which, and what is compared (the tracer's thread latency, the
    /// figure closest to a user-space thread's wake-up).
    fn engine_note(&self) -> Option<String> {
        use model::measure::Engine;
        let of = |e: Engine| {
            self.runs
                .iter()
                .filter(|r| r.engine == e)
                .map(|r| r.label.as_str())
                .collect::<Vec<_>>()
        };
        let (timerlat, user) = (of(Engine::Timerlat), of(Engine::User));
        (!timerlat.is_empty() && !user.is_empty()).then(|| {
            format!(
                "{} measured by the kernel's timerlat tracer (its thread latency is compared: \
                 timer expiry to a kernel thread running), {} by rtlab's threads in user \
                 space (expiry to the thread reading its clock): the two methods differ by \
                 the return to user space",
                timerlat.join(", "),
                user.join(", ")
            )
        })
    }

    /// What the figures are, for a table's caption: `latencies`, `OS noise figures`.
    pub fn figures_word(&self) -> &'static str {
        match self.quantity() {
            Some(Quantity::OsNoise) => "OS noise figures",
            Some(Quantity::WakeupLatency) => "latencies",
            Some(Quantity::ResponseTime) => "response times",
            None => "figures",
        }
    }

    /// Whether run `row` measured what the first run measured, the same way, so that its
    /// change against it means something: the same quantity, at the same interval. The
    /// renderings print no change row for a run that did not (a noise run against a wake-up
    /// latency baseline, a run at a 200us interval against one at 1ms), the
    /// regression verdict does not judge it, and [`Comparison::warnings`] say why.
    pub fn comparable(&self, row: usize) -> bool {
        match (self.runs.first(), self.runs.get(row)) {
            (Some(first), Some(run)) => {
                first.quantity == run.quantity && settings_differ(first, run).is_empty()
            }
            _ => false,
        }
    }

    /// Why run `row` is not compared with the first on the settings it was measured with.
    fn not_compared_note(&self, row: usize) -> Option<String> {
        let (first, run) = (self.runs.first()?, self.runs.get(row)?);
        let differ = settings_differ(first, run);
        (row > 0 && !differ.is_empty()).then(|| {
            format!(
                "{} is not compared with {}: {}; its changes are not shown, and no regression is judged on it",
                run.label,
                first.label,
                differ.join(", ")
            )
        })
    }

    /// Whether any run has [`RunFigures::conditions`] to show.
    pub fn has_conditions(&self) -> bool {
        self.runs.iter().any(|r| !r.conditions().is_empty())
    }

    /// The first run's label (the baseline), if there is a run.
    pub fn baseline(&self) -> Option<&str> {
        self.runs.first().map(|r| r.label.as_str())
    }

    /// The JSON form (schema [`SCHEMA`]), pretty, with a trailing newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a Comparison always serializes");
        text.push('\n');
        text
    }

    /// Reads the JSON form back, refusing unknown fields and other schemas.
    pub fn from_json(text: &str) -> Result<Comparison, String> {
        let c: Comparison = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if c.schema != SCHEMA {
            return Err(format!(
                "comparison schema is '{}', this rtlab reads '{SCHEMA}'",
                c.schema
            ));
        }
        Ok(c)
    }

    /// The delta cell of run `row` against the first run in column `col`: `+12%`, `-31%`,
    /// `0%`, or `-` when a figure is missing or the first run's is zero.
    pub fn delta_cell(&self, row: usize, col: usize, figure: Figure) -> String {
        let base = self.runs.first().and_then(|r| r.cpus.get(col));
        let this = self.runs.get(row).and_then(|r| r.cpus.get(col));
        match (
            base.and_then(|c| c.get(figure)),
            this.and_then(|c| c.get(figure)),
        ) {
            (Some(b), Some(v)) => format_delta(b, v),
            _ => "-".to_string(),
        }
    }
}

impl RunFigures {
    /// What the run measured under, beyond its label: `load cpu:60%`, `OS noise`, both joined
    /// by a comma; empty for a wake-up latency run without load.
    pub fn conditions(&self) -> String {
        let mut parts = Vec::new();
        if let Some(load) = &self.load {
            parts.push(format!("load {load}"));
        }
        if self.quantity == Quantity::OsNoise {
            parts.push(format!("{} (not latency)", self.quantity.describe()));
        }
        parts.join(", ")
    }
}

fn is_user_engine(e: &model::measure::Engine) -> bool {
    *e == model::measure::Engine::User
}

fn is_wakeup(q: &Quantity) -> bool {
    *q == Quantity::WakeupLatency
}

/// The settings two runs were measured with that differ, in words (`interval 200us against
/// 1ms`); unknown settings (an older document) differ in nothing. The CPUs are compared column
/// by column, so runs of different CPU sets compare on the CPUs both measured; the load and the
/// kernel are what comparisons are made to see, and the rows show them.
fn settings_differ(first: &RunFigures, run: &RunFigures) -> Vec<String> {
    let mut out = Vec::new();
    if let (Some(a), Some(b)) = (first.interval_ns, run.interval_ns)
        && a != b
    {
        out.push(format!(
            "interval {} against {}",
            model::Nanos(b),
            model::Nanos(a)
        ));
    }
    out
}

/// `(value - base) / base` as whole percent with its sign; `-` when `base` is zero.
pub fn format_delta(base: f64, value: f64) -> String {
    if base <= 0.0 {
        return if value == base {
            "0%".to_string()
        } else {
            "-".to_string()
        };
    }
    let pct = ((value - base) / base * 100.0).round();
    if pct > 0.0 {
        format!("+{pct:.0}%")
    } else if pct < 0.0 {
        format!("-{:.0}%", -pct)
    } else {
        "0%".to_string()
    }
}

/// One run's figures on `cpu` (all absent when the run did not measure it).
fn figures_of(run: &MeasureRun, cpu: u32) -> CpuFigures {
    match run.cpus.iter().find(|c| c.cpu == cpu) {
        Some(c) => CpuFigures {
            cpu,
            samples: c.stats.count,
            min_ns: c.stats.min_ns,
            mean_ns: c.stats.mean_ns,
            p99_9_ns: c.stats.p99_9_ns,
            max_ns: c.stats.max_ns,
        },
        None => CpuFigures {
            cpu,
            samples: 0,
            min_ns: None,
            mean_ns: None,
            p99_9_ns: None,
            max_ns: None,
        },
    }
}
