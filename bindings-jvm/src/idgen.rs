//! The ID generator on slot leases (IDGEN): layouts, the parts of an ID,
//! and the generator opened by `NativeStore::ids`. What an ID holds, when
//! one can be issued and what a close hands on are the core's
//! (`leasehold::idgen`). Issuing is on the hot path (`natives::ids`).

use std::sync::Arc;

use leasehold::idgen::{IdGenerator, IdLayout};
use leasehold::{Error, ErrorKind};

use leasehold_bridge::Cancel;

use crate::calls;
use crate::errors::NativeError;
use crate::natives::handles;
use crate::slots::NativeSlotLease;

/// The most IDs one `take` or `take_now` asks for.
pub const MAX_TAKE: u32 = 1 << 20;

/// How an ID's 63 bits are split (`leasehold::idgen::IdLayout`):
/// `time_bits` of ticks of `tick_ms` since `epoch_ms`, `node_bits` of node,
/// `sequence_bits` of sequence.
#[derive(uniffi::Record)]
pub struct NativeIdLayout {
    /// Bits of timestamp.
    pub time_bits: u8,
    /// Bits of node number.
    pub node_bits: u8,
    /// Bits of sequence within one tick.
    pub sequence_bits: u8,
    /// The length of one tick in milliseconds.
    pub tick_ms: u32,
    /// The time of tick 0, in milliseconds since the Unix epoch.
    pub epoch_ms: u64,
}

impl From<IdLayout> for NativeIdLayout {
    fn from(l: IdLayout) -> NativeIdLayout {
        NativeIdLayout {
            time_bits: l.time_bits,
            node_bits: l.node_bits,
            sequence_bits: l.sequence_bits,
            tick_ms: l.tick_ms,
            epoch_ms: l.epoch_ms,
        }
    }
}

impl TryFrom<NativeIdLayout> for IdLayout {
    type Error = Error;

    /// The layout, checked (`InvalidArgument`).
    fn try_from(l: NativeIdLayout) -> leasehold::Result<IdLayout> {
        let layout = IdLayout::custom(l.time_bits, l.node_bits, l.sequence_bits)
            .with_tick_ms(l.tick_ms)
            .with_epoch(l.epoch_ms);
        layout.check()?;
        Ok(layout)
    }
}

/// The layouts the core names: `"default"` (41/10/12 ms), `"js_safe"`
/// (41/6/6 ms, IDs below 2^53) and `"seconds"` (31/10/22 s); another name
/// fails `InvalidArgument`.
#[uniffi::export]
pub fn id_layout_named(name: String) -> Result<NativeIdLayout, NativeError> {
    let layout = match name.as_str() {
        "default" => IdLayout::DEFAULT,
        "js_safe" => IdLayout::js_safe(),
        "seconds" => IdLayout::seconds(),
        _ => {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("no ID layout is named {name:?}: default, js_safe or seconds"),
            )
            .into())
        }
    };
    Ok(layout.into())
}

/// Checks `layout` (`InvalidArgument`), as a generator opening it would.
#[uniffi::export]
pub fn id_layout_check(layout: NativeIdLayout) -> Result<(), NativeError> {
    IdLayout::try_from(layout)?;
    Ok(())
}

/// A short description of `layout`: `"41/10/12 ms"`.
#[uniffi::export]
pub fn id_layout_describe(layout: NativeIdLayout) -> Result<String, NativeError> {
    Ok(IdLayout::try_from(layout)?.describe())
}

/// An ID taken apart (`leasehold::idgen::IdParts`).
#[derive(uniffi::Record)]
pub struct NativeIdParts {
    /// Ticks since the layout's epoch.
    pub tick: u64,
    /// The tick's start in milliseconds since the Unix epoch.
    pub timestamp_ms: u64,
    /// The node number.
    pub node: u32,
    /// The sequence within the tick.
    pub sequence: u64,
}

/// Takes `id` apart by `layout`.
#[uniffi::export]
pub fn id_layout_parts(layout: NativeIdLayout, id: u64) -> Result<NativeIdParts, NativeError> {
    let p = IdLayout::try_from(layout)?.parts(id);
    Ok(NativeIdParts {
        tick: p.tick,
        timestamp_ms: p.timestamp_ms,
        node: p.node,
        sequence: p.sequence,
    })
}

/// How many IDs a call asks for: 1 to [`MAX_TAKE`], else `InvalidArgument`.
pub(crate) fn count(n: u32) -> leasehold::Result<usize> {
    if n == 0 || n > MAX_TAKE {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("from 1 to {MAX_TAKE} IDs are taken at once, not {n}"),
        ));
    }
    Ok(n as usize)
}

/// An ID generator (`leasehold::idgen::IdGenerator`). Collected without
/// `close`, it is sealed and its slot released in the background.
#[derive(uniffi::Object)]
pub struct NativeIdGenerator {
    ids: IdGenerator,
}

impl NativeIdGenerator {
    /// Wraps a core generator.
    pub(crate) fn new(ids: IdGenerator) -> Arc<NativeIdGenerator> {
        Arc::new(NativeIdGenerator { ids })
    }

    /// The core generator.
    pub(crate) fn core(&self) -> &IdGenerator {
        &self.ids
    }
}

#[uniffi::export]
impl NativeIdGenerator {
    /// A handle on this generator for the natives of the hot path
    /// (`natives::ids`): a reference of its own, freed once by
    /// `Natives.freeIds`.
    pub fn handle(self: Arc<Self>) -> i64 {
        handles::into_handle(self)
    }

    /// Seals the generator and releases its slot with the largest tick
    /// issued (IDGEN-02); fails `Lost` if the slot was lost meanwhile. It
    /// runs on to its end even if the awaiting coroutine is cancelled.
    /// (Not `close`, which the generated class has from `AutoCloseable`.)
    pub async fn close_generator(&self) -> Result<(), NativeError> {
        let ids = self.ids.clone();
        calls::spawn(Cancel::RunOn, async move { ids.close().await }).await
    }

    /// The layout.
    pub fn layout(&self) -> NativeIdLayout {
        self.ids.layout().into()
    }

    /// The node number every ID carries.
    pub fn node(&self) -> u32 {
        self.ids.node()
    }

    /// The slot lease as last renewed.
    pub fn lease(&self) -> NativeSlotLease {
        self.ids.lease().into()
    }

    /// The start of the largest tick issued (ms since the Unix epoch; 0: none).
    pub fn last_issued(&self) -> u64 {
        self.ids.last_issued()
    }

    /// Whether the slot was lost; once true, nothing more is issued.
    pub fn lost(&self) -> bool {
        self.ids.lost()
    }

    /// Why the slot was lost, once it was.
    pub fn loss_reason(&self) -> Option<String> {
        self.ids.loss_reason().map(|r| r.as_str().to_owned())
    }
}
