//! Random interleavings of hold, renew, release, give-up and clock advances
//! on the lease table never break its invariants (LOCK-01, LOCK-02, LOCK-05).

use std::collections::HashMap;
use std::time::Duration;

use leasehold::clock::Instant;
use leasehold::driver::HoldAnswer;
use leasehold::fence::Fences;
use leasehold::table::{Event, HoldRequest, KeyName, LeaseTable, Limits};
use leasehold::{LeaseId, RequestId};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Hold {
        key: u8,
        ttl: u8,
        max_hold: Option<u8>,
        queue: bool,
        retry: bool,
    },
    Renew {
        pick: usize,
        ttl: Option<u8>,
    },
    Release {
        pick: usize,
    },
    GiveUp {
        pick: usize,
    },
    Advance {
        millis: u32,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (
            0u8..4,
            1u8..10,
            proptest::option::of(1u8..20),
            any::<bool>(),
            any::<bool>()
        )
            .prop_map(|(key, ttl, max_hold, queue, retry)| Op::Hold {
                key,
                ttl,
                max_hold,
                queue,
                retry
            }),
        (any::<usize>(), proptest::option::of(1u8..10))
            .prop_map(|(pick, ttl)| Op::Renew { pick, ttl }),
        any::<usize>().prop_map(|pick| Op::Release { pick }),
        any::<usize>().prop_map(|pick| Op::GiveUp { pick }),
        (0u32..6000).prop_map(|millis| Op::Advance { millis }),
    ]
}

/// What the model knows of a lease the table granted.
struct Known {
    key: u8,
    expires_at: Option<Instant>,
    revoke_at: Option<Instant>,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    // LOCK-01, LOCK-02, LOCK-05: at most one unexpired lease per key, fences grow, no renewal of an expired lease.
    #[test]
    fn lock_01_table_invariants_hold(ops in proptest::collection::vec(op(), 1..120)) {
        let mut t = LeaseTable::new(Fences::wall_clock(), Limits::default());
        let mut now = Instant::default();
        let mut last_fence = 0u64;
        let mut live: HashMap<LeaseId, Known> = HashMap::new();
        let mut ever: Vec<LeaseId> = Vec::new();
        let mut requests: Vec<HoldRequest> = Vec::new();
        let mut ended: Vec<LeaseId> = Vec::new();
        for op in ops {
            let mut note = |g: &leasehold::table::Grant, key: u8, live: &mut HashMap<LeaseId, Known>, ever: &mut Vec<LeaseId>| {
                if !live.contains_key(&g.lease_id) {
                    prop_assert!(g.fence > last_fence, "fence {} after {}", g.fence, last_fence);
                    last_fence = g.fence;
                    ever.push(g.lease_id);
                }
                live.insert(g.lease_id, Known { key, expires_at: g.expires_at, revoke_at: g.revoke_at });
                Ok(())
            };
            match op {
                Op::Hold { key, ttl, max_hold, queue, retry } => {
                    let r = if retry && !requests.is_empty() {
                        requests[requests.len() - 1].clone()
                    } else {
                        HoldRequest {
                            name: KeyName::new("l", key.to_string()),
                            request_id: RequestId::random(),
                            ttl: Some(Duration::from_secs(u64::from(ttl))),
                            max_hold: max_hold.map(|m| Duration::from_secs(u64::from(m.max(ttl)))),
                            queue,
                            group: None,
                        }
                    };
                    let k: u8 = r.name.key.parse().unwrap();
                    requests.push(r.clone());
                    if let Ok(HoldAnswer::Granted(g)) = t.hold(r, now) {
                        note(&g, k, &mut live, &mut ever)?;
                    }
                }
                Op::Renew { pick, ttl } if !ever.is_empty() => {
                    let id = ever[pick % ever.len()];
                    let ok = t.renew(id, ttl.map(|s| Duration::from_secs(u64::from(s))), now);
                    if let Ok(g) = &ok {
                        prop_assert!(!ended.contains(&id), "renewed a lease that had ended");
                        let k = live[&id].key;
                        note(g, k, &mut live, &mut ever)?;
                    }
                }
                Op::Release { pick } if !ever.is_empty() => {
                    let id = ever[pick % ever.len()];
                    if t.release(id, now).is_ok() {
                        prop_assert!(!ended.contains(&id), "released a lease that had ended");
                        live.remove(&id);
                        ended.push(id);
                    }
                }
                Op::GiveUp { pick } if !requests.is_empty() => {
                    let r = &requests[pick % requests.len()];
                    if let leasehold::table::GiveUp::Released(id) = t.give_up(r.request_id, now) {
                        live.remove(&id);
                        ended.push(id);
                    }
                }
                Op::Advance { millis } => {
                    now = now + Duration::from_millis(u64::from(millis));
                    t.advance(now);
                }
                _ => {}
            }
            for e in t.drain_events() {
                match e {
                    Event::Granted(g) => {
                        let k: u8 = requests.iter().find(|r| r.request_id == g.request_id).unwrap().name.key.parse().unwrap();
                        note(&g, k, &mut live, &mut ever)?;
                    }
                    Event::Lost { lease_id, .. } => {
                        let known = live.remove(&lease_id).expect("lost lease was live");
                        let due = known.expires_at.is_some_and(|e| e <= now) || known.revoke_at.is_some_and(|r| r <= now);
                        prop_assert!(due, "lease lost before its expiry or revocation");
                        ended.push(lease_id);
                    }
                    Event::Failed { .. } => prop_assert!(false, "a grant failed"),
                }
            }
            // At most one unexpired lease per key.
            let mut per_key: HashMap<u8, usize> = HashMap::new();
            for k in live.values() {
                let unexpired = k.expires_at.is_none_or(|e| e > now) && k.revoke_at.is_none_or(|r| r > now);
                if unexpired {
                    *per_key.entry(k.key).or_default() += 1;
                }
            }
            prop_assert!(per_key.values().all(|n| *n <= 1), "two unexpired leases of one key: {per_key:?}");
            prop_assert_eq!(t.held(), live.len());
        }
    }
}
