//! `rtlab monitor`'s loop: intervals of the history one after another, each measured in
//! segments (a run of the chosen engine through `measure::run`, so every segment is measured,
//! restored and recorded exactly as a `rtlab measure` run is), stored when it ends, with the
//! metrics file rewritten and the history pruned; a segment that stopped at a breach becomes an
//! incident (`super::incident`). It stops at a signal or after `--duration`, saving the
//! interval so far; the machine is left as each segment leaves it: as it was.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use measure::{ClockChoice, Environment, NoObserver};
use model::Nanos;
use model::measure::{MeasureRun, RunStatus};
use model::monitor::{Cost, Interval, IntervalBuilder, Totals};
use store::Store;
use sys::Root;
use sys::signals::TerminationSignals;

use super::incident::{Bursts, Effects};
use super::plan::{Plan, wall_ns};
use super::pushing::PushWorker;
use crate::console::{self, Console};
use crate::exit::{Exit, UsageError};
use crate::flags::MonitorArgs;

/// Setup errors in a row (a segment that could not start) after which the monitor gives up.
const MAX_FAILURES: u32 = 3;
/// The wait after a segment that could not start, before the next try.
const RETRY_AFTER: Duration = Duration::from_secs(5);

/// Why the monitor stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    /// A signal.
    Signal,
    /// `--duration` is over.
    Duration,
}

/// Runs the monitor until a signal or `--duration`.
pub(crate) fn watch(args: &MonitorArgs, root: &Root) -> Result<Exit> {
    let plan = Plan::new(args, root)?;
    let pusher = crate::push_to::prepare(&args.push)?;
    // Blocked before any thread exists: a signal ends the segment running in order (its
    // result kept) and then the monitor, with the interval so far saved.
    let signals = TerminationSignals::block().context("blocking SIGINT/SIGTERM")?;
    let mut store = crate::runs::open(args.db.db.as_deref())?;
    let mut console = Console::new(false);
    console.note(&format!(
        "rtlab monitor: {} on {}, {}, intervals of {}{}, history in {}",
        plan.engine.describe(),
        plan.cpus.with_noun(),
        plan.budget.map_or_else(
            || "no budget (history only, no incidents)".to_string(),
            |b| format!("budget {b}")
        ),
        plan.every,
        if plan.measure_for < plan.every {
            format!(" (the first {} of each measured)", plan.measure_for)
        } else {
            String::new()
        },
        store.name()
    ));
    let mut w = Watch {
        plan: &plan,
        env: Environment {
            root: root.clone(),
            clock: ClockChoice::Real,
        },
        deadline: plan.stop_after.map(|d| Instant::now() + d.to_duration()),
        signals: &signals,
        totals: Totals::default(),
        bursts: Bursts::default(),
        effects: Effects {
            actions: &args.on_incident,
            pusher: None,
            children: Vec::new(),
        },
        console,
        failures: 0,
        measured_any: false,
    };
    // Started after the signals are blocked, so the thread never takes SIGINT or SIGTERM.
    if let Some(pusher) = pusher {
        w.effects.pusher =
            Some(PushWorker::start(pusher).context("starting the thread that pushes")?);
        // A monitor stopped between keeping an interval and queueing its push: its newest
        // interval is sent again (a server keeps a document it holds once).
        let every = i64::try_from(plan.every.get()).unwrap_or(i64::MAX);
        let since = super::plan::wall_ns().saturating_sub(every.saturating_mul(2));
        if let Some(last) = store.intervals(&plan.host, since, i64::MAX)?.pop() {
            w.push_interval(&store, &last)?;
        }
    }
    loop {
        let (interval, stop) = w.interval(&mut store)?;
        w.keep(&mut store, args, &interval)?;
        if let Some(stop) = stop {
            return Ok(match stop {
                Stop::Signal => Exit::Interrupted,
                Stop::Duration if w.totals.incidents > 0 => Exit::VerdictFailed,
                Stop::Duration => Exit::Ok,
            });
        }
    }
}

/// The monitor while it runs.
struct Watch<'a> {
    plan: &'a Plan,
    env: Environment,
    deadline: Option<Instant>,
    signals: &'a TerminationSignals,
    totals: Totals,
    bursts: Bursts,
    effects: Effects<'a>,
    console: Console,
    failures: u32,
    measured_any: bool,
}

impl Watch<'_> {
    /// The pushing thread's CPU time so far, ns (0 without `--push`).
    fn push_cpu_ns(&self) -> u64 {
        self.effects.pusher.as_ref().map_or(0, PushWorker::cpu_ns)
    }

    /// Time left before `--duration` ends, if it was given.
    fn left(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// One interval: its segments, then the wait to its end. Returns it and why the monitor
    /// stops, if it does.
    fn interval(&mut self, store: &mut Store) -> Result<(Interval, Option<Stop>)> {
        let every = i64::try_from(self.plan.every.get()).unwrap_or(i64::MAX);
        let now = wall_ns();
        let start = now - now.rem_euclid(every);
        let measure_end = start.saturating_add(i64::try_from(self.plan.measure_for.get())?);
        let end = start.saturating_add(every);
        let mut built = IntervalBuilder::new();
        let (process0, main0, push0) = (
            sys::clock::process_cpu_ns(),
            sys::clock::thread_cpu_ns(),
            self.push_cpu_ns(),
        );
        let mut stop = self.segments(store, &mut built, measure_end)?;
        if stop.is_none() {
            stop = self.wait_until(end);
        }
        // The pushing thread's time is housekeeping, as the main thread's is.
        let (process, main) = (
            sys::clock::process_cpu_ns().saturating_sub(process0),
            sys::clock::thread_cpu_ns()
                .saturating_sub(main0)
                .saturating_add(self.push_cpu_ns().saturating_sub(push0)),
        );
        let budget = self.plan.budget.map(Nanos::get);
        let mut interval = built.finish(&self.plan.host, start, self.plan.every.get(), budget);
        interval.cost = Some(Cost {
            measuring_ns: process.saturating_sub(main),
            housekeeping_ns: main,
        });
        if interval.engine.is_empty() {
            interval.engine = self.plan.engine.as_str().to_string();
            interval.cpus = self.plan.cpus.clone();
        }
        Ok((interval, stop))
    }

    /// Measures segments until `measure_end` (Unix ns), the deadline or a signal.
    fn segments(
        &mut self,
        store: &mut Store,
        built: &mut IntervalBuilder,
        measure_end: i64,
    ) -> Result<Option<Stop>> {
        let shortest = i64::try_from(self.plan.interval.get().saturating_mul(100))?;
        loop {
            let now = wall_ns();
            let mut until = measure_end;
            if let Some(left) = self.left() {
                if left.is_zero() {
                    return Ok(Some(Stop::Duration));
                }
                until = until.min(now.saturating_add(i64::try_from(left.as_nanos())?));
            }
            if until - now < shortest {
                return Ok(None);
            }
            let armed = self.plan.budget.is_some() && self.bursts.armed(now, self.plan.burst_gap);
            let length = match self.bursts.rearm_at(self.plan.burst_gap) {
                Some(at) if !armed => (until.min(at) - now).max(shortest),
                _ => until - now,
            };
            let config = self.plan.config(Nanos(u64::try_from(length)?), armed)?;
            let run = match measure::run(&config, &self.env, &mut NoObserver) {
                Ok(run) => run,
                Err(e) => {
                    self.failures += 1;
                    if !self.measured_any || self.failures >= MAX_FAILURES {
                        return Err(UsageError(format!("monitor: {e}")).into());
                    }
                    self.console
                        .warn(&format!("a segment could not start ({e}); trying again"));
                    if self.signals.wait(RETRY_AFTER).is_some() {
                        return Ok(Some(Stop::Signal));
                    }
                    continue;
                }
            };
            self.failures = 0;
            self.measured_any = true;
            built.add(&run, self.plan.budget.map(Nanos::get));
            if let Some(stop) = self.after(store, built, run)? {
                return Ok(Some(stop));
            }
        }
    }

    /// What a segment's end means: an incident opened or grown, or the stop.
    fn after(
        &mut self,
        store: &mut Store,
        built: &mut IntervalBuilder,
        run: MeasureRun,
    ) -> Result<Option<Stop>> {
        let Some(budget) = self.plan.budget else {
            return Ok((run.status == RunStatus::Interrupted).then_some(Stop::Signal));
        };
        match run.status {
            RunStatus::BrokeThreshold => {
                let (incident, kept) =
                    self.bursts
                        .open(self.plan, budget, run, store, &mut self.console)?;
                built.incident();
                console::print_stdout(&format!("{}\n", report::monitor::incident_line(&incident)))?;
                self.effects
                    .on_incident(&incident, &kept, &mut self.console);
                Ok(None)
            }
            RunStatus::Interrupted => {
                self.bursts.grow(budget, &run, store)?;
                Ok(Some(Stop::Signal))
            }
            _ => {
                self.bursts.grow(budget, &run, store)?;
                Ok(None)
            }
        }
    }

    /// Waits until `end` (Unix ns), the deadline or a signal.
    fn wait_until(&mut self, end: i64) -> Option<Stop> {
        let now = wall_ns();
        let mut wait = Duration::from_nanos(u64::try_from(end - now).unwrap_or(0));
        let mut by_deadline = false;
        if let Some(left) = self.left()
            && left <= wait
        {
            wait = left;
            by_deadline = true;
        }
        self.effects.reap();
        if self.signals.wait(wait).is_some() {
            return Some(Stop::Signal);
        }
        by_deadline.then_some(Stop::Duration)
    }

    /// With `--push`, sends the interval as the store now holds it (a restart's parts merged)
    /// with the incidents that began in it or the interval before (a burst that crossed into
    /// it), and every incident opened or grown while it ran (a burst that lasts longer).
    fn push_interval(&mut self, store: &Store, interval: &Interval) -> Result<()> {
        let touched = self.bursts.take_touched();
        let Some(pusher) = &self.effects.pusher else {
            return Ok(());
        };
        let stored = store.intervals(&interval.host, interval.start_ns, interval.start_ns + 1)?;
        let every = i64::try_from(interval.length_ns).unwrap_or(i64::MAX);
        let end = interval.start_ns.saturating_add(every);
        let mut incidents = store.incidents(
            Some(&interval.host),
            interval.start_ns.saturating_sub(every),
            end,
            store::MAX_HISTORY_ROWS,
        )?;
        for x in touched {
            if !incidents.iter().any(|y| y.id == x.id) {
                incidents.push(x);
            }
        }
        if let Some(whole) = stored.into_iter().next() {
            pusher.interval(whole, incidents, &mut self.console);
        }
        Ok(())
    }

    /// An interval's end: stored, added to the totals and the metrics, its line printed, and
    /// the history pruned. An interval in which nothing was measured (outside the duty cycle,
    /// a stop right at its start) is not stored.
    fn keep(&mut self, store: &mut Store, args: &MonitorArgs, interval: &Interval) -> Result<()> {
        if interval.measured_ns == 0 && interval.samples == 0 {
            return Ok(());
        }
        store
            .save_interval(interval)
            .map_err(|e| UsageError(format!("saving the interval: {e}")))?;
        self.totals.add(interval);
        self.push_interval(store, interval)?;
        if let Some(path) = &args.metrics {
            let text = report::monitor::metrics(&self.plan.host, &self.totals, Some(interval));
            if let Err(e) = files::write_atomically(path, text.as_bytes()) {
                self.console
                    .warn(&format!("--metrics {}: {e}", path.display()));
            }
        }
        if !args.quiet {
            console::print_stdout(&format!("{}\n", report::monitor::interval_line(interval)))?;
        }
        let keep = i64::try_from(self.plan.keep.get()).unwrap_or(i64::MAX);
        let (_, _, runs) = store.prune_history(&self.plan.host, wall_ns().saturating_sub(keep))?;
        super::incident::remove_runs(store, &runs, &mut self.console);
        super::incident::hold_space(
            store,
            &self.plan.host,
            self.plan.trace_space,
            &mut self.console,
        )
    }
}
