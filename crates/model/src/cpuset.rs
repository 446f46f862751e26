//! CPU sets: the kernel's list syntax (`0-3,6`, `0-7:2/4`), rtlab's selector syntax on top of it
//! (`all`, `!0`), and a compact set type to hold the result.
//!
//! The kernel list format is documented in Documentation/admin-guide/kernel-parameters.rst
//! ("cpu lists"); sysfs files such as `/sys/devices/system/cpu/online` use its plain form.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The highest CPU number rtlab accepts in a list (the kernel's NR_CPUS tops out at 8192).
pub const MAX_CPU: u32 = 8191;

/// An ordered set of CPU numbers. Serialized as its list string (`"0-3,6"`).
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CpuSet(BTreeSet<u32>);

/// Why a CPU list was refused. The message names the bad part and shows the syntax.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseCpuSetError {
    /// Nothing was given.
    #[error("empty CPU list; write CPUs like 0-3,6, or all, or !0")]
    Empty,
    /// A part of the list is not a CPU, a range or a strided range.
    #[error("'{part}' in CPU list '{list}' is not a CPU number or range; write CPUs like 0-3,6")]
    BadPart {
        /// The whole list.
        list: String,
        /// The part that did not parse.
        part: String,
    },
    /// A range runs backwards.
    #[error("range '{part}' in CPU list '{list}' runs backwards; write it low-high, e.g. 2-5")]
    Backwards {
        /// The whole list.
        list: String,
        /// The range.
        part: String,
    },
    /// A CPU number beyond any kernel's limit.
    #[error(
        "CPU {cpu} in '{list}' is beyond the largest CPU number the kernel supports ({MAX_CPU})"
    )]
    TooLarge {
        /// The whole list.
        list: String,
        /// The CPU number.
        cpu: u64,
    },
}

impl CpuSet {
    /// The empty set.
    pub fn new() -> CpuSet {
        CpuSet(BTreeSet::new())
    }

    /// Parses the kernel's CPU list syntax: comma-separated CPUs and ranges, each range
    /// optionally strided as `first-last:used/group` (e.g. `0-7:2/4` is 0,1,4,5).
    /// An empty or all-whitespace string is the empty set, as sysfs prints it.
    pub fn parse_list(text: &str) -> Result<CpuSet, ParseCpuSetError> {
        let list = text.trim();
        let mut set = BTreeSet::new();
        if list.is_empty() {
            return Ok(CpuSet(set));
        }
        let bad = |part: &str| ParseCpuSetError::BadPart {
            list: list.to_string(),
            part: part.to_string(),
        };
        for raw in list.split(',') {
            let part = raw.trim();
            let (range, stride) = match part.split_once(':') {
                Some((r, s)) => {
                    let (used, group) = s.split_once('/').ok_or_else(|| bad(part))?;
                    let used: u64 = parse_num(used).ok_or_else(|| bad(part))?;
                    let group: u64 = parse_num(group).ok_or_else(|| bad(part))?;
                    if used == 0 || group == 0 || used > group {
                        return Err(bad(part));
                    }
                    (r, Some((used, group)))
                }
                None => (part, None),
            };
            let (lo, hi) = match range.split_once('-') {
                Some((a, b)) => (
                    parse_num(a).ok_or_else(|| bad(part))?,
                    parse_num(b).ok_or_else(|| bad(part))?,
                ),
                None => {
                    if stride.is_some() {
                        return Err(bad(part));
                    }
                    let n = parse_num(range).ok_or_else(|| bad(part))?;
                    (n, n)
                }
            };
            if lo > hi {
                return Err(ParseCpuSetError::Backwards {
                    list: list.to_string(),
                    part: part.to_string(),
                });
            }
            if hi > u64::from(MAX_CPU) {
                return Err(ParseCpuSetError::TooLarge {
                    list: list.to_string(),
                    cpu: hi,
                });
            }
            let (used, group) = stride.unwrap_or((1, 1));
            for cpu in lo..=hi {
                if (cpu - lo) % group < used {
                    set.insert(cpu as u32);
                }
            }
        }
        Ok(CpuSet(set))
    }

    /// Parses a hexadecimal CPU mask as found in `/proc/irq/*/smp_affinity` and workqueue
    /// `cpumask` files: comma-separated 32-bit words, most significant first. Leading zero
    /// words may go on as far as they like; a set bit beyond [`MAX_CPU`] is refused.
    pub fn parse_mask(text: &str) -> Result<CpuSet, ParseCpuSetError> {
        let mask = text.trim();
        if mask.is_empty() {
            return Err(ParseCpuSetError::Empty);
        }
        let mut set = BTreeSet::new();
        let words: Vec<&str> = mask.split(',').collect();
        for (i, word) in words.iter().rev().enumerate() {
            let value =
                u32::from_str_radix(word.trim(), 16).map_err(|_| ParseCpuSetError::BadPart {
                    list: mask.to_string(),
                    part: (*word).to_string(),
                })?;
            for bit in 0..32u64 {
                if value & (1 << bit) != 0 {
                    let cpu = (i as u64).saturating_mul(32).saturating_add(bit);
                    if cpu > u64::from(MAX_CPU) {
                        return Err(ParseCpuSetError::TooLarge {
                            list: mask.to_string(),
                            cpu,
                        });
                    }
                    set.insert(cpu as u32);
                }
            }
        }
        Ok(CpuSet(set))
    }

    /// A set holding `cpus`.
    pub fn from_cpus(cpus: impl IntoIterator<Item = u32>) -> CpuSet {
        CpuSet(cpus.into_iter().collect())
    }

    /// The set with its noun, singular or plural as it needs: `CPU 3`, `CPUs 0-3,6`, or
    /// `no CPU` — for a sentence, where the bare list would read `CPUs 3`.
    pub fn with_noun(&self) -> String {
        match self.len() {
            0 => "no CPU".to_string(),
            1 => format!("CPU {self}"),
            _ => format!("CPUs {self}"),
        }
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: u32) -> bool {
        self.0.contains(&cpu)
    }

    /// Adds `cpu`.
    pub fn insert(&mut self, cpu: u32) {
        self.0.insert(cpu);
    }

    /// Number of CPUs in the set.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The CPUs in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().copied()
    }

    /// The lowest CPU, if any.
    pub fn first(&self) -> Option<u32> {
        self.0.first().copied()
    }

    /// The highest CPU, if any.
    pub fn last(&self) -> Option<u32> {
        self.0.last().copied()
    }

    /// CPUs in both sets.
    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        CpuSet(self.0.intersection(&other.0).copied().collect())
    }

    /// CPUs in either set.
    pub fn union(&self, other: &CpuSet) -> CpuSet {
        CpuSet(self.0.union(&other.0).copied().collect())
    }

    /// CPUs in `self` but not in `other`.
    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        CpuSet(self.0.difference(&other.0).copied().collect())
    }

    /// Whether every CPU of `self` is in `other`.
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.0.is_subset(&other.0)
    }
}

fn parse_num(text: &str) -> Option<u64> {
    let t = text.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) || t.len() > 12 {
        return None;
    }
    t.parse().ok()
}

/// Prints the kernel's compact list form: `0-3,6`; the empty set prints as an empty string.
impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut iter = self.0.iter().copied().peekable();
        while let Some(lo) = iter.next() {
            let mut hi = lo;
            while iter.peek() == Some(&(hi + 1)) {
                hi = iter.next().unwrap_or(hi);
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if lo == hi {
                write!(f, "{lo}")?;
            } else {
                write!(f, "{lo}-{hi}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({self})")
    }
}

impl FromStr for CpuSet {
    type Err = ParseCpuSetError;
    fn from_str(s: &str) -> Result<CpuSet, ParseCpuSetError> {
        CpuSet::parse_list(s)
    }
}

impl Serialize for CpuSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CpuSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<CpuSet, D::Error> {
        let text = String::deserialize(d)?;
        CpuSet::parse_list(&text).map_err(serde::de::Error::custom)
    }
}

impl FromIterator<u32> for CpuSet {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> CpuSet {
        CpuSet(iter.into_iter().collect())
    }
}

/// A CPU selector as a person types it: a list, `all`, or `!LIST` (all but those).
///
/// It is resolved against the CPUs a command may use (see [`CpuSpec::resolve`]), so that
/// `all` means "every CPU this process may run on", not every CPU the kernel knows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CpuSpec {
    /// Every available CPU.
    All,
    /// Every available CPU except these.
    AllBut(CpuSet),
    /// Exactly these CPUs.
    List(CpuSet),
}

/// Why a CPU selector does not fit this machine.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ResolveCpuSetError {
    /// A CPU number the machine does not have.
    #[error("CPU {cpu} does not exist on this machine (CPUs: {possible})")]
    NoSuchCpu {
        /// The CPU asked for.
        cpu: u32,
        /// The CPUs the kernel knows.
        possible: CpuSet,
    },
    /// A CPU that exists but is offline.
    #[error(
        "CPU {cpu} is offline (online: {online}); bring it online with `echo 1 > /sys/devices/system/cpu/cpu{cpu}/online` or leave it out"
    )]
    Offline {
        /// The CPU asked for.
        cpu: u32,
        /// The online CPUs.
        online: CpuSet,
    },
    /// A CPU outside this process's affinity (taskset, a cpuset cgroup, a container).
    #[error(
        "CPU {cpu} is not allowed for this process (allowed: {allowed}); it is excluded by taskset, a cpuset or the container (on a machine tuned by rtlab, start it with `rtlab tune run -- COMMAND` or give only CPUs of the RT cpuset)"
    )]
    NotAllowed {
        /// The CPU asked for.
        cpu: u32,
        /// The CPUs this process may use.
        allowed: CpuSet,
    },
    /// The selector leaves nothing.
    #[error("'{spec}' selects no CPU (available: {available})")]
    Nothing {
        /// The selector as typed.
        spec: String,
        /// What was available.
        available: CpuSet,
    },
}

impl CpuSpec {
    /// Parses `all`, `!LIST` or `LIST`.
    pub fn parse(text: &str) -> Result<CpuSpec, ParseCpuSetError> {
        let t = text.trim();
        if t.is_empty() {
            return Err(ParseCpuSetError::Empty);
        }
        if t.eq_ignore_ascii_case("all") {
            return Ok(CpuSpec::All);
        }
        if let Some(rest) = t.strip_prefix('!') {
            let set = CpuSet::parse_list(rest)?;
            if set.is_empty() {
                return Err(ParseCpuSetError::Empty);
            }
            return Ok(CpuSpec::AllBut(set));
        }
        CpuSet::parse_list(t).map(CpuSpec::List)
    }

    /// Turns the selector into concrete CPUs.
    ///
    /// `possible` is every CPU the kernel knows, `online` those online, `allowed` those this
    /// process may run on. `all` and `!` select from `online ∩ allowed`; a named CPU outside
    /// them is an error that says which of the three excluded it.
    pub fn resolve(
        &self,
        possible: &CpuSet,
        online: &CpuSet,
        allowed: &CpuSet,
    ) -> Result<CpuSet, ResolveCpuSetError> {
        let available = online.intersection(allowed);
        let check = |cpu: u32| -> Result<(), ResolveCpuSetError> {
            if !possible.contains(cpu) && !online.contains(cpu) {
                return Err(ResolveCpuSetError::NoSuchCpu {
                    cpu,
                    possible: possible.clone(),
                });
            }
            if !online.contains(cpu) {
                return Err(ResolveCpuSetError::Offline {
                    cpu,
                    online: online.clone(),
                });
            }
            if !allowed.contains(cpu) {
                return Err(ResolveCpuSetError::NotAllowed {
                    cpu,
                    allowed: allowed.clone(),
                });
            }
            Ok(())
        };
        let chosen = match self {
            CpuSpec::All => available.clone(),
            CpuSpec::AllBut(excluded) => {
                for cpu in excluded.iter() {
                    if !possible.contains(cpu) && !online.contains(cpu) {
                        return Err(ResolveCpuSetError::NoSuchCpu {
                            cpu,
                            possible: possible.clone(),
                        });
                    }
                }
                available.difference(excluded)
            }
            CpuSpec::List(set) => {
                for cpu in set.iter() {
                    check(cpu)?;
                }
                set.clone()
            }
        };
        if chosen.is_empty() {
            return Err(ResolveCpuSetError::Nothing {
                spec: self.to_string(),
                available,
            });
        }
        Ok(chosen)
    }
}

impl fmt::Display for CpuSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CpuSpec::All => f.write_str("all"),
            CpuSpec::AllBut(set) => write!(f, "!{set}"),
            CpuSpec::List(set) => write!(f, "{set}"),
        }
    }
}

impl FromStr for CpuSpec {
    type Err = ParseCpuSetError;
    fn from_str(s: &str) -> Result<CpuSpec, ParseCpuSetError> {
        CpuSpec::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_is_named_singular_or_plural() {
        assert_eq!(CpuSet::from_cpus([3]).with_noun(), "CPU 3");
        assert_eq!(CpuSet::from_cpus([0, 1, 2, 6]).with_noun(), "CPUs 0-2,6");
        assert_eq!(CpuSet::new().with_noun(), "no CPU");
    }

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    #[test]
    fn parses_kernel_lists() {
        assert_eq!(set("0-3,6").iter().collect::<Vec<_>>(), vec![0, 1, 2, 3, 6]);
        assert_eq!(set(" 5 ").iter().collect::<Vec<_>>(), vec![5]);
        assert_eq!(set("0-7:2/4").iter().collect::<Vec<_>>(), vec![0, 1, 4, 5]);
        assert_eq!(set("2-2,1").to_string(), "1-2");
        assert!(set("").is_empty());
        assert!(set("\n").is_empty());
    }

    #[test]
    fn prints_compact_ranges() {
        assert_eq!(
            CpuSet::from_cpus([0, 1, 2, 3, 6, 8, 9]).to_string(),
            "0-3,6,8-9"
        );
        assert_eq!(CpuSet::new().to_string(), "");
    }

    #[test]
    fn refuses_malformed_lists() {
        for bad in [
            "a", "1-", "-1", "1--2", "1,,2", "1-2:3", "0-7:0/4", "0-7:5/4", "1:1/1", "0x3",
        ] {
            assert!(
                matches!(
                    CpuSet::parse_list(bad),
                    Err(ParseCpuSetError::BadPart { .. })
                ),
                "{bad} should be refused"
            );
        }
        assert!(matches!(
            CpuSet::parse_list("5-2"),
            Err(ParseCpuSetError::Backwards { .. })
        ));
        assert!(matches!(
            CpuSet::parse_list("9000"),
            Err(ParseCpuSetError::TooLarge { .. })
        ));
        let msg = CpuSet::parse_list("0-3,x").unwrap_err().to_string();
        assert!(msg.contains("'x'") && msg.contains("0-3,x"), "{msg}");
    }

    #[test]
    fn parses_hex_masks() {
        assert_eq!(CpuSet::parse_mask("f").unwrap().to_string(), "0-3");
        assert_eq!(
            CpuSet::parse_mask("00000001,00000003").unwrap().to_string(),
            "0-1,32"
        );
        assert!(CpuSet::parse_mask("zz").is_err());
    }

    #[test]
    fn selectors_resolve_against_the_machine() {
        let possible = set("0-7");
        let online = set("0-5");
        let allowed = set("0-4");
        let r = |s: &str| {
            CpuSpec::parse(s)
                .unwrap()
                .resolve(&possible, &online, &allowed)
        };
        assert_eq!(r("all").unwrap().to_string(), "0-4");
        assert_eq!(r("!0").unwrap().to_string(), "1-4");
        assert_eq!(r("!0-1,3").unwrap().to_string(), "2,4");
        assert_eq!(r("1,3").unwrap().to_string(), "1,3");
        assert!(matches!(
            r("9"),
            Err(ResolveCpuSetError::NoSuchCpu { cpu: 9, .. })
        ));
        assert!(matches!(
            r("6"),
            Err(ResolveCpuSetError::Offline { cpu: 6, .. })
        ));
        assert!(matches!(
            r("5"),
            Err(ResolveCpuSetError::NotAllowed { cpu: 5, .. })
        ));
        assert!(matches!(r("!0-4"), Err(ResolveCpuSetError::Nothing { .. })));
        assert!(matches!(
            r("!12"),
            Err(ResolveCpuSetError::NoSuchCpu { cpu: 12, .. })
        ));
        let msg = r("6").unwrap_err().to_string();
        assert!(msg.contains("CPU 6 is offline"), "{msg}");
    }

    /// Found by fuzzing (target model_cpuset): a mask of more than 256 words set CPU 8192 and
    /// up, beyond `MAX_CPU`, so the set printed as a list that `parse_list` refused.
    #[test]
    fn mask_bits_beyond_max_cpu_are_refused() {
        let mask = format!("1{}", ",00000000".repeat(256));
        assert_eq!(
            CpuSet::parse_mask(&mask),
            Err(ParseCpuSetError::TooLarge {
                list: mask.clone(),
                cpu: 8192
            })
        );
        // Leading zero words are fine, as NR_CPUS=8192 kernels print them.
        let zeros = format!("80000000{}", ",00000000".repeat(255));
        assert_eq!(CpuSet::parse_mask(&zeros), Ok(CpuSet::from_cpus([MAX_CPU])));
        let far = format!("0{}", ",0".repeat(1000));
        assert_eq!(CpuSet::parse_mask(&far), Ok(CpuSet::new()));
    }

    #[test]
    fn selector_syntax_errors() {
        assert_eq!(CpuSpec::parse(""), Err(ParseCpuSetError::Empty));
        assert_eq!(CpuSpec::parse("!"), Err(ParseCpuSetError::Empty));
        assert!(CpuSpec::parse("!x").is_err());
        assert_eq!(CpuSpec::parse("ALL"), Ok(CpuSpec::All));
    }

    proptest::proptest! {
        #[test]
        fn list_round_trips(cpus in proptest::collection::btree_set(0u32..300, 0..40)) {
            let s = CpuSet(cpus);
            proptest::prop_assert_eq!(CpuSet::parse_list(&s.to_string()).unwrap(), s);
        }

        #[test]
        fn parser_never_panics(text in "[0-9,:/!a-z -]{0,20}") {
            let _ = CpuSpec::parse(&text);
            let _ = CpuSet::parse_mask(&text);
        }
    }
}
