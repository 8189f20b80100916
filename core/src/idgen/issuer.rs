//! The issuing path: one packed counter per generator, checked against the
//! held slot's window, deadline and the store's clock on every call.
//!
//! The counter holds the next free *position*, `tick << sequence_bits |
//! sequence`: issuing `n` IDs moves it on by `n` in one compare-and-swap,
//! so the IDs of a generator strictly increase (IDGEN-03), a sequence used
//! up carries into the next tick, and the largest tick issued is known in
//! the same step that issues it. Sealing sets [`SEALED`] in the same word:
//! a seal and an issue cannot both win, so what the seal reads is the
//! largest tick ever issued (IDGEN-02).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::layout::IdLayout;
use crate::clock::Instant;
use crate::error::{Error, ErrorKind};
use crate::slots::HeldSlotCell;

/// Set in the counter once the generator is sealed: nothing more is issued.
const SEALED: u64 = 1 << 63;

/// Why nothing can be issued at the moment (IDGEN-04).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Blocked {
    /// The next position lies more than the allowed lead ahead of the
    /// store's clock, or past the ceiling: retry after this long.
    NotReady(Duration),
    /// The layout's time range is used up.
    Overflow,
    /// The slot was lost (or its deadline came), or the generator sealed.
    Lost,
}

/// The first of `count` consecutive positions issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Issued {
    pub(crate) first: u64,
    pub(crate) count: u64,
}

/// What a generator issues by: its layout, node and lead, the held slot
/// (window, clock, deadline), and the counter.
#[derive(Debug)]
pub(crate) struct Issuer {
    layout: IdLayout,
    node: u32,
    max_lead_ms: u64,
    slot: Arc<HeldSlotCell>,
    /// The first position this issuer may issue: the first tick after the floor.
    start: u64,
    /// The next free position, with [`SEALED`] once sealed.
    next: AtomicU64,
}

/// How long to wait before a blocked issue is worth retrying when a
/// renewal, not time, has to move the window on.
const RENEWAL_POLL: Duration = Duration::from_millis(10);

impl Issuer {
    /// An issuer of `node` under the held slot `slot`, starting above the
    /// lease's floor: its first tick starts after the floor (IDGEN-02).
    pub(crate) fn new(
        layout: IdLayout,
        node: u32,
        max_lead: Duration,
        slot: Arc<HeldSlotCell>,
        floor: u64,
    ) -> Issuer {
        #[allow(unused_mut)]
        let mut after = 1;
        #[cfg(test)]
        if super::mutants::on(super::mutants::Mutant::IssueAtFloor) {
            after = 0;
        }
        let start = match layout.tick_of(floor) {
            // The floor's tick starts at or before the floor: start at the next.
            Some(tick) => {
                tick.saturating_add(after).min(layout.max_tick() + 1) << layout.sequence_bits
            }
            None => 0,
        };
        Issuer {
            layout,
            node,
            max_lead_ms: u64::try_from(max_lead.as_millis()).unwrap_or(u64::MAX),
            slot,
            start,
            next: AtomicU64::new(start),
        }
    }

    /// The layout.
    pub(crate) fn layout(&self) -> &IdLayout {
        &self.layout
    }

    /// The node number.
    pub(crate) fn node(&self) -> u32 {
        self.node
    }

    /// Issues up to `want` (at least 1) consecutive positions at `now` on
    /// the local clock.
    pub(crate) fn issue(&self, now: Instant, want: u64) -> std::result::Result<Issued, Blocked> {
        if self.slot.held.lost_at(now) {
            return Err(Blocked::Lost);
        }
        let layout = &self.layout;
        let s = layout.sequence_bits;
        let store_ms = self.slot.store_ms(now);
        let Some(now_tick) = layout.tick_of(store_ms) else {
            // The store's clock is before the epoch.
            let wait = layout
                .epoch_ms
                .saturating_sub(store_ms.saturating_add(self.max_lead_ms));
            return Err(Blocked::NotReady(Duration::from_millis(wait.max(1))));
        };
        if now_tick > layout.max_tick() {
            return Err(Blocked::Overflow);
        }
        #[allow(unused_mut)]
        let mut ceiling_tick = layout.tick_of(self.slot.ceiling());
        #[cfg(test)]
        if super::mutants::on(super::mutants::Mutant::IssueAtCeilingPlusOne) {
            ceiling_tick = ceiling_tick.map(|t| t + 1);
        }
        let lead_tick = layout.tick_of(store_ms.saturating_add(self.max_lead_ms));
        let mut cur = self.next.load(Ordering::Acquire);
        loop {
            if cur & SEALED != 0 {
                return Err(Blocked::Lost);
            }
            let Some(ceiling_tick) = ceiling_tick else {
                return Err(Blocked::NotReady(RENEWAL_POLL));
            };
            let now_pos = now_tick.min(ceiling_tick) << s;
            let first = cur.max(now_pos);
            let first_tick = first >> s;
            let last_tick = ceiling_tick
                .min(lead_tick.unwrap_or(0))
                .min(layout.max_tick());
            if first_tick > last_tick {
                return Err(self.blocked(first_tick, ceiling_tick, store_ms));
            }
            let end = (last_tick + 1) << s;
            let count = want.max(1).min(end - first);
            match self.next.compare_exchange_weak(
                cur,
                first + count,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    return Ok(Issued { first, count });
                }
                Err(now) => cur = now,
            }
        }
    }

    /// Why the position starting tick `first_tick` cannot be issued yet.
    fn blocked(&self, first_tick: u64, ceiling_tick: u64, store_ms: u64) -> Blocked {
        let layout = &self.layout;
        if first_tick > layout.max_tick() {
            return Blocked::Overflow;
        }
        if first_tick > ceiling_tick {
            return Blocked::NotReady(RENEWAL_POLL);
        }
        let ready_at = layout
            .tick_start_ms(first_tick)
            .saturating_sub(self.max_lead_ms);
        Blocked::NotReady(Duration::from_millis(
            ready_at.saturating_sub(store_ms).max(1),
        ))
    }

    /// The ID at `position`.
    pub(crate) fn id_at(&self, position: u64) -> u64 {
        let s = self.layout.sequence_bits;
        self.layout
            .compose(position >> s, self.node, position & ((1 << s) - 1))
    }

    /// Writes the IDs of `issued` into `out` (as many as it holds).
    pub(crate) fn write(&self, issued: Issued, out: &mut [u64]) {
        let s = u32::from(self.layout.sequence_bits);
        let n = u32::from(self.layout.node_bits);
        let node = u64::from(self.node) << s;
        let mask = (1u64 << s) - 1;
        for (slot, position) in out
            .iter_mut()
            .zip(issued.first..issued.first + issued.count)
        {
            *slot = ((position >> s) << (n + s)) | node | (position & mask);
        }
    }

    /// The start of the largest tick issued (ms since the Unix epoch), or 0
    /// if nothing was issued.
    pub(crate) fn last_issued_ms(&self) -> u64 {
        self.ms_before(self.next.load(Ordering::Acquire) & !SEALED)
    }

    /// Seals the issuer: nothing is issued after this. Says the start of
    /// the largest tick issued (0: nothing issued), read in the same step.
    pub(crate) fn seal(&self) -> u64 {
        #[cfg(test)]
        if super::mutants::on(super::mutants::Mutant::RecordAfterSealing) {
            return self.last_issued_ms();
        }
        self.ms_before(self.next.fetch_or(SEALED, Ordering::AcqRel) & !SEALED)
    }

    /// The start of the tick of the position before `next`, if it was issued.
    fn ms_before(&self, next: u64) -> u64 {
        if next <= self.start {
            return 0;
        }
        self.layout
            .tick_start_ms((next - 1) >> self.layout.sequence_bits)
    }
}

/// The error a blocked issue answers.
pub(crate) fn error_of(
    blocked: Blocked,
    layout: &IdLayout,
    loss: Option<crate::LossReason>,
) -> Error {
    match blocked {
        Blocked::NotReady(wait) => Error::new(
            ErrorKind::NotReady,
            format!(
                "no ID can be issued yet (the store's clock is behind the slot's floor, a tick's \
                 sequence is used up, or the slot's ceiling is reached); retry in {}",
                crate::duration::show(wait)
            ),
        ),
        Blocked::Overflow => Error::new(
            ErrorKind::Overflow,
            format!(
                "the ID layout {} has used up its time range",
                layout.describe()
            ),
        ),
        Blocked::Lost => match loss {
            Some(reason) => Error::lost(reason),
            None => Error::new(ErrorKind::Lost, "the ID generator was closed"),
        },
    }
}
