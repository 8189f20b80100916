//! `leasehold ls [LOCK]`: the keys held now, with fence, holder, age and line.

use futures::future::{FutureExt, LocalBoxFuture};
use std::io::Write;

use leasehold::driver::HolderInfo;
use leasehold::duration::show;

use super::StoreArgs;

/// The options of `leasehold ls`.
#[derive(Debug, Clone, clap::Args)]
pub struct LsArgs {
    /// Only this lock's keys (every lock's when left out).
    pub lock: Option<String>,

    /// Where the store is and how to be admitted.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// Writes the holders as a table: `LOCK KEY FENCE HOLDER HELD EXPIRES
/// WAITING`, the holder by its identity (WHO-02). Manual leases show under
/// the lock name `(manual)`.
pub fn write_table(out: &mut impl Write, holders: &[HolderInfo]) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<20} {:<30} {:>20} {:<24} {:>10} {:>10} {:>7}",
        "LOCK", "KEY", "FENCE", "HOLDER", "HELD", "EXPIRES", "WAITING"
    )?;
    for h in holders {
        let lock = if h.lock.is_empty() {
            "(manual)"
        } else {
            &h.lock
        };
        let held = show(std::time::Duration::from_secs(h.held_for.as_secs()));
        let expires = h
            .expires_in
            .map(|d| {
                show(std::time::Duration::from_millis(
                    d.as_millis() as u64 / 100 * 100,
                ))
            })
            .unwrap_or_else(|| "-".to_owned());
        let holder = if h.identity.is_empty() {
            "-"
        } else {
            &h.identity
        };
        writeln!(
            out,
            "{lock:<20} {:<30} {:>20} {holder:<24} {held:>10} {expires:>10} {:>7}",
            h.key, h.fence, h.waiting
        )?;
    }
    Ok(())
}

/// Runs `leasehold ls`: 0 when listed, 1 when the store refused or could not be reached.
/// Boxed, so that it is compiled here, once, not in the binary that
/// awaits it (docs/architecture.md, "Where the code is compiled").
pub fn run(args: LsArgs) -> LocalBoxFuture<'static, u8> {
    run_ls(args).boxed_local()
}

async fn run_ls(args: LsArgs) -> u8 {
    let listed = async {
        let store = args.store.connect().await?;
        let holders = store.holders(args.lock.as_deref()).await;
        store.close().await;
        holders
    };
    match listed.await {
        Ok(holders) => match write_table(&mut std::io::stdout().lock(), &holders) {
            Ok(()) => 0,
            Err(_) => 1,
        },
        Err(e) => {
            eprintln!("leasehold ls: {e}");
            1
        }
    }
}
