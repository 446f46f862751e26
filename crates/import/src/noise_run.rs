//! A noise run (`rtlab.noise/1`) from another tool's per-CPU noise figures: the imports of
//! `rtla osnoise top`, `rtla hwnoise` and the osnoise tracer's trace. Those sources give
//! totals per CPU, not a distribution, so every CPU's latency result is empty (no histogram,
//! no samples) and the figures live in the run's `noise` section, on which such a run is
//! judged ([`MeasureRun::unjudgeable`]).

use std::time::{Duration, SystemTime};

use model::imported::{Figure, ImportInfo, Quantity, Setting};
use model::measure::{self, MeasureRun, Series};
use model::noise::{NOISE_SCHEMA, NoiseInfo};
use model::stats::Accumulator;
use model::{CpuSet, Histogram, Nanos};

use crate::ImportError;
use crate::build::{self, RunFacts};

/// What a noise import knows besides the per-CPU figures in `noise`.
pub(crate) struct NoiseImport<'a> {
    /// The file, as named.
    pub file: &'a str,
    /// The format read.
    pub format: crate::Format,
    /// The tool (`rtla osnoise top`).
    pub tool: String,
    /// The command line, when the file holds it.
    pub command: Option<String>,
    /// The file's modification time: the end of the run.
    pub modified: SystemTime,
    /// How long the run lasted.
    pub elapsed: Duration,
    /// The source's time resolution, ns (1000 for whole microseconds).
    pub resolution_ns: u64,
    /// What the source did not give exactly.
    pub notes: Vec<String>,
}

/// The run document: empty per-CPU latency results over the CPUs of `noise`, the noise
/// section, schema `rtlab.noise/1`, checked as a result read back would be.
pub(crate) fn noise_run(src: NoiseImport<'_>, noise: NoiseInfo) -> Result<MeasureRun, ImportError> {
    let cpus = CpuSet::from_cpus(noise.cpus.iter().map(|c| c.cpu));
    let results = cpus
        .iter()
        .map(|cpu| {
            measure::cpu_result(
                cpu,
                None,
                Accumulator::new(),
                Histogram::new(),
                Vec::new(),
                Series::default(),
            )
        })
        .collect();
    let mut params = build::neutral_params(&cpus);
    params.duration_ns = Some(Nanos(
        u64::try_from(src.elapsed.as_nanos()).unwrap_or(u64::MAX),
    ));
    if noise.period_ns.get() > 0 {
        params.interval_ns = noise.period_ns;
    }
    // The tools' summaries record no policy, mlock or dma latency request.
    let mut not_stated = vec![Setting::Policy, Setting::Mlock, Setting::DmaLatency];
    if noise.period_ns.get() == 0 {
        not_stated.insert(1, Setting::Interval);
    }
    let mut notes = vec![
        "the source gives per-CPU totals, not a distribution: the per-CPU latency results are \
         empty and the figures are in the noise section"
            .to_string(),
        "the host is unknown (the source does not record it)".to_string(),
    ];
    notes.extend(src.notes);
    let facts = RunFacts {
        host: build::unknown_host(&cpus),
        params,
        started: src
            .modified
            .checked_sub(src.elapsed)
            .unwrap_or(src.modified),
        elapsed: src.elapsed,
        import: ImportInfo {
            tool: src.tool,
            format: src.format.name().to_string(),
            file: src.file.to_string(),
            resolution_ns: src.resolution_ns,
            command: src.command,
            quantity: Quantity::OsNoise,
            notes,
            not_given: vec![Figure::Percentiles, Figure::Stddev],
            not_stated,
        },
    };
    let mut run = build::run(src.file, facts, results)?;
    run.schema = NOISE_SCHEMA.to_string();
    run.noise = Some(noise);
    run.check_bounds()
        .map_err(|e| ImportError::whole(src.file, e))?;
    Ok(run)
}

/// `us` microseconds as ns, or an error naming `what` when that passes 2^64 ns.
pub(crate) fn us_to_ns(file: &str, line: usize, what: &str, us: u64) -> Result<u64, ImportError> {
    us.checked_mul(1000).ok_or_else(|| {
        ImportError::at(
            file,
            line,
            format!("{what} {us} us is past 2^64 ns (584 years): the file cannot be right"),
        )
    })
}
