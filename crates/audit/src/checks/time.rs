//! The `time.*` checks: the clock source every timestamp and timer is read from, and whether
//! the kernel log shows the TSC marked unstable (the RT-Summit 2017 talk, tip #2: check your clock sources).

use model::audit::{Group, Severity};

use super::log::{self, Kind};
use crate::check::Check;
use crate::context::Ctx;
use crate::outcome::Outcome;

/// The checks of this group.
pub(crate) const CHECKS: &[Check] = &[
    Check {
        id: "time.clocksource",
        title: "Current clock source",
        group: Group::Time,
        severity: Severity::Warn,
        why: "every clock_gettime() and timer reads the clock source; hpet and acpi_pm cost about a microsecond a read, jiffies has tick resolution",
        run: clocksource,
    },
    Check {
        id: "time.tsc_stable",
        title: "TSC stability",
        group: Group::Time,
        severity: Severity::Fail,
        why: "a TSC marked unstable makes the kernel fall back to a slow clock source for the rest of the boot",
        run: tsc_stable,
    },
];

/// Where the current clock source is chosen.
pub(crate) const CURRENT: &str = "/sys/devices/system/clocksource/clocksource0/current_clocksource";
/// The clock sources the kernel offers.
pub(crate) const AVAILABLE: &str =
    "/sys/devices/system/clocksource/clocksource0/available_clocksource";

/// Clock sources that are cheap and precise, best first.
const GOOD: &[&str] = &[
    "tsc",
    "arch_sys_counter",
    "kvm-clock",
    "hyperv_clocksource_tsc_page",
    "tsc-early",
];

/// Clock sources that are slow to read or coarse, with why.
const SLOW: &[(&str, &str)] = &[
    ("hpet", "an MMIO read of about 0.5-1 us per clock read"),
    ("acpi_pm", "an I/O port read of 1 us or more per clock read"),
    ("pit", "the legacy i8254, slow to read and coarse"),
    (
        "jiffies",
        "tick resolution only (1-10 ms): no high-resolution timing",
    ),
    (
        "refined-jiffies",
        "tick resolution only (1-10 ms): no high-resolution timing",
    ),
];

/// Whether the machine is x86: by `/proc/sys/kernel/arch`, else (a tree without it) by a TSC
/// among the clock sources; `None` when nothing says.
pub(crate) fn is_x86(ctx: &Ctx) -> Option<bool> {
    let host = ctx.host();
    match host.arch.as_str() {
        "x86_64" | "x86" | "i386" | "i486" | "i586" | "i686" => Some(true),
        "" | "unknown" => host
            .available_clocksources
            .iter()
            .chain(&host.clocksource)
            .any(|c| c == "tsc" || c == "tsc-early")
            .then_some(true),
        _ => Some(false),
    }
}

fn clocksource(ctx: &Ctx) -> Outcome {
    let host = ctx.host();
    let Some(current) = host.clocksource.as_deref() else {
        return Outcome::unknown(format!(
            "{CURRENT} is absent or empty (sysfs not mounted, or not captured)"
        ));
    };
    let available = &host.available_clocksources;
    let with_evidence = |o: Outcome| {
        let o = o.evidence(CURRENT, current);
        if available.is_empty() {
            o
        } else {
            o.evidence(AVAILABLE, available.join(" "))
        }
    };
    if GOOD.contains(&current) {
        return with_evidence(Outcome::pass(format!(
            "clock source {current}: read from a CPU counter, cheap and precise"
        )));
    }
    let Some((_, slow)) = SLOW.iter().find(|(name, _)| *name == current) else {
        return with_evidence(Outcome::pass(format!(
            "clock source {current} (not one known to be slow)"
        )));
    };
    let best = GOOD
        .iter()
        .find(|g| available.iter().any(|a| a == *g))
        .copied()
        .or_else(|| {
            available
                .iter()
                .map(String::as_str)
                .find(|a| *a != current && !SLOW.iter().any(|(s, _)| s == a))
        });
    match best {
        Some(best) => with_evidence(
            Outcome::problem(format!(
                "clock source {current}: {slow}; {best} is available"
            ))
            .fix_write(CURRENT, best)
            .fix_boot(format!("clocksource={best}")),
        ),
        None => {
            let advice = if is_x86(ctx) == Some(true) {
                "no better clock source is offered: the TSC was probably marked unstable (see time.tsc_stable and `dmesg | grep -i -e tsc -e clocksource`); if /proc/cpuinfo shows constant_tsc and nonstop_tsc and the TSC is known good, boot with tsc=reliable"
            } else {
                "no better clock source is offered: enable the CPU's architected timer or counter in the kernel config and device tree"
            };
            with_evidence(
                Outcome::problem(format!(
                    "clock source {current}: {slow}; no better one is available"
                ))
                .fix_advice(advice),
            )
        }
    }
}

fn tsc_stable(ctx: &Ctx) -> Outcome {
    let x86 = is_x86(ctx);
    let arch = &ctx.host().arch;
    let log = match log::scanned(ctx) {
        Ok(log) => log,
        Err(reason) if x86 == Some(false) => {
            return Outcome::pass(format!(
                "not x86 ({arch}): there is no TSC (the kernel log was not read: {reason})"
            ));
        }
        Err(reason) => return log::unreadable(&reason),
    };
    let unstable = log.scan.of(|k| matches!(k, Kind::TscUnstable));
    let watchdog = log.scan.of(|k| matches!(k, Kind::ClocksourceWatchdog));
    if unstable.is_empty() {
        let n = log::messages(log.scan.messages);
        let mut outcome = match x86 {
            Some(false) => Outcome::pass(format!("not x86 ({arch}): there is no TSC")),
            _ => Outcome::pass(format!("the kernel log ({n}) shows no TSC marked unstable")),
        };
        outcome = outcome.evidence(
            log.path.clone(),
            format!("{n}, none marking the TSC unstable"),
        );
        if let Some(first) = watchdog.first() {
            outcome = outcome.evidence(log.path.clone(), log::cite_first(first, watchdog.len()));
        }
        return outcome;
    }
    let mut outcome = Outcome::problem(format!(
        "the TSC was marked unstable ({}); the kernel switched to a slower clock source",
        log::messages(unstable.len())
    ));
    for e in unstable.iter().take(3) {
        outcome = outcome.evidence(log.path.clone(), log::cite(e));
    }
    if let Some(first) = watchdog.first() {
        outcome = outcome.evidence(log.path.clone(), log::cite_first(first, watchdog.len()));
    }
    outcome.fix_advice("the clocksource watchdog (or the boot-time TSC sync check) saw the TSC disagree with hpet/acpi_pm; under load, SMIs or a VM host this is often a false alarm (an acpi_pm counter rollover is one known cause), a BIOS writing TSC_ADJUST is another cause; check constant_tsc and nonstop_tsc in /proc/cpuinfo and the BIOS, then boot with tsc=reliable (or tsc=nowatchdog) once the TSC is known good")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Options;
    use model::audit::Status;
    use testkit::FakeRoot;

    fn run(fake: &FakeRoot, check: fn(&Ctx) -> Outcome, id: &str) -> model::audit::Finding {
        let ctx = Ctx::new(fake.root(), Options::default());
        let c = CHECKS.iter().find(|c| c.id == id).unwrap();
        c.finding(check(&ctx))
    }

    #[test]
    fn cheap_clock_sources_pass() {
        for (current, available) in [
            ("tsc", &["tsc", "hpet", "acpi_pm"][..]),
            ("arch_sys_counter", &["arch_sys_counter"][..]),
            ("kvm-clock", &["kvm-clock", "tsc"][..]),
        ] {
            let fake = FakeRoot::new().cpus(1).clocksource(current, available);
            let f = run(&fake, clocksource, "time.clocksource");
            assert_eq!(f.status, Status::Pass, "{current}");
            assert_eq!(f.evidence[0].source, CURRENT);
            assert_eq!(f.evidence[0].value, current);
        }
        let fake = FakeRoot::new().cpus(1).clocksource("mct-frc", &["mct-frc"]);
        let f = run(&fake, clocksource, "time.clocksource");
        assert_eq!(f.status, Status::Pass);
        assert!(f.summary.contains("not one known to be slow"));
    }

    #[test]
    fn hpet_with_tsc_available_gets_the_write_and_the_boot_parameter() {
        let fake = FakeRoot::new()
            .cpus(2)
            .clocksource("hpet", &["tsc", "hpet", "acpi_pm"]);
        let f = run(&fake, clocksource, "time.clocksource");
        assert_eq!(f.status, Status::Warn);
        assert_eq!(
            f.summary,
            "clock source hpet: an MMIO read of about 0.5-1 us per clock read; tsc is available"
        );
        let fixes: Vec<String> = f.fix.iter().map(|x| x.render()).collect();
        assert_eq!(
            fixes,
            [
                format!("echo tsc > {CURRENT}"),
                "boot parameter: clocksource=tsc".to_string()
            ]
        );
        assert_eq!(f.evidence[1].value, "tsc hpet acpi_pm");
    }

    #[test]
    fn a_slow_clock_with_nothing_better_gets_advice() {
        let fake = FakeRoot::new()
            .cpus(2)
            .file("/proc/sys/kernel/arch", "x86_64\n")
            .clocksource("hpet", &["hpet", "acpi_pm"]);
        let f = run(&fake, clocksource, "time.clocksource");
        assert_eq!(f.status, Status::Warn);
        assert!(f.summary.ends_with("no better one is available"));
        assert!(f.fix[0].render().contains("tsc=reliable"));
        let fake = FakeRoot::new()
            .cpus(1)
            .clocksource("jiffies", &["jiffies", "timer"]);
        let f = run(&fake, clocksource, "time.clocksource");
        assert!(f.summary.contains("tick resolution"), "{}", f.summary);
        assert_eq!(f.fix[0].render(), format!("echo timer > {CURRENT}"));
    }

    #[test]
    fn a_missing_clocksource_is_unknown() {
        let fake = FakeRoot::new().cpus(1);
        let f = run(&fake, clocksource, "time.clocksource");
        assert_eq!(f.status, Status::Unknown);
        assert!(f.summary.contains(CURRENT));
    }

    /// The clocksource watchdog marking the TSC unstable, as `/dev/kmsg` records written from
    /// the kernel's formats (kernel/time/clocksource.c, arch/x86/kernel/tsc.c).
    const UNSTABLE: &str = "\
4,900,818380354,-;clocksource: timekeeping watchdog on CPU3: Marking clocksource 'tsc' as unstable because the skew is too large:
4,901,818380360,-;clocksource:                       'hpet' wd_nsec: 503 wd_now: 2a3b wd_last: 2a00 mask: ffffffff
6,902,819936243,-;tsc: Marking TSC unstable due to clocksource watchdog
4,903,820068173,-;TSC found unstable after boot, most likely due to broken BIOS. Use 'tsc=unstable'.
6,904,821067990,-;clocksource: Switched to clocksource hpet
";

    #[test]
    fn tsc_marked_unstable_fails_with_the_watchdog_lines() {
        let fake = FakeRoot::new()
            .cpus(2)
            .file("/proc/sys/kernel/arch", "x86_64\n")
            .file("/dev/kmsg", UNSTABLE);
        let f = run(&fake, tsc_stable, "time.tsc_stable");
        assert_eq!(f.status, Status::Fail);
        assert!(f.summary.contains("3 messages"), "{}", f.summary);
        let values: Vec<&str> = f.evidence.iter().map(|e| e.value.as_str()).collect();
        assert_eq!(values.len(), 4);
        assert!(values[1].starts_with("[819.936243] tsc: Marking TSC unstable"));
        assert!(values[3].starts_with("[818.380354] clocksource: timekeeping watchdog on CPU3"));
        assert!(f.fix[0].render().contains("tsc=reliable"));
    }

    #[test]
    fn a_quiet_log_passes_and_other_arches_have_no_tsc() {
        let quiet = "6,1,100,-;clocksource: Switched to clocksource tsc\n";
        let fake = FakeRoot::new()
            .cpus(2)
            .file("/proc/sys/kernel/arch", "x86_64\n")
            .file("/dev/kmsg", quiet);
        let f = run(&fake, tsc_stable, "time.tsc_stable");
        assert_eq!(f.status, Status::Pass);
        assert!(f.summary.contains("no TSC marked unstable"));
        // x86 without a readable log: unknown.
        let fake = FakeRoot::new()
            .cpus(2)
            .file("/proc/sys/kernel/arch", "x86_64\n");
        assert_eq!(
            run(&fake, tsc_stable, "time.tsc_stable").status,
            Status::Unknown
        );
        // arm64, log or not: pass.
        let fake = FakeRoot::new()
            .cpus(2)
            .file("/proc/sys/kernel/arch", "aarch64\n");
        let f = run(&fake, tsc_stable, "time.tsc_stable");
        assert_eq!(f.status, Status::Pass);
        assert!(f.summary.starts_with("not x86 (aarch64)"), "{}", f.summary);
        // A log that shows the TSC unstable wins over what the arch says.
        let fake = fake.file("/dev/kmsg", UNSTABLE);
        assert_eq!(
            run(&fake, tsc_stable, "time.tsc_stable").status,
            Status::Fail
        );
    }

    #[test]
    fn x86_is_known_by_arch_or_by_a_tsc() {
        let ctx = |fake: &FakeRoot| Ctx::new(fake.root(), Options::default());
        let fake = FakeRoot::new().file("/proc/sys/kernel/arch", "i686\n");
        assert_eq!(is_x86(&ctx(&fake)), Some(true));
        let fake = FakeRoot::new().file("/proc/sys/kernel/arch", "riscv64\n");
        assert_eq!(is_x86(&ctx(&fake)), Some(false));
        let fake = FakeRoot::new().clocksource("kvm-clock", &["kvm-clock", "tsc"]);
        assert_eq!(is_x86(&ctx(&fake)), Some(true));
        let fake = FakeRoot::new().clocksource("arch_sys_counter", &["arch_sys_counter"]);
        assert_eq!(is_x86(&ctx(&fake)), None);
    }
}
