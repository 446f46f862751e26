//! The report's picture of the machine: the CPU kinds of a heterogeneous host (their letters in
//! the tables), the environment facts and the topology table.

use std::collections::BTreeMap;

use model::CpuSet;
use model::host::{CpuInfo, HostInfo};

use super::facts::{Fact, TableCtx, fact};
use crate::table::{or_unknown, preempt_text};

pub(super) fn cpu_kinds(host: &HostInfo) -> (Vec<String>, BTreeMap<u32, String>) {
    let mut order: Vec<(Vec<u32>, &CpuInfo)> = Vec::new();
    for c in &host.cpus {
        match order
            .iter_mut()
            .find(|(_, first)| first.kind_key() == c.kind_key())
        {
            Some((cpus, _)) => cpus.push(c.cpu),
            None => order.push((vec![c.cpu], c)),
        }
    }
    if order.len() < 2 {
        return (Vec::new(), BTreeMap::new());
    }
    let mut kind_of = BTreeMap::new();
    let mut kinds = Vec::new();
    for (i, (cpus, first)) in order.iter().enumerate() {
        let letter = kind_letter(i);
        for &cpu in cpus {
            kind_of.insert(cpu, letter.clone());
        }
        kinds.push(format!(
            "{letter}: CPUs {} ({})",
            CpuSet::from_cpus(cpus.iter().copied()),
            describe_kind(first)
        ));
    }
    (kinds, kind_of)
}

fn kind_letter(i: usize) -> String {
    let letters = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    if i < letters.len() {
        (letters[i] as char).to_string()
    } else {
        format!("K{i}")
    }
}

fn describe_kind(c: &CpuInfo) -> String {
    let mut parts = Vec::new();
    if let Some(t) = &c.core_type {
        parts.push(format!("{t} cores"));
    }
    if let Some(cap) = c.capacity {
        parts.push(format!("capacity {cap}"));
    }
    if let Some(m) = &c.model {
        parts.push(m.clone());
    }
    if let Some(f) = c.max_freq_khz {
        parts.push(format!("up to {:.2} GHz", f as f64 / 1e6));
    }
    if parts.is_empty() {
        "no details".to_string()
    } else {
        parts.join(", ")
    }
}

pub(super) fn set_or_none(set: &CpuSet) -> String {
    if set.is_empty() {
        "none".to_string()
    } else {
        set.to_string()
    }
}

pub(super) fn environment(host: &HostInfo) -> Vec<Fact> {
    let mut env = vec![
        fact("Kernel release", or_unknown(&host.kernel_release)),
        fact("Kernel version", or_unknown(&host.kernel_version)),
        fact("Architecture", or_unknown(&host.arch)),
        fact(
            "Preemption model",
            match &host.preempt_model_source {
                Some(src) => format!("{} (read from {src})", preempt_text(host)),
                None => preempt_text(host),
            },
        ),
        fact("Boot command line", or_unknown(&host.cmdline)),
    ];
    let clock = match (&host.clocksource, host.available_clocksources.is_empty()) {
        (Some(c), false) => format!(
            "{c} (available: {})",
            host.available_clocksources.join(", ")
        ),
        (Some(c), true) => c.clone(),
        (None, _) => "(unknown)".to_string(),
    };
    env.push(fact("Clock source", clock));
    env.push(fact(
        "CPU model",
        host.cpu_model.as_deref().unwrap_or("(unknown)"),
    ));
    env.push(fact(
        "CPUs",
        format!(
            "online {}, possible {}",
            set_or_none(&host.online_cpus),
            set_or_none(&host.possible_cpus)
        ),
    ));
    env.push(fact("Isolated CPUs", set_or_none(&host.isolated_cpus)));
    env.push(fact("nohz_full CPUs", set_or_none(&host.nohz_full_cpus)));
    if !host.cpuset_isolated_cpus.is_empty() {
        env.push(fact(
            "CPUs set apart by cpusets",
            host.cpuset_isolated_cpus.to_string(),
        ));
    }
    let throttling = match (host.sched_rt_runtime_us, host.sched_rt_period_us) {
        (Some(-1), _) => "off (sched_rt_runtime_us = -1)".to_string(),
        (Some(rt), Some(period)) => format!("on: {rt} us of every {period} us"),
        (Some(rt), None) => format!("on: sched_rt_runtime_us = {rt}"),
        (None, _) => "(unknown)".to_string(),
    };
    env.push(fact("RT throttling", throttling));
    env
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map_or_else(|| "-".to_string(), T::to_string)
}

pub(super) fn topology(host: &HostInfo, kind_of: &BTreeMap<u32, String>) -> Option<TableCtx> {
    if host.cpus.is_empty() {
        return None;
    }
    let with_kind = !kind_of.is_empty();
    let mut head: Vec<String> = [
        "CPU", "package", "die", "cluster", "core", "siblings", "capacity", "type", "max MHz",
        "model", "node",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if with_kind {
        head.insert(1, "kind".to_string());
    }
    let rows = host
        .cpus
        .iter()
        .map(|c| {
            let mut row = vec![
                c.cpu.to_string(),
                opt(&c.package),
                opt(&c.die),
                opt(&c.cluster),
                opt(&c.core),
                opt(&c.siblings),
                opt(&c.capacity),
                opt(&c.core_type),
                opt(&c.max_freq_khz.map(|k| k / 1000)),
                opt(&c.model),
                opt(&c.node),
            ];
            if with_kind {
                row.insert(1, kind_of.get(&c.cpu).cloned().unwrap_or_default());
            }
            row
        })
        .collect();
    Some(TableCtx {
        head,
        rows,
        foot: Vec::new(),
    })
}
