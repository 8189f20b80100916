//! ID generators (IDGEN): unique 64-bit IDs issued on a slot lease by the
//! core's `leasehold::idgen::IdGenerator`, and the layouts of their bits.
//! Issuing, waiting, sealing, the release and a layout's checks and parts
//! are the core's; this module only translates values, errors and the
//! `AbortSignal` of a call. `store.ids` (`store.rs`) opens a generator.

use std::future::Future;

use leasehold::idgen::{IdGenerator, IdLayout};
use leasehold::{CancellationToken, Error, ErrorKind};
use napi::bindgen_prelude::{BigInt, BigUint64Array, Function};
use napi::Env;
use napi_derive::napi;
use tokio::runtime::Handle;

use crate::cancel::Canceller;
use crate::errors::{self, thrown, Thrown};
use crate::promise::{self, Eventually};
use crate::slots::{js_millis, millis_arg, NativeSlotLease};

/// The most IDs one `take` asks for: a bound on what one call allocates
/// (128 MiB of IDs).
pub const MAX_TAKE: u32 = 1 << 24;

/// The error message of a `next` or a `take` given up by its canceller.
const GAVE_UP_WAITING: &str = "gave up waiting for IDs";

/// How an ID's bits are split (`leasehold::idgen::IdLayout`).
#[napi]
pub struct NativeIdLayout {
    layout: IdLayout,
}

impl NativeIdLayout {
    /// The core's layout.
    pub(crate) fn layout(&self) -> IdLayout {
        self.layout
    }
}

/// The default layout (`IdLayout::DEFAULT`): 41/10/12 in milliseconds.
#[napi(catch_unwind)]
pub fn default_id_layout() -> NativeIdLayout {
    NativeIdLayout {
        layout: IdLayout::DEFAULT,
    }
}

/// IDs below 2^53 (`IdLayout::js_safe`): 41/6/6 in milliseconds.
#[napi(catch_unwind)]
pub fn js_safe_id_layout() -> NativeIdLayout {
    NativeIdLayout {
        layout: IdLayout::js_safe(),
    }
}

/// A layout in seconds (`IdLayout::seconds`): 31/10/22 with 1000 ms ticks.
#[napi(catch_unwind)]
pub fn seconds_id_layout() -> NativeIdLayout {
    NativeIdLayout {
        layout: IdLayout::seconds(),
    }
}

/// A number of bits: 0 to 255, else `InvalidArgument` (the core checks the sum).
fn bits(what: &str, value: u32) -> leasehold::Result<u8> {
    u8::try_from(value).map_err(|_| {
        Error::new(
            ErrorKind::InvalidArgument,
            format!("{what} must be a number of bits from 1 to 63, got {value}"),
        )
    })
}

/// A layout of these splits (`IdLayout::custom`), with ticks of `tick_ms`
/// (default 1) from `epoch_ms` (default `DEFAULT_EPOCH_MS`), checked by
/// the core (`IdLayout::check`): `INVALID_ARGUMENT` when it does not hold.
#[napi(catch_unwind)]
pub fn custom_id_layout(
    time_bits: u32,
    node_bits: u32,
    sequence_bits: u32,
    tick_ms: Option<u32>,
    epoch_ms: Option<BigInt>,
) -> Result<NativeIdLayout, Thrown> {
    let make = || {
        let mut layout = IdLayout::custom(
            bits("timeBits", time_bits)?,
            bits("nodeBits", node_bits)?,
            bits("sequenceBits", sequence_bits)?,
        );
        if let Some(tick_ms) = tick_ms {
            layout = layout.with_tick_ms(tick_ms);
        }
        if let Some(epoch_ms) = epoch_ms {
            layout = layout.with_epoch(millis_arg("epochMs", epoch_ms)?);
        }
        layout.check()?;
        Ok(NativeIdLayout { layout })
    };
    make().map_err(thrown)
}

/// An ID taken apart (`leasehold::idgen::IdParts`).
#[napi(object, object_from_js = false)]
pub struct NativeIdParts {
    /// Ticks since the layout's epoch.
    pub tick: BigInt,
    /// The tick's start in milliseconds since the Unix epoch.
    pub timestamp_ms: f64,
    /// The node number.
    pub node: u32,
    /// The sequence within the tick.
    pub sequence: BigInt,
}

#[napi]
impl NativeIdLayout {
    /// Bits of timestamp.
    #[napi(getter, catch_unwind)]
    pub fn time_bits(&self) -> u32 {
        u32::from(self.layout.time_bits)
    }

    /// Bits of node number.
    #[napi(getter, catch_unwind)]
    pub fn node_bits(&self) -> u32 {
        u32::from(self.layout.node_bits)
    }

    /// Bits of sequence within a tick.
    #[napi(getter, catch_unwind)]
    pub fn sequence_bits(&self) -> u32 {
        u32::from(self.layout.sequence_bits)
    }

    /// The length of one tick in milliseconds.
    #[napi(getter, catch_unwind)]
    pub fn tick_ms(&self) -> u32 {
        self.layout.tick_ms
    }

    /// The time of tick 0 (ms since the Unix epoch).
    #[napi(getter, catch_unwind)]
    pub fn epoch_ms(&self) -> f64 {
        js_millis(self.layout.epoch_ms)
    }

    /// A short description, as errors and benchmarks name a layout: `41/10/12 ms`.
    #[napi(catch_unwind)]
    pub fn describe(&self) -> String {
        self.layout.describe()
    }

    /// Takes the ID `id` (0 to 2^64 − 1) apart (`IdLayout::parts`).
    #[napi(catch_unwind)]
    pub fn parts(&self, id: BigInt) -> Result<NativeIdParts, Thrown> {
        let id = match id.get_u64() {
            (false, id, true) => id,
            _ => {
                return Err(thrown(Error::new(
                    ErrorKind::InvalidArgument,
                    "an ID must be a whole number from 0 to 2^64 - 1",
                )))
            }
        };
        let parts = self.layout.parts(id);
        Ok(NativeIdParts {
            tick: BigInt::from(parts.tick),
            timestamp_ms: js_millis(parts.timestamp_ms),
            node: parts.node,
            sequence: BigInt::from(parts.sequence),
        })
    }
}

/// How many IDs a call asks for: 1 to [`MAX_TAKE`], else `InvalidArgument`.
fn count(n: u32) -> leasehold::Result<usize> {
    match usize::try_from(n) {
        Ok(n) if (1..=MAX_TAKE as usize).contains(&n) => Ok(n),
        _ => Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("n must be a whole number from 1 to {MAX_TAKE}, got {n}"),
        )),
    }
}

/// `work`, unless `cancel` fires first: then the call fails `CANCELLED`
/// at once and `work` is dropped. A generator's waiting call waits only
/// for time to pass (or a renewal) and issues its IDs as it ends, so
/// dropping it gives up nothing it got.
async fn unless_cancelled<T>(
    cancel: Option<CancellationToken>,
    work: impl Future<Output = leasehold::Result<T>>,
) -> leasehold::Result<T> {
    let Some(token) = cancel else {
        return work.await;
    };
    tokio::select! {
        biased;
        result = work => result,
        _ = token.cancelled() => Err(Error::new(ErrorKind::Cancelled, GAVE_UP_WAITING)),
    }
}

/// An ID generator on one slot lease of a namespace (`leasehold::idgen::IdGenerator`).
/// Dropped without a close, it seals and releases its slot in the background.
#[napi]
pub struct NativeIdGenerator {
    ids: IdGenerator,
    runtime: Handle,
}

impl NativeIdGenerator {
    /// Wraps a core generator whose waiting calls run on `runtime`.
    pub(crate) fn new(ids: IdGenerator, runtime: Handle) -> NativeIdGenerator {
        NativeIdGenerator { ids, runtime }
    }
}

#[napi]
impl NativeIdGenerator {
    /// A function of no arguments that issues the next ID without waiting
    /// (`IdGenerator::next`): it throws `NOT_READY` when none can be issued
    /// yet (retryable), `OVERFLOW` when the layout's time range is used up,
    /// `LOST` once the slot was lost or the generator closed (IDGEN-04).
    /// `nextNow`'s one Node-API call: a function bound to the generator
    /// takes no arguments, so no class instance is unwrapped and checked
    /// per call (a third of a method call's cost, docs/node.md "IDs"), and
    /// its `u64` becomes a bigint with `napi_create_bigint_uint64`.
    #[napi(catch_unwind)]
    pub fn bind_next<'env>(&self, env: &'env Env) -> napi::Result<Function<'env, (), u64>> {
        let ids = self.ids.clone();
        env.create_function_from_closure("nextNow", move |call| {
            ids.next().map_err(|e| errors::rejection(call.env, &e))
        })
    }

    /// As many IDs as can be issued now, up to `n` (1 to `MAX_TAKE`), in
    /// one step (`IdGenerator::next_into`); throws as `next` when none can.
    #[napi(catch_unwind)]
    pub fn take_now(&self, n: u32) -> Result<BigUint64Array, Thrown> {
        let mut out = vec![0; count(n).map_err(thrown)?];
        let issued = self.ids.next_into(&mut out).map_err(thrown)?;
        out.truncate(issued);
        Ok(BigUint64Array::new(out))
    }

    /// The next ID, waiting while none can be issued yet
    /// (`IdGenerator::next_async`). When `cancel` fires first, the call
    /// stops waiting and fails `CANCELLED`.
    #[napi(catch_unwind)]
    pub fn next_async<'env>(
        &self,
        env: &'env Env,
        cancel: Option<&Canceller>,
    ) -> napi::Result<Eventually<'env, u64>> {
        let ids = self.ids.clone();
        let cancel = cancel.map(Canceller::token);
        promise::spawn(env, &self.runtime, async move {
            unless_cancelled(cancel, ids.next_async()).await
        })
    }

    /// `n` IDs (1 to `MAX_TAKE`), waiting while they cannot be issued yet
    /// (`IdGenerator::take`). When `cancel` fires first, the call stops
    /// waiting and fails `CANCELLED` (the IDs it had taken are skipped).
    #[napi(catch_unwind)]
    pub fn take<'env>(
        &self,
        env: &'env Env,
        n: u32,
        cancel: Option<&Canceller>,
    ) -> napi::Result<Eventually<'env, BigUint64Array>> {
        let ids = self.ids.clone();
        let cancel = cancel.map(Canceller::token);
        promise::spawn(env, &self.runtime, async move {
            let n = count(n)?;
            let taken = unless_cancelled(cancel, ids.take(n)).await?;
            Ok(BigUint64Array::new(taken))
        })
    }

    /// Seals the generator and releases its slot, passing the last issued
    /// tick on as the next holder's floor (`IdGenerator::close`, IDGEN-02):
    /// rejects `LOST` if the slot was lost meanwhile; a second close does nothing.
    #[napi(catch_unwind)]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<Eventually<'env, ()>> {
        let ids = self.ids.clone();
        promise::spawn(env, &self.runtime, async move { ids.close().await })
    }

    /// The node number every ID carries: the slot plus the namespace's offset.
    #[napi(getter, catch_unwind)]
    pub fn node(&self) -> u32 {
        self.ids.node()
    }

    /// The layout of the IDs.
    #[napi(getter, catch_unwind)]
    pub fn layout(&self) -> NativeIdLayout {
        NativeIdLayout {
            layout: self.ids.layout(),
        }
    }

    /// The slot lease as last renewed.
    #[napi(getter, catch_unwind)]
    pub fn lease(&self) -> NativeSlotLease {
        NativeSlotLease::new(self.ids.lease())
    }

    /// The start of the largest tick issued so far (ms; 0: none).
    #[napi(getter, catch_unwind)]
    pub fn last_issued(&self) -> f64 {
        js_millis(self.ids.last_issued())
    }

    /// Whether the slot was lost; once true, nothing more is issued.
    #[napi(getter, catch_unwind)]
    pub fn lost(&self) -> bool {
        self.ids.lost()
    }
}
