//! `rtlab kconfig diff OLD NEW`: reads two kernel configs (text or gzip), asks the audit room
//! for the real-time-relevant differences and prints them as aligned text, JSON (schema
//! `rtlab.kconfig-diff/1`) or a Markdown table.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use audit::kconfig_diff::{self, Diff};

use crate::console;
use crate::exit::{Exit, UsageError};
use crate::flags::{KconfigAction, KconfigArgs, KconfigFormat};

/// The schema id of the JSON form.
pub const SCHEMA: &str = "rtlab.kconfig-diff/1";

/// Runs `rtlab kconfig ...`.
pub fn run(args: &KconfigArgs) -> Result<Exit> {
    let KconfigAction::Diff { old, new, format } = &args.action;
    let old_text = read(old)?;
    let new_text = read(new)?;
    let diff = kconfig_diff::diff(&old_text, &new_text);
    let text = match format {
        KconfigFormat::Text => table(&diff, old, new),
        KconfigFormat::Markdown => markdown(&diff, old, new),
        KconfigFormat::Json => {
            let mut value = serde_json::to_value(&diff)?;
            if let Some(map) = value.as_object_mut() {
                map.insert("schema".into(), SCHEMA.into());
            }
            serde_json::to_string_pretty(&value)? + "\n"
        }
    };
    console::print_stdout(&text)?;
    Ok(Exit::Ok)
}

fn read(path: &Path) -> Result<String> {
    sys::host::read_config_file(path)
        .map_err(|e| UsageError(format!("{}: {e}", path.display())).into())
}

fn value(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("not set")
}

fn title(diff: &Diff, old: &Path, new: &Path) -> String {
    let side = |path: &Path, k: &Option<kconfig_diff::ConfigKernel>| match k {
        Some(k) => format!("{} ({} {})", path.display(), k.version, k.arch),
        None => path.display().to_string(),
    };
    format!(
        "kernel config {} -> {}",
        side(old, &diff.old_kernel),
        side(new, &diff.new_kernel)
    )
}

fn tail(diff: &Diff) -> String {
    let n = diff.changes.len();
    format!(
        "{n} real-time-relevant change{}; {} other option{} changed",
        if n == 1 { "" } else { "s" },
        diff.other_changed,
        if diff.other_changed == 1 { "" } else { "s" }
    )
}

/// Aligned text, most important first.
fn table(diff: &Diff, old: &Path, new: &Path) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", title(diff, old, new));
    if !diff.changes.is_empty() {
        let rows: Vec<[String; 4]> = diff
            .changes
            .iter()
            .map(|c| {
                [
                    c.importance.as_str().to_string(),
                    c.name.clone(),
                    format!("{} -> {}", value(&c.old), value(&c.new)),
                    c.note.clone(),
                ]
            })
            .collect();
        let header = ["importance", "option", "change", "what it means"].map(String::from);
        let widths: Vec<usize> = (0..3)
            .map(|i| {
                rows.iter()
                    .chain([&header])
                    .map(|r| r[i].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let _ = writeln!(out);
        for r in [&header].into_iter().chain(&rows) {
            let _ = writeln!(
                out,
                "{:<w0$}  {:<w1$}  {:<w2$}  {}",
                r[0],
                r[1],
                r[2],
                r[3],
                w0 = widths[0],
                w1 = widths[1],
                w2 = widths[2]
            );
        }
    }
    let _ = writeln!(out, "\n{}", tail(diff));
    for w in &diff.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    out
}

/// A Markdown table.
fn markdown(diff: &Diff, old: &Path, new: &Path) -> String {
    let cell = |s: &str| s.replace('|', "\\|");
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", cell(&title(diff, old, new)));
    if !diff.changes.is_empty() {
        let _ = writeln!(out, "| importance | option | old | new | what it means |");
        let _ = writeln!(out, "| --- | --- | --- | --- | --- |");
        for c in &diff.changes {
            let _ = writeln!(
                out,
                "| {} | `{}` | {} | {} | {} |",
                c.importance.as_str(),
                c.name,
                cell(value(&c.old)),
                cell(value(&c.new)),
                cell(&c.note)
            );
        }
        out.push('\n');
    }
    let _ = writeln!(out, "{}", tail(diff));
    for w in &diff.warnings {
        let _ = writeln!(out, "\n> warning: {}", cell(w));
    }
    out
}
