//! Runs into groups of one set of conditions (host, kernel, engine, load, period), each group's
//! per-second series joined in time order, and every CPU (and all CPUs together) analysed.
//!
//! Runs of different conditions are never pooled unless asked: a tail fitted to idle and
//! loaded seconds together describes neither.

use model::histogram::Histogram;
use model::measure::MeasureRun;
use model::per_cpu::Series as RunSeries;
use model::worst::{Conditions, WorstCpu, WorstDoc, WorstGroup};

use crate::fits::{self, Series};
use crate::{Settings, binned, verdict};

fn conditions(run: &MeasureRun) -> Conditions {
    let engine = match &run.import {
        Some(i) => i.tool.clone(),
        None => run.params.engine.as_str().to_string(),
    };
    Conditions {
        host: run.host.hostname.clone(),
        kernel: run.host.kernel_release.clone(),
        engine,
        load: run
            .load
            .as_ref()
            .map_or_else(|| "idle".to_string(), |l| l.spec.clone()),
        interval_ns: run.params.interval_ns.0,
    }
}

/// Conditions shown for a pooled group: each field that differs says so.
fn pooled(members: &[(String, &MeasureRun)]) -> Conditions {
    let all: Vec<Conditions> = members.iter().map(|(_, r)| conditions(r)).collect();
    let pick = |f: fn(&Conditions) -> String| {
        let first = f(&all[0]);
        if all.iter().all(|c| f(c) == first) {
            first
        } else {
            "(pooled: several)".to_string()
        }
    };
    Conditions {
        host: pick(|c| c.host.clone()),
        kernel: pick(|c| c.kernel.clone()),
        engine: pick(|c| c.engine.clone()),
        load: pick(|c| c.load.clone()),
        interval_ns: all[0].interval_ns,
    }
}

/// The per-second maxima of the seconds that have samples, runs one after the other.
fn joined(series: &[&RunSeries]) -> Result<(Vec<f64>, u64), String> {
    let slot = series
        .iter()
        .map(|s| s.slot_ns.0)
        .find(|s| *s > 0)
        .unwrap_or(0);
    if series
        .iter()
        .any(|s| s.slot_ns.0 != slot && !s.max_ns.is_empty())
    {
        return Err("the runs keep their series in slots of different lengths".into());
    }
    let maxima: Vec<f64> = series
        .iter()
        .flat_map(|s| {
            s.max_ns
                .iter()
                .zip(&s.count)
                .filter(|(_, c)| **c > 0)
                .map(|(m, _)| *m as f64)
        })
        .collect();
    if maxima.is_empty() || slot == 0 {
        return Err("no per-second series: a histogram alone has no time order, so neither independence nor stationarity can be checked (measure with rtlab, or import cyclictest's verbose output)".into());
    }
    Ok((maxima, slot))
}

/// A tool that prints whole microseconds (cyclictest's -v stream) floors every value: its
/// per-second maxima lie on a grid of `resolution_ns`, tied many times over where the tail's
/// scale is a few steps. Fitted as they are, such values put the shape about 0.1 to 0.4 too low
/// (an exponential tail read as bounded) and the once-per-day interval below the truth: two of
/// six logs of a known exponential tail missed it (issue #47, `worst_truth`). Each maximum is
/// therefore taken at a point spread uniformly over its step, `[k, k + resolution)`, where the
/// tool's value `k` says it lies, by a fixed sequence (the same answer every time). rtlab's own
/// runs (1 ns) are left as they are.
fn dither(maxima: &mut [f64], resolution_ns: u64) {
    if resolution_ns <= 1 {
        return;
    }
    let mut u = crate::rng::Uniform::new(0x00d1_7e5e_ed00_0047);
    for m in maxima {
        *m += resolution_ns as f64 * u.open01();
    }
}

/// What one CPU (or all together) of a group measured.
struct Inputs<'a> {
    cpu: Option<u32>,
    samples: u64,
    observed_max_ns: u64,
    series: Vec<&'a RunSeries>,
    histogram: Histogram,
    /// The coarsest time resolution of the runs (an imported tool's; 1 ns for rtlab's own).
    resolution_ns: u64,
    elapsed_ns: u64,
}

fn analyse_one(inp: &Inputs, set: &Settings) -> WorstCpu {
    let mut not_fitted = Vec::new();
    let (mut gev, mut pot) = (None, None);
    let measured_ns;
    match joined(&inp.series) {
        Err(e) => {
            not_fitted.push(format!("block maxima: {e}"));
            measured_ns = inp.elapsed_ns;
            let hours = inp.elapsed_ns as f64 / 3.6e12;
            match binned::peaks_over_threshold(
                &inp.histogram,
                inp.resolution_ns,
                inp.observed_max_ns,
                hours,
                set,
            ) {
                Ok(f) => pot = Some(f),
                Err(e) => not_fitted.push(e),
            }
        }
        Ok((mut maxima, slot_ns)) => {
            dither(&mut maxima, inp.resolution_ns);
            measured_ns = (maxima.len() as u64).saturating_mul(slot_ns);
            let s = Series {
                maxima: &maxima,
                slot_ns,
            };
            match fits::peaks_over_threshold(&s, set) {
                Ok(f) => pot = Some(f),
                Err(e) => not_fitted.push(e),
            }
            match fits::block_maxima(&s, set) {
                Ok(f) => gev = Some(f),
                Err(e) => not_fitted.push(e),
            }
        }
    }
    if let (Some(p), Some(g)) = (pot.as_mut(), gev.as_mut()) {
        crate::fits::cross_check(p, g);
    }
    crate::fits::top_check(pot.as_mut(), gev.as_mut());
    for fit in pot.iter_mut().chain(gev.iter_mut()) {
        crate::support::withhold(fit, inp.observed_max_ns);
    }
    let failed = |names: &[&str]| {
        pot.iter()
            .chain(gev.iter())
            .flat_map(|f| &f.checks)
            .any(|c| names.contains(&c.name.as_str()) && !c.passed)
    };
    let mut v = verdict::verdict(pot.as_ref(), gev.as_ref(), set);
    let trusted = verdict::primary(pot.as_ref(), gev.as_ref());
    let run_longer = trusted
        .map(|p| verdict::run_longer(p, measured_ns, set))
        .unwrap_or_default();
    v.headline = crate::support::headline(
        &crate::support::Known {
            trusted,
            observed_max_ns: inp.observed_max_ns,
            measured_ns,
            run_longer: &run_longer,
            second_cause: failed(&["top-follows"]),
            changed: failed(&["split-half", "kpss"]),
        },
        set,
    );
    WorstCpu {
        cpu: inp.cpu,
        samples: inp.samples,
        measured_ns,
        observed_max_ns: inp.observed_max_ns,
        block_maxima: gev,
        peaks_over_threshold: pot,
        not_fitted,
        verdict: v,
        run_longer,
    }
}

fn merged<'a>(h: impl Iterator<Item = &'a Histogram>) -> Histogram {
    let mut out = Histogram::new();
    for x in h {
        out.merge(x);
    }
    out
}

fn analyse_group(members: &[(String, &MeasureRun)], set: &Settings) -> WorstGroup {
    let runs: Vec<&MeasureRun> = members.iter().map(|(_, r)| *r).collect();
    let elapsed_ns = runs
        .iter()
        .fold(0u64, |a, r| a.saturating_add(r.elapsed_ns.0));
    let resolution_ns = runs
        .iter()
        .map(|r| r.import.as_ref().map_or(1, |i| i.resolution_ns.max(1)))
        .max()
        .unwrap_or(1);
    let mut cpus = vec![analyse_one(
        &Inputs {
            cpu: None,
            samples: runs.iter().map(|r| r.all.raw.count).sum(),
            observed_max_ns: runs.iter().map(|r| r.all.raw.max_ns).max().unwrap_or(0),
            series: runs.iter().map(|r| &r.all.series).collect(),
            histogram: merged(runs.iter().map(|r| &r.all.histogram)),
            resolution_ns,
            elapsed_ns,
        },
        set,
    )];
    if set.per_cpu {
        let mut ids: Vec<u32> = runs
            .iter()
            .flat_map(|r| r.cpus.iter().map(|c| c.cpu))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        for id in ids {
            let of: Vec<_> = runs
                .iter()
                .flat_map(|r| r.cpus.iter().filter(|c| c.cpu == id))
                .collect();
            cpus.push(analyse_one(
                &Inputs {
                    cpu: Some(id),
                    samples: of.iter().map(|c| c.raw.count).sum(),
                    observed_max_ns: of.iter().map(|c| c.raw.max_ns).max().unwrap_or(0),
                    series: of.iter().map(|c| &c.series).collect(),
                    histogram: merged(of.iter().map(|c| &c.histogram)),
                    resolution_ns,
                    elapsed_ns,
                },
                set,
            ));
        }
    }
    WorstGroup {
        conditions: if set.pool {
            pooled(members)
        } else {
            conditions(members[0].1)
        },
        runs: members.iter().map(|(n, _)| n.clone()).collect(),
        cpus,
    }
}

/// Everything `rtlab worst` says about these runs.
pub fn analyse(runs: &[(String, &MeasureRun)], set: &Settings) -> WorstDoc {
    let mut sorted: Vec<(String, &MeasureRun)> = runs.to_vec();
    sorted.sort_by(|a, b| a.1.started_at.cmp(&b.1.started_at));
    let mut groups: Vec<(Conditions, Vec<(String, &MeasureRun)>)> = Vec::new();
    for (name, run) in sorted {
        let key = if set.pool {
            None
        } else {
            Some(conditions(run))
        };
        match groups
            .iter_mut()
            .find(|(c, _)| key.as_ref().is_none_or(|k| k == c))
        {
            Some((_, members)) => members.push((name, run)),
            None => groups.push((key.unwrap_or_else(|| conditions(run)), vec![(name, run)])),
        }
    }
    WorstDoc {
        schema: model::worst::SCHEMA.into(),
        rtlab_version: env!("CARGO_PKG_VERSION").into(),
        confidence: set.confidence,
        budget_ns: set.budget_ns,
        per_hour_target: set.per_hour,
        groups: groups.iter().map(|(_, m)| analyse_group(m, set)).collect(),
    }
}

/// Each run on its own, in the order given (what `rtlab compare --worst` puts side by side).
pub fn analyse_each(runs: &[(String, &MeasureRun)], set: &Settings) -> WorstDoc {
    WorstDoc {
        schema: model::worst::SCHEMA.into(),
        rtlab_version: env!("CARGO_PKG_VERSION").into(),
        confidence: set.confidence,
        budget_ns: set.budget_ns,
        per_hour_target: set.per_hour,
        groups: runs
            .iter()
            .map(|r| analyse_group(std::slice::from_ref(r), set))
            .collect(),
    }
}
