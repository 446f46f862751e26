//! Where `measure` and `noise` put their real-time threads on a tuned machine: after `rtlab
//! tune apply` every task (this shell too) sits in the housekeeping cpuset, so a measurement
//! started from it would measure a housekeeping CPU, or be refused the RT CPUs. With no
//! `--cpus`, or with CPUs that all lie in the RT cpuset the tuning made, the process joins that
//! cpuset before any thread starts (threads and children follow it) and the result says so; a
//! load it starts is sent back to the housekeeping cpuset. Untuned machines, fixture roots and
//! scripted clocks are left alone.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use model::measure::Warning;
use model::{CpuSet, CpuSpec};
use sys::Root;

/// The warning code a result carries when its CPUs were chosen by the tuning.
pub const TUNED_CODE: &str = "tuned-rt-cpus";

/// The RT cpuset this process joined (or was already in), for the result and the load.
#[derive(Clone, Debug)]
pub struct Placed {
    /// The RT cpuset's directory.
    pub group: String,
    /// Its CPUs.
    pub cpus: CpuSet,
    /// The housekeeping cpuset beside it, where a load goes; `None` when there is none.
    pub housekeeping: Option<String>,
    /// Whether `--cpus` was left out, so the tuning chose the CPUs.
    pub chosen_by_tuning: bool,
}

impl Placed {
    /// The note for the result: which CPUs were measured and why.
    pub fn warning(&self) -> Warning {
        let why = if self.chosen_by_tuning {
            format!(
                "the machine is tuned (rtlab tune apply): measured its RT {} from inside the RT cpuset {}; --cpus picks other CPUs",
                self.cpus.with_noun(),
                self.group
            )
        } else {
            format!(
                "the machine is tuned (rtlab tune apply): measured from inside the RT cpuset {} ({})",
                self.group,
                self.cpus.with_noun()
            )
        };
        Warning::new(TUNED_CODE, why)
    }
}

/// The RT cpuset of the tuning, with its CPUs, when it is there: the one the journal names,
/// else the one the machine has (a tuning applied with its journal elsewhere: whether the
/// machine is tuned is a fact of its cpusets, not of where a journal was written).
fn tuned_rt_cpuset(root: &Root, journal: &Path) -> Option<(String, CpuSet)> {
    let group = journal
        .exists()
        .then(|| tune::rt_group(journal).ok())
        .flatten()
        .or_else(|| rt_cpuset_on(root))?;
    if !root.exists(&group) {
        return None;
    }
    let cpus = sys::launch::cgroup_cpus(root, &group).filter(|c| !c.is_empty())?;
    Some((group, cpus))
}

/// The RT cpuset `rtlab tune apply` makes, where the machine has it: the cgroup v2 partition
/// `/sys/fs/cgroup/rtlab-rt` the kernel accepted (or, where the boot line isolated its CPUs,
/// the plain cpuset tune makes there instead), else the v1 exclusive cpuset
/// `/sys/fs/cgroup/cpuset/rtlab-rt` (the two places tune makes it; no hierarchy is walked).
fn rt_cpuset_on(root: &Root) -> Option<String> {
    const V2: &str = "/sys/fs/cgroup/rtlab-rt";
    let text = root
        .read(format!("{V2}/cpuset.cpus.partition"))
        .unwrap_or_default();
    let valid =
        sys::partition::parse_partition(&text).is_some_and(|(_, invalid)| invalid.is_none());
    let over_boot_isolation = text.trim() == "member"
        && sys::launch::cgroup_cpus(root, V2).is_some_and(|cpus| {
            !cpus.is_empty() && cpus.is_subset(&sys::cpu::isolated(root).unwrap_or_default())
        });
    if valid || over_boot_isolation {
        return Some(V2.to_string());
    }
    sys::partition::v1_exclusive_cpusets(root)
        .into_iter()
        .map(|(p, _)| p)
        .find(|p| p.file_name().is_some_and(|n| n == "rtlab-rt"))
        .map(|p| p.display().to_string())
}

/// The warning code of a result whose CPUs the boot line's isolation chose.
pub const BOOT_ISOLATED_CODE: &str = "isolated-rt-cpus";

/// With no `--cpus` on a machine whose boot line set CPUs apart (`isolcpus=`, `nohz_full=`:
/// `/sys/devices/system/cpu/isolated` and `nohz_full`) and no tuning of rtlab's: those CPUs
/// (the online ones), as a tuning's RT cpuset would be chosen, and the note for the result.
/// `None` with `--cpus`, on an untuned machine, or off the host.
pub fn boot_isolated(root: &Root, spec: Option<&CpuSpec>) -> Option<(CpuSet, Warning)> {
    if spec.is_some() || !root.is_host() {
        return None;
    }
    let online = sys::cpu::online(root).ok()?;
    let isolated = sys::cpu::isolated(root)
        .unwrap_or_default()
        .union(&sys::cpu::nohz_full(root).unwrap_or_default())
        .intersection(&online);
    if isolated.is_empty() || isolated == online {
        return None;
    }
    let warning = Warning::new(
        BOOT_ISOLATED_CODE,
        format!(
            "measured the RT {} the boot line isolates (isolcpus=, nohz_full=); --cpus picks other CPUs",
            isolated.with_noun()
        ),
    );
    Some((isolated, warning))
}

/// Joins the RT cpuset of a tuning when `spec` (the `--cpus` given, or `None`) asks for RT
/// CPUs; `Ok(None)` when the machine is not tuned or the CPUs asked for are not all RT CPUs.
/// `online` resolves a CPU list without the process's own affinity (which is what changes).
pub fn place(root: &Root, spec: Option<&CpuSpec>, online: &CpuSet) -> Result<Option<Placed>> {
    place_with_journal(root, spec, online, Path::new(tune::journal::DEFAULT_PATH))
}

fn place_with_journal(
    root: &Root,
    spec: Option<&CpuSpec>,
    online: &CpuSet,
    journal: &Path,
) -> Result<Option<Placed>> {
    if !root.is_host() {
        return Ok(None);
    }
    let Some((group, cpus)) = tuned_rt_cpuset(root, journal) else {
        return Ok(None);
    };
    let chosen_by_tuning = match spec {
        None => true,
        Some(spec) => {
            let Ok(asked) = spec.resolve(online, online, online) else {
                return Ok(None);
            };
            if asked.is_empty() || !asked.is_subset(&cpus) {
                return Ok(None);
            }
            false
        }
    };
    let dir = PathBuf::from(&group);
    let here = sys::cgroup::own_cgroup(root, &dir).ok().flatten();
    if here.as_deref() != Some(dir.as_path()) {
        sys::cgroup::move_process(root, &dir, std::process::id())
            .with_context(|| format!("joining the RT cpuset {group} that rtlab tune apply made"))?;
    }
    let housekeeping = dir
        .parent()
        .map(|p| p.join("rtlab-housekeeping"))
        .filter(|p| root.exists(p.join("cgroup.procs")) || root.exists(p.join("tasks")))
        .map(|p| p.display().to_string());
    Ok(Some(Placed {
        group,
        cpus,
        housekeeping,
        chosen_by_tuning,
    }))
}
