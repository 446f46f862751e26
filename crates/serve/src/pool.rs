//! A small pool of store connections for the server. Store calls are blocking (rusqlite and
//! the synchronous PostgreSQL client), so each runs on tokio's blocking threads with a
//! connection taken from the pool; at most `size` run at once, the rest wait their turn. A
//! connection that failed with an engine error (the server restarted, the network dropped) is
//! not put back, and the idle ones are dropped with it: the next request opens a fresh one.

use std::sync::{Arc, Mutex};

use store::{Location, Store, StoreError};
use tokio::sync::Semaphore;

use crate::error::ApiError;

/// The pool.
pub(crate) struct Pool {
    location: Location,
    idle: Mutex<Vec<Store>>,
    permits: Semaphore,
}

impl Pool {
    /// A pool of at most `size` connections to `location`; none is opened yet.
    pub(crate) fn new(location: Location, size: usize) -> Pool {
        Pool {
            location,
            idle: Mutex::new(Vec::new()),
            permits: Semaphore::new(size.max(1)),
        }
    }

    /// Runs `f` with a connection on a blocking thread.
    pub(crate) async fn with<T, F>(self: &Arc<Self>, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Store) -> Result<T, StoreError> + Send + 'static,
    {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| ApiError::unavailable("the server is stopping"))?;
        let pool = Arc::clone(self);
        let joined = tokio::task::spawn_blocking(move || {
            let taken = pool.idle.lock().map(|mut v| v.pop()).unwrap_or(None);
            let mut store = match taken {
                Some(s) => s,
                None => Store::open_at(&pool.location)?,
            };
            let result = f(&mut store);
            // An engine error (the database restarted, the network dropped) most likely broke
            // the idle connections too: drop them all, and open fresh ones on demand.
            let broken = matches!(result, Err(StoreError::Engine { .. }));
            if let Ok(mut idle) = pool.idle.lock() {
                if broken {
                    idle.clear();
                } else {
                    idle.push(store);
                }
            }
            result
        })
        .await;
        match joined {
            Ok(result) => result.map_err(ApiError::from_store),
            Err(e) => Err(ApiError::unavailable(format!("a store call failed: {e}"))),
        }
    }
}
