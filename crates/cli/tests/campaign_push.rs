//! `rtlab campaign --push URL` against a real `rtlab serve`: every phase's run reaches the
//! server once, under the id, label and session it has in the campaign's own store, and a
//! resumed campaign sends nothing twice; with the server gone the campaign goes on, its runs
//! wait in the push queue, and `rtlab push` sends them when the server is back.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use common::rtlab;
use common::server::{Server, add_token, free_port};

const PLAN: &str = r#"
name = "pushed"
cpus = "0"
budget = "1ms"

[[phase]]
name = "quiet"
duration = "1s"

[[phase]]
name = "loaded"
duration = "1s"
repeat = 2
"#;

/// One test's campaign: its directory holds the plan, the board's store, the state and the
/// push queue.
struct Board {
    dir: tempfile::TempDir,
}

impl Board {
    fn new(plan: &str) -> Board {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("plan.toml"), plan).unwrap();
        Board { dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).to_str().unwrap().to_string()
    }

    fn rtlab(&self, token: &str) -> Command {
        let mut cmd = rtlab();
        cmd.env("RTLAB_DB", self.path("board.db"))
            .env("RTLAB_TOKEN", token)
            .env("RTLAB_PUSH_QUEUE", self.path("queue"))
            .env_remove("RTLAB_PUSH_URL")
            .env_remove("http_proxy")
            .env_remove("HTTP_PROXY")
            .env_remove("all_proxy")
            .env_remove("ALL_PROXY");
        cmd
    }

    /// `rtlab campaign PLAN --push URL` on the scripted clock, to its end.
    fn campaign(&self, token: &str, url: &str) -> Output {
        self.rtlab(token)
            .args(["campaign", "--fake-clock", "5us,7us,20us"])
            .arg(self.path("plan.toml"))
            .args(["--state", &self.path("state"), "--push", url])
            .output()
            .unwrap()
    }

    fn queued(&self) -> usize {
        std::fs::read_dir(self.path("queue")).map_or(0, |d| {
            d.filter(|e| e.as_ref().unwrap().path().is_file()).count()
        })
    }
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\n{}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The runs a store holds: id → (label, session).
fn runs(db: &str) -> BTreeMap<String, (String, String)> {
    common::stored_runs(db)
        .iter()
        .map(|r| {
            let field = |k: &str| r[k].as_str().unwrap_or_default().to_string();
            (field("id"), (field("label"), field("session")))
        })
        .collect()
}

#[test]
fn every_phase_reaches_the_server_once_as_the_board_stored_it() {
    let server_dir = tempfile::tempdir().unwrap();
    let db = server_dir.path().join("server.db");
    let db = db.to_str().unwrap();
    let token = add_token(db, "board");
    let server = Server::start(db, "127.0.0.1:0", &[]);
    let board = Board::new(PLAN);

    let out = board.campaign(&token, &server.url());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let on_board = runs(&board.path("board.db"));
    let labels: Vec<&str> = on_board.values().map(|(l, _)| l.as_str()).collect();
    assert_eq!(on_board.len(), 3, "{on_board:?}");
    for want in ["quiet", "loaded#1", "loaded#2"] {
        assert!(labels.contains(&want), "{want}: {labels:?}");
    }
    let session = &on_board.values().next().unwrap().1;
    assert!(!session.is_empty());
    assert!(on_board.values().all(|(_, s)| s == session), "one session");
    assert_eq!(runs(db), on_board, "same ids, labels and session");
    assert_eq!(board.queued(), 0, "nothing left to send");

    // Resuming a finished campaign sends nothing again.
    let out = board
        .rtlab(&token)
        .args([
            "campaign",
            "resume",
            "--quiet",
            "--state",
            &board.path("state"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(runs(db), on_board);
}

#[test]
fn with_the_server_gone_the_campaign_goes_on_and_its_runs_wait_for_it() {
    let server_dir = tempfile::tempdir().unwrap();
    let db = server_dir.path().join("server.db");
    let db = db.to_str().unwrap();
    let token = add_token(db, "board");
    let listen = format!("127.0.0.1:{}", free_port());
    let url = format!("http://{listen}");
    let board = Board::new(
        "name = \"offline\"\ncpus = \"0\"\n[[phase]]\nname = \"only\"\nduration = \"1s\"\n",
    );

    let out = board.campaign(&token, &url);
    assert_eq!(
        out.status.code(),
        Some(0),
        "a push never fails a campaign: {}",
        text(&out)
    );
    let on_board = runs(&board.path("board.db"));
    assert_eq!(on_board.len(), 1, "{on_board:?}");
    assert_eq!(board.queued(), 1, "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("was not pushed"),
        "the warning names the run: {}",
        text(&out)
    );
    let status = board
        .rtlab(&token)
        .args(["push", "--queue", "--format", "json"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&status.stdout);
    assert!(listed.contains(&url), "{listed}");

    // The server is back on its port: `rtlab push` sends the queue.
    let _server = Server::start(db, &listen, &[]);
    let out = board
        .rtlab(&token)
        .args(["push", "--to", &url])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(board.queued(), 0);
    assert_eq!(runs(db), on_board);
    assert!(Path::new(&board.path("state")).join("state.json").exists());
}
