//! Opening a store: telling a SQLite path from a PostgreSQL address, creating and migrating
//! either database, refusing one written by a newer rtlab, and naming it in messages without
//! its password.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::Connection;

#[cfg(feature = "postgres")]
use crate::db::Arg;
use crate::db::{Db, DbError};
use crate::error::StoreError;
use crate::schema::{MIGRATIONS, SCHEMA_VERSION};
use crate::store::Store;

/// How long an operation waits for another rtlab holding the database's write lock.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Where a store lives: a SQLite file, or a PostgreSQL database named by its address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// A SQLite database file.
    File(PathBuf),
    /// A PostgreSQL address, `postgres://user[:password]@host[:port]/db[?options]`.
    Postgres(String),
}

impl Location {
    /// What `--db` or `RTLAB_DB` says: an address starting `postgres://` or `postgresql://`,
    /// else a file path.
    pub fn parse(text: &std::ffi::OsStr) -> Location {
        match text.to_str() {
            Some(t) if is_postgres_address(t) => Location::Postgres(t.to_string()),
            _ => Location::File(PathBuf::from(text)),
        }
    }

    /// The location as messages show it: the file's path, or the address without its
    /// password.
    pub fn display_name(&self) -> String {
        match self {
            Location::File(p) => p.display().to_string(),
            Location::Postgres(url) => redact(url),
        }
    }
}

/// Whether `text` is a PostgreSQL address rather than a file name.
pub fn is_postgres_address(text: &str) -> bool {
    let lower = text.get(..13).unwrap_or(text).to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// `url` with the password of its user part replaced by `***`.
pub fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    let rest = &url[scheme_end..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let Some(at) = authority.rfind('@') else {
        return url.to_string();
    };
    let user = &authority[..at];
    match user.find(':') {
        Some(colon) => format!(
            "{}{}:***{}",
            &url[..scheme_end],
            &user[..colon],
            &url[scheme_end + at..]
        ),
        None => url.to_string(),
    }
}

impl Store {
    /// Opens the store at `location`: a SQLite file as [`Store::open`] does, or a PostgreSQL
    /// database as [`Store::open_postgres`] does.
    pub fn open_at(location: &Location) -> Result<Store, StoreError> {
        match location {
            Location::File(path) => Store::open(path),
            Location::Postgres(url) => Store::open_postgres(url),
        }
    }

    /// Opens the SQLite database at `path`, creating it and its missing parent directories,
    /// switching it to WAL, and applying the migrations it lacks. A database whose schema
    /// version is newer than [`SCHEMA_VERSION`] is refused and left untouched.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| StoreError::CreateDir {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        let name = path.display().to_string();
        let conn = Connection::open(path).map_err(engine(&name))?;
        init_sqlite(conn, name, true)
    }

    /// A fresh, empty SQLite store in memory (for tests and dry runs).
    pub fn open_in_memory() -> Result<Store, StoreError> {
        let name = ":memory:".to_string();
        let conn = Connection::open_in_memory().map_err(engine(&name))?;
        init_sqlite(conn, name, false)
    }

    /// Opens the PostgreSQL database at `url` (`postgres://user[:password]@host[:port]/db`),
    /// creating the schema in an empty database and applying the migrations it lacks, under an
    /// advisory lock so that many rtlab processes opening it at once migrate it once. A
    /// database whose schema is newer than [`SCHEMA_VERSION`] is refused and left untouched.
    #[cfg(feature = "postgres")]
    pub fn open_postgres(url: &str) -> Result<Store, StoreError> {
        let name = redact(url);
        let config: postgres::Config =
            url.parse()
                .map_err(|e: postgres::Error| StoreError::BadAddress {
                    db: name.clone(),
                    why: format!(
                        "{e}; write postgres://user[:password]@host[:port]/database (TLS is not \
                     spoken: reach a remote server through a tunnel or on a private network)"
                    ),
                })?;
        let mut config = config;
        config.connect_timeout(BUSY_TIMEOUT);
        if config.get_application_name().is_none() {
            config.application_name("rtlab");
        }
        let client = config
            .connect(postgres::NoTls)
            .map_err(|e| StoreError::Engine {
                db: name.clone(),
                source: e.into(),
            })?;
        let store = Store {
            db: Db::Postgres(Box::new(std::cell::RefCell::new(client))),
            name,
        };
        migrate_postgres(&store)?;
        Ok(store)
    }

    /// Without PostgreSQL support, an address is refused with what to do instead.
    #[cfg(not(feature = "postgres"))]
    pub fn open_postgres(url: &str) -> Result<Store, StoreError> {
        Err(StoreError::NoPostgres { db: redact(url) })
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        match &self.db {
            Db::Sqlite(conn) => conn
                .pragma_query_value(None, "user_version", |r| r.get(0))
                .map_err(engine(&self.name)),
            #[cfg(feature = "postgres")]
            Db::Postgres(_) => {
                let row = self
                    .db
                    .query_opt("SELECT version FROM rtlab_schema", &[])
                    .map_err(|source| self.engine_error(source))?;
                match row {
                    Some(row) => row
                        .int(0)
                        .map_err(|e| self.corrupt("-", "rtlab_schema.version", e.why)),
                    None => Ok(0),
                }
            }
        }
    }
}

/// Wraps an engine's error with the database's name.
pub(crate) fn engine<E: Into<DbError>>(name: &str) -> impl Fn(E) -> StoreError + '_ {
    move |source| StoreError::Engine {
        db: name.to_string(),
        source: source.into(),
    }
}

fn init_sqlite(mut conn: Connection, name: String, wal: bool) -> Result<Store, StoreError> {
    let err = engine(&name);
    conn.busy_timeout(BUSY_TIMEOUT).map_err(&err)?;
    if wal {
        set_wal(&conn).map_err(&err)?;
    }
    conn.pragma_update(None, "foreign_keys", true)
        .map_err(&err)?;
    // Every commit reaches the disk before it returns: in WAL mode the bundled SQLite's
    // default (NORMAL) syncs only at checkpoints, so a power cut lost the last runs while a
    // campaign had already marked their phases done (issue #26, ext2 under QEMU). Runs are
    // saved a few times an hour; the fsync costs nothing that matters.
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(&err)?;
    let found: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(&err)?;
    if found > SCHEMA_VERSION as i64 {
        return Err(StoreError::TooNew {
            db: name.clone(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    migrate_sqlite(&mut conn, &name, found)?;
    drop(err);
    Ok(Store {
        db: Db::Sqlite(conn),
        name,
    })
}

/// Applies the missing migrations. Another rtlab opening the same new database at the same
/// moment may migrate it first (rusqlite_migration reads the version before it takes the write
/// lock); that shows as a failed migration after which the version has moved on, and is
/// retried from the new version rather than reported.
fn migrate_sqlite(conn: &mut Connection, name: &str, mut version: i64) -> Result<(), StoreError> {
    loop {
        let Err(source) = MIGRATIONS.to_latest(conn) else {
            return Ok(());
        };
        let now: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(engine(name))?;
        if now == SCHEMA_VERSION as i64 {
            return Ok(());
        }
        if now == version {
            return Err(StoreError::Migrate {
                db: name.to_string(),
                why: source.to_string(),
            });
        }
        version = now;
    }
}

/// The advisory lock key that serialises migrations of one PostgreSQL database ("rtlab").
#[cfg(feature = "postgres")]
const MIGRATION_LOCK: i64 = 0x0072_746c_6162;

/// Brings a PostgreSQL database to [`SCHEMA_VERSION`] in one transaction, under an advisory
/// lock: an empty database gets the baseline, an older one the later steps; DDL is
/// transactional there, so a failure leaves the version it had.
#[cfg(feature = "postgres")]
fn migrate_postgres(store: &Store) -> Result<(), StoreError> {
    use crate::schema::{POSTGRES_BASE_VERSION, POSTGRES_BASELINE, POSTGRES_STEPS};
    let err = |source: DbError| store.engine_error(source);
    let tx = store.db.begin().map_err(err)?;
    store
        .db
        .execute(
            "SELECT pg_advisory_xact_lock(?1)",
            &[Arg::Int(MIGRATION_LOCK)],
        )
        .map_err(err)?;
    store
        .db
        .batch("CREATE TABLE IF NOT EXISTS rtlab_schema (version BIGINT NOT NULL)")
        .map_err(err)?;
    let found = store.schema_version()?;
    if found > SCHEMA_VERSION as i64 {
        return Err(StoreError::TooNew {
            db: store.name.clone(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    if found == SCHEMA_VERSION as i64 {
        return Ok(());
    }
    let migrate = |why: DbError| StoreError::Migrate {
        db: store.name.clone(),
        why: why.to_string(),
    };
    let mut version = found;
    if version == 0 {
        store.db.batch(POSTGRES_BASELINE).map_err(migrate)?;
        store
            .db
            .execute(
                "INSERT INTO rtlab_schema (version) VALUES (?1)",
                &[Arg::Int(POSTGRES_BASE_VERSION)],
            )
            .map_err(migrate)?;
        version = POSTGRES_BASE_VERSION;
    }
    if version < POSTGRES_BASE_VERSION {
        return Err(StoreError::Migrate {
            db: store.name.clone(),
            why: format!("schema version {version} is older than any PostgreSQL store rtlab made"),
        });
    }
    let first = usize::try_from(version - POSTGRES_BASE_VERSION).unwrap_or(usize::MAX);
    for step in POSTGRES_STEPS.iter().skip(first) {
        store.db.batch(step).map_err(migrate)?;
    }
    store
        .db
        .execute(
            "UPDATE rtlab_schema SET version = ?1",
            &[Arg::Int(SCHEMA_VERSION as i64)],
        )
        .map_err(migrate)?;
    tx.commit().map_err(err)
}

/// Switches the database to WAL: readers never block the writer, and a crash mid-write
/// leaves the last commit. The mode is kept in the file, so only the first opening switches;
/// SQLite answers "busy" at once (without its busy handler) when another connection opens the
/// new file at that moment, so that is retried here until [`BUSY_TIMEOUT`].
fn set_wal(conn: &Connection) -> rusqlite::Result<()> {
    let start = Instant::now();
    loop {
        match conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0)) {
            Ok(_) => return Ok(()),
            Err(e)
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && start.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_commit_is_synced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.db");
        let store = Store::open(&path).unwrap();
        let Db::Sqlite(conn) = &store.db else {
            panic!("a path opens SQLite")
        };
        let level: i64 = conn
            .pragma_query_value(None, "synchronous", |r| r.get(0))
            .unwrap();
        assert_eq!(level, 2, "synchronous = FULL");
    }

    #[test]
    fn addresses_and_paths_are_told_apart() {
        assert_eq!(
            Location::parse("postgres://rtlab@127.0.0.1:5433/fleet".as_ref()),
            Location::Postgres("postgres://rtlab@127.0.0.1:5433/fleet".into())
        );
        assert!(matches!(
            Location::parse("PostgreSQL://h/db".as_ref()),
            Location::Postgres(_)
        ));
        assert_eq!(
            Location::parse("./postgres:/x.db".as_ref()),
            Location::File("./postgres:/x.db".into())
        );
        assert_eq!(
            Location::parse("rtlab.db".as_ref()),
            Location::File("rtlab.db".into())
        );
    }

    #[test]
    fn the_password_never_shows() {
        assert_eq!(
            redact("postgres://rtlab:s3cr:et@db.lab:5432/fleet?sslmode=disable"),
            "postgres://rtlab:***@db.lab:5432/fleet?sslmode=disable"
        );
        assert_eq!(
            redact("postgres://rtlab@db.lab/fleet"),
            "postgres://rtlab@db.lab/fleet"
        );
        assert_eq!(redact("postgres://db.lab/fleet"), "postgres://db.lab/fleet");
        assert_eq!(
            Location::Postgres("postgresql://u:p@h/d".into()).display_name(),
            "postgresql://u:***@h/d"
        );
    }
}
