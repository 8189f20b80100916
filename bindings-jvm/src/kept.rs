//! `Kept`: the one wrapper of anything the core holds for the JVM (a key's
//! `Holding` in `holding`): the core's holding, kept until the JVM side
//! ends it once, and what its held work sees until then.

use std::future::Future;
use std::sync::Mutex;

use leasehold::{Error, ErrorKind, Held, HeldView};

use leasehold_bridge::{Cancel, Spawned};

use crate::calls;

/// A core holding until it ends, and what its held work sees.
pub(crate) struct Kept<H: Held> {
    view: H::View,
    holding: Mutex<Option<H>>,
}

impl<H: Held> Kept<H> {
    /// Keeps `holding`.
    pub(crate) fn new(holding: H) -> Kept<H> {
        Kept {
            view: holding.view().clone(),
            holding: Mutex::new(Some(holding)),
        }
    }

    /// What the held work sees.
    pub(crate) fn view(&self) -> &H::View {
        &self.view
    }

    /// Completes with the loss reason (`expired`, `revoked`, …) once the
    /// holding is lost; at once if it was lost already. It needs no task:
    /// the loss's token wakes whoever awaits it. Dropped (the awaiting
    /// coroutine cancelled), it stops waiting.
    pub(crate) fn lost_signal(
        &self,
    ) -> impl Future<Output = leasehold::Result<String>> + Send + 'static {
        let view = self.view.clone();
        async move {
            view.lost_signal().await;
            Ok(view
                .loss_reason()
                .map_or("unknown", |r| r.as_str())
                .to_owned())
        }
    }

    /// Takes the core's holding out, to end it: `Closed` if it ended already.
    pub(crate) fn take(&self) -> leasehold::Result<H> {
        self.holding
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| Error::new(ErrorKind::Closed, "the hold ended already"))
    }

    /// Ends the holding: fails `Lost` if it was lost while held (LOCK-10),
    /// `Closed` if it ended already. The release runs on to its end even if
    /// its caller gives up (LOCK-11).
    pub(crate) fn end(&self) -> Spawned<()> {
        let holding = self.take();
        Spawned::new(calls::runtime(), Cancel::RunOn, async move {
            holding?.end().await
        })
    }
}

/// `holding`, unless its deadline came before its work could start: then
/// it is ended at once and the call fails `Lost`. This is the check every
/// binding makes before a held function runs (`HeldState::reason` counts a
/// deadline that came as a loss before any keeper ran); the JVM makes it in
/// the call that began the holding, which saves a call into the library.
pub(crate) async fn unless_lost<H: Held>(holding: H) -> leasehold::Result<H> {
    match holding.view().loss_reason() {
        None => Ok(holding),
        Some(reason) => {
            let _ = holding.end().await;
            Err(Error::lost(reason))
        }
    }
}
