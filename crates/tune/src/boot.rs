//! The boot half of a plan: the kernel parameters the RT CPUs need that only a reboot can
//! give (RCU callback offload, the first IRQ affinity, tick skew, and with `strict` the
//! watchdogs off and `nohz_full`), compared with the running command line, as one line to
//! paste and the steps to install it for GRUB, systemd-boot and a Raspberry Pi. Printed, never
//! written.

use model::CpuSet;
use model::tune::{BootParam, BootPlan, Install, TuneProfile};
use sys::Root;
use sys::parse::cmdline;

/// Present on kernels built with `CONFIG_NO_HZ_FULL`, the ones that take `nohz_full=`.
const NOHZ_FULL: &str = "/sys/devices/system/cpu/nohz_full";

/// The boot parameters for `rt` / `hk`. `cpuset`: which cgroup cpuset the machine has
/// (`Some(true)` v2, `Some(false)` v1, `None` neither: then `isolcpus=` must isolate).
pub(crate) fn plan(
    root: &Root,
    rt: &CpuSet,
    hk: &CpuSet,
    profile: TuneProfile,
    cpuset: Option<bool>,
) -> BootPlan {
    let current = root.read_trimmed("/proc/cmdline").unwrap_or_default();
    let line = cmdline::parse(&current);
    // nohz_full= needs CONFIG_NO_HZ_FULL, whose kernels have this file: elsewhere the
    // parameter is ignored, and is not asked for.
    let nohz_full = root.exists(NOHZ_FULL);
    let params: Vec<BootParam> = wanted(rt, hk, profile, cpuset)
        .into_iter()
        .filter(|(name, _, _)| nohz_full || *name != "nohz_full")
        .filter_map(|(name, value, reason)| missing(&line, name, value, reason))
        .collect();
    let text = params
        .iter()
        .map(BootParam::text)
        .collect::<Vec<_>>()
        .join(" ");
    let install = if params.is_empty() {
        Vec::new()
    } else {
        install(root, &text, &params)
    };
    BootPlan {
        current,
        params,
        line: text,
        install,
    }
}

/// A boot parameter to have: name, value (`None` for a flag) and why.
type Wanted = (&'static str, Option<String>, &'static str);

/// The parameters the RT CPUs `rt` need, housekeeping `hk`, for `profile`; with no cpuset
/// controller (`cpuset` `None`) also `isolcpus=`.
fn wanted(rt: &CpuSet, hk: &CpuSet, profile: TuneProfile, cpuset: Option<bool>) -> Vec<Wanted> {
    let rt_list = rt.to_string();
    let mut wanted: Vec<Wanted> = vec![
        (
            "rcu_nocbs",
            Some(rt_list.clone()),
            "RCU callbacks of the RT CPUs run in kernel threads on the housekeeping CPUs",
        ),
        (
            "rcu_nocb_poll",
            None,
            "those threads poll for work instead of being woken from the RT CPUs",
        ),
        (
            "irqaffinity",
            Some(hk.to_string()),
            "IRQs start on the housekeeping CPUs from boot, before rtlab can move them",
        ),
        (
            "skew_tick",
            Some("1".to_string()),
            "the CPUs' ticks are offset, so they do not contend for the timekeeping lock at once",
        ),
    ];
    if profile == TuneProfile::Strict {
        wanted.push((
            "nohz_full",
            Some(rt_list.clone()),
            "no scheduler tick on an RT CPU that runs one task (one RT thread per CPU)",
        ));
        wanted.push((
            "nosoftlockup",
            None,
            "no soft-lockup watchdog thread and timer on every CPU",
        ));
        wanted.push((
            "nowatchdog",
            None,
            "no hard-lockup (NMI) watchdog interrupting every CPU",
        ));
    }
    if cpuset.is_none() {
        wanted.push((
            "isolcpus",
            Some(format!("domain,managed_irq,{rt_list}")),
            "no cpuset controller to isolate the RT CPUs at run time: the scheduler's domains \
             and kernel-managed IRQs leave them at boot",
        ));
    }
    wanted
}

/// The parameter to add when the command line `line` lacks it or gives another value (CPU
/// lists compared as sets); `None` when it is there already.
fn missing(
    line: &cmdline::Cmdline<'_>,
    name: &str,
    value: Option<String>,
    reason: &str,
) -> Option<BootParam> {
    let have = line.value(name);
    let present = line.has(name);
    let same = match (&value, have) {
        (None, _) => present,
        (Some(v), Some(h)) => {
            h == v
                || (v.parse::<CpuSet>().ok().is_some()
                    && h.parse::<CpuSet>().ok() == v.parse::<CpuSet>().ok())
        }
        (Some(_), None) => false,
    };
    if same {
        return None;
    }
    Some(BootParam {
        name: name.to_string(),
        value,
        current: present.then(|| match have {
            Some(h) => format!("{name}={h}"),
            None => name.to_string(),
        }),
        reason: reason.to_string(),
    })
}

/// The steps per boot loader.
fn install(root: &Root, line: &str, params: &[BootParam]) -> Vec<Install> {
    let replace: Vec<String> = params
        .iter()
        .filter_map(|p| {
            p.current
                .as_ref()
                .map(|c| format!("{c} (now {})", p.text()))
        })
        .collect();
    let first = if replace.is_empty() {
        format!("add `{line}`")
    } else {
        format!("add `{line}`, replacing {}", replace.join(", "))
    };
    let pi = root.exists("/boot/firmware/cmdline.txt")
        || root.exists("/boot/cmdline.txt")
        || root
            .read_trimmed("/proc/device-tree/model")
            .is_some_and(|m| m.contains("Raspberry Pi"));
    let systemd_boot =
        root.exists("/etc/kernel/cmdline") || root.exists("/boot/efi/loader/loader.conf");
    let grub = root.exists("/etc/default/grub") || root.exists("/boot/grub/grub.cfg");
    vec![
        Install {
            loader: "grub".to_string(),
            detected: grub,
            steps: vec![
                format!("in /etc/default/grub, GRUB_CMDLINE_LINUX_DEFAULT: {first}"),
                "update-grub (Debian, Ubuntu); grub2-mkconfig -o /boot/grub2/grub.cfg, or \
                 grubby --update-kernel=ALL --args=\"...\" (Fedora, RHEL)"
                    .to_string(),
                "reboot, then check /proc/cmdline and run `rtlab audit`".to_string(),
            ],
        },
        Install {
            loader: "systemd-boot".to_string(),
            detected: systemd_boot,
            steps: vec![
                format!("in /etc/kernel/cmdline (one line): {first}"),
                "kernel-install add $(uname -r) /boot/vmlinuz-$(uname -r), or edit the `options` \
                 line of /boot/loader/entries/*.conf"
                    .to_string(),
                "reboot, then check /proc/cmdline and run `rtlab audit`".to_string(),
            ],
        },
        Install {
            loader: "raspberry-pi".to_string(),
            detected: pi,
            steps: vec![
                format!(
                    "in /boot/firmware/cmdline.txt (/boot/cmdline.txt on older images), which is \
                     a single line: {first}"
                ),
                "reboot, then check /proc/cmdline and run `rtlab audit`".to_string(),
            ],
        },
    ]
}
