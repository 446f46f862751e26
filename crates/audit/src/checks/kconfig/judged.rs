//! The kernel config the `kconfig.*` checks judge: read once per audit through the context,
//! indexed, and cited as written. Below every `kconfig` check, so none depends on the
//! group's catalogue.

use std::collections::HashMap;
use std::rc::Rc;

use sys::parse::kconfig::{self, NOT_SET};

use crate::context::Ctx;
use crate::outcome::Outcome;

/// The most items a summary or evidence list names before "... and N more".
pub(super) const LIST_MAX: usize = 8;

/// The judged config's options, indexed once per audit (a private type, so the memo key is
/// this module's own).
struct Index(HashMap<String, String>);

/// The kernel config the checks judge: where it came from and its options.
pub(super) struct Config<'c> {
    /// The file it was read from.
    pub(super) path: &'c str,
    /// The text.
    pub(super) text: &'c str,
    index: Rc<Index>,
}

/// The config, or the `unknown` outcome carrying the context's reason.
pub(super) fn config(ctx: &Ctx) -> Result<Config<'_>, Outcome> {
    let source = ctx.kconfig().map_err(Outcome::unknown)?;
    let index = ctx.memo(|ctx| {
        let text = ctx.kconfig().map(|s| s.text.as_str()).unwrap_or_default();
        Index(
            kconfig::to_map(text)
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    });
    Ok(Config {
        path: &source.path,
        text: &source.text,
        index,
    })
}

impl Config<'_> {
    /// The value as written (`y`, `m`, `250`); `n` for `# ... is not set`; `None` when absent.
    pub(super) fn value(&self, name: &str) -> Option<&str> {
        self.index.0.get(name).map(String::as_str)
    }

    /// Whether the option is `y` or `m`.
    pub(super) fn on(&self, name: &str) -> bool {
        kconfig::is_enabled(self.value(name))
    }

    /// Whether the config mentions the option at all (set or not set).
    pub(super) fn mentions(&self, name: &str) -> bool {
        self.value(name).is_some()
    }

    /// The option's line as written in the config.
    pub(super) fn line(&self, name: &str) -> String {
        match self.value(name) {
            Some(NOT_SET) => format!("# {name} is not set"),
            Some(value) => format!("{name}={value}"),
            None => format!("{name} absent"),
        }
    }

    /// `outcome` with the option's line as evidence.
    pub(super) fn cite(&self, outcome: Outcome, name: &str) -> Outcome {
        outcome.evidence(self.path, self.line(name))
    }

    /// A check that wants `name` on: pass with `good`, else the check's problem with `bad`
    /// and the fix `CONFIG_X=y`.
    pub(super) fn want(&self, name: &str, good: &str, bad: &str) -> Outcome {
        let outcome = if self.on(name) {
            Outcome::pass(format!("{}: {good}", self.line(name)))
        } else {
            Outcome::problem(format!("{}: {bad}", unset(self, name)))
                .fix_config(format!("{name}=y"))
        };
        self.cite(outcome, name)
    }
}

/// "CONFIG_X is not set" or "CONFIG_X is absent", for summaries.
pub(super) fn unset(config: &Config, name: &str) -> String {
    match config.value(name) {
        None => format!("{name} is absent"),
        Some(NOT_SET) => format!("{name} is not set"),
        Some(value) => format!("{name}={value}"),
    }
}

/// `items` joined with ", ", at most [`LIST_MAX`] then "... and N more".
pub(super) fn list(items: &[String]) -> String {
    let mut out = items
        .iter()
        .take(LIST_MAX)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > LIST_MAX {
        out.push_str(&format!(" ... and {} more", items.len() - LIST_MAX));
    }
    out
}
