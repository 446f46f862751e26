//! Cpuset groups beside rtlab's own — container engines' (`docker`, podman's
//! `libpod_parent`), libvirt's `machine.slice`, the kubelet's `kubepods` — whose CPUs overlap
//! the RT CPUs. On cgroup v1 the kernel refuses an exclusive cpuset while a sibling overlaps
//! it (EINVAL at `cpuset.cpu_exclusive`); on v2 an isolated partition is invalid while one
//! does. With [`Siblings::Confine`] each such group (and on v1 every group below it, which
//! may not outgrow its parent) is confined to the housekeeping CPUs, every write journaled and
//! reverted like the rest of the plan; with [`Siblings::Share`] they are left alone, the RT
//! cpuset is made without exclusivity, and the plan says what that costs.

use std::path::Path;

use model::CpuSet;
use model::tune::{Action, Change};
use sys::cpusets::CpusetGroup;

use super::Planner;

/// What to do with cpuset groups that overlap the RT CPUs (`--sibling-cpusets`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Siblings {
    /// Confine them to the housekeeping CPUs while tuned.
    #[default]
    Confine,
    /// Leave them; the RT cpuset is not exclusive (v1) or not an isolated partition (v2).
    Share,
}

/// rtlab's own groups, never siblings.
pub(super) const OWN: [&str; 2] = ["rtlab-housekeeping", "rtlab-rt"];

impl Planner<'_> {
    /// Plans the sibling groups under `base` (`v2`: the unified hierarchy). Returns whether
    /// the RT group may be made exclusive (an isolated partition on v2).
    pub(super) fn siblings(&mut self, base: &str, v2: bool) -> bool {
        let groups = match sys::cpusets::top_level(self.root, Path::new(base), &OWN) {
            Ok(g) => g,
            Err(e) => {
                self.notes.push(format!(
                    "the cpuset groups beside rtlab's could not be read ({e}); one that \
                     overlaps the RT CPUs makes the exclusive RT cpuset fail"
                ));
                return true;
            }
        };
        // On v1 an exclusive sibling may overlap neither rtlab group; a plain one only the
        // exclusive RT group.
        let in_the_way: Vec<&CpusetGroup> = groups
            .iter()
            .filter(|g| {
                !g.cpus.intersection(self.rt).is_empty()
                    || (!v2 && g.exclusive && !g.cpus.intersection(self.hk).is_empty())
            })
            .collect();
        // A partition or exclusive cpuset within the RT CPUs is someone's real-time
        // arrangement already: its tasks keep their CPUs, and rtlab-rt shares them.
        let (theirs, in_the_way): (Vec<&CpusetGroup>, Vec<&CpusetGroup>) = in_the_way
            .into_iter()
            .partition(|g| (g.partition.is_some() || g.exclusive) && g.cpus.is_subset(self.rt));
        if !theirs.is_empty() {
            let named = theirs
                .iter()
                .map(|g| format!("{} (CPUs {})", g.name(), g.cpus))
                .collect::<Vec<_>>()
                .join(", ");
            self.notes.push(format!(
                "{named}: a cpuset partition or exclusive cpuset of its own within the RT CPUs, \
                 left as it is (its tasks keep their CPUs); rtlab-rt is made beside it without \
                 exclusivity, so run the real-time work in one or the other"
            ));
        }
        if in_the_way.is_empty() {
            return theirs.is_empty();
        }
        let named = in_the_way
            .iter()
            .map(|g| format!("{} (CPUs {})", g.name(), g.cpus))
            .collect::<Vec<_>>()
            .join(", ");
        match self.sibling_mode {
            Siblings::Confine => {
                self.confine_siblings(&in_the_way, &named, v2);
                theirs.is_empty()
            }
            Siblings::Share => {
                let what = if v2 {
                    "not an isolated partition: the RT CPUs stay in the scheduler's load \
                     balancing"
                } else {
                    "not exclusive: the RT CPUs are balanced together with theirs in one \
                     scheduling domain"
                };
                self.notes.push(format!(
                    "cpuset groups beside rtlab's overlap the RT CPUs {}: {named}. With \
                     --sibling-cpusets share they keep their CPUs, so their tasks may run on \
                     the RT CPUs, and rtlab-rt is {what}",
                    self.rt
                ));
                false
            }
        }
    }

    /// Confines the sibling groups `in_the_way` (`named` in words) to the housekeeping
    /// CPUs, and notes it (with the kubelet's way when kubepods is among them).
    fn confine_siblings(&mut self, in_the_way: &[&CpusetGroup], named: &str, v2: bool) {
        for g in in_the_way {
            if v2 {
                // A partition of its own would take the housekeeping CPUs it is
                // confined to away from everything else: a member first.
                if let Some(kind) = &g.partition {
                    self.sibling_write(&g.path, "cpuset.cpus.partition", kind, &"member");
                }
                let new = confined(&g.cpus, self.hk);
                self.sibling_write(&g.path, "cpuset.cpus", &g.cpus.to_string(), &new);
            } else {
                self.clear_exclusive(g);
                self.confine_v1(g, self.hk);
            }
        }
        self.notes.push(format!(
            "cpuset groups beside rtlab's overlap the RT CPUs {}: {named}. They are \
             confined to the housekeeping CPUs {} while tuned (journaled; `rtlab tune \
             revert` gives their CPUs back), so what they run, containers started \
             meanwhile included, stays off the RT CPUs. `--sibling-cpusets share` \
             leaves them alone instead, without an exclusive RT cpuset",
            self.rt, self.hk
        ));
        if in_the_way.iter().any(|g| g.name().starts_with("kubepods")) {
            self.notes.push(
                "the kubelet manages kubepods' cpusets and may widen them again: on a \
                 Kubernetes node keep pods off the RT CPUs with the kubelet's static \
                 CPU manager (reservedSystemCPUs) and give RT pods whole CPUs"
                    .to_string(),
            );
        }
    }

    /// v1: clears `cpuset.cpu_exclusive` on `g` and every exclusive group below it, children
    /// first (a parent may not drop exclusivity a child keeps).
    fn clear_exclusive(&mut self, g: &CpusetGroup) {
        for c in &g.children {
            self.clear_exclusive(c);
        }
        if g.exclusive {
            self.sibling_write(&g.path, "cpuset.cpu_exclusive", "1", &"0");
        }
    }

    /// v1: confines `g` within `parent_new` (its parent's confined CPUs, or the housekeeping
    /// CPUs at the top) and every group below it. A child may not hold a CPU its parent lacks,
    /// so a group that must take CPUs it did not have is first widened to both, its children
    /// confined, then the group narrowed.
    fn confine_v1(&mut self, g: &CpusetGroup, parent_new: &CpuSet) {
        if g.cpus.is_empty() {
            return;
        }
        let new = confined(&g.cpus, parent_new);
        // Only a group with children to move along needs the detour.
        let wider = !new.is_subset(&g.cpus) && g.children.iter().any(|c| !c.cpus.is_empty());
        if wider {
            let both = g.cpus.union(&new);
            self.sibling_write(&g.path, "cpuset.cpus", &g.cpus.to_string(), &both);
        }
        for c in &g.children {
            self.confine_v1(c, &new);
        }
        if new != g.cpus {
            let from = if wider {
                g.cpus.union(&new)
            } else {
                g.cpus.clone()
            };
            self.sibling_write(&g.path, "cpuset.cpus", &from.to_string(), &new);
        }
    }

    /// One write to a sibling group's file (`current` as the plan expects it then).
    fn sibling_write(&mut self, dir: &Path, file: &str, current: &str, new: &dyn ToString) {
        let path = dir.join(file).to_string_lossy().into_owned();
        let reason = if file == "cpuset.cpu_exclusive" {
            "an exclusive cpuset beside rtlab's would keep the RT and housekeeping groups from \
             being made"
        } else if file == "cpuset.cpus.partition" {
            "a partition beside rtlab's, confined to the housekeeping CPUs, would take them \
             from every other task"
        } else {
            "a cpuset group beside rtlab's keeps off the RT CPUs"
        };
        self.changes.push(Change {
            group: "cpuset".to_string(),
            action: Action::Write,
            path,
            current: Some(current.to_string()),
            new: Some(new.to_string()),
            reason: reason.to_string(),
        });
    }
}

/// `cpus` within `allowed`; all of `allowed` when they share no CPU (a cpuset with tasks may
/// not be left without CPUs).
fn confined(cpus: &CpuSet, allowed: &CpuSet) -> CpuSet {
    let kept = cpus.intersection(allowed);
    if kept.is_empty() {
        allowed.clone()
    } else {
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confined_keeps_what_it_can() {
        let hk: CpuSet = "0-1".parse().unwrap();
        assert_eq!(confined(&"0-3".parse().unwrap(), &hk), hk);
        assert_eq!(confined(&"1-3".parse().unwrap(), &hk), "1".parse().unwrap());
        assert_eq!(confined(&"2-3".parse().unwrap(), &hk), hk);
    }
}
