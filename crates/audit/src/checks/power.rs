//! CPU power management on the real-time CPUs (every online CPU when none is set apart):
//! the cpufreq governor and frequency range, cpuidle states and their exit latencies, and the
//! Intel/AMD P-state drivers.

use std::collections::BTreeMap;

use model::CpuSet;
use model::audit::{Group, Severity};

use crate::check::Check;
use crate::context::Ctx;
use crate::outcome::Outcome;

/// Idle states whose exit latency exceeds this are flagged on RT CPUs: above it a wake-up
/// from idle alone costs more than a tuned system's whole budget share.
pub(crate) const IDLE_LATENCY_LIMIT_US: u64 = 10;

/// The checks of this group.
pub(crate) const CHECKS: &[Check] = &[
    Check {
        id: "power.governor",
        title: "cpufreq governor",
        group: Group::Power,
        severity: Severity::Warn,
        why: "a scaling governor changes the clock under the RT thread: the first cycles after a wake-up run slow and frequency transitions stall the core",
        run: governor,
    },
    Check {
        id: "power.frequency_range",
        title: "CPU frequency range",
        group: Group::Power,
        severity: Severity::Warn,
        why: "with min below max the clock still moves, and a capped maximum makes every code path slower than measured elsewhere",
        run: frequency_range,
    },
    Check {
        id: "power.cpuidle",
        title: "deep idle states",
        group: Group::Power,
        severity: Severity::Warn,
        why: "waking from a deep C-state adds its exit latency (tens to hundreds of microseconds) to every wake-up that finds the CPU idle",
        run: cpuidle,
    },
    Check {
        id: "power.pstate",
        title: "P-state driver",
        group: Group::Power,
        severity: Severity::Info,
        why: "intel_pstate and amd_pstate in active mode let the hardware pick the frequency, and turbo makes the clock depend on the other cores' load",
        run: pstate,
    },
];

/// The CPUs power checks look at, and what kind they are (`RT` or `online`).
fn target_cpus(ctx: &Ctx) -> (CpuSet, &'static str) {
    let rt = &ctx.rt().cpus;
    if rt.is_empty() {
        (ctx.online().clone(), "online")
    } else {
        (rt.clone(), "RT")
    }
}

/// `RT CPU 3`, `RT CPUs 2-7`, `online CPUs 0-1`.
fn named(what: &str, cpus: &CpuSet) -> String {
    let noun = if cpus.len() == 1 { "CPU" } else { "CPUs" };
    format!("{what} {noun} {cpus}")
}

fn cpufreq_dir(cpu: u32) -> String {
    format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq")
}

/// Groups per-CPU values: `value -> CPUs`, rendered `cpu0-3: powersave; cpu4-7: performance`.
fn by_value(values: &BTreeMap<u32, String>) -> String {
    let mut groups: BTreeMap<&str, CpuSet> = BTreeMap::new();
    for (cpu, v) in values {
        groups.entry(v.as_str()).or_default().insert(*cpu);
    }
    groups
        .iter()
        .map(|(v, cpus)| format!("cpu{cpus}: {v}"))
        .collect::<Vec<_>>()
        .join("; ")
}

fn no_cpufreq(ctx: &Ctx, cpus: &CpuSet) -> bool {
    cpus.iter().all(|c| {
        !ctx.root()
            .exists(format!("{}/scaling_governor", cpufreq_dir(c)))
    })
}

const NO_CPUFREQ: &str =
    "no cpufreq driver: Linux does not scale the frequency here (firmware or a hypervisor may)";

fn governor(ctx: &Ctx) -> Outcome {
    let (cpus, what) = target_cpus(ctx);
    if no_cpufreq(ctx, &cpus) {
        return Outcome::pass(NO_CPUFREQ)
            .evidence("/sys/devices/system/cpu/cpu*/cpufreq", "absent");
    }
    let mut govs = BTreeMap::new();
    for cpu in cpus.iter() {
        let g = ctx
            .root()
            .read_trimmed(format!("{}/scaling_governor", cpufreq_dir(cpu)))
            .unwrap_or_else(|| "(no cpufreq)".to_string());
        govs.insert(cpu, g);
    }
    let slow: CpuSet = CpuSet::from_cpus(
        govs.iter()
            .filter(|(_, g)| g.as_str() != "performance" && g.as_str() != "(no cpufreq)")
            .map(|(c, _)| *c),
    );
    let evidence = by_value(&govs);
    if slow.is_empty() {
        return Outcome::pass(format!(
            "the performance governor runs on {}",
            named(what, &cpus)
        ))
        .evidence(
            "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor",
            evidence,
        );
    }
    Outcome::problem(format!(
        "the performance governor is not in use on {}",
        named(what, &slow)
    ))
    .evidence("/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor", evidence)
    .fix_command(format!("cpupower -c {slow} frequency-set -g performance"))
    .fix_command(format!(
        "for c in {}; do echo performance > /sys/devices/system/cpu/cpu$c/cpufreq/scaling_governor; done",
        slow.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(" ")
    ))
}

fn frequency_range(ctx: &Ctx) -> Outcome {
    let (cpus, what) = target_cpus(ctx);
    if no_cpufreq(ctx, &cpus) {
        return Outcome::pass(NO_CPUFREQ)
            .evidence("/sys/devices/system/cpu/cpu*/cpufreq", "absent");
    }
    let khz = |cpu: u32, f: &str| -> Option<u64> {
        ctx.root().read_value(format!("{}/{f}", cpufreq_dir(cpu)))
    };
    let mut ranges = BTreeMap::new();
    let mut moving = CpuSet::new();
    let mut capped = CpuSet::new();
    let mut capped_to = Vec::new();
    for cpu in cpus.iter() {
        let (Some(min), Some(max)) = (khz(cpu, "scaling_min_freq"), khz(cpu, "scaling_max_freq"))
        else {
            continue;
        };
        let governor = ctx
            .root()
            .read_trimmed(format!("{}/scaling_governor", cpufreq_dir(cpu)))
            .unwrap_or_default();
        ranges.insert(cpu, format!("{}-{} MHz", min / 1000, max / 1000));
        // The performance governor holds the maximum whatever the minimum says.
        if min < max && governor != "performance" {
            moving.insert(cpu);
        }
        if let Some(hw) = khz(cpu, "cpuinfo_max_freq")
            && max < hw
        {
            capped.insert(cpu);
            capped_to.push(format!("cpu{cpu} {}/{} MHz", max / 1000, hw / 1000));
        }
    }
    if ranges.is_empty() {
        return Outcome::unknown(format!(
            "scaling_min_freq/scaling_max_freq unreadable on {}",
            named(what, &cpus)
        ));
    }
    let evidence = by_value(&ranges);
    let source = "/sys/devices/system/cpu/cpu*/cpufreq/scaling_{min,max}_freq";
    if !moving.is_empty() {
        return Outcome::problem(format!(
            "the clock moves between its minimum and maximum on {}",
            named(what, &moving)
        ))
        .evidence(source, evidence)
        .fix_command(format!("cpupower -c {moving} frequency-set -g performance"))
        .fix_advice(format!(
            "or pin the range: write each CPU's scaling_max_freq into its scaling_min_freq (cpu{moving})"
        ));
    }
    if !capped.is_empty() {
        return Outcome::warn(format!(
            "the clock is capped below the hardware maximum on {} ({})",
            named(what, &capped),
            capped_to.join(", ")
        ))
        .evidence(source, evidence)
        .fix_advice(format!(
            "raise scaling_max_freq to cpuinfo_max_freq on cpu{capped} unless the cap is for thermal reasons (then measure with it)"
        ));
    }
    Outcome::pass(format!(
        "the clock is held steady on {}",
        named(what, &cpus)
    ))
    .evidence(source, evidence)
}

/// One cpuidle state of one CPU.
struct IdleState {
    name: String,
    /// Exit latency; `None` when the file is unreadable or not a number.
    latency_us: Option<u64>,
    disabled: bool,
}

impl IdleState {
    fn describe(&self) -> String {
        match self.latency_us {
            Some(us) => format!("{} ({us} us)", self.name),
            None => format!("{} (latency unknown)", self.name),
        }
    }
}

fn idle_states(ctx: &Ctx, cpu: u32) -> Vec<IdleState> {
    let dir = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle");
    let Ok(names) = ctx.root().list_dir(&dir) else {
        return Vec::new();
    };
    let mut states: Vec<(u32, IdleState)> = names
        .iter()
        .filter_map(|n| Some((n.strip_prefix("state")?.parse::<u32>().ok()?, n)))
        .map(|(k, n)| {
            let file = |f: &str| ctx.root().read_trimmed(format!("{dir}/{n}/{f}"));
            (
                k,
                IdleState {
                    name: file("name").unwrap_or_else(|| n.clone()),
                    latency_us: file("latency").and_then(|v| v.parse().ok()),
                    disabled: file("disable").is_some_and(|v| v == "1"),
                },
            )
        })
        .collect();
    states.sort_by_key(|(k, _)| *k);
    states.into_iter().map(|(_, s)| s).collect()
}

fn cpuidle(ctx: &Ctx) -> Outcome {
    let (cpus, what) = target_cpus(ctx);
    let driver = ctx
        .root()
        .read_trimmed("/sys/devices/system/cpu/cpuidle/current_driver");
    let mut deep: BTreeMap<u32, String> = BTreeMap::new();
    let mut shallow: BTreeMap<u32, String> = BTreeMap::new();
    let mut any = false;
    for cpu in cpus.iter() {
        let states = idle_states(ctx, cpu);
        any |= !states.is_empty();
        // A state whose latency cannot be read is judged deep: better a false alarm than a
        // C6 passed unseen.
        let enabled_deep: Vec<String> = states
            .iter()
            .filter(|s| !s.disabled && s.latency_us.is_none_or(|us| us > IDLE_LATENCY_LIMIT_US))
            .map(IdleState::describe)
            .collect();
        let enabled: Vec<String> = states
            .iter()
            .filter(|s| !s.disabled)
            .map(IdleState::describe)
            .collect();
        if !enabled_deep.is_empty() {
            deep.insert(cpu, enabled_deep.join(", "));
        }
        shallow.insert(cpu, enabled.join(", "));
    }
    let driver_text = driver.clone().unwrap_or_else(|| "none".to_string());
    if !any {
        return Outcome::pass(format!(
            "no cpuidle states on {} (driver: {driver_text}): idle is the architecture's default wait",
            named(what, &cpus)
        ))
        .evidence("/sys/devices/system/cpu/cpuidle/current_driver", driver_text);
    }
    let source = "/sys/devices/system/cpu/cpu*/cpuidle/state*/{name,latency,disable}";
    if deep.is_empty() {
        return Outcome::pass(format!(
            "no idle state deeper than {IDLE_LATENCY_LIMIT_US} us is enabled on {}",
            named(what, &cpus)
        ))
        .evidence(
            "/sys/devices/system/cpu/cpuidle/current_driver",
            driver_text,
        )
        .evidence(source, by_value(&shallow));
    }
    let cpus_deep = CpuSet::from_cpus(deep.keys().copied());
    Outcome::problem(format!(
        "idle states with exit latency over {IDLE_LATENCY_LIMIT_US} us are enabled on {}",
        named(what, &cpus_deep)
    ))
    .evidence("/sys/devices/system/cpu/cpuidle/current_driver", driver_text)
    .evidence(source, by_value(&deep))
    .fix_command(format!(
        "cpupower -c {cpus_deep} idle-set -D {IDLE_LATENCY_LIMIT_US}"
    ))
    .fix_advice(
        "or hold /dev/cpu_dma_latency open at the bound from the RT application (rtlab measure does this while it measures)",
    )
}

fn pstate(ctx: &Ctx) -> Outcome {
    let root = ctx.root();
    for driver in ["intel_pstate", "amd_pstate"] {
        let dir = format!("/sys/devices/system/cpu/{driver}");
        let Some(status) = root.read_trimmed(format!("{dir}/status")) else {
            continue;
        };
        let mut out_evidence = vec![(format!("{dir}/status"), status.clone())];
        let no_turbo = root.read_trimmed(format!("{dir}/no_turbo"));
        if let Some(v) = &no_turbo {
            out_evidence.push((format!("{dir}/no_turbo"), v.clone()));
        }
        let turbo_on = no_turbo.as_deref() == Some("0");
        let mut outcome = if status == "active" || turbo_on {
            let mut parts = Vec::new();
            if status == "active" {
                parts.push(format!(
                    "{driver} is active: the hardware chooses the frequency"
                ));
            }
            if turbo_on {
                parts.push("turbo is on".to_string());
            }
            let mut o = Outcome::problem(parts.join("; "));
            if status == "active" {
                o = o.fix_command("cpupower frequency-set -g performance").fix_advice(format!(
                    "for a fixed clock boot with {driver}=passive and use the performance governor"
                ));
            }
            if turbo_on && driver == "intel_pstate" {
                o = o.fix_write(format!("{dir}/no_turbo"), "1");
            }
            o
        } else {
            Outcome::pass(format!("{driver} is {status}"))
        };
        for (source, value) in out_evidence {
            outcome = outcome.evidence(source, value);
        }
        return outcome;
    }
    Outcome::pass("no intel_pstate or amd_pstate driver")
        .evidence("/sys/devices/system/cpu/{intel,amd}_pstate", "absent")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Options;
    use model::CpuSet;
    use testkit::FakeRoot;

    fn ctx(fake: &FakeRoot, rt: Option<&str>) -> Ctx {
        Ctx::new(
            fake.root(),
            Options {
                rt_cpus: rt.map(|r| CpuSet::parse_list(r).unwrap()),
                ..Options::default()
            },
        )
    }

    fn freq(fake: FakeRoot, cpu: u32, gov: &str, min: u64, max: u64, hw: u64) -> FakeRoot {
        let d = format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq");
        fake.file(&format!("{d}/scaling_governor"), &format!("{gov}\n"))
            .file(&format!("{d}/scaling_min_freq"), &format!("{min}\n"))
            .file(&format!("{d}/scaling_max_freq"), &format!("{max}\n"))
            .file(&format!("{d}/cpuinfo_max_freq"), &format!("{hw}\n"))
    }

    fn idle(fake: FakeRoot, cpu: u32, k: u32, name: &str, lat: u64, disabled: bool) -> FakeRoot {
        let d = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle/state{k}");
        fake.file(&format!("{d}/name"), &format!("{name}\n"))
            .file(&format!("{d}/latency"), &format!("{lat}\n"))
            .file(
                &format!("{d}/disable"),
                if disabled { "1\n" } else { "0\n" },
            )
    }

    #[test]
    fn no_cpufreq_passes_with_the_reason() {
        let fake = FakeRoot::new().cpus(2);
        let o = governor(&ctx(&fake, None));
        assert!(o.passed() && o.summary().contains("no cpufreq"), "{o:?}");
        assert!(frequency_range(&ctx(&fake, None)).passed());
    }

    #[test]
    fn governors_are_judged_on_rt_cpus_only() {
        let mut fake = FakeRoot::new().cpus(4);
        fake = freq(fake, 0, "schedutil", 600_000, 1_800_000, 1_800_000);
        fake = freq(fake, 1, "schedutil", 600_000, 1_800_000, 1_800_000);
        fake = freq(fake, 2, "performance", 600_000, 1_800_000, 1_800_000);
        fake = freq(fake, 3, "ondemand", 600_000, 1_500_000, 1_800_000);
        let o = governor(&ctx(&fake, Some("2-3")));
        assert!(!o.passed());
        assert_eq!(
            o.summary(),
            "the performance governor is not in use on RT CPU 3"
        );
        let f = CHECKS
            .iter()
            .find(|c| c.id == "power.governor")
            .unwrap()
            .finding(o);
        assert_eq!(
            f.fix[0].render(),
            "cpupower -c 3 frequency-set -g performance"
        );
        assert!(governor(&ctx(&fake, Some("2"))).passed());
        let o = frequency_range(&ctx(&fake, Some("2-3")));
        assert_eq!(
            o.summary(),
            "the clock moves between its minimum and maximum on RT CPU 3"
        );
        // The performance governor on CPU 2 holds the maximum: not "moving", not capped.
        assert!(frequency_range(&ctx(&fake, Some("2"))).passed());
    }

    #[test]
    fn a_capped_maximum_is_a_warning() {
        let fake = freq(
            FakeRoot::new().cpus(1),
            0,
            "performance",
            1_500_000,
            1_500_000,
            1_800_000,
        );
        let o = frequency_range(&ctx(&fake, None));
        assert!(!o.passed());
        assert!(o.summary().contains("1500/1800 MHz"), "{}", o.summary());
    }

    #[test]
    fn deep_idle_states_on_rt_cpus_are_flagged() {
        let mut fake = FakeRoot::new().cpus(2).file(
            "/sys/devices/system/cpu/cpuidle/current_driver",
            "intel_idle\n",
        );
        for cpu in 0..2 {
            fake = idle(fake, cpu, 0, "POLL", 0, false);
            fake = idle(fake, cpu, 1, "C1", 2, false);
            fake = idle(fake, cpu, 2, "C6", 133, cpu == 0);
        }
        let o = cpuidle(&ctx(&fake, Some("0")));
        assert!(o.passed(), "{o:?}");
        let o = cpuidle(&ctx(&fake, Some("0-1")));
        assert!(!o.passed());
        assert!(o.summary().ends_with("on RT CPU 1"), "{}", o.summary());
        let f = CHECKS
            .iter()
            .find(|c| c.id == "power.cpuidle")
            .unwrap()
            .finding(o);
        assert_eq!(f.fix[0].render(), "cpupower -c 1 idle-set -D 10");
        assert!(f.evidence[1].value.contains("C6 (133 us)"));
    }

    #[test]
    fn unreadable_latencies_count_as_deep() {
        let mut fake = FakeRoot::new().cpus(1);
        fake = idle(fake, 0, 0, "POLL", 0, false);
        fake = fake
            .file("/sys/devices/system/cpu/cpu0/cpuidle/state1/name", "C6\n")
            .file(
                "/sys/devices/system/cpu/cpu0/cpuidle/state1/latency",
                "lots\n",
            )
            .file("/sys/devices/system/cpu/cpu0/cpuidle/state1/disable", "0\n")
            // A directory that is not a state is ignored.
            .dir("/sys/devices/system/cpu/cpu0/cpuidle/driver");
        let o = cpuidle(&ctx(&fake, None));
        assert!(!o.passed());
        let f = CHECKS
            .iter()
            .find(|c| c.id == "power.cpuidle")
            .unwrap()
            .finding(o);
        assert!(
            f.evidence[1].value.contains("C6 (latency unknown)"),
            "{f:?}"
        );
    }

    #[test]
    fn no_cpuidle_is_a_pass() {
        let fake = FakeRoot::new().cpus(1);
        assert!(cpuidle(&ctx(&fake, None)).passed());
    }

    #[test]
    fn pstate_active_and_turbo_are_reported() {
        let fake = FakeRoot::new()
            .cpus(1)
            .file("/sys/devices/system/cpu/intel_pstate/status", "active\n")
            .file("/sys/devices/system/cpu/intel_pstate/no_turbo", "0\n");
        let o = pstate(&ctx(&fake, None));
        assert!(!o.passed());
        assert!(o.summary().contains("turbo is on"));
        let fake = FakeRoot::new()
            .cpus(1)
            .file("/sys/devices/system/cpu/intel_pstate/status", "passive\n")
            .file("/sys/devices/system/cpu/intel_pstate/no_turbo", "1\n");
        assert!(pstate(&ctx(&fake, None)).passed());
        assert!(pstate(&ctx(&FakeRoot::new().cpus(1), None)).passed());
    }
}
