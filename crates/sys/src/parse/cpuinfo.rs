//! `/proc/cpuinfo`: one record of `key : value` lines per processor, plus the machine-wide
//! lines some architectures print outside any processor record (32-bit ARM and Raspberry Pi
//! kernels end with `Hardware`, `Revision`, `Serial`, `Model`).
//!
//! A record starts at a `processor` line and ends at a blank line; lines outside a record are
//! machine lines. This covers x86 (every line inside a record), arm64 (records only) and the
//! older 32-bit ARM layout (a `Processor` header, short records, then a shared block).
//!
//! From the records it derives the CPU model: per processor (x86 `model name`; ARM
//! `CPU implementer`:`CPU part`, e.g. `0x41:0xd05`) and for the whole machine.

/// One `processor` record, lines in file order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Record<'a> {
    /// The `key : value` pairs, both trimmed.
    pub fields: Vec<(&'a str, &'a str)>,
}

impl<'a> Record<'a> {
    /// The value of the first line named `key`.
    pub fn get(&self, key: &str) -> Option<&'a str> {
        self.fields.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    /// The processor number (the `processor` line), when it is a number.
    pub fn processor(&self) -> Option<u32> {
        self.get("processor")?.parse().ok()
    }

    /// This processor's model: x86 `model name`, else ARM `implementer:part`
    /// (`0x41:0xd05`), else RISC-V `uarch` or PowerPC `cpu`.
    pub fn model(&self) -> Option<String> {
        if let (Some(imp), Some(part)) = (self.get("CPU implementer"), self.get("CPU part")) {
            return Some(format!("{imp}:{part}"));
        }
        ["model name", "uarch", "cpu"]
            .iter()
            .find_map(|k| self.get(k))
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    }
}

/// A parsed `/proc/cpuinfo`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cpuinfo<'a> {
    /// One record per processor, in file order.
    pub processors: Vec<Record<'a>>,
    /// Lines outside any processor record (`Hardware`, `Model`, ...), in file order.
    pub machine: Vec<(&'a str, &'a str)>,
}

impl<'a> Cpuinfo<'a> {
    /// The record of processor `cpu`.
    pub fn processor(&self, cpu: u32) -> Option<&Record<'a>> {
        self.processors.iter().find(|r| r.processor() == Some(cpu))
    }

    /// The value of the first machine line named `key`.
    pub fn machine_get(&self, key: &str) -> Option<&'a str> {
        self.machine
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
            .filter(|v| !v.is_empty())
    }

    /// The CPU model of the whole machine, for a one-line summary.
    ///
    /// ARM (records carry `CPU implementer`): the board's `Model` or `Hardware` line when the
    /// kernel prints one, else the distinct `implementer:part` pairs in order, joined by
    /// `, ` (`0x41:0xd05, 0x41:0xd0d` on a big.LITTLE SoC). Otherwise the first processor's
    /// model (`model name` on x86), else a machine-wide `model name`.
    pub fn machine_model(&self) -> Option<String> {
        let arm = self
            .processors
            .iter()
            .any(|r| r.get("CPU implementer").is_some())
            || self.machine_get("CPU implementer").is_some();
        if arm {
            if let Some(board) = self
                .machine_get("Model")
                .or_else(|| self.machine_get("Hardware"))
            {
                return Some(board.to_string());
            }
            let mut parts: Vec<String> = Vec::new();
            for model in self.processors.iter().filter_map(Record::model) {
                if !parts.contains(&model) {
                    parts.push(model);
                }
            }
            if parts.is_empty() {
                // Old 32-bit layout: implementer and part sit in the machine block.
                if let (Some(imp), Some(part)) = (
                    self.machine_get("CPU implementer"),
                    self.machine_get("CPU part"),
                ) {
                    parts.push(format!("{imp}:{part}"));
                }
            }
            return (!parts.is_empty()).then(|| parts.join(", "));
        }
        self.processors
            .iter()
            .find_map(Record::model)
            .or_else(|| self.machine_get("model name").map(str::to_string))
    }
}

/// Parses `/proc/cpuinfo`. Lines without a `:` are passed over on purpose: the file has no
/// grammar beyond `key : value` records, each architecture prints its own keys and extra
/// lines (s390's `processor N:` summaries, old ARM's machine block), and what the parser
/// cannot find reads as an unknown model. Never fails.
pub fn parse(text: &str) -> Cpuinfo<'_> {
    let mut info = Cpuinfo::default();
    let mut current: Option<Record<'_>> = None;
    for line in text.lines() {
        if line.trim().is_empty() {
            if let Some(record) = current.take() {
                info.processors.push(record);
            }
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        if key == "processor" {
            if let Some(record) = current.take() {
                info.processors.push(record);
            }
            current = Some(Record::default());
        }
        match current.as_mut() {
            Some(record) => record.fields.push((key, value)),
            None => info.machine.push((key, value)),
        }
    }
    if let Some(record) = current {
        info.processors.push(record);
    }
    info
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first two records of this repository's firecracker VM (AMD EPYC), flags shortened.
    const X86: &str = "\
processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC
stepping\t: 1
cpu MHz\t\t: 2445.428
physical id\t: 0
core id\t\t: 0
flags\t\t: fpu vme de pse tsc msr pae
power management:

processor\t: 1
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC
core id\t\t: 1
power management:

";

    /// An arm64 big.LITTLE SoC as on a Qualcomm RB5 (Snapdragon 865): four Cortex-A55
    /// (0xd05) and four Cortex-A77 (0xd0d); arm64 kernels print no `Hardware` line.
    const RB5: &str = "\
processor\t: 0
BogoMIPS\t: 38.40
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x1
CPU part\t: 0xd05
CPU revision\t: 0

processor\t: 1
BogoMIPS\t: 38.40
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x1
CPU part\t: 0xd05
CPU revision\t: 0

processor\t: 4
BogoMIPS\t: 38.40
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x1
CPU part\t: 0xd0d
CPU revision\t: 0

processor\t: 7
BogoMIPS\t: 38.40
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x1
CPU part\t: 0xd0d
CPU revision\t: 0
";

    /// A Raspberry Pi 3 on a 32-bit kernel: records, then the board block.
    const RPI3: &str = "\
processor\t: 0
model name\t: ARMv7 Processor rev 4 (v7l)
BogoMIPS\t: 38.40
CPU implementer\t: 0x41
CPU architecture: 7
CPU part\t: 0xd03

Hardware\t: BCM2835
Revision\t: a02082
Model\t\t: Raspberry Pi 3 Model B Rev 1.2
";

    #[test]
    fn x86_records_and_model() {
        let info = parse(X86);
        assert_eq!(info.processors.len(), 2);
        assert!(info.machine.is_empty());
        assert_eq!(info.processor(1).unwrap().get("core id"), Some("1"));
        assert_eq!(
            info.processor(0).unwrap().model().as_deref(),
            Some("AMD EPYC")
        );
        assert_eq!(info.machine_model().as_deref(), Some("AMD EPYC"));
        // `power management:` has an empty value and is kept.
        assert_eq!(info.processor(0).unwrap().get("power management"), Some(""));
    }

    #[test]
    fn arm64_big_little() {
        let info = parse(RB5);
        assert_eq!(info.processors.len(), 4);
        assert_eq!(
            info.processor(0).unwrap().model().as_deref(),
            Some("0x41:0xd05")
        );
        assert_eq!(
            info.processor(7).unwrap().model().as_deref(),
            Some("0x41:0xd0d")
        );
        assert_eq!(
            info.processor(7).unwrap().get("CPU architecture"),
            Some("8")
        );
        assert_eq!(info.processor(2), None);
        assert_eq!(
            info.machine_model().as_deref(),
            Some("0x41:0xd05, 0x41:0xd0d")
        );
    }

    #[test]
    fn arm32_board_model_wins() {
        let info = parse(RPI3);
        assert_eq!(info.machine_get("Hardware"), Some("BCM2835"));
        assert_eq!(
            info.machine_model().as_deref(),
            Some("Raspberry Pi 3 Model B Rev 1.2")
        );
        assert_eq!(
            info.processor(0).unwrap().model().as_deref(),
            Some("0x41:0xd03")
        );
    }

    #[test]
    fn old_arm_layout_with_shared_block() {
        let text = "Processor\t: ARMv7 Processor rev 10 (v7l)\nprocessor\t: 0\nBogoMIPS\t: 790.52\n\nprocessor\t: 1\nBogoMIPS\t: 790.52\n\nCPU implementer\t: 0x41\nCPU part\t: 0xc09\n";
        let info = parse(text);
        assert_eq!(info.processors.len(), 2);
        assert_eq!(
            info.machine_get("Processor"),
            Some("ARMv7 Processor rev 10 (v7l)")
        );
        assert_eq!(info.machine_model().as_deref(), Some("0x41:0xc09"));
    }

    #[test]
    fn truncated_and_malformed_input() {
        assert_eq!(parse(""), Cpuinfo::default());
        assert_eq!(parse("").machine_model(), None);
        // Cut in the middle of a line, and lines without a colon.
        let info = parse("processor\t: 0\nmodel na");
        assert_eq!(info.processors.len(), 1);
        assert_eq!(info.machine_model(), None);
        let info = parse("garbage\n::::\nprocessor : x\nCPU implementer : 0x41\n");
        assert_eq!(info.processors[0].processor(), None);
        assert_eq!(info.machine_model(), None, "implementer without part");
        assert_eq!(parse(&X86[..37]).processors.len(), 1);
    }
}
