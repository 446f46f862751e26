//! The Kconfig `choice` blocks that matter for real time: one member is set, the others
//! not, and the diff compares them as one value (`Preemption Model: voluntary -> rt`) rather
//! than as two options that flipped. Sources: `kernel/Kconfig.preempt`, `kernel/Kconfig.hz`,
//! `kernel/time/Kconfig`, `drivers/cpufreq/Kconfig`, `mm/Kconfig`.

use crate::kconfig_diff::options::Importance;

/// One member of a [`Choice`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    /// The option, with its `CONFIG_` prefix.
    pub name: &'static str,
    /// The short value it stands for (`voluntary`, `1000`).
    pub label: &'static str,
    /// What choosing it means.
    pub what: &'static str,
}

/// A Kconfig `choice`: one of its members is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    /// The prompt menuconfig shows (`Preemption Model`).
    pub title: &'static str,
    /// How much a change of it matters.
    pub importance: Importance,
    /// The members, in the order they are tried: the first one set wins (PREEMPT_RT
    /// kernels of the 6.1 era also set PREEMPT_LAZY, so `rt` comes first).
    pub members: &'static [Member],
    /// Options whose value follows from the choice, compared as part of it (`CONFIG_HZ`).
    pub derived: &'static [&'static str],
    /// An option whose value names the choice when no member is set (`CONFIG_HZ=1024` on
    /// an architecture with its own HZ list).
    pub fallback: Option<&'static str>,
    /// A unit appended to labels in notes (`Hz`).
    pub unit: &'static str,
}

impl Choice {
    /// The member set in a config, given a lookup from option name to value.
    pub fn selected<'v>(&self, value: impl Fn(&str) -> Option<&'v str>) -> Option<&'static Member> {
        self.members
            .iter()
            .find(|m| sys::parse::kconfig::is_enabled(value(m.name)))
    }

    /// The choice's value in a config: the selected member's label, else the fallback
    /// option's value; `None` when neither is set.
    pub fn label<'v>(&self, value: impl Fn(&str) -> Option<&'v str>) -> Option<String> {
        if let Some(m) = self.selected(&value) {
            return Some(m.label.to_string());
        }
        self.fallback
            .and_then(&value)
            .filter(|v| *v != sys::parse::kconfig::NOT_SET && !v.is_empty())
            .map(str::to_string)
    }

    /// Every option this choice covers: members, derived options and the fallback.
    pub fn covers(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.members
            .iter()
            .map(|m| m.name)
            .chain(self.derived.iter().copied())
            .chain(self.fallback)
    }
}

/// The `Preemption Model` choice.
pub const PREEMPTION: Choice = Choice {
    title: "Preemption Model",
    importance: Importance::Critical,
    members: &[
        Member {
            name: "CONFIG_PREEMPT_RT",
            label: "rt",
            what: "fully preemptible (PREEMPT_RT): sleeping spinlocks, threaded IRQs, bounded latency",
        },
        Member {
            name: "CONFIG_PREEMPT_RT_FULL",
            label: "rt",
            what: "fully preemptible (the RT patch set before 5.3)",
        },
        Member {
            name: "CONFIG_PREEMPT_LAZY",
            label: "lazy",
            what: "preemptible, SCHED_OTHER preemption deferred to the tick",
        },
        Member {
            name: "CONFIG_PREEMPT",
            label: "full",
            what: "preemptible outside spinlock and IRQs-off sections, no latency bound",
        },
        Member {
            name: "CONFIG_PREEMPT_VOLUNTARY",
            label: "voluntary",
            what: "preemption only at explicit points in kernel code",
        },
        Member {
            name: "CONFIG_PREEMPT_NONE",
            label: "none",
            what: "no forced preemption in the kernel",
        },
    ],
    derived: &[
        "CONFIG_PREEMPT_BUILD",
        "CONFIG_PREEMPTION",
        "CONFIG_PREEMPT_COUNT",
        "CONFIG_PREEMPT_RCU",
    ],
    fallback: None,
    unit: "",
};

/// The `Timer frequency` choice (`CONFIG_HZ_*`, with `CONFIG_HZ` following it).
pub const TIMER_FREQUENCY: Choice = Choice {
    title: "Timer frequency",
    importance: Importance::Critical,
    members: &[
        Member {
            name: "CONFIG_HZ_100",
            label: "100",
            what: "a 10 ms tick",
        },
        Member {
            name: "CONFIG_HZ_250",
            label: "250",
            what: "a 4 ms tick",
        },
        Member {
            name: "CONFIG_HZ_300",
            label: "300",
            what: "a 3.3 ms tick",
        },
        Member {
            name: "CONFIG_HZ_1000",
            label: "1000",
            what: "a 1 ms tick",
        },
    ],
    derived: &[],
    fallback: Some("CONFIG_HZ"),
    unit: "Hz",
};

/// The `Timer tick handling` choice.
pub const TICK: Choice = Choice {
    title: "Timer tick handling",
    importance: Importance::Critical,
    members: &[
        Member {
            name: "CONFIG_NO_HZ_FULL",
            label: "full",
            what: "the tick can stop on busy nohz_full= CPUs",
        },
        Member {
            name: "CONFIG_NO_HZ_IDLE",
            label: "idle",
            what: "the tick stops on idle CPUs only",
        },
        Member {
            name: "CONFIG_HZ_PERIODIC",
            label: "periodic",
            what: "the tick runs on every CPU, idle or not",
        },
    ],
    derived: &[
        "CONFIG_NO_HZ_COMMON",
        "CONFIG_NO_HZ",
        "CONFIG_VIRT_CPU_ACCOUNTING_GEN",
        "CONFIG_CONTEXT_TRACKING_USER",
    ],
    fallback: None,
    unit: "",
};

/// The `Default CPUFreq governor` choice.
pub const CPUFREQ_GOVERNOR: Choice = Choice {
    title: "Default CPUFreq governor",
    importance: Importance::High,
    members: &[
        Member {
            name: "CONFIG_CPU_FREQ_DEFAULT_GOV_PERFORMANCE",
            label: "performance",
            what: "CPUs boot at their highest frequency",
        },
        Member {
            name: "CONFIG_CPU_FREQ_DEFAULT_GOV_SCHEDUTIL",
            label: "schedutil",
            what: "the frequency follows the scheduler's utilisation estimate",
        },
        Member {
            name: "CONFIG_CPU_FREQ_DEFAULT_GOV_ONDEMAND",
            label: "ondemand",
            what: "the frequency follows sampled load",
        },
        Member {
            name: "CONFIG_CPU_FREQ_DEFAULT_GOV_CONSERVATIVE",
            label: "conservative",
            what: "the frequency follows sampled load in small steps",
        },
        Member {
            name: "CONFIG_CPU_FREQ_DEFAULT_GOV_POWERSAVE",
            label: "powersave",
            what: "CPUs boot at their lowest frequency",
        },
        Member {
            name: "CONFIG_CPU_FREQ_DEFAULT_GOV_USERSPACE",
            label: "userspace",
            what: "a user-space daemon sets the frequency",
        },
    ],
    derived: &[],
    fallback: None,
    unit: "",
};

/// The `Transparent Hugepage Support sysfs defaults` choice.
pub const THP_DEFAULT: Choice = Choice {
    title: "Transparent Hugepage default",
    importance: Importance::Other,
    members: &[
        Member {
            name: "CONFIG_TRANSPARENT_HUGEPAGE_ALWAYS",
            label: "always",
            what: "huge pages for every anonymous mapping, with compaction and khugepaged stalls",
        },
        Member {
            name: "CONFIG_TRANSPARENT_HUGEPAGE_MADVISE",
            label: "madvise",
            what: "huge pages only where madvise() asks",
        },
        Member {
            name: "CONFIG_TRANSPARENT_HUGEPAGE_NEVER",
            label: "never",
            what: "no transparent huge pages unless enabled in sysfs",
        },
    ],
    derived: &[],
    fallback: None,
    unit: "",
};

/// Every choice, most important first.
pub const CHOICES: &[Choice] = &[
    PREEMPTION,
    TIMER_FREQUENCY,
    TICK,
    CPUFREQ_GOVERNOR,
    THP_DEFAULT,
];

/// The choice `name` is a member, derived option or fallback of, when it is one.
pub fn choice_of(name: &str) -> Option<&'static Choice> {
    CHOICES.iter().find(|c| c.covers().any(|n| n == name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_read_the_member_set() {
        let config =
            "# CONFIG_PREEMPT_NONE is not set\nCONFIG_PREEMPT_VOLUNTARY=y\nCONFIG_HZ=1024\n";
        let map = sys::parse::kconfig::to_map(config);
        let value = |n: &str| map.get(n).copied();
        assert_eq!(PREEMPTION.label(value).as_deref(), Some("voluntary"));
        // No HZ_* member set: the fallback CONFIG_HZ names the value.
        assert_eq!(TIMER_FREQUENCY.label(value).as_deref(), Some("1024"));
        assert_eq!(TICK.label(value), None);
        assert_eq!(
            choice_of("CONFIG_HZ").map(|c| c.title),
            Some("Timer frequency")
        );
        assert_eq!(
            choice_of("CONFIG_PREEMPTION").map(|c| c.title),
            Some("Preemption Model")
        );
        assert_eq!(choice_of("CONFIG_KASAN"), None);
        // PREEMPT_RT kernels of the 6.1 era also set PREEMPT_LAZY: rt wins.
        let rt = sys::parse::kconfig::to_map("CONFIG_PREEMPT_LAZY=y\nCONFIG_PREEMPT_RT=y\n");
        assert_eq!(
            PREEMPTION.label(|n| rt.get(n).copied()).as_deref(),
            Some("rt")
        );
    }
}
