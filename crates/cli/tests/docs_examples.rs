//! Docs that run: every rtlab command that README.md and the help texts show is run here, in a
//! directory staged with the files the examples name, unless running it would take minutes,
//! change the machine's tuning, or need CPUs, files or runs that only the author's machine has.
//! Those are named with the reason (and parsed by the unit test `flags::shown_examples`).
//!
//! An example passes when rtlab ran it to a verdict (exit 0 or 1); one the README shows being
//! refused must be refused (exit 2) with the error the README shows. Help examples run first,
//! in command order, then the README's, top to bottom, so files an example writes
//! (`-o run.json`, `audit capture ./robot-tree`) are there for the ones after it. The examples
//! that measure for seconds (a measurement, a load, an inspection, run as written) leave
//! nothing a later one reads: they run side by side, four at once, each with a store of its
//! own, while the others go on in order.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use testkit::examples::{Example, from_help, from_markdown};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The online CPUs of this machine, as a count (CPUs 0..n).
fn online_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Every command path (`tune apply`) with a page, from `rtlab man`.
fn command_paths(work: &Path) -> Vec<String> {
    let man = work.join("man-pages");
    let out = common::rtlab()
        .args(["man", "-o"])
        .arg(&man)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut paths: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|p| {
            let stem = Path::new(p)
                .file_stem()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            stem.trim_start_matches("rtlab")
                .trim_start_matches('-')
                .replace('-', " ")
        })
        .collect();
    paths.sort();
    paths
}

fn help_text(path: &str) -> String {
    let out = common::rtlab()
        .arg("help")
        .args(path.split_whitespace())
        .output()
        .unwrap();
    assert!(out.status.success(), "rtlab help {path}");
    String::from_utf8(out.stdout).unwrap()
}

/// A time value as the examples write it, in seconds.
fn seconds(text: &str) -> Option<f64> {
    let split = text.find(|c: char| !c.is_ascii_digit() && c != '.')?;
    let (n, unit) = text.split_at(split);
    let n: f64 = n.parse().ok()?;
    Some(match unit {
        "ms" => n / 1e3,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        "d" => n * 86400.0,
        _ => return None,
    })
}

fn value_of<'a>(words: &'a [String], flags: &[&str]) -> Option<&'a str> {
    words
        .iter()
        .position(|w| flags.contains(&w.as_str()))
        .and_then(|i| words.get(i + 1))
        .map(String::as_str)
}

/// The highest CPU number a CPU list names (`2-7` → 7, `0-1,3` → 3), ignoring `all`/`!`.
fn highest_cpu(list: &str) -> Option<usize> {
    list.trim_start_matches('!')
        .split([',', '-'])
        .filter_map(|n| n.parse().ok())
        .max()
}

/// How an example is run here.
enum How {
    /// As written.
    AsWritten,
    /// With the scripted clock (`--fake-clock`): a measurement of minutes or hours takes a
    /// second, with everything around it (options, load, store, output) as written.
    FakeClock,
    /// Not run (the unit test `flags::shown_examples` parses it); the reason.
    ParseOnly(String),
    /// `rtlab inspect PID ...` with PID, a process of the author's machine, replaced by this
    /// test's own process (a real one, which the example only reads).
    OnThisProcess,
}

/// How an example is run here.
fn how(ex: &Example, stage: &Path) -> How {
    let w = &ex.words;
    let command = w.get(1).map(String::as_str).unwrap_or("");
    let sub = w.get(2).map(String::as_str).unwrap_or("");
    if let Some(why) = not_here(ex, stage) {
        return How::ParseOnly(why);
    }
    if ex.shows_error() {
        return How::AsWritten;
    }
    if (command == "push" && !w.iter().any(|x| x == "--queue")) || w.iter().any(|x| x == "--push") {
        return How::ParseOnly(
            "uploads to an rtlab serve (push_cli.rs tests the client against a scripted responder)"
                .into(),
        );
    }
    if command == "tune" && matches!(sub, "apply" | "irqd" | "run" | "revert") {
        return How::ParseOnly(
            "changes the machine's tuning (tune_cli.rs runs these on a fixture tree and live)"
                .into(),
        );
    }
    if command == "inspect" {
        return How::OnThisProcess;
    }
    if command == "campaign" && !matches!(sub, "resume" | "status" | "report") {
        // The staged plan.toml (two short phases) with the scripted clock; resume, status
        // and report then act on the state directory it made in the test's directory.
        if value_of(w, &["--state"]).is_none() {
            return How::ParseOnly(
                "keeps its state in /var/lib/rtlab/campaigns/NAME, outside the test's directory"
                    .into(),
            );
        }
        return How::FakeClock;
    }
    if command == "monitor" && !matches!(sub, "history" | "incidents") {
        return How::ParseOnly(
            "watches until stopped (monitor_cli.rs runs it for seconds and stops it)".into(),
        );
    }
    if command == "serve" && sub != "token" {
        return How::ParseOnly("serves until stopped (serve_cli.rs starts and stops it)".into());
    }
    if command == "run" {
        return run_how(w);
    }
    if command == "measure" && !w.iter().any(|x| x == "--cycles") {
        let duration = value_of(w, &["--duration", "-D"])
            .and_then(seconds)
            .unwrap_or(60.0);
        if duration > 10.0 && w.iter().any(|x| x == "--trace") {
            return How::ParseOnly(format!(
                "a traced measurement of {duration} s (the scripted clock makes no kernel trace)"
            ));
        }
        if duration > 10.0 {
            return How::FakeClock;
        }
    }
    if matches!(command, "noise" | "hwlat") {
        let default = if command == "noise" { 10.0 } else { 60.0 };
        let duration = value_of(w, &["--duration", "-D"])
            .and_then(seconds)
            .unwrap_or(default);
        if duration > 10.0 {
            return How::ParseOnly(format!(
                "polls the CPUs for {duration} s (no scripted clock for a busy loop)"
            ));
        }
    }
    if command == "load" {
        match value_of(w, &["--duration", "-D"]).and_then(seconds) {
            Some(s) if s <= 10.0 => {}
            Some(s) => return How::ParseOnly(format!("loads the machine for {s} s")),
            None => return How::ParseOnly("loads the machine until Ctrl-C".into()),
        }
    }
    How::AsWritten
}

/// How a `rtlab run` example is run here.
fn run_how(w: &[String]) -> How {
    if w.iter().any(|x| x == "--tuned") {
        return How::ParseOnly("tunes the machine (run_tuned_cli.rs)".into());
    }
    // The noise phase polls the CPUs for real (no scripted clock for a busy loop).
    if let Some(noise) = value_of(w, &["--noise"]).and_then(seconds)
        && noise > 10.0
    {
        return How::ParseOnly(format!(
            "its noise phase polls the CPUs for {noise} s (run_cli.rs runs a 1 s one as root)"
        ));
    }
    let phase = value_of(w, &["--duration", "-D"])
        .and_then(seconds)
        .unwrap_or(20.0);
    if phase > 5.0 {
        return How::FakeClock;
    }
    How::AsWritten
}

/// Whether this kernel offers the timerlat tracer.
fn has_timerlat() -> bool {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .any(|t| {
            std::fs::read_to_string(format!("{t}/available_tracers"))
                .is_ok_and(|a| a.split_whitespace().any(|w| w == "timerlat"))
        })
}

/// Why an example cannot run on this machine or in the test's directory, if it cannot.
fn not_here(ex: &Example, stage: &Path) -> Option<String> {
    let w = &ex.words;
    let command = w.get(1).map(String::as_str).unwrap_or("");
    let sub = w.get(2).map(String::as_str).unwrap_or("");
    for (i, word) in w.iter().enumerate() {
        let flag = i.checked_sub(1).map(|p| w[p].as_str()).unwrap_or("");
        let cpus = match flag {
            "--cpus" | "-a" | "--rt-cpus" | "--load-cpus" | "--housekeeping" => Some(word.as_str()),
            _ => word.split_once('@').map(|(_, c)| c.trim_end_matches('\'')),
        };
        if let Some(max) = cpus.and_then(highest_cpu)
            && max >= online_cpus()
            && !ex.shows_error()
        {
            return Some(format!(
                "names CPU {max}; this machine has {}",
                online_cpus()
            ));
        }
        let output =
            matches!(flag, "-o" | "--output" | "--svg") || (command == "audit" && sub == "capture");
        let path_like = word.contains('/')
            || word.ends_with(".json")
            || word.ends_with(".txt")
            || word.ends_with(".log");
        if output && Path::new(word).is_absolute() {
            return Some(format!("writes {word}, outside the test's directory"));
        }
        if flag == "--engine" && word == "timerlat" && !has_timerlat() {
            return Some("needs the kernel's timerlat tracer, which this kernel lacks".into());
        }
        if path_like && !output && word.starts_with("/sys/kernel/tracing") {
            return Some("reads this machine's live trace buffer".into());
        }
        if path_like && !output && !word.starts_with("cmd:") && !stage.join(word).exists() {
            return Some(format!("needs the author's file {word}"));
        }
        if i >= 2
            && matches!(
                command,
                "compare" | "show" | "export" | "report" | "label" | "rm"
            )
            && word.len() >= 4
            && word.bytes().all(|b| b.is_ascii_hexdigit())
        {
            return Some(format!("names the author's run {word}"));
        }
    }
    None
}

/// An example started in `stage`, not yet judged.
struct Started {
    ex: Example,
    child: std::process::Child,
    /// Where its standard error goes (a file: a pipe nobody reads could fill and stall it).
    stderr: PathBuf,
    started: std::time::Instant,
}

/// Starts one example in `stage` with the store `db`.
fn start(ex: &Example, fake_clock: bool, stage: &Path, db: &Path, stderr: PathBuf) -> Started {
    let mut cmd = common::rtlab();
    cmd.args(&ex.words[1..]);
    if fake_clock {
        cmd.args(["--fake-clock", "5us,9us,40us"]);
    }
    cmd.current_dir(stage)
        .env("RTLAB_DB", db)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap());
    Started {
        ex: ex.clone(),
        child: cmd.spawn().unwrap(),
        stderr,
        started: std::time::Instant::now(),
    }
}

/// Waits for a started example and judges it; returns a failure line, if it failed.
fn finish(mut run: Started) -> Option<String> {
    let status = common::wait_for(&mut run.child, Duration::from_secs(90));
    let ex = &run.ex;
    eprintln!("{:6.1} s  {}", run.started.elapsed().as_secs_f64(), ex.text);
    let stderr = std::fs::read_to_string(&run.stderr).unwrap();
    let code = status.code();
    if ex.shows_error() {
        let shown = ex
            .shows
            .iter()
            .find(|l| l.starts_with("rtlab: error:"))
            .unwrap();
        // The value and what is wrong with it, up to the machine-specific detail.
        let head: String = shown.chars().take(40).collect();
        if code != Some(2) || !stderr.starts_with(&head) {
            return Some(format!(
                "{}: `{}` should be refused as shown ({shown}); exit {code:?}, stderr: {stderr}",
                ex.source, ex.text
            ));
        }
        return None;
    }
    if !matches!(code, Some(0 | 1)) {
        return Some(format!(
            "{}: `{}` exited {code:?}: {}",
            ex.source,
            ex.text,
            stderr.trim()
        ));
    }
    if stderr.contains("is now") {
        return Some(format!(
            "{}: `{}` uses a replaced spelling: {stderr}",
            ex.source, ex.text
        ));
    }
    None
}

/// Whether an example run as written measures for seconds on its own (a measurement, a load,
/// an inspection) and leaves nothing a later example reads: it then runs side by side with
/// the others, with a store of its own, so the staged traced run stays `last` for the
/// examples that read it. A traced measurement is read: `rtlab explain last` follows it.
fn measures_alone(ex: &Example) -> bool {
    let command = ex.words.get(1).map(String::as_str).unwrap_or("");
    !ex.shows_error()
        && !ex.words.iter().any(|w| w == "--trace")
        && matches!(
            command,
            "measure" | "noise" | "hwlat" | "pi" | "inspect" | "load" | "run"
        )
}

/// The examples measuring side by side (at most [`SIDE_BY_SIDE`]), and what they left.
struct SideBySide {
    running: Vec<Started>,
    dir: PathBuf,
    started: usize,
    failures: Vec<String>,
}

/// How many measuring examples run at once: they mostly sleep between wake-ups, so four on
/// two cores take about a quarter of the time, and each still ends in its verdict.
const SIDE_BY_SIDE: usize = 4;

impl SideBySide {
    fn new(dir: PathBuf) -> SideBySide {
        std::fs::create_dir_all(&dir).unwrap();
        SideBySide {
            running: Vec::new(),
            dir,
            started: 0,
            failures: Vec::new(),
        }
    }

    /// Starts `ex` with a store of its own, once fewer than [`SIDE_BY_SIDE`] run.
    fn start(&mut self, ex: &Example, fake_clock: bool, stage: &Path) {
        while self.running.len() >= SIDE_BY_SIDE {
            // The first to end frees its place (a slow one ahead holds none).
            match self
                .running
                .iter_mut()
                .position(|r| r.child.try_wait().unwrap().is_some())
            {
                Some(done) => {
                    let run = self.running.remove(done);
                    self.failures.extend(finish(run));
                }
                None => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        self.started += 1;
        let db = self.dir.join(format!("{}.db", self.started));
        let stderr = self.dir.join(format!("{}.stderr", self.started));
        self.running.push(start(ex, fake_clock, stage, &db, stderr));
    }

    /// Waits for all, and says what failed.
    fn finish(mut self) -> Vec<String> {
        for run in self.running.drain(..) {
            self.failures.extend(finish(run));
        }
        self.failures
    }
}

/// Runs one example in `stage` to its end; returns a failure line, if it failed.
fn run(ex: &Example, fake_clock: bool, stage: &Path, db: &Path) -> Option<String> {
    // A campaign's runs go to a store of their own, so `last` stays the staged traced run.
    let db = if ex.words.get(1).map(String::as_str) == Some("campaign") {
        db.with_file_name("campaign-runs.db")
    } else {
        db.to_path_buf()
    };
    let stderr = db.with_file_name("example.stderr");
    finish(start(ex, fake_clock, stage, &db, stderr))
}

/// The files and runs the examples name, made before any runs.
fn stage_files(stage: &Path, db: &Path) {
    let fixtures = repo().join("fixtures");
    for (from, to) in [
        ("traces/local/cyclictest_fifo99_hog_cpu1.txt", "trace.txt"),
        ("traces/local/trace_cmd_report_instance.txt", "r.txt"),
        ("traces/tracedat/cyclictest_2cpu_v7_zstd.dat", "trace.dat"),
        ("dmesg/lkp_soft_lockup_interleaved.log", "saved.log"),
        ("sched/robot.toml", "tasks.toml"),
    ] {
        std::fs::copy(fixtures.join(from), stage.join(to)).unwrap();
    }
    // The campaign the examples run: two short phases (with the scripted clock, seconds).
    std::fs::write(
        stage.join("plan.toml"),
        "name = \"van-vs-rt\"\ncpus = \"0\"\n\n[[phase]]\nname = \"Van-#1-idle\"\nduration = \"1s\"\n\n\
         [[phase]]\nname = \"Van-#2-timer\"\nduration = \"1s\"\nload = \"timer-storm:100\"\n",
    )
    .unwrap();
    // Two result files and two labelled runs to compare, and a traced run as `last`: made
    // with the scripted clock (no privileges, no time).
    for (file, label) in [("vanilla.json", "old-kernel"), ("rt.json", "new-kernel")] {
        let out = common::rtlab()
            .args([
                "measure",
                "--fake-clock",
                "5us,9us,40us",
                "--cycles",
                "500",
                "--label",
                label,
                "-o",
            ])
            .arg(stage.join(file))
            .env("RTLAB_DB", db)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = common::rtlab()
        .args([
            "measure", "--cycles", "500", "--cpus", "0", "--trace", "-q", "-o",
        ])
        .arg(stage.join("traced.json"))
        .env("RTLAB_DB", db)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_example_in_the_readme_and_the_help_runs() {
    if !common::is_root() {
        common::live_skip(
            "the examples measure with real-time threads and read root-only files; run as root",
        );
        return;
    }
    let _serial = common::serial();
    let work = tempfile::tempdir().unwrap();
    let stage = work.path().join("stage");
    std::fs::create_dir(&stage).unwrap();
    let db = work.path().join("examples.db");
    stage_files(&stage, &db);

    let mut examples = Vec::new();
    for path in command_paths(work.path()) {
        let name = format!("rtlab {path} --help").replace("  ", " ");
        examples.extend(from_help(&help_text(&path), &name));
    }
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    examples.extend(from_markdown(&readme, "README.md"));
    assert!(examples.len() > 60, "only {} examples", examples.len());

    let mut failures = Vec::new();
    let mut side_by_side = SideBySide::new(work.path().join("side-by-side"));
    let (mut ran, mut faked, mut parsed_only) = (0, 0, Vec::new());
    for ex in &examples {
        match how(ex, &stage) {
            How::ParseOnly(why) => parsed_only.push(format!("{}: `{}`: {why}", ex.source, ex.text)),
            How::AsWritten if measures_alone(ex) => {
                ran += 1;
                side_by_side.start(ex, false, &stage);
            }
            How::AsWritten => {
                ran += 1;
                failures.extend(run(ex, false, &stage, &db));
            }
            How::FakeClock => {
                faked += 1;
                failures.extend(run(ex, true, &stage, &db));
            }
            How::OnThisProcess => {
                ran += 1;
                let mut mine = ex.clone();
                mine.words[2] = std::process::id().to_string();
                side_by_side.start(&mine, false, &stage);
            }
        }
    }
    failures.extend(side_by_side.finish());
    eprintln!(
        "{ran} examples ran as written, {faked} with the scripted clock; {} parsed only:\n  {}",
        parsed_only.len(),
        parsed_only.join("\n  ")
    );
    assert!(
        failures.is_empty(),
        "examples that fail:\n{}",
        failures.join("\n")
    );
    assert!(
        (ran + faked) * 5 >= examples.len() * 3,
        "fewer than three fifths of the examples ran: {} of {}",
        ran + faked,
        examples.len()
    );
}
