//! `--jitter-from RUN`: a measured run's worst wake-up latency per CPU as the tasks' release
//! jitter, so the analysis uses this machine's figures rather than a guess. For a run measured
//! with `--workload` that is the wake-up latency its workload section keeps, not the response
//! time its histogram holds.

use model::Nanos;
use model::measure::MeasureRun;
use model::noise::NOISE_SCHEMA;
use model::sched::TaskSet;

use crate::TaskSetError;

/// Sets each task's jitter from `run` (named `label` in notes and errors): the maximum of its
/// CPU, or of every CPU for a task without one; a larger jitter the set gave is kept. Returns
/// one note per task whose jitter changed.
pub fn apply(
    set: &mut TaskSet,
    run: &MeasureRun,
    label: &str,
) -> Result<Vec<String>, TaskSetError> {
    if run.schema == NOISE_SCHEMA {
        return Err(TaskSetError(format!(
            "--jitter-from {label}: a noise run has no wake-up latency; give a run of `rtlab measure`"
        )));
    }
    if let Some(why) = run.unjudgeable() {
        return Err(TaskSetError(format!(
            "--jitter-from {label}: cannot be used: {why}"
        )));
    }
    // A run with a workload holds response times; its wake-up latency is kept apart.
    let worst: Vec<(u32, u64)> = match &run.workload {
        Some(w) => w
            .cpus
            .iter()
            .filter(|c| c.jobs > 0)
            .map(|c| (c.cpu, c.max_latency_ns))
            .collect(),
        None => run
            .cpus
            .iter()
            .filter(|c| c.raw.count > 0)
            .map(|c| (c.cpu, c.raw.max_ns))
            .collect(),
    };
    let max_of = |cpu: u32| worst.iter().find(|(c, _)| *c == cpu).map(|(_, m)| *m);
    let overall = worst.iter().map(|(_, m)| *m).max();
    let measured: Vec<String> = run.cpus.iter().map(|c| c.cpu.to_string()).collect();
    let mut notes = Vec::new();
    for task in &mut set.tasks {
        let (worst, whence) = match task.cpu {
            Some(cpu) => (
                max_of(cpu).ok_or_else(|| {
                    TaskSetError(format!(
                        "--jitter-from {label}: task \"{}\" is on CPU {cpu}, which the run did not \
                         measure (it measured CPUs {}); measure that CPU or drop --jitter-from",
                        task.name,
                        measured.join(",")
                    ))
                })?,
                format!("{label} CPU {cpu} max"),
            ),
            None => (
                overall.ok_or_else(|| {
                    TaskSetError(format!("--jitter-from {label}: the run has no samples"))
                })?,
                format!("{label} max over CPUs {}", measured.join(",")),
            ),
        };
        let worst = Nanos(worst);
        if worst > task.jitter {
            notes.push(format!(
                "{}: jitter {} measured ({whence}) in place of {}",
                task.name, worst, task.jitter
            ));
            task.jitter = worst;
            task.jitter_source = Some(whence);
        } else {
            notes.push(format!(
                "{}: the set's jitter {} kept, above the measured {worst} ({whence})",
                task.name, task.jitter
            ));
        }
        if task.jitter >= task.deadline {
            notes.push(format!(
                "{}: the jitter reaches the deadline {}: no policy can meet it",
                task.name, task.deadline
            ));
        }
    }
    Ok(notes)
}
