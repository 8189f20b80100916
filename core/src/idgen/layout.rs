//! How an ID's 64 bits are split: a timestamp in ticks since an epoch, the
//! node (slot + offset), and a sequence within the tick.

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Result};

/// The default epoch: 2026-01-01T00:00:00Z, in milliseconds since the Unix epoch.
pub const DEFAULT_EPOCH_MS: u64 = 1_767_225_600_000;

/// The most bits an ID may use: 63, so that every ID is a non-negative
/// signed 64-bit integer too (Java's `long`, PostgreSQL's `bigint`).
pub const MAX_ID_BITS: u32 = 63;

/// The longest tick a layout may have: one hour.
pub const MAX_TICK_MS: u32 = 3_600_000;

/// The bit layout of an ID, high bits to low: `time_bits` of ticks since
/// `epoch_ms`, `node_bits` of node number, `sequence_bits` of sequence.
///
/// A namespace's layout is fixed by its first use, like its limit (SLOT-02):
/// two generators of one namespace never split their bits differently.
///
/// ```
/// use leasehold::idgen::IdLayout;
/// let layout = IdLayout::default();
/// assert_eq!((layout.time_bits, layout.node_bits, layout.sequence_bits), (41, 10, 12));
/// let id = layout.compose(5, 3, 7);
/// let parts = layout.parts(id);
/// assert_eq!((parts.tick, parts.node, parts.sequence), (5, 3, 7));
/// assert_eq!(parts.timestamp_ms, layout.epoch_ms + 5);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct IdLayout {
    /// Bits of timestamp (ticks since the epoch).
    pub time_bits: u8,
    /// Bits of node number: the namespace's `offset + limit` must fit.
    pub node_bits: u8,
    /// Bits of sequence within one tick.
    pub sequence_bits: u8,
    /// The length of one tick in milliseconds: 1, or 1000 for a layout in seconds.
    pub tick_ms: u32,
    /// The time of tick 0, in milliseconds since the Unix epoch.
    pub epoch_ms: u64,
}

impl Default for IdLayout {
    /// 41 bits of milliseconds (69 years from 2026), 10 of node (1024
    /// nodes), 12 of sequence (4,096 IDs per millisecond per node).
    fn default() -> IdLayout {
        IdLayout::DEFAULT
    }
}

/// An ID taken apart by [`IdLayout::parts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdParts {
    /// Ticks since the layout's epoch.
    pub tick: u64,
    /// The tick's start in milliseconds since the Unix epoch.
    pub timestamp_ms: u64,
    /// The node number.
    pub node: u32,
    /// The sequence within the tick.
    pub sequence: u64,
}

impl IdLayout {
    /// The default layout: 41/10/12 in milliseconds from [`DEFAULT_EPOCH_MS`].
    pub const DEFAULT: IdLayout = IdLayout::custom(41, 10, 12);

    /// A layout of milliseconds from [`DEFAULT_EPOCH_MS`] with these splits.
    pub const fn custom(time_bits: u8, node_bits: u8, sequence_bits: u8) -> IdLayout {
        IdLayout {
            time_bits,
            node_bits,
            sequence_bits,
            tick_ms: 1,
            epoch_ms: DEFAULT_EPOCH_MS,
        }
    }

    /// IDs below 2^53, exact as JavaScript numbers: 41 bits of milliseconds,
    /// 6 of node (64 nodes), 6 of sequence (64 IDs per millisecond per node).
    pub const fn js_safe() -> IdLayout {
        IdLayout::custom(41, 6, 6)
    }

    /// A layout in seconds: 31 bits of seconds (68 years), 10 of node,
    /// 22 of sequence (4,194,304 IDs per second per node).
    pub const fn seconds() -> IdLayout {
        IdLayout {
            tick_ms: 1000,
            ..IdLayout::custom(31, 10, 22)
        }
    }

    /// The same layout with tick 0 at `epoch_ms`.
    pub const fn with_epoch(self, epoch_ms: u64) -> IdLayout {
        IdLayout { epoch_ms, ..self }
    }

    /// The same layout with ticks of `tick_ms` milliseconds.
    pub const fn with_tick_ms(self, tick_ms: u32) -> IdLayout {
        IdLayout { tick_ms, ..self }
    }

    /// Checks the splits: at least one bit of each part, at most
    /// [`MAX_ID_BITS`] in all, a tick from 1 ms to [`MAX_TICK_MS`].
    pub fn check(&self) -> Result<()> {
        let total =
            u32::from(self.time_bits) + u32::from(self.node_bits) + u32::from(self.sequence_bits);
        if self.time_bits == 0
            || self.node_bits == 0
            || self.sequence_bits == 0
            || total > MAX_ID_BITS
        {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "an ID layout needs at least one bit of time, node and sequence and at most \
                     {MAX_ID_BITS} in all, got {}/{}/{}",
                    self.time_bits, self.node_bits, self.sequence_bits
                ),
            ));
        }
        if self.tick_ms == 0 || self.tick_ms > MAX_TICK_MS {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "an ID layout's tick must lie from 1 ms to 1 h, got {} ms",
                    self.tick_ms
                ),
            ));
        }
        Ok(())
    }

    /// How many node numbers the layout has room for.
    pub fn nodes(&self) -> u64 {
        1 << self.node_bits
    }

    /// The largest tick the layout can hold.
    pub fn max_tick(&self) -> u64 {
        (1 << self.time_bits) - 1
    }

    /// How many IDs one node can issue per tick.
    pub fn per_tick(&self) -> u64 {
        1 << self.sequence_bits
    }

    /// The ID of `tick`, `node` and `sequence` (each taken modulo its bits).
    pub fn compose(&self, tick: u64, node: u32, sequence: u64) -> u64 {
        let (n, s) = (u32::from(self.node_bits), u32::from(self.sequence_bits));
        ((tick & self.max_tick()) << (n + s))
            | ((u64::from(node) & (self.nodes() - 1)) << s)
            | (sequence & (self.per_tick() - 1))
    }

    /// Takes an ID apart.
    pub fn parts(&self, id: u64) -> IdParts {
        let (n, s) = (u32::from(self.node_bits), u32::from(self.sequence_bits));
        let tick = (id >> (n + s)) & self.max_tick();
        IdParts {
            tick,
            timestamp_ms: self.tick_start_ms(tick),
            node: u32::try_from((id >> s) & (self.nodes() - 1)).unwrap_or(u32::MAX),
            sequence: id & (self.per_tick() - 1),
        }
    }

    /// The start of `tick` in milliseconds since the Unix epoch.
    pub fn tick_start_ms(&self, tick: u64) -> u64 {
        self.epoch_ms
            .saturating_add(tick.saturating_mul(u64::from(self.tick_ms)))
    }

    /// The tick that holds the time `ms`; `None` before the epoch.
    pub fn tick_of(&self, ms: u64) -> Option<u64> {
        let since = ms.checked_sub(self.epoch_ms)?;
        // The common layouts tick in milliseconds: no division on the issuing path.
        Some(if self.tick_ms == 1 {
            since
        } else {
            since / u64::from(self.tick_ms)
        })
    }

    /// A short description, as errors and benchmarks name a layout: `41/10/12 ms`.
    pub fn describe(&self) -> String {
        let unit = match self.tick_ms {
            1 => "ms".to_owned(),
            1000 => "s".to_owned(),
            t => format!("{t} ms ticks"),
        };
        format!(
            "{}/{}/{} {unit}",
            self.time_bits, self.node_bits, self.sequence_bits
        )
    }
}
