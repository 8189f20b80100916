//! The shared scenario format: what every language's runner loads from
//! `spec-tests/scenarios/*.json` (its JSON Schema is `spec-tests/schema.json`).
//!
//! A scenario names the contracts it shows, the embedded store it runs on
//! (always on a virtual clock) and a list of steps. Every step is an object
//! whose `"step"` field names it; an unknown step, an unknown field or a
//! value outside a field's domain fails the scenario when it loads, never
//! silently skips.
//!
//! Actors are named by the scenario: a *holder* (`"holder": "a"`) is either
//! a hold of a lock's key (steps `hold`, `try_hold`) or a manual lease
//! (`try_acquire`, `acquire`). Holder names are unique within a scenario;
//! a holder that got nothing (`not_held`, an error) is not registered, so its
//! name may be used again.
//!
//! ```
//! let text = r#"{
//!   "id": "doc-example", "contracts": ["LOCK-17"], "title": "tryHold on a held key",
//!   "store": {"renewal": false, "push": true},
//!   "steps": [
//!     {"step": "open_lock", "lock": "l"},
//!     {"step": "hold", "holder": "a", "lock": "l", "key": "k", "expect": "granted"},
//!     {"step": "try_hold", "holder": "b", "lock": "l", "key": "k", "expect": "not_held"},
//!     {"step": "end", "holder": "a"}
//!   ]
//! }"#;
//! let scenario = spec_tests::scenario::Scenario::from_json(text).unwrap();
//! assert_eq!(scenario.steps.len(), 4);
//! ```

use std::fmt;

use leasehold::{ErrorKind, LossReason};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One scenario file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// A stable id, the file's name without `.json`.
    pub id: String,
    /// The contract IDs the scenario shows (`LOCK-01`, `MANUAL-03`, `ERR-01`, …).
    pub contracts: Vec<String>,
    /// One line for people.
    pub title: String,
    /// The embedded store the scenario runs on.
    pub store: StoreSpec,
    /// What happens, in order.
    pub steps: Vec<Step>,
}

/// The embedded store of a scenario, always on a virtual clock that only the
/// `advance` step moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreSpec {
    /// Whether leases run out unless renewed (as on a server store): holds
    /// then renew in the background (LOCK-06) and keep a holder's deadline (LOCK-04).
    pub renewal: bool,
    /// Whether the store pushes grants to waiters; without it, waiting polls (MANUAL-02).
    pub push: bool,
}

/// A duration as the bindings take it: `"10s"`, `"1m"`, `"250ms"`, `"1h"`.
/// Kept as written: for options of a lock or a lease, a string that does not
/// parse is refused `InvalidTtl`, as a binding refuses it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Dur(pub String);

impl Dur {
    /// The duration, parsed as every binding parses it.
    pub fn parse(&self) -> leasehold::Result<std::time::Duration> {
        leasehold::duration::parse(&self.0)
    }
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An error code, as `ErrorKind::code()` writes it (ERR-01): `"Lost"`,
/// `"InvalidTtl"`, `"EmptyName"`, `"WaitTimeout"`, `"Cancelled"`, `"Closed"`, …
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Code(pub ErrorKind);

impl Serialize for Code {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0.code())
    }
}

impl<'de> Deserialize<'de> for Code {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Code, D::Error> {
        let text = String::deserialize(d)?;
        ErrorKind::ALL
            .into_iter()
            .find(|k| k.code() == text)
            .map(Code)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown error code {text:?}")))
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.code())
    }
}

/// Why a lease was lost, as `LossReason::as_str()` writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// Its ttl ran out (LOCK-04, LOCK-05).
    Expired,
    /// Revoked at maxHold (LOCK-12).
    Revoked,
    /// The store no longer knows its id (LOCK-08).
    Unknown,
    /// The store restarted (LOCK-15).
    Restarted,
    /// The store was closed.
    Closed,
}

impl Reason {
    /// The core's reason of the same name.
    pub fn loss_reason(self) -> LossReason {
        match self {
            Reason::Expired => LossReason::Expired,
            Reason::Revoked => LossReason::Revoked,
            Reason::Unknown => LossReason::Unknown,
            Reason::Restarted => LossReason::Restarted,
            Reason::Closed => LossReason::Closed,
        }
    }
}

/// What a call that may wait in line is expected to do at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitExpect {
    /// It got the key.
    Granted,
    /// It waits in line (or polls) for the key.
    Waiting,
}

/// What a call that never waits is expected to answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TryExpect {
    /// It got the key.
    Granted,
    /// The key is held: "not held" (`None`, `null`, `false`), not an error.
    NotHeld,
}

/// A call expected to succeed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OkExpect {
    /// It succeeds.
    Ok,
}

/// How a held function ends (step `end`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndBy {
    /// It returns normally.
    #[default]
    Return,
    /// It fails with its own error (raises, throws, returns an error) carrying `message`.
    Error,
    /// It panics (Rust, Go); languages without panics throw a non-error value.
    Panic,
    /// The task running it is cancelled (a dropped future, a cancelled task or context).
    Cancel,
}

/// What `hold` answers once its function ended (step `end`), unless an error code is expected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndExpect {
    /// `hold` succeeds with the function's value.
    Ok,
    /// `hold` fails with the function's own error, unchanged.
    FunctionError,
    /// The panic goes on unwinding out of `hold`.
    Panic,
    /// `hold` ends cancelled with the task.
    Cancelled,
}

/// A time left before a holder's deadline: a duration, or `"none"` when the
/// lease has no deadline (an embedded lease without maxHold).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Remaining(pub String);

/// One step of a scenario. `holder` names an actor, `lock` a lock opened by
/// `open_lock`. Where a step has `expect` and `expect_error`, exactly one is
/// given when the step's outcome is not obvious (`hold`, `try_hold`,
/// `try_acquire`, `acquire`); elsewhere at most one, and none means "ok".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// Opens a lock (`store.lock(name, ttl=…, maxHold=…, wait=…, margin=…)`):
    /// nothing is sent to the store; bad options fail at once (LOCK-13).
    OpenLock {
        /// The name later steps use for the lock.
        lock: String,
        /// The lock's name in the store; defaults to `lock`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// How long a lease lasts without renewal (10 s when not given).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ttl: Option<Dur>,
        /// The store revokes a lease this long after its grant.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_hold: Option<Dur>,
        /// The longest time a hold spends in line.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wait: Option<Dur>,
        /// How long before the store's expiry the holder declares a loss.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        margin: Option<Dur>,
        /// `"ok"` (the default).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect: Option<OkExpect>,
        /// The code opening fails with.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect_error: Option<Code>,
    },
    /// Starts `hold` of `key` by `holder`: its function runs, keeping the key,
    /// until an `end` step ends it.
    Hold {
        /// The holder's name.
        holder: String,
        /// The lock.
        lock: String,
        /// The key.
        key: String,
        /// A bound on waiting in line for this call, over the lock's own.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wait: Option<Dur>,
        /// `granted` or `waiting`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect: Option<WaitExpect>,
        /// The code `hold` fails with at once.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect_error: Option<Code>,
    },
    /// `tryHold` of `key`: never waits (LOCK-17). When granted, its function
    /// runs until an `end` step; when not held, nothing runs.
    TryHold {
        /// The holder's name.
        holder: String,
        /// The lock.
        lock: String,
        /// The key.
        key: String,
        /// `granted` or `not_held`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect: Option<TryExpect>,
        /// The code `tryHold` fails with.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect_error: Option<Code>,
    },
    /// Ends the function a holder of a key runs, and checks what `hold` answers.
    End {
        /// The holder.
        holder: String,
        /// How the function ends (`return` when not given).
        #[serde(default)]
        by: EndBy,
        /// The message of the function's own error or panic.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// `ok` (the default), `function_error`, `panic` or `cancelled`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect: Option<EndExpect>,
        /// The code `hold` fails with (for a lost lease: `Lost`, LOCK-10).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect_error: Option<Code>,
        /// With `expect_error`: the message of the function's own error,
        /// which must be reachable as the error's cause (LOCK-10).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect_cause: Option<String>,
    },
    /// A waiting holder gives up (a cancelled token, task, signal or context).
    Cancel {
        /// The holder.
        holder: String,
    },
    /// The holder (of a key or a manual lease) has been granted by now.
    ExpectGranted {
        /// The holder.
        holder: String,
    },
    /// The holder still waits for its key.
    ExpectWaiting {
        /// The holder.
        holder: String,
    },
    /// The holder's waiting call failed with `error` (`WaitTimeout`, `Cancelled`, `Closed`, …).
    ExpectFailed {
        /// The holder.
        holder: String,
        /// The code.
        error: Code,
    },
    /// The holder's lease was lost for `reason`, and its function was told (LOCK-09).
    ExpectLost {
        /// The holder.
        holder: String,
        /// Why.
        reason: Reason,
    },
    /// The holder's lease was not lost.
    ExpectNotLost {
        /// The holder.
        holder: String,
    },
    /// The time left before the holder's deadline (LOCK-04), exactly.
    ExpectRemaining {
        /// The holder.
        holder: String,
        /// A duration, or `"none"`.
        remaining: Remaining,
    },
    /// Holder `holder`'s fence is larger than holder `than`'s (LOCK-02, MANUAL-07).
    ExpectFenceGreater {
        /// The later holder.
        holder: String,
        /// The earlier holder.
        than: String,
    },
    /// Moves the virtual clock by `by`, letting every timer due meanwhile fire in order.
    Advance {
        /// How far.
        by: Dur,
    },
    /// `tryAcquire(name, ttl)`: a manual lease or "not held" at once (MANUAL-01).
    TryAcquire {
        /// The holder's name.
        holder: String,
        /// The lease's name.
        name: String,
        /// Its ttl.
        ttl: Dur,
        /// `granted` or `not_held`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect: Option<TryExpect>,
        /// The code it fails with.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect_error: Option<Code>,
    },
    /// Starts `acquire(name, ttl, wait)`, which waits for the lease (MANUAL-02).
    Acquire {
        /// The holder's name.
        holder: String,
        /// The lease's name.
        name: String,
        /// Its ttl, counted from the grant.
        ttl: Dur,
        /// The bound on waiting; unbounded when not given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wait: Option<Dur>,
        /// `granted` or `waiting`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect: Option<WaitExpect>,
        /// The code it fails with at once.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect_error: Option<Code>,
    },
    /// `lease.extend(by)` of a manual lease (MANUAL-03).
    Extend {
        /// The holder of the manual lease.
        holder: String,
        /// The new expiry is now + `by`.
        by: Dur,
        /// How many tasks make the call at once, each expecting the same outcome (MANUAL-06).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tasks: Option<u32>,
        /// `ok` (the default).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect: Option<OkExpect>,
        /// The code it fails with.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect_error: Option<Code>,
    },
    /// `lease.release()` of a manual lease (MANUAL-04).
    Release {
        /// The holder of the manual lease.
        holder: String,
        /// How many tasks make the call at once, each expecting the same outcome (MANUAL-06).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tasks: Option<u32>,
        /// `ok` (the default).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect: Option<OkExpect>,
        /// The code it fails with.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect_error: Option<Code>,
    },
    /// Closes the store: its leases end (reason `closed`), waiting calls fail `Closed`.
    Close {},
    /// Closes the store and opens a new embedded store on the same clock (a
    /// restart): every lock is opened again with its options; fences go on
    /// growing (LOCK-02).
    Reopen {},
}

impl Step {
    /// Every step's name, as the `"step"` field writes it, in the order of
    /// the enum (the schema test checks that `schema.json` has the same).
    pub const NAMES: [&'static str; 19] = [
        "open_lock",
        "hold",
        "try_hold",
        "end",
        "cancel",
        "expect_granted",
        "expect_waiting",
        "expect_failed",
        "expect_lost",
        "expect_not_lost",
        "expect_remaining",
        "expect_fence_greater",
        "advance",
        "try_acquire",
        "acquire",
        "extend",
        "release",
        "close",
        "reopen",
    ];

    /// The step's name, as the `"step"` field writes it.
    pub fn name(&self) -> &'static str {
        match self {
            Step::OpenLock { .. } => "open_lock",
            Step::Hold { .. } => "hold",
            Step::TryHold { .. } => "try_hold",
            Step::End { .. } => "end",
            Step::Cancel { .. } => "cancel",
            Step::ExpectGranted { .. } => "expect_granted",
            Step::ExpectWaiting { .. } => "expect_waiting",
            Step::ExpectFailed { .. } => "expect_failed",
            Step::ExpectLost { .. } => "expect_lost",
            Step::ExpectNotLost { .. } => "expect_not_lost",
            Step::ExpectRemaining { .. } => "expect_remaining",
            Step::ExpectFenceGreater { .. } => "expect_fence_greater",
            Step::Advance { .. } => "advance",
            Step::TryAcquire { .. } => "try_acquire",
            Step::Acquire { .. } => "acquire",
            Step::Extend { .. } => "extend",
            Step::Release { .. } => "release",
            Step::Close {} => "close",
            Step::Reopen {} => "reopen",
        }
    }

    /// Checks what serde cannot: which expectations go together.
    fn check(&self) -> Result<(), String> {
        let (has_expect, has_error, required) = match self {
            Step::OpenLock {
                expect,
                expect_error,
                ..
            }
            | Step::Extend {
                expect,
                expect_error,
                ..
            }
            | Step::Release {
                expect,
                expect_error,
                ..
            } => (expect.is_some(), expect_error.is_some(), false),
            Step::Hold {
                expect,
                expect_error,
                ..
            }
            | Step::Acquire {
                expect,
                expect_error,
                ..
            } => (expect.is_some(), expect_error.is_some(), true),
            Step::TryHold {
                expect,
                expect_error,
                ..
            }
            | Step::TryAcquire {
                expect,
                expect_error,
                ..
            } => (expect.is_some(), expect_error.is_some(), true),
            Step::End {
                by,
                expect,
                expect_error,
                expect_cause,
                message,
                ..
            } => {
                if expect_cause.is_some() && expect_error.is_none() {
                    return Err("expect_cause goes with expect_error".into());
                }
                if message.is_some() && !matches!(by, EndBy::Error | EndBy::Panic) {
                    return Err("message goes with by: error or panic".into());
                }
                (expect.is_some(), expect_error.is_some(), false)
            }
            _ => (false, false, false),
        };
        if has_expect && has_error {
            return Err("give expect or expect_error, not both".into());
        }
        if required && !has_expect && !has_error {
            return Err("this step needs expect or expect_error".into());
        }
        if let Step::Extend { tasks: Some(0), .. } | Step::Release { tasks: Some(0), .. } = self {
            return Err("tasks must be at least 1".into());
        }
        Ok(())
    }
}

/// Why a scenario file could not be loaded.
#[derive(Debug)]
pub struct FormatError(pub String);

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FormatError {}

/// Whether `id` is written as a contract ID (`LOCK-01`, `MANUAL-07`, `SLOT-02`, `ERR-01`).
pub fn is_contract_id(id: &str) -> bool {
    let Some((family, number)) = id.split_once('-') else {
        return false;
    };
    matches!(family, "LOCK" | "MANUAL" | "SLOT" | "ERR")
        && number.len() == 2
        && number.bytes().all(|b| b.is_ascii_digit())
}

impl Scenario {
    /// Reads a scenario from its JSON text, refusing unknown steps and fields
    /// and expectations that do not go together.
    pub fn from_json(text: &str) -> Result<Scenario, FormatError> {
        let scenario: Scenario =
            serde_json::from_str(text).map_err(|e| FormatError(e.to_string()))?;
        scenario.check()?;
        Ok(scenario)
    }

    fn check(&self) -> Result<(), FormatError> {
        if self.id.is_empty() {
            return Err(FormatError("the id is empty".into()));
        }
        if self.contracts.is_empty() {
            return Err(FormatError(format!("{}: no contract named", self.id)));
        }
        if let Some(bad) = self.contracts.iter().find(|c| !is_contract_id(c)) {
            return Err(FormatError(format!(
                "{}: {bad:?} is not a contract ID",
                self.id
            )));
        }
        if self.steps.is_empty() {
            return Err(FormatError(format!("{}: no steps", self.id)));
        }
        for (i, step) in self.steps.iter().enumerate() {
            step.check().map_err(|e| {
                FormatError(format!("{}: step {i} ({}): {e}", self.id, step.name()))
            })?;
        }
        Ok(())
    }
}
