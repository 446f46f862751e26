//! `rtlab.evaluation/1`: what `rtlab run --format json` prints — the evaluation's verdict and
//! each phase's, with the figures it was judged on, for a script to keep.

use serde::{Deserialize, Serialize};

use crate::Nanos;
use crate::audit::Counts;
use crate::measure::RunStatus;

/// The schema name and version of [`Evaluation`].
pub const SCHEMA: &str = "rtlab.evaluation/1";

/// A verdict as a script reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Within the budget.
    Pass,
    /// Over the budget (or a `--workload` deadline missed).
    Fail,
    /// Not judgeable: a phase did not finish or measured nothing on some CPU. Written
    /// `unjudgeable`, the word of every other document (`cannot-judge` before issue #43,
    /// still read).
    #[serde(rename = "unjudgeable", alias = "cannot-judge")]
    CannotJudge,
    /// A signal ended the evaluation before every phase was measured.
    Interrupted,
}

impl Outcome {
    /// The word the text summary uses: `PASS`, `FAIL`, `CANNOT JUDGE`, `INTERRUPTED`.
    pub fn shout(self) -> &'static str {
        match self {
            Outcome::Pass => "PASS",
            Outcome::Fail => "FAIL",
            Outcome::CannotJudge => "CANNOT JUDGE",
            Outcome::Interrupted => "INTERRUPTED",
        }
    }
}

/// What a phase measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PhaseKind {
    /// Wake-up latency (`rtlab measure`).
    Latency,
    /// OS noise (`--noise`, `rtlab noise`); shown, never judged.
    Noise,
}

/// One phase of the evaluation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Phase {
    /// Its label (`idle`, `full-load`, `idle-tuned`, `noise`): the stored run's label.
    pub label: String,
    /// What it measured.
    pub kind: PhaseKind,
    /// How its measurement ended.
    pub status: RunStatus,
    /// Its verdict; `None` for a phase the evaluation does not judge (a noise phase, the
    /// untuned phases of `--tuned`).
    pub verdict: Option<Outcome>,
    /// Why it did not pass, in words (`CPU 1: max latency 250.0us exceeds --budget 100us`).
    pub reasons: Vec<String>,
    /// Samples over every CPU.
    pub samples: u64,
    /// The worst figure over every CPU: the maximum latency, or the longest interruption.
    pub max_ns: Option<u64>,
    /// The 99.9th percentile over every CPU.
    pub p99_9_ns: Option<u64>,
}

/// The whole evaluation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evaluation {
    /// [`SCHEMA`].
    pub schema: String,
    /// The session every phase's run is stored under (`rtlab runs` shows it).
    pub session: String,
    /// The verdict over the phases judged: `fail` when one is over the budget, else
    /// `unjudgeable` when one cannot be judged, else `pass`; `interrupted` when a signal
    /// ended the evaluation.
    pub verdict: Outcome,
    /// The budget the phases were judged against.
    pub budget_ns: Nanos,
    /// Whether the phases were measured again with the machine tuned (`--tuned`).
    pub tuned: bool,
    /// The audit's counts before the first phase.
    pub audit: Counts,
    /// The HTML report written, if one was.
    pub report: Option<String>,
    /// Every phase measured, in order.
    pub phases: Vec<Phase>,
}

impl Evaluation {
    /// The verdict over `phases` ([`Evaluation::verdict`]'s rule).
    pub fn overall(phases: &[Phase], interrupted: bool) -> Outcome {
        let judged = || phases.iter().filter_map(|p| p.verdict);
        // A phase measured over its budget fails the evaluation whether or not a signal
        // stopped a later one: what it measured cannot be taken back (issue #48).
        if judged().any(|v| v == Outcome::Fail) {
            Outcome::Fail
        } else if interrupted {
            Outcome::Interrupted
        } else if judged().any(|v| v == Outcome::CannotJudge) {
            Outcome::CannotJudge
        } else {
            Outcome::Pass
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(verdict: Option<Outcome>) -> Phase {
        Phase {
            label: "idle".into(),
            kind: PhaseKind::Latency,
            status: RunStatus::Complete,
            verdict,
            reasons: Vec::new(),
            samples: 10,
            max_ns: Some(5_000),
            p99_9_ns: Some(4_000),
        }
    }

    #[test]
    fn a_failure_outweighs_a_phase_that_cannot_be_judged_and_an_interruption_both() {
        let p = [
            phase(Some(Outcome::Pass)),
            phase(Some(Outcome::CannotJudge)),
        ];
        assert_eq!(Evaluation::overall(&p, false), Outcome::CannotJudge);
        let p = [
            phase(Some(Outcome::CannotJudge)),
            phase(Some(Outcome::Fail)),
        ];
        assert_eq!(Evaluation::overall(&p, false), Outcome::Fail);
        // A phase over its budget fails the evaluation a signal cut short.
        assert_eq!(Evaluation::overall(&p, true), Outcome::Fail);
        let p = [
            phase(Some(Outcome::Pass)),
            phase(Some(Outcome::CannotJudge)),
        ];
        assert_eq!(Evaluation::overall(&p, true), Outcome::Interrupted);
        // Phases not judged (noise, untuned) do not count.
        let p = [phase(None), phase(Some(Outcome::Pass))];
        assert_eq!(Evaluation::overall(&p, false), Outcome::Pass);
    }

    #[test]
    fn outcomes_are_written_as_every_document_words_them() {
        let json = serde_json::to_string(&Outcome::CannotJudge).unwrap();
        assert_eq!(
            json,
            format!("\"{}\"", crate::gate::Outcome::CannotJudge.as_str())
        );
        assert_eq!(
            serde_json::to_string(&Outcome::Interrupted).unwrap(),
            "\"interrupted\""
        );
        // Documents written before issue #43 read back.
        let old: Outcome = serde_json::from_str("\"cannot-judge\"").unwrap();
        assert_eq!(old, Outcome::CannotJudge);
    }
}
