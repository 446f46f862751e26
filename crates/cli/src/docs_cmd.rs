//! `rtlab completions`, `rtlab man` and `rtlab help`: shell completions, man pages and help
//! generated from the one command-line definition in [`crate::flags`], so they never drift
//! from `--help`.
//!
//! A man page is clap_mangen's title, name, description, options and subcommands, with two
//! sections of our own: a SYNOPSIS that shows every option's value (`[-a|--cpus LIST]`), and
//! the text after the options split into its own sections (EXAMPLES, EXIT STATUS, …) instead
//! of one "EXTRA" heading. Every command and subcommand, at any depth, gets a page, and a page
//! names only pages that exist.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

use crate::console;
use crate::exit::{Exit, UsageError};
use crate::flags;

/// Prints the completion script for `shell`.
pub fn completions(shell: clap_complete::Shell) {
    let mut cmd = flags::command();
    clap_complete::generate(shell, &mut cmd, "rtlab", &mut std::io::stdout());
}

/// `rtlab help [COMMAND]...`: the long help of a command or subcommand, as `--help` prints it.
pub fn help(path: &[String]) -> Result<Exit> {
    let mut cmd = flags::command();
    cmd.build();
    let mut at = &mut cmd;
    for (depth, word) in path.iter().enumerate() {
        let known: Vec<String> = visible(at).map(|s| s.get_name().to_string()).collect();
        at = at.find_subcommand_mut(word).ok_or_else(|| {
            let under = path[..depth].join(" ");
            UsageError(format!(
                "no command `{}`; the commands{} are: {}",
                path[..=depth].join(" "),
                if under.is_empty() {
                    String::new()
                } else {
                    format!(" of `rtlab {under}`")
                },
                known.join(", ")
            ))
        })?;
    }
    console::print_stdout(&at.render_long_help().to_string())?;
    Ok(Exit::Ok)
}

/// Writes `rtlab.1` and `rtlab-<command>[-<subcommand>...].1` for every visible command and
/// subcommand at any depth (`rtlab-tune-apply.1`) into `dir`.
pub fn man_pages(dir: &Path) -> Result<Vec<String>> {
    files::check_dir_creatable(dir)
        .map_err(|e| UsageError(format!("--output {}: {e}", dir.display())))?;
    files::create_dir_all(dir).map_err(|e| {
        UsageError(format!(
            "--output {}: {}",
            dir.display(),
            files::plain_io(&e)
        ))
    })?;
    let mut cmd = flags::command();
    cmd.build();
    let mut written = Vec::new();
    write_pages(dir, &cmd, "rtlab", "rtlab", &mut written)?;
    Ok(written)
}

/// Writes the page of `cmd` (file name `name`, typed as `words`) and those of its subcommands.
fn write_pages(
    dir: &Path,
    cmd: &clap::Command,
    name: &str,
    words: &str,
    written: &mut Vec<String>,
) -> Result<()> {
    let path = dir.join(format!("{name}.1"));
    let page = render(cmd, name, words)?;
    std::fs::write(&path, page).with_context(|| format!("writing {}", path.display()))?;
    written.push(path.display().to_string());
    for sub in visible(cmd) {
        let sub_name = format!("{name}-{}", sub.get_name());
        let sub_words = format!("{words} {}", sub.get_name());
        write_pages(dir, sub, &sub_name, &sub_words, written)?;
    }
    Ok(())
}

/// The subcommands a page lists: not hidden.
fn visible(cmd: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    cmd.get_subcommands().filter(|s| !s.is_hide_set())
}

/// One man page in roff.
fn render(cmd: &clap::Command, name: &str, words: &str) -> Result<Vec<u8>> {
    let page = cmd
        .clone()
        .name(name.to_string())
        .bin_name(words.to_string())
        .override_usage(synopsis(cmd, words));
    let man = clap_mangen::Man::new(page.clone());
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    if page
        .get_arguments()
        .any(|a| !a.is_hide_set() && a.get_id() != "help")
    {
        man.render_options_section(&mut out)?;
    }
    if visible(&page).next().is_some() {
        man.render_subcommands_section(&mut out)?;
    }
    if let Some(after) = cmd.get_after_long_help().or_else(|| cmd.get_after_help()) {
        out.extend(after_sections(&after.to_string()).into_bytes());
    }
    out.extend(see_also(name).into_bytes());
    Ok(out)
}

/// The synopsis line: `rtlab measure [-a|--cpus LIST] [--aligned] ... [COMMAND]`.
pub fn synopsis(cmd: &clap::Command, words: &str) -> String {
    let mut line = words.to_string();
    let options = cmd
        .get_arguments()
        .filter(|a| !a.is_positional() && !a.is_hide_set());
    for arg in options {
        let mut form = match (arg.get_short(), arg.get_long()) {
            (Some(s), Some(l)) => format!("-{s}|--{l}"),
            (Some(s), None) => format!("-{s}"),
            (None, Some(l)) => format!("--{l}"),
            (None, None) => continue,
        };
        if arg.get_action().takes_values() {
            let value = arg
                .get_value_names()
                .map(|v| v.join(" "))
                .unwrap_or_else(|| arg.get_id().as_str().to_uppercase());
            let _ = write!(form, " {value}");
        }
        if arg.is_required_set() {
            let _ = write!(line, " {form}");
        } else {
            let _ = write!(line, " [{form}]");
        }
    }
    for arg in cmd.get_positionals().filter(|a| !a.is_hide_set()) {
        let value = arg
            .get_value_names()
            .map(|v| v.join(" "))
            .unwrap_or_else(|| arg.get_id().as_str().to_uppercase());
        let many = if arg.get_num_args().is_some_and(|n| n.max_values() > 1) {
            "..."
        } else {
            ""
        };
        if arg.is_required_set() {
            let _ = write!(line, " {value}{many}");
        } else {
            let _ = write!(line, " [{value}{many}]");
        }
    }
    if visible(cmd).next().is_some() {
        if cmd.is_subcommand_required_set() {
            line.push_str(" COMMAND");
        } else {
            line.push_str(" [COMMAND]");
        }
    }
    line
}

/// The text after the options (`EXAMPLES:`, `EXIT STATUS:`, free paragraphs) as roff
/// sections: a line in capitals ending in a colon starts a section; the lines keep their
/// layout. Text before the first heading goes under NOTES.
fn after_sections(text: &str) -> String {
    let mut out = String::new();
    let mut open = false;
    for line in text.lines() {
        let heading = line
            .strip_suffix(':')
            .filter(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_uppercase() || c == ' '));
        if let Some(h) = heading {
            if open {
                out.push_str(".fi\n");
            }
            let _ = writeln!(out, ".SH \"{h}\"\n.nf");
            open = true;
            continue;
        }
        if !open {
            out.push_str(".SH NOTES\n.nf\n");
            open = true;
        }
        out.push_str(&roff_line(line));
        out.push('\n');
    }
    if open {
        out.push_str(".fi\n");
    }
    out
}

/// A line of text safe in roff: backslashes and minus signs escaped, and a leading `.` or `'`
/// (a control line) guarded.
fn roff_line(line: &str) -> String {
    let escaped = line.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with('.') || escaped.starts_with('\'') {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

/// SEE ALSO: the main page, and the parent command's page for a subcommand.
fn see_also(name: &str) -> String {
    let mut refs = Vec::new();
    if name != "rtlab" {
        refs.push("rtlab(1)".to_string());
    }
    if let Some((parent, _)) = name.rsplit_once('-')
        && parent != "rtlab"
    {
        refs.push(format!("{parent}(1)"));
    }
    if refs.is_empty() {
        return String::new();
    }
    format!(".SH \"SEE ALSO\"\n{}\n", roff_line(&refs.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_named_is_written_and_synopses_show_values() {
        let dir = tempfile_dir();
        let pages = man_pages(&dir).unwrap();
        let names: Vec<String> = pages
            .iter()
            .map(|p| {
                Path::new(p)
                    .file_stem()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        for want in [
            "rtlab",
            "rtlab-tune-irqd",
            "rtlab-explain-irqs",
            "rtlab-kconfig-diff",
            "rtlab-audit-capture",
            "rtlab-trace-record",
            "rtlab-help",
        ] {
            assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
        }
        for page in &pages {
            let text = std::fs::read_to_string(page).unwrap();
            for named in text.split(|c: char| c.is_whitespace() || c == ',') {
                let named = named.replace("\\-", "-");
                if let Some(stem) = named.strip_suffix("(1)")
                    && stem.starts_with("rtlab")
                {
                    assert!(names.iter().any(|n| n == stem), "{page} names {stem}(1)");
                }
            }
            assert!(!text.contains(".SH EXTRA"), "{page}");
        }
        let runs = std::fs::read_to_string(dir.join("rtlab-runs.1")).unwrap();
        assert!(runs.contains("[\\-\\-kernel RELEASE]"), "{runs}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn help_finds_nested_commands_and_names_the_choices() {
        assert!(help(&["tune".into(), "apply".into()]).is_ok());
        let err = help(&["tune".into(), "aply".into()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("no command `tune aply`"), "{err}");
        assert!(err.contains("apply"), "{err}");
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("rtlab-man-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }
}
