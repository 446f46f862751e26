//! What the measuring commands (`rtlab measure`, `rtlab noise`, `rtlab hwlat`) do with a run
//! around the measurement, written once: the CPUs a selector names on this machine, the
//! outputs checked before anything is measured, the result file rewritten at each checkpoint,
//! the run kept (file, store, push), and the verdict the finished run gets
//! ([`model::gate::judge`] against the budget it was measured with), said on standard error
//! and turned into the exit status.

use std::path::Path;

use anyhow::Result;
use model::measure::{MeasureRun, RunStatus};

use crate::console::Console;
use crate::exit::{Exit, UsageError};
use crate::runs::Keep;

/// Where a measuring command's run goes ([`Keep`]), from its arguments: the measuring commands
/// name these flags alike (`-o`, `--no-store`, `--db`, `--label`, `--session`).
macro_rules! kept {
    ($args:expr) => {
        crate::runs::Keep {
            output: $args.output.as_deref(),
            no_store: $args.no_store,
            db: $args.db.as_deref(),
            label: $args.label.as_deref(),
            session: $args.session.as_deref(),
        }
    };
}
pub(crate) use kept;

/// The CPUs a selector can name here: those the machine has, those online, and those this
/// process may run on: its affinity (a `taskset` or a container engine narrows it, and is
/// obeyed), and the CPUs the boot line isolates within its cpuset: on a boot with `isolcpus=`
/// every task inherits an affinity without them, though any task may ask for them, and they
/// are what a real-time measurement is for. The online ones on a captured tree, or with a
/// scripted clock, where nothing runs on them.
pub(crate) struct CpuChoice {
    possible: model::CpuSet,
    online: model::CpuSet,
    allowed: model::CpuSet,
}

impl CpuChoice {
    /// Reads them from `root`; `scripted`: nothing will run on the CPUs (a fake clock).
    pub(crate) fn read(root: &sys::Root, scripted: bool) -> Result<CpuChoice> {
        use anyhow::Context;
        let possible = sys::cpu::possible(root).context("reading the CPUs this machine has")?;
        let online = sys::cpu::online(root).context("reading the online CPUs")?;
        let allowed = if root.is_host() && !scripted {
            let affinity = sys::sched::affinity().context("reading this process's CPU affinity")?;
            let isolated = sys::cpu::isolated(root).unwrap_or_default();
            let reachable = sys::cgroup::own_cpuset_cpus(root).unwrap_or_else(|| online.clone());
            affinity.union(&isolated.intersection(&reachable))
        } else {
            online.clone()
        };
        Ok(CpuChoice {
            possible,
            online,
            allowed,
        })
    }

    /// The CPUs `spec` (given as `flag`) names, or a usage error naming the flag and value.
    pub(crate) fn resolve(&self, spec: &model::CpuSpec, flag: &str) -> Result<model::CpuSet> {
        spec.resolve(&self.possible, &self.online, &self.allowed)
            .map_err(|e| UsageError(format!("{flag} {spec}: {e}")).into())
    }
}

/// Checks the result file and the run store of `to`, and the trace directory when given,
/// before anything is measured: a bad path costs a second, not the whole run.
pub(crate) fn check_outputs(to: &Keep<'_>, trace_dir: Option<&Path>) -> Result<()> {
    if let Some(path) = to.output {
        files::check_creatable(path)
            .map_err(|e| UsageError(format!("--output {}: {e}", path.display())))?;
    }
    if let Some(dir) = trace_dir {
        files::check_dir_creatable(dir)
            .map_err(|e| UsageError(format!("--trace-dir {}: {e}", dir.display())))?;
    }
    if !to.no_store {
        crate::runs::check_usable(to.db).map_err(|e| {
            UsageError(format!(
                "the run store cannot be used: {e:#}; give a writable --db PATH, or --no-store to keep only the printed (and --output) result"
            ))
        })?;
    }
    Ok(())
}

/// Rewrites the result file with `run` (a checkpoint), atomically.
pub(crate) fn write_result(path: &Path, run: &MeasureRun) -> Result<()> {
    files::write_atomically(path, run.to_json().as_bytes())?;
    Ok(())
}

/// The verdict of a run this process measured: its reasons on standard error and the exit
/// status ([`crate::verdict::live_exit`]). `told`: that it cannot be judged was said already
/// (the `--break` line), or is no news (a signal stopped it), so that reason is not repeated.
pub(crate) fn verdict(run: &MeasureRun, told: bool, console: &mut Console) -> Exit {
    let verdict = model::gate::judge(run, None);
    let interrupted = run.status == RunStatus::Interrupted;
    crate::verdict::say(console, &verdict, None, told || interrupted);
    crate::verdict::live_exit(&verdict, interrupted)
}

/// The text summary's last line: the run's verdict (`verdict: PASS: ...`).
pub(crate) fn summary_line(run: &MeasureRun) -> String {
    let interrupted = run.status == RunStatus::Interrupted;
    crate::verdict::summary_line(&model::gate::judge(run, None), interrupted)
}
