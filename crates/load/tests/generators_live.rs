//! Live tests of every generator on this machine: real threads, processes, sockets, files
//! and timers, checked from outside through `/proc/stat` and `/proc/interrupts` (read and
//! parsed by the tests themselves) where the issue asks for it, and through the load's own
//! report otherwise. Nothing here is mocked.
//!
//! The tests read CPU busy shares, so they run one at a time, and each places its load on the
//! last online CPU where it can.

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use load::{LoadOptions, LoadSet};
use model::CpuSet;
use model::load::{GeneratorReport, LoadReport, LoadSpec};
use sys::Root;
use sys::parse::interrupts;
use sys::parse::stat;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn last_cpu() -> u32 {
    sys::cpu::online(&Root::host()).unwrap().last().unwrap()
}

fn options(dir: &Path) -> LoadOptions {
    LoadOptions {
        workdir_base: dir.to_path_buf(),
        ..LoadOptions::host()
    }
}

/// Runs `spec` for `secs` seconds (after `warmup`), returns the report and the private
/// directory it used.
fn run(spec: &str, warmup: Duration, secs: f64, dir: &Path) -> (LoadReport, std::path::PathBuf) {
    let (report, workdir, _) = run_watching(spec, warmup, secs, dir, None);
    (report, workdir)
}

/// [`run`], and how busy `cpu` was over the measured window as this test reads it from
/// `/proc/stat` itself (not the load's own figure).
fn run_watching(
    spec: &str,
    warmup: Duration,
    secs: f64,
    dir: &Path,
    cpu: Option<u32>,
) -> (LoadReport, std::path::PathBuf, f64) {
    let spec = LoadSpec::parse(spec).unwrap();
    let mut set = LoadSet::start(&spec, &options(dir)).unwrap();
    std::thread::sleep(warmup);
    let before = cpu.map(proc_stat_ticks);
    set.mark();
    std::thread::sleep(Duration::from_secs_f64(secs));
    let after = cpu.map(proc_stat_ticks);
    let workdir = set.workdir().to_path_buf();
    let report = set.stop("complete");
    assert!(!workdir.exists(), "the private directory was not removed");
    let busy = match (before, after) {
        (Some((busy0, total0)), Some((busy1, total1))) => {
            100.0 * (busy1 - busy0) as f64 / (total1 - total0).max(1) as f64
        }
        _ => f64::NAN,
    };
    (report, workdir, busy)
}

/// The busy and total ticks of `cpu` in `/proc/stat` (busy: all but idle and iowait; guest
/// time is in user already), read and parsed here, independently of the code under test.
fn proc_stat_ticks(cpu: u32) -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/stat").unwrap();
    let name = format!("cpu{cpu}");
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name.as_str()))
        .unwrap_or_else(|| panic!("no {name} line in /proc/stat"));
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|t| t.parse().unwrap())
        .collect();
    let total: u64 = ticks.iter().sum();
    (total - ticks[3] - ticks[4], total)
}

/// The load's own busy share of `cpu`, from its report.
fn busy_of(report: &LoadReport, cpu: u32) -> f64 {
    report
        .cpu_busy
        .iter()
        .find(|b| b.cpu == cpu)
        .unwrap_or_else(|| panic!("no busy share for CPU {cpu}: {report:?}"))
        .busy_percent
}

fn children_of_this_process() -> Vec<u32> {
    let me = std::process::id();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let line = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let ppid: u32 = line[line.rfind(')')? + 1..]
                .split_ascii_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            (ppid == me).then_some(pid)
        })
        .collect()
}

fn only(report: &LoadReport) -> &GeneratorReport {
    assert_eq!(report.generators.len(), 1, "{report:?}");
    &report.generators[0]
}

#[test]
fn cpu_60_percent_reads_60_plus_minus_7_in_proc_stat() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let cpu = last_cpu();
    let (report, _, busy) = run_watching(
        &format!("cpu:60%@{cpu}"),
        Duration::from_millis(300),
        4.0,
        dir.path(),
        Some(cpu),
    );
    assert!(
        (53.0..=67.0).contains(&busy),
        "/proc/stat: busy {busy}%: {report:?}"
    );
    // The report's own figure agrees with what /proc/stat said.
    let reported = busy_of(&report, cpu);
    assert!(
        (reported - busy).abs() <= 3.0,
        "reported {reported}%, /proc/stat {busy}%"
    );
    let g = only(&report);
    assert_eq!(g.tasks, 1);
    assert_eq!(g.cpus, CpuSet::from_cpus([cpu]));
    assert!(
        (55.0..=65.0).contains(&g.cpu_share_percent),
        "own CPU share {}%",
        g.cpu_share_percent
    );
    assert!(g.ops > 0 && g.unit == "loop", "{g:?}");
    assert!(g.notes.is_empty(), "{:?}", g.notes);
}

#[test]
fn cpu_100_percent_saturates_its_cpu() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let cpu = last_cpu();
    let (report, _, busy) = run_watching(
        &format!("cpu:100%@{cpu}"),
        Duration::from_millis(200),
        3.0,
        dir.path(),
        Some(cpu),
    );
    assert!(busy >= 95.0, "/proc/stat: busy {busy}%");
    assert!(busy_of(&report, cpu) >= 95.0, "{report:?}");
    assert!(only(&report).cpu_share_percent >= 95.0, "{report:?}");
}

/// Rates of context switches (whole machine) and local timer interrupts (on `cpu`) over
/// `window`.
fn switch_and_timer_rates(cpu: u32, window: Duration) -> (f64, f64) {
    let read = || {
        let root = Root::host();
        let ctxt = stat::counter(&root.read("/proc/stat").unwrap(), "ctxt").unwrap();
        let timer = interrupts::parse(&root.read("/proc/interrupts").unwrap())
            .unwrap()
            .local_timer_count(cpu)
            .expect("a local timer row in /proc/interrupts");
        (ctxt, timer, Instant::now())
    };
    let (c0, t0, at0) = read();
    std::thread::sleep(window);
    let (c1, t1, at1) = read();
    let secs = (at1 - at0).as_secs_f64();
    ((c1 - c0) as f64 / secs, (t1 - t0) as f64 / secs)
}

#[test]
fn timer_storm_raises_context_switches_and_timer_interrupts_over_idle() {
    let _g = serial();
    let cpu = last_cpu();
    let (idle_switches, idle_timers) = switch_and_timer_rates(cpu, Duration::from_secs(2));
    let dir = tempfile::tempdir().unwrap();
    let spec = LoadSpec::parse(&format!("timer-storm:100@{cpu}")).unwrap();
    let set = LoadSet::start(&spec, &options(dir.path())).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let (storm_switches, storm_timers) = switch_and_timer_rates(cpu, Duration::from_secs(2));
    let report = set.stop("complete");
    eprintln!(
        "idle: {idle_switches:.0} switches/s, {idle_timers:.0} timer irqs/s on CPU {cpu}; \
         storm: {storm_switches:.0} switches/s, {storm_timers:.0} timer irqs/s"
    );
    // 100 sleepers of 0.5 ms on average: tens of thousands of wake-ups a second.
    assert!(
        storm_switches > 2.0 * idle_switches + 10_000.0,
        "{storm_switches} vs {idle_switches}"
    );
    assert!(
        storm_timers > 2.0 * idle_timers + 1_000.0,
        "{storm_timers} vs {idle_timers}"
    );
    let g = only(&report);
    assert_eq!(g.tasks, 100);
    assert_eq!(g.unit, "wakeup");
    assert!(g.ops_per_sec > 10_000.0, "{g:?}");
}

#[test]
fn messaging_moves_messages_in_every_form() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    for form in [
        "socket:thread",
        "pipe:thread",
        "socket:process",
        "pipe:process",
    ] {
        let (report, _) = run(
            &format!("messaging:2x3:{form}"),
            Duration::ZERO,
            1.5,
            dir.path(),
        );
        let g = only(&report);
        assert_eq!(g.tasks, 12, "{form}");
        assert!(g.ops >= 20_000, "{form}: only {} messages", g.ops);
        assert!(g.bytes >= g.ops * 100, "{form}: {g:?}");
        assert!(g.cpu_share_percent > 20.0, "{form}: {g:?}");
    }
    // Processes are gone: no child of this test process is left.
    assert_eq!(children_of_this_process(), Vec::<u32>::new());
}

#[test]
fn net_moves_tcp_bytes_and_udp_datagrams_over_loopback() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let (tcp, _) = run("net:tcp:2", Duration::ZERO, 1.5, dir.path());
    let g = only(&tcp);
    assert_eq!(g.tasks, 4);
    assert!(g.bytes >= 64 << 20, "TCP moved only {} bytes", g.bytes);
    assert!(g.ops >= g.bytes / (16 << 10) - 4, "{g:?}");
    let (udp, _) = run("net:udp", Duration::ZERO, 1.5, dir.path());
    let g = only(&udp);
    assert!(g.ops >= 10_000, "UDP delivered only {} datagrams", g.ops);
    assert_eq!(g.bytes, g.ops * 1024);
    assert!(g.notes[0].contains("lost"), "{:?}", g.notes);
}

#[test]
fn io_writes_fsyncs_within_its_cap_and_cleans_up() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let spec = LoadSpec::parse("io:4M:2").unwrap();
    let mut set = LoadSet::start(&spec, &options(dir.path())).unwrap();
    set.mark();
    let workdir = set.workdir().to_path_buf();
    let start = Instant::now();
    let mut largest = 0;
    let mut files = 0;
    while start.elapsed() < Duration::from_secs(2) {
        let entries: Vec<_> = std::fs::read_dir(&workdir).unwrap().flatten().collect();
        files = files.max(entries.len());
        for e in entries {
            largest = largest.max(e.metadata().map(|m| m.len()).unwrap_or(0));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let report = set.stop("complete");
    assert_eq!(files, 2, "one file per writer");
    assert!(largest <= 4 << 20, "a file grew to {largest} bytes");
    let g = only(&report);
    assert!(g.bytes >= 8 << 20, "wrote only {} bytes", g.bytes);
    assert!(g.ops >= 8, "only {} fsyncs", g.ops);
    assert_eq!(g.unit, "fsync");
    assert!(!workdir.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn io_on_a_ram_filesystem_says_it_never_reached_a_disk() {
    let _g = serial();
    let Ok(dir) = tempfile::tempdir_in("/dev/shm") else {
        return testkit::live::skip("no /dev/shm here: the tmpfs note is not tested");
    };
    let (report, _) = run("io:2M", Duration::ZERO, 0.5, dir.path());
    let g = only(&report);
    assert!(
        g.notes.iter().any(|n| n.contains("RAM filesystem")),
        "{g:?}"
    );
}

#[test]
fn memory_copies_and_faults() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let (report, _) = run("memory:64M", Duration::from_millis(500), 1.5, dir.path());
    let g = only(&report);
    assert!(g.bytes >= 512 << 20, "copied only {} bytes", g.bytes);
    assert!(g.ops >= 10_000, "only {} page faults", g.ops);
    assert_eq!(g.unit, "fault");
    assert!(g.description.contains("64M buffer"), "{}", g.description);
}

#[test]
fn fork_storm_forks_and_leaves_no_child() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let (report, _) = run("fork:2", Duration::ZERO, 1.5, dir.path());
    let g = only(&report);
    assert!(g.ops >= 100, "only {} forks", g.ops);
    assert!(g.notes.is_empty(), "{:?}", g.notes);
    assert!(g.cpu_share_percent > 5.0, "{g:?}");
    assert_eq!(children_of_this_process(), Vec::<u32>::new());
}

#[test]
fn generators_run_together_each_on_its_own_cpus() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let cpu = last_cpu();
    let (report, _) = run(
        &format!("cpu:30%@{cpu},timer-storm:10,messaging:1x2"),
        Duration::ZERO,
        1.5,
        dir.path(),
    );
    assert_eq!(report.generators.len(), 3);
    assert_eq!(report.generators[0].cpus, CpuSet::from_cpus([cpu]));
    let online = sys::cpu::online(&Root::host()).unwrap();
    assert_eq!(report.generators[1].cpus, online);
    assert!(report.generators.iter().all(|g| g.ops > 0), "{report:?}");
    assert_eq!(report.cpu_busy.len(), online.len());
}
