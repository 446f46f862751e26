//! A real `rtlab serve` for the end-to-end tests: started on a loopback port, its address read
//! from the line it prints, killed when dropped; and push tokens made on its database.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};

use super::rtlab;

/// A running `rtlab serve`, stopped (SIGKILL) when dropped.
pub(crate) struct Server {
    child: Child,
    addr: String,
}

impl Server {
    /// `rtlab serve --listen LISTEN --db DB EXTRA...`, once it says where it listens.
    /// `127.0.0.1:0` takes a free port; a fixed one lets a test bring the server back there.
    pub(crate) fn start(db: &str, listen: &str, extra: &[&str]) -> Server {
        let mut child = rtlab()
            .args(["serve", "--listen", listen, "--db", db])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        let addr = first
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .unwrap_or_else(|| panic!("serve did not say where it listens: {first}"))
            .to_string();
        // Keep draining its standard error so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Server { child, addr }
    }

    /// HOST:PORT it listens on.
    pub(crate) fn addr(&self) -> &str {
        &self.addr
    }

    /// The server's process (to signal it, or wait for it).
    pub(crate) fn child(&mut self) -> &mut Child {
        &mut self.child
    }

    /// `http://HOST:PORT`, for `--to` and `--push`.
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A new push token named `name` on the server database `db`.
pub(crate) fn add_token(db: &str, name: &str) -> String {
    let out = rtlab()
        .args(["serve", "token", "add", name, "--db", db])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A loopback port nothing listens on (bound a moment ago, then closed): for a server that
/// must come back on the same port, or for a push that must find no server.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
