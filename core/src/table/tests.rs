use super::*;
use crate::fence::epoch_of;
use crate::overview::{ActivityKind, OverviewQuery};

fn table() -> LeaseTable {
    LeaseTable::new(Fences::wall_clock(), Limits::default())
}

fn at(secs: u64) -> Instant {
    Instant::from_origin(Duration::from_secs(secs))
}

fn req(key: &str, ttl: Option<u64>) -> HoldRequest {
    HoldRequest {
        name: KeyName::new("l", key),
        request_id: RequestId::random(),
        ttl: ttl.map(Duration::from_secs),
        max_hold: None,
        queue: true,
        group: None,
    }
}

/// Holder number `n`, known as `holder n`.
fn numbered(n: u64) -> Arc<Holder> {
    Arc::new(Holder {
        number: n,
        identity: Identity::new(&format!("holder {n}")).unwrap(),
    })
}

fn granted(a: HoldAnswer<Grant, ()>) -> Grant {
    match a {
        HoldAnswer::Granted(g) => g,
        other => panic!("expected a grant, got {other:?}"),
    }
}

// LOCK-01: one holder per key; the line is first come, first served.
#[test]
fn lock_01_line_is_fifo_and_grants_are_pushed() {
    let mut t = table();
    let a = granted(t.hold(req("k", Some(10)), at(0)).unwrap());
    let b = req("k", Some(10));
    let c = req("k", Some(10));
    assert_eq!(
        t.hold(b.clone(), at(0)).unwrap(),
        HoldAnswer::Queued {
            waiting: (),
            ahead: 0
        }
    );
    assert_eq!(
        t.hold(c.clone(), at(0)).unwrap(),
        HoldAnswer::Queued {
            waiting: (),
            ahead: 1
        }
    );
    t.release(a.lease_id, at(1)).unwrap();
    let events = t.drain_events();
    assert_eq!(events.len(), 1);
    let Event::Granted(gb) = &events[0] else {
        panic!("{events:?}")
    };
    assert_eq!(gb.request_id, b.request_id);
    assert!(gb.fence > a.fence);
    assert_eq!(t.holder(&b.name).unwrap().grant.lease_id, gb.lease_id);
    t.release(gb.lease_id, at(2)).unwrap();
    let Event::Granted(gc) = &t.drain_events()[0] else {
        panic!()
    };
    assert_eq!(gc.request_id, c.request_id);
}

// LOCK-17: a try request never waits and leaves no trace.
#[test]
fn lock_17_try_on_a_held_key_is_not_held() {
    let mut t = table();
    granted(t.hold(req("k", None), at(0)).unwrap());
    let mut r = req("k", None);
    r.queue = false;
    assert_eq!(t.hold(r, at(0)).unwrap(), HoldAnswer::NotHeld);
    assert_eq!(t.waiting(), 0);
}

// LOCK-03: a repeated request id answers the same lease, or the same place in line.
#[test]
fn lock_03_repeated_request_is_answered_as_before() {
    let mut t = table();
    let r = req("k", Some(10));
    let g1 = granted(t.hold(r.clone(), at(0)).unwrap());
    let g2 = granted(t.hold(r.clone(), at(1)).unwrap());
    assert_eq!((g1.lease_id, g1.fence), (g2.lease_id, g2.fence));
    assert_eq!(t.held(), 1);
    let w = req("k", Some(10));
    assert_eq!(
        t.hold(w.clone(), at(1)).unwrap(),
        HoldAnswer::Queued {
            waiting: (),
            ahead: 0
        }
    );
    assert_eq!(
        t.hold(w, at(2)).unwrap(),
        HoldAnswer::Queued {
            waiting: (),
            ahead: 0
        }
    );
    assert_eq!(t.waiting(), 1);
}

// LOCK-03: a request whose lease ended unseen is answered Lost, not with a second lease.
#[test]
fn lock_03_retry_after_unseen_expiry_is_lost() {
    let mut t = table();
    let r = req("k", Some(10));
    granted(t.hold(r.clone(), at(0)).unwrap());
    t.advance(at(10));
    assert_eq!(
        t.hold(r.clone(), at(11)).unwrap_err().kind(),
        ErrorKind::Lost
    );
    t.advance(at(30));
    assert!(matches!(t.hold(r, at(30)).unwrap(), HoldAnswer::Granted(_)));
}

// LOCK-05: an expired lease is never renewed, even when nobody took the key.
#[test]
fn lock_05_expired_lease_is_never_renewed() {
    let mut t = table();
    let g = granted(t.hold(req("k", Some(10)), at(0)).unwrap());
    let err = t.renew(g.lease_id, None, at(10)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Lost);
    assert_eq!(err.loss_reason(), Some(LossReason::Unknown));
    let events = t.drain_events();
    assert!(
        matches!(
            events[..],
            [Event::Lost {
                reason: LossReason::Expired,
                ..
            }]
        ),
        "{events:?}"
    );
    let again = granted(t.hold(req("k", Some(10)), at(10)).unwrap());
    assert!(again.fence > g.fence);
}

// LOCK-06: a renewal moves the expiry to now + ttl; renewals keep the lease past its ttl.
#[test]
fn lock_06_renewal_moves_expiry() {
    let mut t = table();
    let g = granted(t.hold(req("k", Some(10)), at(0)).unwrap());
    for s in [3, 6, 9, 12, 15] {
        let r = t.renew(g.lease_id, None, at(s)).unwrap();
        assert_eq!(r.expires_at, Some(at(s + 10)));
    }
    t.advance(at(24));
    assert_eq!(t.held(), 1);
    t.advance(at(25));
    assert_eq!(t.held(), 0);
}

// MANUAL-03: a renewal for a shorter time than is left moves the expiry earlier.
#[test]
fn manual_03_shorter_extension_expires_earlier() {
    let mut t = table();
    let g = granted(t.hold(req("k", Some(60)), at(0)).unwrap());
    t.renew(g.lease_id, Some(Duration::from_secs(5)), at(1))
        .unwrap();
    t.advance(at(5));
    assert_eq!(t.held(), 1);
    t.advance(at(6));
    assert_eq!(t.held(), 0);
}

// LOCK-08: renew and release of an unknown id fail Lost and change nothing.
#[test]
fn lock_08_unknown_ids_change_nothing() {
    let mut t = table();
    let g = granted(t.hold(req("k", Some(10)), at(0)).unwrap());
    let stranger = LeaseId::random();
    assert_eq!(
        t.renew(stranger, None, at(1)).unwrap_err().kind(),
        ErrorKind::Lost
    );
    assert_eq!(
        t.release(stranger, at(1)).unwrap_err().kind(),
        ErrorKind::Lost
    );
    let fence_as_id = LeaseId(u128::from(g.fence));
    assert!(t.release(fence_as_id, at(1)).is_err());
    assert_eq!(
        t.holder(&KeyName::new("l", "k")).unwrap().grant.lease_id,
        g.lease_id
    );
}

// LOCK-12: maxHold revokes at grant + maxHold whatever the renewals, and hands the key on.
#[test]
fn lock_12_max_hold_revokes_despite_renewals() {
    let mut t = table();
    let mut r = req("k", Some(10));
    r.max_hold = Some(Duration::from_secs(20));
    let g = granted(t.hold(r, at(0)).unwrap());
    assert_eq!(g.revoke_in, Some(Duration::from_secs(20)));
    let w = req("k", Some(10));
    t.hold(w.clone(), at(0)).unwrap();
    for s in [5, 10, 15] {
        let r = t.renew(g.lease_id, None, at(s)).unwrap();
        assert_eq!(r.revoke_in, Some(Duration::from_secs(20 - s)));
    }
    t.advance(at(20));
    let events = t.drain_events();
    assert!(
        matches!(&events[0], Event::Lost { reason: LossReason::Revoked, lease_id, .. } if *lease_id == g.lease_id)
    );
    assert!(
        matches!(&events[1], Event::Granted(n) if n.request_id == w.request_id && n.fence > g.fence)
    );
}

// LOCK-18: giving up leaves the line; a grant that raced the give-up is released.
#[test]
fn lock_18_give_up_leaves_the_line_or_releases() {
    let mut t = table();
    let a = granted(t.hold(req("k", None), at(0)).unwrap());
    let b = req("k", None);
    let c = req("k", None);
    t.hold(b.clone(), at(0)).unwrap();
    t.hold(c.clone(), at(0)).unwrap();
    assert_eq!(t.give_up(b.request_id, at(1)), GiveUp::LeftLine);
    t.release(a.lease_id, at(1)).unwrap();
    let Event::Granted(gc) = &t.drain_events()[0] else {
        panic!()
    };
    assert_eq!(gc.request_id, c.request_id);
    assert_eq!(
        t.give_up(c.request_id, at(2)),
        GiveUp::Released(gc.lease_id)
    );
    assert_eq!(t.held(), 0);
    assert_eq!(t.give_up(c.request_id, at(2)), GiveUp::Unknown);
}

// LOCK-19: a lease without ttl is never let go by time.
#[test]
fn lock_19_lease_without_ttl_does_not_expire() {
    let mut t = table();
    granted(t.hold(req("k", None), at(0)).unwrap());
    t.advance(at(1_000_000));
    assert_eq!(t.held(), 1);
    assert!(t.next_deadline().is_none());
}

// LOCK-20: keys are independent: a key's line does not hold up another key.
#[test]
fn lock_20_keys_are_independent() {
    let mut t = table();
    granted(t.hold(req("a", Some(10)), at(0)).unwrap());
    t.hold(req("a", Some(10)), at(0)).unwrap();
    granted(t.hold(req("b", Some(10)), at(0)).unwrap());
    let other_lock = HoldRequest {
        name: KeyName::new("m", "a"),
        ..req("a", Some(10))
    };
    granted(t.hold(other_lock, at(0)).unwrap());
    assert_eq!(t.held(), 3);
}

/// The epochs 41, 42, … of a store that persists them.
struct Persisted(u32);

impl crate::fence::EpochSource for Persisted {
    fn next_epoch(&mut self) -> Result<u32> {
        self.0 += 1;
        Ok(self.0)
    }
}

// LOCK-02: fences carry the table's epoch and grow with every grant.
#[test]
fn lock_02_fences_carry_epoch_and_grow() {
    let mut t = LeaseTable::new(
        Fences::new(Box::new(Persisted(40))).unwrap(),
        Limits::default(),
    );
    assert_eq!(t.epoch(), 41);
    let mut last = 0;
    for i in 0..100 {
        let g = granted(t.hold(req(&format!("k{i}"), None), at(0)).unwrap());
        assert!(g.fence > last);
        assert_eq!(epoch_of(g.fence), t.epoch());
        last = g.fence;
    }
}

// ERR-02 groundwork: a full line refuses another waiter.
#[test]
fn waiters_per_key_is_bounded() {
    let mut t = LeaseTable::new(Fences::wall_clock(), Limits { waiters_per_key: 1 });
    granted(t.hold(req("k", None), at(0)).unwrap());
    t.hold(req("k", None), at(0)).unwrap();
    assert_eq!(
        t.hold(req("k", None), at(0)).unwrap_err().kind(),
        ErrorKind::Unavailable
    );
}

#[test]
fn clear_ends_every_lease() {
    let mut t = table();
    granted(t.hold(req("a", None), at(0)).unwrap());
    t.hold(req("a", None), at(0)).unwrap();
    t.clear(LossReason::Closed);
    let events = t.drain_events();
    assert!(matches!(
        events[..],
        [Event::Lost {
            reason: LossReason::Closed,
            ..
        }]
    ));
    assert_eq!((t.held(), t.waiting()), (0, 0));
}

#[test]
fn holders_lists_one_lock_sorted() {
    let mut t = table();
    for k in ["b", "a"] {
        granted(t.hold(req(k, None), at(0)).unwrap());
    }
    let other = HoldRequest {
        name: KeyName::new("m", "z"),
        ..req("z", None)
    };
    granted(t.hold(other, at(0)).unwrap());
    let keys: Vec<_> = t
        .holders(Some("l"))
        .into_iter()
        .map(|h| h.name.key.to_string())
        .collect();
    assert_eq!(keys, ["a", "b"]);
    assert_eq!(t.holders(None).len(), 3);
}

// Released leases leave no timers behind for long: the heap is pruned.
#[test]
fn released_leases_do_not_grow_the_timers() {
    let mut t = table();
    for i in 0..10_000 {
        let g = granted(
            t.hold(req(&format!("k{}", i % 7), Some(3600)), at(0))
                .unwrap(),
        );
        t.release(g.lease_id, at(0)).unwrap();
    }
    assert!(t.timers.len() <= 2048, "{} timers left", t.timers.len());
    let g = granted(t.hold(req("kept", Some(10)), at(0)).unwrap());
    for _ in 0..5000 {
        let h = granted(t.hold(req("other", Some(3600)), at(0)).unwrap());
        t.release(h.lease_id, at(0)).unwrap();
    }
    t.advance(at(10));
    let events = t.drain_events();
    assert!(
        matches!(&events[..], [Event::Lost { lease_id, reason: LossReason::Expired, .. }] if *lease_id == g.lease_id),
        "{events:?}"
    );
}

fn in_group(key: &str, ttl: u64, group: GroupId) -> HoldRequest {
    HoldRequest {
        group: Some(group),
        ..req(key, Some(ttl))
    }
}

// LOCK-05: the leases of a group expire together when the group is not
// renewed, each lost on its own, and a renewal of the expired group fails
// `Lost` and brings none of them back.
#[test]
fn lock_05_a_group_expires_with_its_leases() {
    let mut t = table();
    let g = GroupId::random();
    let a = granted(t.hold(in_group("a", 10, g), at(0)).unwrap());
    let b = granted(t.hold(in_group("b", 10, g), at(4)).unwrap());
    assert_eq!(a.expires_at, Some(at(10)));
    assert_eq!(
        b.expires_at,
        Some(at(14)),
        "a grant moves the group's expiry"
    );
    assert_eq!(
        t.holder_by_id(a.lease_id).unwrap().grant.expires_at,
        Some(at(14))
    );
    assert_eq!(t.next_deadline(), Some(at(10)));
    t.advance(at(10));
    assert_eq!(t.held(), 2, "the group was moved to 14 by b's grant");
    t.advance(at(14));
    assert_eq!(t.held(), 0);
    let mut lost: Vec<LeaseId> = t
        .drain_events()
        .into_iter()
        .map(|e| match e {
            Event::Lost {
                lease_id,
                reason: LossReason::Expired,
                ..
            } => lease_id,
            other => panic!("{other:?}"),
        })
        .collect();
    lost.sort();
    let mut both = vec![a.lease_id, b.lease_id];
    both.sort();
    assert_eq!(lost, both);
    let err = t
        .renew_group(g, Duration::from_secs(10), at(15))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Lost);
    assert_eq!(t.held(), 0);
}

// LOCK-06: one renewal of a group keeps every lease in it, whatever their
// number, with one timer for all of them.
#[test]
fn lock_06_one_group_renewal_keeps_every_lease() {
    let mut t = table();
    let g = GroupId::random();
    for i in 0..1000 {
        granted(t.hold(in_group(&format!("k{i}"), 10, g), at(0)).unwrap());
    }
    assert_eq!(t.timers.len(), 1, "one timer for the group");
    for s in [3u64, 6, 9, 12, 15] {
        assert_eq!(
            t.renew_group(g, Duration::from_secs(10), at(s)).unwrap(),
            at(s + 10)
        );
    }
    t.advance(at(24));
    assert_eq!(t.held(), 1000);
    assert!(t.drain_events().is_empty());
    t.advance(at(25));
    assert_eq!(t.held(), 0);
}

// LOCK-08: a released lease leaves its group: renewing the group does not
// keep it, and its key goes to the next in line; a renewal by id takes a
// lease out of its group onto its own ttl.
#[test]
fn lock_08_a_released_lease_leaves_its_group() {
    let mut t = table();
    let g = GroupId::random();
    let a = granted(t.hold(in_group("a", 10, g), at(0)).unwrap());
    let b = granted(t.hold(in_group("b", 10, g), at(0)).unwrap());
    let next = in_group("a", 10, g);
    assert_eq!(
        t.hold(next.clone(), at(1)).unwrap(),
        HoldAnswer::Queued {
            waiting: (),
            ahead: 0
        }
    );
    t.release(a.lease_id, at(2)).unwrap();
    let Event::Granted(a2) = &t.drain_events()[0] else {
        panic!()
    };
    assert_eq!(a2.request_id, next.request_id);
    assert_eq!(t.group_members(g).len(), 2);
    assert!(t.group_members(g).iter().all(|l| *l != a.lease_id));
    t.renew(b.lease_id, Some(Duration::from_secs(30)), at(3))
        .unwrap();
    assert_eq!(t.group_members(g), vec![a2.lease_id]);
    t.advance(at(13));
    assert!(
        t.holder_by_id(a2.lease_id).is_none(),
        "expired with the group"
    );
    assert!(
        t.holder_by_id(b.lease_id).is_some(),
        "renewed on its own until 33"
    );
    t.advance(at(33));
    assert!(t.holder_by_id(b.lease_id).is_none());
}

// LOCK-12: a lease in a group is still revoked at its own maxHold, and
// leaves the group then.
#[test]
fn lock_12_a_grouped_lease_keeps_its_max_hold() {
    let mut t = table();
    let g = GroupId::random();
    let a = granted(
        t.hold(
            HoldRequest {
                max_hold: Some(Duration::from_secs(5)),
                ..in_group("a", 10, g)
            },
            at(0),
        )
        .unwrap(),
    );
    t.renew_group(g, Duration::from_secs(10), at(3)).unwrap();
    t.advance(at(5));
    assert!(matches!(
        t.drain_events()[..],
        [Event::Lost {
            reason: LossReason::Revoked,
            lease_id,
            ..
        }] if lease_id == a.lease_id
    ));
    assert!(t.group_members(g).is_empty());
    t.renew_group(g, Duration::from_secs(10), at(6)).unwrap();
}

// The live page's overview: every lock's counts, the longest held keys
// first within the query's limit, each with its line and holder.
#[test]
fn overview_selects_the_longest_held_keys_with_their_lines() {
    let mut t = table();
    for (i, key) in ["a", "b", "c", "d"].iter().enumerate() {
        t.hold_as(req(key, Some(60)), at(i as u64), &numbered(7 + i as u64))
            .unwrap();
    }
    let mut other = req("x", None);
    other.name = KeyName::new("m", "x");
    t.hold(other, at(4)).unwrap();
    t.hold_as(req("b", Some(60)), at(5), &numbered(20)).unwrap();
    t.hold_as(req("b", Some(60)), at(8), &numbered(21)).unwrap();
    let query = OverviewQuery {
        lock: Some("l".into()),
        filter: None,
        limit: 2,
    };
    let o = t.overview(&query, at(10));
    assert_eq!(o.matched, 4);
    let rows: Vec<(&str, u64, Option<&str>)> = o
        .keys
        .iter()
        .map(|r| (&*r.key, r.holder, r.identity.as_deref()))
        .collect();
    assert_eq!(
        rows,
        [("a", 7, Some("holder 7")), ("b", 8, Some("holder 8"))]
    );
    let b = &o.keys[1];
    assert_eq!(
        (b.waiting, b.oldest_wait),
        (2, Some(Duration::from_secs(5)))
    );
    assert_eq!(b.held_for, Duration::from_secs(9));
    assert_eq!(b.expires_in, Some(Duration::from_secs(51)));
    assert_eq!(o.keys[0].waiting, 0);
    let locks: Vec<(&str, usize, usize)> = o
        .locks
        .iter()
        .map(|l| (&*l.lock, l.held, l.waiting))
        .collect();
    assert_eq!(locks, [("l", 4, 2), ("m", 1, 0)]);
    let filtered = t.overview(
        &OverviewQuery {
            lock: None,
            filter: Some("x".into()),
            limit: 10,
        },
        at(10),
    );
    assert_eq!(filtered.matched, 1);
    assert_eq!(filtered.keys[0].expires_in, None);
}

// Activity is recorded only while asked for, in order, and bounded.
#[test]
fn activity_records_grants_releases_and_losses_while_on() {
    let mut t = table();
    let before = granted(t.hold(req("early", Some(5)), at(0)).unwrap());
    assert!(t.drain_activity().is_empty(), "recorded while off");
    t.record_activity(true);
    let a = granted(t.hold_as(req("k", Some(5)), at(1), &numbered(3)).unwrap());
    t.hold_as(req("k", Some(5)), at(1), &numbered(4)).unwrap();
    t.release(a.lease_id, at(2)).unwrap();
    t.release(before.lease_id, at(2)).unwrap();
    t.advance(at(30));
    let drained = t.drain_activity();
    let seen: Vec<(ActivityKind, &str, u64, &str)> = drained
        .iter()
        .map(|x| (x.kind, &*x.key, x.holder, x.identity.as_str()))
        .collect();
    assert_eq!(
        seen,
        [
            (ActivityKind::Granted, "k", 3, "holder 3"),
            (ActivityKind::Released, "k", 3, "holder 3"),
            (ActivityKind::Granted, "k", 4, "holder 4"),
            (ActivityKind::Released, "early", 0, "table"),
            (ActivityKind::Lost(LossReason::Expired), "k", 4, "holder 4"),
        ]
    );
    assert!(t.drain_activity().is_empty());
    for i in 0..ACTIVITY_KEPT + 10 {
        let g = granted(t.hold(req(&format!("n{i}"), None), at(31)).unwrap());
        t.release(g.lease_id, at(31)).unwrap();
    }
    let kept = t.drain_activity();
    assert_eq!(kept.len(), ACTIVITY_KEPT);
    assert_eq!(kept.last().unwrap().kind, ActivityKind::Released);
    t.record_activity(false);
    granted(t.hold(req("late", None), at(32)).unwrap());
    assert!(t.drain_activity().is_empty());
}

// Issue #30: what the table keeps per held lease stays small (a key's
// holder state is one allocation per held key).
#[test]
fn a_holders_state_is_96_bytes() {
    assert_eq!(std::mem::size_of::<HolderState>(), 96);
}

// A holder's grant reads back as it was made: ttl, expiry, revocation and
// the time left before it, whatever the times' compact form.
#[test]
fn a_grant_reads_back_as_made() {
    let mut t = table();
    let mut r = req("k", None);
    r.ttl = Some(Duration::from_millis(1500));
    r.max_hold = Some(Duration::from_secs(7));
    let g = granted(t.hold(r, at(2)).unwrap());
    assert_eq!(g.expires_at, Some(at(2) + Duration::from_millis(1500)));
    assert_eq!(g.revoke_at, Some(at(9)));
    assert_eq!(g.revoke_in, Some(Duration::from_secs(7)));
    let held = t.holder(&KeyName::new("l", "k")).unwrap();
    assert_eq!(held.grant, g);
    assert_eq!(held.granted_at, at(2));
    let renewed = t.renew(g.lease_id, None, at(3)).unwrap();
    assert_eq!(
        renewed.expires_at,
        Some(at(3) + Duration::from_millis(1500))
    );
    assert_eq!(renewed.revoke_in, Some(Duration::from_secs(6)));
}

// What a server's limit of keys per connection counts: the leases each
// holder number holds, through grants, hand-ons, take-overs, releases,
// give-ups, expiries and a closing store.
#[test]
fn each_holders_leases_are_counted() {
    let mut t = table();
    let a = granted(t.hold_as(req("a", Some(10)), at(0), &numbered(1)).unwrap());
    let b = granted(t.hold_as(req("b", Some(5)), at(0), &numbered(1)).unwrap());
    let waiting = req("a", Some(10));
    t.hold_as(waiting.clone(), at(0), &numbered(2)).unwrap();
    let retried = req("c", Some(10));
    t.hold_as(retried.clone(), at(0), &numbered(2)).unwrap();
    t.hold_as(retried.clone(), at(0), &numbered(2)).unwrap();
    assert_eq!((t.held_by(1), t.held_by(2)), (2, 1));
    t.release(a.lease_id, at(1)).unwrap();
    assert_eq!((t.held_by(1), t.held_by(2)), (1, 2), "a handed on to 2");
    assert!(t.set_holder(b.lease_id, &numbered(2)));
    assert!(t.set_holder(b.lease_id, &numbered(2)));
    assert_eq!((t.held_by(1), t.held_by(2)), (0, 3), "b taken over by 2");
    let c = t.lease_of(retried.request_id).unwrap();
    assert_eq!(t.give_up(retried.request_id, at(1)), GiveUp::Released(c));
    assert_eq!(t.held_by(2), 2);
    t.advance(at(6));
    assert_eq!(t.held_by(2), 1, "b expired");
    t.clear(LossReason::Unknown);
    assert_eq!(t.held_by(2), 0);
    assert!(t.held_by.is_empty());
}

// WHO-01, WHO-02: a lease keeps the identity of the holder that asked,
// also when it was granted from the line; the key's holder shows it with
// how many wait, and a free key has none.
#[test]
fn who_02_a_keys_holder_names_its_identity_and_line() {
    let mut t = table();
    assert!(t.holder(&KeyName::new("l", "k")).is_none());
    let a = granted(t.hold_as(req("k", Some(10)), at(0), &numbered(1)).unwrap());
    t.hold_as(req("k", Some(10)), at(1), &numbered(2)).unwrap();
    t.hold_as(req("k", Some(10)), at(2), &numbered(3)).unwrap();
    let h = t.holder(&KeyName::new("l", "k")).unwrap();
    assert_eq!(
        (h.grant.fence, h.identity.as_str(), h.waiting),
        (a.fence, "holder 1", 2)
    );
    t.release(a.lease_id, at(3)).unwrap();
    let h = t.holder(&KeyName::new("l", "k")).unwrap();
    assert_eq!((h.identity.as_str(), h.waiting), ("holder 2", 1));
    assert_eq!(t.holders(None)[0].identity.as_str(), "holder 2");
}
