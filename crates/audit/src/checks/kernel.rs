//! The `kernel.*` checks: the running kernel's preemption model. Whether it is PREEMPT_RT
//! (`/sys/kernel/realtime`, the version string), and on PREEMPT_DYNAMIC kernels which mode
//! is in effect (debugfs, `preempt=`, the config's default), as [`sys::host`] works it out.
//! The build configuration itself is judged by the `kconfig.*` checks.

use model::audit::{Fix, Group, Severity};
use sys::host::DEBUGFS_PREEMPT;
use sys::parse::kconfig::kconfig_value;
use sys::parse::preempt::{classify_version, release_version};

use crate::check::Check;
use crate::context::Ctx;
use crate::kconfig_diff::choices::PREEMPTION;
use crate::outcome::Outcome;

/// The checks of this group.
pub(crate) const CHECKS: &[Check] = &[
    Check {
        id: "kernel.preempt_rt",
        title: "PREEMPT_RT kernel running",
        group: Group::Kernel,
        severity: Severity::Fail,
        why: "Only a PREEMPT_RT kernel bounds scheduling latency; a Raspberry Pi measured 3629 us worst case on a stock kernel and 141 us with PREEMPT_RT (rtlab docs/background.md)",
        run: preempt_rt,
    },
    Check {
        id: "kernel.preempt_dynamic",
        title: "Preemption mode in effect",
        group: Group::Kernel,
        severity: Severity::Warn,
        why: "A PREEMPT_DYNAMIC kernel preempts kernel code only in the full or lazy mode; in none or voluntary an RT task waits for the next preemption point",
        run: preempt_dynamic,
    },
];

/// The file PREEMPT_RT kernels create, reading `1`.
const REALTIME: &str = "/sys/kernel/realtime";
/// The kernel version string.
const VERSION: &str = "/proc/sys/kernel/version";

/// How the running kernel shows itself to be PREEMPT_RT: `(source, value)`, or `None`.
fn rt_evidence(ctx: &Ctx) -> Option<(String, String)> {
    let host = ctx.host();
    if ctx.root().read_trimmed(REALTIME).as_deref() == Some("1") {
        Some((REALTIME.to_string(), "1".to_string()))
    } else if classify_version(&host.kernel_version).rt {
        Some((VERSION.to_string(), host.kernel_version.clone()))
    } else if host.preempt_rt {
        let source = host
            .preempt_model_source
            .clone()
            .unwrap_or_else(|| "kernel config".to_string());
        Some((source, "rt".to_string()))
    } else {
        None
    }
}

/// `kernel.preempt_rt`.
fn preempt_rt(ctx: &Ctx) -> Outcome {
    let host = ctx.host();
    if let Some((source, value)) = rt_evidence(ctx) {
        return Outcome::pass(format!(
            "{} is a PREEMPT_RT kernel",
            release_or_running(&host.kernel_release)
        ))
        .evidence(source, value);
    }
    let realtime = ctx.root().read_trimmed(REALTIME);
    if host.kernel_version.is_empty() && realtime.is_none() {
        return Outcome::unknown(format!(
            "cannot tell whether the kernel is PREEMPT_RT: {REALTIME} is absent and {VERSION} cannot be read"
        ));
    }
    let model = match (&host.preempt_model, &host.preempt_model_source) {
        (Some(m), Some(s)) => format!("preemption model {m} (from {s})"),
        (Some(m), None) => format!("preemption model {m}"),
        _ => "preemption model unknown".to_string(),
    };
    let dynamic = if host.preempt_dynamic {
        ", PREEMPT_DYNAMIC"
    } else {
        ""
    };
    let mut outcome = Outcome::problem(format!(
        "{} is not a PREEMPT_RT kernel: {model}{dynamic}",
        release_or_running(&host.kernel_release)
    ))
    .evidence(REALTIME, realtime.unwrap_or_else(|| "absent".to_string()))
    .evidence(VERSION, &host.kernel_version);

    if let Some(package) = rt_package(ctx, &host.arch) {
        outcome = outcome.evidence(OS_RELEASE, package.seen);
        if let Some(command) = package.install {
            outcome = outcome.fix_command(command);
        }
        if let Some(note) = package.note {
            outcome = outcome.fix_advice(note);
        }
    }
    let advice = match release_version(&host.kernel_release) {
        Some((major, minor)) if (major, minor) >= (6, 12) => format!(
            "or rebuild this Linux {major}.{minor} kernel with CONFIG_PREEMPT_RT=y (in mainline since 6.12; set CONFIG_EXPERT=y if the option is hidden)"
        ),
        Some((major, minor)) => format!(
            "or build a kernel with CONFIG_PREEMPT_RT=y: Linux {major}.{minor} needs the patch set from https://cdn.kernel.org/pub/linux/kernel/projects/rt/{major}.{minor}/, Linux 6.12 and later have it in mainline"
        ),
        None => "or build a kernel with CONFIG_PREEMPT_RT=y (mainline since Linux 6.12; older kernels need the patch set from https://cdn.kernel.org/pub/linux/kernel/projects/rt/)".to_string(),
    };
    outcome
        .fix_config("CONFIG_PREEMPT_RT=y")
        .fix_advice(format!("{advice}; then boot the new kernel"))
}

fn release_or_running(release: &str) -> String {
    if release.is_empty() {
        "the running kernel".to_string()
    } else {
        format!("kernel {release}")
    }
}

/// Where the distribution's name is read, to name its RT kernel package.
const OS_RELEASE: &str = "/etc/os-release";

/// The distribution's RT kernel package.
struct RtPackage {
    /// The `/etc/os-release` fields that named the distribution.
    seen: String,
    /// The command that installs it, when the distribution ships one for this architecture.
    install: Option<String>,
    /// Where the package comes from, or why there is none.
    note: Option<String>,
}

/// The RT kernel package of the distribution named in `/etc/os-release` (`ID`, `ID_LIKE`):
/// Debian's `linux-image-rt-<arch>`, Ubuntu Pro's `realtime-kernel`, the RHEL family's
/// `kernel-rt`. `None` for others, which get only the kernel config fix.
fn rt_package(ctx: &Ctx, arch: &str) -> Option<RtPackage> {
    let text = ctx.root().read_opt(OS_RELEASE).ok().flatten()?;
    let field = |key: &str| -> String {
        text.lines()
            .filter_map(|l| l.trim().strip_prefix(key)?.strip_prefix('='))
            .next_back()
            .unwrap_or("")
            .trim()
            .trim_matches(|c| c == '"' || c == '\'')
            .to_string()
    };
    let id = field("ID");
    let like = field("ID_LIKE");
    let ids: Vec<&str> = std::iter::once(id.as_str())
        .chain(like.split_whitespace())
        .collect();
    let seen = if like.is_empty() {
        format!("ID={id}")
    } else {
        format!("ID={id} ID_LIKE={like}")
    };
    let package = |install: Option<String>, note: Option<String>| RtPackage {
        seen: seen.clone(),
        install,
        note,
    };
    if ids.contains(&"ubuntu") {
        return Some(package(
            Some("pro enable realtime-kernel".to_string()),
            Some(
                "Ubuntu ships its real-time kernel through Ubuntu Pro (free for personal use)"
                    .to_string(),
            ),
        ));
    }
    if ids.contains(&"debian") {
        return Some(match arch {
            "x86_64" => package(Some("apt install linux-image-rt-amd64".to_string()), None),
            "aarch64" => package(Some("apt install linux-image-rt-arm64".to_string()), None),
            other => package(
                None,
                Some(format!(
                    "Debian builds RT kernels for amd64 and arm64 only, not {other}"
                )),
            ),
        });
    }
    let rhel_like = ids
        .iter()
        .any(|i| matches!(*i, "rhel" | "centos" | "rocky" | "almalinux"));
    if rhel_like && id != "fedora" {
        return Some(package(
            Some("dnf install kernel-rt".to_string()),
            Some("kernel-rt comes from the RT repository: rhel-*-for-*-rt-rpms on RHEL, `dnf config-manager --set-enabled rt` on CentOS Stream, Rocky and Alma".to_string()),
        ));
    }
    None
}

/// `kernel.preempt_dynamic`.
fn preempt_dynamic(ctx: &Ctx) -> Outcome {
    let host = ctx.host();
    if let Some((source, value)) = rt_evidence(ctx) {
        return Outcome::pass(
            "a PREEMPT_RT kernel: fully preemptible, the dynamic modes do not apply",
        )
        .evidence(source, value);
    }
    if !host.preempt_dynamic {
        let model = match (&host.preempt_model, &host.preempt_model_source) {
            (Some(m), Some(s)) => format!("{m}, from {s}"),
            (Some(m), None) => m.clone(),
            _ => "unknown".to_string(),
        };
        return Outcome::pass(format!(
            "not a PREEMPT_DYNAMIC kernel: the model ({model}) is fixed at build time; kernel.preempt_rt judges it"
        ))
        .evidence(VERSION, &host.kernel_version);
    }
    let Some(mode) = host.preempt_model.as_deref() else {
        return Outcome::unknown(format!(
            "a PREEMPT_DYNAMIC kernel whose mode is unknown: {DEBUGFS_PREEMPT} cannot be read (mount debugfs and run as root), and neither preempt= nor the kernel config names one"
        ))
        .evidence(VERSION, &host.kernel_version);
    };
    let source = host.preempt_model_source.as_deref().unwrap_or("unknown");
    let (evidence_source, evidence_value, caveat) = mode_evidence(ctx, source, mode);
    let outcome = match mode {
        "full" => Outcome::pass(format!("PREEMPT_DYNAMIC kernel in mode full (from {source}){caveat}")),
        "lazy" => Outcome::pass(format!(
            "PREEMPT_DYNAMIC kernel in mode lazy (from {source}): RT wakeups still preempt at once, only SCHED_OTHER waits for the tick{caveat}"
        )),
        other => Outcome::problem(format!(
            "PREEMPT_DYNAMIC kernel in mode {other} (from {source}): kernel code runs on to the next preemption point while RT tasks wait{caveat}"
        ))
        .fix_boot("preempt=full")
        .with_fixes(run_time_mode_fix(ctx)),
    };
    outcome
        .evidence(evidence_source, evidence_value)
        .evidence(VERSION, &host.kernel_version)
}

/// Switching to `full` at run time: the debugfs knob where it is there; where debugfs is only
/// not mounted (its mount point exists), mounting it first; none where the kernel has no
/// debugfs (the boot parameter is then the way).
fn run_time_mode_fix(ctx: &Ctx) -> Option<Fix> {
    let root = ctx.root();
    if root.exists(DEBUGFS_PREEMPT) {
        return Some(Fix::Write {
            path: DEBUGFS_PREEMPT.into(),
            value: "full".into(),
        });
    }
    let mount_point = "/sys/kernel/debug";
    let unmounted = root.exists(mount_point) && !root.exists("/sys/kernel/debug/sched");
    unmounted.then(|| Fix::Command {
        command: format!("mount -t debugfs debugfs {mount_point} && echo full > {DEBUGFS_PREEMPT}"),
    })
}

/// Where the mode was read and what was seen, and a caveat when it is only the boot default.
fn mode_evidence(ctx: &Ctx, source: &str, mode: &str) -> (String, String, &'static str) {
    let fallback = (source.to_string(), mode.to_string(), "");
    if source == DEBUGFS_PREEMPT {
        let seen = ctx
            .root()
            .read_trimmed(DEBUGFS_PREEMPT)
            .unwrap_or_else(|| mode.to_string());
        return (DEBUGFS_PREEMPT.to_string(), seen, "");
    }
    let caveat = "; the boot default, since debugfs could not show a change made at run time";
    if source.starts_with("boot parameter") {
        return (
            "/proc/cmdline".to_string(),
            format!("preempt={mode}"),
            caveat,
        );
    }
    if source == "kernel config"
        && ctx.options().kconfig.is_none()
        && let Ok(config) = ctx.kconfig()
    {
        let line = PREEMPTION
            .members
            .iter()
            .find(|m| m.label == mode && kconfig_value(&config.text, m.name) == Some("y"))
            .map_or_else(|| mode.to_string(), |m| format!("{}=y", m.name));
        return (config.path.clone(), line, caveat);
    }
    (fallback.0, fallback.1, caveat)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Options;
    use model::audit::Status;
    use testkit::FakeRoot;

    fn finding(fake: &FakeRoot, check: &Check) -> model::audit::Finding {
        let ctx = Ctx::new(fake.root(), Options::default());
        check.finding((check.run)(&ctx))
    }

    const DEBIAN_RT: (&str, &str) = ("6.1.0-50-rt-arm64", "#1 SMP PREEMPT_RT Debian 6.1.176-1");
    const DEBIAN: (&str, &str) = ("6.1.0-56-amd64", "#1 SMP PREEMPT_DYNAMIC Debian 6.1.192-2");

    #[test]
    fn rt_kernels_pass_by_realtime_file_or_version_string() {
        let fake = FakeRoot::new()
            .cpus(2)
            .kernel(DEBIAN_RT.0, "#1 SMP")
            .realtime(true);
        let f = finding(&fake, &CHECKS[0]);
        assert_eq!(f.status, Status::Pass);
        assert_eq!(
            (f.evidence[0].source.as_str(), f.evidence[0].value.as_str()),
            (REALTIME, "1")
        );
        let fake = FakeRoot::new().cpus(2).kernel(DEBIAN_RT.0, DEBIAN_RT.1);
        let f = finding(&fake, &CHECKS[0]);
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert_eq!(f.evidence[0].source, VERSION);
        // The dynamic check does not apply to an RT kernel.
        assert_eq!(finding(&fake, &CHECKS[1]).status, Status::Pass);
    }

    #[test]
    fn a_generic_kernel_fails_with_the_distro_fix() {
        let fake = FakeRoot::new()
            .cpus(2)
            .kernel(DEBIAN.0, DEBIAN.1)
            .file("/proc/sys/kernel/arch", "x86_64\n")
            .file(
                "/etc/os-release",
                "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n",
            );
        let f = finding(&fake, &CHECKS[0]);
        assert_eq!(f.status, Status::Fail);
        assert!(
            f.summary
                .starts_with("kernel 6.1.0-56-amd64 is not a PREEMPT_RT kernel"),
            "{}",
            f.summary
        );
        assert_eq!(f.fix[0].render(), "apt install linux-image-rt-amd64");
        assert_eq!(f.fix[1].render(), "kernel config: CONFIG_PREEMPT_RT=y");
        assert!(
            f.fix[2].render().contains("/projects/rt/6.1/"),
            "{:?}",
            f.fix
        );
        assert_eq!(f.evidence[0].value, "absent");

        let ubuntu = FakeRoot::new()
            .cpus(1)
            .kernel("6.8.0-45-generic", "#45-Ubuntu SMP PREEMPT_DYNAMIC")
            .file("/etc/os-release", "ID=ubuntu\nID_LIKE=debian\n");
        let f = finding(&ubuntu, &CHECKS[0]);
        assert_eq!(f.fix[0].render(), "pro enable realtime-kernel");
        let rocky = FakeRoot::new()
            .cpus(1)
            .kernel("6.13.0", "#1 SMP PREEMPT_DYNAMIC")
            .file(
                "/etc/os-release",
                "ID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\n",
            );
        let f = finding(&rocky, &CHECKS[0]);
        assert_eq!(f.fix[0].render(), "dnf install kernel-rt");
        assert!(
            f.fix
                .iter()
                .any(|x| x.render().contains("mainline since 6.12")),
            "{:?}",
            f.fix
        );
        // Debian has no RT flavour for this architecture: say so instead of a command.
        let riscv = FakeRoot::new()
            .cpus(1)
            .kernel("6.12.0-1-riscv64", "#1 SMP PREEMPT_DYNAMIC Debian")
            .file("/proc/sys/kernel/arch", "riscv64\n")
            .file("/etc/os-release", "ID=debian\n");
        let f = finding(&riscv, &CHECKS[0]);
        assert_eq!(f.evidence[2].value, "ID=debian");
        assert!(f.fix[0].render().contains("not riscv64"), "{:?}", f.fix);
        assert!(
            f.fix[2].render().contains("rebuild this Linux 6.12 kernel"),
            "{:?}",
            f.fix
        );
        // No os-release: the config route only.
        let bare = FakeRoot::new().cpus(1).kernel("5.15.0", "#1 SMP PREEMPT");
        let f = finding(&bare, &CHECKS[0]);
        assert_eq!(f.fix[0].render(), "kernel config: CONFIG_PREEMPT_RT=y");
    }

    #[test]
    fn nothing_readable_is_unknown() {
        let fake = FakeRoot::new().cpus(1);
        assert_eq!(finding(&fake, &CHECKS[0]).status, Status::Unknown);
    }

    #[test]
    fn dynamic_mode_from_debugfs_boot_parameter_or_config() {
        let base = || FakeRoot::new().cpus(2).kernel(DEBIAN.0, DEBIAN.1);
        // debugfs names the mode in effect.
        let fake = base().file(DEBUGFS_PREEMPT, "none voluntary (full) lazy\n");
        let f = finding(&fake, &CHECKS[1]);
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert_eq!(f.evidence[0].value, "none voluntary (full) lazy");
        let fake = base().file(DEBUGFS_PREEMPT, "none (voluntary) full\n");
        let f = finding(&fake, &CHECKS[1]);
        assert_eq!(f.status, Status::Warn);
        assert_eq!(f.fix[0].render(), "boot parameter: preempt=full");
        assert_eq!(f.fix[1].render(), format!("echo full > {DEBUGFS_PREEMPT}"));
        // No debugfs: the boot parameter, then the config's default.
        let fake = base().cmdline("quiet preempt=lazy");
        let f = finding(&fake, &CHECKS[1]);
        assert_eq!(f.status, Status::Pass);
        assert!(f.summary.contains("boot default"), "{}", f.summary);
        assert_eq!(f.evidence[0].value, "preempt=lazy");
        let fake = base().file(
            &format!("/boot/config-{}", DEBIAN.0),
            "CONFIG_PREEMPT_VOLUNTARY=y\n# CONFIG_PREEMPT is not set\nCONFIG_PREEMPT_DYNAMIC=y\n",
        );
        let f = finding(&fake, &CHECKS[1]);
        assert_eq!(f.status, Status::Warn, "{}", f.summary);
        assert_eq!(
            (f.evidence[0].source.as_str(), f.evidence[0].value.as_str()),
            ("/boot/config-6.1.0-56-amd64", "CONFIG_PREEMPT_VOLUNTARY=y")
        );
        // Dynamic, but nothing names the mode.
        assert_eq!(finding(&base(), &CHECKS[1]).status, Status::Unknown);
        // A static build.
        let fake = FakeRoot::new().cpus(1).kernel("5.15.0", "#1 SMP PREEMPT");
        let f = finding(&fake, &CHECKS[1]);
        assert_eq!(f.status, Status::Pass);
        assert!(
            f.summary
                .starts_with("not a PREEMPT_DYNAMIC kernel: the model (full"),
            "{}",
            f.summary
        );
    }
}
