//! Switch-ins for the first pass, the traced ones and the ones a trace leaves out (see
//! [`super::repair`] for why), in constant work per event: per CPU, the running task, the
//! handler depth, the tasks woken onto it, and an inferred switch held until the CPU's next
//! event confirms it (or shows the CPU still idle, which takes it back).

use rustc_hash::FxHashMap as HashMap;

use crate::event::Kind;
use crate::line::Event;

use super::owned::UNKNOWN_PRIO;

/// A task's name held inline (a kernel's are 15 bytes at most): the tracker copies names on
/// every switch and wake-up, and a heap string each time cost more than the rest of its work.
/// Longer names (hostile text) are cut at a character boundary within [`Comm::CAP`] bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Comm {
    len: u8,
    buf: [u8; Comm::CAP],
}

impl Comm {
    /// Bytes kept.
    pub(super) const CAP: usize = 31;

    pub(super) fn new(s: &str) -> Comm {
        let mut len = s.len().min(Comm::CAP);
        while !s.is_char_boundary(len) {
            len -= 1;
        }
        let mut buf = [0; Comm::CAP];
        buf[..len].copy_from_slice(&s.as_bytes()[..len]);
        Comm {
            len: len as u8,
            buf,
        }
    }

    /// The name's bytes (compared without the UTF-8 check of [`Comm::as_str`]).
    pub(super) fn as_bytes(&self) -> &[u8] {
        &self.buf[..usize::from(self.len)]
    }

    pub(super) fn as_str(&self) -> &str {
        // Cut at a character boundary of a `str`, so always UTF-8.
        std::str::from_utf8(&self.buf[..usize::from(self.len)]).unwrap_or("")
    }
}

impl std::fmt::Debug for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_str().fmt(f)
    }
}

/// A task switched in: pid, name, kernel priority ([`UNKNOWN_PRIO`] when unknown), CPU, time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct SwitchIn {
    pub pid: u32,
    pub comm: Comm,
    pub prio: i32,
    pub cpu: u32,
    pub ts_ns: u64,
}

#[derive(Clone, Debug, Default)]
struct Cpu {
    running: Option<u32>,
    depth: u32,
    /// Woken onto this CPU, not yet running: pid, name, priority.
    runnable: Vec<(u32, Comm, i32)>,
    /// An inferred switch from idle awaiting the CPU's next event.
    tentative: Option<(u32, Comm, i32, u64)>,
}

/// The tracker.
#[derive(Clone, Debug, Default)]
pub(super) struct Switches {
    cpus: Vec<Cpu>,
    prios: HashMap<u32, i32>,
}

/// `cpu`'s state, grown on first use.
fn slot(cpus: &mut Vec<Cpu>, cpu: u32) -> &mut Cpu {
    let i = cpu as usize;
    if cpus.len() <= i {
        cpus.resize_with(i + 1, Cpu::default);
    }
    &mut cpus[i]
}

impl Switches {
    /// The CPU `pid` is running on, as far as the trace has shown (never for the idle task).
    pub(super) fn running_on(&self, pid: u32) -> Option<u32> {
        if pid == 0 {
            return None;
        }
        self.cpus
            .iter()
            .position(|c| c.running == Some(pid))
            .and_then(|i| u32::try_from(i).ok())
    }

    /// Takes one event; pushes the switch-ins it reveals onto `out`.
    pub(super) fn event(&mut self, e: &Event<'_>, kind: &Kind<'_>, out: &mut Vec<SwitchIn>) {
        let in_irq = e.flags.map(|f| f.hardirq || f.softirq || f.nmi);
        let cpu = slot(&mut self.cpus, e.cpu);
        // Settle an inferred switch with this event.
        if let Some((pid, comm, prio, ts)) = cpu.tentative.take() {
            if matches!(kind, Kind::Switch { next, .. } if next.pid == pid) {
                // The traced switch to it: that time, not the inferred one.
            } else if e.pid == 0 && !matches!(kind, Kind::Switch { .. }) {
                cpu.runnable.push((pid, comm, prio)); // still idle: not yet
            } else {
                cpu.running = Some(pid);
                out.push(SwitchIn {
                    pid,
                    comm,
                    prio,
                    cpu: e.cpu,
                    ts_ns: ts,
                });
            }
        }
        match kind {
            Kind::Switch { prev, next, .. } => {
                self.prios.insert(prev.pid, prev.prio);
                self.prios.insert(next.pid, next.prio);
                cpu.runnable.retain(|t| t.0 != next.pid);
                cpu.depth = 0;
                if cpu.running != Some(next.pid) {
                    out.push(SwitchIn {
                        pid: next.pid,
                        comm: Comm::new(next.comm),
                        prio: next.prio,
                        cpu: e.cpu,
                        ts_ns: e.ts_ns,
                    });
                }
                cpu.running = Some(next.pid);
                return;
            }
            _ => {
                // A task the tracker did not know was running: it was switched in by now.
                if cpu.running.is_some_and(|r| r != e.pid) {
                    cpu.runnable.retain(|t| t.0 != e.pid);
                    out.push(SwitchIn {
                        pid: e.pid,
                        comm: Comm::new(e.task),
                        prio: self.prios.get(&e.pid).copied().unwrap_or(UNKNOWN_PRIO),
                        cpu: e.cpu,
                        ts_ns: e.ts_ns,
                    });
                }
                cpu.running = Some(e.pid);
            }
        }
        let edge = match kind {
            Kind::IrqEntry { .. } | Kind::SoftirqEntry { .. } | Kind::VectorEntry { .. } => {
                cpu.depth += 1;
                false
            }
            Kind::IrqExit { .. } | Kind::SoftirqExit { .. } | Kind::VectorExit { .. } => {
                cpu.depth = cpu.depth.saturating_sub(1);
                true
            }
            Kind::HrtimerExpireExit { .. } => true,
            Kind::Waking { task, target_cpu } | Kind::Wakeup { task, target_cpu } => {
                self.prios.insert(task.pid, task.prio);
                let target = target_cpu.unwrap_or(e.cpu);
                let t = slot(&mut self.cpus, target);
                if t.running != Some(task.pid) && !t.runnable.iter().any(|r| r.0 == task.pid) {
                    t.runnable.push((task.pid, Comm::new(task.comm), task.prio));
                }
                in_irq == Some(false) && target == e.cpu
            }
            _ => false,
        };
        let cpu = slot(&mut self.cpus, e.cpu);
        if edge && cpu.depth == 0 && cpu.running == Some(0) && !cpu.runnable.is_empty() {
            let best = (0..cpu.runnable.len())
                .min_by_key(|&i| cpu.runnable[i].2)
                .unwrap_or(0);
            let (pid, comm, prio) = cpu.runnable.remove(best);
            cpu.tentative = Some((pid, comm, prio, e.ts_ns));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Comm;

    #[test]
    fn a_name_is_kept_whole_or_cut_at_a_character_boundary() {
        assert_eq!(Comm::new("cyclictest").as_str(), "cyclictest");
        assert_eq!(Comm::new("").as_str(), "");
        let long = "é".repeat(20); // 40 bytes, 2 per character
        let cut = Comm::new(&long);
        assert_eq!(cut.as_str(), "é".repeat(15));
        assert_eq!(Comm::new(&"x".repeat(40)).as_str().len(), Comm::CAP);
        assert_eq!(Comm::new("a"), Comm::new("a"));
        assert_ne!(Comm::new("a"), Comm::new("b"));
    }
}
