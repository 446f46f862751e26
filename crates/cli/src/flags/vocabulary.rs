//! The one vocabulary of docs/cli-conventions.md, held against the whole command tree: one way
//! to ask for JSON, one for policy and priority, one word for how long, and no replaced
//! spelling left visible.

use clap::{Arg, Command};

/// Every command path (`rtlab tune plan`) with its command.
pub(super) fn commands() -> Vec<(String, Command)> {
    fn walk(cmd: &Command, path: &str, out: &mut Vec<(String, Command)>) {
        out.push((path.to_string(), cmd.clone()));
        for sub in cmd.get_subcommands() {
            walk(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }
    let mut cmd = super::command();
    cmd.build();
    let mut out = Vec::new();
    walk(&cmd, "rtlab", &mut out);
    out
}

/// The visible flags of a command.
pub(super) fn visible(cmd: &Command) -> impl Iterator<Item = &Arg> {
    cmd.get_arguments().filter(|a| !a.is_hide_set())
}

fn values(arg: &Arg) -> Vec<String> {
    arg.get_possible_values()
        .iter()
        .map(|v| v.get_name().to_string())
        .collect()
}

/// The commands whose output has a JSON document.
const WITH_JSON: &[&str] = &[
    "measure",
    "noise",
    "hwlat",
    "load",
    "audit",
    "inspect",
    "kconfig diff",
    "run",
    "campaign status",
    "runs",
    "show",
    "export",
    "compare",
    "import",
    "push",
    "explain",
    "explain irqs",
    "explain sched",
    "explain wakeups",
    "sched check",
    "pi check",
    "serve token list",
    "tune plan",
    "tune apply",
];

#[test]
fn json_is_asked_for_with_format_json_on_every_command_that_has_it() {
    let all = commands();
    for name in WITH_JSON {
        let path = format!("rtlab {name}");
        let (_, cmd) = all
            .iter()
            .find(|(p, _)| *p == path)
            .unwrap_or_else(|| panic!("{path} is not a command"));
        let format = visible(cmd)
            .find(|a| a.get_long() == Some("format"))
            .unwrap_or_else(|| panic!("{path} has no --format"));
        assert!(values(format).iter().any(|v| v == "json"), "{path}");
    }
    for (path, cmd) in &all {
        for a in visible(cmd) {
            assert_ne!(a.get_long(), Some("json"), "{path} shows --json");
            if a.get_long() == Some("format") {
                let v = values(a);
                // The human form is `text` everywhere (`table` is a replaced spelling).
                assert!(!v.iter().any(|v| v == "table"), "{path}: {v:?}");
            }
        }
    }
}

#[test]
fn policy_and_priority_are_spelled_and_bounded_alike() {
    for (path, cmd) in commands() {
        let Some(priority) = visible(&cmd).find(|a| a.get_long() == Some("priority")) else {
            continue;
        };
        assert_eq!(priority.get_short(), Some('p'), "{path}");
        let help = priority
            .get_help()
            .map(ToString::to_string)
            .unwrap_or_default();
        assert!(
            help.contains("1-99") && help.contains("--allow-prio-99"),
            "{path}: {help}"
        );
        assert!(
            visible(&cmd).any(|a| a.get_long() == Some("allow-prio-99")),
            "{path} has --priority without --allow-prio-99"
        );
        let policy = visible(&cmd)
            .find(|a| a.get_long() == Some("policy"))
            .unwrap_or_else(|| panic!("{path} has --priority without --policy"));
        let v = values(policy);
        for p in ["fifo", "rr", "other"] {
            assert!(v.iter().any(|x| x == p), "{path} --policy lacks {p}");
        }
        let mut cmd = cmd.clone().no_binary_name(true);
        for bad in ["0", "100"] {
            let mut line: Vec<&str> = vec!["--priority", bad];
            let positional = cmd.get_positionals().any(Arg::is_required_set);
            if positional {
                line.extend(["--", "true"]);
            }
            let e = cmd.try_get_matches_from_mut(&line).unwrap_err();
            assert_eq!(
                e.kind(),
                clap::error::ErrorKind::ValueValidation,
                "{path} {bad}"
            );
        }
    }
}

#[test]
fn how_long_is_d_duration_and_no_replaced_spelling_shows() {
    for (path, cmd) in commands() {
        for a in visible(&cmd) {
            let Some(long) = a.get_long() else { continue };
            assert!(
                !["phase", "fifo", "rr", "force", "fail-above", "out"].contains(&long),
                "{path} shows --{long}, a replaced spelling"
            );
            if long == "duration" {
                assert_eq!(a.get_short(), Some('D'), "{path} --duration");
            }
        }
    }
}

/// Every README heading a help text points to is there (`serve --help` pointed to "Serving a
/// fleet", which no heading was).
#[test]
fn the_readme_sections_help_points_to_exist() {
    let readme = include_str!("../../../../README.md");
    let headings: Vec<&str> = readme
        .lines()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|l| l.trim_start_matches('#').trim())
        .collect();
    let mut pointers = 0;
    for (path, cmd) in commands() {
        let texts = [
            cmd.get_long_about(),
            cmd.get_about(),
            cmd.get_after_long_help(),
        ];
        for text in texts.into_iter().flatten().map(ToString::to_string) {
            for (_, rest) in text
                .match_indices("README: \"")
                .map(|(i, m)| ((), &text[i + m.len()..]))
            {
                let name = rest.split('"').next().unwrap_or_default();
                pointers += 1;
                assert!(
                    headings.contains(&name),
                    "{path} points to README \"{name}\""
                );
            }
        }
    }
    assert!(
        pointers > 0,
        "no help text points to the README: the test reads nothing"
    );
}
