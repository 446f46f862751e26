//! clap's errors as rtlab says them: one line naming the value and the fix (a range in words, a
//! negative value called negative, the values a flag takes), ending with the help of the
//! command that was typed (`rtlab measure --help`), not the top-level one.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::error::{ContextKind, ContextValue, ErrorKind};

use crate::console;

/// Prints clap's error `e` for the command line `argv` (help and version in full, exit 0; a
/// usage error as one line, exit 2).
pub fn usage_error(e: &clap::Error, argv: &[OsString]) -> ExitCode {
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            }
        }
        _ => {
            let invalid = match e.get(ContextKind::InvalidArg) {
                Some(ContextValue::String(s)) => Some(s.as_str()),
                _ => None,
            };
            let words: Vec<String> = argv
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            let typed = command_typed(&crate::flags::command(), &words);
            console::error(&line(&e.render().to_string(), invalid, &words, &typed));
            ExitCode::from(2)
        }
    }
}

/// The one line for clap's rendered error `text`; `invalid` is the argument clap could not
/// place, `argv` the command line as typed, `typed` the command it names (`rtlab measure`).
pub(crate) fn line(text: &str, invalid: Option<&str>, argv: &[String], typed: &str) -> String {
    let message = negative(invalid, argv)
        .or_else(|| out_of_range(text))
        .unwrap_or_else(|| first_line(text));
    let values = text
        .lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix("[possible values: "))
        .and_then(|l| l.strip_suffix(']'))
        .map(|v| format!(" (it takes {v})"))
        .unwrap_or_default();
    let tip = text
        .lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix("tip: "))
        .map(|t| format!(" ({t})"))
        .unwrap_or_default();
    let instead = invalid
        .and_then(|flag| {
            INSTEAD.iter().find(|(command, f, _)| {
                *command == typed && *f == flag.split('=').next().unwrap_or(flag)
            })
        })
        .map(|(_, _, what)| format!(" ({what})"))
        .unwrap_or_default();
    format!("{message}{values}{tip}{instead}; see `{typed} --help`")
}

/// Flags other tools (or habits) lead people to type where rtlab does the thing another way:
/// the command, the flag, and what to type instead.
const INSTEAD: &[(&str, &str, &str)] = &[(
    "rtlab tune apply",
    "--dry-run",
    "`rtlab tune plan` with the same options prints what apply would change; apply itself \
         shows its plan and asks before changing anything, unless --yes",
)];

/// clap's first line, with the required arguments it lists below it.
fn first_line(text: &str) -> String {
    let mut lines = text.lines();
    let mut first = lines.next().unwrap_or("invalid arguments").to_string();
    // "the following required arguments were not provided:" lists them below.
    if first.ends_with(':') {
        let listed: Vec<&str> = lines.map(str::trim).take_while(|l| !l.is_empty()).collect();
        first = format!("{} {}", first, listed.join(", "));
    }
    first.strip_prefix("error: ").unwrap_or(&first).to_string()
}

/// `--duration -5s` reads to clap as the flags `-5s`: said as the negative value it is.
fn negative(invalid: Option<&str>, argv: &[String]) -> Option<String> {
    let invalid = invalid?;
    let digits = invalid.strip_prefix('-')?;
    if !digits.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return None;
    }
    let own = argv.iter().take_while(|a| *a != "--");
    let at = own.clone().position(|a| a.starts_with(invalid))?;
    let token = &argv[at];
    match at.checked_sub(1).map(|i| argv[i].as_str()) {
        Some(flag) if flag.starts_with('-') && !flag.contains('=') => Some(format!(
            "{flag} {token}: a negative value; give a positive one"
        )),
        _ => Some(format!(
            "{token}: a negative value, where a positive one is needed"
        )),
    }
}

/// clap's "invalid value '150' for '--priority <PRIO>': 150 is not in 0..=99", in words.
fn out_of_range(text: &str) -> Option<String> {
    let first = text.lines().next()?;
    let rest = first.strip_prefix("error: invalid value '")?;
    let (value, rest) = rest.split_once("' for '")?;
    let (flag, rest) = rest.split_once("': ")?;
    let range = rest.strip_prefix(value)?.strip_prefix(" is not in ")?;
    let (low, high) = range.split_once("..=")?;
    let flag = flag.split(' ').next().unwrap_or(flag);
    Some(format!(
        "{flag} {value} is out of range; give {low} to {high}"
    ))
}

/// The command `argv` names, as deep as its words name subcommands of `cli`
/// (`rtlab campaign status`); rtlab's own global `--root DIR` is passed over.
fn command_typed(cli: &clap::Command, argv: &[String]) -> String {
    let mut path = vec![cli.get_name().to_string()];
    let mut cmd = cli;
    let mut words = argv.iter().skip(1);
    while let Some(w) = words.next() {
        if w == "--" {
            break;
        }
        if w == "--root" {
            words.next();
            continue;
        }
        if w.starts_with('-') {
            continue;
        }
        match cmd.find_subcommand(w) {
            Some(sub) => {
                path.push(sub.get_name().to_string());
                cmd = sub;
            }
            None => break,
        }
    }
    path.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &str) -> Vec<String> {
        words.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn a_range_is_said_in_words_with_the_commands_help() {
        let text = "error: invalid value '150' for '--priority <PRIO>': 150 is not in 0..=99\n\n\
                    For more information, try '--help'.\n\nUsage: rtlab measure [OPTIONS]\n";
        assert_eq!(
            line(
                text,
                None,
                &argv("rtlab measure --priority 150"),
                "rtlab measure"
            ),
            "--priority 150 is out of range; give 0 to 99; see `rtlab measure --help`"
        );
    }

    #[test]
    fn a_negative_value_is_called_negative() {
        let text = "error: unexpected argument '-5' found\n\nUsage: rtlab measure [OPTIONS]\n";
        assert_eq!(
            line(
                text,
                Some("-5"),
                &argv("rtlab measure --duration -5s"),
                "rtlab measure"
            ),
            "--duration -5s: a negative value; give a positive one; see `rtlab measure --help`"
        );
        // A flag clap does not know stays clap's words.
        let text = "error: unexpected argument '--bogus' found\n\nUsage: rtlab campaign status [OPTIONS] --state <DIR>\n";
        assert_eq!(
            line(
                text,
                Some("--bogus"),
                &argv("rtlab campaign status --bogus"),
                "rtlab campaign status"
            ),
            "unexpected argument '--bogus' found; see `rtlab campaign status --help`"
        );
    }

    #[test]
    fn a_flag_rtlab_does_another_way_says_what_to_type() {
        let text =
            "error: unexpected argument '--dry-run' found\n\nUsage: rtlab tune apply [OPTIONS]\n";
        let said = line(
            text,
            Some("--dry-run"),
            &argv("rtlab tune apply --dry-run"),
            "rtlab tune apply",
        );
        assert!(
            said.contains("`rtlab tune plan` with the same options"),
            "{said}"
        );
        assert!(said.ends_with("; see `rtlab tune apply --help`"), "{said}");
        // Elsewhere the flag is only unknown.
        let other = line(
            text,
            Some("--dry-run"),
            &argv("rtlab measure --dry-run"),
            "rtlab measure",
        );
        assert!(!other.contains("tune plan"), "{other}");
        // Every command named is one rtlab has.
        let cli = crate::flags::command();
        for (command, _, _) in INSTEAD {
            assert_eq!(command_typed(&cli, &argv(command)), *command);
        }
    }

    #[test]
    fn the_command_typed_is_found_in_the_words() {
        let cli = crate::flags::command();
        for (words, typed) in [
            ("rtlab measure --priority 150", "rtlab measure"),
            (
                "rtlab --root /tmp/t campaign status --bogus",
                "rtlab campaign status",
            ),
            ("rtlab export x --format xml", "rtlab export"),
            ("rtlab tune run -- measure", "rtlab tune run"),
            ("rtlab nonsense", "rtlab"),
        ] {
            assert_eq!(command_typed(&cli, &argv(words)), typed, "{words}");
        }
    }

    #[test]
    fn the_values_a_flag_takes_are_named() {
        let text = "error: invalid value 'xml' for '--format <FORMAT>'\n  [possible values: text, json, csv]\n\nUsage: rtlab export [OPTIONS] <RUN>...\n";
        assert_eq!(
            line(
                text,
                None,
                &argv("rtlab export x --format xml"),
                "rtlab export"
            ),
            "invalid value 'xml' for '--format <FORMAT>' (it takes text, json, csv); see `rtlab export --help`"
        );
    }
}
