//! `rtlab inspect PID` on real processes: C programs compiled here with `cc`, one with planted
//! flaws (FIFO 99, no mlockall, page faults in its loop, allowed on every CPU, a real-time
//! thread in a condition variable) and one without (FIFO 49, mlockall, pinned, a PI mutex),
//! each getting exactly its findings; and the refusals: an unknown PID, a thread id, a
//! process that exits during the window.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

/// The test programs' sources.
const FLAWED: &str = include_str!("inspect_programs/flawed.c");
const GOOD: &str = include_str!("inspect_programs/good.c");
const EXITS: &str = include_str!("inspect_programs/exits.c");

/// Compiles `source` as `name` in `dir`; `None` (skipped, or failed under CI) without `cc`.
fn compile(dir: &Path, name: &str, source: &str) -> Option<PathBuf> {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let exe = dir.join(name);
    match Command::new("cc")
        .args(["-O2", "-Wall", "-pthread", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
    {
        Ok(out) if out.status.success() => Some(exe),
        Ok(out) => panic!("cc {name}.c: {}", String::from_utf8_lossy(&out.stderr)),
        Err(e) => {
            common::live_skip(&format!("no C compiler (cc: {e})"));
            None
        }
    }
}

/// A started test program, killed and reaped when dropped.
struct Program(Child);

impl Program {
    /// Starts `exe` with `args` and waits for its `ready` line (its threads are running).
    fn start(exe: &Path, args: &[&str]) -> Program {
        let mut child = Command::new(exe)
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready", "{} did not start", exe.display());
        Program(child)
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    /// The thread ids of the program named `name`.
    fn tid(&self, name: &str) -> u32 {
        let dir = format!("/proc/{}/task", self.pid());
        std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .find(|t| {
                std::fs::read_to_string(format!("{dir}/{t}/comm")).is_ok_and(|c| c.trim() == name)
            })
            .unwrap_or_else(|| panic!("no thread {name}"))
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `rtlab inspect` with `args`; returns the exit code, the JSON document (when the
/// output is one) and standard error.
fn inspect(args: &[String]) -> (i32, Option<Value>, String) {
    let out = common::rtlab().arg("inspect").args(args).output().unwrap();
    let json = serde_json::from_slice(&out.stdout).ok();
    (
        out.status.code().unwrap_or(-1),
        json,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Each finding's status, by id.
fn statuses(doc: &Value) -> Vec<(String, String)> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["id"].as_str().unwrap().to_string(),
                f["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn thread<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no thread {name} in {doc}"))
}

fn online_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_program_with_planted_flaws_gets_exactly_its_findings() {
    if !common::is_root() {
        return common::live_skip("not root: the test program needs SCHED_FIFO");
    }
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = compile(dir.path(), "flawed", FLAWED) else {
        return;
    };
    let program = Program::start(&exe, &[]);
    let pid = program.pid().to_string();
    // A generous run-delay budget: this test is about the program, not the machine's load.
    let (code, doc, stderr) = inspect(&args(&[
        &pid,
        "--duration",
        "1s",
        "--format",
        "json",
        "--run-delay-budget",
        "10s",
    ]));
    let doc = doc.unwrap_or_else(|| panic!("no JSON; stderr: {stderr}"));
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(doc["schema"], "rtlab.inspect/1");
    let affinity = if online_cpus() > 1 { "fail" } else { "pass" };
    let mut got = statuses(&doc);
    // Whether the scheduler moved the loop in this second is the machine's choice.
    let migrations = got
        .iter()
        .position(|(id, _)| id == "inspect.migrations")
        .unwrap();
    let (_, moved) = got.remove(migrations);
    assert!(moved == "pass" || moved == "warn", "{moved}");
    let expected: Vec<(String, String)> = [
        ("inspect.realtime", "pass"),
        ("inspect.priority", "fail"),
        ("inspect.affinity", affinity),
        ("inspect.memory_lock", "fail"),
        ("inspect.page_faults", "fail"),
        ("inspect.futex_pi", "fail"),
        ("inspect.run_delay", "pass"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(got, expected, "{doc:#}");
    let lp = thread(&doc, "rt-loop");
    assert_eq!(lp["sched"], "FIFO 99");
    assert!(lp["minor_faults"].as_u64().unwrap() >= 100, "{lp}");
    let waiter = thread(&doc, "rt-waiter");
    let futex = &waiter["futex_waits"][0];
    assert_eq!(futex["op"], "FUTEX_WAIT_BITSET|FUTEX_PRIVATE_FLAG");
    assert_eq!(futex["priority_inheritance"], false);
    assert_eq!(doc["locked_kb"], 0);

    // The table says the same, with the fixes.
    let out = common::rtlab()
        .args(["inspect", &pid, "--duration", "200ms"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1));
    assert!(text.contains("FAIL  inspect.priority"), "{text}");
    assert!(
        text.contains(&format!("fix: chrt -f -p 49 {}", program.tid("rt-loop"))),
        "{text}"
    );

    // A thread's id is not a process's.
    let tid = program.tid("rt-waiter").to_string();
    let (code, _, stderr) = inspect(&args(&[&tid, "--duration", "100ms"]));
    assert_eq!(code, 2);
    assert_eq!(
        stderr.trim(),
        format!("rtlab: error: {tid} is a thread of process {pid}, not a process: inspect {pid}")
    );
}

#[test]
fn a_program_set_up_for_real_time_passes() {
    if !common::is_root() {
        return common::live_skip("not root: the test program needs SCHED_FIFO and mlockall");
    }
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = compile(dir.path(), "good", GOOD) else {
        return;
    };
    let cpu = (online_cpus() - 1).to_string();
    let program = Program::start(&exe, &[&cpu]);
    let pid = program.pid().to_string();
    let (code, doc, stderr) = inspect(&args(&[
        &pid,
        "--duration",
        "1s",
        "--format",
        "json",
        "--rt-cpus",
        &cpu,
        "--run-delay-budget",
        "10s",
    ]));
    let doc = doc.unwrap_or_else(|| panic!("no JSON; stderr: {stderr}"));
    assert_eq!(code, 0, "{doc:#}");
    // FIFO 49 is below the IRQ threads unless this machine runs some of them lower.
    let irq_lowest = doc["irq_threads"]["lowest"].as_u64().unwrap_or(0);
    let priority = if irq_lowest > 0 && irq_lowest < 49 {
        "warn"
    } else {
        "pass"
    };
    for (id, status) in statuses(&doc) {
        let want = if id == "inspect.priority" {
            priority
        } else {
            "pass"
        };
        assert_eq!(status, want, "{id}: {doc:#}");
    }
    let lp = thread(&doc, "rt-loop");
    assert_eq!(
        (lp["minor_faults"].as_u64(), lp["major_faults"].as_u64()),
        (Some(0), Some(0))
    );
    assert!(lp["voluntary_switches"].as_u64().unwrap() > 100, "{lp}");
    let locker = thread(&doc, "rt-locker");
    assert_eq!(
        locker["futex_waits"][0]["op"],
        "FUTEX_LOCK_PI|FUTEX_PRIVATE_FLAG"
    );
    assert_eq!(locker["futex_waits"][0]["priority_inheritance"], true);
    assert!(doc["locked_kb"].as_u64().unwrap() >= doc["rss_kb"].as_u64().unwrap());

    // With --trace the longest wait comes from the tracepoints: the loop wakes every 1 ms.
    if !Path::new("/sys/kernel/tracing/trace").exists() {
        return common::live_skip("tracefs is not mounted at /sys/kernel/tracing");
    }
    let (code, doc, stderr) = inspect(&args(&[
        &pid,
        "--duration",
        "500ms",
        "--format",
        "json",
        "--trace",
        "--rt-cpus",
        &cpu,
        "--run-delay-budget",
        "10s",
    ]));
    let doc = doc.unwrap_or_else(|| panic!("no JSON; stderr: {stderr}"));
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["run_delay_source"], "trace");
    let lp = thread(&doc, "rt-loop");
    assert!(lp["wakeups"].as_u64().unwrap() >= 100, "{lp}");
    assert!(lp["max_run_delay_ns"].as_u64().is_some(), "{lp}");
    // The instance is gone.
    let instances = std::fs::read_dir("/sys/kernel/tracing/instances").unwrap();
    let mine: Vec<_> = instances
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("rtlab-"))
        .collect();
    assert!(mine.is_empty(), "left behind: {mine:?}");
}

#[test]
fn a_process_that_exits_during_the_window_is_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = compile(dir.path(), "exits", EXITS) else {
        return;
    };
    // Not reaped until rtlab is done: the process is a zombie, which has exited all the same.
    let mut program = Program::start(&exe, &[]);
    let pid = program.pid().to_string();
    let (code, _, stderr) = inspect(&args(&[&pid, "--duration", "5s"]));
    assert_eq!(code, 2, "{stderr}");
    let line = stderr.trim();
    assert_eq!(line.lines().count(), 1, "{stderr}");
    assert!(
        line.starts_with(&format!("rtlab: error: process {pid} (exits) exited ")),
        "{line}"
    );
    assert!(
        line.ends_with(" ms into the inspection; nothing to judge"),
        "{line}"
    );
    let _ = program.0.wait();
}

#[test]
fn unknown_pids_and_bad_flags_are_exit_2() {
    // Above PID_MAX_LIMIT (4194304): no process has it.
    let (code, _, stderr) = inspect(&args(&["4194305", "--duration", "100ms"]));
    assert_eq!(code, 2);
    assert_eq!(
        stderr.trim(),
        "rtlab: error: no process 4194305: it does not exist (or is in another PID namespace); `ps -e` lists the processes"
    );
    let me = std::process::id().to_string();
    let (code, _, stderr) = inspect(&args(&[&me, "--duration", "2h"]));
    assert_eq!(code, 2);
    assert!(
        stderr.contains("--duration 2h: give 10ms to 1h"),
        "{stderr}"
    );
    let (code, _, stderr) = inspect(&args(&[&me, "--interval", "5s"]));
    assert_eq!(code, 2);
    assert!(stderr.contains("--interval 5s: give 1ms to 1s"), "{stderr}");
    let (code, _, _) = inspect(&args(&["0"]));
    assert_eq!(code, 2);
}

#[test]
fn inspects_this_test_process_without_changing_it() {
    // Not real-time, not locked: a verdict (exit 1) on any machine, read without root too.
    let me = std::process::id().to_string();
    let (code, doc, stderr) = inspect(&args(&[&me, "--duration", "100ms", "--format", "json"]));
    let doc = doc.unwrap_or_else(|| panic!("no JSON; stderr: {stderr}"));
    assert_eq!(code, 1, "{stderr}");
    let got = statuses(&doc);
    assert_eq!(got[0], ("inspect.realtime".to_string(), "fail".to_string()));
    assert_eq!(doc["pid"].as_u64(), Some(u64::from(std::process::id())));
}

#[test]
fn sigint_ends_the_window_early_and_judges_what_was_watched() {
    let me = std::process::id().to_string();
    let mut child = common::rtlab()
        .args(["inspect", &me, "--duration", "60s", "--format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    // SAFETY: kill has no memory-safety preconditions; the pid is our own child's.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let status = common::wait_for(&mut child, std::time::Duration::from_secs(20));
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
    assert_eq!(status.code(), Some(130));
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["interrupted"], true);
    assert!(doc["window_ns"].as_u64().unwrap() < 20_000_000_000, "{doc}");
    assert!(doc["samples"].as_u64().unwrap() >= 2);
}
