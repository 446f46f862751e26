//! `rtlab serve`: a fleet's runs kept in one store (SQLite or PostgreSQL) and served to
//! programs as a versioned HTTP API (docs/api.md), to people as pages rendered with the
//! report's own renderers, and to Prometheus as OpenMetrics.
//!
//! This crate owns the HTTP side: routes, authentication and rate limits ([`auth`]), the
//! upload path (bounded body, the hardened result parser, one transaction), the pool of
//! store connections the blocking store calls run on, the fleet overview and the pages. It
//! depends on `store` (what is kept), `report` (how it is shown) and `model`; it never touches
//! the kernel or a file named by a request. TLS is a reverse proxy's job (decision 0020).

mod api;
mod auth;
mod error;
mod fleet;
mod monitor;
mod pages;
mod pool;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::routing::get;
use store::Location;

pub use api::{FLEET_SCHEMA, RUNS_SCHEMA};
pub use fleet::{AuditLine, FleetHost};

/// The default largest upload: a run of hundreds of CPUs with full series fits many times.
pub const DEFAULT_MAX_UPLOAD: usize = 64 << 20;

/// How the server runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where it listens.
    pub listen: SocketAddr,
    /// The store.
    pub db: Location,
    /// Whether reading (API and pages) needs a token too.
    pub read_token: bool,
    /// The largest upload body, bytes.
    pub max_upload: usize,
    /// Uploads per second per push token, on average (bursts of ten times that).
    pub rate: f64,
    /// At most this many store connections at once.
    pub connections: usize,
    /// A newest run worse than its host's baseline by more than this many percent is a
    /// regression.
    pub regression_percent: f64,
    /// How long a monitor interval's whole document is kept after it began, ns; its point
    /// (what the long-term views read) is kept for the whole history.
    pub keep_detail_ns: u64,
}

/// What the handlers share.
pub(crate) struct AppState {
    pub(crate) config: Config,
    pub(crate) pool: Arc<pool::Pool>,
    pub(crate) limiter: auth::RateLimiter,
}

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The store could not be opened (or migrated) at start.
    #[error(transparent)]
    Store(#[from] store::StoreError),
    /// The address could not be listened on.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// What the system said.
        source: std::io::Error,
    },
    /// The runtime or the server failed.
    #[error("the server failed: {0}")]
    Io(#[from] std::io::Error),
}

/// The routes.
fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/api/v1/runs", get(api::list).post(api::upload))
        .route("/api/v1/runs/{id}", get(api::fetch))
        .route("/api/v1/hosts", get(api::hosts))
        .route("/api/v1/compare", get(pages::compare_json))
        .route("/api/v1/monitor", axum::routing::post(monitor::upload))
        .route("/api/v1/monitor/intervals", get(monitor::intervals))
        .route("/api/v1/monitor/points", get(monitor::points))
        .route("/api/v1/monitor/incidents", get(monitor::incidents))
        .route("/metrics", get(pages::metrics))
        .route("/monitor", get(monitor::fleet_page))
        .route("/hosts/{name}/monitor", get(monitor::host_page))
        .route("/", get(pages::fleet_page))
        .route("/hosts/{name}", get(pages::host_page))
        .route("/hosts/{name}/worst", get(pages::host_worst_page))
        .route("/runs/{id}", get(pages::run_page))
        .route("/compare", get(pages::compare_page))
        .fallback(pages::not_found)
        .layer(axum::extract::DefaultBodyLimit::disable())
        .with_state(state)
}

/// Runs the server until SIGINT or SIGTERM: opens (and migrates) the store, listens, calls
/// `ready` with the bound address, answers requests, and on a signal stops taking new ones and
/// finishes those under way. Uploads are committed before they are acknowledged, so stopping
/// (or killing) the server loses nothing that was acknowledged.
pub fn serve(config: Config, ready: impl FnOnce(SocketAddr)) -> Result<(), ServeError> {
    // Fail early, before listening, when the store cannot be used; drop the monitor
    // documents past --keep-detail (each upload drops its own hosts' after it).
    let mut store = store::Store::open_at(&config.db)?;
    store.prune_detail(None, monitor::detail_cut(config.keep_detail_ns))?;
    drop(store);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .max_blocking_threads(config.connections.max(1) + 4)
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|source| ServeError::Listen {
                addr: config.listen,
                source,
            })?;
        let bound = listener.local_addr()?;
        let state = Arc::new(AppState {
            pool: Arc::new(pool::Pool::new(config.db.clone(), config.connections)),
            limiter: auth::RateLimiter::new(config.rate),
            config,
        });
        ready(bound);
        axum::serve(listener, router(state))
            .with_graceful_shutdown(stop_signal())
            .await?;
        Ok(())
    })
}

/// Resolves at SIGINT or SIGTERM.
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        // Without signal handlers the process still stops on the default action.
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
}
