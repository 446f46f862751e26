//! The options that decide whether a kernel can be real-time at all: the preemption model,
//! the timer frequency and tick, high-resolution timers and IRQ threading; and whether the
//! config judged is the running kernel's own.

use model::host::HostInfo;
use sys::parse::kconfig::{Header, header};
use sys::parse::preempt::{classify_version, release_version};

use super::judged::{Config, config, unset};
use crate::context::Ctx;
use crate::kconfig_diff::choices::{PREEMPTION, TICK, TIMER_FREQUENCY};
use crate::outcome::Outcome;

/// The release from which PREEMPT_RT is in mainline Linux.
const RT_MAINLINE: (u32, u32) = (6, 12);

/// Whether the config builds a PREEMPT_RT kernel (`PREEMPT_RT_FULL` before 5.3).
fn rt(config: &Config) -> bool {
    config.on("CONFIG_PREEMPT_RT") || config.on("CONFIG_PREEMPT_RT_FULL")
}

/// `kconfig.preempt_rt`.
pub(super) fn preempt_rt(ctx: &Ctx) -> Outcome {
    let config = match config(ctx) {
        Ok(c) => c,
        Err(unknown) => return unknown,
    };
    if rt(&config) {
        let name = if config.on("CONFIG_PREEMPT_RT") {
            "CONFIG_PREEMPT_RT"
        } else {
            "CONFIG_PREEMPT_RT_FULL"
        };
        return config.cite(
            Outcome::pass(format!(
                "{}: a fully preemptible (real-time) kernel",
                config.line(name)
            )),
            name,
        );
    }
    let selected = PREEMPTION.selected(|n| config.value(n));
    let dynamic = config.on("CONFIG_PREEMPT_DYNAMIC");
    let model = match selected {
        Some(m) => format!(
            "the preemption model is {} ({}){}",
            m.label,
            m.what,
            if dynamic {
                ", the boot default of a PREEMPT_DYNAMIC kernel"
            } else {
                ""
            }
        ),
        None => "the config names no preemption model".to_string(),
    };
    let mut outcome = config.cite(
        Outcome::problem(format!("{}: {model}", unset(&config, "CONFIG_PREEMPT_RT"))),
        "CONFIG_PREEMPT_RT",
    );
    if let Some(m) = selected {
        outcome = config.cite(outcome, m.name);
    }
    if dynamic {
        outcome = config.cite(outcome, "CONFIG_PREEMPT_DYNAMIC");
    }
    let version = header(config.text).map(|h| h.version);
    let advice = match version.and_then(|v| release_version(v).map(|mm| (v, mm))) {
        Some((v, mm)) if mm >= RT_MAINLINE => format!(
            "Linux {v} has PREEMPT_RT in mainline: set CONFIG_EXPERT=y if the option is hidden, then CONFIG_PREEMPT_RT=y, rebuild and boot that kernel"
        ),
        Some((v, (major, minor))) => format!(
            "Linux {v} predates mainline PREEMPT_RT (6.12): apply the matching patch set from https://cdn.kernel.org/pub/linux/kernel/projects/rt/{major}.{minor}/ and set CONFIG_PREEMPT_RT=y, or move to Linux 6.12 or later"
        ),
        None => "PREEMPT_RT is in mainline from Linux 6.12; older kernels need the patch set from https://cdn.kernel.org/pub/linux/kernel/projects/rt/".to_string(),
    };
    outcome.fix_config("CONFIG_PREEMPT_RT=y").fix_advice(advice)
}

/// The tick period of `hz` in words (`4 ms`, `3.3 ms`).
fn period(hz: u32) -> String {
    if hz > 0 && 1000 % hz == 0 {
        format!("{} ms", 1000 / hz)
    } else {
        format!("{:.1} ms", 1000.0 / f64::from(hz.max(1)))
    }
}

/// `kconfig.hz`.
pub(super) fn hz(ctx: &Ctx) -> Outcome {
    let config = match config(ctx) {
        Ok(c) => c,
        Err(unknown) => return unknown,
    };
    let Some(value) = config.value("CONFIG_HZ") else {
        return Outcome::unknown(format!(
            "CONFIG_HZ is absent from {}: the timer frequency cannot be read",
            config.path
        ));
    };
    let Some(hz) = value.parse::<u32>().ok().filter(|&hz| hz > 0) else {
        return config.cite(
            Outcome::unknown(format!(
                "CONFIG_HZ={value} in {} is not a frequency",
                config.path
            )),
            "CONFIG_HZ",
        );
    };
    let mut outcome = if hz >= 1000 {
        Outcome::pass(format!("CONFIG_HZ={hz}: a {} tick", period(hz)))
    } else {
        Outcome::problem(format!(
            "CONFIG_HZ={hz}: a {tick} tick; jiffy timeouts and tick-based accounting have {tick} granularity (1 ms at 1000 Hz)",
            tick = period(hz)
        ))
        .fix_config("CONFIG_HZ_1000=y")
    };
    outcome = config.cite(outcome, "CONFIG_HZ");
    if let Some(m) = TIMER_FREQUENCY.selected(|n| config.value(n)) {
        outcome = config.cite(outcome, m.name);
    }
    outcome
}

/// `kconfig.no_hz_full`.
pub(super) fn no_hz_full(ctx: &Ctx) -> Outcome {
    let config = match config(ctx) {
        Ok(c) => c,
        Err(unknown) => return unknown,
    };
    if config.on("CONFIG_NO_HZ_FULL") {
        return config.cite(
            Outcome::pass(
                "CONFIG_NO_HZ_FULL=y: nohz_full= can stop the tick on busy RT CPUs (without it the kernel behaves as NO_HZ_IDLE)",
            ),
            "CONFIG_NO_HZ_FULL",
        );
    }
    let tick = TICK.selected(|n| config.value(n));
    let mode = tick.map_or("unknown".to_string(), |m| {
        format!("{} ({})", m.label, m.what)
    });
    let mut outcome = config.cite(
        Outcome::problem(format!(
            "{}: the tick mode is {mode}; nohz_full= is ignored and the tick interrupts busy RT CPUs",
            unset(&config, "CONFIG_NO_HZ_FULL")
        )),
        "CONFIG_NO_HZ_FULL",
    );
    if let Some(m) = tick {
        outcome = config.cite(outcome, m.name);
    }
    outcome.fix_config("CONFIG_NO_HZ_FULL=y")
}

/// `kconfig.high_res_timers`.
pub(super) fn high_res_timers(ctx: &Ctx) -> Outcome {
    let config = match config(ctx) {
        Ok(c) => c,
        Err(unknown) => return unknown,
    };
    let tick = config
        .value("CONFIG_HZ")
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|&hz| hz > 0)
        .map_or("tick".to_string(), |hz| format!("{} tick", period(hz)));
    config.want(
        "CONFIG_HIGH_RES_TIMERS",
        "clock_nanosleep and timers expire with microsecond precision",
        &format!("clock_nanosleep and timers expire only on the {tick}"),
    )
}

/// `kconfig.irq_forced_threading`.
pub(super) fn irq_forced_threading(ctx: &Ctx) -> Outcome {
    let config = match config(ctx) {
        Ok(c) => c,
        Err(unknown) => return unknown,
    };
    const NAME: &str = "CONFIG_IRQ_FORCED_THREADING";
    if config.on(NAME) {
        let how = if rt(&config) {
            "IRQ handlers always run in threads on this PREEMPT_RT kernel"
        } else {
            "IRQ handlers run in threads with the threadirqs boot parameter"
        };
        return config.cite(Outcome::pass(format!("{}: {how}", config.line(NAME))), NAME);
    }
    config.cite(
        Outcome::problem(format!(
            "{}: the architecture offers no forced IRQ threading, so handlers run in hard IRQ context ahead of every RT task",
            unset(&config, NAME)
        )),
        NAME,
    )
    .fix_advice(
        "IRQ_FORCED_THREADING is selected by the architecture, not set by hand: use an architecture port that selects it (x86, arm, arm64, riscv, powerpc, s390 do), or drivers that request threaded IRQs",
    )
}

/// The kernel's architecture directory name for a `uname -m` or config header name.
fn kernel_arch(arch: &str) -> Option<&str> {
    Some(match arch {
        "" | "unknown" => return None,
        "x86_64" | "x86" | "i386" | "i486" | "i586" | "i686" | "amd64" => "x86",
        "aarch64" | "arm64" | "aarch64_be" => "arm64",
        a if a.starts_with("arm") => "arm",
        a if a.starts_with("riscv") => "riscv",
        a if a.starts_with("ppc") || a.starts_with("powerpc") => "powerpc",
        a if a.starts_with("s390") => "s390",
        a if a.starts_with("mips") => "mips",
        a if a.starts_with("loongarch") => "loongarch",
        a => a,
    })
}

/// What `kconfig.matches_running` compared, what differed, and the files it read.
struct Comparison<'a> {
    /// The properties compared (`version`, `architecture`, `preemption model`).
    compared: Vec<&'static str>,
    /// How the config and the running kernel differ, in words.
    differ: Vec<String>,
    /// The files read and what they held.
    evidence: Vec<(&'a str, String)>,
}

/// `kconfig.matches_running`.
pub(super) fn matches_running(ctx: &Ctx) -> Outcome {
    let config = match config(ctx) {
        Ok(c) => c,
        Err(unknown) => return unknown,
    };
    let head = header(config.text);
    let named = head.map_or("no version header".to_string(), |h| {
        format!("Linux/{} {}", h.arch, h.version)
    });
    if config.path == "/proc/config.gz" && ctx.options().kconfig.is_none() {
        return Outcome::pass(format!(
            "read from /proc/config.gz ({named}): the running kernel's own config"
        ))
        .evidence(config.path, named);
    }
    let host = ctx.host();
    let mut cmp = Comparison {
        compared: Vec::new(),
        differ: Vec::new(),
        evidence: vec![(config.path, named.clone())],
    };
    if let Some(h) = head {
        compare_header(&mut cmp, &h, host);
    }
    compare_preemption(&mut cmp, ctx, &config);
    let Comparison {
        compared,
        differ,
        evidence,
    } = cmp;
    if compared.is_empty() {
        return Outcome::unknown(format!(
            "cannot compare {} ({named}) with the running kernel: neither its version, architecture nor preemption model is known",
            config.path
        ));
    }
    let cite = |outcome: Outcome| {
        evidence.iter().fold(outcome, |o, (source, value)| {
            o.evidence(*source, value.clone())
        })
    };
    if differ.is_empty() {
        return cite(Outcome::pass(format!(
            "{} ({named}) matches the running kernel {} in {}",
            config.path,
            host.kernel_release,
            compared.join(", ")
        )));
    }
    let advice = if ctx.options().kconfig.is_some() {
        "the kconfig findings describe the file given with --kconfig, not this kernel; leave --kconfig out to judge the running kernel".to_string()
    } else {
        format!(
            "{} does not describe the running kernel: reinstall the kernel package, or build with CONFIG_IKCONFIG_PROC=y so /proc/config.gz always does",
            config.path
        )
    };
    cite(Outcome::problem(format!(
        "{}: {}",
        config.path,
        differ.join("; ")
    )))
    .fix_advice(advice)
}

/// Compares the config's version header with the running kernel: the release version and
/// the architecture, each where both sides are known.
fn compare_header(cmp: &mut Comparison, h: &Header, host: &HostInfo) {
    if let (Some(cv), Some(rv)) = (
        release_version(h.version),
        release_version(&host.kernel_release),
    ) {
        cmp.compared.push("version");
        cmp.evidence
            .push(("/proc/sys/kernel/osrelease", host.kernel_release.clone()));
        if cv != rv {
            cmp.differ.push(format!(
                "the config is for Linux {}, the running kernel is {}",
                h.version, host.kernel_release
            ));
        }
    }
    if let (Some(ca), Some(ra)) = (kernel_arch(h.arch), kernel_arch(&host.arch)) {
        cmp.compared.push("architecture");
        cmp.evidence
            .push(("/proc/sys/kernel/arch", host.arch.clone()));
        if ca != ra {
            cmp.differ.push(format!(
                "the config is for {}, the machine is {}",
                h.arch, host.arch
            ));
        }
    }
}

/// Compares the config's preemption model with the running kernel's, known from
/// `/sys/kernel/realtime` or else the kernel version string.
fn compare_preemption(cmp: &mut Comparison, ctx: &Ctx, config: &Config) {
    let host = ctx.host();
    let realtime = ctx.root().read_trimmed("/sys/kernel/realtime");
    let running_rt = if realtime.as_deref() == Some("1") {
        cmp.evidence.push(("/sys/kernel/realtime", "1".to_string()));
        Some(true)
    } else if !host.kernel_version.is_empty() {
        cmp.evidence
            .push(("/proc/sys/kernel/version", host.kernel_version.clone()));
        Some(classify_version(&host.kernel_version).rt)
    } else {
        None
    };
    if let Some(running_rt) = running_rt {
        cmp.compared.push("preemption model");
        let config_rt = rt(config);
        if running_rt != config_rt {
            let says = |rt: bool| if rt { "PREEMPT_RT" } else { "not PREEMPT_RT" };
            cmp.differ.push(format!(
                "the config is {}, the running kernel is {}",
                says(config_rt),
                says(running_rt)
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::context::Options;
    use model::audit::{Profile, Status};
    use testkit::FakeRoot;

    #[test]
    fn a_config_given_for_another_kernel_is_flagged() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/kconfig/config-6.1.0-50-rt-arm64");
        let fake = FakeRoot::new()
            .cpus(2)
            .kernel("6.18.44-fc-v445", "#1 SMP PREEMPT_DYNAMIC @0")
            .file("/proc/sys/kernel/arch", "x86_64\n");
        let ctx = Ctx::new(
            fake.root(),
            Options {
                kconfig: Some(crate::context::Source::kconfig_file(&path).unwrap()),
                ..Options::default()
            },
        );
        let o = matches_running(&ctx);
        assert!(!o.passed());
        assert_eq!(
            o.summary(),
            format!(
                "{}: the config is for Linux 6.1.176, the running kernel is 6.18.44-fc-v445; the config is for arm64, the machine is x86_64; the config is PREEMPT_RT, the running kernel is not PREEMPT_RT",
                path.display()
            )
        );
        // The running kernel's own /proc/config.gz needs no comparison: this repository's
        // captured firecracker VM.
        let vm = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/roots/vm-x86_64-2cpu");
        let ctx = Ctx::new(sys::Root::at(vm), Options::default());
        let o = matches_running(&ctx);
        assert!(o.passed(), "{}", o.summary());
        assert_eq!(
            o.summary(),
            "read from /proc/config.gz (Linux/x86 6.18.44): the running kernel's own config"
        );
    }

    #[test]
    fn nothing_to_compare_is_unknown() {
        let fake = machine("", "", "CONFIG_A=y\n");
        // No release: the config is not even found under /boot.
        let ctx = Ctx::new(fake.root(), Options::default());
        assert!(config(&ctx).is_err());
        let o = matches_running(&ctx);
        assert!(
            !o.passed() && o.summary().contains("no kernel config"),
            "{}",
            o.summary()
        );
    }

    #[test]
    fn hz_and_timer_edge_cases() {
        let f = finding(
            "CONFIG_HZ_1000=y\nCONFIG_HZ=1000\n",
            Profile::Production,
            "kconfig.hz",
        );
        assert_eq!(f.status, Status::Pass);
        assert_eq!(f.evidence[1].value, "CONFIG_HZ_1000=y");
        let f = finding(
            "CONFIG_HZ_300=y\nCONFIG_HZ=300\n",
            Profile::Production,
            "kconfig.hz",
        );
        assert!(f.summary.contains("a 3.3 ms tick"), "{}", f.summary);
        assert_eq!(f.fix[0].render(), "kernel config: CONFIG_HZ_1000=y");
        assert_eq!(
            finding("", Profile::Production, "kconfig.hz").status,
            Status::Unknown
        );
        assert_eq!(
            finding("CONFIG_HZ=abc\n", Profile::Production, "kconfig.hz").status,
            Status::Unknown
        );
        let f = finding(
            "# CONFIG_HIGH_RES_TIMERS is not set\nCONFIG_HZ=100\n",
            Profile::Production,
            "kconfig.high_res_timers",
        );
        assert_eq!(f.status, Status::Fail);
        assert_eq!(
            f.summary,
            "CONFIG_HIGH_RES_TIMERS is not set: clock_nanosleep and timers expire only on the 10 ms tick"
        );
        let f = finding(
            "CONFIG_PREEMPT_RT_FULL=y\n",
            Profile::Production,
            "kconfig.preempt_rt",
        );
        assert_eq!(f.status, Status::Pass, "the RT patch set before 5.3");
    }
}
