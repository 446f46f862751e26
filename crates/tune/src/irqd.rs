//! `tune irqd`'s work (the RT-Summit 2017 talk, "RT trouble #4": an IRQ requested after tuning — a module
//! loaded, a device plugged, a NIC brought up — starts wherever the default affinity allows and
//! its thread at the default priority). Each [`Irqd::pass`] looks at /proc/interrupts; when its
//! set of IRQs or handlers changed (or a recheck is due, catching what irqbalance or a person
//! moved back), it plans the IRQ part again and carries out what differs, adding every
//! original to the tuning's journal so that `tune revert` takes it back with the rest.
//!
//! The caller owns the loop and the signals; a pass only reads and writes through [`Root`].

use std::collections::BTreeSet;
use std::path::Path;

use sys::Root;

use crate::apply::apply_changes;
use crate::journal::Journal;
use crate::outcome::Outcome;
use crate::plan::{Request, plan_irqs};

/// The watcher: what it plans for, the journal it adds to, what it saw last.
#[derive(Debug)]
pub struct Irqd {
    req: Request,
    journal: Journal,
    seen: Option<String>,
    /// IRQ affinity files the kernel refused: not tried again until the IRQs change.
    refused: BTreeSet<String>,
}

/// What a pass found.
#[derive(Debug, PartialEq, Eq)]
pub enum Pass {
    /// /proc/interrupts shows the same IRQs as last time and no recheck was asked.
    Unchanged,
    /// The IRQ part was planned again; what was done (nothing, when all was in place).
    Checked(Outcome),
    /// The journal was closed by `tune revert`: the tuning is gone, so is the watcher's job.
    Reverted,
}

impl Irqd {
    /// A watcher adding to the journal at `journal_path` (created when absent).
    pub fn new(req: Request, journal_path: &Path) -> Result<Irqd, String> {
        Ok(Irqd {
            req,
            journal: Journal::append(journal_path)?,
            seen: None,
            refused: BTreeSet::new(),
        })
    }

    /// One look: plans and applies when the IRQs changed since the last pass, or always with
    /// `recheck`.
    pub fn pass(&mut self, root: &Root, recheck: bool) -> Result<Pass, String> {
        // A revert under way finishes first; then the journal is no longer the tuning's.
        self.journal.take()?;
        let pass = self.look(root, recheck);
        self.journal.release();
        pass
    }

    fn look(&mut self, root: &Root, recheck: bool) -> Result<Pass, String> {
        if !self.journal.is_current() {
            return Ok(Pass::Reverted);
        }
        let now = fingerprint(root)?;
        let changed = self.seen.as_deref() != Some(now.as_str());
        if !changed && !recheck {
            return Ok(Pass::Unchanged);
        }
        if changed {
            self.refused.clear();
        }
        let (changes, _notes) = plan_irqs(root, &self.req).map_err(|e| e.to_string())?;
        let changes: Vec<_> = changes
            .into_iter()
            .filter(|c| !self.refused.contains(&c.path))
            .collect();
        let out = apply_changes(root, &changes, &mut self.journal, None)?;
        for s in out.skipped.iter().filter(|s| s.contains("refuses to move")) {
            if let Some((path, _)) = s.split_once(": ") {
                self.refused.insert(path.to_string());
            }
        }
        self.seen = Some(now);
        Ok(Pass::Checked(out))
    }
}

/// What identifies the IRQs in /proc/interrupts: each row's name and its description (chip,
/// hardware number, trigger, handler names), without the counts that change all the time.
pub fn fingerprint(root: &Root) -> Result<String, String> {
    let text = root
        .read(sys::irq::PROC_INTERRUPTS)
        .map_err(|e| e.to_string())?;
    let mut lines = text.lines();
    let cpus = lines.next().map_or(0, |h| h.split_whitespace().count());
    let mut out = String::new();
    for line in lines {
        let mut words = line.split_whitespace();
        let Some(name) = words.next() else { continue };
        out.push_str(name);
        for w in words.skip(cpus) {
            out.push(' ');
            out.push_str(w);
        }
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_ignores_counts() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        let write = |text: &str| {
            std::fs::create_dir_all(dir.path().join("proc")).unwrap();
            std::fs::write(dir.path().join("proc/interrupts"), text).unwrap();
        };
        write("   CPU0 CPU1\n 24: 1 2 IR-PCI-MSI 1-edge eth0\nNMI: 0 0 Non-maskable\n");
        let a = fingerprint(&root).unwrap();
        assert_eq!(a, "24: IR-PCI-MSI 1-edge eth0\nNMI: Non-maskable\n");
        write("   CPU0 CPU1\n 24: 9 9 IR-PCI-MSI 1-edge eth0\nNMI: 3 0 Non-maskable\n");
        assert_eq!(fingerprint(&root).unwrap(), a);
        write("   CPU0 CPU1\n 24: 9 9 IR-PCI-MSI 1-edge eth0, eth0-tx\nNMI: 3 0 Non-maskable\n");
        assert_ne!(fingerprint(&root).unwrap(), a);
    }
}
