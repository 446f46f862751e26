//! The real-time-relevant differences between two kernel configs (`rtlab kconfig diff OLD
//! NEW`), most important first: the RT-Summit 2017 talk's tip #1, check the config after a kernel upgrade.
//!
//! Data only: [`diff`] returns a [`Diff`]; the CLI renders it. What counts as relevant, and
//! why, is the table in [`options`] and [`choices`], shared with the `kconfig.*` audit checks. Kconfig treats
//! an absent option and `# CONFIG_X is not set` alike (both off), and so does the diff.

pub mod choices;
pub mod options;

use std::collections::{BTreeSet, HashMap, HashSet};

use serde::Serialize;
use sys::parse::kconfig::{self, NOT_SET};

use choices::{CHOICES, Choice};
pub use options::Importance;
use options::{OPTIONS, RtOption};

/// One real-time-relevant difference.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Change {
    /// The option (`CONFIG_NO_HZ_FULL`) or, for a Kconfig choice, its prompt
    /// (`Preemption Model`, `Timer frequency`).
    pub name: String,
    /// The config options behind the change, each with its `CONFIG_` prefix (for a choice,
    /// every member and derived option whose value changed).
    pub options: Vec<String>,
    /// The value before: as written (`y`, `m`, `250`), or for a choice the label of the
    /// member set (`voluntary`, `1000`); `None` when not set.
    pub old: Option<String>,
    /// The value after, in the same form.
    pub new: Option<String>,
    /// How much it matters.
    pub importance: Importance,
    /// What the change means, one line (`1000 -> 250 Hz: the tick and jiffy timeouts 1 ms
    /// -> 4 ms`).
    pub note: String,
}

/// The kernel a config was made for, from its header comment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ConfigKernel {
    /// Architecture directory name (`x86`, `arm64`).
    pub arch: String,
    /// Kernel version (`6.1.176`).
    pub version: String,
}

/// The differences between two configs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diff {
    /// The old config's kernel, when its header names one.
    pub old_kernel: Option<ConfigKernel>,
    /// The new config's kernel, when its header names one.
    pub new_kernel: Option<ConfigKernel>,
    /// The real-time-relevant changes, most important first.
    pub changes: Vec<Change>,
    /// How many other options differ (set, unset or changed value).
    pub other_changed: usize,
    /// What makes the comparison doubtful, one line each: configs for two architectures.
    pub warnings: Vec<String>,
}

/// The real-time-relevant differences from config text `old` to config text `new`. Never
/// fails: malformed lines are ignored, as [`sys::parse::kconfig`] reads them.
pub fn diff(old: &str, new: &str) -> Diff {
    let before = Values::of(old);
    let after = Values::of(new);
    let mut changes = Vec::new();
    let mut covered: HashSet<&str> = HashSet::new();
    for choice in CHOICES {
        covered.extend(choice.covers());
        if let Some(change) = choice_change(choice, &before, &after) {
            changes.push(change);
        }
    }
    for option in OPTIONS {
        covered.insert(option.name);
        if let Some(change) = option_change(option, &before, &after) {
            changes.push(change);
        }
    }
    // Choices come before options of the same importance; the sort is stable.
    changes.sort_by_key(|c| c.importance);

    let names: BTreeSet<&str> = before.0.keys().chain(after.0.keys()).copied().collect();
    let other_changed = names
        .into_iter()
        .filter(|n| !covered.contains(n) && before.get(n) != after.get(n))
        .count();
    let warnings = arch_warning(arch_of(old, &before), arch_of(new, &after))
        .into_iter()
        .collect();
    Diff {
        old_kernel: config_kernel(old),
        new_kernel: config_kernel(new),
        changes,
        other_changed,
        warnings,
    }
}

/// The options that say which architecture a config is for, when its header does not
/// (`make savedefconfig` output, hand-trimmed configs), with the architecture directory name.
const ARCH_OPTIONS: &[(&str, &str)] = &[
    ("CONFIG_X86", "x86"),
    ("CONFIG_ARM64", "arm64"),
    ("CONFIG_ARM", "arm"),
    ("CONFIG_RISCV", "riscv"),
    ("CONFIG_PPC", "powerpc"),
    ("CONFIG_S390", "s390"),
    ("CONFIG_MIPS", "mips"),
    ("CONFIG_LOONGARCH", "loongarch"),
];

/// A config's architecture: its header's, else the first architecture option set.
fn arch_of(text: &str, values: &Values) -> Option<String> {
    kconfig::header(text)
        .map(|h| h.arch.to_string())
        .or_else(|| {
            ARCH_OPTIONS
                .iter()
                .find(|(name, _)| values.get(name) == Some("y"))
                .map(|(_, arch)| arch.to_string())
        })
}

/// The warning when both architectures are known and differ.
fn arch_warning(old: Option<String>, new: Option<String>) -> Option<String> {
    let (old, new) = (old?, new?);
    (old != new).then(|| {
        format!(
            "the configs are for different architectures ({old} -> {new}): options that exist \
             on one only show as set or unset, so compare configs of one architecture"
        )
    })
}

/// A config's options with `# ... is not set` folded into absence.
struct Values<'a>(HashMap<&'a str, &'a str>);

impl<'a> Values<'a> {
    fn of(text: &'a str) -> Values<'a> {
        let mut map = kconfig::to_map(text);
        map.retain(|_, v| *v != NOT_SET);
        Values(map)
    }

    fn get(&self, name: &str) -> Option<&'a str> {
        self.0.get(name).copied()
    }
}

fn config_kernel(text: &str) -> Option<ConfigKernel> {
    kconfig::header(text).map(|h| ConfigKernel {
        arch: h.arch.to_string(),
        version: h.version.to_string(),
    })
}

fn choice_change(choice: &Choice, before: &Values, after: &Values) -> Option<Change> {
    let old = choice.label(|n| before.get(n));
    let new = choice.label(|n| after.get(n));
    if old == new {
        return None;
    }
    let options = choice
        .covers()
        .filter(|n| before.get(n) != after.get(n))
        .map(str::to_string)
        .collect();
    Some(Change {
        name: choice.title.to_string(),
        options,
        note: choice_note(choice, old.as_deref(), new.as_deref()),
        old,
        new,
        importance: choice.importance,
    })
}

fn choice_note(choice: &Choice, old: Option<&str>, new: Option<&str>) -> String {
    let shown = |label: Option<&str>| match (label, choice.unit) {
        (None, _) => "not set".to_string(),
        (Some(l), "") => l.to_string(),
        (Some(l), unit) => format!("{l} {unit}"),
    };
    let transition = format!("{} -> {}", shown(old), shown(new));
    if choice.unit == "Hz" {
        let period = |label: Option<&str>| {
            let hz = label?.parse::<u32>().ok().filter(|&hz| hz > 0)?;
            Some(tick_period(hz))
        };
        return match (period(old), period(new)) {
            (Some(a), Some(b)) => format!("{transition}: the tick and jiffy timeouts {a} -> {b}"),
            (Some(a), None) => format!("{transition}: the tick was {a}"),
            (None, Some(b)) => format!("{transition}: the tick is {b}"),
            (None, None) => transition,
        };
    }
    let what = |label: Option<&str>| {
        let label = label?;
        choice
            .members
            .iter()
            .find(|m| m.label == label)
            .map(|m| m.what)
    };
    match (what(old), what(new)) {
        (Some(a), Some(b)) => format!("{transition}: {a} -> {b}"),
        (None, Some(b)) => format!("{transition}: {b}"),
        (Some(a), None) => format!("{transition}: no longer {a}"),
        (None, None) => transition,
    }
}

/// The tick period of `hz` in words (`4 ms`, `3.3 ms`).
fn tick_period(hz: u32) -> String {
    if 1000 % hz == 0 {
        format!("{} ms", 1000 / hz)
    } else {
        format!("{:.1} ms", 1000.0 / f64::from(hz))
    }
}

fn option_change(option: &RtOption, before: &Values, after: &Values) -> Option<Change> {
    let old = before.get(option.name);
    let new = after.get(option.name);
    if old == new {
        return None;
    }
    let on = |v: Option<&str>| kconfig::is_enabled(v);
    let boolish = |v: Option<&str>| matches!(v, None | Some("y" | "m"));
    let note = if boolish(old) && boolish(new) {
        match (on(old), on(new), new) {
            (false, true, _) => format!("enabled: {}", option.what),
            (true, false, _) => format!("disabled: {}", option.what),
            (_, _, Some("m")) => format!("built in -> module: {}", option.what),
            _ => format!("module -> built in: {}", option.what),
        }
    } else {
        format!(
            "{} -> {}: {}",
            old.unwrap_or("not set"),
            new.unwrap_or("not set"),
            option.what
        )
    };
    Some(Change {
        name: option.name.to_string(),
        options: vec![option.name.to_string()],
        old: old.map(str::to_string),
        new: new.map(str::to_string),
        importance: option.importance,
        note,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RT_ARM64: &str = include_str!("../../../../fixtures/kconfig/config-6.1.0-50-rt-arm64");
    const AMD64: &str = include_str!("../../../../fixtures/kconfig/config-6.1.0-56-amd64");

    fn find<'d>(d: &'d Diff, name: &str) -> &'d Change {
        d.changes
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no change {name} in {:#?}", d.changes))
    }

    #[test]
    fn configs_for_two_architectures_warn_once_naming_both() {
        let d = diff(AMD64, RT_ARM64);
        assert_eq!(d.warnings.len(), 1, "{:?}", d.warnings);
        assert!(
            d.warnings[0].contains("(x86 -> arm64)"),
            "{}",
            d.warnings[0]
        );
        assert!(diff(AMD64, AMD64).warnings.is_empty());
        assert!(diff(RT_ARM64, RT_ARM64).warnings.is_empty());
        // Without headers, the architecture options tell.
        let bare = |arch: &str| format!("CONFIG_{arch}=y\nCONFIG_PREEMPT_RT=y\n");
        let d = diff(&bare("X86"), &bare("ARM64"));
        assert_eq!(d.warnings.len(), 1);
        assert!(d.warnings[0].contains("(x86 -> arm64)"));
        assert!(diff(&bare("X86"), &bare("X86")).warnings.is_empty());
        // An unknown architecture is no reason to warn.
        assert!(diff("CONFIG_HZ=250\n", &bare("ARM64")).warnings.is_empty());
    }

    #[test]
    fn generic_amd64_to_rt_arm64() {
        let d = diff(AMD64, RT_ARM64);
        assert_eq!(
            d.old_kernel,
            Some(ConfigKernel {
                arch: "x86".into(),
                version: "6.1.192".into()
            })
        );
        assert_eq!(
            d.new_kernel.as_ref().map(|k| k.arch.as_str()),
            Some("arm64")
        );

        let p = find(&d, "Preemption Model");
        assert_eq!(
            (p.old.as_deref(), p.new.as_deref()),
            (Some("voluntary"), Some("rt"))
        );
        assert_eq!(p.importance, Importance::Critical);
        assert!(
            p.options.contains(&"CONFIG_PREEMPT_RT".to_string()),
            "{p:?}"
        );
        assert!(p.options.contains(&"CONFIG_PREEMPT_VOLUNTARY".to_string()));
        assert!(p.note.starts_with("voluntary -> rt: "), "{}", p.note);
        // The first change is the preemption model: most important first.
        assert_eq!(d.changes[0].name, "Preemption Model");

        let dy = find(&d, "CONFIG_PREEMPT_DYNAMIC");
        assert_eq!((dy.old.as_deref(), dy.new.as_deref()), (Some("y"), None));
        assert!(dy.note.starts_with("disabled: "), "{}", dy.note);

        for tracer in [
            "CONFIG_TIMERLAT_TRACER",
            "CONFIG_OSNOISE_TRACER",
            "CONFIG_HWLAT_TRACER",
            "CONFIG_SCHED_TRACER",
        ] {
            let t = find(&d, tracer);
            assert_eq!((t.old.as_deref(), t.new.as_deref()), (None, Some("y")));
            assert_eq!(t.importance, Importance::High);
        }
        let rb = find(&d, "CONFIG_RCU_BOOST");
        assert!(
            rb.note.starts_with("enabled: RCU priority boosting"),
            "{}",
            rb.note
        );
        // THP is not offered on this RT kernel: the default and the option both go.
        let thp = find(&d, "Transparent Hugepage default");
        assert_eq!(
            (thp.old.as_deref(), thp.new.as_deref()),
            (Some("always"), None)
        );
        assert_eq!(
            find(&d, "CONFIG_TRANSPARENT_HUGEPAGE").importance,
            Importance::Other
        );

        // Both are HZ=250 with NO_HZ_FULL, HIGH_RES_TIMERS and schedutil by default.
        for same in [
            "Timer frequency",
            "Timer tick handling",
            "Default CPUFreq governor",
            "CONFIG_HIGH_RES_TIMERS",
            "CONFIG_RCU_NOCB_CPU",
            "CONFIG_CPUSETS",
            // Present in both as "# ... is not set".
            "CONFIG_PROVE_LOCKING",
            // Not set in one, absent in the other: the same to Kconfig.
            "CONFIG_DEBUG_MUTEXES",
        ] {
            assert!(d.changes.iter().all(|c| c.name != same), "{same} reported");
        }
        assert!(
            d.changes
                .windows(2)
                .all(|w| w[0].importance <= w[1].importance),
            "not sorted"
        );
        // Two distro configs for different architectures differ in thousands of options.
        assert!(d.other_changed > 1000, "{}", d.other_changed);

        // The reverse diff has the same changes, old and new swapped.
        let r = diff(RT_ARM64, AMD64);
        assert_eq!(r.changes.len(), d.changes.len());
        assert_eq!(r.other_changed, d.other_changed);
        let p = find(&r, "Preemption Model");
        assert_eq!(
            (p.old.as_deref(), p.new.as_deref()),
            (Some("rt"), Some("voluntary"))
        );
    }

    #[test]
    fn identical_configs_do_not_differ() {
        let d = diff(RT_ARM64, RT_ARM64);
        assert!(d.changes.is_empty());
        assert_eq!(d.other_changed, 0);
    }

    #[test]
    fn hz_choice_reads_as_one_change() {
        let old = "CONFIG_HZ_1000=y\n# CONFIG_HZ_250 is not set\nCONFIG_HZ=1000\n";
        let new = "# CONFIG_HZ_1000 is not set\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n";
        let d = diff(old, new);
        assert_eq!(d.changes.len(), 1, "{:#?}", d.changes);
        let c = &d.changes[0];
        assert_eq!(c.name, "Timer frequency");
        assert_eq!(
            (c.old.as_deref(), c.new.as_deref()),
            (Some("1000"), Some("250"))
        );
        assert_eq!(
            c.note,
            "1000 Hz -> 250 Hz: the tick and jiffy timeouts 1 ms -> 4 ms"
        );
        assert_eq!(c.options, ["CONFIG_HZ_250", "CONFIG_HZ_1000", "CONFIG_HZ"]);
        assert_eq!(d.other_changed, 0);
        let d = diff("CONFIG_HZ_300=y\n", "CONFIG_HZ=1024\n");
        assert_eq!(
            d.changes[0].note,
            "300 Hz -> 1024 Hz: the tick and jiffy timeouts 3.3 ms -> 1.0 ms"
        );
    }

    #[test]
    fn option_values_and_other_counts() {
        let old = "CONFIG_KASAN=y\nCONFIG_CPU_IDLE=m\nCONFIG_LOCALVERSION=\"-a\"\nCONFIG_X=y\n";
        let new = "# CONFIG_KASAN is not set\nCONFIG_CPU_IDLE=y\nCONFIG_LOCALVERSION=\"-b\"\n# CONFIG_X is not set\nCONFIG_NEW=m\n";
        let d = diff(old, new);
        let k = find(&d, "CONFIG_KASAN");
        assert_eq!(k.importance, Importance::Debug);
        assert!(k.note.starts_with("disabled: KASAN"), "{}", k.note);
        assert!(
            find(&d, "CONFIG_CPU_IDLE")
                .note
                .starts_with("module -> built in: ")
        );
        // LOCALVERSION, X and NEW.
        assert_eq!(d.other_changed, 3);
        assert_eq!((d.old_kernel.as_ref(), d.new_kernel.as_ref()), (None, None));
    }

    #[test]
    fn malformed_input_gives_no_panic() {
        for (a, b) in [
            ("", ""),
            ("=\n#\n# is not set\n", "CONFIG_HZ=\nCONFIG_HZ_1000"),
            ("\u{0}\u{ff}CONFIG_A=y", "CONFIG_HZ=0\n"),
            ("CONFIG_HZ_1000=y\n", ""),
        ] {
            let d = diff(a, b);
            let _ = diff(b, a);
            assert!(d.changes.iter().all(|c| !c.note.is_empty()));
        }
        let d = diff("CONFIG_HZ_1000=y\n", "");
        assert_eq!(d.changes[0].note, "1000 Hz -> not set: the tick was 1 ms");
        let d = diff("", "CONFIG_HZ=0\n");
        assert_eq!(d.changes[0].note, "not set -> 0 Hz");
    }

    #[test]
    fn diff_serialises() {
        let d = diff("CONFIG_PREEMPT_VOLUNTARY=y\n", "CONFIG_PREEMPT_RT=y\n");
        let json = serde_json::to_value(&d).unwrap();
        assert_eq!(json["changes"][0]["importance"], "critical");
        assert_eq!(json["changes"][0]["new"], "rt");
        assert_eq!(json["other_changed"], 0);
    }
}
