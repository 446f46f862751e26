//! The `kernel.tracers` check: whether the kernel's latency tracers that rtlab drives can be
//! used on this machine now. tracefs is found as [`Tracefs::find`] finds it, and `timerlat`,
//! `osnoise` and `hwlat` are asked of `sys` ([`sys::timerlat::available`] and its siblings),
//! the functions the measuring engines ask, so the check passes exactly when
//! `rtlab measure --engine timerlat` can run.
//!
//! It is the live counterpart of `kconfig.latency_tracers`, which judges the build
//! configuration: when tracefs cannot say (not mounted) or disagrees with the running kernel's
//! own config, the finding quotes the config line and names that check. "tracefs is not
//! mounted" (fixed by a mount) is told apart from "the tracer is not built in" (fixed by
//! another kernel), and both from "mounted but unreadable" (not root, or a captured tree
//! without its files), which is `unknown`. Reads only through `sys` and the [`Root`]; writes
//! nothing.

use std::path::Path;

use model::audit::{Group, Severity};
use sys::Root;
use sys::parse::kconfig::{is_enabled, kconfig_value};
use sys::tracefs::{Tracefs, mount_hint};

use crate::check::Check;
use crate::context::Ctx;
use crate::outcome::Outcome;

/// The checks of this group.
pub(crate) const CHECKS: &[Check] = &[Check {
    id: "kernel.tracers",
    title: "Latency tracers available now",
    group: Group::Kernel,
    severity: Severity::Warn,
    why: "rtlab measure --engine timerlat takes the kernel's own view of latency from the timerlat tracer: IRQ and thread latency apart, a stop with the IRQ's stack at a threshold and the auto-analysis of a spike; kconfig.latency_tracers judges the build",
    run: tracers,
}];

/// A `sys` function that says whether this kernel has a tracer (its tracefs when it does).
type Available = fn(&Root) -> Option<Tracefs>;

/// The tracers rtlab drives, in the order reported, each with the `sys` function that says
/// whether this kernel has it. The first, timerlat, decides the verdict.
const TRACERS: [(&str, Available); 3] = [
    ("timerlat", sys::timerlat::available),
    ("osnoise", sys::osnoise::available),
    ("hwlat", sys::hwlat::available),
];

/// Where rtlab looks for tracefs, in order (as [`Tracefs::find`] does).
const MOUNT_POINTS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Where the mounts are listed.
const MOUNTINFO: &str = "/proc/self/mountinfo";

/// The option that builds the timerlat tracer in.
const TIMERLAT_OPTION: &str = "CONFIG_TIMERLAT_TRACER";

/// What the missing tracer costs, and what still works.
const COST: &str = "rtlab measure --engine timerlat cannot run: no kernel-side split of IRQ and thread latency, no stop with the IRQ's stack, no auto-analysis; rtlab measure --engine user still measures";

/// `kernel.tracers`.
fn tracers(ctx: &Ctx) -> Outcome {
    let root = ctx.root();
    let Some(fs) = Tracefs::find(root) else {
        return no_tracefs(ctx);
    };
    let dir = kernel_path(root, fs.dir());
    // What Tracefs::find looked for: noted, so a capture holds it.
    root.note(format!("{dir}/trace_marker"));
    let list = format!("{dir}/available_tracers");
    if let Err(e) = root.read(&list) {
        return Outcome::unknown(format!(
            "tracefs is mounted at {dir}, but its list of tracers cannot be read: {e}"
        ));
    }
    let present: Vec<(&str, bool)> = TRACERS
        .iter()
        .map(|(name, available)| (*name, available(root).is_some()))
        .collect();
    let seen = present
        .iter()
        .map(|(name, on)| format!("{name} {}", if *on { "listed" } else { "not listed" }))
        .collect::<Vec<_>>()
        .join(", ");
    if present[0].1 {
        return available(ctx, &present, (list, seen));
    }
    not_built(ctx, &dir, (list, seen))
}

/// timerlat is listed. A running kernel's config that lacks it is not this kernel's: said,
/// so this pass and the config check's finding do not read as a contradiction.
fn available(ctx: &Ctx, present: &[(&str, bool)], listed: (String, String)) -> Outcome {
    let stale = own_config(ctx).filter(|(_, _, on)| !on);
    let note = match &stale {
        Some((path, line, _)) => format!(
            "; {path} ({line}) is not this kernel's config, so kconfig.latency_tracers judges another build (kconfig.matches_running)"
        ),
        None => String::new(),
    };
    let mut outcome = Outcome::pass(format!(
        "the timerlat tracer is available{}: rtlab measure --engine timerlat measures the kernel's view of latency, with auto-analysis{note}",
        others(&present[1..])
    ))
    .evidence(listed.0, listed.1);
    if let Some((path, line, _)) = stale {
        outcome = outcome.evidence(path, line);
    }
    outcome
}

/// The other tracers, as a parenthesis: ` (osnoise too; no hwlat)`.
fn others(present: &[(&str, bool)]) -> String {
    let names = |on: bool| {
        present
            .iter()
            .filter(|(_, p)| *p == on)
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(" and ")
    };
    match (names(true), names(false)) {
        (with, without) if without.is_empty() => format!(" ({with} too)"),
        (with, without) if with.is_empty() => format!(" (no {without})"),
        (with, without) => format!(" ({with} too; no {without})"),
    }
}

/// tracefs is mounted and lists no timerlat: the running kernel was built without it.
/// `listed` is the evidence from `available_tracers`, shown first.
fn not_built(ctx: &Ctx, dir: &str, listed: (String, String)) -> Outcome {
    let config = own_config(ctx);
    let (summary, fixes) = match &config {
        Some((_, line, true)) => (
            format!(
                "tracefs at {dir} lists no timerlat tracer, yet the kernel config sets {line}: the config may not be the running kernel's (kconfig.matches_running); {COST}"
            ),
            false,
        ),
        Some(_) => (
            format!(
                "this kernel has no timerlat tracer: tracefs at {dir} does not list it (not built in; the kernel config lacks it too, see kconfig.latency_tracers); {COST}"
            ),
            true,
        ),
        None => (
            format!(
                "this kernel has no timerlat tracer: tracefs at {dir} does not list it (not built in); {COST}"
            ),
            true,
        ),
    };
    let mut outcome = Outcome::problem(summary).evidence(listed.0, listed.1);
    if let Some((path, line, _)) = config {
        outcome = outcome.evidence(path, line);
    }
    if !fixes {
        return outcome.fix_advice(format!(
            "boot the kernel this config builds, or check that the running kernel's config has {TIMERLAT_OPTION}=y"
        ));
    }
    outcome
        .fix_config(format!("{TIMERLAT_OPTION}=y"))
        .fix_advice(package_advice(&ctx.host().arch))
}

/// No tracefs where rtlab looks: not mounted, mounted elsewhere, or mounted but unreadable
/// (told apart by the mount table).
fn no_tracefs(ctx: &Ctx) -> Outcome {
    let root = ctx.root();
    let mounts = root.read(MOUNTINFO).map(|t| tracefs_mounts(&t));
    let mounts = match mounts {
        Ok(m) => m,
        Err(_) => return not_mounted(ctx, "cannot be read"),
    };
    if let Some(point) = mounts.iter().find(|m| MOUNT_POINTS.contains(&m.as_str())) {
        let why = if root.is_host() {
            "its files cannot be seen by this user: run the audit as root (tracefs is readable by root only)"
        } else {
            "this tree holds none of its files (a capture made as root by this rtlab holds them)"
        };
        return Outcome::unknown(format!("tracefs is mounted at {point}, but {why}"))
            .evidence(MOUNTINFO, format!("tracefs at {point}"));
    }
    if let Some(point) = mounts.first() {
        return not_mounted(ctx, &format!("tracefs at {point} only"));
    }
    not_mounted(ctx, "no tracefs mount")
}

/// tracefs is not mounted where rtlab looks: mounting it is the fix, and the running
/// kernel's config says whether the tracer would then be there.
fn not_mounted(ctx: &Ctx, seen: &str) -> Outcome {
    let config = own_config(ctx);
    let built = match &config {
        Some((_, line, true)) => {
            format!("; the kernel config sets {line}, so mounting tracefs is all it takes")
        }
        Some((_, _, false)) => {
            format!("; the kernel config lacks {TIMERLAT_OPTION} too (kconfig.latency_tracers)")
        }
        None => String::new(),
    };
    let mut outcome = Outcome::problem(format!(
        "tracefs is not mounted at {}, so no kernel tracer can be used: {COST}{built}",
        MOUNT_POINTS.join(" or ")
    ))
    .evidence(MOUNTINFO, seen)
    .fix_command(mount_hint());
    if let Some((path, line, on)) = config {
        outcome = outcome.evidence(path, line);
        if !on {
            outcome = outcome
                .fix_config(format!("{TIMERLAT_OPTION}=y"))
                .fix_advice(package_advice(&ctx.host().arch));
        }
    }
    outcome
}

/// The running kernel's own config on the timerlat tracer: `(path, line as written, built)`.
/// `None` with `--kconfig` (a kernel to be built says nothing of this one) or no config.
fn own_config(ctx: &Ctx) -> Option<(String, String, bool)> {
    if ctx.options().kconfig.is_some() {
        return None;
    }
    let config = ctx.kconfig().ok()?;
    let value = kconfig_value(&config.text, TIMERLAT_OPTION);
    let line = match value {
        Some("n") => format!("# {TIMERLAT_OPTION} is not set"),
        Some(v) => format!("{TIMERLAT_OPTION}={v}"),
        None => format!("{TIMERLAT_OPTION} absent"),
    };
    Some((config.path.clone(), line, is_enabled(value)))
}

/// Where a kernel with the tracer comes from, for this architecture.
fn package_advice(arch: &str) -> String {
    let package = match arch {
        "x86_64" => "linux-image-rt-amd64",
        "aarch64" => "linux-image-rt-arm64",
        _ => "linux-image-rt-amd64 or linux-image-rt-arm64",
    };
    format!(
        "or boot a kernel that has it: every Debian PREEMPT_RT kernel does ({package}), then check again"
    )
}

/// The mount points of the tracefs mounts in mountinfo text, in file order (`\040` read
/// back as a space). Lines without the mountinfo form are passed over.
fn tracefs_mounts(mountinfo: &str) -> Vec<String> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let point = left.split(' ').nth(4)?;
            (right.split(' ').next()? == "tracefs").then(|| point.replace("\\040", " "))
        })
        .collect()
}

/// The kernel path of a real path under `root` (`/sys/kernel/tracing`).
fn kernel_path(root: &Root, real: &Path) -> String {
    match real.strip_prefix(root.base()) {
        Ok(rel) => format!("/{}", rel.display()),
        Err(_) => real.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::{Options, Source};
    use model::audit::{Finding, Status};
    use testkit::FakeRoot;

    const TRACING: &str = "/sys/kernel/tracing";
    const MOUNTED: &str = "22 27 0:21 / /proc rw,relatime - proc proc rw\n42 23 0:13 / /sys/kernel/tracing rw,relatime - tracefs nodev rw\n";
    const UNMOUNTED: &str = "22 27 0:21 / /proc rw,relatime - proc proc rw\n";

    fn finding(fake: &FakeRoot) -> Finding {
        finding_with(fake, Options::default())
    }

    fn finding_with(fake: &FakeRoot, options: Options) -> Finding {
        let ctx = Ctx::new(fake.root(), options);
        CHECKS[0].finding((CHECKS[0].run)(&ctx))
    }

    /// A machine with tracefs mounted at the usual place, listing `tracers`.
    fn tracefs(tracers: &str) -> FakeRoot {
        FakeRoot::new()
            .cpus(2)
            .file("/proc/self/mountinfo", MOUNTED)
            .file(&format!("{TRACING}/trace_marker"), "")
            .file(
                &format!("{TRACING}/available_tracers"),
                &format!("{tracers}\n"),
            )
    }

    fn config(fake: FakeRoot, timerlat: &str) -> FakeRoot {
        fake.kernel("6.12.0-rt", "#1 SMP PREEMPT_RT")
            .file("/boot/config-6.12.0-rt", &format!("{timerlat}\n"))
    }

    #[test]
    fn timerlat_listed_passes_and_names_the_others() {
        let fake = tracefs("timerlat osnoise hwlat blk function_graph function nop");
        let f = finding(&fake);
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert_eq!(
            f.summary,
            "the timerlat tracer is available (osnoise and hwlat too): rtlab measure --engine timerlat measures the kernel's view of latency, with auto-analysis"
        );
        assert_eq!(
            (f.evidence[0].source.as_str(), f.evidence[0].value.as_str()),
            (
                "/sys/kernel/tracing/available_tracers",
                "timerlat listed, osnoise listed, hwlat listed"
            )
        );
        let f = finding(&tracefs("timerlat osnoise nop"));
        assert!(
            f.summary.contains("(osnoise too; no hwlat)"),
            "{}",
            f.summary
        );
        // A config without the tracer is not the running kernel's: said, not contradicted.
        let f = finding(&config(
            tracefs("timerlat nop"),
            "# CONFIG_TIMERLAT_TRACER is not set",
        ));
        assert_eq!(f.status, Status::Pass);
        assert!(
            f.summary.ends_with(
                "; /boot/config-6.12.0-rt (# CONFIG_TIMERLAT_TRACER is not set) is not this kernel's config, so kconfig.latency_tracers judges another build (kconfig.matches_running)"
            ),
            "{}",
            f.summary
        );
        assert_eq!(f.evidence.len(), 2);
        let f = finding(&config(tracefs("timerlat nop"), "CONFIG_TIMERLAT_TRACER=y"));
        assert!(f.summary.ends_with("with auto-analysis"), "{}", f.summary);
    }

    #[test]
    fn tracefs_without_timerlat_warns_that_it_is_not_built_in() {
        let fake = tracefs("hwlat blk function nop").file("/proc/sys/kernel/arch", "x86_64\n");
        let f = finding(&fake);
        assert_eq!(f.status, Status::Warn);
        assert!(
            f.summary
                .starts_with("this kernel has no timerlat tracer: tracefs at /sys/kernel/tracing does not list it (not built in); rtlab measure --engine timerlat cannot run: no kernel-side split"),
            "{}",
            f.summary
        );
        assert!(
            f.summary
                .ends_with("rtlab measure --engine user still measures")
        );
        assert_eq!(
            f.evidence[0].value,
            "timerlat not listed, osnoise not listed, hwlat listed"
        );
        assert_eq!(f.fix[0].render(), "kernel config: CONFIG_TIMERLAT_TRACER=y");
        assert!(
            f.fix[1].render().contains("(linux-image-rt-amd64)"),
            "{:?}",
            f.fix
        );
        // The running kernel's own config lacks it too: quoted, and the config check named.
        let f = finding(&config(
            tracefs("nop"),
            "# CONFIG_TIMERLAT_TRACER is not set",
        ));
        assert!(
            f.summary.contains(
                "(not built in; the kernel config lacks it too, see kconfig.latency_tracers)"
            ),
            "{}",
            f.summary
        );
        assert_eq!(
            (f.evidence[1].source.as_str(), f.evidence[1].value.as_str()),
            (
                "/boot/config-6.12.0-rt",
                "# CONFIG_TIMERLAT_TRACER is not set"
            )
        );
    }

    #[test]
    fn a_config_that_builds_timerlat_while_tracefs_lacks_it_is_named() {
        let f = finding(&config(tracefs("nop"), "CONFIG_TIMERLAT_TRACER=y"));
        assert_eq!(f.status, Status::Warn);
        assert_eq!(f.fix.len(), 1, "{:?}", f.fix);
        assert!(
            f.fix[0]
                .render()
                .starts_with("boot the kernel this config builds")
        );
        assert!(
            f.summary.contains(
                "yet the kernel config sets CONFIG_TIMERLAT_TRACER=y: the config may not be the running kernel's (kconfig.matches_running)"
            ),
            "{}",
            f.summary
        );
        // A config given with --kconfig is another kernel: not quoted.
        let options = Options {
            kconfig: Some(Source {
                text: "CONFIG_TIMERLAT_TRACER=y\n".into(),
                path: "next.config".into(),
            }),
            ..Options::default()
        };
        let f = finding_with(&tracefs("nop"), options);
        assert!(f.summary.starts_with("this kernel has no timerlat tracer"));
        assert!(f.evidence.iter().all(|e| e.source != "next.config"));
    }

    #[test]
    fn no_tracefs_warns_with_the_mount_command() {
        let fake = FakeRoot::new()
            .cpus(2)
            .file("/proc/self/mountinfo", UNMOUNTED);
        let f = finding(&fake);
        assert_eq!(f.status, Status::Warn);
        assert!(
            f.summary.starts_with(
                "tracefs is not mounted at /sys/kernel/tracing or /sys/kernel/debug/tracing, so no kernel tracer can be used: rtlab measure --engine timerlat cannot run"
            ),
            "{}",
            f.summary
        );
        assert_eq!(
            (f.evidence[0].source.as_str(), f.evidence[0].value.as_str()),
            (MOUNTINFO, "no tracefs mount")
        );
        assert_eq!(f.fix.len(), 1);
        assert_eq!(
            f.fix[0].render(),
            "mount -t tracefs nodev /sys/kernel/tracing"
        );
        // A config that builds the tracer: mounting is the whole fix.
        let f = finding(&config(fake, "CONFIG_TIMERLAT_TRACER=y"));
        assert!(
            f.summary.ends_with(
                "the kernel config sets CONFIG_TIMERLAT_TRACER=y, so mounting tracefs is all it takes"
            ),
            "{}",
            f.summary
        );
        assert_eq!(f.fix.len(), 1);
        // One that does not: the mount, then the kernel.
        let fake = FakeRoot::new().cpus(2);
        let f = finding(&config(fake, "# CONFIG_TIMERLAT_TRACER is not set"));
        assert_eq!(f.status, Status::Warn);
        assert_eq!(f.evidence[0].value, "cannot be read");
        assert_eq!(f.fix.len(), 3, "{:?}", f.fix);
        assert_eq!(f.fix[1].render(), "kernel config: CONFIG_TIMERLAT_TRACER=y");
    }

    #[test]
    fn tracefs_mounted_elsewhere_or_unreadable_is_told_apart() {
        // Mounted where rtlab looks, but its files are not there: unknown, not "not mounted".
        let fake = FakeRoot::new()
            .cpus(2)
            .file("/proc/self/mountinfo", MOUNTED)
            .dir(TRACING);
        let f = finding(&fake);
        assert_eq!(f.status, Status::Unknown);
        assert!(
            f.summary.starts_with(
                "tracefs is mounted at /sys/kernel/tracing, but this tree holds none of its files"
            ),
            "{}",
            f.summary
        );
        // Mounted somewhere rtlab does not look.
        let elsewhere = "42 23 0:13 / /mnt/my\\040trace rw - tracefs nodev rw\n";
        let fake = FakeRoot::new()
            .cpus(2)
            .file("/proc/self/mountinfo", elsewhere);
        let f = finding(&fake);
        assert_eq!(f.status, Status::Warn);
        assert_eq!(f.evidence[0].value, "tracefs at /mnt/my trace only");
        // Listed but unreadable: unknown.
        let fake = FakeRoot::new()
            .cpus(2)
            .file("/proc/self/mountinfo", MOUNTED)
            .file(&format!("{TRACING}/trace_marker"), "")
            .dir(&format!("{TRACING}/available_tracers"));
        let f = finding(&fake);
        assert_eq!(f.status, Status::Unknown, "{}", f.summary);
        assert!(f.summary.contains("list of tracers cannot be read"));
    }

    #[test]
    fn the_old_debugfs_place_is_found_too() {
        let fake = FakeRoot::new()
            .cpus(1)
            .file("/sys/kernel/debug/tracing/trace_marker", "")
            .file(
                "/sys/kernel/debug/tracing/available_tracers",
                "timerlat osnoise nop\n",
            );
        let f = finding(&fake);
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert_eq!(
            f.evidence[0].source,
            "/sys/kernel/debug/tracing/available_tracers"
        );
    }

    #[test]
    fn mountinfo_lines_name_tracefs_mounts() {
        let text = "42 23 0:13 / /sys/kernel/tracing rw,relatime - tracefs nodev rw\nnot a line\n38 21 0:7 / /sys/kernel/debug rw - debugfs debugfs rw\n";
        assert_eq!(tracefs_mounts(text), ["/sys/kernel/tracing"]);
        assert!(tracefs_mounts("").is_empty());
    }
}
