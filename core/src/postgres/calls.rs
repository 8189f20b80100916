//! The calls the driver makes: each one statement (one transaction), sent
//! unnamed (`query_typed`) on a connection from the pool, each try bounded
//! by the attempt timeout and the whole call by the call's bound. A try
//! that fails for want of the database (a connection lost, a server
//! shutting down, a standby reached during a failover) is made again on a
//! fresh connection: every call may be, as its function answers a retry as
//! it answered the first try (PG-05).

use std::time::Duration;

use deadpool_postgres::{Object, Pool};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::Row;

use crate::error::{Error, ErrorKind, Result};

/// The first and the longest pause between tries when the database is away.
const RETRY_FIRST: Duration = Duration::from_millis(20);
const RETRY_CAP: Duration = Duration::from_millis(250);

/// How long the driver's calls and each of their tries may take.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    /// A whole call, all its tries together.
    pub(crate) call: Duration,
    /// One try.
    pub(crate) attempt: Duration,
}

/// The pool and the bounds of every call.
#[derive(Clone)]
pub(crate) struct Calls {
    pub(crate) pool: Pool,
    pub(crate) bounds: Bounds,
}

/// A connection taken from the pool for one try; unless the try ends well,
/// it leaves the pool when dropped (it may be stuck in a statement, or broken).
struct Taken(Option<Object>);

impl Taken {
    fn keep(mut self) {
        drop(self.0.take());
    }
}

impl Drop for Taken {
    fn drop(&mut self) {
        if let Some(object) = self.0.take() {
            drop(Object::take(object));
        }
    }
}

/// One statement's parameters, each with its type.
pub(crate) type Params<'a> = [(&'a (dyn ToSql + Sync), Type)];

impl Calls {
    /// Runs `sql` with `params`, tried again as the module says; answers its rows.
    pub(crate) async fn query(
        &self,
        doing: &str,
        sql: &str,
        params: &Params<'_>,
    ) -> Result<Vec<Row>> {
        let until = tokio::time::Instant::now() + self.bounds.call;
        let mut pause = RETRY_FIRST;
        loop {
            let attempt_until = (tokio::time::Instant::now() + self.bounds.attempt).min(until);
            let tried = tokio::time::timeout_at(attempt_until, async {
                let object = self.pool.get().await.map_err(|e| pool_error(doing, e))?;
                let taken = Taken(Some(object));
                let client = taken.0.as_ref().expect("just taken");
                let rows = client
                    .query_typed(sql, params)
                    .await
                    .map_err(|e| of(doing, &e))?;
                taken.keep();
                Ok(rows)
            })
            .await;
            let e = match tried {
                Ok(Ok(rows)) => return Ok(rows),
                Ok(Err(e)) => e,
                Err(_) => timed_out(doing),
            };
            if !matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::Timeout) {
                return Err(e);
            }
            let again = tokio::time::Instant::now() + pause;
            if again >= until {
                return Err(e);
            }
            tokio::time::sleep_until(again).await;
            pause = (pause * 2).min(RETRY_CAP);
        }
    }

    /// Runs `sql` and answers its one row.
    pub(crate) async fn query_one(
        &self,
        doing: &str,
        sql: &str,
        params: &Params<'_>,
    ) -> Result<Row> {
        self.query(doing, sql, params)
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Protocol,
                    format!("PostgreSQL answered no row while {doing}"),
                )
            })
    }
}

fn timed_out(doing: &str) -> Error {
    Error::new(
        ErrorKind::Timeout,
        format!("PostgreSQL did not answer in time while {doing}"),
    )
}

fn pool_error(doing: &str, e: deadpool_postgres::PoolError) -> Error {
    match e {
        deadpool_postgres::PoolError::Backend(e) => of(doing, &e),
        deadpool_postgres::PoolError::Timeout(_) => timed_out(doing),
        other => Error::new(
            ErrorKind::Unavailable,
            format!("no connection to PostgreSQL while {doing}: {other}"),
        ),
    }
}

/// Whether a database error may pass on another connection or a moment
/// later: the connection's class, a server shutting down or starting, a
/// standby that refuses writes (a failover under way), too many
/// connections, a serialization failure or a deadlock.
fn worth_another_try(code: &SqlState) -> bool {
    let code = code.code();
    code.starts_with("08")
        || matches!(
            code,
            "57P01" | "57P02" | "57P03" | "25006" | "53300" | "40001" | "40P01"
        )
}

/// The ERR-01 error of a failed statement or connection.
pub(crate) fn of(doing: &str, e: &tokio_postgres::Error) -> Error {
    let kind = match e.code() {
        Some(code) if worth_another_try(code) => ErrorKind::Unavailable,
        Some(code) if code.code() == "28P01" || code.code() == "28000" => {
            ErrorKind::Unauthenticated
        }
        Some(code) if code.code() == "42501" => ErrorKind::PermissionDenied,
        Some(_) => ErrorKind::Internal,
        None => ErrorKind::Unavailable,
    };
    let detail = match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => {
            // The causes say what the top does not (a certificate refused, a connection reset).
            let mut text = e.to_string();
            let mut cause = std::error::Error::source(e);
            while let Some(c) = cause {
                text.push_str(": ");
                text.push_str(&c.to_string());
                cause = c.source();
            }
            text
        }
    };
    Error::new(kind, format!("PostgreSQL failed while {doing}: {detail}"))
}
