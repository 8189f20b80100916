//! Why a lease was lost: one reason, delivered once (LOCK-09).

use std::fmt;

/// Why a lease ended without its holder letting it go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LossReason {
    /// Its ttl ran out: no renewal was confirmed before the holder's deadline,
    /// or the store let it go (LOCK-04, LOCK-05).
    Expired,
    /// The store revoked it at grant time + maxHold (LOCK-12).
    Revoked,
    /// The store no longer knows its id: released elsewhere, or given up (LOCK-08).
    Unknown,
    /// The store restarted and holds no lease from before (LOCK-15).
    Restarted,
    /// The store was closed while the lease was held.
    Closed,
}

impl LossReason {
    /// Every reason, in the order of their [`LossReason::code`]s.
    pub(crate) const ALL: [LossReason; 5] = [
        LossReason::Expired,
        LossReason::Revoked,
        LossReason::Unknown,
        LossReason::Restarted,
        LossReason::Closed,
    ];

    /// The reason as a small number, for state kept in atomics.
    pub(crate) fn code(self) -> u8 {
        self as u8
    }

    /// The reason of [`LossReason::code`] `code`.
    pub(crate) fn from_code(code: u8) -> Option<LossReason> {
        Self::ALL.get(usize::from(code)).copied()
    }

    /// The reason as the scenarios and the bindings write it: `expired`, `revoked`, …
    pub fn as_str(self) -> &'static str {
        match self {
            LossReason::Expired => "expired",
            LossReason::Revoked => "revoked",
            LossReason::Unknown => "unknown",
            LossReason::Restarted => "restarted",
            LossReason::Closed => "closed",
        }
    }

    /// The reason written as [`LossReason::as_str`] writes it.
    pub fn parse(text: &str) -> Option<LossReason> {
        Self::ALL.into_iter().find(|r| r.as_str() == text)
    }

    /// A sentence for the `Lost` error's message.
    pub fn describe(self) -> &'static str {
        match self {
            LossReason::Expired => "the lease ran out before a renewal was confirmed",
            LossReason::Revoked => "the store revoked the lease at its maxHold",
            LossReason::Unknown => "the store does not know the lease (released or never granted)",
            LossReason::Restarted => "the store restarted and holds no lease from before",
            LossReason::Closed => "the store was closed",
        }
    }
}

impl fmt::Display for LossReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
