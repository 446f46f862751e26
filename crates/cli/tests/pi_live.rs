//! `rtlab pi check` (issue 17): bad input is one line and exit 2; live, as root, priority
//! inheritance holds every inversion while the plain-lock control catches them, and SIGINT
//! ends the check with 130 and no verdict.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::{is_root, live_skip, rtlab, serial, wait_for};

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (&["--groups", "0"], "--groups 0"),
        (&["--groups", "100000"], "--groups 100000"),
        (&["--duration", "1ms"], "--duration 1ms"),
        (&["--cpus", "4000"], "CPU 4000 is not online"),
        (&["--format", "html"], "html"),
    ];
    for (args, says) in cases {
        let out = rtlab()
            .args(["pi", "check"])
            .args(*args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

#[test]
fn pi_holds_and_the_control_catches_the_inversion() {
    if !is_root() {
        live_skip("pi check runs SCHED_FIFO threads: needs root");
        return;
    }
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pi.json");
    let out = rtlab()
        .args(["pi", "check", "--duration", "2s", "-o"])
        .arg(&file)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with("priority inheritance held"), "{stdout}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(doc["schema"], "rtlab.pi/1");
    assert_eq!(doc["verdict"], "held");
    let pi = &doc["pi"]["groups"][0];
    assert!(pi["inversions"].as_u64().unwrap() > 100, "{doc}");
    assert_eq!(pi["missed"], 0, "{doc}");
    let control = &doc["control"]["groups"][0];
    assert!(control["missed"].as_u64().unwrap() > 0, "{doc}");
    assert_eq!(control["missed"], control["inversions"], "{doc}");
}

#[test]
fn sigint_ends_the_check_without_a_verdict() {
    if !is_root() {
        live_skip("pi check runs SCHED_FIFO threads: needs root");
        return;
    }
    let _one = serial();
    let mut child = rtlab()
        .args(["pi", "check", "--duration", "60s"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    // SAFETY: kill with our own child's pid and SIGINT.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = wait_for(&mut child, Duration::from_secs(5));
    assert_eq!(status.code(), Some(130));
}
