//! The cpuset part of a plan: an isolated cgroup v2 partition for the RT CPUs (a plain group
//! where the boot line's `isolcpus=` isolated them already, which the kernel refuses a
//! partition over) and a housekeeping group every movable task moves to, or v1 exclusive
//! cpusets where v2 has no cpuset controller; the groups beside them are planned in
//! [`super::siblings`].

use model::CpuSet;
use model::tune::{Action, Change};

use super::Planner;

impl Planner<'_> {
    /// Which cgroup cpuset is there: `Some(true)` v2 with the cpuset controller, `Some(false)`
    /// v1 cpuset, `None` neither.
    pub(super) fn cpuset_v2_or_v1(&self) -> Option<bool> {
        let v2 = self
            .root
            .read_trimmed("/sys/fs/cgroup/cgroup.controllers")
            .is_some_and(|c| c.split_whitespace().any(|w| w == "cpuset"));
        if v2 {
            Some(true)
        } else if self.root.exists("/sys/fs/cgroup/cpuset/cpuset.cpus") {
            Some(false)
        } else {
            None
        }
    }

    /// An isolated cpuset partition for the RT CPUs and a housekeeping group for every
    /// movable task (cgroup v2), or exclusive v1 cpusets with load balancing off.
    pub(super) fn cpusets(&mut self) {
        match self.cpuset_v2_or_v1() {
            Some(true) => self.v2_cpusets(),
            Some(false) => self.v1_cpusets(),
            None => self.notes.push(
                "no cpuset controller (cgroup v2 or v1): the RT CPUs can only be isolated with \
                 isolcpus= on the boot line (in the plan's boot parameters)"
                    .to_string(),
            ),
        }
    }

    /// The cgroup v2 layout: the controller enabled for the children, the housekeeping group,
    /// and the RT group as an isolated partition, or a plain group where the boot line
    /// isolated the RT CPUs already.
    fn v2_cpusets(&mut self) {
        let base = "/sys/fs/cgroup";
        let control = self
            .root
            .read_trimmed(format!("{base}/cgroup.subtree_control"))
            .unwrap_or_default();
        if !control.split_whitespace().any(|w| w == "cpuset") {
            self.changes.push(Change {
                group: "cpuset".to_string(),
                action: Action::Write,
                path: format!("{base}/cgroup.subtree_control"),
                current: Some(control),
                new: Some("+cpuset".to_string()),
                reason: "child cgroups get the cpuset controller".to_string(),
            });
        }
        let exclusive = self.siblings(base, true);
        self.housekeeping_group(base);
        let by_boot = self.rt_isolated_by_boot();
        let (partition, reason) = if by_boot.is_empty() {
            (
                exclusive.then_some("isolated"),
                "an isolated partition: the RT CPUs leave the scheduler's load balancing and \
                 only tasks put there run on them",
            )
        } else {
            (
                None,
                "a cpuset for the real-time tasks; the boot line already keeps the RT CPUs out \
                 of load balancing",
            )
        };
        self.group(base, "rtlab-rt", self.rt, partition, reason);
        if !by_boot.is_empty() {
            self.boot_isolation_note(&by_boot);
        }
        self.move_tasks(base, "cgroup.procs");
    }

    /// The v1 layout: exclusive cpusets, the root's load balancing off.
    fn v1_cpusets(&mut self) {
        let base = "/sys/fs/cgroup/cpuset";
        let exclusive = self.siblings(base, false);
        self.housekeeping_group(base);
        self.group(
            base,
            "rtlab-rt",
            self.rt,
            None,
            "an exclusive cpuset for the RT CPUs",
        );
        if exclusive {
            self.write(
                "cpuset",
                &format!("{base}/rtlab-rt/cpuset.cpu_exclusive"),
                "1",
                "no other cpuset may use the RT CPUs",
            );
        }
        self.write(
            "cpuset",
            &format!("{base}/cpuset.sched_load_balance"),
            "0",
            "the root cpuset stops balancing load across all CPUs, so the RT CPUs are \
             balanced only within their own set",
        );
        self.move_tasks(base, "tasks");
        self.notes.push(
            "cgroup v2 here has no cpuset controller, so the plan uses the v1 cpuset \
             hierarchy"
                .to_string(),
        );
    }

    /// The housekeeping group under `base`, on the housekeeping CPUs.
    fn housekeeping_group(&mut self, base: &str) {
        self.group(
            base,
            "rtlab-housekeeping",
            self.hk,
            None,
            "every task that may move runs on the housekeeping CPUs",
        );
    }

    /// The RT CPUs the boot line already took out of the scheduler's domains (`isolcpus=` with
    /// the `domain` flag, or none: `/sys/devices/system/cpu/isolated`).
    fn rt_isolated_by_boot(&self) -> CpuSet {
        sys::cpu::isolated(self.root)
            .unwrap_or_default()
            .intersection(self.rt)
    }

    /// Says what the plan relies on when the boot isolated (some of) the RT CPUs: the kernel
    /// refuses a partition over boot-isolated CPUs (6.12: "partition config conflicts with
    /// housekeeping setup"), and they need none.
    fn boot_isolation_note(&mut self, by_boot: &CpuSet) {
        let rest = self.rt.difference(by_boot);
        let mut note = format!(
            "relies on the boot line for {}: isolcpus= keeps {} out of the scheduler's load \
             balancing already, so rtlab-rt is a plain cpuset (no partition: the kernel refuses \
             one over CPUs the boot isolated) that holds the real-time tasks",
            by_boot.with_noun(),
            if by_boot.len() == 1 { "it" } else { "them" }
        );
        if !rest.is_empty() {
            note.push_str(&format!(
                "; {} {} not in isolcpus= and stay{} in load balancing: add {} to isolcpus= \
                 (the plan's boot parameters)",
                rest.with_noun(),
                if rest.len() == 1 { "is" } else { "are" },
                if rest.len() == 1 { "s" } else { "" },
                if rest.len() == 1 { "it" } else { "them" }
            ));
        }
        self.notes.push(note);
    }

    /// Plans the group `name` under `base` with `cpus` (and a partition type).
    fn group(
        &mut self,
        base: &str,
        name: &str,
        cpus: &CpuSet,
        partition: Option<&str>,
        reason: &str,
    ) {
        let dir = format!("{base}/{name}");
        if !self.root.exists(&dir) {
            self.changes.push(Change {
                group: "cpuset".to_string(),
                action: Action::Mkdir,
                path: dir.clone(),
                current: None,
                new: None,
                reason: reason.to_string(),
            });
        }
        let mems = self
            .root
            .read_trimmed(format!("{base}/cpuset.mems.effective"))
            .or_else(|| self.root.read_trimmed(format!("{base}/cpuset.mems")))
            .unwrap_or_else(|| "0".to_string());
        self.write(
            "cpuset",
            &format!("{dir}/cpuset.cpus"),
            &cpus.to_string(),
            reason,
        );
        self.write(
            "cpuset",
            &format!("{dir}/cpuset.mems"),
            &mems,
            "memory nodes the group may use",
        );
        if let Some(kind) = partition {
            self.write(
                "cpuset",
                &format!("{dir}/cpuset.cpus.partition"),
                kind,
                reason,
            );
        }
    }

    /// Plans moving the tasks listed in `base/file` (the root group's) into the housekeeping
    /// group's `file`.
    fn move_tasks(&mut self, base: &str, file: &str) {
        let from = format!("{base}/{file}");
        let count = self
            .root
            .read_trimmed(&from)
            .map_or(0, |t| t.lines().count());
        self.changes.push(Change {
            group: "cpuset".to_string(),
            action: Action::MoveTasks,
            path: format!("{base}/rtlab-housekeeping/{file}"),
            current: Some(from),
            new: Some(count.to_string()),
            reason: "the tasks of the root group move to the housekeeping group (kernel threads \
                     that cannot move stay)"
                .to_string(),
        });
    }
}
