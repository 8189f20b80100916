//! How many connections each token has open, for
//! `--max-connections-per-token`: one tenant with a valid token cannot take
//! every place of `--max-connections`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The open connections of each token, by the token's number.
pub(crate) struct Tenants {
    limit: usize,
    open: Vec<AtomicUsize>,
}

/// One connection of one token, counted until dropped.
pub(crate) struct Tenancy {
    tenants: Arc<Tenants>,
    token: usize,
}

impl Tenants {
    /// Counts for `tokens` tokens, each allowed `limit` connections.
    pub fn new(tokens: usize, limit: usize) -> Tenants {
        Tenants {
            limit,
            open: (0..tokens).map(|_| AtomicUsize::new(0)).collect(),
        }
    }

    /// How many connections one token may have.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Counts one more connection of token number `token`, unless it has
    /// its `limit` already (or is no token of ours).
    pub fn enter(self: &Arc<Self>, token: usize) -> Option<Tenancy> {
        let open = self.open.get(token)?;
        open.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < self.limit).then_some(n + 1)
        })
        .ok()?;
        Some(Tenancy {
            tenants: self.clone(),
            token,
        })
    }
}

impl Drop for Tenancy {
    fn drop(&mut self) {
        self.tenants.open[self.token].fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_token_has_its_own_limit() {
        let t = Arc::new(Tenants::new(2, 2));
        let a1 = t.enter(0).unwrap();
        let _a2 = t.enter(0).unwrap();
        assert!(t.enter(0).is_none());
        let _b1 = t.enter(1).unwrap();
        assert!(t.enter(2).is_none(), "no such token");
        drop(a1);
        assert!(t.enter(0).is_some());
    }
}
