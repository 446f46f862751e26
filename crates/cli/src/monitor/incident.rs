//! `rtlab monitor`'s incidents: a segment that stopped at a breach opens one (its cause from
//! the trace's explanation, the run holding the trace stored with it), wake-ups over the
//! budget within `--burst-gap` of the last grow it, and each new one runs the `--on-incident`
//! actions and is pushed. The stored incidents' runs are held to `--trace-space`, the oldest
//! removed first (their incidents kept, without a run).

use std::process::{Child, Command, Stdio};

use anyhow::Result;
use model::Nanos;
use model::measure::MeasureRun;
use model::monitor::{Incident, breaches, incident_id};
use store::{RunId, Store};

use super::plan::Plan;
use super::pushing::PushWorker;
use crate::console::Console;
use crate::flags::IncidentAction;

/// Worst samples per CPU an incident's stored run keeps (as `rtlab measure` does by
/// default): the segment measured with many more, to count every breach exactly.
const STORED_SPIKES: usize = 32;

/// The label of an incident's stored run.
fn label(x: &Incident) -> String {
    format!("incident {}", x.id)
}

/// The session every incident's run is stored under.
const SESSION: &str = "monitor";

/// A run's start, Unix ns (its `started_at`); `None` when unreadable.
fn started_ns(run: &MeasureRun) -> Option<i64> {
    let at = humantime::parse_rfc3339(&run.started_at).ok()?;
    let d = at.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(d.as_nanos()).ok()
}

/// When the breach a run stopped at happened, Unix ns: its start plus the breach's deadline,
/// else the run's end.
fn breach_ns(run: &MeasureRun) -> i64 {
    let base = started_ns(run).unwrap_or_else(super::plan::wall_ns);
    let at = run
        .break_event
        .as_ref()
        .and_then(|b| {
            let cpu = run.cpus.iter().find(|c| c.cpu == b.cpu)?;
            cpu.spikes
                .iter()
                .find(|s| s.cycle == b.cycle)
                .map(|s| s.at_ns)
        })
        .unwrap_or(run.elapsed_ns.get());
    base.saturating_add(i64::try_from(at).unwrap_or(i64::MAX))
}

/// The open incident, whose burst may still grow; and the incidents opened or grown since
/// the interval began, as last saved (pushed with the interval).
#[derive(Debug, Default)]
pub(crate) struct Bursts {
    open: Option<Incident>,
    touched: std::collections::BTreeMap<String, Incident>,
}

impl Bursts {
    /// Whether a breach now opens a new incident: none is open, or the last late wake-up of
    /// the open one is `gap` ago (then it is closed).
    pub(crate) fn armed(&mut self, now: i64, gap: Nanos) -> bool {
        match self.rearm_at(gap) {
            Some(at) if now < at => false,
            _ => {
                self.open = None;
                true
            }
        }
    }

    /// When the open incident's burst ends unless it grows, Unix ns.
    pub(crate) fn rearm_at(&self, gap: Nanos) -> Option<i64> {
        let gap = i64::try_from(gap.get()).unwrap_or(i64::MAX);
        self.open.as_ref().map(|x| x.end_ns.saturating_add(gap))
    }

    /// The incident `run` (stopped at a breach of `budget`) opens: its cause, and the run kept
    /// in the store with the trace around the breach. Returns it and the run as stored.
    pub(crate) fn open(
        &mut self,
        plan: &Plan,
        budget: Nanos,
        run: MeasureRun,
        store: &mut Store,
        console: &mut Console,
    ) -> Result<(Incident, MeasureRun)> {
        let start = breach_ns(&run);
        let (cpu, worst) = worst(&run, run.break_event.as_ref().map(|b| b.cpu));
        let counted: u64 = run.cpus.iter().map(|c| breaches(c, budget.get())).sum();
        let mut x = Incident {
            id: incident_id(&plan.host, start),
            host: plan.host.clone(),
            start_ns: start,
            end_ns: start,
            cpu,
            worst_ns: worst.max(run.break_event.as_ref().map_or(0, |b| b.latency_ns)),
            breaches: counted.max(1),
            budget_ns: budget.get(),
            engine: run.params.engine.as_str().to_string(),
            kernel_release: run.host.kernel_release.clone(),
            cause: report::monitor::cause(&run),
            run_id: None,
            run_bytes: None,
        };
        let kept = trimmed(run);
        match store.save_measure(&kept, Some(&label(&x)), Some(SESSION)) {
            Ok(id) => {
                x.run_id = Some(id.to_string());
                x.run_bytes = Some(kept.to_json().len() as u64);
            }
            Err(e) => console.warn(&format!(
                "incident {}: its run could not be stored ({e}); the incident is kept without it",
                x.id
            )),
        }
        store.save_incident(&x)?;
        self.open = Some(x.clone());
        self.touched.insert(x.id.clone(), x.clone());
        Ok((x, kept))
    }

    /// Adds the wake-ups of `run` over `budget` to the open incident, if one is open.
    pub(crate) fn grow(
        &mut self,
        budget: Nanos,
        run: &MeasureRun,
        store: &mut Store,
    ) -> Result<()> {
        let Some(x) = self.open.as_mut() else {
            return Ok(());
        };
        let late: u64 = run.cpus.iter().map(|c| breaches(c, budget.get())).sum();
        if late == 0 {
            return Ok(());
        }
        let base = started_ns(run).unwrap_or_else(super::plan::wall_ns);
        let last = run
            .cpus
            .iter()
            .flat_map(|c| &c.spikes)
            .filter(|s| model::gate::over_budget(s.latency_ns, budget))
            .map(|s| s.at_ns)
            .max()
            .unwrap_or(run.elapsed_ns.get());
        let (cpu, worst) = worst(run, None);
        x.breaches = x.breaches.saturating_add(late);
        if worst > x.worst_ns {
            x.worst_ns = worst;
            x.cpu = cpu;
        }
        x.end_ns = x
            .end_ns
            .max(base.saturating_add(i64::try_from(last).unwrap_or(i64::MAX)));
        store.save_incident(x)?;
        self.touched.insert(x.id.clone(), x.clone());
        Ok(())
    }

    /// The incidents opened or grown since the last call, as last saved, oldest first.
    pub(crate) fn take_touched(&mut self) -> Vec<Incident> {
        let mut touched: Vec<Incident> = std::mem::take(&mut self.touched).into_values().collect();
        touched.sort_by_key(|x| x.start_ns);
        touched
    }
}

/// The CPU with the largest latency of `run` and that latency; `prefer` wins a tie.
fn worst(run: &MeasureRun, prefer: Option<u32>) -> (u32, u64) {
    run.cpus
        .iter()
        .filter(|c| c.raw.count > 0)
        .map(|c| (c.cpu, c.raw.max_ns))
        .max_by_key(|&(cpu, ns)| (ns, Some(cpu) == prefer))
        .unwrap_or((prefer.unwrap_or(0), 0))
}

/// The run as an incident keeps it: the [`STORED_SPIKES`] worst samples of each CPU (its
/// histogram and exact figures whole), its `params.spikes` saying so.
fn trimmed(mut run: MeasureRun) -> MeasureRun {
    for c in &mut run.cpus {
        c.spikes.truncate(STORED_SPIKES);
    }
    run.params.spikes = run.params.spikes.min(STORED_SPIKES as u32);
    run
}

/// What a new incident sets off: the `--on-incident` actions and the push.
pub(crate) struct Effects<'a> {
    /// `--on-incident`.
    pub actions: &'a [IncidentAction],
    /// `--push`.
    pub pusher: Option<PushWorker>,
    /// Commands started and not yet reaped.
    pub children: Vec<Child>,
}

impl Effects<'_> {
    /// Runs the actions for `x` and pushes it with its run.
    pub(crate) fn on_incident(&mut self, x: &Incident, run: &MeasureRun, console: &mut Console) {
        for action in self.actions {
            match action {
                IncidentAction::Exec(command) => {
                    let mut cmd = Command::new("/bin/sh");
                    cmd.arg("-c")
                        .arg(command)
                        .env("RTLAB_INCIDENT", &x.id)
                        .env("RTLAB_CPU", x.cpu.to_string())
                        .env("RTLAB_LATENCY_NS", x.worst_ns.to_string())
                        .env("RTLAB_CAUSE", &x.cause)
                        .stdin(Stdio::null());
                    match sys::process::unblocked(&mut cmd).spawn() {
                        Ok(child) => self.children.push(child),
                        Err(e) => console.warn(&format!("--on-incident exec:{command}: {e}")),
                    }
                }
                IncidentAction::Signal { signal, pid } => {
                    if let Err(e) = sys::signals::send(*pid, *signal) {
                        console.warn(&format!("--on-incident signal {signal} to {pid}: {e}"));
                    }
                }
            }
        }
        if let Some(pusher) = &self.pusher {
            pusher.incident(x, run, label(x), console);
        }
    }

    /// Reaps the commands that have ended.
    pub(crate) fn reap(&mut self) {
        self.children
            .retain_mut(|c| matches!(c.try_wait(), Ok(None)));
    }
}

/// Removes the stored runs named (the runs of incidents pruned by age).
pub(crate) fn remove_runs(store: &mut Store, ids: &[String], console: &mut Console) {
    for id in ids {
        if let Some(id) = RunId::parse(id)
            && let Err(e) = store.remove(&id)
            && !matches!(e, store::StoreError::NotFound { .. })
        {
            console.warn(&format!("removing run {id}: {e}"));
        }
    }
}

/// Holds `host`'s incidents' stored runs to `space` bytes: past it, the oldest runs are
/// removed and their incidents kept without a run.
pub(crate) fn hold_space(
    store: &mut Store,
    host: &str,
    space: u64,
    console: &mut Console,
) -> Result<()> {
    let incidents = store.incidents(Some(host), i64::MIN, i64::MAX, store::MAX_HISTORY_ROWS)?;
    let mut used = 0u64;
    for mut x in incidents {
        let Some(bytes) = x.run_bytes.filter(|_| x.run_id.is_some()) else {
            continue;
        };
        used = used.saturating_add(bytes);
        if used <= space {
            continue;
        }
        if let Some(id) = x.run_id.take() {
            remove_runs(store, &[id], console);
        }
        x.run_bytes = None;
        store.save_incident(&x)?;
    }
    Ok(())
}
