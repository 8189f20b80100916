//! Deliberate faults in the generator, switched on one at a time by the
//! model test to show that it catches them; compiled into tests only.

use std::cell::Cell;

/// A fault the model test must catch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mutant {
    /// Start at the floor's tick, not after it.
    IssueAtFloor,
    /// Issue one tick past the ceiling's.
    IssueAtCeilingPlusOne,
    /// Read the last issued tick for the release without sealing.
    RecordAfterSealing,
    /// Give every generator of an owner key the same instance id.
    ReuseOwnerInstance,
}

thread_local! {
    static ACTIVE: Cell<Option<Mutant>> = const { Cell::new(None) };
}

/// Whether `mutant` is switched on in this thread.
pub(crate) fn on(mutant: Mutant) -> bool {
    ACTIVE.with(|a| a.get() == Some(mutant))
}

/// Switches `mutant` on (or every mutant off) in this thread.
pub(crate) fn set(mutant: Option<Mutant>) {
    ACTIVE.with(|a| a.set(mutant));
}
