//! The wire protocol between the server store and its clients
//! (`docs/protocol.md` describes it byte by byte).
//!
//! A connection carries length-delimited frames: a 4-byte big-endian length,
//! then that many bytes of a [postcard]-encoded [`ClientFrame`] or
//! [`ServerFrame`]. The client speaks first with [`ClientFrame::Hello`];
//! after the server's [`ServerFrame::Welcome`], requests carry an id the
//! reply repeats, so many requests share one connection; grants to waiters
//! and losses are pushed by the server unasked.
//!
//! [postcard]: https://docs.rs/postcard

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind};
use crate::idgen::IdLayout;
use crate::loss::LossReason;
use crate::slots::{Owner, SlotLease, SlotRequest};
use crate::table::{GiveUp, Grant};

/// The protocol version this build speaks.
pub const VERSION: u16 = 6;

/// The largest frame either side accepts unless configured otherwise.
pub const DEFAULT_MAX_FRAME: usize = 64 * 1024;

/// The most bytes one lease's answer to `Renew` takes, counted generously.
pub const RENEW_ENTRY_BYTES: usize = 128;

/// The bytes of a `Reply` frame around its answers, counted generously.
pub const REPLY_ENVELOPE_BYTES: usize = 32;

/// How many leases one `Renew` may name so that its answer fits a frame of `max_frame` bytes.
pub fn max_renewals(max_frame: usize) -> usize {
    (max_frame.saturating_sub(REPLY_ENVELOPE_BYTES) / RENEW_ENTRY_BYTES).max(1)
}

/// The most bytes one key's answer to `HoldMany` takes, counted generously.
pub const HOLD_ENTRY_BYTES: usize = 128;

/// The bytes a key adds to a `HoldMany` besides its own: its request id
/// and the lengths, counted generously.
pub const HOLD_KEY_OVERHEAD: usize = 24;

/// The bytes of a `HoldMany` frame around its keys (the lock's name not
/// included), counted generously.
pub const HOLD_ENVELOPE_BYTES: usize = 96;

/// How many keys one `HoldMany` may name so that its answer fits a frame of `max_frame` bytes.
pub fn max_holds(max_frame: usize) -> usize {
    (max_frame.saturating_sub(REPLY_ENVELOPE_BYTES) / HOLD_ENTRY_BYTES).max(1)
}

/// What a token admits a connection to do (LOCK-14).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// List holders only.
    Read,
    /// Hold keys too.
    Write,
}

/// A frame from a client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClientFrame {
    /// The first frame of a connection.
    Hello {
        /// The protocol version the client speaks ([`VERSION`]).
        version: u16,
        /// The client's token, when the server requires one.
        token: Option<String>,
        /// Who the client is (WHO-01, `ConnectOptions::identity`): recorded
        /// with its leases and shown wherever they are.
        identity: String,
    },
    /// A request; the server's [`ServerFrame::Reply`] carries the same id.
    Request {
        /// Chosen by the client, unique among its requests in flight.
        id: u64,
        /// What is asked.
        body: Request,
    },
}

/// What a client asks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    /// Hold a key (LOCK-01, LOCK-03).
    Hold {
        /// The lock's name (empty: the manual leases' namespace).
        lock: String,
        /// The key.
        key: String,
        /// Recognises a retried request.
        request_id: u128,
        /// The lease's ttl in milliseconds.
        ttl_ms: u64,
        /// The lock's maxHold in milliseconds, if any.
        max_hold_ms: Option<u64>,
        /// Wait in line when the key is held.
        queue: bool,
        /// The renewal group the lease joins (`RenewGroup` renews it with
        /// the group); `None`: renewed by its id alone.
        group: Option<u128>,
    },
    /// Hold many keys of one lock in one frame (LOCK-22): each key is a
    /// `Hold` of its own with its own request id, answered in the order
    /// asked. At most [`max_holds`] keys.
    HoldMany {
        /// The lock's name (empty: the manual leases' namespace).
        lock: String,
        /// The keys, each with the request id that recognises it retried.
        keys: Vec<(String, u128)>,
        /// The leases' ttl in milliseconds.
        ttl_ms: u64,
        /// The lock's maxHold in milliseconds, if any.
        max_hold_ms: Option<u64>,
        /// Wait in line for a key that is held.
        queue: bool,
        /// The renewal group the leases join.
        group: Option<u128>,
    },
    /// Renew leases by id, many in one frame; each gets its own answer.
    Renew {
        /// The leases, each with the ttl (ms) to renew it for.
        leases: Vec<(u128, u64)>,
    },
    /// Release a lease by id.
    Release {
        /// The lease.
        lease_id: u128,
    },
    /// Withdraw a waiting request.
    GiveUp {
        /// The request.
        request_id: u128,
    },
    /// List the holders of a lock, or of every lock.
    List {
        /// The lock, or `None` for every lock.
        lock: Option<String>,
    },
    /// Answer at once: a round trip, to measure or keep a connection alive.
    Ping,
    /// Acquire a slot (SLOT-01).
    SlotAcquire {
        /// The namespace.
        namespace: String,
        /// Who asks.
        owner: Owner,
        /// The slots are `[0, limit)`.
        limit: u32,
        /// The lease's ttl in milliseconds.
        ttl_ms: u64,
        /// How far the ceiling lies beyond the expiry, in milliseconds.
        tolerance_ms: u64,
        /// What node numbers add to the slot.
        offset: u32,
        /// The slot to try after one the owner holds.
        preferred: Option<u32>,
        /// The bit layout of the namespace's IDs.
        layout: IdLayout,
    },
    /// Renew a slot lease (SLOT-04).
    SlotRenew {
        /// The lease as last returned.
        lease: WireSlotLease,
        /// The ttl in milliseconds.
        ttl_ms: u64,
    },
    /// Release a slot lease (SLOT-05).
    SlotRelease {
        /// The lease as last returned.
        lease: WireSlotLease,
        /// The largest timestamp issued under it, in milliseconds.
        last_issued: u64,
    },
    /// Renew every lease of a renewal group, however many, for `ttl_ms`.
    RenewGroup {
        /// The group, as the holds that joined it named it.
        group_id: u128,
        /// The ttl in milliseconds.
        ttl_ms: u64,
    },
    /// Who holds one key, and how many wait for it (WHO-02).
    Holder {
        /// The lock's name.
        lock: String,
        /// The key.
        key: String,
    },
}

/// A slot lease as the wire carries it; times in milliseconds since the
/// Unix epoch on the server's clock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireSlotLease {
    /// The namespace.
    pub namespace: String,
    /// The owner.
    pub owner: Owner,
    /// The slot.
    pub slot: u32,
    /// The namespace's offset.
    pub offset: u32,
    /// The fence.
    pub fence: u64,
    /// The floor.
    pub floor: u64,
    /// The expiry.
    pub expires_at: u64,
    /// The ceiling.
    pub ceiling: u64,
}

impl From<&SlotLease> for WireSlotLease {
    fn from(l: &SlotLease) -> WireSlotLease {
        WireSlotLease {
            namespace: l.namespace.clone(),
            owner: l.owner.clone(),
            slot: l.slot,
            offset: l.offset,
            fence: l.fence,
            floor: l.floor,
            expires_at: l.expires_at,
            ceiling: l.ceiling,
        }
    }
}

impl From<WireSlotLease> for SlotLease {
    fn from(w: WireSlotLease) -> SlotLease {
        SlotLease {
            namespace: w.namespace,
            owner: w.owner,
            slot: w.slot,
            offset: w.offset,
            fence: w.fence,
            floor: w.floor,
            expires_at: w.expires_at,
            ceiling: w.ceiling,
        }
    }
}

impl SlotRequest {
    /// The request as the wire carries it.
    pub fn to_wire(&self) -> Request {
        Request::SlotAcquire {
            namespace: self.namespace.clone(),
            owner: self.owner.clone(),
            limit: self.spec.limit,
            ttl_ms: millis(self.ttl),
            tolerance_ms: millis(self.spec.tolerance),
            offset: self.spec.offset,
            preferred: self.preferred,
            layout: self.spec.layout,
        }
    }
}

/// A lease as the wire carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireGrant {
    /// The request that was granted.
    pub request_id: u128,
    /// The lease's id.
    pub lease_id: u128,
    /// The lease's fence.
    pub fence: u64,
    /// Milliseconds before maxHold revokes the lease, at the moment of the answer.
    pub revoke_in_ms: Option<u64>,
}

/// A key's holder, as `List` and `Holder` answer it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireHolder {
    /// The lock's name.
    pub lock: String,
    /// The key.
    pub key: String,
    /// The holder's fence.
    pub fence: u64,
    /// Milliseconds since the grant.
    pub held_ms: u64,
    /// Milliseconds before the store lets the lease go unless renewed.
    pub expires_in_ms: Option<u64>,
    /// The identity of the client that took the lease (WHO-01).
    pub identity: String,
    /// How many requests wait in the key's line.
    pub waiting: u64,
}

/// A failure as the wire carries it: an ERR-01 code and a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireError {
    /// The ERR-01 code (`"Lost"`, `"InvalidTtl"`, …).
    pub code: String,
    /// For people.
    pub message: String,
    /// For `Lost`: why (`"expired"`, `"revoked"`, …).
    pub reason: Option<String>,
}

/// What the server answers a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Reply {
    /// The key is the request's.
    Granted(WireGrant),
    /// The key is held and the request did not wait.
    NotHeld,
    /// The request waits in line; its grant will be pushed.
    Queued {
        /// How many requests are ahead.
        ahead: u64,
    },
    /// One answer per renewed lease, in the order asked.
    Renewed(Vec<Result<WireGrant, WireError>>),
    /// The lease was released.
    Released,
    /// What giving up did.
    GaveUp(WireGiveUp),
    /// The holders asked for.
    Holders(Vec<WireHolder>),
    /// The answer to `Ping`.
    Pong,
    /// The answer to `SlotAcquire`: the lease, or `None` when every slot is held.
    SlotAcquired(Option<WireSlotLease>),
    /// The answer to `SlotRenew`: the renewed lease, or `None` when it is no longer held.
    SlotRenewed(Option<WireSlotLease>),
    /// The answer to `SlotRelease`: whether it released.
    SlotReleased(bool),
    /// The answer to `RenewGroup`: every lease still in the group is renewed.
    GroupRenewed,
    /// The answer to `HoldMany`: one answer per key in the order asked,
    /// each what a `Hold` of it alone would have answered (`Granted`,
    /// `NotHeld` or `Queued`) or why it failed.
    HeldMany(Vec<Result<Reply, WireError>>),
    /// The answer to `Holder`: the key's holder, or `None` when it is free.
    Holder(Option<WireHolder>),
}

/// [`GiveUp`] on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WireGiveUp {
    /// The request left the line.
    LeftLine,
    /// The request had been granted; the lease was released.
    Released(u128),
    /// No such request.
    Unknown,
}

/// A frame from the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ServerFrame {
    /// The answer to a good `Hello`.
    Welcome {
        /// The protocol version the server speaks.
        version: u16,
        /// The server's epoch: it changes every time the store opens (LOCK-15).
        epoch: u32,
        /// What this connection may do.
        role: Role,
        /// The largest frame the server accepts.
        max_frame: u32,
    },
    /// The connection is refused or closed for `error`; nothing follows.
    Goodbye(WireError),
    /// The answer to request `id`.
    Reply {
        /// The request's id.
        id: u64,
        /// The answer, or why there is none.
        body: Result<Reply, WireError>,
    },
    /// A request that waited in line was granted (pushed).
    Granted(WireGrant),
    /// A request that waited in line failed (pushed).
    Failed {
        /// The request.
        request_id: u128,
        /// Why.
        error: WireError,
    },
    /// A lease ended without its holder (pushed): expiry, maxHold.
    Lost {
        /// The lease.
        lease_id: u128,
        /// Why (`"expired"`, `"revoked"`, …).
        reason: String,
    },
}

impl From<&Error> for WireError {
    fn from(e: &Error) -> WireError {
        WireError {
            code: e.kind().code().to_owned(),
            message: e.message().to_owned(),
            reason: e.loss_reason().map(|r| r.as_str().to_owned()),
        }
    }
}

impl From<WireError> for Error {
    fn from(w: WireError) -> Error {
        let kind = ErrorKind::from_code(&w.code).unwrap_or(ErrorKind::Internal);
        match w.reason.as_deref().and_then(LossReason::parse) {
            Some(reason) if kind == ErrorKind::Lost => Error::lost(reason),
            _ => Error::new(kind, w.message),
        }
    }
}

impl From<&Grant> for WireGrant {
    fn from(g: &Grant) -> WireGrant {
        WireGrant {
            request_id: g.request_id.0,
            lease_id: g.lease_id.0,
            fence: g.fence,
            revoke_in_ms: g.revoke_in.map(millis),
        }
    }
}

impl From<GiveUp> for WireGiveUp {
    fn from(g: GiveUp) -> WireGiveUp {
        match g {
            GiveUp::LeftLine => WireGiveUp::LeftLine,
            GiveUp::Released(id) => WireGiveUp::Released(id.0),
            GiveUp::Unknown => WireGiveUp::Unknown,
        }
    }
}

impl From<WireGiveUp> for GiveUp {
    fn from(g: WireGiveUp) -> GiveUp {
        match g {
            WireGiveUp::LeftLine => GiveUp::LeftLine,
            WireGiveUp::Released(id) => GiveUp::Released(crate::ids::LeaseId(id)),
            WireGiveUp::Unknown => GiveUp::Unknown,
        }
    }
}

/// A duration in whole milliseconds, saturating.
pub fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The room a frame's payload starts with: a hold, a release or an answer
/// to one fits, so that encoding them does not grow the buffer.
const PAYLOAD_ROOM: usize = 128;

/// Encodes a frame's payload (without the length prefix).
pub fn encode<T: Serialize>(frame: &T) -> Result<Vec<u8>, Error> {
    postcard::to_extend(frame, Vec::with_capacity(PAYLOAD_ROOM))
        .map_err(|e| Error::new(ErrorKind::Internal, format!("encode: {e}")))
}

/// The version a client's first frame says it speaks, when the frame begins
/// as a `Hello` of any version does (the variant, then the version), though
/// the rest may not decode: the server's answer to an older client names
/// the versions.
pub fn hello_version(bytes: &[u8]) -> Option<u16> {
    #[derive(Deserialize)]
    enum Head {
        Hello { version: u16 },
    }
    match postcard::take_from_bytes::<Head>(bytes) {
        Ok((Head::Hello { version }, _)) => Some(version),
        Err(_) => None,
    }
}

/// Decodes a frame's payload; anything that is not exactly one frame fails `Protocol`.
pub fn decode<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, Error> {
    let (frame, rest) = postcard::take_from_bytes(bytes)
        .map_err(|e| Error::new(ErrorKind::Protocol, format!("bad frame: {e}")))?;
    if !rest.is_empty() {
        return Err(Error::new(
            ErrorKind::Protocol,
            format!("{} bytes after the frame", rest.len()),
        ));
    }
    Ok(frame)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let frames = [
            ClientFrame::Hello {
                version: VERSION,
                token: Some("t".into()),
                identity: "n".into(),
            },
            ClientFrame::Request {
                id: 7,
                body: Request::Hold {
                    lock: "l".into(),
                    key: "k".into(),
                    request_id: u128::MAX,
                    ttl_ms: 10_000,
                    max_hold_ms: None,
                    queue: true,
                    group: Some(3),
                },
            },
            ClientFrame::Request {
                id: 8,
                body: Request::Renew {
                    leases: vec![(1, 2), (3, 4)],
                },
            },
            ClientFrame::Request {
                id: 10,
                body: Request::HoldMany {
                    lock: "l".into(),
                    keys: vec![("a".into(), 1), ("b".into(), u128::MAX)],
                    ttl_ms: 10_000,
                    max_hold_ms: Some(60_000),
                    queue: false,
                    group: None,
                },
            },
            ClientFrame::Request {
                id: 9,
                body: Request::RenewGroup {
                    group_id: u128::MAX,
                    ttl_ms: 10_000,
                },
            },
            ClientFrame::Request {
                id: 11,
                body: Request::Holder {
                    lock: "l".into(),
                    key: "k".into(),
                },
            },
        ];
        for f in frames {
            let bytes = encode(&f).unwrap();
            assert_eq!(decode::<ClientFrame>(&bytes).unwrap(), f);
        }
    }

    #[test]
    fn the_largest_answer_to_hold_many_fits_its_frame() {
        let grant = Reply::Granted(WireGrant {
            request_id: u128::MAX,
            lease_id: u128::MAX,
            fence: u64::MAX,
            revoke_in_ms: Some(u64::MAX),
        });
        let refused = WireError {
            code: "UNAVAILABLE".into(),
            message: "this connection already holds or waits for 1000000000 keys \
                      (--max-keys-per-connection)"
                .into(),
            reason: None,
        };
        for entry in [Ok(grant), Err(refused)] {
            let n = max_holds(DEFAULT_MAX_FRAME);
            let frame = ServerFrame::Reply {
                id: u64::MAX,
                body: Ok(Reply::HeldMany(vec![entry; n])),
            };
            assert!(encode(&frame).unwrap().len() <= DEFAULT_MAX_FRAME);
        }
    }

    // ERR-02: garbage, truncated and trailing bytes are Protocol errors, never panics.
    #[test]
    fn err_02_bad_payloads_are_protocol_errors() {
        let good = encode(&ClientFrame::Request {
            id: 1,
            body: Request::Ping,
        })
        .unwrap();
        let mut trailing = good.clone();
        trailing.push(0);
        for bad in [
            vec![0xff; 9],
            good[..good.len() - 1].to_vec(),
            trailing,
            vec![],
        ] {
            assert_eq!(
                decode::<ClientFrame>(&bad).unwrap_err().kind(),
                ErrorKind::Protocol
            );
        }
    }

    #[test]
    fn an_older_hello_still_names_its_version() {
        #[derive(Serialize)]
        enum OldClientFrame {
            Hello { version: u16, token: Option<String> },
        }
        let old = encode(&OldClientFrame::Hello {
            version: 3,
            token: None,
        })
        .unwrap();
        assert_eq!(
            decode::<ClientFrame>(&old).unwrap_err().kind(),
            ErrorKind::Protocol
        );
        assert_eq!(hello_version(&old), Some(3));
        let now = encode(&ClientFrame::Hello {
            version: VERSION,
            token: None,
            identity: "api-7".into(),
        })
        .unwrap();
        assert_eq!(hello_version(&now), Some(VERSION));
        let request = encode(&ClientFrame::Request {
            id: 1,
            body: Request::Ping,
        })
        .unwrap();
        assert_eq!(hello_version(&request), None);
    }

    #[test]
    fn wire_errors_keep_code_and_reason() {
        let e: Error = WireError::from(&Error::lost(LossReason::Revoked)).into();
        assert_eq!(
            (e.kind(), e.loss_reason()),
            (ErrorKind::Lost, Some(LossReason::Revoked))
        );
        let e: Error = WireError {
            code: "WAIT_TIMEOUT".into(),
            message: "m".into(),
            reason: None,
        }
        .into();
        assert_eq!(e.kind(), ErrorKind::WaitTimeout);
    }
}
