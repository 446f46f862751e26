//! How a comparison's CPU columns are grouped and what each group is called.
//!
//! CPUs of one kind ([`CpuInfo::kind_key`]: capacity, core type, model, maximum frequency) form
//! one group, as the Linaro 2023 talk's tables group an 8-core arm64 board into `4xA55 | 3xA77 | A77`.
//! Groups are ordered by their lowest CPU, CPUs ascending within a group. Cluster ids are not
//! used: DynamIQ device trees often put every core in one cluster.
//!
//! A group is named `Nx KIND` where KIND is the core's name: the ARM part from the
//! implementer:part pair that `/proc/cpuinfo` gives (`0x41:0xd05` is a Cortex-A55; names from
//! Linux `arch/arm64/include/asm/cputype.h` and util-linux `lscpu-arm.c`), else the per-CPU
//! model text, else the hybrid core type, else the capacity, else the maximum frequency. When
//! two groups would read the same (a Cortex-A77 cluster and a prime Cortex-A77), what tells
//! them apart is added: core type, maximum frequency, capacity (`3x Cortex-A77 (2.42 GHz)`).

use serde::{Deserialize, Serialize};

use model::host::{CpuInfo, HostInfo};

/// A group of columns: CPUs of one kind.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    /// The header over the group (`4x Cortex-A55`); absent when the CPUs are all of one kind.
    pub name: Option<String>,
    /// The CPUs, ascending.
    pub cpus: Vec<u32>,
}

/// ARM cores by `implementer:part`, as rtlab records a CPU's model on arm and arm64.
const ARM_PARTS: &[(&str, &str)] = &[
    ("0x41:0xb76", "ARM1176"),
    ("0x41:0xc07", "Cortex-A7"),
    ("0x41:0xc08", "Cortex-A8"),
    ("0x41:0xc09", "Cortex-A9"),
    ("0x41:0xc0f", "Cortex-A15"),
    ("0x41:0xd01", "Cortex-A32"),
    ("0x41:0xd03", "Cortex-A53"),
    ("0x41:0xd04", "Cortex-A35"),
    ("0x41:0xd05", "Cortex-A55"),
    ("0x41:0xd06", "Cortex-A65"),
    ("0x41:0xd07", "Cortex-A57"),
    ("0x41:0xd08", "Cortex-A72"),
    ("0x41:0xd09", "Cortex-A73"),
    ("0x41:0xd0a", "Cortex-A75"),
    ("0x41:0xd0b", "Cortex-A76"),
    ("0x41:0xd0c", "Neoverse-N1"),
    ("0x41:0xd0d", "Cortex-A77"),
    ("0x41:0xd40", "Neoverse-V1"),
    ("0x41:0xd41", "Cortex-A78"),
    ("0x41:0xd44", "Cortex-X1"),
    ("0x41:0xd46", "Cortex-A510"),
    ("0x41:0xd47", "Cortex-A710"),
    ("0x41:0xd48", "Cortex-X2"),
    ("0x41:0xd49", "Neoverse-N2"),
    ("0x41:0xd4d", "Cortex-A715"),
    ("0x41:0xd4e", "Cortex-X3"),
    ("0x41:0xd4f", "Neoverse-V2"),
    ("0x41:0xd80", "Cortex-A520"),
    ("0x41:0xd81", "Cortex-A720"),
    ("0x41:0xd82", "Cortex-X4"),
    ("0x51:0x800", "Kryo 2xx Gold"),
    ("0x51:0x801", "Kryo 2xx Silver"),
    ("0x51:0x802", "Kryo 3xx Gold"),
    ("0x51:0x803", "Kryo 3xx Silver"),
    ("0x51:0x804", "Kryo 4xx Gold"),
    ("0x51:0x805", "Kryo 4xx Silver"),
];

/// A CPU model as a person reads it: the ARM core's name for an `implementer:part` pair rtlab
/// knows, else the model text tidied (`(R)`, `(TM)` and doubled spaces removed).
pub fn cpu_kind_name(model: &str) -> String {
    let key = model.trim().to_ascii_lowercase();
    if let Some((_, name)) = ARM_PARTS.iter().find(|(id, _)| *id == key) {
        return (*name).to_string();
    }
    model
        .replace("(R)", "")
        .replace("(TM)", "")
        .replace("(tm)", "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Groups `cpus` (ascending, deduplicated) by kind, each CPU described by the first of `hosts`
/// that lists it. Returns whether there is more than one kind, and the groups (one unnamed
/// group holding every CPU when there is not).
pub(crate) fn group(cpus: &[u32], hosts: &[&HostInfo]) -> (bool, Vec<Cluster>) {
    let info = |cpu: u32| {
        hosts
            .iter()
            .find_map(|h| h.cpus.iter().find(|i| i.cpu == cpu))
    };
    let mut kinds: Vec<(Option<&CpuInfo>, Vec<u32>)> = Vec::new();
    for &cpu in cpus {
        let this = info(cpu);
        let key = this.map(CpuInfo::kind_key);
        match kinds
            .iter_mut()
            .find(|(i, _)| i.map(CpuInfo::kind_key) == key)
        {
            Some((_, members)) => members.push(cpu),
            None => kinds.push((this, vec![cpu])),
        }
    }
    if kinds.len() < 2 {
        return (
            false,
            vec![Cluster {
                name: None,
                cpus: cpus.to_vec(),
            }],
        );
    }
    let names = names(&kinds.iter().map(|(i, _)| *i).collect::<Vec<_>>());
    let clusters = kinds
        .into_iter()
        .zip(names)
        .map(|((_, members), name)| Cluster {
            name: Some(format!("{}x {name}", members.len())),
            cpus: members,
        })
        .collect();
    (true, clusters)
}

/// What can be said about a kind of CPU, most telling first: its name, then what may tell two
/// kinds of one name apart.
fn traits(info: Option<&CpuInfo>) -> (Option<String>, Vec<String>) {
    let Some(i) = info else {
        return (None, Vec::new());
    };
    let core_type = i.core_type.clone();
    let freq = i.max_freq_khz.map(format_khz);
    let capacity = i.capacity.map(|c| format!("capacity {c}"));
    let name = i.model.as_deref().map(cpu_kind_name);
    let mut rest: Vec<Option<String>> = vec![core_type, freq, capacity];
    let name = match name {
        Some(n) => Some(n),
        // No model: the first thing known names it, the others may still tell kinds apart.
        None => rest.iter_mut().find_map(Option::take),
    };
    (name, rest.into_iter().flatten().collect())
}

/// A name per kind, unique where the data allows: each kind's name, with the traits that tell
/// it from others of the same name added in parentheses, fewest first.
fn names(kinds: &[Option<&CpuInfo>]) -> Vec<String> {
    let traits: Vec<(String, Vec<String>)> = kinds
        .iter()
        .map(|&i| {
            let (name, rest) = traits(i);
            (name.unwrap_or_else(|| "unknown".to_string()), rest)
        })
        .collect();
    traits
        .iter()
        .enumerate()
        .map(|(me, (name, rest))| {
            // The other kinds this one could be mistaken for, narrowed by each trait added.
            let mut alike: Vec<&Vec<String>> = traits
                .iter()
                .enumerate()
                .filter(|&(i, (n, _))| i != me && n == name)
                .map(|(_, (_, r))| r)
                .collect();
            let mut telling = Vec::new();
            for t in rest {
                if alike.is_empty() {
                    break;
                }
                if alike.iter().any(|r| !r.contains(t)) {
                    telling.push(t.as_str());
                    alike.retain(|r| r.contains(t));
                }
            }
            if telling.is_empty() {
                name.clone()
            } else {
                format!("{name} ({})", telling.join(", "))
            }
        })
        .collect()
}

/// A frequency in kHz as `2.84 GHz` or `600 MHz`.
fn format_khz(khz: u64) -> String {
    if khz >= 1_000_000 {
        let centi = (khz + 5_000) / 10_000;
        format!("{}.{:02} GHz", centi / 100, centi % 100)
    } else {
        format!("{} MHz", (khz + 500) / 1_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(cpu: u32, model: Option<&str>, capacity: Option<u32>, khz: Option<u64>) -> CpuInfo {
        CpuInfo {
            cpu,
            model: model.map(str::to_string),
            capacity,
            max_freq_khz: khz,
            ..CpuInfo::default()
        }
    }

    fn host(cpus: Vec<CpuInfo>) -> HostInfo {
        HostInfo {
            cpus,
            ..HostInfo::default()
        }
    }

    #[test]
    fn arm_parts_and_tidy_models() {
        assert_eq!(cpu_kind_name("0x41:0xd05"), "Cortex-A55");
        assert_eq!(cpu_kind_name("0x41:0xD0D"), "Cortex-A77");
        assert_eq!(cpu_kind_name("0x51:0x805"), "Kryo 4xx Silver");
        assert_eq!(cpu_kind_name("0x48:0xd01"), "0x48:0xd01");
        assert_eq!(
            cpu_kind_name("Intel(R) Core(TM)  i7-12700H"),
            "Intel Core i7-12700H"
        );
    }

    #[test]
    fn frequencies() {
        assert_eq!(format_khz(2_841_600), "2.84 GHz");
        assert_eq!(format_khz(1_804_800), "1.80 GHz");
        assert_eq!(format_khz(1_000_000), "1.00 GHz");
        assert_eq!(format_khz(600_000), "600 MHz");
    }

    #[test]
    fn one_kind_is_one_unnamed_group() {
        let h = host(
            (0..4)
                .map(|c| info(c, Some("0x41:0xd08"), None, None))
                .collect(),
        );
        let (hetero, groups) = group(&[0, 1, 2, 3], &[&h]);
        assert!(!hetero);
        assert_eq!(
            groups,
            [Cluster {
                name: None,
                cpus: vec![0, 1, 2, 3]
            }]
        );
        // No topology at all: one kind too.
        let (hetero, groups) = group(&[0, 1], &[&HostInfo::default()]);
        assert!(!hetero);
        assert_eq!(groups.len(), 1);
    }

    #[test]
    fn twins_are_told_apart_by_what_differs() {
        let h = host(vec![
            info(0, Some("0x41:0xd05"), Some(284), Some(1_804_800)),
            info(1, Some("0x41:0xd0d"), Some(871), Some(2_419_200)),
            info(2, Some("0x41:0xd0d"), Some(1024), Some(2_841_600)),
            info(3, Some("0x41:0xd0d"), Some(871), Some(2_419_200)),
        ]);
        let (hetero, groups) = group(&[0, 1, 2, 3], &[&h]);
        assert!(hetero);
        let shown: Vec<(String, Vec<u32>)> = groups
            .into_iter()
            .map(|c| (c.name.unwrap(), c.cpus))
            .collect();
        assert_eq!(
            shown,
            [
                ("1x Cortex-A55".to_string(), vec![0]),
                ("2x Cortex-A77 (2.42 GHz)".to_string(), vec![1, 3]),
                ("1x Cortex-A77 (2.84 GHz)".to_string(), vec![2]),
            ]
        );
    }

    #[test]
    fn hybrid_x86_by_core_type_and_bare_capacities() {
        let model = "12th Gen Intel(R) Core(TM) i7-1270P";
        let mut p = info(0, Some(model), None, Some(4_800_000));
        p.core_type = Some("performance".into());
        let mut e = info(1, Some(model), None, Some(3_500_000));
        e.core_type = Some("efficiency".into());
        let (_, groups) = group(&[0, 1], &[&host(vec![p, e])]);
        assert_eq!(
            groups[0].name.as_deref(),
            Some("1x 12th Gen Intel Core i7-1270P (performance)")
        );
        // Three of one name: as many traits as it takes.
        let h = host(vec![
            info(0, Some("0x41:0xd0d"), Some(800), Some(2_400_000)),
            info(1, Some("0x41:0xd0d"), Some(900), Some(2_400_000)),
            info(2, Some("0x41:0xd0d"), Some(1024), Some(2_800_000)),
        ]);
        let (_, groups) = group(&[0, 1, 2], &[&h]);
        let names: Vec<_> = groups.iter().map(|g| g.name.clone().unwrap()).collect();
        assert_eq!(
            names,
            [
                "1x Cortex-A77 (2.40 GHz, capacity 800)",
                "1x Cortex-A77 (2.40 GHz, capacity 900)",
                "1x Cortex-A77 (2.80 GHz)"
            ]
        );
        // Only capacities known; a CPU the host does not describe is a kind of its own.
        let h = host(vec![
            info(0, None, Some(512), None),
            info(1, None, Some(1024), None),
        ]);
        let (_, groups) = group(&[0, 1, 2], &[&h]);
        let names: Vec<_> = groups.iter().map(|g| g.name.clone().unwrap()).collect();
        assert_eq!(names, ["1x capacity 512", "1x capacity 1024", "1x unknown"]);
    }
}
