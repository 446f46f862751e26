//! A real `rtlab serve` for the end-to-end tests: started on a loopback port, its address read
//! from the line it prints, killed when dropped; and push tokens made on its database.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::Duration;

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

/// The API calls the tests make of a [`Server`].
pub(crate) trait Api {
    /// GET `path`.
    fn get(&self, path: &str) -> Answer;
    /// POST a run document to the push API with `token`.
    fn upload(&self, token: &str, body: &[u8]) -> Answer;
}

impl Api for Server {
    fn get(&self, path: &str) -> Answer {
        http(self.addr(), "GET", path, &[], b"")
    }

    fn upload(&self, token: &str, body: &[u8]) -> Answer {
        http(
            self.addr(),
            "POST",
            "/api/v1/runs",
            &[
                ("Authorization", &format!("Bearer {token}")),
                ("Content-Type", "application/json"),
            ],
            body,
        )
    }
}

/// An HTTP answer.
#[derive(Debug)]
pub(crate) struct Answer {
    /// The status code.
    pub(crate) status: u16,
    /// The status line and headers.
    pub(crate) head: String,
    /// The body.
    pub(crate) body: String,
}

impl Answer {
    /// The body as JSON.
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

/// One HTTP/1.1 request on a fresh connection (`Connection: close`), read to the end. The
/// test speaks HTTP itself so that it depends on no client of the code under test.
pub(crate) fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Answer {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    // The server may answer (413) and close before it has read a large body.
    let _ = stream.write_all(request.as_bytes());
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP answer to {method} {path}: {text:?}"));
    Answer {
        status,
        head: head.to_string(),
        body: rest.to_string(),
    }
}
