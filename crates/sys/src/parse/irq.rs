//! The description column of a numbered `/proc/interrupts` row, split into the interrupt
//! controller (chip), the hardware IRQ number, the trigger and the handlers' names.
//!
//! kernel/irq/proc.c `show_interrupts` prints, after the counts: the chip name (`%8s`, or the
//! chip's own printer), the hardware IRQ number when the IRQ has a domain, with
//! `CONFIG_GENERIC_IRQ_SHOW_LEVEL` (ARM) ` Level`/` Edge`, then `-<flow name>` when the flow
//! handler has one (x86: `4-edge`, `9-fasteoi`), then two spaces and the action names joined
//! by `, `. Chip names rarely hold a space (`RISC-V INTC`), action names sometimes do
//! (`f10d8000.sdhci cd`), so the split anchors on the hardware number and trigger.
//!
//! `/proc/irq/N/` lists the action names as directories, which is exact; this split is the
//! fallback for trees that lack them (fixtures) and the only source of the chip name.

/// The parts of a description.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IrqDescription {
    /// The interrupt controller (`IO-APIC`, `PCI-MSI`, `GICv3`, `PCI-MSIX-0000:00:01.0`).
    pub chip: String,
    /// The hardware IRQ number within the controller (`29`, `524288`), when printed.
    pub hwirq: Option<u64>,
    /// `Edge`, `Level`, `edge`, `fasteoi`, ... when printed.
    pub trigger: Option<String>,
    /// The handlers' names (`eth0`, `ahci[0000:00:1f.2]`, `i801_smbus`), in order.
    pub actions: Vec<String>,
}

/// Splits a description (whitespace already collapsed or not). Empty text gives the default.
pub fn parse_description(text: &str) -> IrqDescription {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.is_empty() {
        return IrqDescription::default();
    }
    // The chip ends before the first word that is a hardware number or a trigger; a chip name
    // has at most two words.
    let chip_len = (1..words.len().min(3))
        .find(|&i| is_hwirq_or_trigger(words[i]))
        .unwrap_or(1);
    let chip = words[..chip_len].join(" ");
    let mut i = chip_len;
    let mut hwirq = None;
    let mut trigger = None;
    if let Some(w) = words.get(i) {
        if let Ok(n) = w.parse::<u64>() {
            hwirq = Some(n);
            i += 1;
        } else if let Some((num, flow)) = split_num_flow(w) {
            hwirq = num;
            trigger = Some(flow.to_string());
            i += 1;
        }
    }
    if let Some(w) = words.get(i)
        && matches!(*w, "Edge" | "Level")
    {
        trigger = Some((*w).to_string());
        i += 1;
    }
    // A flow name after Edge/Level: `Level     -fasteoi` is not seen in practice but legal.
    if let Some(w) = words.get(i)
        && let Some(flow) = w.strip_prefix('-')
        && !flow.is_empty()
        && flow.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        trigger.get_or_insert_with(|| flow.to_string());
        i += 1;
    }
    let rest = words[i.min(words.len())..].join(" ");
    let actions = rest
        .split(", ")
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_string)
        .collect();
    IrqDescription {
        chip,
        hwirq,
        trigger,
        actions,
    }
}

fn is_hwirq_or_trigger(word: &str) -> bool {
    word.bytes().all(|b| b.is_ascii_digit())
        || matches!(word, "Edge" | "Level")
        || split_num_flow(word).is_some()
}

/// `4-edge` → (Some(4), "edge"); `-fasteoi` → (None, "fasteoi"). The flow part is letters
/// only, which keeps device names such as `0-0020` out.
fn split_num_flow(word: &str) -> Option<(Option<u64>, &str)> {
    let (num, flow) = word.split_once('-')?;
    if flow.is_empty() || !flow.bytes().all(|b| b.is_ascii_lowercase()) {
        return None;
    }
    if num.is_empty() {
        return Some((None, flow));
    }
    num.parse().ok().map(|n| (Some(n), flow))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(text: &str) -> (String, Option<u64>, Option<String>, Vec<String>) {
        let p = parse_description(text);
        (p.chip, p.hwirq, p.trigger, p.actions)
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn x86_rows() {
        // corpus/proc/procfs_interrupts_4cpu_kvm.txt, rows 4, 25 and 29.
        assert_eq!(
            d("IO-APIC   4-edge      ttyS0"),
            (
                "IO-APIC".into(),
                Some(4),
                Some("edge".into()),
                s(&["ttyS0"])
            )
        );
        assert_eq!(
            d("PCI-MSI 114689-edge      virtio5-req.0"),
            (
                "PCI-MSI".into(),
                Some(114_689),
                Some("edge".into()),
                s(&["virtio5-req.0"])
            )
        );
        assert_eq!(
            d("PCI-MSI 512000-edge      ahci[0000:00:1f.2]").3,
            s(&["ahci[0000:00:1f.2]"])
        );
        // This machine (firecracker guest, 6.18).
        assert_eq!(
            d("PCI-MSIX-0000:00:01.0   0-edge      virtio0-config"),
            (
                "PCI-MSIX-0000:00:01.0".into(),
                Some(0),
                Some("edge".into()),
                s(&["virtio0-config"])
            )
        );
        // Shared IRQ: two handlers.
        assert_eq!(
            d("IO-APIC  18-fasteoi   i801_smbus, ehci_hcd:usb1").3,
            s(&["i801_smbus", "ehci_hcd:usb1"])
        );
    }

    #[test]
    fn arm_rows() {
        // corpus/proc/helios4_armada388_interrupts.txt, rows 17, 36, 48 and 49.
        assert_eq!(
            d("GIC-0  29 Edge      twd"),
            ("GIC-0".into(), Some(29), Some("Edge".into()), s(&["twd"]))
        );
        assert_eq!(
            d("MPIC   8 Level     eth0"),
            ("MPIC".into(), Some(8), Some("Level".into()), s(&["eth0"]))
        );
        assert_eq!(
            d("f1018100.gpio  23 Level     0-0020"),
            (
                "f1018100.gpio".into(),
                Some(23),
                Some("Level".into()),
                s(&["0-0020"])
            )
        );
        assert_eq!(
            d("f1018100.gpio  20 Edge      f10d8000.sdhci cd").3,
            s(&["f10d8000.sdhci cd"])
        );
        assert_eq!(
            d("RISC-V INTC   5 Edge      riscv-timer"),
            (
                "RISC-V INTC".into(),
                Some(5),
                Some("Edge".into()),
                s(&["riscv-timer"])
            )
        );
    }

    #[test]
    fn odd_and_malformed_text_never_panics() {
        assert_eq!(parse_description(""), IrqDescription::default());
        assert_eq!(d("   "), (String::new(), None, None, vec![]));
        assert_eq!(d("IO-APIC"), ("IO-APIC".into(), None, None, vec![]));
        assert_eq!(
            d("dummy  -fasteoi"),
            ("dummy".into(), None, Some("fasteoi".into()), vec![])
        );
        assert_eq!(d("x y z w").3, s(&["y z w"]));
        assert_eq!(d("chip 99999999999999999999999 Edge a").0, "chip");
        assert_eq!(d("a , , b").3, s(&["b"]));
        assert_eq!(d("- - -").0, "-");
    }
}
