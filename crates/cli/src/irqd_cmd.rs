//! `rtlab tune irqd`: keeps the tuning's IRQ placement and the IRQ rules true for IRQs that
//! appear after `tune apply` (a module loaded, a NIC brought up), by watching /proc/interrupts
//! and planning the IRQ part again when it changes; `--once` for one check, `--unit` for the
//! systemd service that runs it. The work is `tune::Irqd`'s; this file owns the loop, the
//! signals and the words.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use sys::Root;
use sys::signals::TerminationSignals;

use crate::console;
use crate::exit::{Exit, UsageError};
use crate::flags::IrqdArgs;
use crate::tuning::make_request;

/// Checks are this many intervals apart at most, whatever changed.
const RECHECK: Duration = Duration::from_secs(30);

/// Runs `rtlab tune irqd`.
pub fn run(args: &IrqdArgs, root: &Root) -> Result<Exit> {
    let req = make_request(&args.split, root)?;
    // The split is checked now, so one rtlab refuses stops here with its reason.
    let hk = tune::housekeeping(root, &req).map_err(|e| UsageError(e.to_string()))?;
    if args.unit {
        console::print_stdout(&unit(args, &hk)?)?;
        return Ok(Exit::Ok);
    }
    if args.interval.get() == 0 {
        return Err(UsageError("--interval 0: give a time such as 2s".to_string()).into());
    }
    if root.is_host() {
        // Best effort: a housekeeping task belongs on the housekeeping CPUs.
        let _ = sys::sched::pin_current_thread(&hk);
    }
    let mut irqd = tune::Irqd::new(req, &args.journal.journal).map_err(UsageError)?;
    if args.once {
        return Ok(match irqd.pass(root, true).map_err(UsageError)? {
            tune::Pass::Checked(out) => {
                report(&out)?;
                if out.refused.is_empty() {
                    Exit::Ok
                } else {
                    Exit::VerdictFailed
                }
            }
            _ => {
                console::print_stdout("irqd: the tuning was reverted; nothing to keep\n")?;
                Exit::Ok
            }
        });
    }
    let signals = TerminationSignals::block()?;
    let interval = Duration::from_nanos(args.interval.get());
    let mut last_check = std::time::Instant::now();
    let mut first = true;
    console::print_stdout(&format!(
        "irqd: watching /proc/interrupts every {}; journal {}\n",
        args.interval,
        args.journal.journal.display()
    ))?;
    loop {
        let recheck = first || last_check.elapsed() >= RECHECK;
        match irqd.pass(root, recheck).map_err(UsageError)? {
            tune::Pass::Unchanged => {}
            tune::Pass::Checked(out) => {
                last_check = std::time::Instant::now();
                report(&out)?;
            }
            tune::Pass::Reverted => {
                console::print_stdout(
                    "irqd: the tuning was reverted (journal closed); stopping\n",
                )?;
                return Ok(Exit::Ok);
            }
        }
        first = false;
        if let Some(sig) = signals.wait(interval) {
            console::print_stdout(&format!("irqd: {}; stopping\n", sig.name()))?;
            return Ok(Exit::Ok);
        }
    }
}

/// One line per change made or refused.
fn report(out: &tune::Outcome) -> Result<()> {
    let mut text = String::new();
    for d in &out.done {
        text.push_str(&format!("irqd: {d}\n"));
    }
    for r in &out.refused {
        text.push_str(&format!("irqd: refused: {r}\n"));
    }
    for s in out.skipped.iter().filter(|s| s.contains("refuses to move")) {
        text.push_str(&format!("irqd: left: {s}\n"));
    }
    Ok(console::print_stdout(&text)?)
}

/// The systemd unit running irqd with `args`' options.
fn unit(args: &IrqdArgs, hk: &model::CpuSet) -> Result<String> {
    let exe = std::env::current_exe()?;
    let mut argv = vec![
        exe.display().to_string(),
        "tune".to_string(),
        "irqd".to_string(),
        "--rt-cpus".to_string(),
        args.split.rt_cpus.to_string(),
    ];
    if let Some(h) = &args.split.housekeeping {
        argv.extend(["--housekeeping".to_string(), h.to_string()]);
    }
    for r in &args.split.irq_rules {
        argv.extend(["--irq-rule".to_string(), r.to_string()]);
    }
    if let Some(f) = &args.split.irq_rules_file {
        argv.extend(["--irq-rules-file".to_string(), absolute(f)]);
    }
    argv.extend([
        "--journal".to_string(),
        absolute(&args.journal.journal),
        "--interval".to_string(),
        args.interval.to_string(),
    ]);
    let exec: Vec<String> = argv.iter().map(|a| systemd_quote(a)).collect();
    Ok(format!(
        "# rtlab-irqd.service: keeps IRQs that appear after `rtlab tune apply` off the RT CPUs \
         {rt}.\n# Written by `rtlab tune irqd --unit`; save as /etc/systemd/system/rtlab-irqd.service.\n\
         [Unit]\n\
         Description=rtlab IRQ placement for RT CPUs {rt}\n\
         Documentation=man:rtlab-tune(1)\n\
         After=local-fs.target\n\
         \n\
         [Service]\n\
         Type=simple\n\
         ExecStart={exec}\n\
         CPUAffinity={hk}\n\
         Restart=on-failure\n\
         RestartSec=5\n\
         \n\
         [Install]\n\
         WantedBy=multi-user.target\n",
        rt = args.split.rt_cpus,
        exec = exec.join(" "),
        hk = hk
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(" "),
    ))
}

fn absolute(path: &Path) -> String {
    std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

/// An ExecStart word: quoted when it holds anything but plain characters; `%` and `$` doubled
/// (systemd expands specifiers and variables in ExecStart).
fn systemd_quote(word: &str) -> String {
    let escaped = word.replace('%', "%%").replace('$', "$$");
    if !escaped.is_empty()
        && escaped
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.,:/+=@%$".contains(&b))
    {
        return escaped;
    }
    format!("\"{}\"", escaped.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests {
    use super::systemd_quote;

    #[test]
    fn quotes_execstart_words() {
        assert_eq!(systemd_quote("2-7"), "2-7");
        assert_eq!(
            systemd_quote("irq/*-eth0=fifo:80@0-1"),
            "\"irq/*-eth0=fifo:80@0-1\""
        );
        assert_eq!(systemd_quote("a b"), "\"a b\"");
        assert_eq!(systemd_quote("50%"), "50%%");
        assert_eq!(systemd_quote("x\"y"), "\"x\\\"y\"");
    }
}
