//! `rtlab push` and the `--push URL` option of the commands that make runs: their options,
//! help and examples.

use std::path::PathBuf;

use clap::Args;
use model::Nanos;

use super::store::DbArgs;
use super::values::{TextOrJson, parse_time};

pub const PUSH_LONG: &str = "\
Upload runs to an `rtlab serve` over its HTTP API (docs/api.md): `POST /api/v1/runs` with a \
push token. RUN is what every command takes: a result file, a stored run's id or a unique \
prefix of it, `last`, or the label of exactly one stored run. Every RUN is read and checked \
before anything is sent; a RUN that is not a result is refused (exit 2) and nothing is sent.

The server is --to URL, else $RTLAB_PUSH_URL: http://HOST[:PORT][/PREFIX]. This rtlab speaks \
plain HTTP only: to reach a server behind TLS, open a tunnel to it (ssh -L \
8080:localhost:8080 HOST, then --to http://localhost:8080) or push over a private lab \
network. The token is the first line of --token-file PATH, which must be readable by its \
owner only (chmod 600), as ssh wants of a key, else $RTLAB_TOKEN; `rtlab serve token add \
NAME` makes one on the server.

Uploads are idempotent: a run keeps the id it has in this machine's store, and a run the \
server has already is answered `already stored`, not stored twice. A failure worth trying \
again (nothing listens, the network or DNS is down, a timeout, 429, 5xx) is tried again with \
exponential backoff (0.5 s doubling to 30 s, with jitter; the server's Retry-After is \
honoured) for --retry-for. A run that still could not be sent waits in the push queue: one \
file per run in $RTLAB_PUSH_QUEUE, else $XDG_STATE_HOME/rtlab/push-queue, else \
~/.local/state/rtlab/push-queue, written atomically. Every `rtlab push` to a server first sends \
what is queued for it, oldest first; `rtlab push` without RUN sends the queue alone (each run \
to the server it was queued for, or only those for --to). A queued run leaves the queue only \
when the server acknowledged it; one the server will never take (400 not a result, 413 too \
large, 415) moves to refused/ inside the queue, with why; a refused token (401 unknown or \
revoked, 403 a read token) stops and keeps everything queued. `--queue` lists the queue.

`--push URL` on measure, noise, import and run does the same for the runs they make, after \
they are saved: the command's exit status stays its own, and a run that cannot be sent is \
queued with a warning.";

pub const PUSH_AFTER: &str = "\
EXAMPLES:
    rtlab push --queue                          what waits in the queue, and why
    rtlab push last --to http://lab-server:8080  the newest stored run (token in $RTLAB_TOKEN)
    rtlab push run.json --to http://lab-server:8080 --token-file /etc/rtlab/token --label nightly
    rtlab push                                   send what is queued, each to its server
    rtlab measure --duration 1h --push http://lab-server:8080   measure, save, upload

EXIT STATUS:
    0    every RUN given is on the server (stored now or already); without RUN, the queue
         is empty
    1    runs remain queued (the server cannot be reached, or refused the token or the URL),
         or the server refused a run; standard error says which
    2    bad input: a RUN that is not a result, a bad URL, no token or an unsafe token file";

/// Options of `rtlab push`.
#[derive(Debug, Args)]
pub struct PushArgs {
    /// Runs to upload: result files, stored run ids (or unique prefixes), `last`, labels.
    /// None: send what is queued.
    #[arg(value_name = "RUN", conflicts_with = "status")]
    pub runs: Vec<String>,

    /// The server: http://HOST[:PORT][/PREFIX]. Default: $RTLAB_PUSH_URL.
    #[arg(long, value_name = "URL")]
    pub to: Option<String>,

    /// Read the push token from PATH (its first line; the file must not be readable by
    /// group or others). Default: $RTLAB_TOKEN.
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<PathBuf>,

    /// Upload new runs with this label (a stored run keeps its own by default).
    #[arg(long, value_name = "TEXT", conflicts_with = "status")]
    pub label: Option<String>,

    /// Upload new runs as part of this session (a stored run keeps its own by default).
    #[arg(long, value_name = "ID", conflicts_with = "status")]
    pub session: Option<String>,

    /// Keep trying a server that cannot be reached for TIME before queueing (0: one try).
    #[arg(long, value_name = "TIME", value_parser = parse_time, default_value = "1m")]
    pub retry_for: Nanos,

    /// List the queue: each run's id, host, start, server, tries, last error and age.
    #[arg(long = "queue", alias = "status")]
    pub status: bool,

    /// What to print: what was done (or the queue, with --queue) as text or JSON.
    #[arg(long, value_enum, default_value = "text")]
    pub format: TextOrJson,

    /// The old spelling of --format json (renamed).
    #[arg(long, hide = true, conflicts_with = "format")]
    pub json: bool,

    /// The store RUN ids are looked up in.
    #[command(flatten)]
    pub db: DbArgs,
}

impl PushArgs {
    /// `--format json`, or its old spelling `--json`.
    pub fn wants_json(&self) -> bool {
        self.json || self.format == TextOrJson::Json
    }
}

/// `--push URL` and its token, on the commands that make runs.
#[derive(Clone, Debug, Default, Args)]
pub struct PushToArgs {
    /// After saving, upload the run to the `rtlab serve` at URL (http://HOST[:PORT]); queued
    /// if it cannot be reached (`rtlab push` sends it later). The token: $RTLAB_TOKEN or
    /// --token-file.
    #[arg(long, value_name = "URL", help_heading = "Push")]
    pub push: Option<String>,

    /// Read the --push token from PATH (owner-only permissions). Default: $RTLAB_TOKEN.
    #[arg(long, value_name = "PATH", requires = "push", help_heading = "Push")]
    pub token_file: Option<PathBuf>,

    /// Keep trying an unreachable --push server for TIME before queueing the run (as
    /// `rtlab push --retry-for`).
    #[arg(long = "retry-for", alias = "push-retry-for", value_name = "TIME", value_parser = parse_time, default_value = "10s", requires = "push", help_heading = "Push")]
    pub push_retry_for: Nanos,
}
