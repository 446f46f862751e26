//! A tuning plan as text for a person and as a shell script a reviewer can read and run by
//! hand (`rtlab tune plan --format shell`). Both are deterministic (no date, no host probing):
//! the same plan renders to the same bytes.

use std::fmt::Write as _;

use model::tune::{Action, Change, TunePlan};

use crate::explain::wrap;

/// The plan for a terminal.
pub fn plan_text(p: &TunePlan) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "rtlab tune plan ({}): RT {}, housekeeping {}",
        p.profile.as_str(),
        p.rt_cpus.with_noun(),
        p.housekeeping.with_noun()
    );
    out.push('\n');
    boot_text(&mut out, p);
    out.push('\n');
    if p.changes.is_empty() {
        out.push_str(
            "Runtime changes: none; the running system is already tuned for this split.\n",
        );
    } else {
        let _ = writeln!(
            out,
            "Runtime changes ({}; `rtlab tune apply` will carry them out and can revert them):",
            p.changes.len()
        );
        for c in &p.changes {
            let _ = writeln!(out, "  [{}] {}", c.group, change_line(c));
            for line in wrap(&c.reason, 88) {
                let _ = writeln!(out, "        {line}");
            }
        }
    }
    if !p.notes.is_empty() {
        out.push_str("\nLeft as it is:\n");
        for n in &p.notes {
            for (k, line) in wrap(n, 90).into_iter().enumerate() {
                let _ = writeln!(out, "  {} {line}", if k == 0 { "-" } else { " " });
            }
        }
    }
    out
}

/// The boot parameters the plan wants, and how to install them with each boot loader.
fn boot_text(out: &mut String, p: &TunePlan) {
    if p.boot.params.is_empty() {
        out.push_str("Boot parameters: the command line already has every one the plan wants.\n");
    } else {
        let _ = writeln!(
            out,
            "Boot parameters (a reboot applies them; rtlab never edits the boot loader):\n  {}",
            p.boot.line
        );
        for b in &p.boot.params {
            let now = b
                .current
                .as_ref()
                .map_or(String::new(), |c| format!(" (now {c})"));
            let _ = writeln!(out, "    {}{now}: {}", b.text(), b.reason);
        }
        let detected: Vec<&str> = p
            .boot
            .install
            .iter()
            .filter(|i| i.detected)
            .map(|i| i.loader.as_str())
            .collect();
        let _ = writeln!(
            out,
            "  to install ({}):",
            if detected.is_empty() {
                "no boot loader recognised here".to_string()
            } else {
                format!("this machine uses {}", detected.join(", "))
            }
        );
        for i in &p.boot.install {
            let _ = writeln!(
                out,
                "    {}{}:",
                i.loader,
                if i.detected { " *" } else { "" }
            );
            for (n, s) in i.steps.iter().enumerate() {
                for (k, line) in wrap(s, 86).into_iter().enumerate() {
                    if k == 0 {
                        let _ = writeln!(out, "      {}. {line}", n + 1);
                    } else {
                        let _ = writeln!(out, "         {line}");
                    }
                }
            }
        }
    }
}

fn change_line(c: &Change) -> String {
    let now = c.current.as_deref().unwrap_or("(absent)");
    match c.action {
        Action::Write => format!(
            "{}: {} -> {}",
            c.path,
            now,
            c.new.as_deref().unwrap_or_default()
        ),
        Action::Mkdir => format!("create {}", c.path),
        Action::MoveTasks => format!(
            "move the {} tasks of {} to {}",
            c.new.as_deref().unwrap_or("0"),
            now,
            c.path
        ),
        Action::SetEnv => format!(
            "{}: set {} (now {})",
            c.path,
            c.new.as_deref().unwrap_or_default(),
            c.current.as_deref().unwrap_or("unset")
        ),
        Action::Restart => format!("restart {} if it runs", c.path),
        Action::SetAffinity => format!(
            "allow thread {} CPUs {} (now {})",
            c.path.trim_start_matches("/proc/"),
            c.new.as_deref().unwrap_or_default(),
            now
        ),
        Action::SetPolicy => format!(
            "schedule thread {}: {} -> {}",
            c.path.trim_start_matches("/proc/"),
            now,
            c.new.as_deref().unwrap_or_default()
        ),
    }
}

/// `chrt -p` for thread `tid` to run as `sched` (`FIFO 80`, `RR 10`, `OTHER`).
fn chrt(sched: &str, tid: &str) -> String {
    let mut words = sched.split_whitespace();
    let flag = match words.next().unwrap_or_default() {
        "FIFO" => "-f",
        "RR" => "-r",
        "BATCH" => "-b",
        "IDLE" => "-i",
        _ => "-o",
    };
    format!("chrt {flag} -p {} {tid}", words.next().unwrap_or("0"))
}

/// `value` quoted for sh when it needs it.
fn quote(value: &str) -> String {
    if !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.,:/+=".contains(&b))
    {
        value.to_string()
    } else {
        format!("'{}'", value.replace('\'', "'\\''"))
    }
}

/// The plan as a POSIX shell script: each change a commented command that reports a refusal
/// and goes on; the boot parameters as comments.
pub fn plan_shell(p: &TunePlan) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "#!/bin/sh\n# rtlab tune plan ({}): RT {}, housekeeping {}.\n# Read it before \
         running it as root. It changes the running system only: nothing here survives a\n# \
         reboot, and nothing records the old values but the `# now:` comments.",
        p.profile.as_str(),
        p.rt_cpus.with_noun(),
        p.housekeeping.with_noun()
    );
    if !p.boot.params.is_empty() {
        let _ = writeln!(
            out,
            "#\n# Boot parameters, not set by this script; add them to the kernel command line:\n#   {}",
            p.boot.line
        );
    }
    out.push_str("\nfailed=0\nw() { printf '%s\\n' \"$1\" > \"$2\" || { echo \"rtlab: could not write $1 to $2\" >&2; failed=1; }; }\n");
    for c in &p.changes {
        out.push('\n');
        for line in wrap(&c.reason, 90) {
            let _ = writeln!(out, "# {line}");
        }
        shell_command(&mut out, c);
    }
    out.push_str("\nexit $failed\n");
    out
}

/// The command that carries out change `c`, with the value it replaces as a comment.
fn shell_command(out: &mut String, c: &Change) {
    match c.action {
        Action::Write => {
            let _ = writeln!(
                out,
                "# now: {}\nw {} {}",
                c.current.as_deref().unwrap_or("(absent)"),
                quote(c.new.as_deref().unwrap_or_default()),
                quote(&c.path)
            );
        }
        Action::Mkdir => {
            let _ = writeln!(out, "mkdir -p {} || failed=1", quote(&c.path));
        }
        Action::MoveTasks => {
            let from = c.current.as_deref().unwrap_or_default();
            let _ = writeln!(
                out,
                "for pid in $(cat {}); do printf '%s\\n' \"$pid\" > {} 2>/dev/null; done",
                quote(from),
                quote(&c.path)
            );
        }
        Action::SetEnv => {
            let assign = c.new.as_deref().unwrap_or_default();
            let key = assign.split('=').next().unwrap_or_default();
            let _ = writeln!(
                out,
                "# now: {}\nif grep -q '^{key}=' {file}; then sed -i 's|^{key}=.*|{assign}|' {file}; else echo {q} >> {file}; fi || failed=1",
                c.current.as_deref().unwrap_or("(unset)"),
                file = quote(&c.path),
                q = quote(assign),
            );
        }
        Action::SetAffinity => {
            let _ = writeln!(
                out,
                "# now: {}\ntaskset -pc {} {} >/dev/null || failed=1",
                c.current.as_deref().unwrap_or("(unknown)"),
                quote(c.new.as_deref().unwrap_or_default()),
                c.path.trim_start_matches("/proc/")
            );
        }
        Action::Restart => {
            let _ = writeln!(out, "systemctl try-restart {} || failed=1", quote(&c.path));
        }
        Action::SetPolicy => {
            let _ = writeln!(
                out,
                "# now: {}\n{} || failed=1",
                c.current.as_deref().unwrap_or("(unknown)"),
                chrt(
                    c.new.as_deref().unwrap_or_default(),
                    c.path.trim_start_matches("/proc/")
                )
            );
        }
    }
}
