//! `rtlab tune irqd`: keeps the tuning's IRQ placement and the IRQ rules true for IRQs that
//! appear after `tune apply` (a module loaded, a NIC brought up), by watching /proc/interrupts
//! and planning the IRQ part again when it changes; `--once` for one check, `--unit` for the
//! systemd service that runs it. The work is `tune::Irqd`'s; this file owns the loop, the
//! signals and the words.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use model::Nanos;
use sys::Root;
use sys::signals::TerminationSignals;

use crate::console;
use crate::exit::{Exit, UsageError};
use crate::tune_cmd::{JournalArgs, SplitArgs, make_request};

pub const IRQD_LONG: &str = "\
Watch /proc/interrupts and keep IRQs that appear after `rtlab tune apply` (a module loaded, a \
device plugged, a network interface brought up) off the RT CPUs: each new IRQ that can move \
gets the housekeeping CPUs, or the CPUs of the first --irq-rule that matches it, and its \
handler threads the rule's policy. Every change is added to the tuning's journal first, so \
`rtlab tune revert` takes it back with the rest; when the tuning is reverted, irqd stops.

Every --interval it compares the IRQs listed with the last look (the counts are ignored); \
every 30 s it checks all of them again, catching an IRQ that irqbalance or a person moved \
back. It runs on the housekeeping CPUs and prints one line per change. Give it the same \
--rt-cpus, --housekeeping and rules as `tune apply`.

--unit prints a systemd unit that runs irqd with these options as a service (save it as \
/etc/systemd/system/rtlab-irqd.service, then `systemctl daemon-reload` and `systemctl enable \
--now rtlab-irqd`).";

pub const IRQD_AFTER: &str = "\
EXAMPLES:
    sudo rtlab tune apply --rt-cpus 2-7 --irq-rule 'irq/*-eth0=fifo:80@0-1'
    sudo rtlab tune irqd --rt-cpus 2-7 --irq-rule 'irq/*-eth0=fifo:80@0-1'
    sudo rtlab tune irqd --rt-cpus 2-7 --once         check once, then exit
    rtlab tune irqd --rt-cpus 2-7 --irq-rules-file /etc/rtlab/irq-rules --unit \\
        | sudo tee /etc/systemd/system/rtlab-irqd.service

EXIT STATUS:
    0    stopped by a signal, or the tuning was reverted; with --once: nothing refused
    1    with --once: the kernel refused a change
    2    bad input or setup error";

/// Checks are this many intervals apart at most, whatever changed.
const RECHECK: Duration = Duration::from_secs(30);

/// Options of `rtlab tune irqd`.
#[derive(Debug, Args)]
pub struct IrqdArgs {
    /// The CPU split and the rules, as given to `tune apply`.
    #[command(flatten)]
    pub split: SplitArgs,
    /// The tuning's journal, added to.
    #[command(flatten)]
    pub journal: JournalArgs,
    /// How often to look at /proc/interrupts.
    #[arg(long, value_name = "TIME", value_parser = crate::args::parse_time, default_value = "2s")]
    pub interval: Nanos,
    /// Check once and exit.
    #[arg(long, conflicts_with = "unit")]
    pub once: bool,
    /// Print a systemd unit running irqd with these options, and exit.
    #[arg(long)]
    pub unit: bool,
}

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
