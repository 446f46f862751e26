//! Tests of `sys::host` and `sys::cpu` over builder-made and captured trees. They
//! live here because `rtlab-sys` cannot use [`FakeRoot`](crate::FakeRoot) in its own unit
//! tests (the test build of a crate is a different crate from the one testkit links).

use std::collections::BTreeMap;

use model::host::{CpuInfo, HostInfo};
use sys::host::{host_info, kernel_config};

use crate::{FakeRoot, fixture_names, fixture_root};

/// One `/proc/cpuinfo` record as an arm64 kernel prints it.
fn arm64_record(cpu: u32, part: &str) -> String {
    format!(
        "processor\t: {cpu}\nBogoMIPS\t: 38.40\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 \
         crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp\nCPU implementer\t: 0x41\n\
         CPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: {part}\nCPU revision\t: 0\n\n"
    )
}

/// A Qualcomm RB5 (Snapdragon 865) on a Debian PREEMPT_RT kernel: 4 × Cortex-A55 (0xd05) at
/// 1.80 GHz, 3 × Cortex-A77 (0xd0d) at 2.42 GHz, 1 × Cortex-A77 prime at 2.84 GHz.
/// Capacities are the device tree's capacity-dmips-mhz (448 and 1024) scaled by maximum
/// frequency. Cluster ids are those of a two-cluster cpu-map; DynamIQ device trees may put
/// all eight in one cluster, which is why grouping does not use them.
fn rb5() -> FakeRoot {
    let mut cpuinfo = String::new();
    let mut fake = FakeRoot::new()
        .cpus(8)
        .hostname("rb5")
        .kernel("6.1.0-50-rt-arm64", "#1 SMP PREEMPT_RT Debian 6.1.176-1")
        .realtime(true)
        .cmdline("root=/dev/sda1 isolcpus=4-7 nohz_full=4-7 rcu_nocbs=4-7")
        .isolated("4-7")
        .nohz_full("4-7")
        .rt_runtime_us(-1)
        .clocksource("arch_sys_counter", &["arch_sys_counter"]);
    for cpu in 0..8 {
        let (part, capacity, khz, cluster) = match cpu {
            0..=3 => ("0xd05", 284, 1_804_800, 0),
            4..=6 => ("0xd0d", 871, 2_419_200, 1),
            _ => ("0xd0d", 1024, 2_841_600, 1),
        };
        cpuinfo.push_str(&arm64_record(cpu, part));
        fake = fake
            .capacity(cpu, capacity)
            .max_freq_khz(cpu, khz)
            .cluster(cpu, cluster)
            .node(cpu, 0);
    }
    fake.cpuinfo(&cpuinfo)
}

#[test]
fn big_little_rb5_groups_into_three_kinds() {
    let fake = rb5();
    let h = host_info(&fake.root());
    assert_eq!(h.hostname, "rb5");
    assert_eq!(
        h.arch, "unknown",
        "no /proc/sys/kernel/arch in the fake tree"
    );
    assert!(h.preempt_rt);
    assert_eq!(h.preempt_model.as_deref(), Some("rt"));
    assert_eq!(
        h.preempt_model_source.as_deref(),
        Some("/sys/kernel/realtime")
    );
    assert_eq!(h.cpu_model.as_deref(), Some("0x41:0xd05, 0x41:0xd0d"));
    assert_eq!(h.isolated_cpus.to_string(), "4-7");
    assert_eq!(h.nohz_full_cpus.to_string(), "4-7");
    assert_eq!(h.sched_rt_runtime_us, Some(-1));
    assert_eq!(h.sched_rt_period_us, None);
    assert_eq!(h.clocksource.as_deref(), Some("arch_sys_counter"));
    assert_eq!(h.cpus.len(), 8);

    assert_eq!(
        h.cpus[0],
        CpuInfo {
            cpu: 0,
            package: Some(0),
            die: Some(0),
            cluster: Some(0),
            core: Some(0),
            siblings: Some("0".parse().unwrap()),
            capacity: Some(284),
            core_type: None,
            max_freq_khz: Some(1_804_800),
            model: Some("0x41:0xd05".to_string()),
            node: Some(0),
        }
    );
    assert_eq!(h.cpus[7].capacity, Some(1024));
    assert_eq!(h.cpus[7].model.as_deref(), Some("0x41:0xd0d"));
    assert_eq!(h.cpus[5].cluster, Some(1));

    let mut groups: BTreeMap<_, Vec<u32>> = BTreeMap::new();
    for c in &h.cpus {
        groups.entry(c.kind_key()).or_default().push(c.cpu);
    }
    let mut members: Vec<Vec<u32>> = groups.into_values().collect();
    members.sort();
    assert_eq!(members, [vec![0, 1, 2, 3], vec![4, 5, 6], vec![7]]);
}

#[test]
fn empty_tree_is_all_absent() {
    let fake = FakeRoot::new();
    let h = host_info(&fake.root());
    let expected = HostInfo {
        arch: "unknown".to_string(),
        ..HostInfo::default()
    };
    assert_eq!(h, expected);
    assert_eq!(kernel_config(&fake.root()), None);
}

#[test]
fn cpus_only_tree_has_topology_and_nothing_else() {
    let fake = FakeRoot::new().cpus(2);
    let h = host_info(&fake.root());
    assert_eq!(h.online_cpus.to_string(), "0-1");
    assert_eq!(h.cpus.len(), 2);
    let c = &h.cpus[1];
    assert_eq!((c.package, c.die, c.core), (Some(0), Some(0), Some(1)));
    assert_eq!((c.cluster, c.capacity, c.max_freq_khz), (None, None, None));
    assert_eq!((&c.model, &c.node, &c.core_type), (&None, &None, &None));
    assert!(h.kernel_release.is_empty() && h.cmdline.is_empty());
    assert_eq!(h.preempt_model, None);
    assert!(!h.preempt_rt && !h.preempt_dynamic);
    assert_eq!(h.cpu_model, None);
}

#[test]
fn broken_files_do_not_panic() {
    let fake = FakeRoot::new()
        .cpus(2)
        .online("0-")
        .isolated("garbage")
        .nohz_full("(null)")
        .rt_runtime_us(-1)
        .file("/proc/sys/kernel/sched_rt_period_us", "lots\n")
        .file("/proc/config.gz", "\x1f\u{8b}truncated")
        .file("/sys/devices/system/cpu/cpu0/topology/core_id", "")
        .file("/sys/devices/system/cpu/cpu1/cpu_capacity", "-5\n")
        .file("/sys/kernel/debug/sched/preempt", "none (volun")
        .cpuinfo("processor\t: 0\nmodel na");
    let h = host_info(&fake.root());
    assert!(
        h.online_cpus.is_empty() && h.cpus.is_empty(),
        "an unparsable online list"
    );
    assert!(h.isolated_cpus.is_empty() && h.nohz_full_cpus.is_empty());
    assert_eq!(h.possible_cpus.to_string(), "0-1");
    assert_eq!(h.sched_rt_period_us, None);
    assert_eq!(h.preempt_model, None);
    assert!(
        h.preempt_dynamic,
        "the debugfs file exists only on dynamic kernels"
    );

    let fake = fake
        .remove("/sys/devices/system/cpu/online")
        .remove("/sys/kernel/debug/sched/preempt");
    let h = host_info(&fake.root());
    assert_eq!(h.online_cpus.to_string(), "0-1", "falls back to possible");
    assert_eq!((h.cpus[0].core, h.cpus[1].capacity), (None, None));
    assert!(!h.preempt_dynamic);
}

#[test]
fn every_fixture_describes_its_online_cpus() {
    for name in fixture_names() {
        let root = fixture_root(&name);
        let h = host_info(&root);
        assert!(!h.kernel_release.is_empty(), "{name}: no release");
        assert!(!h.online_cpus.is_empty(), "{name}: no online CPUs");
        assert_eq!(h.cpus.len(), h.online_cpus.len(), "{name}");
        assert!(h.online_cpus.is_subset(&h.possible_cpus), "{name}");
    }
}

#[test]
fn firecracker_fixture_values() {
    let h = host_info(&fixture_root("vm-x86_64-2cpu"));
    assert_eq!(h.hostname, "rtlab-host");
    assert_eq!(h.kernel_release, "6.18.44-fc-v595");
    assert_eq!(h.cpus.len(), 2);
    assert_eq!(h.clocksource.as_deref(), Some("tsc"));
    assert_eq!(h.sched_rt_runtime_us, Some(950_000));
    assert!(h.preempt_dynamic && !h.preempt_rt);
}
