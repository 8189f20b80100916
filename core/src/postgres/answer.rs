//! The answer of the schema's functions (its `answer` type), read from a row.

use std::time::Duration;

use tokio_postgres::Row;

use crate::error::{Error, ErrorKind, Result};
use crate::loss::LossReason;

/// What a hold, a look at the line or a renewal answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// The request holds its key under `fence`, with `revoke_in` left
    /// before its maxHold and `expires_in` before it runs out unless renewed.
    Granted {
        fence: u64,
        revoke_in: Option<Duration>,
        expires_in: Duration,
    },
    /// The request waits with `ahead` before it; its holder's lease runs
    /// out in `wait` (the time to look again, unless told first).
    Queued {
        ahead: usize,
        wait: Option<Duration>,
    },
    /// The key is held and the request did not ask to wait.
    NotHeld,
    /// The request is over, for this reason.
    Over(LossReason),
}

fn ms(row: &Row, column: &str) -> Result<Option<u64>> {
    let value: Option<i64> = row.try_get(column).map_err(|e| unreadable(&e))?;
    Ok(value.and_then(|v| u64::try_from(v).ok()))
}

fn unreadable(e: &tokio_postgres::Error) -> Error {
    Error::new(
        ErrorKind::Protocol,
        format!("PostgreSQL answered a row that is not Leasehold's: {e}"),
    )
}

/// Why a request is over, as the schema writes it.
pub(crate) fn reason(word: &str) -> Option<LossReason> {
    match word {
        "expired" => Some(LossReason::Expired),
        "revoked" => Some(LossReason::Revoked),
        "released" | "gave_up" | "unknown" => Some(LossReason::Unknown),
        _ => None,
    }
}

impl Answer {
    /// Reads an `answer` row.
    pub(crate) fn of(row: &Row) -> Result<Answer> {
        let word: String = row.try_get("answer").map_err(|e| unreadable(&e))?;
        let answer = match word.as_str() {
            "granted" => Answer::Granted {
                fence: ms(row, "fence")?.unwrap_or(0),
                revoke_in: ms(row, "revoke_in_ms")?.map(Duration::from_millis),
                expires_in: Duration::from_millis(ms(row, "expires_in_ms")?.unwrap_or(0)),
            },
            "queued" => Answer::Queued {
                ahead: ms(row, "ahead")?
                    .and_then(|a| usize::try_from(a).ok())
                    .unwrap_or(0),
                wait: ms(row, "expires_in_ms")?.map(Duration::from_millis),
            },
            "not_held" => Answer::NotHeld,
            other => Answer::Over(reason(other).ok_or_else(|| {
                Error::new(
                    ErrorKind::Protocol,
                    format!("PostgreSQL answered {other:?}, which Leasehold does not know"),
                )
            })?),
        };
        Ok(answer)
    }
}
