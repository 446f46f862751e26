//! The vocabulary table: every long flag of every command, the one idea it names, its value
//! and the commands that take it. Held against the command tree: a flag not in [`IDEAS`]
//! fails (a new flag is classified when it is added), an idea with two names fails, a name
//! whose value differs between commands fails (one name, one meaning), and the table in
//! docs/cli-conventions.md is this table as generated (`RTLAB_BLESS=1 cargo test -p rtlab
//! --bin rtlab vocabulary_table` writes it).

use std::collections::BTreeMap;

use super::vocabulary::{commands, visible};

/// Each flag and the one idea it names, in words.
const IDEAS: &[(&str, &str)] = &[
    ("aligned", "wake every measuring thread at the same instant"),
    ("allow-prio-99", "allow real-time priority 99"),
    ("baseline", "the repeated-runs verdict's baseline"),
    (
        "break",
        "stop at the first wake-up later than this (capture trigger)",
    ),
    ("budget", "the latency limit a verdict holds to"),
    ("burst-gap", "breaches this close together are one incident"),
    ("check-after", "when to check a started program"),
    (
        "checkpoint",
        "how often the result file is rewritten during a run",
    ),
    ("connections", "store connections at once"),
    ("cpus", "the CPUs to measure or run on"),
    (
        "cycles",
        "how many wake-ups to measure instead of a duration",
    ),
    ("db", "the run store"),
    (
        "deadline",
        "a SCHED_DEADLINE reservation for a started program",
    ),
    (
        "dl-period",
        "the SCHED_DEADLINE period of the measuring threads",
    ),
    (
        "dl-runtime",
        "the SCHED_DEADLINE runtime of the measuring threads",
    ),
    ("dma-latency", "the /dev/cpu_dma_latency value held"),
    ("dmesg", "a saved kernel log to classify"),
    ("dry-run", "print what would be done, do nothing"),
    ("duration", "how long"),
    ("duty", "the share of each interval measured"),
    (
        "engine",
        "what measures: rtlab's threads or the kernel's tracer",
    ),
    ("events", "the trace events to record"),
    (
        "every",
        "how often: a measurement, or a monitor's history interval, every TIME",
    ),
    (
        "fail-if-worse",
        "how much worse than the baseline is a regression",
    ),
    ("format", "the form of standard output"),
    ("from", "read a saved report instead of measuring"),
    ("groups", "priority-inversion groups at once"),
    ("histogram", "cyclictest's histogram layout up to TIME"),
    ("host", "the host a run belongs to"),
    ("housekeeping", "the CPUs for everything else"),
    (
        "interval",
        "how often the repeated action happens (its period)",
    ),
    ("interval-width", "the width a level's interval should have"),
    ("irq-rule", "an IRQ placement rule"),
    ("irq-rules-file", "a file of IRQ placement rules"),
    (
        "jitter-from",
        "take each CPU's worst wake-up latency from a run",
    ),
    ("journal", "the tuning journal of originals"),
    ("kconfig", "a kernel config file to judge"),
    ("keep", "how long a history is kept"),
    (
        "keep-detail",
        "how long a monitor interval's whole document is kept on the server",
    ),
    ("kernel", "the kernel release a run belongs to"),
    ("kernel-build", "the kind of kernel build meant"),
    ("label", "the run's label"),
    ("last", "how far back to read: the last TIME"),
    ("limit", "at most this many rows"),
    ("list", "list what there is and exit"),
    ("listen", "the address to listen on"),
    ("load", "the load to run during the measurement"),
    ("load-cgroup", "run the load in a cgroup of its own"),
    ("load-cpus", "the CPUs for the load"),
    ("load-dir", "the directory the load works in"),
    ("load-join", "start the load in an existing cgroup"),
    ("main-cpu", "the CPUs for rtlab's other threads"),
    ("max-upload", "the largest upload accepted"),
    ("metrics", "the OpenMetrics file rewritten as a run goes"),
    ("no-attribute", "record no trace to attribute interruptions"),
    ("no-cpuset", "do not join the RT cpuset"),
    ("no-mlock", "do not lock memory"),
    ("no-report", "write no HTML report"),
    ("no-store", "do not save the run in the store"),
    (
        "noise",
        "measure OS noise for TIME after the latency phases",
    ),
    ("on-incident", "what to do on each new incident"),
    ("once", "check once and exit"),
    ("only", "run only these checks"),
    (
        "output",
        "where the output is written: a file, or a directory for many",
    ),
    (
        "per-hour",
        "the acceptable probability per hour of exceeding the budget",
    ),
    ("period", "the duty cycle's period"),
    ("policy", "the scheduling policy"),
    ("pool", "analyse runs of different conditions together"),
    ("prefix", "a prefix for every test case name"),
    ("priority", "the real-time priority"),
    ("profile", "how far to tune"),
    ("push", "upload the run to the server at URL"),
    ("queue", "list the push queue instead of sending"),
    ("quiet", "nothing on standard error but errors"),
    ("rate", "uploads per second per token"),
    ("read-token", "reading needs a token too"),
    ("retry-for", "how long to keep trying an unreachable server"),
    ("rlimit-memlock", "the started program's RLIMIT_MEMLOCK"),
    ("role", "what a token may do"),
    ("rt-cpus", "the real-time CPUs"),
    (
        "run-delay-budget",
        "the run delay a real-time thread may have",
    ),
    ("runtime", "the duty cycle's busy time"),
    ("session", "the session runs belong to"),
    (
        "sibling-cpusets",
        "what to do with other software's cpusets",
    ),
    ("since", "only runs from this date"),
    ("skip", "skip these checks"),
    (
        "spikes",
        "how many of the worst samples to keep, list or explain",
    ),
    ("state", "a campaign's state directory"),
    ("status", "the run status"),
    ("svg", "also write each plot as an SVG file into DIR"),
    (
        "threshold",
        "the level above which something counts (not a verdict)",
    ),
    ("to", "the server `rtlab push` uploads to"),
    ("token-file", "the file holding the push token"),
    ("trace", "use the kernel's tracepoints while running"),
    ("trace-buffer", "the trace ring buffer per CPU"),
    ("trace-dir", "keep the whole trace in DIR"),
    ("trace-space", "the disk space kept traces may take"),
    ("tuned", "measure, tune, measure again and revert"),
    ("unit", "print a systemd unit and exit"),
    ("until", "only runs up to this date"),
    ("user-threads", "timerlat's user-space threads"),
    ("verbose", "every finding with all its evidence"),
    ("warmup", "how long the load runs before measuring starts"),
    ("width", "the time sampled in each window (hwlatdetect's)"),
    ("window", "the sampling window (hwlatdetect's)"),
    ("workload", "the work after each wake-up"),
    (
        "workload-deadline",
        "the deadline of the work after each wake-up",
    ),
    ("worst-case", "add each run's worst-case estimate"),
    ("yes", "go ahead without asking"),
];

/// Flags whose value may be named more than one way, with the names: one idea whose value is
/// a file for most commands and a directory for the one that writes many.
const VALUES: &[(&str, &[&str])] = &[("output", &["FILE", "DIR"])];

/// One flag as the command tree has it: the value it takes (`None` for a switch) and the
/// commands that have it.
#[derive(Default)]
struct Seen {
    values: Vec<Option<String>>,
    commands: Vec<String>,
}

/// Every visible long flag but --help and --version.
fn flags() -> BTreeMap<String, Seen> {
    let mut out: BTreeMap<String, Seen> = BTreeMap::new();
    for (path, cmd) in commands() {
        for a in visible(&cmd) {
            let Some(long) = a.get_long() else { continue };
            if matches!(long, "help" | "version") {
                continue;
            }
            let value = a.get_action().takes_values().then(|| {
                a.get_value_names()
                    .map(|v| {
                        v.iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                    .unwrap_or_default()
            });
            let seen = out.entry(long.to_string()).or_default();
            if !seen.values.contains(&value) {
                seen.values.push(value);
            }
            let command = path.strip_prefix("rtlab ").unwrap_or("rtlab").to_string();
            seen.commands.push(command);
        }
    }
    out
}

#[test]
fn one_name_per_idea_and_one_idea_per_name() {
    let flags = flags();
    let mut problems = Vec::new();
    for name in flags.keys() {
        if !IDEAS.iter().any(|(n, _)| n == name) {
            problems.push(format!(
                "--{name} is in no idea of IDEAS: say which idea it names"
            ));
        }
    }
    for (name, _) in IDEAS {
        if !flags.contains_key(*name) {
            problems.push(format!("--{name} is in IDEAS but no command has it"));
        }
    }
    let mut by_idea: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (name, idea) in IDEAS {
        by_idea.entry(idea).or_default().push(name);
    }
    for (idea, names) in by_idea.iter().filter(|(_, n)| n.len() > 1) {
        problems.push(format!("one idea, several names: {idea}: {names:?}"));
    }
    for (name, seen) in &flags {
        let allowed = VALUES.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
        let values: Vec<&Option<String>> = seen.values.iter().collect();
        let fine = match allowed {
            Some(ok) => values
                .iter()
                .all(|v| v.as_deref().is_some_and(|v| ok.contains(&v))),
            None => values.len() == 1,
        };
        if !fine {
            problems.push(format!(
                "--{name} takes different values in different commands: {values:?} ({:?})",
                seen.commands
            ));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// The table as docs/cli-conventions.md holds it, between its markers.
fn table() -> String {
    let flags = flags();
    let mut rows: Vec<(String, String, String, String)> = IDEAS
        .iter()
        .filter_map(|(name, idea)| {
            let seen = flags.get(*name)?;
            let value = seen
                .values
                .iter()
                .map(|v| v.clone().unwrap_or_else(|| "(switch)".into()))
                .collect::<Vec<_>>()
                .join(" or ")
                // A `|` inside a Markdown table cell ends the cell.
                .replace('|', "\\|");
            let mut commands = seen.commands.clone();
            commands.dedup();
            Some((
                idea.to_string(),
                format!("`--{name}`"),
                value,
                commands.join(", "),
            ))
        })
        .collect();
    rows.sort();
    let mut out = String::from("| idea | flag | value | commands |\n| --- | --- | --- | --- |\n");
    for (idea, flag, value, commands) in rows {
        out.push_str(&format!("| {idea} | {flag} | {value} | {commands} |\n"));
    }
    out
}

const BEGIN: &str = "<!-- vocabulary table: generated by crates/cli/src/flags/ideas.rs -->\n";
const END: &str = "<!-- end of the vocabulary table -->\n";

#[test]
fn vocabulary_table_in_the_docs_is_the_command_trees() {
    docs_table(
        BEGIN,
        END,
        &table(),
        "vocabulary table is not the command tree's; RTLAB_BLESS=1 cargo test -p rtlab --bin rtlab vocabulary_table writes it",
    );
}

/// Holds the table between `begin` and `end` in docs/cli-conventions.md to `wanted`, or with
/// RTLAB_BLESS set writes it there; `what` names the table and the command that writes it.
#[cfg(test)]
pub(super) fn docs_table(begin: &str, end: &str, wanted: &str, what: &str) {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/cli-conventions.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (Some(start), Some(stop)) = (doc.find(begin), doc.find(end)) else {
        panic!("docs/cli-conventions.md lacks the markers {begin:?} and {end:?}");
    };
    if &doc[start + begin.len()..stop] == wanted {
        return;
    }
    if std::env::var_os("RTLAB_BLESS").is_some() {
        let new = format!("{}{begin}{wanted}{}", &doc[..start], &doc[stop..]);
        std::fs::write(&path, new).unwrap();
        return;
    }
    panic!("docs/cli-conventions.md: the {what}");
}
