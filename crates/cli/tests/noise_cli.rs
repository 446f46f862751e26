//! `rtlab noise` end to end. Live, as root: a SCHED_FIFO thread that takes the measured CPU
//! for a fixed time at a fixed rate must be measured (count and total within 20 %, the longest
//! no shorter than 80 % of the injected one and shorter than two) and named; a timer storm on
//! the measured CPU must be attributed to the timer interrupt; a CPU left alone shows the machine's own background, with steal time where a hypervisor is. Not
//! live: bad values are refused in one line with exit 2, and a result reads back from the
//! store as a noise run.

mod common;

use std::time::Duration;

use common::{is_root, rtlab, serial, wait_for};

/// A SCHED_FIFO 50 thread named `rtlab-inject`, pinned to `cpu`: after `after`, every
/// `every` it busy-loops for `hold`, `bursts` times. Returns each burst's actual length, ns.
fn injector(
    cpu: u32,
    after: Duration,
    every: Duration,
    hold: Duration,
    bursts: u32,
) -> std::thread::JoinHandle<Vec<u64>> {
    std::thread::spawn(move || {
        let name = std::ffi::CString::new("rtlab-inject").unwrap();
        // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
        unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) };
        sys::sched::pin_current_thread(&model::CpuSet::from_cpus([cpu])).unwrap();
        sys::sched::set_current_thread_policy(&sys::sched::SchedParams::new(
            model::measure::Policy::Fifo,
            50,
        ))
        .unwrap();
        let now = sys::clock::monotonic_ns;
        let mut next = now() + after.as_nanos() as u64;
        let mut lengths = Vec::new();
        for _ in 0..bursts {
            sys::clock::sleep_until_monotonic(next);
            let start = now();
            while now() - start < hold.as_nanos() as u64 {}
            lengths.push(now() - start);
            next += every.as_nanos() as u64;
        }
        lengths
    })
}

fn noise_json(args: &[&str], dir: &std::path::Path) -> (Option<i32>, serde_json::Value) {
    let out = dir.join("noise.json");
    let mut child = rtlab()
        .arg("noise")
        .args(args)
        .args(["-q", "--no-store", "--output"])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let status = wait_for(&mut child, Duration::from_secs(60));
    let doc = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    (status.code(), doc)
}

fn cpu(doc: &serde_json::Value, n: u64) -> &serde_json::Value {
    doc["noise"]["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cpu"] == n)
        .unwrap()
}

fn within_20pct(got: u64, want: u64) -> bool {
    got * 10 >= want * 8 && got * 10 <= want * 12
}

fn no_instance_left() {
    let left = std::fs::read_dir("/sys/kernel/tracing/instances")
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("rtlab-"))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(left, 0, "a tracefs instance was left behind");
}

/// One 4 s run on CPU 1 with 100 bursts of 400 us every 20 ms injected from 1 s in: the
/// injector's figures as measured, judged; `Err` says what was off.
fn injected_run(dir: &std::path::Path) -> Result<(), String> {
    let (doc, lengths) = measure_with_injector(dir);
    let c = cpu(&doc, 1);
    let (count, total, longest) = (
        lengths.len() as u64,
        lengths.iter().sum::<u64>(),
        *lengths.iter().max().unwrap(),
    );
    eprintln!("bursts: {count}, {total} ns, longest {longest} ns\nCPU 1: {c}");
    let culprit = injector_culprit(c)?;
    let got = |k: &str| culprit[k].as_u64().unwrap();
    // Other threads' time on CPU 1: other work on a busy machine. Even below the detector's
    // FIFO 1, the kernel lets starved ordinary tasks run now and then (RT throttling, or the
    // fair server since 6.12), sometimes right after a burst, in the same interruption.
    let others_ns: u64 = c["culprits"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| {
            k["source"] == "thread" && !k["name"].as_str().unwrap().starts_with("rtlab-inject")
        })
        .map(|k| k["total_ns"].as_u64().unwrap())
        .sum();
    let quiet = others_ns * 100 < c["runtime_ns"].as_u64().unwrap();
    let checks = [
        (within_20pct(got("count"), count), "count"),
        (within_20pct(got("total_ns"), total), "total"),
        // The longest is bounded below by the injector's own longest. Above, one hypervisor
        // stall inside the thread's switch-in/switch-out window is charged to the thread (the
        // kernel cannot see it) but not to the injector's clock, so the bound is one burst:
        // twice the longest would mean two bursts were merged into one interruption. Other
        // work running in the same interruption lengthens it too, so the bound holds where
        // the CPU was otherwise quiet (under 1 % of the run).
        (
            got("max_ns") * 10 >= longest * 8 && (!quiet || got("max_ns") < longest * 2),
            "longest",
        ),
        // The CPU's own figures hold the bursts.
        (
            c["noise_ns"].as_u64().unwrap() * 10 >= total * 8,
            "CPU noise",
        ),
        (
            c["interruptions"].as_u64().unwrap() * 10 >= count * 8,
            "CPU interruptions",
        ),
        (
            c["counts"]["thread"].as_u64().unwrap() * 10 >= count * 8,
            "thread column",
        ),
        (
            c["max_single_ns"].as_u64().unwrap() * 10 >= longest * 8,
            "max single",
        ),
    ];
    match checks.iter().find(|(ok, _)| !ok) {
        Some((_, what)) => Err(format!(
            "{what} off: {culprit} against {count} bursts, {total} ns, longest {longest} ns"
        )),
        None => Ok(()),
    }
}

/// Measures CPU 1 for 4 s at FIFO 1 while the injector runs; the result and each burst's
/// length.
/// What does not depend on the machine's own noise is asserted outright: the exit status,
/// the schema, the engine, trace attribution, no tracefs instance left, and the raw count.
fn measure_with_injector(dir: &std::path::Path) -> (serde_json::Value, Vec<u64>) {
    let inject = injector(
        1,
        Duration::from_secs(1),
        Duration::from_millis(20),
        Duration::from_micros(400),
        100,
    );
    // The detector at FIFO 1: above every ordinary task, so other work on a busy machine
    // cannot take CPU 1 from it while the bursts land (at the default policy it shares the CPU
    // with that work, measures it as noise, and misses the bursts that come while it waits),
    // and below the injector's 50, which is the noise planted.
    let (code, doc) = noise_json(
        &[
            "--cpus",
            "1",
            "--duration",
            "4s",
            "--engine",
            "user",
            "--policy",
            "fifo",
            "--priority",
            "1",
        ],
        dir,
    );
    let lengths = inject.join().unwrap();
    assert_eq!(code, Some(0), "{}", doc["warnings"]);
    assert_eq!(doc["schema"], "rtlab.noise/1");
    let noise = &doc["noise"];
    assert_eq!(noise["engine"], "user");
    assert_eq!(
        noise["attribution"], "trace",
        "{}",
        noise["attribution_note"]
    );
    no_instance_left();
    let iterations = cpu(&doc, 1)["iterations"].as_u64().unwrap();
    let cpu_result = doc["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["cpu"] == 1)
        .unwrap();
    assert_eq!(cpu_result["raw"]["count"].as_u64().unwrap(), iterations);
    (doc, lengths)
}

/// The culprit that names the injector thread, with its real-time priority; `Err` when
/// there is none.
fn injector_culprit(c: &serde_json::Value) -> Result<&serde_json::Value, String> {
    let culprit = c["culprits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| {
            k["source"] == "thread"
                && k["name"]
                    .as_str()
                    .unwrap()
                    .starts_with("rtlab-inject (pid ")
        })
        .ok_or_else(|| format!("the injector is not named: {}", c["culprits"]))?;
    if !culprit["name"]
        .as_str()
        .unwrap()
        .contains("real-time priority 50")
    {
        return Err(format!("not named with its priority: {culprit}"));
    }
    Ok(culprit)
}

#[test]
fn live_an_injected_fifo_thread_is_measured_and_named() {
    if !is_root() {
        return common::live_skip("not root: the live noise test needs tracefs and SCHED_FIFO");
    }
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    // The injector's own wake-up and sleep run on a virtual CPU the host may stall at any
    // moment (this VM's oslat sees 4 ms stalls): a stall there lengthens what the thread held
    // beyond what it measured. Three runs; one must match.
    let mut why = Vec::new();
    for _ in 0..3 {
        match injected_run(dir.path()) {
            Ok(()) => return,
            Err(e) => {
                eprintln!("{e}; again");
                why.push(e);
            }
        }
    }
    panic!("three runs off: {why:#?}");
}

#[test]
fn live_a_timer_storm_is_attributed_to_the_timer_interrupt() {
    if !is_root() {
        return common::live_skip("not root: the live noise test needs tracefs");
    }
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let mut storm = rtlab()
        .args([
            "load",
            "timer-storm:50",
            "--load-cpus",
            "1",
            "-D",
            "6s",
            "-q",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let (code, doc) = noise_json(
        &["--cpus", "1", "--duration", "3s", "--engine", "user"],
        dir.path(),
    );
    let _ = wait_for(&mut storm, Duration::from_secs(30));
    assert_eq!(code, Some(0), "{}", doc["warnings"]);
    let c = cpu(&doc, 1);
    let culprits = c["culprits"].as_array().unwrap();
    // The storm's expiries come through the timer interrupt: on x86 its own vector
    // (`local_timer`); elsewhere the architected timer's IRQ handler (`arch_timer`).
    let timer = culprits
        .iter()
        .find(|k| {
            k["source"] == "irq"
                && ["local_timer", "arch_timer", "timer"]
                    .iter()
                    .any(|t| k["name"].as_str().unwrap().contains(t))
        })
        .unwrap_or_else(|| panic!("no timer interrupt among {culprits:?}"));
    // 50 sleepers of 0.5 ms on average: thousands of expiries a second.
    assert!(timer["count"].as_u64().unwrap() > 1_000, "{timer}");
    assert!(c["counts"]["irq"].as_u64().unwrap() > 1_000, "{c}");
    assert!(
        culprits
            .iter()
            .any(|k| k["source"] == "thread"
                && k["name"].as_str().unwrap().starts_with("rtlab-timer")),
        "the storm's threads are not named: {culprits:?}"
    );
    no_instance_left();
}

#[test]
fn live_a_cpu_left_alone_shows_the_machine_s_background() {
    if !is_root() {
        return common::live_skip("not root: the live noise test needs tracefs");
    }
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let (code, doc) = noise_json(
        &["--cpus", "1", "--duration", "2s", "--engine", "user"],
        dir.path(),
    );
    assert_eq!(code, Some(0), "{}", doc["warnings"]);
    let c = cpu(&doc, 1);
    // The detector polled the whole time: runtime is the duration, within 1 %.
    let runtime = c["runtime_ns"].as_u64().unwrap();
    assert!((1_980_000_000..=2_020_000_000).contains(&runtime), "{c}");
    assert!(c["iterations"].as_u64().unwrap() > 1_000_000, "{c}");
    // Steal time is read wherever /proc/stat has it; every interruption got a cause or is
    // counted unexplained, never lost.
    assert!(c["steal_ns"].is_u64(), "{c}");
    let counts = &c["counts"];
    let attributed: u64 = ["hw", "nmi", "irq", "softirq", "thread"]
        .iter()
        .map(|k| counts[k].as_u64().unwrap())
        .sum();
    let unexplained = c["unexplained"].as_u64().unwrap_or(0);
    assert_eq!(
        attributed + unexplained,
        c["interruptions"].as_u64().unwrap(),
        "{c}"
    );
    if !doc["noise"]["hypervisor"].is_null() && counts["hw"].as_u64().unwrap() > 0 {
        assert!(
            doc["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w["code"] == "noise-hypervisor"),
            "{}",
            doc["warnings"]
        );
    }
    no_instance_left();
}

#[test]
fn bad_values_are_refused_in_one_line() {
    for (args, want) in [
        (
            vec!["--threshold", "10ns"],
            "--threshold 10ns is out of range",
        ),
        (vec!["--runtime", "2s"], "at most --period (1s)"),
        (
            vec!["--policy", "deadline"],
            "(it takes fifo, rr, other, batch, idle)",
        ),
        (
            vec!["--policy", "fifo"],
            "--policy fifo needs -p/--priority PRIO",
        ),
        (vec!["-p", "99"], "--allow-prio-99"),
        (vec!["--threshold", "1parsec"], "--threshold"),
        (vec!["--cpus", "4096"], "--cpus"),
    ] {
        let out = rtlab()
            .arg("noise")
            .args(&args)
            .args(["--no-store", "-D", "1s"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(err.trim().lines().count() <= 2, "{args:?}: {err}");
    }
}

#[test]
fn live_a_noise_run_is_stored_and_shown_as_one() {
    if !is_root() {
        return common::live_skip("not root: the detector's memory locking needs root");
    }
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.db");
    let out = rtlab()
        .env("RTLAB_DB", &db)
        .args(["noise", "--cpus", "1", "--duration", "1s", "--no-attribute"])
        .args(["--engine", "user"])
        .args(["--format", "oslat"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{err}");
    let id = err
        .split("saved as noise run ")
        .nth(1)
        .and_then(|r| r.split(';').next())
        .unwrap_or_else(|| panic!("no run id: {err}"))
        .to_string();
    let oslat = String::from_utf8(out.stdout).unwrap();
    assert!(oslat.contains("    032 (us):"), "{oslat}");
    // oslat's layout reads back with rtlab's own oslat importer.
    let file = dir.path().join("oslat.txt");
    std::fs::write(&file, &oslat).unwrap();
    let imported = rtlab()
        .env("RTLAB_DB", &db)
        .args(["import"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        imported.status.success(),
        "{}",
        String::from_utf8_lossy(&imported.stderr)
    );
    let shown = rtlab()
        .env("RTLAB_DB", &db)
        .args(["show", &id, "--format", "json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(
        doc["schema"],
        "rtlab.noise/1",
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    assert_eq!(doc["noise"]["attribution"], "none");
    let table = rtlab()
        .env("RTLAB_DB", &db)
        .args(["show", &id])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.contains("%Avail") && table.contains("MaxSingle"),
        "{table}"
    );
    let runs = rtlab()
        .env("RTLAB_DB", &db)
        .args(["runs"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&runs.stdout);
    assert_eq!(
        text.lines().filter(|l| l.contains("noise")).count(),
        2,
        "{text}"
    );
}

/// A kernel tree whose tracefs has the osnoise tracer, its options, and the kernel
/// documentation's 8-CPU trace as the buffer's content.
fn osnoise_tree(dir: &std::path::Path) -> std::path::PathBuf {
    let root = dir.join("root");
    let cpu = root.join("sys/devices/system/cpu");
    let tracing = root.join("sys/kernel/tracing");
    std::fs::create_dir_all(&cpu).unwrap();
    std::fs::create_dir_all(tracing.join("osnoise")).unwrap();
    std::fs::create_dir_all(root.join("proc")).unwrap();
    std::fs::write(cpu.join("possible"), "0-7\n").unwrap();
    std::fs::write(cpu.join("online"), "0-7\n").unwrap();
    std::fs::write(
        root.join("proc/cpuinfo"),
        "processor\t: 0\nflags\t\t: fpu tsc\n",
    )
    .unwrap();
    let trace = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/imports/kdoc_osnoise_tracer_trace_8cpu.txt"),
    )
    .unwrap();
    for (name, value) in [
        ("available_tracers", "osnoise hwlat nop"),
        ("current_tracer", "nop"),
        ("tracing_on", "1"),
        ("tracing_thresh", "0"),
        ("trace_marker", ""),
        ("trace", trace.as_str()),
        ("osnoise/period_us", "1000000"),
        ("osnoise/runtime_us", "1000000"),
        ("osnoise/cpus", "0-7"),
        ("osnoise/stop_tracing_us", "0"),
        ("osnoise/stop_tracing_total_us", "0"),
    ] {
        std::fs::write(tracing.join(name), value).unwrap();
    }
    root
}

#[test]
fn the_kernel_engine_reads_the_osnoise_tracer_and_restores_its_options() {
    let dir = tempfile::tempdir().unwrap();
    let root = osnoise_tree(dir.path());
    let tracing = root.join("sys/kernel/tracing");
    // As the kernel reads them back: a fixture file also keeps the NUL that ends the CPU list
    // written to osnoise/cpus (sys::osnoise), which the kernel's file does not print.
    let read = |n: &str| {
        std::fs::read_to_string(tracing.join(n))
            .unwrap()
            .trim_end_matches('\0')
            .to_string()
    };
    let before: Vec<String> = [
        "current_tracer",
        "tracing_thresh",
        "osnoise/cpus",
        "osnoise/runtime_us",
    ]
    .iter()
    .map(|n| read(n))
    .collect();
    let out = rtlab()
        .arg("--root")
        .arg(&root)
        .args([
            "noise",
            "--cpus",
            "0-7",
            "--duration",
            "1s",
            "--engine",
            "kernel",
        ])
        .args(["--no-store", "--format", "json", "-q"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["schema"], "rtlab.noise/1");
    let noise = &doc["noise"];
    assert_eq!(noise["engine"], "kernel");
    assert_eq!(noise["counter"], "osnoise-tracer");
    assert_eq!(noise["attribution"], "tracer");
    let c = cpu(&doc, 2);
    // The documentation's CPU 2: 1 s of runtime, 5675 us of noise, 202 us single, and its
    // counters HW 6, NMI 0, IRQ 1013, SIRQ 25, THREAD 21.
    assert_eq!(c["runtime_ns"], 1_000_000_000u64);
    assert_eq!(c["noise_ns"], 5_675_000u64);
    assert_eq!(c["max_single_ns"], 202_000u64);
    assert_eq!(c["counts"]["irq"], 1013);
    assert_eq!(c["counts"]["thread"], 21);
    let after: Vec<String> = [
        "current_tracer",
        "tracing_thresh",
        "osnoise/cpus",
        "osnoise/runtime_us",
    ]
    .iter()
    .map(|n| read(n))
    .collect();
    assert_eq!(after, before, "the tracer's options were not restored");
    // Without the tracer, --engine kernel is refused in one line.
    std::fs::write(tracing.join("available_tracers"), "nop").unwrap();
    let out = rtlab()
        .arg("--root")
        .arg(&root)
        .args([
            "noise",
            "--cpus",
            "0",
            "--duration",
            "1s",
            "--engine",
            "kernel",
            "--no-store",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no osnoise tracer"));
}
