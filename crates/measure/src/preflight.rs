//! Checks made before measuring: what would make the run fail (privileges) and what changes
//! what its numbers mean (warnings recorded in the result).

use model::host::HostInfo;
use model::measure::{Policy, Warning};

use crate::config::Config;

/// The conditions, visible from the host description and the configuration, that a reader
/// of the result must know about.
pub fn warnings(config: &Config, host: &HostInfo) -> Vec<Warning> {
    let mut out = Vec::new();
    if let (Some(runtime), period) = (host.sched_rt_runtime_us, host.sched_rt_period_us)
        && runtime >= 0
    {
        {
            let period = period.unwrap_or(1_000_000);
            out.push(Warning::new(
                "rt-throttling",
                format!(
                    "RT throttling is on (kernel.sched_rt_runtime_us={runtime} of {period}): real-time tasks are stopped for {} us of every {} us once they use their share; for RT workloads set `sysctl kernel.sched_rt_runtime_us=-1`",
                    (period - runtime).max(0),
                    period
                ),
            ));
        }
    }
    if !host.preempt_rt {
        let model = host.preempt_model.as_deref().unwrap_or("unknown");
        out.push(Warning::new(
            "not-preempt-rt",
            format!(
                "the kernel is not PREEMPT_RT (preemption model: {model}): worst-case latency is not bounded by design"
            ),
        ));
    }
    let isolated = host
        .isolated_cpus
        .union(&host.nohz_full_cpus)
        .union(&host.cpuset_isolated_cpus);
    let exposed = config.cpus.difference(&isolated);
    if !exposed.is_empty() {
        out.push(Warning::new(
            "cpu-not-isolated",
            format!(
                "measured CPUs {exposed} are not isolated (not in isolcpus=, nohz_full= or a cpuset partition): other tasks, IRQs and kernel work run there too; isolate them with `rtlab tune`, isolcpus=/nohz_full= on the kernel command line or a cpuset partition"
            ),
        ));
    }
    let slot = config.series_slot();
    if slot > model::Nanos::SECOND {
        out.push(Warning::new(
            "series-coarse",
            format!(
                "the run is planned for {}: the maximum-over-time series keeps one slot per {slot} (at most {} slots per CPU, so memory stays bounded); the histogram, percentiles and worst samples are exact as always",
                config.planned(),
                model::limits::MAX_SERIES_SLOTS
            ),
        ));
    }
    if !config.policy.is_realtime() {
        out.push(Warning::new(
            "policy-not-realtime",
            format!(
                "--policy {} is not a real-time policy: the figures show how a normal task is scheduled, not real-time latency",
                config.policy.as_str()
            ),
        ));
    }
    if !config.mlock {
        out.push(Warning::new(
            "no-mlock",
            "memory is not locked (--no-mlock): a page fault can land in a measurement",
        ));
    }
    if config.dma_latency_us.is_none() {
        out.push(Warning::new(
            "dma-latency-off",
            "/dev/cpu_dma_latency is not held (--dma-latency off): deep idle states add their exit latency to wake-ups",
        ));
    }
    if config.priority == 99 {
        out.push(Warning::new(
            "priority-99",
            "measuring at priority 99 (--allow-prio-99) starves kernel threads that run at 99 (migration, watchdogs, some IRQ threads) while a thread runs",
        ));
    }
    if config.policy == Policy::Deadline {
        out.push(Warning::new(
            "deadline-policy",
            "SCHED_DEADLINE threads are woken by the deadline scheduler's own timer as well as by the sleep; compare such results only with other deadline runs",
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, Request};
    use model::CpuSet;

    fn config(f: impl Fn(&mut Request)) -> Config {
        let mut r = Request {
            cpus: CpuSet::from_cpus([0, 1, 2, 3]),
            ..Request::default()
        };
        f(&mut r);
        Config::from_request(&r).unwrap()
    }

    fn codes(w: &[Warning]) -> Vec<&str> {
        w.iter().map(|w| w.code.as_str()).collect()
    }

    #[test]
    fn a_tuned_rt_host_gets_no_warning() {
        let host = HostInfo {
            preempt_rt: true,
            sched_rt_runtime_us: Some(-1),
            isolated_cpus: CpuSet::from_cpus([0, 1]),
            nohz_full_cpus: CpuSet::from_cpus([2, 3]),
            ..HostInfo::default()
        };
        assert!(warnings(&config(|_| {}), &host).is_empty());
    }

    #[test]
    fn cpus_a_cpuset_sets_apart_count_as_isolated() {
        let host = HostInfo {
            preempt_rt: true,
            sched_rt_runtime_us: Some(-1),
            isolated_cpus: CpuSet::from_cpus([0]),
            cpuset_isolated_cpus: CpuSet::from_cpus([1, 2, 3]),
            ..HostInfo::default()
        };
        assert!(warnings(&config(|_| {}), &host).is_empty());
        let host = HostInfo {
            cpuset_isolated_cpus: CpuSet::from_cpus([1, 2]),
            ..host
        };
        let w = warnings(&config(|_| {}), &host);
        assert_eq!(codes(&w), ["cpu-not-isolated"]);
        assert!(
            w[0].message.contains("measured CPUs 3 "),
            "{}",
            w[0].message
        );
    }

    #[test]
    fn an_untuned_host_is_called_out() {
        let host = HostInfo {
            preempt_rt: false,
            preempt_model: Some("voluntary".into()),
            sched_rt_runtime_us: Some(950_000),
            sched_rt_period_us: Some(1_000_000),
            isolated_cpus: CpuSet::from_cpus([3]),
            ..HostInfo::default()
        };
        let w = warnings(
            &config(|r| {
                r.no_mlock = true;
                r.dma_latency_us = Some(None);
            }),
            &host,
        );
        assert_eq!(
            codes(&w),
            vec![
                "rt-throttling",
                "not-preempt-rt",
                "cpu-not-isolated",
                "no-mlock",
                "dma-latency-off"
            ]
        );
        assert!(
            w[0].message.contains("50000 us of every 1000000 us"),
            "{}",
            w[0].message
        );
        assert!(w[1].message.contains("voluntary"));
        assert!(w[2].message.contains("CPUs 0-2 "), "{}", w[2].message);
    }
}
