//! Boards and a server, end to end, with no test double: a real `rtlab serve` (SQLite, and
//! PostgreSQL when the test server is there) and real `rtlab push` processes. Many boards push
//! the same real imports at once and each run is stored once, under the id it has on the
//! board; a board whose server is gone queues its run (`import --push` still succeeds) and
//! sends it when the server is back; a file that is not a result is refused with exit 2; a
//! revoked token keeps the runs queued.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use common::rtlab;
use common::server::{Server, add_token, free_port};

const IMPORTS: [&str; 5] = [
    "analisi_imx8mp_baseline.json",
    "machinekit792_rpi2_3.18.9-rt5.txt",
    "local_cyclictest_2t_H100.json",
    "kdoc_timerlat_hist_5cpu_deadline.txt",
    "local_oslat_2cpu.txt",
];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/imports")
        .join(name)
}

/// The ids a server stores, read with `rtlab runs` straight from its database.
fn stored(db: &str) -> BTreeSet<String> {
    ids_in(db).into_iter().collect()
}

/// The ids a store holds, newest first.
fn ids_in(db: impl AsRef<std::ffi::OsStr>) -> Vec<String> {
    common::stored_runs(db)
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

fn boards_and_server(db: &str) {
    let dir = tempfile::tempdir().unwrap();
    let board = dir.path().join("board.db");
    for file in IMPORTS {
        let out = rtlab()
            .arg("import")
            .arg(fixture(file))
            .arg("--db")
            .arg(&board)
            .output()
            .unwrap();
        assert!(out.status.success());
    }
    let ids = ids_in(&board);
    assert_eq!(ids.len(), IMPORTS.len());
    let token = add_token(db, "board");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let url = format!("http://{listen}");
    let server = Server::start(db, &listen, &[]);

    // Eight boards push the same runs at once, each from its own process and queue.
    let pushes: Vec<Child> = (0..8)
        .map(|i| {
            rtlab()
                .arg("push")
                .args(&ids)
                .args(["--to", &url, "--db"])
                .arg(&board)
                .env("RTLAB_TOKEN", &token)
                .env("RTLAB_PUSH_QUEUE", dir.path().join(format!("queue-{i}")))
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for p in pushes {
        let out = p.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let want: BTreeSet<String> = ids.iter().cloned().collect();
    assert_eq!(stored(db), want, "each run once, under the board's id");

    // The server goes away: the board's import still succeeds and its run is queued.
    drop(server);
    let queue = dir.path().join("queue");
    let push_env = |cmd: &mut std::process::Command| {
        cmd.env("RTLAB_TOKEN", &token)
            .env("RTLAB_PUSH_QUEUE", &queue);
    };
    let mut import = rtlab();
    push_env(&mut import);
    let out = import
        .arg("import")
        .arg(fixture("local_cyclictest_h200.json"))
        .arg("--db")
        .arg(&board)
        .args(["--push", &url, "--push-retry-for", "1s"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let late = ids_in(&board)
        .into_iter()
        .find(|id| !want.contains(id))
        .unwrap();
    let mut status = rtlab();
    push_env(&mut status);
    let out = status
        .args(["push", "--status", "--json"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&late),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // Back on the same port: the queue goes up with the next push.
    let server = Server::start(db, &listen, &[]);
    let mut drain = rtlab();
    push_env(&mut drain);
    let out = drain.args(["push", "--to", &url]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stored(db).contains(&late));
    assert_eq!(stored(db).len(), IMPORTS.len() + 1);

    // A file that is not a result: exit 2, naming it.
    let junk = dir.path().join("notes.txt");
    std::fs::write(&junk, "not a result").unwrap();
    let mut bad = rtlab();
    push_env(&mut bad);
    let out = bad
        .arg("push")
        .arg(&junk)
        .args(["--to", &url])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("notes.txt"));

    // A revoked token: nothing stored, the run stays queued, exit 1.
    assert!(
        rtlab()
            .args(["serve", "token", "revoke", "board", "--db", db])
            .status()
            .unwrap()
            .success()
    );
    let mut revoked = rtlab();
    push_env(&mut revoked);
    let out = revoked
        .arg("import")
        .arg(fixture("local_oslat_z_fifo_bias.txt"))
        .arg("--db")
        .arg(&board)
        .args(["--push", &url])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stored(db).len(), IMPORTS.len() + 1);
    let mut status = rtlab();
    push_env(&mut status);
    let out = status
        .args(["push", "--status", "--json"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("401") || text.contains("token"), "{text}");
    drop(server);
}

#[test]
fn boards_push_to_a_real_server_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    boards_and_server(dir.path().join("fleet.db").to_str().unwrap());
}

#[test]
fn boards_push_to_a_real_server_on_postgresql() {
    let Some(admin) = testkit::live::postgres_or_skip() else {
        return;
    };
    let name = format!("rtlab_push_{}", std::process::id());
    let psql = |sql: &str| {
        let out = std::process::Command::new("psql")
            .args([admin.as_str(), "-v", "ON_ERROR_STOP=1", "-Atc", sql])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    psql(&format!("CREATE DATABASE {name}"));
    let url = format!("{}/{name}", admin.rsplit_once('/').unwrap().0);
    boards_and_server(&url);
    psql(&format!("DROP DATABASE {name} WITH (FORCE)"));
}
