//! `cmdline.serial_console`: a console on a UART at low baud with a verbose console log
//! level. Legacy console drivers (8250, PL011, ...) write each printk line to the UART with
//! the port lock held and IRQs off; at 115200 baud an 80-character line takes about 7 ms
//! (the ELC Europe debugging talk saw up to 6 ms per line).
//!
//! The consoles in use are read from `/proc/consoles` (the kernel's list, which also holds
//! consoles named by the device tree's `stdout-path`), else from `console=` parameters; the
//! baud rate from `console=NAME,BAUD...`; the console log level from
//! `/proc/sys/kernel/printk` (first field), else from `loglevel=`, `quiet` and `debug`.

use model::audit::Severity;

use super::common::{CMDLINE, seen, unreadable};
use crate::context::Ctx;
use crate::outcome::Outcome;

const PRINTK: &str = "/proc/sys/kernel/printk";
const CONSOLES: &str = "/proc/consoles";
const IGNORE_LOGLEVEL: &str = "/sys/module/printk/parameters/ignore_loglevel";

/// Device name prefixes of UART consoles (8250/16550, PL011, i.MX, OMAP, Samsung, Qualcomm,
/// Xilinx, Tegra, Renesas, Amlogic, Marvell, SiFive, USB serial, ...), followed by a number.
const SERIAL: &[&str] = &[
    "ttyS", "ttyAMA", "ttymxc", "ttyO", "ttySAC", "ttyMSM", "ttyPS", "ttyUL", "ttyLP", "ttyTHS",
    "ttyHS", "ttySC", "ttyAML", "ttyMV", "ttySIF", "ttyUSB", "ttyFIQ", "serial",
];

/// The log level names, by number.
const LEVELS: [&str; 8] = [
    "KERN_EMERG",
    "KERN_ALERT",
    "KERN_CRIT",
    "KERN_ERR",
    "KERN_WARNING",
    "KERN_NOTICE",
    "KERN_INFO",
    "KERN_DEBUG",
];

/// The console log level `quiet` sets (errors and worse still print); above it the console
/// is verbose.
const QUIET: u32 = 4;

/// Whether `name` is a UART console (`ttyS0`, `ttyAMA0`, or the `uart`/`uart8250` forms).
fn is_serial(name: &str) -> bool {
    matches!(name, "uart" | "uart8250")
        || SERIAL.iter().any(|p| {
            name.strip_prefix(p)
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
}

/// A `console=` value: the device and the baud rate when given (`ttyS0,115200n8`;
/// `uart8250,io,0x3f8,115200n8` has it last).
fn parse_console(value: &str) -> (String, Option<u32>) {
    let mut fields = value.split(',');
    let name = fields.next().unwrap_or("").trim().to_string();
    let options: Vec<&str> = fields.collect();
    let speed = if matches!(name.as_str(), "uart" | "uart8250") {
        options.last()
    } else {
        options.first()
    };
    let baud = speed.and_then(|s| {
        let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok().filter(|b| *b > 0)
    });
    (name, baud)
}

/// `/proc/consoles` rows: (name, enabled). A row is `ttyS0  -W- (EC p a)  4:64`; `E` among
/// the flags in parentheses means enabled. Rows that do not look like that are skipped.
fn parse_consoles(text: &str) -> Vec<(String, bool)> {
    text.lines()
        .filter_map(|line| {
            let name = line.split_whitespace().next()?;
            let (_, rest) = line.split_once('(')?;
            let (flags, _) = rest.split_once(')')?;
            Some((name.to_string(), flags.contains('E')))
        })
        .collect()
}

/// The console log level and where it was read.
fn console_loglevel(ctx: &Ctx) -> (u32, String, String) {
    if let Some(text) = ctx.root().read_trimmed(PRINTK)
        && let Some(level) = text.split_whitespace().next().and_then(|f| f.parse().ok())
    {
        return (level, PRINTK.to_string(), text);
    }
    let cmdline = ctx.cmdline();
    let level = if let Some(n) = cmdline.value("loglevel").and_then(|v| v.parse().ok()) {
        n
    } else if cmdline.has("debug") {
        10
    } else if cmdline.has("quiet") {
        QUIET
    } else {
        // CONFIG_CONSOLE_LOGLEVEL_DEFAULT, 7 unless the kernel was configured otherwise.
        7
    };
    (
        level,
        CMDLINE.to_string(),
        seen(ctx, &["loglevel", "quiet", "debug"]),
    )
}

/// What a console log level lets through, in words.
fn prints(level: u32, ignore: bool) -> String {
    if ignore {
        return "every message (ignore_loglevel)".to_string();
    }
    match level.checked_sub(1) {
        None => "nothing".to_string(),
        Some(top) => {
            let name = LEVELS[usize::try_from(top.min(7)).unwrap_or(7)];
            format!("messages up to {name}")
        }
    }
}

pub(super) fn serial_console(ctx: &Ctx) -> Outcome {
    if let Some(o) = unreadable(ctx) {
        return o;
    }
    let cmdline = ctx.cmdline();
    let params: Vec<(String, Option<u32>)> = cmdline
        .all("console")
        .filter_map(|p| p.value)
        .map(parse_console)
        .collect();
    let mut evidence = vec![(
        CMDLINE.to_string(),
        seen(ctx, &["console", "loglevel", "quiet", "ignore_loglevel"]),
    )];
    let serial = serial_in_use(ctx, &params, &mut evidence);
    if serial.is_empty() {
        return with_evidence(Outcome::pass("no serial console"), &evidence);
    }
    let (level, level_source, level_value) = console_loglevel(ctx);
    evidence.push((level_source, level_value));
    let ignore = cmdline.has("ignore_loglevel")
        || ctx.root().read_trimmed(IGNORE_LOGLEVEL).as_deref() == Some("Y");
    let consoles: Vec<(String, Option<u32>)> = serial
        .iter()
        .map(|name| {
            let baud = params.iter().find(|(n, _)| n == name).and_then(|(_, b)| *b);
            (name.clone(), baud)
        })
        .collect();
    let slowest = consoles
        .iter()
        .map(|(_, b)| b.unwrap_or(115_200))
        .min()
        .unwrap_or(115_200);
    let per_line = per_line(slowest);
    let names: Vec<String> = consoles.iter().map(describe).collect();
    let names = names.join(", ");
    let verbose = ignore || level > QUIET;
    if !verbose {
        return with_evidence(
            Outcome::pass(format!(
                "serial console {names} with console log level {level}: only {} reach it",
                prints(level, false)
            )),
            &evidence,
        );
    }
    if slowest > 115_200 {
        return with_evidence(
            Outcome::pass(format!(
                "serial console {names}: {per_line}, fast enough for console log level {level}"
            )),
            &evidence,
        );
    }
    let summary = format!(
        "printk writes {} to serial console {names} with IRQs off: {per_line} (console log level {level})",
        prints(level, ignore)
    );
    verbose_slow_console(ctx, summary, ignore, &evidence)
}

/// The UART consoles in use: the enabled ones in `/proc/consoles` (its list goes to
/// `evidence`), else those named by `console=` parameters.
fn serial_in_use(
    ctx: &Ctx,
    params: &[(String, Option<u32>)],
    evidence: &mut Vec<(String, String)>,
) -> Vec<String> {
    match ctx.root().read_opt(CONSOLES) {
        Ok(Some(text)) => {
            let enabled: Vec<String> = parse_consoles(&text)
                .into_iter()
                .filter(|(_, on)| *on)
                .map(|(name, _)| name)
                .collect();
            evidence.push((
                CONSOLES.to_string(),
                format!("enabled: {}", enabled.join(", ")),
            ));
            enabled.into_iter().filter(|n| is_serial(n)).collect()
        }
        _ => params
            .iter()
            .map(|(n, _)| n.clone())
            .filter(|n| is_serial(n))
            .collect(),
    }
}

/// `o` with every (source, value) of `evidence` attached.
fn with_evidence(mut o: Outcome, evidence: &[(String, String)]) -> Outcome {
    for (source, value) in evidence {
        o = o.evidence(source.clone(), value.clone());
    }
    o
}

/// A console and its baud rate, in words.
fn describe((name, baud): &(String, Option<u32>)) -> String {
    match baud {
        Some(b) => format!("{name} at {b} baud"),
        None => format!(
            "{name} (baud not on the command line: set by firmware or device tree, often 115200)"
        ),
    }
}

/// How long a line takes at `baud`, in words: 10 bits per character on the wire, 80
/// characters a line.
fn per_line(baud: u32) -> String {
    let line_us = 800_000_000 / u64::from(baud.max(1));
    format!(
        "about {}.{} ms per 80-character line",
        line_us / 1000,
        line_us % 1000 / 100
    )
}

/// The problem: a verbose console log level on a slow serial console, with the fixes (an
/// Info only on PREEMPT_RT, where a console thread prints).
fn verbose_slow_console(
    ctx: &Ctx,
    mut summary: String,
    ignore: bool,
    evidence: &[(String, String)],
) -> Outcome {
    let rt = ctx.host().preempt_rt;
    if rt {
        summary.push_str("; PREEMPT_RT prints from a console thread, so outside emergencies the cost falls on that thread");
    }
    let mut outcome = with_evidence(Outcome::problem(summary), evidence)
        .fix_write(PRINTK, "3")
        .fix_boot("loglevel=3");
    if ignore {
        outcome = outcome.fix_advice("remove ignore_loglevel from the boot command line (and write N to /sys/module/printk/parameters/ignore_loglevel)");
    }
    outcome = outcome.fix_advice("or drop the serial console from the production command line, and fix what prints: each line on the console is a warning or error");
    if rt {
        outcome.with_severity(Severity::Info)
    } else {
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::cmdline::CHECKS;
    use crate::context::Options;
    use model::audit::{Finding, Status};
    use testkit::FakeRoot;

    fn run(fake: &FakeRoot) -> Finding {
        let ctx = Ctx::new(fake.root(), Options::default());
        let check = CHECKS
            .iter()
            .find(|c| c.id == "cmdline.serial_console")
            .unwrap();
        check.finding((check.run)(&ctx))
    }

    #[test]
    fn console_values_and_names() {
        assert_eq!(
            parse_console("ttyS0,115200n8"),
            ("ttyS0".into(), Some(115_200))
        );
        assert_eq!(parse_console("ttyAMA0"), ("ttyAMA0".into(), None));
        assert_eq!(
            parse_console("uart8250,io,0x3f8,9600n8"),
            ("uart8250".into(), Some(9600))
        );
        assert_eq!(parse_console(""), (String::new(), None));
        assert_eq!(parse_console("ttyS0,n8"), ("ttyS0".into(), None));
        assert_eq!(parse_console("ttyS0,0"), ("ttyS0".into(), None));
        for serial in [
            "ttyS0", "ttyAMA1", "ttymxc0", "ttySAC2", "ttyMSM0", "uart8250", "serial0",
        ] {
            assert!(is_serial(serial), "{serial}");
        }
        for other in [
            "tty0",
            "hvc0",
            "ttyS",
            "netcon0",
            "ttynull",
            "ttyprintk",
            "",
        ] {
            assert!(!is_serial(other), "{other}");
        }
    }

    #[test]
    fn proc_consoles_rows() {
        let text = "ttyS0                -W- (EC p a)    4:64\ntty0                 -WU (E  p  )    4:7\nnetcon0              -W- (   p  )\ngarbage\n\n(";
        assert_eq!(
            parse_consoles(text),
            [
                ("ttyS0".to_string(), true),
                ("tty0".to_string(), true),
                ("netcon0".to_string(), false)
            ]
        );
        assert!(parse_consoles("").is_empty());
        assert!(parse_consoles("x ( y").is_empty());
    }

    #[test]
    fn a_verbose_115200_console_warns_with_the_fix() {
        let fake = FakeRoot::new()
            .cpus(2)
            .cmdline("console=tty0 console=ttyS0,115200n8 root=/dev/sda1")
            .file(PRINTK, "7\t4\t1\t7\n");
        let f = run(&fake);
        assert_eq!(f.status, Status::Warn);
        assert_eq!(
            f.summary,
            "printk writes messages up to KERN_INFO to serial console ttyS0 at 115200 baud with IRQs off: about 6.9 ms per 80-character line (console log level 7)"
        );
        let fixes: Vec<String> = f.fix.iter().map(|x| x.render()).collect();
        assert_eq!(fixes[0], "echo 3 > /proc/sys/kernel/printk");
        assert_eq!(fixes[1], "boot parameter: loglevel=3");
        assert_eq!(f.evidence[1].source, PRINTK);
        assert_eq!(f.evidence[1].value, "7\t4\t1\t7");
    }

    #[test]
    fn quiet_fast_or_absent_consoles_pass() {
        let fake = FakeRoot::new()
            .cpus(2)
            .cmdline("console=ttyS0,115200n8 quiet");
        let f = run(&fake);
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert!(
            f.summary.contains("only messages up to KERN_ERR reach it"),
            "{}",
            f.summary
        );
        let fake = FakeRoot::new()
            .cpus(2)
            .cmdline("console=ttyAMA0,1500000")
            .file(PRINTK, "7 4 1 7\n");
        let f = run(&fake);
        assert_eq!(f.status, Status::Pass);
        assert!(
            f.summary.contains("about 0.5 ms per 80-character line"),
            "{}",
            f.summary
        );
        // The corpus's Ubuntu desktop has no console= at all.
        let fake = FakeRoot::new().cpus(2).cmdline(
            "BOOT_IMAGE=/vmlinuz-5.11.0-22-generic root=UUID=456a0345-450d-4f7b-b7c9-43e3241d99ad ro quiet splash vt.handoff=7",
        );
        assert_eq!(run(&fake).summary, "no serial console");
    }

    #[test]
    fn proc_consoles_wins_and_finds_device_tree_consoles() {
        // No console= at all (device tree stdout-path), but the kernel lists ttyAMA0.
        let fake = FakeRoot::new()
            .cpus(4)
            .cmdline("root=/dev/mmcblk0p2")
            .file(CONSOLES, "ttyAMA0              -W- (EC p a)    204:64\n");
        let f = run(&fake);
        assert_eq!(f.status, Status::Warn);
        assert!(
            f.summary.contains("ttyAMA0 (baud not on the command line"),
            "{}",
            f.summary
        );
        assert!(f.summary.contains("console log level 7"), "{}", f.summary);
        assert_eq!(f.evidence[1].value, "enabled: ttyAMA0");
        // console=ttyS0 that the kernel did not enable does not count.
        let fake = FakeRoot::new()
            .cpus(4)
            .cmdline("console=ttyS0,9600")
            .file(CONSOLES, "tty0                 -WU (EC p  )    4:7\n");
        assert_eq!(run(&fake).status, Status::Pass);
    }

    #[test]
    fn ignore_loglevel_and_preempt_rt() {
        let fake = FakeRoot::new()
            .cpus(2)
            .cmdline("console=ttyS0,115200 quiet ignore_loglevel")
            .realtime(true);
        let f = run(&fake);
        assert_eq!(f.status, Status::Info);
        assert_eq!(f.severity, Severity::Info);
        assert!(
            f.summary.contains("every message (ignore_loglevel)"),
            "{}",
            f.summary
        );
        assert!(
            f.summary
                .contains("PREEMPT_RT prints from a console thread")
        );
        assert!(f.fix.iter().any(|x| x.render().contains("ignore_loglevel")));
    }

    #[test]
    fn levels_in_words() {
        assert_eq!(prints(0, false), "nothing");
        assert_eq!(prints(1, false), "messages up to KERN_EMERG");
        assert_eq!(prints(8, false), "messages up to KERN_DEBUG");
        assert_eq!(prints(15, false), "messages up to KERN_DEBUG");
    }
}
