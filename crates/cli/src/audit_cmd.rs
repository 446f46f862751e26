//! `rtlab audit`: runs the audit room on the machine (or a captured tree), prints the table,
//! JSON or Markdown, and exits 1 when a finding failed; `rtlab audit capture DIR`.

use std::io::IsTerminal;

use anyhow::Result;
use audit::context::Source;
use audit::{Options, Selection};
use model::audit::{Profile, Status};
use report::audit::{AuditStyle, audit_markdown, audit_table};
use sys::Root;

use crate::console;
use crate::exit::{Exit, UsageError};
use crate::flags::{AuditAction, AuditArgs, AuditFormat, KernelBuild};

/// Runs `rtlab audit` with `args` on `root`.
pub fn run(args: &AuditArgs, root: &Root) -> Result<Exit> {
    let options = options(args, root)?;
    if let Some(AuditAction::Capture { dir }) = &args.action {
        return capture(root, dir, &options);
    }
    if args.list {
        console::print_stdout(&list())?;
        return Ok(Exit::Ok);
    }
    let selection = Selection {
        only: args.only.clone(),
        skip: args.skip.clone(),
    };
    let report = audit::run(root, &options, &selection).map_err(|e| UsageError(e.to_string()))?;
    let text = match args.format {
        AuditFormat::Json => serde_json::to_string_pretty(&report)? + "\n",
        AuditFormat::Markdown => audit_markdown(&report),
        AuditFormat::Text => {
            let colour = std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
            audit_table(
                &report,
                AuditStyle {
                    verbose: args.verbose,
                },
                &|status, label| paint(colour, status, label),
            )
        }
    };
    console::print_stdout(&text)?;
    Ok(if report.failed() {
        Exit::VerdictFailed
    } else {
        Exit::Ok
    })
}

/// The audit options, with the input files and CPUs checked before anything runs. A CPU
/// that exists but is offline is not an input error: `cpu.isolation` reports it.
fn options(args: &AuditArgs, root: &Root) -> Result<Options> {
    if let Some(rt) = &args.rt_cpus
        && let Ok(possible) = sys::cpu::possible(root)
        && let Some(cpu) = rt.iter().find(|c| !possible.contains(*c))
    {
        return Err(UsageError(format!(
            "--rt-cpus {rt}: CPU {cpu} does not exist on this machine (CPUs: {possible})"
        ))
        .into());
    }
    // Read once, here: a pipe (`--dmesg <(dmesg)`) cannot be read twice, and an input that
    // cannot be read must stop the audit rather than turn its checks into passes.
    let read = |flag: &str,
                path: &std::path::Path,
                how: fn(&std::path::Path) -> Result<Source, String>| {
        how(path).map_err(|e| UsageError(format!("{flag} {}: {e}", path.display())))
    };
    let kconfig = args
        .kconfig
        .as_deref()
        .map(|p| read("--kconfig", p, Source::kconfig_file))
        .transpose()?;
    let dmesg = args
        .dmesg
        .as_deref()
        .map(|p| read("--dmesg", p, Source::kernel_log_file))
        .transpose()?;
    Ok(Options {
        profile: match args.kernel_build {
            KernelBuild::Production => Profile::Production,
            KernelBuild::Debug => Profile::Debug,
        },
        rt_cpus: args.rt_cpus.clone(),
        kconfig,
        dmesg,
    })
}

/// A finding's status label, coloured when `colour` (shared with `rtlab inspect`).
pub(crate) fn paint(colour: bool, status: Status, label: &str) -> String {
    if !colour {
        return label.to_string();
    }
    let code = match status {
        Status::Fail | Status::Error => "1;31",
        Status::Warn => "33",
        Status::Info | Status::Unknown => "36",
        Status::Pass => "32",
    };
    format!("\x1b[{code}m{label}\x1b[0m")
}

/// `--list`: every check, one per line.
fn list() -> String {
    let checks = audit::catalogue();
    let width = checks.iter().map(|c| c.id.len()).max().unwrap_or(0);
    let mut out = String::new();
    for c in checks {
        out.push_str(&format!(
            "{:<width$}  {:<4}  {}\n",
            c.id,
            c.severity.as_str(),
            c.title
        ));
    }
    out
}

fn capture(root: &Root, dir: &std::path::Path, options: &Options) -> Result<Exit> {
    // Where the tree goes is checked before the audit that fills it runs.
    files::check_dir_creatable(dir).map_err(|e| UsageError(format!("{}: {e}", dir.display())))?;
    let summary =
        audit::capture::capture(root, dir, options).map_err(|e| UsageError(e.to_string()))?;
    let mut console = console::Console::new(false);
    console.note(&format!(
        "captured {} files and {} directories ({} KiB) into {}; replay with `rtlab audit --root {}`",
        summary.files,
        summary.dirs,
        summary.bytes.div_ceil(1024),
        dir.display(),
        dir.display()
    ));
    for (path, why) in &summary.skipped {
        console.warn(&format!("not captured: {path}: {why}"));
    }
    Ok(Exit::Ok)
}
