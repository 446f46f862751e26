//! The checks before measuring: warnings from host descriptions, the privilege refusals and
//! their fixes, containers and virtual machines.

use super::*;
use crate::config::{Config, Request};
use model::{CpuSet, Nanos};

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
        w[0].message.contains("measured CPU 3 is not"),
        "{}",
        w[0].message
    );
}

#[test]
fn a_workload_at_the_rt_limit_is_warned_of_throttling() {
    let host = |runtime: i64| HostInfo {
        preempt_rt: true,
        sched_rt_runtime_us: Some(runtime),
        sched_rt_period_us: Some(1_000_000),
        isolated_cpus: CpuSet::from_cpus([0, 1, 2, 3]),
        ..HostInfo::default()
    };
    let with = |work_us: u64| {
        config(|r| {
            r.interval = Some(Nanos::from_us(1000));
            r.workload = Some(Nanos::from_us(work_us));
        })
    };
    // 960 of 1000 us against 95 %: warned, with the limit and the way out.
    let w = warnings(&with(960), &host(950_000));
    let found = codes(&w);
    assert!(found.contains(&"workload-rt-throttling"), "{found:?}");
    let m = &w
        .iter()
        .find(|w| w.code == "workload-rt-throttling")
        .unwrap()
        .message;
    assert!(m.contains("asks 96.0%") && m.contains("past 95.0%"), "{m}");
    assert!(m.contains("50000 us of every 1000000 us"), "{m}");
    // Below the limit, or without one: nothing.
    let w = warnings(&with(900), &host(950_000));
    assert!(!codes(&w).contains(&"workload-rt-throttling"));
    let w = warnings(&with(960), &host(-1));
    assert!(!codes(&w).contains(&"workload-rt-throttling"));
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

fn access(f: impl Fn(&mut RtAccess)) -> RtAccess {
    let mut a = RtAccess {
        privileges: Privileges {
            euid: 0,
            cap_sys_nice: true,
            cap_ipc_lock: true,
            rtprio_limit: Some(0),
            memlock_limit: Some(8 << 20),
        },
        container: None,
        rt_group: None,
        sched_rt_runtime_us: Some(950_000),
    };
    f(&mut a);
    a
}

fn docker() -> Option<Container> {
    Some(Container {
        engine: "docker".into(),
        evidence: "/.dockerenv exists".into(),
    })
}

fn pod() -> Option<Container> {
    Some(Container {
        engine: "kubernetes".into(),
        evidence: "kubepods in /proc/self/cgroup".into(),
    })
}

fn zero_budget() -> Option<RtGroup> {
    Some(RtGroup {
        dir: "/sys/fs/cgroup/cpu/docker/ab12".into(),
        rt_runtime_us: 0,
    })
}

#[test]
fn a_capable_process_is_let_through() {
    let a = access(|_| {});
    assert_eq!(a.refusal("rtlab measure", Policy::Fifo, 95), None);
    assert_eq!(a.mlock_hint(), None);
    assert_eq!(a.dma_latency_hint(), None);
    // A budget, or RT bandwidth control off, lets the cgroup through too.
    let budget = access(|a| {
        a.rt_group = Some(RtGroup {
            dir: "/sys/fs/cgroup/cpu".into(),
            rt_runtime_us: 950_000,
        })
    });
    assert_eq!(budget.refusal("rtlab measure", Policy::Fifo, 95), None);
    let unthrottled = access(|a| {
        a.rt_group = zero_budget();
        a.sched_rt_runtime_us = Some(-1);
    });
    assert_eq!(unthrottled.refusal("rtlab measure", Policy::Fifo, 95), None);
    // Normal policies need nothing.
    let nobody = access(|a| {
        a.privileges.euid = 1000;
        a.privileges.cap_sys_nice = false;
        a.rt_group = zero_budget();
    });
    assert_eq!(nobody.refusal("rtlab measure", Policy::Other, 0), None);
}

#[test]
fn root_without_sys_nice_in_a_pod_is_told_the_security_context() {
    let a = access(|a| {
        a.privileges.cap_sys_nice = false;
        a.container = pod();
    });
    let msg = a.refusal("rtlab measure", Policy::Fifo, 95).unwrap();
    assert!(msg.starts_with("rtlab measure needs root or CAP_SYS_NICE to run SCHED_FIFO threads at priority 95: it runs as root, but CAP_SYS_NICE is not in its effective capabilities (CapEff"), "{msg}");
    assert!(msg.contains("RLIMIT_RTPRIO is 0"), "{msg}");
    assert!(msg.contains("kubepods in /proc/self/cgroup"), "{msg}");
    assert!(
        msg.contains("securityContext.capabilities.add: [SYS_NICE]"),
        "{msg}"
    );
    assert!(msg.contains("setcap"), "{msg}");
    assert!(!msg.contains('\n'));
}

#[test]
fn a_user_with_a_low_rtprio_limit_is_told_the_limit() {
    let a = access(|a| {
        a.privileges.euid = 1000;
        a.privileges.cap_sys_nice = false;
        a.privileges.rtprio_limit = Some(50);
        a.container = docker();
    });
    assert_eq!(a.refusal("rtlab measure", Policy::Fifo, 50), None);
    let msg = a.refusal("rtlab measure", Policy::Rr, 51).unwrap();
    assert!(
        msg.contains("no CAP_SYS_NICE and RLIMIT_RTPRIO is 50"),
        "{msg}"
    );
    assert!(msg.contains("`docker run --cap-add SYS_NICE`"), "{msg}");
    assert!(msg.contains("ulimit -r 99"), "{msg}");
    // Outside a container only the host's fixes are named.
    let host = access(|a| {
        a.privileges.euid = 1000;
        a.privileges.cap_sys_nice = false;
    });
    let msg = host.refusal("rtlab measure", Policy::Fifo, 1).unwrap();
    assert!(!msg.contains("container"), "{msg}");
    // SCHED_DEADLINE takes no rlimit.
    let msg = host.refusal("rtlab measure", Policy::Deadline, 0).unwrap();
    assert!(msg.contains("SCHED_DEADLINE threads:"), "{msg}");
}

#[test]
fn a_cgroup_without_rt_budget_is_named_with_its_fixes() {
    let a = access(|a| {
        a.rt_group = zero_budget();
        a.container = docker();
    });
    let msg = a.refusal("rtlab measure", Policy::Fifo, 95).unwrap();
    assert!(
        msg.contains("cpu cgroup /sys/fs/cgroup/cpu/docker/ab12 grants real-time tasks no time (cpu.rt_runtime_us = 0"),
        "{msg}"
    );
    assert!(msg.contains("--cpu-rt-runtime=950000"), "{msg}");
    assert!(
        msg.contains("echo 950000 > /sys/fs/cgroup/cpu/docker/ab12/cpu.rt_runtime_us"),
        "{msg}"
    );
    assert!(
        msg.contains("sysctl kernel.sched_rt_runtime_us=-1"),
        "{msg}"
    );
    // The cgroup budget does not govern SCHED_DEADLINE.
    assert_eq!(a.refusal("rtlab measure", Policy::Deadline, 0), None);
    // A missing capability is named first: it is checked first by the kernel too.
    let both = access(|a| {
        a.rt_group = zero_budget();
        a.privileges.cap_sys_nice = false;
    });
    let msg = both.refusal("rtlab measure", Policy::Fifo, 95).unwrap();
    assert!(msg.contains("CAP_SYS_NICE is not in"), "{msg}");
}

#[test]
fn a_container_without_ipc_lock_or_the_device_gets_its_fix() {
    let a = access(|a| {
        a.privileges.cap_ipc_lock = false;
        a.container = pod();
    });
    let msg = a.mlock_hint().unwrap();
    assert!(
        msg.contains("securityContext.capabilities.add: [IPC_LOCK]"),
        "{msg}"
    );
    assert!(a.dma_latency_hint().unwrap().contains("hostPath"));
    let d = access(|a| {
        a.privileges.cap_ipc_lock = false;
        a.container = docker();
    });
    assert!(
        d.mlock_hint()
            .unwrap()
            .contains("docker run --cap-add IPC_LOCK")
    );
    assert!(
        d.dma_latency_hint()
            .unwrap()
            .contains("--device /dev/cpu_dma_latency")
    );
    // Outside a container the host's own error says enough.
    let host = access(|a| a.privileges.cap_ipc_lock = false);
    assert_eq!(host.mlock_hint(), None);
}

#[test]
fn a_run_in_a_container_is_marked_with_how_to_own_its_cpus() {
    use testkit::FakeRoot;
    assert_eq!(
        container_warning(&FakeRoot::new().root()),
        None,
        "the bare host"
    );
    let docker = FakeRoot::new().file("/.dockerenv", "");
    let w = container_warning(&docker.root()).unwrap();
    assert_eq!(w.code, "in-container");
    assert!(
        w.message
            .contains("in a container (docker: /.dockerenv exists)")
    );
    assert!(w.message.contains("--cpuset-cpus"), "{}", w.message);
    let pod = docker.file(
        "/proc/self/cgroup",
        "0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-ab.scope\n",
    );
    let w = container_warning(&pod.root()).unwrap();
    assert!(
        w.message.contains("in a container (kubernetes: kubepods"),
        "{}",
        w.message
    );
    assert!(w.message.contains("static CPU manager"), "{}", w.message);
}

#[test]
fn a_run_in_a_virtual_machine_is_marked_with_its_hypervisor() {
    use testkit::FakeRoot;
    let codes = |root: &Root| -> Vec<String> {
        placement_warnings(root)
            .into_iter()
            .map(|w| w.code)
            .collect()
    };
    let bare = FakeRoot::new().file("/proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu sse2\n");
    assert!(codes(&bare.root()).is_empty(), "bare metal");
    let guest = bare
        .file(
            "/proc/cpuinfo",
            "processor\t: 0\nflags\t\t: fpu sse2 hypervisor\n",
        )
        .file("/sys/class/dmi/id/sys_vendor", "QEMU\n");
    let w = placement_warnings(&guest.root());
    assert_eq!(codes(&guest.root()), ["virtual-machine"]);
    assert!(
        w[0].message.contains("virtual machine (QEMU)"),
        "{}",
        w[0].message
    );
}
