//! What `tune apply`, `revert` and `status` report: the steps done, skipped and refused
//! ([`Outcome`]) and how each journal step stands now ([`Standing`]). Shared by the whole-plan
//! steps and the single-thread steps, so neither depends on the other.

use serde::Serialize;

/// What an apply or a revert did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// Steps done (files written, groups created or removed, tasks moved).
    pub done: Vec<String>,
    /// Steps skipped, and why (already at the value, nothing to move).
    pub skipped: Vec<String>,
    /// What the kernel refused, with its error.
    pub refused: Vec<String>,
}

/// How a step of the journal stands now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Standing {
    /// The path.
    pub path: String,
    /// `applied`, `drifted` (something else changed it since), `original` (back as before),
    /// `created`, `gone`.
    pub state: String,
    /// Its value now, for files.
    pub now: Option<String>,
}

/// `1 task`, `3 tasks`.
pub(crate) fn tasks(n: usize) -> String {
    format!("{n} {}", if n == 1 { "task" } else { "tasks" })
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_task_is_singular() {
        assert_eq!(super::tasks(1), "1 task");
        assert_eq!(super::tasks(0), "0 tasks");
        assert_eq!(super::tasks(12), "12 tasks");
    }
}
