//! Turning a noise run's cells into its `rtlab.noise/1` document: the parameters as applied,
//! the per-CPU osnoise columns from each detector's figures, steal time from `/proc/stat`,
//! and the attribution from the run's trace; plus the arithmetic that places counter values
//! on the trace clock ([`Fit`]) and turns the configuration into each thread's [`Plan`].

use std::sync::Arc;
use std::time::SystemTime;

use model::measure::{MeasureParams, MeasureRun, RunStatus, Warning};
use model::noise::{Engine, NOISE_SCHEMA, NoiseCpu, NoiseInfo};
use sys::counter::CounterKind;
use sys::parse::stat::CpuTimes;
use trace::noise::Attribution;

use super::NoiseConfig;
use super::detector::{NoiseCell, Plan, Scale};
use crate::result::{self, RunFacts};

/// The parameters as applied, in the measurement document's shape (`interval_ns` is the
/// duty-cycle period, `clock` the counter read; the noise section has the rest).
pub(super) fn params(config: &NoiseConfig, clock: &str) -> MeasureParams {
    let periods = config.duration.get().div_ceil(config.period.get().max(1));
    MeasureParams {
        engine: model::measure::Engine::User,
        cpus: config.cpus.clone(),
        interval_ns: config.period,
        periods,
        duration_ns: Some(config.duration),
        cycles: None,
        aligned: false,
        offsets_ns: vec![model::Nanos::ZERO; config.cpus.len()],
        policy: config.policy,
        priority: config.priority,
        dl_runtime_ns: None,
        dl_period_ns: None,
        main_cpus: config.main_cpus.clone(),
        mlock: config.mlock,
        thread_stack_bytes: config.stack_bytes as u64,
        dma_latency_us: None,
        break_ns: None,
        budget_ns: None,
        spikes: config.spikes,
        checkpoint_ns: config.checkpoint,
        clock: clock.to_string(),
    }
}

/// What each thread's plan is made of before the start is known.
#[derive(Clone, Copy, Debug)]
pub(super) struct PlanSpec {
    /// The run's length.
    length: u64,
    runtime: u64,
    period: u64,
    threshold: u64,
    slot: u64,
    scale: Scale,
}

impl PlanSpec {
    pub(super) fn new(config: &NoiseConfig, scale: Scale) -> PlanSpec {
        PlanSpec {
            length: scale.ticks(config.duration.get()),
            runtime: scale.ticks(config.runtime.get()),
            period: scale.ticks(config.period.get()),
            threshold: scale.ticks(config.threshold.get()).max(1),
            slot: scale.ticks(model::Nanos::SECOND.get()),
            scale,
        }
    }

    /// The end of a run from the common `start` (counter ticks).
    pub(super) fn end(self, start: u64) -> u64 {
        start.saturating_add(self.length)
    }

    /// The plan from the common `start` to `end` (counter ticks); `anchor` places spikes.
    pub(super) fn plan(self, start: u64, end: u64, anchor: (u64, u64)) -> Plan {
        Plan {
            start,
            end,
            runtime: self.runtime,
            period: self.period,
            threshold: self.threshold,
            slot: self.slot,
            anchor,
            scale: self.scale,
        }
    }
}

/// Counter values on CLOCK_MONOTONIC_RAW (the trace's `mono_raw`): the line through two
/// (counter, clock) pairs taken at the start and the end of the run, so the calibration's
/// small error in frequency does not grow with the run's length.
#[derive(Clone, Copy, Debug)]
pub(super) struct Fit {
    a: (u64, u64),
    b: (u64, u64),
}

impl Fit {
    pub(super) fn new(a: (u64, u64), b: (u64, u64)) -> Fit {
        Fit { a, b }
    }

    /// `tick` in ns of CLOCK_MONOTONIC_RAW.
    pub(super) fn raw(self, tick: u64) -> u64 {
        let ticks = u128::from(self.b.0.saturating_sub(self.a.0).max(1));
        let ns = u128::from(self.b.1.saturating_sub(self.a.1));
        let off = u128::from(tick.saturating_sub(self.a.0)) * ns / ticks;
        self.a
            .1
            .saturating_add(u64::try_from(off).unwrap_or(u64::MAX))
    }
}

/// Steal time per CPU between two `/proc/stat` readings, ns.
pub(super) fn steal_ns(before: &[(u32, CpuTimes)], after: &[(u32, CpuTimes)]) -> Vec<(u32, u64)> {
    let tick_ns = 1_000_000_000 / sys::process::clock_ticks_per_second().max(1);
    after
        .iter()
        .filter_map(|(cpu, a)| {
            let (_, b) = before.iter().find(|(c, _)| c == cpu)?;
            Some((
                *cpu,
                a.steal.saturating_sub(b.steal).saturating_mul(tick_ns),
            ))
        })
        .collect()
}

/// The document from the cells so far (a checkpoint, or the end before attribution).
pub(super) fn document(
    facts: &RunFacts,
    config: &NoiseConfig,
    (kind, hz): (CounterKind, u64),
    cells: &[Arc<NoiseCell>],
    status: RunStatus,
    steal: Option<&Vec<(u32, u64)>>,
) -> MeasureRun {
    let snaps = cells.iter().map(|c| c.cell.snapshot()).collect();
    let figures: Vec<NoiseCpu> = cells
        .iter()
        .map(|c| {
            let f = c.figures();
            NoiseCpu {
                cpu: c.cell.cpu(),
                runtime_ns: f.runtime_ns,
                noise_ns: f.noise_ns,
                interruptions: f.interruptions,
                max_single_ns: f.max_single_ns,
                max_period_noise_ns: f.max_period_noise_ns,
                iterations: Some(f.iterations),
                steal_ns: steal
                    .and_then(|s| s.iter().find(|(cpu, _)| *cpu == c.cell.cpu()).map(|x| x.1)),
                ..NoiseCpu::default()
            }
        })
        .collect();
    let elapsed = figures.iter().map(|f| f.runtime_ns).max().unwrap_or(0);
    let mut doc = result::document(
        facts,
        status,
        snaps,
        model::Nanos(elapsed),
        SystemTime::now(),
        None,
    );
    doc.schema = NOISE_SCHEMA.to_string();
    doc.noise = Some(NoiseInfo {
        engine: Engine::User,
        counter: kind.as_str().to_string(),
        counter_hz: (kind != CounterKind::MonotonicRaw).then_some(hz),
        threshold_ns: config.threshold,
        runtime_ns: config.runtime,
        period_ns: config.period,
        attribution: "none".to_string(),
        attribution_note: None,
        hypervisor: None,
        cpus: figures,
    });
    doc
}

/// What the run's trace attributed: per CPU, what attribution lacked (events the kernel does
/// not have), and notes on what limited it.
pub(super) struct Attributed {
    pub per_cpu: Vec<(u32, Attribution)>,
    pub missing: Vec<String>,
    pub notes: Vec<String>,
}

/// Puts the attribution (per CPU, what attribution lacked, notes) into the document; CPUs
/// whose interruptions were not all logged get the rest counted unexplained.
pub(super) fn attribute(
    doc: &mut MeasureRun,
    attribution: Option<Attributed>,
    unlogged: &[u64],
    hypervisor: Option<String>,
) {
    let Some(noise) = doc.noise.as_mut() else {
        return;
    };
    noise.hypervisor = hypervisor.clone();
    let Some(Attributed {
        per_cpu,
        missing,
        notes,
    }) = attribution
    else {
        noise.attribution_note = Some(
            doc.warnings
                .iter()
                .find(|w| w.code == "noise-unattributed")
                .map_or(
                    "attribution was not asked for (--no-attribute)".to_string(),
                    |w| w.message.clone(),
                ),
        );
        return;
    };
    noise.attribution = "trace".to_string();
    let mut said: Vec<String> = missing;
    said.extend(notes);
    for (c, extra) in noise.cpus.iter_mut().zip(unlogged) {
        if let Some((_, a)) = per_cpu.iter().find(|(cpu, _)| *cpu == c.cpu) {
            c.counts = Some(a.counts);
            c.time_ns = Some(a.time_ns);
            c.culprits = a.culprits.clone();
            c.unexplained = a.unexplained.saturating_add(*extra);
        }
        if *extra > 0 {
            said.push(format!(
                "CPU {}: {extra} interruptions came faster than rtlab could log them and are not attributed",
                c.cpu
            ));
        }
    }
    if let Some(h) = hypervisor {
        let hw: u64 = noise
            .cpus
            .iter()
            .filter_map(|c| c.counts.map(|k| k.hw))
            .sum();
        if hw > 0 {
            doc.warnings.push(Warning::new(
                "noise-hypervisor",
                format!(
                    "this is a virtual machine ({h}): the {hw} interruptions nothing in the kernel explains are the hypervisor's or the host's (steal time is in each CPU's figures)"
                ),
            ));
        }
    }
    if !said.is_empty() {
        noise.attribution_note = Some(said.join("; "));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fit_places_ticks_between_its_pairs() {
        let fit = Fit::new((1_000, 5_000_000), (3_001_000, 6_000_000));
        assert_eq!(fit.raw(1_000), 5_000_000);
        assert_eq!(fit.raw(3_001_000), 6_000_000);
        assert_eq!(fit.raw(1_501_000), 5_500_000);
    }

    #[test]
    fn steal_is_the_growth_in_ns() {
        let t = |steal| CpuTimes {
            steal,
            ..CpuTimes::default()
        };
        let s = steal_ns(&[(0, t(10)), (1, t(5))], &[(0, t(13)), (1, t(5))]);
        let tick = 1_000_000_000 / sys::process::clock_ticks_per_second();
        assert_eq!(s, vec![(0, 3 * tick), (1, 0)]);
    }
}
