//! rtlab measure confined the way a container confines it, for real: an affinity narrower than
//! the machine (a cpuset), CAP_SYS_NICE or CAP_IPC_LOCK dropped from the capability sets, and a
//! cgroup v1 cpu cgroup with no real-time budget (cpu.rt_runtime_us = 0). Each must be measured
//! within, or refused with one line that names the cause and the fix. They need root (CI has
//! it). And `--every`, the DaemonSet's loop, stopped as a deleted pod is.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{is_root, live_skip, rtlab, serial};
use model::measure::MeasureRun;

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("rtlab")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn tool(name: &str) -> Option<PathBuf> {
    ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.exists())
}

#[test]
fn measures_only_the_cpus_its_affinity_allows_and_refuses_others() {
    let _guard = serial();
    let online = model::CpuSet::parse_list(
        &std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap(),
    )
    .unwrap();
    let Some(taskset) = tool("taskset") else {
        return live_skip("taskset (util-linux) not installed: cannot narrow the affinity");
    };
    if !is_root() {
        return live_skip("not root: a real measurement needs SCHED_FIFO");
    }
    if online.len() < 2 {
        return live_skip("one CPU online: no narrower affinity to test");
    }
    let first = online.iter().next().unwrap();
    let last = online.iter().last().unwrap();
    let out = Command::new(&taskset)
        .args(["-c", &first.to_string()])
        .arg(bin())
        .args([
            "measure",
            "--duration",
            "300ms",
            "--no-store",
            "-q",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run: MeasureRun = serde_json::from_slice(&out.stdout).unwrap();
    let cpus: Vec<u32> = run.cpus.iter().map(|c| c.cpu).collect();
    assert_eq!(cpus, [first], "only the allowed CPU is measured");
    assert!(run.cpus[0].raw.count > 0);

    let out = Command::new(&taskset)
        .args(["-c", &first.to_string()])
        .arg(bin())
        .args(["measure", "--duration", "300ms", "--no-store", "--cpus"])
        .arg(last.to_string())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.contains(&format!("CPU {last} is not allowed"))
            && err.contains(&format!("(allowed: {first})")),
        "{err}"
    );
}

#[test]
fn root_without_cap_sys_nice_is_told_the_capability() {
    let _guard = serial();
    let Some(setpriv) = tool("setpriv") else {
        return live_skip("setpriv (util-linux) not installed: cannot drop CAP_SYS_NICE");
    };
    if !is_root() {
        return live_skip("not root: there is no CAP_SYS_NICE to drop");
    }
    let out = Command::new(&setpriv)
        .args(["--inh-caps", "-sys_nice", "--bounding-set", "-sys_nice"])
        .arg(bin())
        .args(["measure", "--duration", "1s", "--no-store"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.contains(
            "it runs as root, but CAP_SYS_NICE is not in its effective capabilities (CapEff"
        ),
        "{err}"
    );
    assert!(err.contains("RLIMIT_RTPRIO is"), "{err}");
    // Inside a container the engine's own fix is named too; a /.dockerenv beside the
    // kernel's threads is a leftover of the image a VM was made from (this one's, here), and
    // no engine is named.
    let kthreadd = std::fs::read_to_string("/proc/2/comm").is_ok_and(|c| c.trim() == "kthreadd");
    if std::path::Path::new("/.dockerenv").exists() {
        assert_eq!(err.contains("--cap-add SYS_NICE"), !kthreadd, "{err}");
    }
    // In a pod (the kubelet gives every container KUBERNETES_SERVICE_HOST), the pod's fix.
    let out = Command::new(setpriv)
        .args(["--inh-caps", "-sys_nice", "--bounding-set", "-sys_nice"])
        .arg(bin())
        .args(["measure", "--duration", "1s", "--no-store"])
        .env("NO_COLOR", "1")
        .env("KUBERNETES_SERVICE_HOST", "10.96.0.1")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("in this kubernetes container (KUBERNETES_SERVICE_HOST in its environment), add CAP_SYS_NICE with `securityContext.capabilities.add: [SYS_NICE]`"),
        "{err}"
    );
}

#[test]
fn a_pod_without_ipc_lock_is_told_the_capability() {
    let _guard = serial();
    let (Some(setpriv), Some(prlimit)) = (tool("setpriv"), tool("prlimit")) else {
        return live_skip("setpriv or prlimit (util-linux) not installed");
    };
    if !is_root() {
        return live_skip("not root: there is no CAP_IPC_LOCK to drop");
    }
    // Without CAP_IPC_LOCK and with 64 KiB of RLIMIT_MEMLOCK, mlockall cannot lock rtlab.
    let out = Command::new(prlimit)
        .arg("--memlock=65536:65536")
        .arg(setpriv)
        .args(["--inh-caps", "-ipc_lock", "--bounding-set", "-ipc_lock"])
        .arg(bin())
        .args(["measure", "--duration", "1s", "--no-store"])
        .env("NO_COLOR", "1")
        .env("KUBERNETES_SERVICE_HOST", "10.96.0.1")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains("locking memory (mlockall)"), "{err}");
    assert!(
        err.contains("add CAP_IPC_LOCK with `securityContext.capabilities.add: [IPC_LOCK]`"),
        "{err}"
    );
    assert!(err.contains("--no-mlock"), "{err}");
}

/// A cgroup v1 cpu cgroup made for one test and removed afterwards (its one process has
/// exited by then).
struct CpuCgroup(PathBuf);

impl Drop for CpuCgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn a_cpu_cgroup_without_rt_budget_is_named_with_the_fix() {
    let _guard = serial();
    let cpu = Path::new("/sys/fs/cgroup/cpu");
    if !cpu.join("cpu.rt_runtime_us").exists() {
        return live_skip(
            "no cgroup v1 cpu hierarchy with cpu.rt_runtime_us (CONFIG_RT_GROUP_SCHED) at /sys/fs/cgroup/cpu",
        );
    }
    if !is_root() {
        return live_skip("not root: cannot make a cpu cgroup");
    }
    let rt_runtime: i64 = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    if rt_runtime < 0 {
        return live_skip("kernel.sched_rt_runtime_us is -1: the cgroup budget is not enforced");
    }
    let group = CpuCgroup(cpu.join(format!("rtlab-test-rt-{}", std::process::id())));
    std::fs::create_dir(&group.0).unwrap();
    // A new cgroup's budget is 0: nothing to write.
    let budget = std::fs::read_to_string(group.0.join("cpu.rt_runtime_us")).unwrap();
    assert_eq!(budget.trim(), "0");
    let procs = group.0.join("cgroup.procs");
    let out = Command::new("/bin/sh")
        .arg("-c")
        .arg("echo $$ > \"$1\" && shift && exec \"$@\"")
        .arg("sh")
        .arg(&procs)
        .arg(bin())
        .args(["measure", "--duration", "1s", "--no-store"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    let dir = group.0.display().to_string();
    assert!(
        err.contains(&format!(
            "its cpu cgroup {dir} grants real-time tasks no time (cpu.rt_runtime_us = 0"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("echo 950000 > {dir}/cpu.rt_runtime_us")),
        "{err}"
    );
    assert!(err.contains("kernel.sched_rt_runtime_us=-1"), "{err}");
    // The same binary outside that cgroup measures: the refusal was the cgroup's doing.
    let out = rtlab()
        .args(["measure", "--duration", "200ms", "--no-store", "-q"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// `rtlab measure --every 1s` with `extra`, stopped by SIGTERM after 2.5 s: its exit status,
/// the runs it printed, its standard error and the store's listing.
fn every_until_sigterm(extra: &[&str]) -> (Option<i32>, Vec<MeasureRun>, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let mut child = rtlab()
        .args([
            "measure",
            "--fake-clock",
            "5us,9us",
            "--duration",
            "1s",
            "--every",
            "1s",
        ])
        .args(extra)
        .arg("--db")
        .arg(&db)
        .args(["--format", "json"])
        // Files, not pipes: nobody reads a pipe while the runs go on.
        .stdout(std::fs::File::create(dir.path().join("out")).unwrap())
        .stderr(std::fs::File::create(dir.path().join("err")).unwrap())
        .spawn()
        .unwrap();
    // The first run at once, the second a second after it, the third a second later.
    std::thread::sleep(std::time::Duration::from_millis(2500));
    // SAFETY: kill with our own child's pid and a valid signal.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let status = common::wait_for(&mut child, std::time::Duration::from_secs(20));
    let err = std::fs::read_to_string(dir.path().join("err")).unwrap();
    let out = std::fs::read(dir.path().join("out")).unwrap();
    let runs = serde_json::Deserializer::from_slice(&out)
        .into_iter::<MeasureRun>()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let listed = rtlab().args(["runs", "--db"]).arg(&db).output().unwrap();
    let text = String::from_utf8_lossy(&listed.stdout).into_owned();
    (status.code(), runs, err, text)
}

/// The DaemonSet's mode: `--every` measures again and again, storing every run, until SIGTERM
/// (what the kubelet sends a pod that is deleted), which ends it with status 130.
#[test]
fn every_repeats_the_run_until_sigterm() {
    let (status, runs, err, text) = every_until_sigterm(&[]);
    assert_eq!(status, Some(130), "{err}");
    assert!((2..=4).contains(&runs.len()), "{} runs: {err}", runs.len());
    assert!(err.contains("--every 1s: the next run starts in"), "{err}");
    assert!(
        text.lines()
            .any(|l| l.trim() == format!("{} runs", runs.len())),
        "every run stored: {text}"
    );
}

/// A run over its budget in an `--every` series is not forgotten at the signal: the exit
/// status is 1, as each of those runs' own was, and the waits say how many failed so far.
#[test]
fn every_exits_1_at_the_signal_when_a_run_failed() {
    let (status, runs, err, _) = every_until_sigterm(&["--budget", "7us"]);
    assert_eq!(status, Some(1), "{err}");
    assert!(runs.len() >= 2, "{} runs: {err}", runs.len());
    assert!(err.contains("run failed so far)"), "{err}");
    assert!(
        runs.iter()
            .filter(|r| r.status == model::measure::RunStatus::Complete)
            .all(|r| model::gate::judge(r, None).outcome() == model::gate::Outcome::Fail)
    );
}
