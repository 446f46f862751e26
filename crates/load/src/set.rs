//! [`LoadSet`]: a whole load spec running together: placement, the private directory, the
//! guardian, the optional cpuset cgroup, the reporting window, and the report.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use model::load::report::{CpuBusy, LOAD_SCHEMA, cpu_share_percent, per_second};
use model::load::{GeneratorReport, LoadReport, LoadSpec, LoadSpecError};
use model::{CpuSet, Nanos};
use sys::Root;
use sys::cgroup::CpusetCgroup;
use sys::parse::stat::CpuTimes;

use crate::generator::{Counters, Generator, LoadError, StartContext};
use crate::generators;
use crate::guardian::{NAME_PREFIX, Watched, Watcher};

/// How to run a load, beyond its spec.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Where kernel files are read.
    pub root: Root,
    /// Placement of generators without an `@CPULIST` (`--load-cpus`); `None`: every online CPU the own cpuset allows.
    pub load_cpus: Option<CpuSet>,
    /// Directory in which the load's private directory is made (`--load-dir`).
    pub workdir_base: PathBuf,
    /// The guardian's command line (program and arguments); `None` runs without one.
    pub guardian: Option<(PathBuf, Vec<String>)>,
    /// Put the load into its own cpuset cgroup (`--load-cgroup`).
    pub cgroup: bool,
}

impl LoadOptions {
    /// Defaults for the live host: every online CPU, files under `/var/tmp` (on disk on
    /// most systems, unlike a tmpfs `/tmp`), no guardian, no cgroup.
    pub fn host() -> LoadOptions {
        LoadOptions {
            root: Root::host(),
            load_cpus: None,
            workdir_base: PathBuf::from("/var/tmp"),
            guardian: None,
            cgroup: false,
        }
    }
}

struct Entry {
    item: String,
    cpus: CpuSet,
    generator: Box<dyn Generator>,
    stopped: Option<Counters>,
    /// When the generator was first seen ended by itself (monotonic ns).
    ended_ns: Option<u64>,
}

struct Window {
    start_ns: u64,
    counters: Vec<Counters>,
    stat: Vec<(u32, CpuTimes)>,
}

/// A running load. Dropping it without [`stop`](LoadSet::stop) still stops everything.
pub struct LoadSet {
    spec: LoadSpec,
    root: Root,
    entries: Vec<Entry>,
    workdir: PathBuf,
    watcher: Arc<Watcher>,
    cgroup: Option<CpusetCgroup>,
    started_ns: u64,
    window: Window,
    finished: bool,
}

impl std::fmt::Debug for LoadSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadSet")
            .field("spec", &self.spec.to_string())
            .field("workdir", &self.workdir)
            .finish_non_exhaustive()
    }
}

impl From<LoadSpecError> for LoadError {
    fn from(e: LoadSpecError) -> LoadError {
        LoadError::setup(e.item, e.reason)
    }
}

/// Resolves every generator's CPUs: its `@CPULIST`, else `load_cpus`, else `online`; checks
/// them against the online CPUs. Nothing is started.
pub fn placements(
    spec: &LoadSpec,
    load_cpus: Option<&CpuSet>,
    online: &CpuSet,
) -> Result<Vec<CpuSet>, LoadSpecError> {
    spec.check_cpus(online)?;
    if let Some(cpus) = load_cpus {
        let offline = cpus.difference(online);
        if cpus.is_empty() || !offline.is_empty() {
            return Err(LoadSpecError {
                item: format!("--load-cpus {cpus}"),
                reason: format!("CPU {offline} is not online (online: {online})"),
            });
        }
    }
    Ok(spec
        .generators
        .iter()
        .map(|g| {
            g.cpus
                .clone()
                .or_else(|| load_cpus.cloned())
                .unwrap_or_else(|| online.clone())
        })
        .collect())
}

impl LoadSet {
    /// Starts every generator of `spec`, in order. On failure everything already started is
    /// stopped and removed before the error returns.
    pub fn start(spec: &LoadSpec, options: &LoadOptions) -> Result<LoadSet, LoadError> {
        let root = &options.root;
        let online = sys::cpu::online(root).map_err(|e| LoadError::sys("load", e))?;
        // In a container (or any narrower cpuset) the default is the CPUs it may use, not
        // every online CPU of the host: workers pinned elsewhere could not start.
        let confined = match &options.load_cpus {
            None if root.is_host() => sys::cgroup::own_cpuset_cpus(root)
                .map(|c| c.intersection(&online))
                .filter(|c| !c.is_empty() && *c != online),
            _ => None,
        };
        let load_cpus = options.load_cpus.as_ref().or(confined.as_ref());
        let cpus = placements(spec, load_cpus, &online)?;

        // Orphaned grandchildren (a command's children) are re-parented here and reaped.
        let _ = sys::process::become_subreaper();
        let watcher = Arc::new(match &options.guardian {
            Some((program, args)) => Watcher::spawn(program, args).map_err(|e| {
                LoadError::setup(
                    "load",
                    format!(
                        "cannot start the guardian {}: {}",
                        program.display(),
                        sys::process::spawn_failure(&e)
                    ),
                )
            })?,
            None => Watcher::none(),
        });
        let workdir = make_workdir(&options.workdir_base)?;
        watcher.watch(&Watched::Dir(workdir.clone()));

        let mut set = LoadSet {
            spec: spec.clone(),
            root: root.clone(),
            entries: Vec::new(),
            workdir,
            watcher,
            cgroup: None,
            started_ns: sys::clock::monotonic_ns(),
            window: Window {
                start_ns: 0,
                counters: Vec::new(),
                stat: Vec::new(),
            },
            finished: false,
        };

        if options.cgroup {
            let all = cpus.iter().fold(CpuSet::new(), |acc, c| acc.union(c));
            let name = format!("{NAME_PREFIX}{}", sys::process::current_pid());
            let cgroup = CpusetCgroup::create(root, &name, &all)
                .map_err(|e| LoadError::sys("--load-cgroup", e))?;
            set.watcher
                .watch(&Watched::Cgroup(cgroup.dir().to_path_buf()));
            let joined = cgroup.add_process(sys::process::current_pid());
            set.cgroup = Some(cgroup);
            joined.map_err(|e| LoadError::sys("--load-cgroup", e))?;
        }

        let seed = sys::clock::monotonic_ns() ^ u64::from(sys::process::current_pid()) << 32;
        for (index, (g, cpus)) in spec.generators.iter().zip(cpus).enumerate() {
            let mut generator = generators::build(g);
            let ctx = StartContext {
                cpus: &cpus,
                workdir: &set.workdir,
                root,
                watcher: &set.watcher,
                seed: seed.wrapping_add((index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            };
            generator.start(&ctx)?;
            set.entries.push(Entry {
                item: g.to_string(),
                cpus,
                generator,
                stopped: None,
                ended_ns: None,
            });
        }
        set.started_ns = sys::clock::monotonic_ns();
        set.mark();
        Ok(set)
    }

    /// Looks for generators that ended by themselves (a command that exited), and notes when
    /// each was first seen ended: call it once a tick while the load runs.
    pub fn poll(&mut self) {
        for e in &mut self.entries {
            if e.ended_ns.is_none() && e.stopped.is_none() && e.generator.ended() {
                e.ended_ns = Some(sys::clock::monotonic_ns());
            }
        }
    }

    /// Opens the reporting window now: the figures reported cover from here to the stop
    /// (`start` opens one; call it again after a warm-up).
    pub fn mark(&mut self) {
        self.window = Window {
            start_ns: sys::clock::monotonic_ns(),
            counters: self
                .entries
                .iter()
                .map(|e| e.generator.achieved())
                .collect(),
            stat: self.read_stat(),
        };
    }

    /// The canonical spec running.
    pub fn spec(&self) -> &LoadSpec {
        &self.spec
    }

    /// Each generator's description, in spec order.
    pub fn descriptions(&self) -> Vec<(String, String)> {
        self.entries
            .iter()
            .map(|e| (e.item.clone(), e.generator.describe()))
            .collect()
    }

    /// The private directory the generators write in.
    pub fn workdir(&self) -> &Path {
        &self.workdir
    }

    /// The figures of the window so far, `status` `running`.
    pub fn report(&self) -> LoadReport {
        self.build_report("running")
    }

    /// Stops every generator (in reverse order), removes the cgroup and the private
    /// directory, releases the guardian, and reports the window with `status` (`complete` or
    /// `interrupted`).
    ///
    /// The window closes when `stop` is called: the figures are read before anything is
    /// stopped, so the time tasks take to end is not counted, and killed processes' CPU
    /// time is not lost. Notes the generators make while stopping are added.
    pub fn stop(mut self, status: &str) -> LoadReport {
        let mut report = self.build_report(status);
        self.stop_all();
        for (g, e) in report.generators.iter_mut().zip(&self.entries) {
            g.notes = e.generator.notes();
        }
        self.clean_up();
        report
    }

    fn stop_all(&mut self) {
        for e in self.entries.iter_mut().rev() {
            if e.stopped.is_none() {
                e.stopped = Some(e.generator.stop());
            }
        }
    }

    fn clean_up(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        if let Some(cgroup) = self.cgroup.take() {
            let dir = cgroup.dir().to_path_buf();
            // If removal fails (a straggler), the guardian retries at its exit.
            if cgroup.remove().is_ok() {
                self.watcher.release(&Watched::Cgroup(dir));
            }
        }
        // If removal fails, the guardian retries at its exit and says why.
        if files::remove_tree(&self.workdir).is_ok() {
            self.watcher.release(&Watched::Dir(self.workdir.clone()));
        }
        self.watcher.finish();
    }

    fn read_stat(&self) -> Vec<(u32, CpuTimes)> {
        // Without readable figures the report shows no busy share; the load still ran.
        sys::cpu::times(&self.root).unwrap_or_default()
    }

    fn build_report(&self, status: &str) -> LoadReport {
        let now = sys::clock::monotonic_ns();
        let window = Nanos(now.saturating_sub(self.window.start_ns));
        let generators = self
            .entries
            .iter()
            .zip(&self.window.counters)
            .map(|(e, start)| {
                let total = e.stopped.unwrap_or_else(|| e.generator.achieved());
                let c = total.since(start);
                GeneratorReport {
                    spec: e.item.clone(),
                    description: e.generator.describe(),
                    cpus: e.cpus.clone(),
                    tasks: e.generator.tasks(),
                    unit: e.generator.unit().to_string(),
                    ops: c.ops,
                    ops_per_sec: per_second(c.ops, window),
                    bytes: c.bytes,
                    bytes_per_sec: per_second(c.bytes, window),
                    cpu_ns: Nanos(c.cpu_ns),
                    cpu_share_percent: cpu_share_percent(Nanos(c.cpu_ns), window, e.cpus.len()),
                    notes: e.generator.notes(),
                    ended_ns: e
                        .ended_ns
                        .map(|at| Nanos(at.saturating_sub(self.window.start_ns))),
                }
            })
            .collect::<Vec<_>>();
        let status = if status == "complete" && generators.iter().any(|g| g.ended_ns.is_some()) {
            model::load::ENDED_EARLY
        } else {
            status
        };
        let now_stat = self.read_stat();
        let cpu_busy = now_stat
            .iter()
            .filter_map(|(cpu, after)| {
                let (_, before) = self.window.stat.iter().find(|(c, _)| c == cpu)?;
                Some(CpuBusy {
                    cpu: *cpu,
                    busy_percent: after.busy_percent_since(before)?,
                    steal_percent: after.steal_percent_since(before)?,
                })
            })
            .collect();
        LoadReport {
            schema: LOAD_SCHEMA.to_string(),
            build: model::build::current().cloned(),
            spec: self.spec.to_string(),
            window_ns: window,
            warmup_ns: Nanos(self.window.start_ns.saturating_sub(self.started_ns)),
            status: status.to_string(),
            cgroup: self.cgroup.as_ref().map(|c| c.dir().display().to_string()),
            generators,
            cpu_busy,
        }
    }
}

impl Drop for LoadSet {
    fn drop(&mut self) {
        self.stop_all();
        self.clean_up();
    }
}

/// Makes the load's private directory `BASE/rtlab-load-PID-N`, mode 0700.
fn make_workdir(base: &Path) -> Result<PathBuf, LoadError> {
    let prefix = format!("{NAME_PREFIX}{}-", sys::process::current_pid());
    match files::create_private_dir(base, &prefix, 1000) {
        Ok(Some(dir)) => Ok(dir),
        Ok(None) => Err(LoadError::setup(
            "load",
            format!("{} holds 1000 rtlab-load directories", base.display()),
        )),
        Err(e) => Err(LoadError::setup(
            "load",
            format!(
                "cannot make a private directory in {}: {e}; choose another with --load-dir",
                base.display()
            ),
        )),
    }
}

#[cfg(test)]
mod tests;
