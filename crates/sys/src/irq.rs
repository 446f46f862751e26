//! The IRQ table: every numbered IRQ of `/proc/irq/N/` (requested and effective affinity,
//! NUMA node, handler names) joined with its `/proc/interrupts` row (controller, per-CPU
//! counts), plus `/proc/irq/default_smp_affinity`.
//!
//! Reading only: moving an IRQ is a write to `smp_affinity_list`, which belongs to the rooms
//! that change the machine. Whether an IRQ can be moved at all (per-CPU timer interrupts,
//! kernel-managed queue interrupts) is a judgement left to the caller; this module reports
//! what the files say.

use model::CpuSet;

use crate::parse::interrupts;
use crate::parse::irq::parse_description;
use crate::{Result, Root};

/// The directory of per-IRQ files.
pub const PROC_IRQ: &str = "/proc/irq";
/// The affinity given to IRQs when they are set up (a hex mask).
pub const DEFAULT_SMP_AFFINITY: &str = "/proc/irq/default_smp_affinity";
/// The per-CPU interrupt counts.
pub const PROC_INTERRUPTS: &str = "/proc/interrupts";

/// Files of `/proc/irq/N/` that are not handler directories.
const IRQ_FILES: [&str; 7] = [
    "affinity_hint",
    "effective_affinity",
    "effective_affinity_list",
    "node",
    "smp_affinity",
    "smp_affinity_list",
    "spurious",
];

/// One numbered IRQ.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Irq {
    /// The Linux IRQ number (the directory name and the `/proc/interrupts` row name).
    pub number: u32,
    /// `smp_affinity_list`: where the IRQ may be delivered (what a user or driver asked for).
    pub affinity: Option<CpuSet>,
    /// `effective_affinity_list`: where the controller actually delivers it; absent on kernels
    /// or architectures without `CONFIG_GENERIC_IRQ_EFFECTIVE_AFF_MASK`.
    pub effective: Option<CpuSet>,
    /// `node`: the NUMA node of the device (-1 when none).
    pub node: Option<i32>,
    /// Handler names: the subdirectories of `/proc/irq/N/`, else those printed in
    /// `/proc/interrupts`. Empty when no driver has requested the IRQ.
    pub actions: Vec<String>,
    /// The interrupt controller as `/proc/interrupts` prints it (`PCI-MSI`, `GICv3`).
    pub chip: Option<String>,
    /// The hardware IRQ number within the controller (a GIC's 16-31 are per-CPU PPIs).
    pub hwirq: Option<u64>,
    /// The trigger or flow name (`edge`, `fasteoi`, `Level`).
    pub trigger: Option<String>,
    /// Interrupts taken since boot, per online CPU: `(cpu, count)`. Empty when the IRQ has no
    /// `/proc/interrupts` row (no handler and never fired) or the file was unreadable.
    pub counts: Vec<(u32, u64)>,
}

impl Irq {
    /// The handler names joined (`eth0` or `i801_smbus, ehci_hcd:usb1`); `-` when none.
    pub fn name(&self) -> String {
        if self.actions.is_empty() {
            "-".to_string()
        } else {
            self.actions.join(", ")
        }
    }

    /// `24 (eth0)`.
    pub fn label(&self) -> String {
        format!("{} ({})", self.number, self.name())
    }

    /// Interrupts taken since boot on the CPUs of `cpus`.
    pub fn count_on(&self, cpus: &CpuSet) -> u64 {
        self.counts
            .iter()
            .filter(|(cpu, _)| cpus.contains(*cpu))
            .map(|(_, n)| n)
            .sum()
    }

    /// The CPUs of `cpus` that took this interrupt at least once since boot.
    pub fn fired_on(&self, cpus: &CpuSet) -> CpuSet {
        self.counts
            .iter()
            .filter(|(cpu, n)| *n > 0 && cpus.contains(*cpu))
            .map(|(cpu, _)| *cpu)
            .collect()
    }

    /// Interrupts taken since boot on every CPU.
    pub fn total(&self) -> u64 {
        self.counts.iter().map(|(_, n)| n).sum()
    }
}

/// Every numbered IRQ of the machine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IrqTable {
    /// The IRQs, by number.
    pub irqs: Vec<Irq>,
    /// `/proc/irq/default_smp_affinity`, when readable.
    pub default_affinity: Option<CpuSet>,
    /// The raw mask text of `default_smp_affinity`.
    pub default_affinity_raw: Option<String>,
    /// Whether `/proc/interrupts` could be read (without it there are no counts).
    pub counted: bool,
}

impl IrqTable {
    /// The IRQ numbered `number`.
    pub fn get(&self, number: u32) -> Option<&Irq> {
        self.irqs
            .binary_search_by_key(&number, |i| i.number)
            .ok()
            .map(|at| &self.irqs[at])
    }
}

/// Reads the IRQ table. Fails when `/proc/irq` cannot be listed or `/proc/interrupts` has a
/// line of another form (the error names the line); a file missing for one IRQ leaves that
/// field `None`, and a missing `/proc/interrupts` leaves the counts out. Numbered rows of `/proc/interrupts` without a directory
/// (a partial fixture) are kept with their counts.
pub fn irq_table(root: &Root) -> Result<IrqTable> {
    let names = root.list_dir(PROC_IRQ)?;
    let interrupts_text = root.read(PROC_INTERRUPTS).ok();
    let counted = interrupts_text.is_some();
    let parsed = interrupts::parse(interrupts_text.as_deref().unwrap_or(""))
        .map_err(|e| e.in_file(PROC_INTERRUPTS))?;

    let mut irqs: Vec<Irq> = names
        .iter()
        .filter_map(|name| name.parse::<u32>().ok())
        .map(|number| read_irq(root, number))
        .collect();
    irqs.sort_by_key(|i| i.number);

    for row in &parsed.rows {
        let Ok(number) = row.name.parse::<u32>() else {
            continue;
        };
        let at = match irqs.binary_search_by_key(&number, |i| i.number) {
            Ok(at) => at,
            Err(at) => {
                irqs.insert(
                    at,
                    Irq {
                        number,
                        ..Irq::default()
                    },
                );
                at
            }
        };
        let irq = &mut irqs[at];
        let desc = parse_description(&row.description);
        if !desc.chip.is_empty() {
            irq.chip = Some(desc.chip);
        }
        irq.hwirq = desc.hwirq;
        irq.trigger = desc.trigger;
        if irq.actions.is_empty() {
            irq.actions = desc.actions;
        }
        irq.counts = parsed
            .cpus
            .iter()
            .zip(&row.counts)
            .map(|(&cpu, &n)| (cpu, n))
            .collect();
    }

    let default_affinity_raw = root.read_trimmed(DEFAULT_SMP_AFFINITY);
    let default_affinity = default_affinity_raw
        .as_deref()
        .and_then(|m| CpuSet::parse_mask(m).ok());
    Ok(IrqTable {
        irqs,
        default_affinity,
        default_affinity_raw,
        counted,
    })
}

fn read_irq(root: &Root, number: u32) -> Irq {
    let dir = format!("{PROC_IRQ}/{number}");
    let list = |file: &str| {
        root.read_trimmed(format!("{dir}/{file}"))
            .and_then(|t| CpuSet::parse_list(&t).ok())
    };
    let affinity = list("smp_affinity_list").or_else(|| {
        root.read_trimmed(format!("{dir}/smp_affinity"))
            .and_then(|m| CpuSet::parse_mask(&m).ok())
    });
    let actions = root
        .list_dir(&dir)
        .map(|entries| {
            entries
                .into_iter()
                .filter(|e| !IRQ_FILES.contains(&e.as_str()))
                .collect()
        })
        .unwrap_or_default();
    Irq {
        number,
        affinity,
        effective: list("effective_affinity_list"),
        node: root.read_value(format!("{dir}/node")),
        actions,
        ..Irq::default()
    }
}

/// How many times each IRQ fired on each CPU during `window`, now: `/proc/interrupts` read,
/// `window` slept, read again, per IRQ number the CPUs whose count grew and by how much.
/// Counts are since boot, so only a difference says what fires *now* (after an affinity
/// change, say). Only on the host: a captured tree is a single snapshot, so there it is
/// `Unsupported`.
pub fn fired_during(
    root: &Root,
    window: std::time::Duration,
) -> Result<std::collections::BTreeMap<u32, Vec<(u32, u64)>>> {
    if !root.is_host() {
        return Err(crate::Error::Unsupported {
            what: format!("sampling {PROC_INTERRUPTS} over time"),
            why: "a captured tree holds one snapshot".to_string(),
        });
    }
    let counts = |text: &str| -> Result<_> {
        let parsed = interrupts::parse(text).map_err(|e| e.in_file(PROC_INTERRUPTS))?;
        Ok(parsed
            .rows
            .iter()
            .filter_map(|row| {
                let number = row.name.parse::<u32>().ok()?;
                let per_cpu: Vec<(u32, u64)> = parsed
                    .cpus
                    .iter()
                    .copied()
                    .zip(row.counts.iter().copied())
                    .collect();
                Some((number, per_cpu))
            })
            .collect::<std::collections::BTreeMap<u32, Vec<(u32, u64)>>>())
    };
    let before = counts(&root.read(PROC_INTERRUPTS)?)?;
    std::thread::sleep(window);
    let after = counts(&root.read(PROC_INTERRUPTS)?)?;
    Ok(after
        .into_iter()
        .map(|(number, now)| {
            let then = before.get(&number);
            let grew = now
                .into_iter()
                .filter_map(|(cpu, n)| {
                    let was = then
                        .and_then(|t| t.iter().find(|(c, _)| *c == cpu))
                        .map_or(0, |(_, n)| *n);
                    let d = n.saturating_sub(was);
                    (d > 0).then_some((cpu, d))
                })
                .collect();
            (number, grew)
        })
        .collect())
}

/// A CPU set as the kernel's hex mask (`3`, `fc`, `1,00000000`): 32-bit words, most
/// significant first, as `smp_affinity`, `default_smp_affinity` and workqueue `cpumask`
/// files take it. The empty set is `0`.
pub fn to_mask(cpus: &CpuSet) -> String {
    let Some(last) = cpus.last() else {
        return "0".to_string();
    };
    let mut words = vec![0u32; last as usize / 32 + 1];
    for cpu in cpus.iter() {
        words[cpu as usize / 32] |= 1 << (cpu % 32);
    }
    let mut out = String::new();
    for (i, w) in words.iter().rev().enumerate() {
        if i == 0 {
            out.push_str(&format!("{w:x}"));
        } else {
            out.push_str(&format!(",{w:08x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &std::path::Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn directories_and_counts_are_joined() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // corpus/proc/procfs_interrupts_4cpu_kvm.txt, header and rows 4, 25-26 and LOC.
        write(
            d,
            "proc/interrupts",
            "           CPU0       CPU1       CPU2       CPU3
  4:          0       1443          0          0   IO-APIC   4-edge      ttyS0
 25:       1800          0          0          0   PCI-MSI 114689-edge      virtio5-req.0
 26:          0       1469          0          0   PCI-MSI 114690-edge      virtio5-req.1
LOC:      10196       7429       8542       8229   Local timer interrupts
",
        );
        write(d, "proc/irq/default_smp_affinity", "f\n");
        write(d, "proc/irq/4/smp_affinity_list", "0-3\n");
        write(d, "proc/irq/4/effective_affinity_list", "1\n");
        write(d, "proc/irq/4/node", "-1\n");
        std::fs::create_dir_all(d.join("proc/irq/4/ttyS0")).unwrap();
        write(d, "proc/irq/25/smp_affinity", "1\n");
        write(d, "proc/irq/9/smp_affinity_list", "0-3\n");
        let t = irq_table(&Root::at(d)).unwrap();
        assert!(t.counted);
        assert_eq!(t.default_affinity, Some(CpuSet::parse_list("0-3").unwrap()));
        assert_eq!(
            t.irqs.iter().map(|i| i.number).collect::<Vec<_>>(),
            [4, 9, 25, 26]
        );
        let tty = t.get(4).unwrap();
        assert_eq!(tty.actions, ["ttyS0"]);
        assert_eq!(tty.effective, Some(CpuSet::from_cpus([1])));
        assert_eq!(tty.node, Some(-1));
        assert_eq!(tty.chip.as_deref(), Some("IO-APIC"));
        assert_eq!(tty.counts, [(0, 0), (1, 1443), (2, 0), (3, 0)]);
        assert_eq!(tty.count_on(&CpuSet::parse_list("1-3").unwrap()), 1443);
        assert_eq!(
            tty.fired_on(&CpuSet::parse_list("0-3").unwrap()),
            CpuSet::from_cpus([1])
        );
        assert_eq!(tty.label(), "4 (ttyS0)");
        // No handler directory in the tree: names come from /proc/interrupts; the mask file
        // stands in for a missing list.
        let q0 = t.get(25).unwrap();
        assert_eq!(q0.actions, ["virtio5-req.0"]);
        assert_eq!(q0.affinity, Some(CpuSet::from_cpus([0])));
        assert_eq!(q0.effective, None);
        assert_eq!(q0.hwirq, Some(114_689));
        // A row without a directory, and a directory without a row.
        assert_eq!(t.get(26).unwrap().total(), 1469);
        assert_eq!(t.get(26).unwrap().affinity, None);
        let idle = t.get(9).unwrap();
        assert!(idle.counts.is_empty() && idle.actions.is_empty());
        assert_eq!(idle.name(), "-");
    }

    #[test]
    fn no_proc_irq_is_an_error_and_no_interrupts_no_counts() {
        let dir = tempfile::tempdir().unwrap();
        assert!(irq_table(&Root::at(dir.path())).unwrap_err().is_not_found());
        write(dir.path(), "proc/irq/3/smp_affinity_list", "garbage\n");
        let t = irq_table(&Root::at(dir.path())).unwrap();
        assert!(!t.counted);
        assert_eq!(t.irqs.len(), 1);
        assert_eq!(t.irqs[0].affinity, None);
        assert_eq!(t.default_affinity, None);
    }

    #[test]
    fn masks_are_printed_like_the_kernel() {
        let set = |s: &str| CpuSet::parse_list(s).unwrap();
        assert_eq!(to_mask(&set("0-1")), "3");
        assert_eq!(to_mask(&set("2-7")), "fc");
        assert_eq!(to_mask(&set("32")), "1,00000000");
        assert_eq!(to_mask(&set("0,33-35")), "e,00000001");
        assert_eq!(to_mask(&CpuSet::new()), "0");
        for list in ["0-1", "2-7", "0,33-35", "1-100"] {
            assert_eq!(CpuSet::parse_mask(&to_mask(&set(list))).unwrap(), set(list));
        }
    }

    #[test]
    fn reads_this_host() {
        let root = Root::host();
        let Ok(t) = irq_table(&root) else {
            return testkit::live::skip("no /proc/irq here");
        };
        for irq in &t.irqs {
            if let Some(eff) = &irq.effective {
                assert!(!eff.is_empty() || irq.actions.is_empty(), "{irq:?}");
            }
        }
        if t.counted {
            assert!(t.irqs.iter().any(|i| !i.counts.is_empty()));
        }
    }
}
