//! Kernel configuration text (`/proc/config.gz` once unpacked, `/boot/config-<release>`):
//! `CONFIG_X=value` lines and `# CONFIG_X is not set` comments. Other comments and blank lines
//! are ignored. Values are returned as written (string values keep their quotes).

/// The value of option `name` (with its `CONFIG_` prefix): `y`, `m`, a number or a quoted
/// string as written; `Some("n")` for `# CONFIG_X is not set`; `None` when the config does
/// not mention it. When an option appears twice the last line wins, as in Kconfig.
pub fn kconfig_value<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let mut found = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix('#') {
            if rest.trim().strip_suffix("is not set").map(str::trim) == Some(name) {
                found = Some("n");
            }
        } else if let Some((key, value)) = line.split_once('=')
            && key.trim() == name
        {
            found = Some(value.trim());
        }
    }
    found
}

/// Whether option `name` is built in or a module (`y` or `m`).
pub fn kconfig_enabled(text: &str, name: &str) -> bool {
    matches!(kconfig_value(text, name), Some("y" | "m"))
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
}
