//! Which flags write: every argument that takes a file, a directory or a store is either an
//! output that `tests/outputs_first.rs` shows refused before any work when it cannot be
//! written, or an input listed here with why. A new output flag fails this test until its case
//! is added there.

use super::vocabulary::{commands, visible};

/// The outputs' cases, as the integration test holds them.
const CASES: &str = include_str!("../../tests/outputs_first.rs");

/// Arguments that take a path but only read it, or read a store before any work: (command,
/// flag, why).
const READ_ONLY: &[(&str, &str, &str)] = &[
    ("measure", "--token-file", "reads the push token"),
    ("noise", "--token-file", "reads the push token"),
    ("run", "--token-file", "reads the push token"),
    ("import", "--token-file", "reads the push token"),
    ("push", "--token-file", "reads the push token"),
    ("hwlat", "--from", "reads a report instead of measuring"),
    ("audit", "--kconfig", "reads a kernel config"),
    ("audit", "--dmesg", "reads a kernel log"),
    (
        "campaign resume",
        "--state",
        "an existing campaign's directory, locked before it runs",
    ),
    ("campaign status", "--state", "reads a campaign's state"),
    ("campaign report", "--state", "reads a campaign's state"),
    ("runs", "--db", "lists the store"),
    ("monitor", "--token-file", "reads the push token"),
    ("monitor history", "--db", "reads the store"),
    ("monitor incidents", "--db", "reads the store"),
    ("show", "--db", "reads the store"),
    ("label", "--db", "changes one row; no work comes before it"),
    ("rm", "--db", "removes rows; no work comes before it"),
    ("export", "--db", "reads the store"),
    ("compare", "--db", "reads the store"),
    ("worst", "--db", "reads the store"),
    ("report", "--db", "reads the store"),
    ("push", "--db", "reads the store's queue"),
    ("explain", "--db", "reads the store"),
    ("sched check", "--db", "reads the store"),
    (
        "serve",
        "--db",
        "the store it serves, opened before it listens",
    ),
    ("serve token", "--db", "the store it serves"),
    (
        "serve token add",
        "--db",
        "adds a row; no work comes before it",
    ),
    ("serve token list", "--db", "reads the store"),
    (
        "serve token revoke",
        "--db",
        "changes a row; no work comes before it",
    ),
    ("tune plan", "--irq-rules-file", "reads IRQ rules"),
    ("tune apply", "--irq-rules-file", "reads IRQ rules"),
    ("tune irqd", "--irq-rules-file", "reads IRQ rules"),
    (
        "tune revert",
        "--journal",
        "reads the journal `tune apply` wrote",
    ),
    ("tune status", "--journal", "reads the journal"),
    ("tune run", "--journal", "reads the journal"),
    (
        "tune irqd",
        "--journal",
        "adds to the journal `tune apply` wrote, which must exist",
    ),
    ("exec", "--journal", "reads the journal for the RT cpuset"),
    ("import", "FILE", "the files imported"),
];

/// Whether a value name is a path (`FILE`, `DIR`, `PATH`, `PATH|URL`).
fn is_path(name: &str) -> bool {
    name == "FILE" || name == "DIR" || name.starts_with("PATH")
}

#[test]
fn every_path_argument_is_an_output_shown_refused_early_or_an_input() {
    // As rustfmt lays the cases out, a tuple may span lines.
    let cases: String = CASES.split_whitespace().collect();
    let mut unaccounted = Vec::new();
    for (path, cmd) in commands() {
        let command = path.strip_prefix("rtlab ").unwrap_or("");
        for a in visible(&cmd) {
            let names: Vec<String> = a
                .get_value_names()
                .map(|v| v.iter().map(ToString::to_string).collect())
                .unwrap_or_default();
            let Some(value) = names.iter().find(|n| is_path(n)) else {
                continue;
            };
            let flag = a.get_long().map_or(value.clone(), |l| format!("--{l}"));
            let case: String = format!("(\"{command}\",\"{flag}\",")
                .split_whitespace()
                .collect();
            let input = READ_ONLY
                .iter()
                .any(|(c, f, _)| *c == command && *f == flag);
            if cases.contains(&case) == input {
                unaccounted.push(format!(
                    "{path} {flag}: {}",
                    if input {
                        "both an output case and an input"
                    } else {
                        "neither"
                    }
                ));
            }
        }
    }
    assert!(unaccounted.is_empty(), "{unaccounted:#?}");
}
