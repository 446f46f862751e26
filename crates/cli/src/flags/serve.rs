//! `rtlab serve` and `rtlab serve token`: their options, help and examples.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use model::Nanos;

use super::values::{TextOrJson, parse_percent, parse_time};

pub const SERVE_LONG: &str = "\
Keep a fleet's runs in one store and serve them: boards upload with `rtlab push` (or \
`--push URL` on measure, run, import and noise), people read the pages, programs the API, \
Prometheus the metrics.

The store is a SQLite file (one server, modest fleets) or a PostgreSQL database given as \
--db postgres://USER[:PASSWORD]@HOST[:PORT]/DB (many writers, long histories); its schema is \
made or brought up to date at start. Every upload is read with the same bounded parser as \
`rtlab show FILE` before anything is stored, and stored in one transaction; the same run \
uploaded twice is kept once (its id is the start of its digest), so a board may retry \
freely. An upload is acknowledged only once it is committed: stopping or killing the server \
loses nothing that was acknowledged.

Pages: / (the fleet: hosts with their kernel, RT CPUs, last run, worst maximum, last audit, \
regressions against each host's baseline first), /hosts/NAME (its runs and the long-term \
view: maximum and p99.99 per run over time), /runs/ID (the report page), /compare?run=ID&run=ID. \
They need no network. API: /api/v1/runs (POST to upload, GET to list), /api/v1/runs/ID, \
/api/v1/hosts; docs/api.md. Metrics: /metrics (OpenMetrics).

Monitor histories (`rtlab monitor --push`): /monitor (the fleet's monitored hosts and \
incidents), /hosts/NAME/monitor (a host's maxima over months, drift between setups, \
incidents); API /api/v1/monitor. Each interval's figures are kept for the whole history, its \
whole document for --keep-detail.

Uploads need a push token (`rtlab serve token add NAME`); reading is open unless \
--read-token. The server listens on 127.0.0.1:8080 by default and speaks plain HTTP: to serve \
other machines, put a TLS-terminating reverse proxy in front of it (README: \"Keep a fleet's runs in one place\"). \
It runs until SIGINT or SIGTERM, finishing the requests under way.";

pub const SERVE_AFTER: &str = "\
EXAMPLES:
    rtlab serve token add pi-07                          a push token for one board
    rtlab serve --db /srv/rtlab/fleet.db
    rtlab serve --db postgres://rtlab@db.lab/fleet --listen 10.0.0.2:8080 --read-token
    rtlab serve token list
    rtlab serve token revoke pi-07

EXIT STATUS:
    0    stopped by SIGINT or SIGTERM after finishing the requests under way
    2    bad input or setup error (the store cannot be opened, the address is taken)";

pub const TOKEN_ADD_LONG: &str = "\
Make a token and print its secret once, on standard output. The store keeps only its \
SHA-256: a lost secret cannot be shown again (revoke it and make another). A push token may \
upload and read; a read token may only read (for a dashboard, where the server runs with \
--read-token). Names are 1 to 64 letters, digits, '-', '_' or '.', unique, revoked ones \
included.";

pub const TOKEN_ADD_AFTER: &str = "\
EXAMPLES:
    rtlab serve token add grafana --role read          a dashboard that only reads
    rtlab serve token add ci-runner > ci-token         a secret kept in a file

EXIT STATUS:
    0    done: the secret is on standard output
    2    bad input or setup error (a bad or taken name, a store that cannot be opened)";

pub const TOKEN_AFTER: &str = "\
EXIT STATUS:
    0    done
    2    bad input or setup error (an unknown token to revoke, a store that cannot be
         opened)";

/// `rtlab serve`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ServeArgs {
    /// Token management instead of serving.
    #[command(subcommand)]
    pub command: Option<ServeCommand>,

    /// The address and port to listen on.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// The store: a SQLite file or a postgres:// address (default: $RTLAB_DB, else
    /// $XDG_DATA_HOME/rtlab/rtlab.db, else ~/.local/share/rtlab/rtlab.db).
    #[arg(long, value_name = "PATH|URL", global = true)]
    pub db: Option<PathBuf>,

    /// Reading (pages, API, metrics) needs a token too (read or push).
    #[arg(long)]
    pub read_token: bool,

    /// The largest upload accepted (e.g. 64M); larger ones get 413.
    #[arg(long, value_name = "SIZE", value_parser = parse_upload_size, default_value = "64M")]
    pub max_upload: usize,

    /// Uploads per second each push token may make on average (bursts of ten times that);
    /// more get 429 with Retry-After.
    #[arg(long, value_name = "N", value_parser = parse_rate, default_value = "5")]
    pub rate: f64,

    /// At most this many store connections at once.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256), default_value = "8")]
    pub connections: u16,

    /// A host's newest latency run with a CPU whose p99.9 or maximum is more than this many
    /// percent worse than its baseline's is shown as a regression (the rule of `rtlab compare
    /// --fail-if-worse`).
    #[arg(long = "fail-if-worse", alias = "regression", value_name = "PCT", value_parser = parse_percent, default_value = "20")]
    pub regression: f64,

    /// Keep each monitor interval's whole document (percentiles, histogram, per CPU) for
    /// TIME after it began; its maximum, wake-ups and setup stay for the long-term views and
    /// the fleet page for as long as the history goes back.
    #[arg(long, value_name = "TIME", value_parser = parse_keep_detail, default_value = "30d")]
    pub keep_detail: Nanos,
}

/// `--keep-detail`: at least an hour (a board's pushes are minutes apart).
fn parse_keep_detail(text: &str) -> Result<Nanos, String> {
    let time = parse_time(text)?;
    if time.get() < 3_600_000_000_000 {
        return Err(format!(
            "'{text}' is shorter than an hour; an interval's document must outlive its push \
             (such as 7d or 30d)"
        ));
    }
    Ok(time)
}

/// `rtlab serve token ...`.
#[derive(Debug, Subcommand)]
pub enum ServeCommand {
    /// Manage the tokens that may upload (and, with --read-token, read).
    #[command(subcommand, after_long_help = super::help::GROUP)]
    Token(TokenCommand),
}

/// What a token may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RoleArg {
    /// Upload runs, and read.
    Push,
    /// Read only.
    Read,
}

/// `rtlab serve token` commands.
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Make a token and print its secret once.
    #[command(long_about = TOKEN_ADD_LONG, after_long_help = TOKEN_ADD_AFTER)]
    Add {
        /// The token's name (a board, a CI job).
        name: String,
        /// What it may do.
        #[arg(long, value_enum, default_value = "push")]
        role: RoleArg,
    },
    /// List the tokens: names, roles, when made and revoked (never the secrets).
    #[command(after_long_help = TOKEN_AFTER)]
    List {
        /// What to print: a table (text) or JSON.
        #[arg(long, value_enum, default_value = "text")]
        format: TextOrJson,
        /// The old spelling of --format json (renamed).
        #[arg(long, hide = true, conflicts_with = "format")]
        json: bool,
    },
    /// Revoke a token at once; uploads with it get 401 from then on.
    #[command(after_long_help = TOKEN_AFTER)]
    Revoke {
        /// The token's name.
        name: String,
    },
}

/// An upload limit: a size with a unit, from 1 KiB to 1 GiB.
fn parse_upload_size(text: &str) -> Result<usize, String> {
    let bytes = model::load::spec::parse_size(text)?;
    if !(1024..=1 << 30).contains(&bytes) {
        return Err(format!(
            "'{text}' is outside 1K to 1G; a run of hundreds of CPUs is a few MB"
        ));
    }
    usize::try_from(bytes).map_err(|_| format!("'{text}' does not fit this machine"))
}

/// A rate: a positive number up to 10000.
fn parse_rate(text: &str) -> Result<f64, String> {
    let rate: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a number of uploads per second (e.g. 5, 0.5)"))?;
    if !(rate.is_finite() && rate > 0.0 && rate <= 10_000.0) {
        return Err(format!("'{text}' must be above 0 and at most 10000"));
    }
    Ok(rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_bounded() {
        assert_eq!(parse_upload_size("64M").unwrap(), 64 << 20);
        assert!(parse_upload_size("10").is_err());
        assert!(parse_upload_size("2G").is_err());
        assert_eq!(parse_rate("0.5").unwrap(), 0.5);
        for bad in ["0", "-1", "NaN", "inf", "x", "20000"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }
}
