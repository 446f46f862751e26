//! IRQ rules (`rtlab tune --irq-rule`, `rtlab tune irqd`): which IRQs a rule is about (a name
//! pattern), where they may run (a CPU list) and how their handler threads are scheduled
//! (`fifo:80`). Parsing and matching only; the tune room turns a rule into changes.
//!
//! The written form is `PATTERN=[POLICY[:PRIO]][@CPUS]`, for example `irq/*-eth0=fifo:80@0-1`,
//! `eth0-rx-*=@2`, `ahci*=other`. A pattern is a glob (`*` any run of characters, `?` one
//! character) matched against an IRQ's thread name `irq/<N>-<name>`, its name `<name>` (each
//! handler's name in /proc/interrupts) and its number.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::CpuSet;
use crate::measure::Policy;

/// How a thread is scheduled: a policy and, for fifo/rr, its priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadSched {
    /// `fifo`, `rr` or `other`.
    pub policy: Policy,
    /// 1–99 for fifo and rr, 0 for other.
    pub priority: u8,
}

impl fmt::Display for ThreadSched {
    /// `chrt`'s way: `FIFO 80`, `RR 50`, `OTHER`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.policy.as_str().to_uppercase();
        if self.policy.takes_priority() {
            write!(f, "{name} {}", self.priority)
        } else {
            f.write_str(&name)
        }
    }
}

impl FromStr for ThreadSched {
    type Err = String;

    /// Reads `fifo:80`, `rr:10`, `other`, and the displayed form `FIFO 80`.
    fn from_str(s: &str) -> Result<ThreadSched, String> {
        let s = s.trim();
        let (name, prio) = match s.split_once([':', ' ']) {
            Some((n, p)) => (n, Some(p.trim())),
            None => (s, None),
        };
        let policy = match name.to_ascii_lowercase().as_str() {
            "fifo" => Policy::Fifo,
            "rr" => Policy::Rr,
            "other" => Policy::Other,
            _ => {
                return Err(format!(
                    "policy `{name}`: use fifo:PRIO, rr:PRIO or other (for example fifo:80)"
                ));
            }
        };
        let priority = match (policy.takes_priority(), prio) {
            (true, Some(p)) => match p.parse::<u8>() {
                Ok(n @ 1..=99) => n,
                _ => return Err(format!("priority `{p}`: fifo and rr take 1 to 99")),
            },
            (true, None) => {
                return Err(format!(
                    "`{name}` needs a priority: {name}:PRIO with PRIO from 1 to 99"
                ));
            }
            (false, None) => 0,
            (false, Some(p)) => return Err(format!("`{name}` takes no priority (`{p}`)")),
        };
        Ok(ThreadSched { policy, priority })
    }
}

/// One rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IrqRule {
    /// The glob the IRQ's thread name, name or number must match.
    pub pattern: String,
    /// How its threads are scheduled; none: as they are.
    pub sched: Option<ThreadSched>,
    /// Where it may run; none: where the plan puts every IRQ (the housekeeping CPUs).
    pub cpus: Option<CpuSet>,
}

impl IrqRule {
    /// Whether the IRQ numbered `number`, whose handlers are named `names`, falls under it.
    pub fn matches(&self, number: &str, names: &[String]) -> bool {
        glob(&self.pattern, number)
            || names.iter().any(|n| {
                glob(&self.pattern, n) || glob(&self.pattern, &format!("irq/{number}-{n}"))
            })
    }
}

impl fmt::Display for IrqRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}=", self.pattern)?;
        if let Some(s) = &self.sched {
            write!(f, "{}", s.policy.as_str())?;
            if s.policy.takes_priority() {
                write!(f, ":{}", s.priority)?;
            }
        }
        if let Some(c) = &self.cpus {
            write!(f, "@{c}")?;
        }
        Ok(())
    }
}

impl FromStr for IrqRule {
    type Err = String;

    /// Reads `PATTERN=[POLICY[:PRIO]][@CPUS]`.
    fn from_str(s: &str) -> Result<IrqRule, String> {
        let (pattern, what) = s.trim().rsplit_once('=').ok_or_else(|| {
            format!("`{s}`: write PATTERN=POLICY[:PRIO][@CPUS], for example irq/*-eth0=fifo:80@0-1")
        })?;
        let pattern = pattern.trim();
        if pattern.is_empty() {
            return Err(format!("`{s}`: the pattern before `=` is empty"));
        }
        let (sched, cpus) = match what.split_once('@') {
            Some((p, c)) => (p.trim(), Some(c.trim())),
            None => (what.trim(), None),
        };
        let sched = if sched.is_empty() {
            None
        } else {
            Some(
                sched
                    .parse::<ThreadSched>()
                    .map_err(|e| format!("`{s}`: {e}"))?,
            )
        };
        let cpus = match cpus {
            Some(c) => Some(
                c.parse::<CpuSet>()
                    .map_err(|e| format!("`{s}`: CPU list `{c}`: {e}"))?,
            ),
            None => None,
        };
        if sched.is_none() && cpus.is_none() {
            return Err(format!(
                "`{s}`: the rule changes nothing; give a policy (fifo:80), CPUs (@0-1) or both"
            ));
        }
        if cpus.as_ref().is_some_and(CpuSet::is_empty) {
            return Err(format!("`{s}`: the CPU list is empty"));
        }
        Ok(IrqRule {
            pattern: pattern.to_string(),
            sched,
            cpus,
        })
    }
}

/// Reads a rules file: one rule per line; blank lines and `#` comments are skipped. Errors
/// name the line.
pub fn parse_rules(text: &str) -> Result<Vec<IrqRule>, String> {
    let mut rules = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        rules.push(line.parse().map_err(|e| format!("line {}: {e}", i + 1))?);
    }
    Ok(rules)
}

/// Glob match: `*` any run of characters (also none), `?` exactly one; the rest literally.
pub fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    // Where the last `*` was, and where in the text it started matching.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob("irq/*-eth0", "irq/24-eth0"));
        assert!(glob("*", ""));
        assert!(glob("eth0-rx-?", "eth0-rx-3"));
        assert!(!glob("eth0-rx-?", "eth0-rx-13"));
        assert!(glob("a*b*c", "aXXbYYbc"));
        assert!(!glob("a*b*c", "aXXbYYb"));
        assert!(glob("24", "24"));
        assert!(!glob("2", "24"));
    }

    #[test]
    fn reads_and_writes_rules() {
        let r: IrqRule = "irq/*-eth0=fifo:80@0-1".parse().unwrap();
        assert_eq!(r.pattern, "irq/*-eth0");
        assert_eq!(
            r.sched,
            Some(ThreadSched {
                policy: Policy::Fifo,
                priority: 80
            })
        );
        assert_eq!(r.cpus, Some("0-1".parse().unwrap()));
        assert_eq!(r.to_string(), "irq/*-eth0=fifo:80@0-1");
        let r: IrqRule = "ahci*=@3".parse().unwrap();
        assert_eq!((r.sched, r.to_string()), (None, "ahci*=@3".to_string()));
        let r: IrqRule = " 24 = other ".parse().unwrap();
        assert_eq!(r.to_string(), "24=other");
        assert_eq!(
            "FIFO 80".parse::<ThreadSched>().unwrap().to_string(),
            "FIFO 80"
        );
    }

    #[test]
    fn refuses_bad_rules_with_the_fix() {
        for (bad, says) in [
            ("eth0", "PATTERN=POLICY"),
            ("=fifo:80", "pattern before"),
            ("eth0=", "changes nothing"),
            ("eth0=fifo", "needs a priority"),
            ("eth0=fifo:0", "1 to 99"),
            ("eth0=fifo:100", "1 to 99"),
            ("eth0=other:5", "takes no priority"),
            ("eth0=deadline:5", "fifo:PRIO"),
            ("eth0=@x", "CPU list"),
        ] {
            let e = bad.parse::<IrqRule>().unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn matches_thread_name_name_and_number() {
        let names = vec!["eth0-rx-0".to_string(), "eth0-tx".to_string()];
        let m = |p: &str| {
            IrqRule {
                pattern: p.to_string(),
                sched: None,
                cpus: None,
            }
            .matches("57", &names)
        };
        assert!(m("irq/57-eth0-rx-*"));
        assert!(m("irq/*-eth0-tx"));
        assert!(m("eth0-*"));
        assert!(m("57"));
        assert!(!m("eth1*"));
        assert!(!m("irq/58-*"));
    }

    #[test]
    fn a_rules_file_names_its_bad_line() {
        let rules = parse_rules("# nic\nirq/*-eth0=fifo:80 # rx\n\nahci=@0\n").unwrap();
        assert_eq!(rules.len(), 2);
        let e = parse_rules("a=@0\nb=fifo\n").unwrap_err();
        assert!(e.starts_with("line 2:"), "{e}");
    }
}
