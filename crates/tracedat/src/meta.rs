//! What a recording saved beside its events to name things: the kernel's symbols
//! (`/proc/kallsyms`, to turn a timer's callback address into `hrtimer_wakeup`) and the task
//! names the kernel remembered (`saved_cmdlines`, to name a record's pid).

use std::collections::HashMap;

/// The kernel's symbols, sorted by address, names in one arena.
#[derive(Clone, Debug, Default)]
pub struct Symbols {
    /// (address, start and length of the name in `names`).
    addrs: Vec<(u64, u32, u16)>,
    names: String,
}

impl Symbols {
    /// Reads kallsyms text (`ffffffff81000000 T _stext [module]`). A recording made without the
    /// right to see addresses has them all zero: no symbol is kept then.
    pub fn parse(text: &str) -> Symbols {
        let mut s = Symbols::default();
        for line in text.lines() {
            let mut it = line.split_whitespace();
            let (Some(addr), Some(_kind), Some(name)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            let (Ok(start), Ok(len)) = (u32::try_from(s.names.len()), u16::try_from(name.len()))
            else {
                continue;
            };
            if addr == 0 {
                continue;
            }
            s.names.push_str(name);
            s.addrs.push((addr, start, len));
        }
        s.addrs.sort_by_key(|&(a, _, _)| a);
        s
    }

    /// How many symbols.
    pub fn len(&self) -> usize {
        self.addrs.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.addrs.is_empty()
    }

    /// The address of the symbol named `name` (a scan: for the few looked up once).
    pub fn address(&self, name: &str) -> Option<u64> {
        self.addrs
            .iter()
            .find(|&&(_, start, len)| {
                self.names
                    .get(start as usize..start as usize + usize::from(len))
                    == Some(name)
            })
            .map(|&(a, _, _)| a)
    }

    /// The symbol containing `addr` (the last at or below it), as the kernel's `%ps` names it;
    /// `None` below the first symbol.
    pub fn name(&self, addr: u64) -> Option<&str> {
        let i = self.addrs.partition_point(|&(a, _, _)| a <= addr);
        let (_, start, len) = *self.addrs.get(i.checked_sub(1)?)?;
        self.names
            .get(start as usize..start as usize + usize::from(len))
    }
}

/// Task names by pid, as `saved_cmdlines` had them when the recording ended.
#[derive(Clone, Debug, Default)]
pub struct Comms {
    by_pid: HashMap<u32, String>,
}

impl Comms {
    /// Reads `saved_cmdlines` text (`PID COMM` lines; a name may hold spaces).
    pub fn parse(text: &str) -> Comms {
        let mut by_pid = HashMap::new();
        for line in text.lines() {
            let line = line.trim_start();
            let Some((pid, comm)) = line.split_once(' ') else {
                continue;
            };
            if let Ok(pid) = pid.parse::<u32>() {
                by_pid.insert(pid, comm.to_string());
            }
        }
        Comms { by_pid }
    }

    /// The name of `pid`.
    pub fn get(&self, pid: u32) -> Option<&str> {
        self.by_pid.get(&pid).map(String::as_str)
    }

    /// How many names.
    pub fn len(&self) -> usize {
        self.by_pid.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.by_pid.is_empty()
    }

    /// Every (pid, name), in pid order (the writer's side).
    pub fn sorted(&self) -> Vec<(u32, &str)> {
        let mut v: Vec<(u32, &str)> = self.by_pid.iter().map(|(p, c)| (*p, c.as_str())).collect();
        v.sort_unstable();
        v
    }

    /// Adds or replaces a name.
    pub fn insert(&mut self, pid: u32, comm: &str) {
        self.by_pid.insert(pid, comm.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_name_the_function_an_address_falls_in() {
        let s = Symbols::parse(
            "ffffffff81000000 T _stext\nffffffff81100000 t hrtimer_wakeup\n\
             ffffffff81100100 T next_one [mod]\nnot a line\n",
        );
        assert_eq!(s.len(), 3);
        assert_eq!(s.name(0xffff_ffff_8110_0000), Some("hrtimer_wakeup"));
        assert_eq!(s.name(0xffff_ffff_8110_0010), Some("hrtimer_wakeup"));
        assert_eq!(s.name(0xffff_ffff_8110_0100), Some("next_one"));
        assert_eq!(s.name(0x10), None);
        assert_eq!(s.address("next_one"), Some(0xffff_ffff_8110_0100));
        assert_eq!(s.address("nothing"), None);
        let hidden = Symbols::parse("0000000000000000 T _stext\n0000000000000000 t x\n");
        assert!(hidden.is_empty(), "kptr_restrict hides every address");
    }

    #[test]
    fn comms_keep_names_with_spaces() {
        let c = Comms::parse("1 systemd\n  42 kworker/0:1 foo\nx y\n");
        assert_eq!(c.get(42), Some("kworker/0:1 foo"));
        assert_eq!(c.get(1), Some("systemd"));
        assert_eq!(c.len(), 2);
    }
}
