//! `/proc/interrupts`: per-CPU interrupt counts, by line.
//!
//! The first line names the CPU columns (`CPU0 CPU1 ...`; offline CPUs have no column). Each
//! further line is `NAME:` (an IRQ number, or an architecture row such as `LOC`, `RES`,
//! `IPI2`), up to one count per column, then a free-text description (controller, hardware
//! IRQ, trigger, device names). Rows such as `ERR:` and `MIS:` carry one total and no
//! description. This module parses; which row means what (the local timer, a device's queue)
//! is asked through [`Interrupts`], and deciding whether a count is too high belongs to the
//! rooms above.

/// A parsed `/proc/interrupts`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Interrupts {
    /// The CPU of each count column, in order.
    pub cpus: Vec<u32>,
    /// The rows, in file order.
    pub rows: Vec<IrqRow>,
}

/// One line of `/proc/interrupts`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IrqRow {
    /// The text before the colon: `24`, `LOC`, `IPI2`, `ERR`.
    pub name: String,
    /// The counts, one per column of [`Interrupts::cpus`]; shorter for total-only rows.
    pub counts: Vec<u64>,
    /// Everything after the counts, whitespace collapsed: `IO-APIC 4-edge ttyS0`.
    pub description: String,
}

use super::LineError;

/// Device names (the last word of a description) of per-CPU timer interrupts on
/// architectures without x86's `LOC` row.
const TIMER_DEVICES: [&str; 4] = ["arch_timer", "twd", "riscv-timer", "arch_timer_el2"];

/// What a row must look like.
const ROW: &str = "an interrupt row (`NAME: counts description`)";

/// Parses the text. The first line names the CPU columns; every further line is a
/// `NAME:` row, or blank (tolerated: some kernels end the file with an empty line). A line of
/// another form is a [`LineError`]; empty text is an empty table.
pub fn parse(text: &str) -> Result<Interrupts, LineError> {
    let mut lines = text.lines().enumerate();
    let cpus = match lines.next() {
        Some((i, header)) => {
            header_cpus(header).ok_or(LineError::at(i, "the CPU header (`CPU0 CPU1 ...`)"))?
        }
        None => Vec::new(),
    };
    let mut rows = Vec::new();
    for (i, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        rows.push(row(line, &cpus).ok_or(LineError::at(i, ROW))?);
    }
    Ok(Interrupts { cpus, rows })
}

/// The CPU numbers of the header's `CPUn` columns; `None` when a word is not one.
fn header_cpus(header: &str) -> Option<Vec<u32>> {
    header
        .split_ascii_whitespace()
        .map(|col| col.strip_prefix("CPU")?.parse().ok())
        .collect()
}

fn row(line: &str, cpus: &[u32]) -> Option<IrqRow> {
    let (name, rest) = line.split_once(':')?;
    let name = name.trim();
    if name.is_empty() || name.contains(char::is_whitespace) {
        return None;
    }
    let mut words = rest.split_ascii_whitespace().peekable();
    let mut counts = Vec::with_capacity(cpus.len());
    while counts.len() < cpus.len().max(1) {
        match words.peek().and_then(|w| w.parse::<u64>().ok()) {
            Some(n) => {
                counts.push(n);
                words.next();
            }
            None => break,
        }
    }
    Some(IrqRow {
        name: name.to_string(),
        counts,
        description: words.collect::<Vec<_>>().join(" "),
    })
}

impl Interrupts {
    /// The row called `name` (`LOC`, `24`).
    pub fn row(&self, name: &str) -> Option<&IrqRow> {
        self.rows.iter().find(|r| r.name == name)
    }

    /// The count of `row` on `cpu`; `None` when either is absent.
    pub fn count(&self, row: &IrqRow, cpu: u32) -> Option<u64> {
        let column = self.cpus.iter().position(|&c| c == cpu)?;
        row.counts.get(column).copied()
    }

    /// The per-CPU timer interrupt row: `LOC` on x86, the `arch_timer` (arm64, armv7),
    /// `twd` (Cortex-A9) or `riscv-timer` row elsewhere.
    pub fn local_timer(&self) -> Option<&IrqRow> {
        self.row("LOC").or_else(|| {
            self.rows.iter().find(|r| {
                r.description
                    .rsplit(' ')
                    .next()
                    .is_some_and(|device| TIMER_DEVICES.contains(&device))
            })
        })
    }

    /// Local timer interrupts taken by `cpu` since boot.
    pub fn local_timer_count(&self, cpu: u32) -> Option<u64> {
        self.count(self.local_timer()?, cpu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// From the shared corpus, corpus/proc/procfs_interrupts_4cpu_kvm.txt (a 4-vCPU KVM
    /// guest, prometheus/procfs fixture), lines 1-4, 20-23 and 38-43.
    const KVM: &str = "           CPU0       CPU1       CPU2       CPU3
  0:         49          0          0          0   IO-APIC   2-edge      timer
  1:          0          0          0          9   IO-APIC   1-edge      i8042
  4:          0       1443          0          0   IO-APIC   4-edge      ttyS0
 25:       1800          0          0          0   PCI-MSI 114689-edge      virtio5-req.0
 29:       1362          0          0        934   PCI-MSI 512000-edge      ahci[0000:00:1f.2]
 30:          0          0          0          0   PCI-MSI 98304-edge      xhci_hcd
NMI:         47         46         45         45   Non-maskable interrupts
LOC:    1127633    1115428     952187    1081584   Local timer interrupts
SPU:          0          0          0          0   Spurious interrupts
RES:     133151     130545     119651     126446   Rescheduling interrupts
ERR:          0
MIS:          0
";

    /// From the shared corpus, corpus/proc/helios4_armada388_interrupts.txt (Marvell Armada
    /// 388, dual Cortex-A9), lines 1-3 and 24-31.
    const HELIOS4: &str = "           CPU0       CPU1
 17:   40807520   39650240     GIC-0  29 Edge      twd
 18:          0          0      MPIC   5 Level     armada_370_xp_per_cpu_tick
IPI0:          0          1  CPU wakeup interrupts
IPI1:          0          0  Timer broadcast interrupts
IPI2:     287339     328237  Rescheduling interrupts
Err:          0
";

    #[test]
    fn x86_rows_columns_and_the_local_timer() {
        let irqs = parse(KVM).unwrap();
        assert_eq!(irqs.cpus, [0, 1, 2, 3]);
        assert_eq!(irqs.rows.len(), 12);
        let ttys0 = irqs.row("4").unwrap();
        assert_eq!(ttys0.counts, [0, 1443, 0, 0]);
        assert_eq!(ttys0.description, "IO-APIC 4-edge ttyS0");
        assert_eq!(irqs.count(ttys0, 1), Some(1443));
        assert_eq!(irqs.count(ttys0, 7), None);
        assert_eq!(irqs.local_timer().unwrap().name, "LOC");
        assert_eq!(irqs.local_timer_count(2), Some(952_187));
        let err = irqs.row("ERR").unwrap();
        assert_eq!(err.counts, [0]);
        assert_eq!(err.description, "");
        assert_eq!(
            irqs.row("RES").unwrap().description,
            "Rescheduling interrupts"
        );
    }

    #[test]
    fn arm_timer_row_is_found_by_its_device() {
        let irqs = parse(HELIOS4).unwrap();
        assert_eq!(irqs.cpus, [0, 1]);
        assert_eq!(irqs.local_timer().unwrap().name, "17");
        assert_eq!(irqs.local_timer_count(1), Some(39_650_240));
        assert_eq!(irqs.row("IPI2").unwrap().counts, [287_339, 328_237]);
        assert_eq!(irqs.row("Err").unwrap().counts, [0]);
    }

    #[test]
    fn offline_cpus_have_no_column() {
        let irqs =
            parse("       CPU0       CPU2\nLOC:   10   20   Local timer interrupts\n").unwrap();
        assert_eq!(irqs.local_timer_count(2), Some(20));
        assert_eq!(irqs.local_timer_count(1), None);
    }

    #[test]
    fn truncated_rows_keep_what_they_have() {
        assert_eq!(parse(""), Ok(Interrupts::default()));
        let irqs = parse("CPU0 CPU1\n 5: 12\n\nLOC: x y\n 9: 1 2 3 4 dev\n").unwrap();
        assert_eq!(irqs.row("5").unwrap().counts, [12]);
        assert_eq!(irqs.row("LOC").unwrap().counts, Vec::<u64>::new());
        assert_eq!(irqs.row("LOC").unwrap().description, "x y");
        assert_eq!(irqs.row("9").unwrap().counts, [1, 2]);
        assert_eq!(irqs.row("9").unwrap().description, "3 4 dev");
        assert_eq!(irqs.rows.len(), 3);
        assert_eq!(irqs.local_timer_count(0), None);
    }

    #[test]
    fn a_malformed_line_is_named() {
        let err = parse("CPU0 CPU1\n 5: 12\nno colon here\n").unwrap_err();
        assert_eq!(err, LineError { line: 3, what: ROW });
        assert_eq!(parse("CPU0\n : 4\n").unwrap_err().line, 2);
        assert_eq!(parse("CPU0 CPUx\n").unwrap_err().line, 1);
        let err = parse(" 0: 1\n").unwrap_err().in_file("/proc/interrupts");
        assert_eq!(
            err.to_string(),
            "/proc/interrupts:1: cannot parse the CPU header (`CPU0 CPU1 ...`)"
        );
    }

    #[test]
    fn reads_this_host() {
        let Ok(text) = std::fs::read_to_string("/proc/interrupts") else {
            return testkit::live::skip("no /proc/interrupts here");
        };
        let irqs = parse(&text).unwrap();
        assert!(!irqs.cpus.is_empty());
        assert!(irqs.rows.iter().all(|r| r.counts.len() <= irqs.cpus.len()));
    }
}
