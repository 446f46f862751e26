//! The two database engines behind one small interface, so that the store's schema, migrations
//! and queries are written once: SQLite (embedded, the default) and PostgreSQL (a shared server
//! for a fleet, cargo feature `postgres`).
//!
//! Statements are written with SQLite's numbered parameters (`?1`, `?2`); for PostgreSQL they
//! are rewritten to `$1`, `$2` and sent with explicit types (`bigint`, `text`), so that no
//! parameter's type is left to the server's inference. Rows come back as [`Cell`]s: integers
//! (PostgreSQL's `integer` and `boolean` widened to `i64`), text and NULL — the only types the
//! schema uses. Where the two engines spell a thing differently, [`Dialect`] says how.

#[cfg(feature = "postgres")]
use std::cell::RefCell;

/// A statement parameter.
#[derive(Clone, Debug)]
pub(crate) enum Arg<'a> {
    /// An integer (`INTEGER` / `bigint`).
    Int(i64),
    /// Text.
    Text(&'a str),
    /// Text or NULL.
    OptText(Option<&'a str>),
    /// An integer or NULL.
    OptInt(Option<i64>),
}

/// One value of a result row.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Cell {
    /// SQL NULL.
    Null,
    /// An integer.
    Int(i64),
    /// Text.
    Text(String),
}

/// A result row, read by column index.
#[derive(Clone, Debug)]
pub(crate) struct Row(Vec<Cell>);

/// Why a row's value is not what the query expects (a damaged or foreign database).
#[derive(Debug)]
pub(crate) struct CellError {
    /// The column's index in the statement.
    pub(crate) index: usize,
    /// What was wrong.
    pub(crate) why: &'static str,
}

impl Row {
    fn cell(&self, i: usize) -> Result<&Cell, CellError> {
        self.0.get(i).ok_or(CellError {
            index: i,
            why: "missing from the row",
        })
    }

    /// A text column that must not be NULL.
    pub(crate) fn text(&self, i: usize) -> Result<String, CellError> {
        self.opt_text(i)?.ok_or(CellError {
            index: i,
            why: "NULL where text is required",
        })
    }

    /// A text column that may be NULL.
    pub(crate) fn opt_text(&self, i: usize) -> Result<Option<String>, CellError> {
        match self.cell(i)? {
            Cell::Null => Ok(None),
            Cell::Text(t) => Ok(Some(t.clone())),
            Cell::Int(_) => Err(CellError {
                index: i,
                why: "an integer where text is expected",
            }),
        }
    }

    /// An integer column that must not be NULL.
    pub(crate) fn int(&self, i: usize) -> Result<i64, CellError> {
        self.opt_int(i)?.ok_or(CellError {
            index: i,
            why: "NULL where an integer is required",
        })
    }

    /// An integer column that may be NULL.
    pub(crate) fn opt_int(&self, i: usize) -> Result<Option<i64>, CellError> {
        match self.cell(i)? {
            Cell::Null => Ok(None),
            Cell::Int(n) => Ok(Some(*n)),
            Cell::Text(_) => Err(CellError {
                index: i,
                why: "text where an integer is expected",
            }),
        }
    }
}

/// What an engine reported.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// SQLite's error.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    /// PostgreSQL's error.
    #[cfg(feature = "postgres")]
    #[error("{}", postgres_text(.0))]
    Postgres(postgres::Error),
    /// A value of a type the store never writes.
    #[error("column {index}: {why}")]
    Type {
        /// The column's index.
        index: usize,
        /// What it held.
        why: String,
    },
}

impl DbError {
    /// Whether the statement failed on a unique or primary-key constraint.
    pub(crate) fn is_unique_violation(&self) -> bool {
        match self {
            DbError::Sqlite(e) => matches!(
                e.sqlite_error_code(),
                Some(rusqlite::ErrorCode::ConstraintViolation)
            ),
            #[cfg(feature = "postgres")]
            DbError::Postgres(e) => e.code() == Some(&postgres::error::SqlState::UNIQUE_VIOLATION),
            DbError::Type { .. } => false,
        }
    }
}

#[cfg(feature = "postgres")]
impl From<postgres::Error> for DbError {
    fn from(e: postgres::Error) -> DbError {
        DbError::Postgres(e)
    }
}

/// PostgreSQL's error in one line: the server's message and detail without the driver's
/// wrapping, or the client's error with every cause (`error connecting to server: Connection
/// refused (os error 111)`: the client's own text names no reason). The causes are in the
/// text, not the error's source, so that a chain printed whole says them once.
#[cfg(feature = "postgres")]
fn postgres_text(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => match db.detail() {
            Some(detail) => format!("{} ({detail})", db.message()),
            None => db.message().to_string(),
        },
        None => {
            let mut text = e.to_string();
            let mut cause = std::error::Error::source(e);
            while let Some(c) = cause {
                let said = c.to_string();
                if !text.ends_with(&said) {
                    text.push_str(": ");
                    text.push_str(&said);
                }
                cause = c.source();
            }
            text
        }
    }
}

/// Which SQL an engine speaks, where the two differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// SQLite 3 (the bundled build).
    Sqlite,
    /// PostgreSQL 12 or newer.
    Postgres,
}

impl Dialect {
    /// The measured CPUs of run `r` (joined as `c`) as one comma-separated text.
    pub(crate) fn cpu_list(self) -> &'static str {
        match self {
            Dialect::Sqlite => {
                "(SELECT group_concat(c.cpu) FROM run_cpus c \
                               WHERE c.run_id = r.id AND c.cpu >= 0)"
            }
            Dialect::Postgres => {
                "(SELECT string_agg(c.cpu::text, ',' ORDER BY c.cpu) \
                                 FROM run_cpus c WHERE c.run_id = r.id AND c.cpu >= 0)"
            }
        }
    }

    /// The text of top-level field `key` of the JSON text column `column`.
    pub(crate) fn json_field(self, column: &str, key: &str) -> String {
        match self {
            Dialect::Sqlite => format!("json_extract({column}, '$.{key}')"),
            Dialect::Postgres => format!("({column}::jsonb ->> '{key}')"),
        }
    }

    /// The integer at top-level field `key` of the JSON text column `column`.
    pub(crate) fn json_int(self, column: &str, key: &str) -> String {
        match self {
            Dialect::Sqlite => format!("json_extract({column}, '$.{key}')"),
            Dialect::Postgres => format!("(({column}::jsonb ->> '{key}')::bigint)"),
        }
    }

    /// A condition: `needle` occurs in `haystack`.
    pub(crate) fn contains(self, haystack: &str, needle: &str) -> String {
        match self {
            Dialect::Sqlite => format!("instr({haystack}, {needle}) > 0"),
            Dialect::Postgres => format!("strpos({haystack}, {needle}) > 0"),
        }
    }

    /// The column that orders runs by when they were saved (SQLite's rowid, a sequence on
    /// PostgreSQL).
    pub(crate) fn saved_order(self) -> &'static str {
        match self {
            Dialect::Sqlite => "r.rowid",
            Dialect::Postgres => "r.seq",
        }
    }

    /// The statement that opens a write transaction: SQLite takes the write lock at once, so
    /// that two writers wait for each other (busy timeout) instead of failing on an upgrade.
    fn begin(self) -> &'static str {
        match self {
            Dialect::Sqlite => "BEGIN IMMEDIATE",
            Dialect::Postgres => "BEGIN",
        }
    }
}

/// An open connection to either engine.
pub(crate) enum Db {
    /// An SQLite connection.
    Sqlite(rusqlite::Connection),
    /// A PostgreSQL connection (the driver needs `&mut` for every call; a store is used by
    /// one thread at a time).
    #[cfg(feature = "postgres")]
    Postgres(Box<RefCell<postgres::Client>>),
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Db::Sqlite(_) => "Db::Sqlite",
            #[cfg(feature = "postgres")]
            Db::Postgres(_) => "Db::Postgres",
        })
    }
}

impl Db {
    /// The engine's dialect.
    pub(crate) fn dialect(&self) -> Dialect {
        match self {
            Db::Sqlite(_) => Dialect::Sqlite,
            #[cfg(feature = "postgres")]
            Db::Postgres(_) => Dialect::Postgres,
        }
    }

    /// Runs a statement; returns how many rows it changed.
    pub(crate) fn execute(&self, sql: &str, args: &[Arg<'_>]) -> Result<u64, DbError> {
        match self {
            Db::Sqlite(conn) => {
                let n =
                    conn.execute(sql, rusqlite::params_from_iter(args.iter().map(sqlite_arg)))?;
                Ok(n as u64)
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(client) => {
                let mut client = client.borrow_mut();
                let (statement, values) = pg_prepare(&mut client, sql, args)?;
                Ok(client.execute(&statement, &pg_params(&values))?)
            }
        }
    }

    /// Runs a query; returns every row.
    pub(crate) fn query(&self, sql: &str, args: &[Arg<'_>]) -> Result<Vec<Row>, DbError> {
        match self {
            Db::Sqlite(conn) => {
                let mut stmt = conn.prepare(sql)?;
                let width = stmt.column_count();
                let rows = stmt.query_map(
                    rusqlite::params_from_iter(args.iter().map(sqlite_arg)),
                    |r| {
                        (0..width)
                            .map(|i| {
                                Ok(match r.get_ref(i)? {
                                    rusqlite::types::ValueRef::Null => Cell::Null,
                                    rusqlite::types::ValueRef::Integer(n) => Cell::Int(n),
                                    rusqlite::types::ValueRef::Text(t) => {
                                        Cell::Text(String::from_utf8_lossy(t).into_owned())
                                    }
                                    rusqlite::types::ValueRef::Real(_) => {
                                        return Err(rusqlite::Error::InvalidColumnType(
                                            i,
                                            "real".into(),
                                            rusqlite::types::Type::Real,
                                        ));
                                    }
                                    rusqlite::types::ValueRef::Blob(_) => {
                                        return Err(rusqlite::Error::InvalidColumnType(
                                            i,
                                            "blob".into(),
                                            rusqlite::types::Type::Blob,
                                        ));
                                    }
                                })
                            })
                            .collect::<rusqlite::Result<Vec<Cell>>>()
                            .map(Row)
                    },
                )?;
                Ok(rows.collect::<rusqlite::Result<Vec<Row>>>()?)
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(client) => {
                let mut client = client.borrow_mut();
                let (statement, values) = pg_prepare(&mut client, sql, args)?;
                let rows = client.query(&statement, &pg_params(&values))?;
                rows.iter().map(pg_row).collect()
            }
        }
    }

    /// The first row of a query, if any.
    pub(crate) fn query_opt(&self, sql: &str, args: &[Arg<'_>]) -> Result<Option<Row>, DbError> {
        Ok(self.query(sql, args)?.into_iter().next())
    }

    /// Runs statements without parameters (DDL, transaction control).
    pub(crate) fn batch(&self, sql: &str) -> Result<(), DbError> {
        match self {
            Db::Sqlite(conn) => Ok(conn.execute_batch(sql)?),
            #[cfg(feature = "postgres")]
            Db::Postgres(client) => Ok(client.borrow_mut().batch_execute(sql)?),
        }
    }

    /// Opens a write transaction, rolled back when the guard is dropped uncommitted.
    pub(crate) fn begin(&self) -> Result<Tx<'_>, DbError> {
        self.batch(self.dialect().begin())?;
        Ok(Tx {
            db: self,
            open: true,
        })
    }
}

/// A write transaction on a [`Db`]: statements go through the `Db` as usual; [`Tx::commit`]
/// makes them durable, and dropping the guard without committing rolls them back.
pub(crate) struct Tx<'a> {
    db: &'a Db,
    open: bool,
}

impl Tx<'_> {
    /// Commits the transaction.
    pub(crate) fn commit(mut self) -> Result<(), DbError> {
        self.open = false;
        if let Err(e) = self.db.batch("COMMIT") {
            // A failed COMMIT on SQLite leaves the transaction open; close it.
            let _ = self.db.batch("ROLLBACK");
            return Err(e);
        }
        Ok(())
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        if self.open {
            // Nothing to do about a failed rollback: the connection is then broken and the
            // server (or SQLite's journal) discards the transaction.
            let _ = self.db.batch("ROLLBACK");
        }
    }
}

fn sqlite_arg(arg: &Arg<'_>) -> rusqlite::types::Value {
    use rusqlite::types::Value;
    match arg {
        Arg::Int(n) => Value::Integer(*n),
        Arg::Text(t) => Value::Text((*t).to_string()),
        Arg::OptText(t) => t.map_or(Value::Null, |t| Value::Text(t.to_string())),
        Arg::OptInt(n) => n.map_or(Value::Null, Value::Integer),
    }
}

/// An owned PostgreSQL parameter.
#[cfg(feature = "postgres")]
enum PgValue {
    Int(Option<i64>),
    Text(Option<String>),
}

#[cfg(feature = "postgres")]
impl PgValue {
    fn as_param(&self) -> &(dyn postgres::types::ToSql + Sync) {
        match self {
            PgValue::Int(n) => n,
            PgValue::Text(t) => t,
        }
    }
}

/// Prepares `sql` (with `?N` rewritten to `$N`) with every parameter's type given: `bigint`
/// for integers, `text` for text.
#[cfg(feature = "postgres")]
fn pg_prepare(
    client: &mut postgres::Client,
    sql: &str,
    args: &[Arg<'_>],
) -> Result<(postgres::Statement, Vec<PgValue>), DbError> {
    use postgres::types::Type;
    let (values, types): (Vec<PgValue>, Vec<Type>) = args
        .iter()
        .map(|a| match a {
            Arg::Int(n) => (PgValue::Int(Some(*n)), Type::INT8),
            Arg::OptInt(n) => (PgValue::Int(*n), Type::INT8),
            Arg::Text(t) => (PgValue::Text(Some((*t).to_string())), Type::TEXT),
            Arg::OptText(t) => (PgValue::Text(t.map(str::to_string)), Type::TEXT),
        })
        .unzip();
    let statement = client.prepare_typed(&numbered_to_dollar(sql), &types)?;
    Ok((statement, values))
}

#[cfg(feature = "postgres")]
fn pg_params(values: &[PgValue]) -> Vec<&(dyn postgres::types::ToSql + Sync)> {
    values.iter().map(PgValue::as_param).collect()
}

#[cfg(feature = "postgres")]
fn pg_row(row: &postgres::Row) -> Result<Row, DbError> {
    use postgres::types::Type;
    let cells = row
        .columns()
        .iter()
        .enumerate()
        .map(|(i, col)| {
            let t = col.type_();
            Ok(if *t == Type::INT8 {
                row.try_get::<_, Option<i64>>(i)?
                    .map_or(Cell::Null, Cell::Int)
            } else if *t == Type::INT4 {
                row.try_get::<_, Option<i32>>(i)?
                    .map_or(Cell::Null, |n| Cell::Int(i64::from(n)))
            } else if *t == Type::INT2 {
                row.try_get::<_, Option<i16>>(i)?
                    .map_or(Cell::Null, |n| Cell::Int(i64::from(n)))
            } else if *t == Type::BOOL {
                row.try_get::<_, Option<bool>>(i)?
                    .map_or(Cell::Null, |b| Cell::Int(i64::from(b)))
            } else if *t == Type::TEXT || *t == Type::VARCHAR || *t == Type::NAME {
                row.try_get::<_, Option<String>>(i)?
                    .map_or(Cell::Null, Cell::Text)
            } else {
                return Err(DbError::Type {
                    index: i,
                    why: format!("a value of type {t}, which the store never writes"),
                });
            })
        })
        .collect::<Result<Vec<_>, DbError>>()?;
    Ok(Row(cells))
}

/// `?N` parameters as PostgreSQL's `$N`, outside quoted text.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) fn numbered_to_dollar(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut quote: Option<char> = None;
    for c in sql.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '?' => {
                out.push('$');
                continue;
            }
            None => {}
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_parameters_become_dollars_outside_quotes() {
        assert_eq!(
            numbered_to_dollar("SELECT '?1', \"a?\" FROM t WHERE a = ?1 AND b = ?12"),
            "SELECT '?1', \"a?\" FROM t WHERE a = $1 AND b = $12"
        );
    }

    #[test]
    fn rows_name_what_is_wrong_with_a_cell() {
        let row = Row(vec![Cell::Null, Cell::Int(3), Cell::Text("x".into())]);
        assert_eq!(row.opt_text(0).unwrap(), None);
        assert_eq!(row.int(1).unwrap(), 3);
        assert_eq!(row.text(2).unwrap(), "x");
        assert!(row.text(0).is_err());
        assert!(row.text(1).is_err());
        assert!(row.int(2).is_err());
        assert_eq!(row.int(7).unwrap_err().index, 7);
    }
}
