//! Kernel configuration text (`/proc/config.gz` once unpacked, `/boot/config-<release>`):
//! `CONFIG_X=value` lines and `# CONFIG_X is not set` comments. Other comments and blank lines
//! are ignored, except the header comment naming the architecture and version
//! (`# Linux/x86 6.1.192 Kernel Configuration`). Values are returned as written (string
//! values keep their quotes).

use std::collections::HashMap;

/// The value an option marked `# CONFIG_X is not set` reads as.
pub const NOT_SET: &str = "n";

/// One option line: `CONFIG_X=value` gives `("CONFIG_X", "value")`, `# CONFIG_X is not set`
/// gives `("CONFIG_X", "n")`. `None` for blank lines, other comments and lines whose name
/// is empty or contains blanks: tolerated on purpose, as Kconfig's own reader does, because
/// a config file is often edited by hand and a stray line must not hide the options around it.
pub fn entry(line: &str) -> Option<(&str, &str)> {
    let line = line.trim();
    let (name, value) = if let Some(rest) = line.strip_prefix('#') {
        (rest.trim().strip_suffix("is not set")?.trim(), NOT_SET)
    } else {
        let (key, value) = line.split_once('=')?;
        (key.trim(), value.trim())
    };
    let plain = !name.is_empty() && !name.contains(char::is_whitespace);
    plain.then_some((name, value))
}

/// Every option line of `text`, in file order (an option written twice appears twice).
pub fn entries(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.lines().filter_map(entry)
}

/// Whether `text` holds at least one kernel option (`CONFIG_X=...` or `# CONFIG_X is not
/// set`): what tells a config from an empty or unrelated file.
pub fn looks_like_config(text: &str) -> bool {
    entries(text).any(|(name, _)| name.starts_with("CONFIG_") && name.len() > "CONFIG_".len())
}

/// Every option of `text` with its value, the last line winning as in Kconfig.
pub fn to_map(text: &str) -> HashMap<&str, &str> {
    entries(text).collect()
}

/// The value of option `name` (with its `CONFIG_` prefix): `y`, `m`, a number or a quoted
/// string as written; `Some("n")` for `# CONFIG_X is not set`; `None` when the config does
/// not mention it. When an option appears twice the last line wins, as in Kconfig.
pub fn kconfig_value<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    entries(text)
        .filter(|(key, _)| *key == name)
        .last()
        .map(|(_, value)| value)
}

/// Whether option `name` is built in or a module (`y` or `m`).
pub fn kconfig_enabled(text: &str, name: &str) -> bool {
    matches!(kconfig_value(text, name), Some("y" | "m"))
}

/// Whether a value (as [`kconfig_value`] returns it) means the option is on: `y` or `m`.
pub fn is_enabled(value: Option<&str>) -> bool {
    matches!(value, Some("y" | "m"))
}

/// The header comment `make` writes at the top of a config.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header<'a> {
    /// The kernel's architecture directory name (`x86`, `arm64`, `riscv`).
    pub arch: &'a str,
    /// The kernel version the config was made for (`6.1.176`).
    pub version: &'a str,
}

/// Reads the `# Linux/<arch> <version> Kernel Configuration` header from the first comment
/// lines of `text`; `None` when no such line comes before the first option.
pub fn header(text: &str) -> Option<Header<'_>> {
    for line in text.lines() {
        let line = line.trim();
        if !line.starts_with('#') {
            if line.is_empty() {
                continue;
            }
            return None;
        }
        let words: Vec<&str> = line.trim_start_matches('#').split_whitespace().collect();
        if let [linux_arch, version, "Kernel", "Configuration"] = words[..]
            && let Some(arch) = linux_arch.strip_prefix("Linux/")
            && !arch.is_empty()
        {
            return Some(Header { arch, version });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines 1-8 and 129-135 of the shared corpus, corpus/kconfig/config-6.1.0-56-amd64 (Debian 12).
    const DEBIAN_AMD64: &str = "\
#
# Automatically generated file; DO NOT EDIT.
# Linux/x86 6.1.192 Kernel Configuration
#
CONFIG_CC_VERSION_TEXT=\"gcc-12 (Debian 12.2.0-14+deb12u1) 12.2.0\"
CONFIG_CC_IS_GCC=y
CONFIG_GCC_VERSION=120200
CONFIG_CLANG_VERSION=0
CONFIG_PREEMPT_BUILD=y
# CONFIG_PREEMPT_NONE is not set
CONFIG_PREEMPT_VOLUNTARY=y
# CONFIG_PREEMPT is not set
CONFIG_PREEMPT_COUNT=y
CONFIG_PREEMPTION=y
CONFIG_PREEMPT_DYNAMIC=y
";

    #[test]
    fn values_not_set_and_absent() {
        let t = DEBIAN_AMD64;
        assert_eq!(kconfig_value(t, "CONFIG_PREEMPT_VOLUNTARY"), Some("y"));
        assert_eq!(kconfig_value(t, "CONFIG_PREEMPT"), Some("n"));
        assert_eq!(kconfig_value(t, "CONFIG_PREEMPT_NONE"), Some("n"));
        assert_eq!(kconfig_value(t, "CONFIG_PREEMPT_RT"), None);
        assert_eq!(kconfig_value(t, "CONFIG_GCC_VERSION"), Some("120200"));
        assert_eq!(
            kconfig_value(t, "CONFIG_CC_VERSION_TEXT"),
            Some("\"gcc-12 (Debian 12.2.0-14+deb12u1) 12.2.0\"")
        );
        // A prefix of another option's name is not that option.
        assert_eq!(kconfig_value(t, "CONFIG_PREEMPT_DYN"), None);
        assert!(kconfig_enabled(t, "CONFIG_PREEMPT_DYNAMIC"));
        assert!(!kconfig_enabled(t, "CONFIG_PREEMPT"));
        assert!(kconfig_enabled("CONFIG_E1000=m\n", "CONFIG_E1000"));
    }

    #[test]
    fn last_line_wins_and_junk_is_ignored() {
        let t = "CONFIG_HZ=100\n# CONFIG_HZ is not set\nCONFIG_HZ=250\n";
        assert_eq!(kconfig_value(t, "CONFIG_HZ"), Some("250"));
        let t = "CONFIG_A=y\n# CONFIG_A is not set\n";
        assert_eq!(kconfig_value(t, "CONFIG_A"), Some("n"));
        for junk in [
            "",
            "=",
            "#",
            "# is not set",
            "CONFIG_A",
            "CONFIG_A=",
            "\u{0}\u{ff}",
        ] {
            let _ = kconfig_value(junk, "CONFIG_A");
        }
        assert_eq!(kconfig_value("CONFIG_A=", "CONFIG_A"), Some(""));
        // Truncated mid-line.
        assert_eq!(kconfig_value("CONFIG_B=y\nCONFIG_A", "CONFIG_A"), None);
    }

    #[test]
    fn entries_in_order_and_map_last_wins() {
        let all: Vec<_> = entries(DEBIAN_AMD64).collect();
        assert_eq!(all.len(), 11);
        assert_eq!(
            all[0],
            (
                "CONFIG_CC_VERSION_TEXT",
                "\"gcc-12 (Debian 12.2.0-14+deb12u1) 12.2.0\""
            )
        );
        assert_eq!(all[5], ("CONFIG_PREEMPT_NONE", "n"));
        assert_eq!(all[10], ("CONFIG_PREEMPT_DYNAMIC", "y"));
        let map = to_map("CONFIG_HZ=100\n# CONFIG_HZ is not set\nCONFIG_HZ=250\nCONFIG_E1000=m\n");
        assert_eq!(map.get("CONFIG_HZ"), Some(&"250"));
        assert_eq!(map.get("CONFIG_E1000"), Some(&"m"));
        assert_eq!(map.len(), 2);
        assert!(is_enabled(map.get("CONFIG_E1000").copied()));
        assert!(!is_enabled(Some(NOT_SET)));
        assert!(!is_enabled(None));
    }

    #[test]
    fn entry_rejects_comments_and_blank_names() {
        assert_eq!(entry("  CONFIG_A = y "), Some(("CONFIG_A", "y")));
        assert_eq!(entry("#CONFIG_A is not set"), Some(("CONFIG_A", "n")));
        for junk in [
            "",
            "#",
            "# Automatically generated file; DO NOT EDIT.",
            "# General setup",
            "# is not set",
            "# two words is not set",
            "=y",
            "A B=y",
            "CONFIG_A",
        ] {
            assert_eq!(entry(junk), None, "{junk:?}");
        }
    }

    #[test]
    fn header_names_arch_and_version() {
        assert_eq!(
            header(DEBIAN_AMD64),
            Some(Header {
                arch: "x86",
                version: "6.1.192"
            })
        );
        // Line 3 of corpus/kconfig/config-6.1.0-50-rt-arm64.
        let rt = "#\n# Automatically generated file; DO NOT EDIT.\n# Linux/arm64 6.1.176 Kernel Configuration\n#\n";
        assert_eq!(
            header(rt).map(|h| (h.arch, h.version)),
            Some(("arm64", "6.1.176"))
        );
        // No header, a header after the first option, malformed headers.
        assert_eq!(
            header("CONFIG_A=y\n# Linux/x86 6.1 Kernel Configuration\n"),
            None
        );
        for junk in [
            "",
            "#",
            "# Linux/ 6.1 Kernel Configuration",
            "# Linux/x86 Kernel Configuration",
            "# Linux/x86 6.1 Kernel",
            "# Linux x86 6.1 Kernel Configuration",
            "\u{0}# Linux/x86 6.1 Kernel Configuration",
        ] {
            assert_eq!(header(junk), None, "{junk:?}");
        }
    }
}
