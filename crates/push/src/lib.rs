//! rtlab's push client: a board uploads its runs to `rtlab serve` over the HTTP API of
//! docs/api.md, small and synchronous (ureq, no async runtime, no TLS stack, no database).
//!
//! It owns the target URL ([`Target`]), the token ([`Token`]), one upload and its answer
//! ([`Client`]), what a failure means and what to do about it ([`PushError`], [`Class`]),
//! trying again with backoff within a time budget ([`with_retry`]), and the local queue of
//! runs that could not be sent yet ([`Queue`]). Decision record: docs/decisions/0021.
//!
//! It depends on `rtlab-model` only among rtlab's crates. It prints nothing and never touches
//! the kernel; the CLI decides what to send and what to say.

mod client;
mod error;
mod queue;
mod queue_file;
mod retry;
mod target;

pub use client::{
    CONNECT_TIMEOUT, Client, MAX_ANSWER, MAX_TOKEN, MONITOR_PATH, RUNS_PATH, Token, Uploaded,
    request_timeout, upload_path,
};
pub use error::{Class, MAX_RETRY_AFTER, PushError, one_line, parse_retry_after};
pub use queue::{
    Damaged, Drained, Entry, Listing, Queue, QueueError, REFUSED_DIR, default_dir, read_file,
};
pub use queue_file::{About, MAX_QUEUE_FILE, QUEUE_SCHEMA, QueuedRun};
pub use retry::{Clock, Failed, Jitter, RealClock, RetryPolicy, with_retry};
pub use target::{MAX_URL, Target, TargetError, URL_FORM};
