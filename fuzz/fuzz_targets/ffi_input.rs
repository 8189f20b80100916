//! The C ABI's parsing of what a caller passes: durations, store URLs and
//! names, through the exported `lh_*` functions with arbitrary bytes.
//!
//! The input is up to six parts separated by `0xff` (a byte that is never
//! UTF-8, so no part needs escaping): a duration string, a store URL, a
//! lock name, a key (split at `,` into the keys of a begin-many), a manual
//! lease name, and the options' numbers (a flags
//! byte, then little-endian i64s: ttl, maxHold, wait, margin, lease ttl,
//! then an ID layout's bits and tick, its epoch, and an ID).
//!
//! Asserts: nothing panics (no `LH_INTERNAL`); every failure has the code
//! its input calls for (`LH_INVALID_ARGUMENT` for bytes that are not UTF-8
//! or a bad URL, `LH_INVALID_TTL` for durations, `LH_EMPTY_NAME` or
//! `LH_INVALID_ARGUMENT` for names); a parsed duration is the core's parse
//! of the same text; a name the core refuses is never accepted; a
//! begin-many of free keys ends in the call, holds them all when every key
//! is a name the core takes and none is named twice, and holds none
//! otherwise (packed keys whose lengths do not add up fail
//! `LH_INVALID_ARGUMENT`); an ID
//! layout is taken apart by `lh_id_layout_parts` as the core does, or
//! refused with `LH_INVALID_ARGUMENT` exactly when the core's check fails.
//! A URL that parses is not connected to (it would reach the network): its
//! parse is checked with the core's parsers that `lh_store_connect` calls
//! before it opens a connection.
#![no_main]

use std::sync::OnceLock;
use std::time::Duration;

use leasehold::etcd::EtcdTarget;
use leasehold::idgen::IdLayout;
use leasehold::postgres::PostgresTarget;
use leasehold::remote::Target;
use leasehold::{duration, names};
use leasehold_ffi::{
    lh_cancel, lh_code, lh_duration_parse, lh_error, lh_error_code, lh_error_free, lh_holding,
    lh_holding_end, lh_holding_end_all, lh_holdings, lh_holdings_take, lh_id_layout,
    lh_id_layout_parts, lh_id_parts, lh_lock, lh_lock_begin_async, lh_lock_begin_many,
    lh_lock_begin_many_async, lh_lock_free, lh_lock_open, lh_lock_options, lh_lock_try_begin,
    lh_manual, lh_manual_free, lh_manual_release, lh_outcome, lh_store, lh_store_connect,
    lh_store_memory, lh_store_try_acquire,
};
use libfuzzer_sys::fuzz_target;

/// One embedded store for every input (opening one per input would
/// measure the runtime's start, not the parsing).
fn store() -> lh_store {
    static STORE: OnceLock<lh_store> = OnceLock::new();
    *STORE.get_or_init(|| {
        let mut store = lh_store::default();
        // SAFETY: `store` is valid for a write.
        let err = unsafe { lh_store_memory(&mut store) };
        assert!(err.is_null(), "lh_store_memory failed");
        store
    })
}

/// The code of an error object, which is freed; `LH_OK` for NULL.
fn code(err: *mut lh_error) -> lh_code {
    let code = lh_error_code(err);
    lh_error_free(err);
    assert_ne!(code, lh_code::LH_INTERNAL, "an export failed LH_INTERNAL");
    code
}

/// The i64 at `n` of the numbers part, zero where the input runs out.
fn number(bytes: &[u8], n: usize) -> i64 {
    let mut le = [0u8; 8];
    for (i, b) in bytes.iter().skip(1 + 8 * n).take(8).enumerate() {
        le[i] = *b;
    }
    i64::from_le_bytes(le)
}

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(6, |b| *b == 0xff);
    let mut next = || parts.next().unwrap_or(&[]);
    let (text, url, lock_name, key, lease_name, numbers) =
        (next(), next(), next(), next(), next(), next());
    check_duration(text);
    check_url(url);
    let flags = numbers.first().copied().unwrap_or(0);
    let options = lh_lock_options {
        has_ttl: flags & 1 != 0,
        ttl_ns: number(numbers, 0),
        has_max_hold: flags & 2 != 0,
        max_hold_ns: number(numbers, 1),
        has_wait: flags & 4 != 0,
        wait_ns: number(numbers, 2),
        has_margin: flags & 8 != 0,
        margin_ns: number(numbers, 3),
    };
    check_lock(lock_name, key, &options);
    check_manual(lease_name, number(numbers, 4));
    check_layout(number(numbers, 5), number(numbers, 6), number(numbers, 7));
});

/// `lh_id_layout_parts`: the core's parts of `id` in the layout of `bits`
/// (time, node and sequence bits, then the tick in ms) and `epoch`, or
/// `LH_INVALID_ARGUMENT` when the core's check refuses the layout.
fn check_layout(bits: i64, epoch: i64, id: i64) {
    let b = bits.to_le_bytes();
    let layout = lh_id_layout {
        time_bits: b[0],
        node_bits: b[1],
        sequence_bits: b[2],
        tick_ms: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        epoch_ms: epoch as u64,
    };
    let core = IdLayout::custom(b[0], b[1], b[2])
        .with_tick_ms(layout.tick_ms)
        .with_epoch(layout.epoch_ms);
    let mut parts = lh_id_parts::default();
    // SAFETY: `parts` is valid for a write.
    let c = code(unsafe { lh_id_layout_parts(layout, id as u64, &mut parts) });
    if core.check().is_err() {
        assert_eq!(c, lh_code::LH_INVALID_ARGUMENT, "layout {layout:?}");
        return;
    }
    assert_eq!(c, lh_code::LH_OK, "layout {layout:?}");
    let want = core.parts(id as u64);
    assert_eq!(
        (parts.tick, parts.timestamp_ms, parts.node, parts.sequence),
        (want.tick, want.timestamp_ms, want.node, want.sequence),
        "layout {layout:?}, id {id}"
    );
}

/// `lh_duration_parse`: the core's parse, in nanoseconds, or `LH_INVALID_TTL`.
fn check_duration(bytes: &[u8]) {
    let mut ns = -1i64;
    // SAFETY: `bytes` is readable for its length; `ns` valid for a write.
    let c = code(unsafe { lh_duration_parse(bytes.as_ptr(), bytes.len(), &mut ns) });
    let Ok(text) = std::str::from_utf8(bytes) else {
        assert_eq!(c, lh_code::LH_INVALID_ARGUMENT);
        return;
    };
    match duration::parse(text) {
        Ok(d) if d.as_nanos() <= i64::MAX as u128 => {
            assert_eq!(c, lh_code::LH_OK, "{text:?} parses in the core");
            assert_eq!(Duration::from_nanos(ns as u64), d, "{text:?}");
        }
        _ => assert_eq!(c, lh_code::LH_INVALID_TTL, "{text:?}"),
    }
}

/// Store URLs (the server store's, etcd's and PostgreSQL's): a URL the
/// core's parser refuses fails `lh_store_connect` with `LH_INVALID_ARGUMENT`
/// without a connection; one it takes is well formed and not connected to.
fn check_url(bytes: &[u8]) {
    let refused = match std::str::from_utf8(bytes) {
        Err(_) => true,
        Ok(url) if leasehold::is_etcd_url(url) => match EtcdTarget::parse(url) {
            Ok(t) => {
                assert!(!t.endpoints.is_empty(), "{url:?}: no endpoints");
                assert!(
                    t.prefix.len() >= 2 && t.prefix.starts_with('/') && t.prefix.ends_with('/'),
                    "{url:?}: prefix {:?}",
                    t.prefix
                );
                false
            }
            Err(e) => {
                assert_eq!(e.kind(), leasehold::ErrorKind::InvalidArgument, "{url:?}");
                true
            }
        },
        Ok(url) if leasehold::is_postgres_url(url) => match PostgresTarget::parse(url) {
            Ok(t) => {
                assert!(!t.config.get_hosts().is_empty(), "{url:?}: no host");
                assert!((1..=256).contains(&t.pool_size), "{url:?}: pool size");
                false
            }
            Err(e) => {
                assert_eq!(e.kind(), leasehold::ErrorKind::InvalidArgument, "{url:?}");
                true
            }
        },
        Ok(url) => match Target::parse(url) {
            Ok(t) => {
                assert!(!t.host.is_empty() || url.contains("[]"), "{url:?}: no host");
                false
            }
            Err(e) => {
                assert_eq!(e.kind(), leasehold::ErrorKind::InvalidArgument, "{url:?}");
                true
            }
        },
    };
    if refused {
        let mut out = lh_store::default();
        // SAFETY: `bytes` is readable for its length; NULL options are
        // every default; `out` is valid for a write.
        let c = code(unsafe {
            lh_store_connect(
                bytes.as_ptr(),
                bytes.len(),
                std::ptr::null(),
                lh_cancel::default(),
                &mut out,
            )
        });
        assert_eq!(
            c,
            lh_code::LH_INVALID_ARGUMENT,
            "{:?}",
            String::from_utf8_lossy(bytes)
        );
    }
}

/// Whether the core takes `bytes` as a name.
fn valid_name(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).is_ok_and(|s| names::check("name", s).is_ok())
}

/// The codes a name or duration of an option may fail with.
fn is_input_code(c: lh_code) -> bool {
    matches!(
        c,
        lh_code::LH_INVALID_ARGUMENT | lh_code::LH_EMPTY_NAME | lh_code::LH_INVALID_TTL
    )
}

/// `lh_lock_open` with a name and options, then `lh_lock_try_begin` of a key.
fn check_lock(name: &[u8], key: &[u8], options: &lh_lock_options) {
    let mut lock = lh_lock::default();
    // SAFETY: `name` is readable for its length, `options` readable,
    // `lock` valid for a write.
    let c = code(unsafe { lh_lock_open(store(), name.as_ptr(), name.len(), options, &mut lock) });
    if c != lh_code::LH_OK {
        assert!(is_input_code(c), "lh_lock_open failed {c:?}");
        return;
    }
    assert!(valid_name(name), "lh_lock_open took the name {name:?}");
    let mut holding = lh_holding::default();
    let mut held = false;
    let mut fence = 0u64;
    // SAFETY: `key` is readable for its length; the out-pointers are valid for a write.
    let c = code(unsafe {
        lh_lock_try_begin(
            lock,
            key.as_ptr(),
            key.len(),
            lh_cancel::default(),
            &mut holding,
            &mut held,
            &mut fence,
        )
    });
    if c == lh_code::LH_OK {
        assert!(valid_name(key), "lh_lock_try_begin took the key {key:?}");
        assert!(held, "a key nobody holds was not held");
        assert!(fence > 0, "fence {fence}");
        assert_eq!(code(lh_holding_end(holding)), lh_code::LH_OK);
    } else {
        assert!(
            matches!(c, lh_code::LH_INVALID_ARGUMENT | lh_code::LH_EMPTY_NAME),
            "lh_lock_try_begin failed {c:?}"
        );
        assert!(
            !valid_name(key),
            "lh_lock_try_begin refused the key {key:?}"
        );
    }
    check_begin_async(lock, key);
    check_begin_many(lock, key);
    assert_eq!(code(lh_lock_free(lock)), lh_code::LH_OK);
}

/// `lh_lock_begin_async` of the same key, the key free: done in the call
/// (no callback), as the blocking form judged the key.
fn check_begin_async(lock: lh_lock, key: &[u8]) {
    unsafe extern "C" fn never(_: u64, _: lh_outcome) {
        panic!("a free key or bad input went on to the callback");
    }
    let mut now = lh_outcome {
        error: std::ptr::null_mut(),
        handle: 0,
        held: false,
        fence: 0,
    };
    // SAFETY: `key` is readable for its length; `now` valid for a write;
    // `never` takes these arguments (and must not be called).
    let went_on = unsafe {
        lh_lock_begin_async(
            lock,
            key.as_ptr(),
            key.len(),
            std::ptr::null(),
            lh_cancel::default(),
            Some(never),
            0,
            &mut now,
        )
    };
    assert!(!went_on, "the call on a free key went on");
    let c = code(now.error);
    if c == lh_code::LH_OK {
        assert!(valid_name(key), "lh_lock_begin_async took the key {key:?}");
        assert!(
            now.held && now.handle != 0 && now.fence > 0,
            "outcome {now:?}"
        );
        assert_eq!(
            code(lh_holding_end(lh_holding { id: now.handle })),
            lh_code::LH_OK
        );
    } else {
        assert!(
            !valid_name(key),
            "lh_lock_begin_async refused the key {key:?}"
        );
    }
}

/// `lh_lock_begin_many_async` of the keys `part` holds (split at `,`),
/// every one free: done in the call, all held (each its own fence) when
/// each is a name the core takes and none repeats, else refused with an
/// input code and none held; then packed keys whose lengths do not add up.
fn check_begin_many(lock: lh_lock, part: &[u8]) {
    unsafe extern "C" fn never(_: u64, _: lh_outcome) {
        panic!("a begin-many of free keys or bad input went on to the callback");
    }
    let keys: Vec<&[u8]> = part.split(|b| *b == b',').collect();
    let lens: Vec<usize> = keys.iter().map(|k| k.len()).collect();
    let packed = keys.concat();
    let mut now = lh_outcome {
        error: std::ptr::null_mut(),
        handle: 0,
        held: false,
        fence: 0,
    };
    // SAFETY: `packed` and `lens` are readable for their lengths; `now`
    // valid for a write; `never` takes these arguments (and must not be called).
    let went_on = unsafe {
        lh_lock_begin_many_async(
            lock,
            packed.as_ptr(),
            packed.len(),
            lens.as_ptr(),
            lens.len(),
            std::ptr::null(),
            lh_cancel::default(),
            Some(never),
            0,
            &mut now,
        )
    };
    assert!(!went_on, "the begin-many of free keys went on");
    let distinct = keys.iter().collect::<std::collections::HashSet<_>>().len() == keys.len();
    let valid = distinct && keys.iter().all(|k| valid_name(k));
    let c = code(now.error);
    if !valid {
        assert!(
            matches!(c, lh_code::LH_INVALID_ARGUMENT | lh_code::LH_EMPTY_NAME),
            "lh_lock_begin_many_async of {keys:?} failed {c:?}"
        );
        assert_eq!(now.handle, 0, "a refused begin-many made a handle");
    } else {
        assert_eq!(c, lh_code::LH_OK, "lh_lock_begin_many_async refused {keys:?}");
        let mut held = vec![lh_holding::default(); keys.len()];
        let mut fences = vec![0u64; keys.len()];
        // SAFETY: `held` and `fences` have room for every key.
        let c = code(unsafe {
            lh_holdings_take(
                lh_holdings { id: now.handle },
                held.as_mut_ptr(),
                fences.as_mut_ptr(),
                keys.len(),
            )
        });
        assert_eq!(c, lh_code::LH_OK);
        let distinct_fences = fences.iter().collect::<std::collections::HashSet<_>>();
        assert!(
            fences.iter().all(|f| *f > 0) && distinct_fences.len() == fences.len(),
            "fences {fences:?}"
        );
        // SAFETY: `held` is readable for its length.
        let c = code(unsafe { lh_holding_end_all(held.as_ptr(), held.len()) });
        assert_eq!(c, lh_code::LH_OK);
    }
    let mut out = vec![lh_holding::default(); keys.len()];
    // SAFETY: `packed` is readable for its length and `lens` for theirs;
    // `out` has room for every key.
    let c = code(unsafe {
        lh_lock_begin_many(
            lock,
            packed.as_ptr(),
            packed.len() + 1,
            lens.as_ptr(),
            lens.len(),
            std::ptr::null(),
            lh_cancel::default(),
            out.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    });
    assert_eq!(c, lh_code::LH_INVALID_ARGUMENT, "lengths that do not add up");
}

/// `lh_store_try_acquire` of a manual lease by name with a ttl.
fn check_manual(name: &[u8], ttl_ns: i64) {
    let mut lease = lh_manual::default();
    let mut held = false;
    // SAFETY: `name` is readable for its length; the out-pointers are valid for a write.
    let c = code(unsafe {
        lh_store_try_acquire(
            store(),
            name.as_ptr(),
            name.len(),
            ttl_ns,
            lh_cancel::default(),
            &mut lease,
            &mut held,
        )
    });
    if c != lh_code::LH_OK {
        assert!(is_input_code(c), "lh_store_try_acquire failed {c:?}");
        return;
    }
    assert!(
        valid_name(name),
        "lh_store_try_acquire took the name {name:?}"
    );
    let ttl = Duration::from_nanos(ttl_ns as u64);
    assert!(
        duration::check_ttl("ttl", ttl).is_ok(),
        "lh_store_try_acquire took the ttl {ttl:?}"
    );
    assert!(held, "a lease nobody holds was not taken");
    assert_eq!(
        code(lh_manual_release(lease, lh_cancel::default())),
        lh_code::LH_OK
    );
    assert_eq!(code(lh_manual_free(lease)), lh_code::LH_OK);
}
