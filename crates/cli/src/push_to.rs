//! Pushing runs to a fleet server (`rtlab serve`), as `rtlab push` and the `--push URL` of
//! measure, noise, import, run and campaign do it: the server and the token as the person
//! gave them (checked before anything is sent or measured), the queue sent first, then the
//! run, and what could not be sent queued and said. The `push` room does the HTTP and the
//! queue; this module decides what to send and what to say. It reads no RUN argument (that is
//! [`crate::push_cmd`]'s), so every command that makes runs can use it.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::Result;
use model::measure::MeasureRun;
use push::{
    About, Class, Client, Failed, Jitter, Queue, QueuedRun, RealClock, RetryPolicy, Target, Token,
    Uploaded,
};

use crate::console::Console;
use crate::exit::UsageError;
use crate::flags::PushToArgs;

/// The longest token file read.
const MAX_TOKEN_FILE: u64 = 4096;

/// How long a server found down is left alone by a long-running command before its next push
/// tries it again: a monitor's pushes are minutes apart, but those queued in a row (an interval
/// and its incidents, or the last ones at SIGTERM) must not each wait a request's timeout.
const DOWN_FOR: std::time::Duration = std::time::Duration::from_secs(60);

/// The push queue: `RTLAB_PUSH_QUEUE`, else the XDG state directory.
pub fn queue() -> Result<Queue> {
    push::default_dir(|k| std::env::var_os(k))
        .map(Queue::at)
        .ok_or_else(|| {
            UsageError(
                "no place for the push queue: HOME is not set; set RTLAB_PUSH_QUEUE to a directory"
                    .into(),
            )
            .into()
        })
}

/// The server from `--to`, else `RTLAB_PUSH_URL`; `None` when neither is given.
pub(crate) fn target_from(to: Option<&str>, flag: &str) -> Result<Option<Target>> {
    let env = std::env::var("RTLAB_PUSH_URL")
        .ok()
        .filter(|v| !v.is_empty());
    let (url, from) = match (to, env.as_deref()) {
        (Some(url), _) => (url, flag),
        (None, Some(url)) => (url, "RTLAB_PUSH_URL"),
        (None, None) => return Ok(None),
    };
    Target::parse(url)
        .map(Some)
        .map_err(|e| UsageError(format!("{from}: {e}")).into())
}

/// The token: the first line of `file` (which only its owner may read), else `RTLAB_TOKEN`.
pub(crate) fn token(file: Option<&Path>) -> Result<Token> {
    if let Some(path) = file {
        return token_file(path);
    }
    match std::env::var("RTLAB_TOKEN") {
        Ok(v) if !v.is_empty() => Token::new(&v, "RTLAB_TOKEN").map_err(|e| UsageError(e).into()),
        _ => Err(UsageError(
            "no push token: set RTLAB_TOKEN or give --token-file PATH (`rtlab serve token add NAME` makes one on the server)"
                .into(),
        )
        .into()),
    }
}

/// Reads a token file as ssh reads a key: refused when group or others may read or write it.
fn token_file(path: &Path) -> Result<Token> {
    let shown = path.display();
    let fail = |why: String| -> anyhow::Error {
        UsageError(format!("--token-file {shown}: {why}")).into()
    };
    let file = File::open(path).map_err(|e| fail(e.to_string()))?;
    let meta = file.metadata().map_err(|e| fail(e.to_string()))?;
    if !meta.is_file() {
        return Err(fail("not a regular file".into()));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(fail(format!(
            "group or others may read it (mode {mode:04o}), so the token is not secret; run `chmod 600 {shown}`"
        )));
    }
    let mut text = String::new();
    file.take(MAX_TOKEN_FILE)
        .read_to_string(&mut text)
        .map_err(|e| fail(format!("not a text file ({e})")))?;
    let first = text.lines().next().unwrap_or("");
    Token::new(first, &format!("--token-file {shown}")).map_err(|e| UsageError(e).into())
}

/// One server being pushed to: its client and retry schedule, and the failure that showed it
/// cannot take runs now (after which runs for it are queued without trying again).
pub struct Server {
    client: Client,
    policy: RetryPolicy,
    clock: RealClock,
    jitter: Jitter,
    down: Option<Failed>,
    /// When the server was found down.
    down_at: Option<std::time::Instant>,
}

impl Server {
    pub(crate) fn new(target: Target, token: Token, retry_for: model::Nanos) -> Server {
        Server {
            client: Client::new(target, token),
            policy: RetryPolicy::within(retry_for.to_duration()),
            clock: RealClock::default(),
            jitter: Jitter::from_entropy(),
            down: None,
            down_at: None,
        }
    }

    pub(crate) fn target(&self) -> &Target {
        self.client.target()
    }

    /// Sends one document, with retries; a failure that is not the run's own marks the
    /// server down for the runs after it.
    fn send(
        &mut self,
        document: &str,
        label: Option<&str>,
        session: Option<&str>,
    ) -> Result<Uploaded, Failed> {
        if let Some(down) = &self.down {
            return Err(Failed {
                error: down.error.clone(),
                attempts: 0,
            });
        }
        let client = &self.client;
        let result = push::with_retry(&self.policy, &mut self.clock, &mut self.jitter, || {
            client.upload(document, label, session)
        });
        if let Err(f) = &result
            && f.error.class != Class::Refused
        {
            self.down = Some(f.clone());
            self.down_at = Some(std::time::Instant::now());
        }
        result
    }
}

/// What one push did, for the summary and `--format json`.
#[derive(Default)]
pub(crate) struct Outcome {
    /// (what, target, uploaded, from the queue).
    pub(crate) sent: Vec<(String, String, Uploaded, bool)>,
    /// (what, target, the file it waits in, why).
    pub(crate) queued: Vec<(String, String, PathBuf, String)>,
    /// (what, target, why).
    pub(crate) refused: Vec<(String, String, String)>,
    /// (file, why).
    pub(crate) damaged: Vec<(PathBuf, String)>,
}

/// How a queued document is named in messages: a run by its id, else its host and start; a
/// monitor history by its host and first start; else its file.
fn queued_name(run: &QueuedRun, path: &Path) -> String {
    let history = push::upload_path(&run.document) == push::MONITOR_PATH;
    match (&run.run_id, &run.host, &run.started_at) {
        (_, Some(h), Some(s)) if history => format!(
            "the monitor history of {} from {}",
            push::one_line(h),
            push::one_line(s)
        ),
        (Some(id), _, _) => format!("run {}", push::one_line(id)),
        (None, Some(h), Some(s)) => {
            format!("the run of {} at {}", push::one_line(h), push::one_line(s))
        }
        _ => format!("queued run {}", path.display()),
    }
}

/// Sends what is queued for `server`, oldest first.
pub(crate) fn drain(queue: &Queue, server: &mut Server, out: &mut Outcome) -> Result<()> {
    let target = server.target().clone();
    let drained = queue.drain(&target, &mut |q| {
        server.send(&q.document, q.label.as_deref(), q.session.as_deref())
    })?;
    for (entry, up) in drained.sent {
        out.sent.push((
            queued_name(&entry.run, &entry.path),
            target.to_string(),
            up,
            true,
        ));
    }
    for (entry, failed) in drained.refused {
        let why = format!(
            "{}; moved to {}",
            failed.error,
            queue.dir().join(push::REFUSED_DIR).display()
        );
        out.refused.push((
            queued_name(&entry.run, &entry.path),
            target.to_string(),
            why,
        ));
    }
    let why = drained
        .stopped
        .map(|f| f.error.to_string())
        .unwrap_or_default();
    for entry in drained.kept {
        out.queued.push((
            queued_name(&entry.run, &entry.path),
            target.to_string(),
            entry.path,
            why.clone(),
        ));
    }
    for d in drained.damaged {
        if !out.damaged.iter().any(|(p, _)| *p == d.path) {
            out.damaged.push((d.path, d.why));
        }
    }
    Ok(())
}

/// One run to send: its document, its names and its place in the local store.
pub(crate) struct Given {
    pub(crate) what: String,
    pub(crate) document: String,
    pub(crate) about: About,
    pub(crate) label: Option<String>,
    pub(crate) session: Option<String>,
}

/// Sends one run; what cannot go now is queued.
pub(crate) fn send_given(
    queue: &Queue,
    server: &mut Server,
    given: Given,
    out: &mut Outcome,
) -> Result<()> {
    let target = server.target().to_string();
    match server.send(
        &given.document,
        given.label.as_deref(),
        given.session.as_deref(),
    ) {
        Ok(up) => out.sent.push((given.what, target, up, false)),
        Err(f) if f.error.class == Class::Refused => {
            out.refused.push((given.what, target, f.error.to_string()))
        }
        Err(f) => {
            let mut q = QueuedRun::new(
                server.target(),
                given.document,
                given.about,
                given.label.as_deref(),
                given.session.as_deref(),
            );
            q.failed(f.attempts, &f.error.to_string());
            let path = queue.enqueue(q)?;
            out.queued
                .push((given.what, target, path, f.error.to_string()));
        }
    }
    Ok(())
}

/// `--push URL` on a command that makes runs, checked before it measures: the server, the
/// token and the queue.
pub struct Pusher {
    server: Server,
    queue: Queue,
}

/// Checks `--push` (none: `None`) before the command does its work: a bad URL, a missing
/// token or an unsafe token file is the command's error (exit 2) before anything is measured.
pub fn prepare(args: &PushToArgs) -> Result<Option<Pusher>> {
    let Some(url) = &args.push else {
        return Ok(None);
    };
    let target = Target::parse(url).map_err(|e| UsageError(format!("--push: {e}")))?;
    let token = token(args.token_file.as_deref())?;
    Ok(Some(Pusher {
        server: Server::new(target, token, args.push_retry_for),
        queue: queue()?,
    }))
}

impl Pusher {
    /// Uploads a finished run (saved locally as `local_id`, if it was), after what is queued
    /// for the server; what cannot be sent is queued. Warnings only: the command's own exit
    /// status does not change.
    pub fn push(
        &mut self,
        run: &MeasureRun,
        local_id: Option<&str>,
        label: Option<&str>,
        session: Option<&str>,
        console: &mut Console,
    ) {
        let given = Given {
            what: local_id.map_or_else(|| "the run".to_string(), |id| format!("run {id}")),
            document: run.to_json(),
            about: About::of(run, local_id),
            label: label.map(str::to_string),
            session: session.map(str::to_string),
        };
        self.push_given(given, console);
    }

    /// Uploads `given` as [`Pusher::push`] does a run: any document the server takes (a run,
    /// a monitor history). A server found down is tried again once [`DOWN_FOR`] has passed
    /// (a long-running command's pushes are minutes apart); until then what comes is queued
    /// at once.
    pub(crate) fn push_given(&mut self, given: Given, console: &mut Console) {
        self.revive();
        let mut out = Outcome::default();
        let done = drain(&self.queue, &mut self.server, &mut out)
            .and_then(|()| send_given(&self.queue, &mut self.server, given, &mut out));
        if let Err(e) = done {
            console.warn(&format!("the push queue: {e:#}"));
        }
        say_sent(&out, console);
        for (what, _, file, why) in &out.queued {
            console.warn(&format!(
                "{what} was not pushed: {why}; queued in {} (`rtlab push` sends it later)",
                file.display()
            ));
        }
    }

    /// The queue and server this pusher sends to, for a long-running command that writes
    /// what it sends into the queue first ([`Pusher::flush`] sends it).
    pub(crate) fn outbox(&self) -> (Queue, Target) {
        (self.queue.clone(), self.server.target().clone())
    }

    /// Sends what the queue holds for the server, oldest first, as `rtlab push` does (a
    /// server found down is tried again once [`DOWN_FOR`] has passed); says what was sent,
    /// and in one line what still waits.
    pub(crate) fn flush(&mut self, console: &mut Console) {
        self.revive();
        let mut out = Outcome::default();
        if let Err(e) = drain(&self.queue, &mut self.server, &mut out) {
            console.warn(&format!("the push queue: {e:#}"));
        }
        say_sent(&out, console);
        if let Some((_, target, _, why)) = out.queued.first() {
            let n = out.queued.len();
            console.warn(&format!(
                "{n} document{} not pushed to {target}: {why}; queued in {} (`rtlab push` sends \
                 {} later)",
                if n == 1 { "" } else { "s" },
                self.queue.dir().display(),
                if n == 1 { "it" } else { "them" }
            ));
        }
    }

    /// Forgets that the server was found down once [`DOWN_FOR`] has passed.
    fn revive(&mut self) {
        if self
            .server
            .down_at
            .is_some_and(|at| at.elapsed() >= DOWN_FOR)
        {
            self.server.down = None;
            self.server.down_at = None;
        }
    }
}

/// Says what was sent, and what the server refused.
fn say_sent(out: &Outcome, console: &mut Console) {
    for (what, target, up, _) in &out.sent {
        let how = if up.new { "stored" } else { "already stored" };
        console.note(&format!("pushed {what} to {target}: {how} as {}", up.id));
    }
    for (what, _, why) in &out.refused {
        console.warn(&format!("{what} was refused: {why}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given(n: u32) -> Given {
        Given {
            what: format!("history {n}"),
            document: format!("{{\"schema\":\"rtlab.monitor/1\",\"n\":{n}}}"),
            about: About::default(),
            label: None,
            session: None,
        }
    }

    /// A server that refuses connections is tried once; what comes in the next minute is
    /// queued without a try; after that it is tried again.
    #[test]
    fn a_server_found_down_is_left_alone_for_a_while_then_tried_again() {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let target = Target::parse(&format!("http://127.0.0.1:{port}")).unwrap();
        let token = Token::new("t", "test").unwrap();
        let mut pusher = Pusher {
            server: Server::new(target, token, model::Nanos(0)),
            queue: Queue::at(dir.path()),
        };
        let mut console = Console::new(true);
        let attempts = |p: &Pusher| -> Vec<u32> {
            let mut a: Vec<u32> = p
                .queue
                .list()
                .unwrap()
                .entries
                .iter()
                .map(|e| e.run.attempts)
                .collect();
            a.sort_unstable();
            a
        };
        pusher.push_given(given(1), &mut console);
        assert_eq!(attempts(&pusher), [1], "the first push tries the server");
        pusher.push_given(given(2), &mut console);
        assert_eq!(
            attempts(&pusher),
            [0, 1],
            "the next one is queued without a try"
        );
        pusher.server.down_at = Some(std::time::Instant::now() - DOWN_FOR);
        pusher.push_given(given(3), &mut console);
        // Tried again: the queue first, oldest first; the oldest fails its second try, which
        // finds the server still down, and the rest wait without one.
        assert_eq!(attempts(&pusher), [0, 0, 2]);
    }
}
