//! `rtlab exec` (issue 17): bad input is one line and exit 2; the program's exit status comes
//! back; and live, as root, the program really runs under what was asked — a SCHED_DEADLINE
//! busy loop held to its share of a CPU, SCHED_FIFO 10 on CPU 0 — and is warned about when it
//! did not lock its memory. Nothing is left at a real-time priority afterwards.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{is_root, live_skip, rtlab, serial, wait_for};

/// `rtlab exec` with the tuning's cpuset left out (another test may have tuned the machine).
fn exec() -> Command {
    let mut cmd = rtlab();
    cmd.args(["exec", "--no-cpuset"]);
    cmd
}

fn run(cmd: &mut Command) -> (Option<i32>, String, String) {
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (&["--priority", "0", "--", "true"], "--priority"),
        (&["-p", "100", "--", "true"], "--priority"),
        (&["--policy", "rr", "-p", "99", "--", "true"], "watchdog"),
        (&["--policy", "fifo", "--", "true"], "needs -p/--priority"),
        (&["--policy", "other", "-p", "5", "--", "true"], "has none"),
        (
            &["--policy", "deadline", "--", "true"],
            "--deadline RUNTIME",
        ),
        (
            &["--policy", "fifo", "--deadline", "3ms/10ms", "--", "true"],
            "not for --policy fifo",
        ),
        (
            &["--deadline", "20ms/10ms/10ms", "--", "true"],
            "runtime 20ms exceeds the deadline 10ms",
        ),
        (
            &["--deadline", "3ms/20ms/10ms", "--", "true"],
            "deadline 20ms exceeds the period 10ms",
        ),
        (
            &["--deadline", "3ms", "--", "true"],
            "RUNTIME/DEADLINE/PERIOD",
        ),
        (&["--cpus", "4000", "--", "true"], "CPU 4000 is not online"),
        (&["--rlimit-memlock", "lots", "--", "true"], "lots"),
        (&["-p", "10"], "COMMAND"),
        (&["--fifo", "10", "--rr", "10", "--", "true"], "--rr"),
        (
            &["--policy", "fifo", "--fifo", "10", "--", "true"],
            "--fifo",
        ),
    ];
    for (args, says) in cases {
        let (code, _, stderr) = run(exec().args(*args));
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("rtlab: error:") && stderr.contains(says),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn the_programs_exit_status_comes_back() {
    let (code, _, _) = run(exec().args(["--", "sh", "-c", "exit 7"]));
    assert_eq!(code, Some(7));
    let (code, _, stderr) = run(exec().args(["--", "/nonexistent/rtlab-test-program"]));
    assert_eq!(code, Some(127), "{stderr}");
    let dir = tempfile::tempdir().unwrap();
    let not_executable = dir.path().join("data.txt");
    std::fs::write(&not_executable, "not a program\n").unwrap();
    let (code, _, stderr) = run(exec().arg("--").arg(&not_executable));
    assert_eq!(code, Some(126), "{stderr}");
}

#[test]
fn dry_run_starts_nothing_and_says_what_it_would_set() {
    let (code, stdout, stderr) = run(exec().args([
        "--dry-run",
        "--policy",
        "rr",
        "-p",
        "10",
        "--rlimit-memlock",
        "64M",
        "--",
        "sh",
        "-c",
        "exit 9",
    ]));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("SCHED_RR priority 10"), "{stdout}");
    assert!(stdout.contains(&(64u64 << 20).to_string()), "{stdout}");
}

/// The pid of the only child of `parent`, once it has one.
fn only_child(parent: u32) -> u32 {
    let started = Instant::now();
    loop {
        let children =
            std::fs::read_to_string(format!("/proc/{parent}/task/{parent}/children")).unwrap();
        if let Some(pid) = children.split_whitespace().next() {
            return pid.parse().unwrap();
        }
        assert!(started.elapsed() < Duration::from_secs(5), "no child");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `stat` fields after the command name, from field 3 (state) on.
fn stat_fields(pid: u32) -> Vec<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = stat.rsplit_once(") ").unwrap().1;
    rest.split_whitespace().map(str::to_string).collect()
}

/// utime + stime of `pid`, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let f = stat_fields(pid);
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

fn stop(rtlab: &mut Child, child: u32) -> Option<i32> {
    // SAFETY: kill with our own child's pid and SIGTERM.
    unsafe { libc::kill(rtlab.id() as i32, libc::SIGTERM) };
    let status = wait_for(rtlab, Duration::from_secs(10));
    assert!(
        !Path::new(&format!("/proc/{child}")).exists(),
        "the program {child} outlived rtlab exec"
    );
    status.code()
}

#[test]
fn a_deadline_busy_loop_is_held_to_its_share() {
    if !is_root() {
        live_skip("SCHED_DEADLINE needs root");
        return;
    }
    let _one = serial();
    let mut rtlab = exec()
        .args(["--deadline", "3ms/10ms/10ms", "-q", "--"])
        .args(["sh", "-c", "while :; do :; done"])
        .spawn()
        .unwrap();
    let child = only_child(rtlab.id());
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(stat_fields(child)[38], "6", "not SCHED_DEADLINE");
    let ticks_per_s = 100.0; // USER_HZ, which /proc/PID/stat counts in on Linux
    let before = cpu_ticks(child);
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(1));
    let used = (cpu_ticks(child) - before) as f64 / ticks_per_s;
    let share = used / t0.elapsed().as_secs_f64();
    let code = stop(&mut rtlab, child);
    assert!(
        (0.20..=0.40).contains(&share),
        "a 3ms/10ms reservation used {:.0}% of a CPU",
        share * 100.0
    );
    assert_eq!(
        code,
        Some(128 + libc::SIGTERM),
        "the forwarded SIGTERM ended it"
    );
}

#[test]
fn fifo_10_on_cpu_0_is_what_the_program_gets() {
    if !is_root() {
        live_skip("SCHED_FIFO needs root");
        return;
    }
    let _one = serial();
    let script = "cat /proc/$$/stat; grep Cpus_allowed_list /proc/$$/status";
    let (code, stdout, stderr) =
        run(exec().args(["--priority", "10", "--cpus", "0", "--", "sh", "-c", script]));
    assert_eq!(code, Some(0), "{stderr}");
    let mut lines = stdout.lines();
    let stat = lines.next().unwrap();
    let f: Vec<&str> = stat.rsplit_once(") ").unwrap().1.split(' ').collect();
    assert_eq!(
        (f[36], f[37], f[38]),
        ("0", "10", "1"),
        "CPU, priority, policy: {stat}"
    );
    let allowed = lines.next().unwrap();
    assert_eq!(allowed.split_whitespace().last(), Some("0"), "{allowed}");
}

/// Compiles `source` (C) into `dir` with the system C compiler.
fn compile(dir: &Path, name: &str, source: &str) -> std::path::PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let bin = dir.join(name);
    let out = Command::new("cc").arg("-o").arg(&bin).arg(&src).output();
    match out {
        Ok(out) if out.status.success() => bin,
        Ok(out) => panic!("cc failed: {}", String::from_utf8_lossy(&out.stderr)),
        Err(e) => panic!("cc (needed by cargo to link too) did not run: {e}"),
    }
}

#[test]
fn a_program_that_does_not_lock_its_memory_is_named_and_one_that_does_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let locks = compile(
        dir.path(),
        "locks",
        "#include <sys/mman.h>\n#include <unistd.h>\n\
         int main(void) { if (mlockall(MCL_CURRENT | MCL_FUTURE)) return 3; usleep(600000); return 0; }\n",
    );
    let check = ["--check-after", "200ms", "--"];
    let (code, _, stderr) = run(exec().args(check).args(["sh", "-c", "sleep 0.6"]));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("sh has not locked its memory"), "{stderr}");
    if !is_root() {
        live_skip("mlockall of a whole program may exceed a user's RLIMIT_MEMLOCK");
        return;
    }
    let (code, _, stderr) = run(exec().args(check).arg(&locks));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("not locked"), "{stderr}");
}

/// A kernel tree with the RT cpuset `tune apply` makes (CPUs `rt_cpus`), and its journal.
fn tuned_tree(dir: &Path, rt_cpus: &str) -> std::path::PathBuf {
    let write = |path: &str, text: &str| {
        let full = dir.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, text).unwrap();
    };
    write("/proc/version", "Linux version 6.1.0\n");
    write("/sys/devices/system/cpu/online", "0-1\n");
    write("/sys/fs/cgroup/rtlab-rt/cgroup.procs", "");
    write(
        "/sys/fs/cgroup/rtlab-rt/cpuset.cpus.effective",
        &format!("{rt_cpus}\n"),
    );
    let journal = dir.join("tune-journal.jsonl");
    std::fs::write(
        &journal,
        "{\"step\":\"mkdir\",\"path\":\"/sys/fs/cgroup/rtlab-rt\"}\n",
    )
    .unwrap();
    journal
}

#[test]
fn the_program_joins_the_rt_cpuset_tune_apply_made() {
    let dir = tempfile::tempdir().unwrap();
    let journal = tuned_tree(dir.path(), "1");
    let tree = |cmd: &mut Command| {
        cmd.arg("--root")
            .arg(dir.path())
            .args(["exec", "--journal"])
            .arg(&journal);
    };
    let mut dry = rtlab();
    tree(&mut dry);
    let (code, stdout, stderr) = run(dry.args(["--dry-run", "--", "true"]));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("cpuset:         /sys/fs/cgroup/rtlab-rt (CPU 1)"),
        "{stdout}"
    );

    let mut outside = rtlab();
    tree(&mut outside);
    let (code, _, stderr) = run(outside.args(["--cpus", "0", "--", "true"]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("outside the RT cpuset"), "{stderr}");

    // In a fixture tree, joining is a write of "0" (the writer itself) to its cgroup.procs.
    let mut joins = rtlab();
    tree(&mut joins);
    let (code, _, stderr) = run(joins.args(["--", "true"]));
    assert_eq!(code, Some(0), "{stderr}");
    let procs = dir.path().join("sys/fs/cgroup/rtlab-rt/cgroup.procs");
    assert_eq!(std::fs::read_to_string(procs).unwrap(), "0");

    let mut kept_out = rtlab();
    tree(&mut kept_out);
    let (_, stdout, _) = run(kept_out.args(["--no-cpuset", "--dry-run", "--", "true"]));
    assert!(stdout.contains("cpuset:         none"), "{stdout}");
}

#[test]
fn ctrl_c_at_a_terminal_reaches_the_program_once() {
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::process::CommandExt;

    let dir = tempfile::tempdir().unwrap();
    let counter = compile(
        dir.path(),
        "count-int",
        "#include <signal.h>\n#include <stdio.h>\n#include <unistd.h>\n\
         static volatile sig_atomic_t n;\nstatic void on_int(int s) { (void)s; n++; }\n\
         int main(void) { signal(SIGINT, on_int); for (int i = 0; i < 30; i++) usleep(50000);\n\
         printf(\"INT %d\\n\", (int)n); return 0; }\n",
    );
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two descriptors into the given ints; the other arguments may be
    // null.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty");
    // SAFETY: both descriptors were just opened and are owned here alone.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let mut cmd = exec();
    cmd.args(["--check-after", "0", "--"])
        .arg(&counter)
        .stdin(slave.try_clone().unwrap())
        .stdout(slave.try_clone().unwrap())
        .stderr(slave.try_clone().unwrap());
    // SAFETY: setsid and ioctl(TIOCSCTTY) are async-signal-safe; rtlab gets the terminal as
    // its controlling terminal, and its process group is the foreground one.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    // The command holds copies of the terminal's slave side: every copy must close for the
    // master to read the end of the output.
    drop(cmd);
    drop(slave);
    std::thread::sleep(Duration::from_millis(600));
    let mut terminal = std::fs::File::from(master);
    std::io::Write::write_all(&mut terminal, b"\x03").unwrap();
    let status = wait_for(&mut child, Duration::from_secs(10));
    let mut out = Vec::new();
    // The terminal reads EIO once every writer is gone: the end of the output.
    let _ = terminal.read_to_end(&mut out);
    let out = String::from_utf8_lossy(&out);
    assert_eq!(status.code(), Some(0), "{out}");
    assert!(
        out.contains("INT 1"),
        "the terminal's SIGINT reached the program other than once: {out}"
    );
}
