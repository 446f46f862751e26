//! The regression verdict of `rtlab compare --fail-if-worse PCT`: every later run's p99.9 and
//! maximum on every CPU against the first run's. A figure fails when it is worse by more than
//! PCT percent of the first run's: `value - first > PCT/100 * first`, in exact nanoseconds, so
//! exactly PCT worse passes. A CPU that either run did not measure is not judged (the table
//! shows `-` there).

use serde::{Deserialize, Serialize};

use super::{Comparison, Figure};
use crate::format_us;

/// The figures a verdict judges.
pub const JUDGED: [Figure; 2] = [Figure::P99_9, Figure::Max];

/// What `--fail-if-worse` found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Verdict {
    /// The limit, in percent of the first run's figure.
    pub fail_if_worse_pct: f64,
    /// The label of the run judged against (the first).
    pub baseline: String,
    /// Whether no figure is worse by more than the limit.
    pub passed: bool,
    /// Every figure worse by more than the limit, by run, then CPU, then p99.9 before max.
    pub regressions: Vec<Regression>,
    /// The later runs not judged, measured otherwise than the first (another interval, other
    /// CPUs): a regression verdict on them would compare settings, so it fails instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_compared: Vec<String>,
}

/// One figure of a later run worse than the first run's by more than the limit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Regression {
    /// The later run's label.
    pub run: String,
    /// The CPU.
    pub cpu: u32,
    /// `p99.9` or `max`.
    pub figure: Figure,
    /// The first run's figure (ns).
    pub baseline_ns: u64,
    /// The later run's figure (ns).
    pub value_ns: u64,
    /// How much worse, in percent of the first run's figure; absent when that was zero.
    pub worse_pct: Option<f64>,
}

/// Judges every later run of `c` against its first.
pub(crate) fn judge(c: &Comparison, limit_pct: f64) -> Verdict {
    let mut regressions = Vec::new();
    let mut not_compared = Vec::new();
    if let Some((first, later)) = c.runs.split_first() {
        for (i, run) in later.iter().enumerate() {
            if !c.comparable(i + 1) {
                not_compared.push(run.label.clone());
                continue;
            }
            for (col, figures) in run.cpus.iter().enumerate() {
                for figure in JUDGED {
                    let base = first.cpus.get(col).and_then(|f| exact(f, figure));
                    let (Some(base), Some(value)) = (base, exact(figures, figure)) else {
                        continue;
                    };
                    if worse_by_more_than(base, value, limit_pct) {
                        regressions.push(Regression {
                            run: run.label.clone(),
                            cpu: figures.cpu,
                            figure,
                            baseline_ns: base,
                            value_ns: value,
                            worse_pct: (base > 0)
                                .then(|| (value - base) as f64 * 100.0 / base as f64),
                        });
                    }
                }
            }
        }
    }
    Verdict {
        fail_if_worse_pct: limit_pct,
        baseline: c.baseline().unwrap_or_default().to_string(),
        passed: regressions.is_empty() && not_compared.is_empty(),
        regressions,
        not_compared,
    }
}

/// The judged figures are integers; read them exactly.
fn exact(f: &super::CpuFigures, figure: Figure) -> Option<u64> {
    match figure {
        Figure::P99_9 => f.p99_9_ns,
        Figure::Max => f.max_ns,
        Figure::Min => f.min_ns,
        Figure::Avg => None,
    }
}

/// `value` exceeds `base` by more than `pct` percent of `base`: the one regression rule
/// (`compare --fail-if-worse`, serve's fleet page, the LAVA baseline at 0 %).
pub(crate) fn worse_by_more_than(base: u64, value: u64, pct: f64) -> bool {
    // Integers below 2^53 are exact in f64, so the boundary (exactly pct worse) passes.
    value > base && (value - base) as f64 * 100.0 > pct * base as f64
}

/// A percentage limit as typed: `10`, `2.5`.
pub fn format_pct(pct: f64) -> String {
    if pct.fract() == 0.0 && pct.abs() < 1e15 {
        format!("{pct:.0}")
    } else {
        format!("{pct}")
    }
}

impl Verdict {
    /// One line: `verdict: PASS: ...` or `verdict: FAIL: N figures ...`.
    pub fn summary(&self) -> String {
        let limit = format_pct(self.fail_if_worse_pct);
        if self.passed {
            format!(
                "verdict: PASS: no later run's p99.9 or max is more than {limit}% worse than {}'s \
                 on any CPU",
                self.baseline
            )
        } else if self.regressions.is_empty() {
            format!(
                "verdict: FAIL: {} measured otherwise than {} and not compared",
                self.not_compared.join(", "),
                self.baseline
            )
        } else {
            let n = self.regressions.len();
            format!(
                "verdict: FAIL: {n} figure{} more than {limit}% worse than {}'s",
                if n == 1 { " is" } else { "s are" },
                self.baseline
            )
        }
    }

    /// One line per regression, naming the run, the CPU and the figure, then one per run not
    /// compared.
    pub fn messages(&self) -> Vec<String> {
        let regressions = self
            .regressions
            .iter()
            .map(|r| r.message(&self.baseline, self.fail_if_worse_pct));
        let not_compared = self.not_compared.iter().map(|run| {
            format!(
                "{run}: measured otherwise than {} (see the warning): no regression verdict on it",
                self.baseline
            )
        });
        regressions.chain(not_compared).collect()
    }
}

impl Regression {
    /// `RT-#1 CPU 2: max 921.0 us is 65.1% worse than Van-#1's 558.0 us (limit 10%)`.
    pub fn message(&self, baseline: &str, limit_pct: f64) -> String {
        let how = match self.worse_pct {
            Some(p) => format!(" is {p:.1}% worse than"),
            None => " is worse than".to_string(),
        };
        format!(
            "{} CPU {}: {} {} us{how} {baseline}'s {} us (limit {}%)",
            self.run,
            self.cpu,
            self.figure.name(),
            format_us(self.value_ns),
            format_us(self.baseline_ns),
            format_pct(limit_pct)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_boundary_passes() {
        assert!(!worse_by_more_than(100_000, 110_000, 10.0));
        assert!(worse_by_more_than(100_000, 110_001, 10.0));
        assert!(worse_by_more_than(100_000, 110_000, 9.5));
        assert!(!worse_by_more_than(100_000, 109_000, 10.0));
        assert!(!worse_by_more_than(100_000, 90_000, 0.0));
        assert!(worse_by_more_than(0, 1, 1000.0));
        assert!(!worse_by_more_than(0, 0, 0.0));
    }

    #[test]
    fn limits_print_as_typed() {
        assert_eq!(format_pct(10.0), "10");
        assert_eq!(format_pct(2.5), "2.5");
        assert_eq!(format_pct(0.0), "0");
    }
}
