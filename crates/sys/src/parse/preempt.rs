//! The kernel's preemption model, from the three texts that reveal it:
//!
//! - debugfs `/sys/kernel/debug/sched/preempt` (PREEMPT_DYNAMIC kernels): the models the
//!   kernel can switch between, the current one in parentheses: `none voluntary (full) lazy`;
//! - the version string (`/proc/sys/kernel/version`, `uname -v`), whose flags come from
//!   init/Makefile: `PREEMPT_RT`, `PREEMPT_DYNAMIC`, or `PREEMPT` (a static preemptible
//!   build); older RT patch sets wrote `PREEMPT RT`;
//! - the kernel config: the `Preemption Model` choice (`CONFIG_PREEMPT_NONE`,
//!   `CONFIG_PREEMPT_VOLUNTARY`, `CONFIG_PREEMPT`, `CONFIG_PREEMPT_LAZY`), `CONFIG_PREEMPT_RT`
//!   and `CONFIG_PREEMPT_DYNAMIC` (with which the choice is only the boot default, changed by
//!   the `preempt=` boot parameter or debugfs).
//!
//! Model names are the kernel's own: `none`, `voluntary`, `full`, `lazy`, plus `rt`.

use super::kconfig::kconfig_enabled;

/// The models the `preempt=` boot parameter and the debugfs file accept.
pub const DYNAMIC_MODELS: [&str; 4] = ["none", "voluntary", "full", "lazy"];

/// The content of `/sys/kernel/debug/sched/preempt`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DebugfsPreempt<'a> {
    /// The model in parentheses; `None` when no word is parenthesised.
    pub current: Option<&'a str>,
    /// Every model listed, parentheses removed, in order.
    pub available: Vec<&'a str>,
}

/// Parses `/sys/kernel/debug/sched/preempt` (`none voluntary (full) lazy`).
pub fn parse_debugfs(text: &str) -> DebugfsPreempt<'_> {
    let mut out = DebugfsPreempt::default();
    for word in text.split_whitespace() {
        match word.strip_prefix('(').and_then(|w| w.strip_suffix(')')) {
            Some(inner) if !inner.is_empty() => {
                out.current = Some(inner);
                out.available.push(inner);
            }
            _ => {
                let bare = word.trim_matches(|c| c == '(' || c == ')');
                if !bare.is_empty() {
                    out.available.push(bare);
                }
            }
        }
    }
    out
}

/// The preemption flags of a kernel version string.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VersionFlags {
    /// `PREEMPT_RT` (or the older `PREEMPT RT`).
    pub rt: bool,
    /// `PREEMPT_DYNAMIC`: the model is chosen at boot or run time.
    pub dynamic: bool,
    /// Any `PREEMPT*` flag: the kernel was built preemptible.
    pub preemptible: bool,
}

impl VersionFlags {
    /// The model the version string alone proves, given the release (`6.1.0-50-rt-arm64`):
    /// `rt` for PREEMPT_RT; `full` for a static `PREEMPT` build before 6.13 (from 6.13 it may
    /// also be `lazy`). `None` when ambiguous: PREEMPT_DYNAMIC, or no flag (none or
    /// voluntary).
    pub fn model(&self, release: &str) -> Option<&'static str> {
        if self.rt {
            Some("rt")
        } else if self.dynamic || !self.preemptible {
            None
        } else {
            release_version(release)
                .filter(|&v| v < (6, 13))
                .map(|_| "full")
        }
    }
}

/// Reads the preemption flags of a version string (`#1 SMP PREEMPT_RT Debian 6.1.176-1`).
pub fn classify_version(version: &str) -> VersionFlags {
    let mut flags = VersionFlags::default();
    let words: Vec<&str> = version.split_whitespace().collect();
    for (i, word) in words.iter().enumerate() {
        match *word {
            "PREEMPT_RT" => flags.rt = true,
            "PREEMPT_DYNAMIC" => flags.dynamic = true,
            "PREEMPT" if words.get(i + 1) == Some(&"RT") => flags.rt = true,
            "PREEMPT" => {}
            _ => continue,
        }
        flags.preemptible = true;
    }
    flags
}

/// The preemption settings of a kernel config.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConfigPreempt {
    /// `rt` when `CONFIG_PREEMPT_RT=y`, else the `Preemption Model` choice (`lazy`, `full`,
    /// `voluntary`, `none`); `None` when the config names none of them.
    pub model: Option<&'static str>,
    /// `CONFIG_PREEMPT_RT=y`.
    pub rt: bool,
    /// `CONFIG_PREEMPT_DYNAMIC=y`: `model` is only the boot default.
    pub dynamic: bool,
}

/// Reads the preemption settings of kernel config text.
pub fn from_config(text: &str) -> ConfigPreempt {
    let rt = kconfig_enabled(text, "CONFIG_PREEMPT_RT");
    // RT kernels of the 6.1 era also set CONFIG_PREEMPT_LAZY (from the RT patch set), so RT
    // is checked first; then the choice symbols, most preemptible first.
    let model = if rt {
        Some("rt")
    } else {
        [
            ("CONFIG_PREEMPT_LAZY", "lazy"),
            ("CONFIG_PREEMPT", "full"),
            ("CONFIG_PREEMPT_VOLUNTARY", "voluntary"),
            ("CONFIG_PREEMPT_NONE", "none"),
        ]
        .iter()
        .find(|(opt, _)| kconfig_enabled(text, opt))
        .map(|(_, model)| *model)
    };
    ConfigPreempt {
        model,
        rt,
        dynamic: kconfig_enabled(text, "CONFIG_PREEMPT_DYNAMIC"),
    }
}

/// The model named by a `preempt=` boot parameter value, when the kernel accepts it
/// (`sched_dynamic_mode()` in kernel/sched/core.c); anything else is ignored at boot.
pub fn boot_param_model(value: &str) -> Option<&'static str> {
    DYNAMIC_MODELS.iter().copied().find(|m| *m == value.trim())
}

/// The major and minor version of a release string (`6.1.0-50-rt-arm64` → `(6, 1)`).
pub fn release_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.trim().split(['.', '-', '+']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines 110-117 and 811-812 of the shared corpus, corpus/kconfig/config-6.1.0-50-rt-arm64
    /// (Debian 12 PREEMPT_RT arm64).
    const DEBIAN_RT_ARM64: &str = "\
CONFIG_HAVE_PREEMPT_LAZY=y
CONFIG_PREEMPT_LAZY=y
# CONFIG_PREEMPT_NONE is not set
# CONFIG_PREEMPT_VOLUNTARY is not set
# CONFIG_PREEMPT is not set
CONFIG_PREEMPT_RT=y
CONFIG_PREEMPT_COUNT=y
CONFIG_PREEMPTION=y
CONFIG_HAVE_PREEMPT_DYNAMIC=y
CONFIG_HAVE_PREEMPT_DYNAMIC_KEY=y
";

    /// Lines 129-135 and 868-869 of the shared corpus, corpus/kconfig/config-6.1.0-56-amd64
    /// (Debian 12 generic amd64).
    const DEBIAN_AMD64: &str = "\
CONFIG_PREEMPT_BUILD=y
# CONFIG_PREEMPT_NONE is not set
CONFIG_PREEMPT_VOLUNTARY=y
# CONFIG_PREEMPT is not set
CONFIG_PREEMPT_COUNT=y
CONFIG_PREEMPTION=y
CONFIG_PREEMPT_DYNAMIC=y
CONFIG_HAVE_PREEMPT_DYNAMIC=y
CONFIG_HAVE_PREEMPT_DYNAMIC_CALL=y
";

    /// Lines 130-138 of this repository's firecracker VM's /proc/config.gz (6.18).
    const FIRECRACKER_6_18: &str = "\
CONFIG_PREEMPT_BUILD=y
CONFIG_ARCH_HAS_PREEMPT_LAZY=y
CONFIG_PREEMPT_NONE=y
# CONFIG_PREEMPT_VOLUNTARY is not set
# CONFIG_PREEMPT is not set
# CONFIG_PREEMPT_LAZY is not set
CONFIG_PREEMPT_COUNT=y
CONFIG_PREEMPTION=y
CONFIG_PREEMPT_DYNAMIC=y
";

    #[test]
    fn config_models() {
        let rt = from_config(DEBIAN_RT_ARM64);
        assert_eq!((rt.model, rt.rt, rt.dynamic), (Some("rt"), true, false));
        let deb = from_config(DEBIAN_AMD64);
        assert_eq!(
            (deb.model, deb.rt, deb.dynamic),
            (Some("voluntary"), false, true)
        );
        let fc = from_config(FIRECRACKER_6_18);
        assert_eq!((fc.model, fc.rt, fc.dynamic), (Some("none"), false, true));
        assert_eq!(from_config("CONFIG_PREEMPT=y\n").model, Some("full"));
        assert_eq!(from_config("CONFIG_PREEMPT_LAZY=y\n").model, Some("lazy"));
        assert_eq!(from_config(""), ConfigPreempt::default());
    }

    #[test]
    fn debugfs_file() {
        let p = parse_debugfs("none voluntary (full) lazy\n");
        assert_eq!(p.current, Some("full"));
        assert_eq!(p.available, ["none", "voluntary", "full", "lazy"]);
        assert_eq!(
            parse_debugfs("(none) voluntary full\n").current,
            Some("none")
        );
        // Malformed or truncated.
        assert_eq!(parse_debugfs(""), DebugfsPreempt::default());
        assert_eq!(parse_debugfs("none (volun").current, None);
        assert_eq!(parse_debugfs("() ( ) (x").available, ["x"]);
    }

    #[test]
    fn version_strings() {
        let rt = classify_version("#1 SMP PREEMPT_RT Debian 6.1.176-1 (2025-07-01)");
        assert!(rt.rt && rt.preemptible && !rt.dynamic);
        assert_eq!(rt.model("6.1.0-50-rt-arm64"), Some("rt"));

        let dy = classify_version("#1 SMP PREEMPT_DYNAMIC @0");
        assert!(dy.dynamic && !dy.rt);
        assert_eq!(dy.model("6.18.44-fc-v445"), None);

        let full = classify_version("#1 SMP PREEMPT Tue Mar 5 10:00:00 UTC 2024");
        assert!(full.preemptible && !full.rt && !full.dynamic);
        assert_eq!(full.model("5.15.0"), Some("full"));
        assert_eq!(full.model("6.14.2"), None, "could be lazy");
        assert_eq!(full.model("garbage"), None);

        let old_rt = classify_version("#1 SMP PREEMPT RT Fri Jul 19 12:00:00 CEST 2019");
        assert!(old_rt.rt);

        let plain = classify_version("#1 SMP Debian 5.10.0-28");
        assert_eq!(plain, VersionFlags::default());
        assert_eq!(plain.model("5.10.0"), None);
        assert_eq!(classify_version(""), VersionFlags::default());
        // A flag-like word inside another word is not a flag.
        assert_eq!(
            classify_version("#1 SMP XPREEMPT_RT"),
            VersionFlags::default()
        );
    }

    #[test]
    fn boot_param_and_release() {
        assert_eq!(boot_param_model("full"), Some("full"));
        assert_eq!(boot_param_model("lazy\n"), Some("lazy"));
        assert_eq!(boot_param_model("rt"), None);
        assert_eq!(boot_param_model(""), None);
        assert_eq!(release_version("6.1.0-50-rt-arm64"), Some((6, 1)));
        assert_eq!(release_version("6.18.44-fc-v445"), Some((6, 18)));
        assert_eq!(release_version("4.19+"), Some((4, 19)));
        assert_eq!(release_version("6"), None);
        assert_eq!(release_version(""), None);
    }
}
