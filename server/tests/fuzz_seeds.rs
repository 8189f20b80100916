//! The seed corpora of the fuzz targets (`fuzz/seeds/<target>/`,
//! `docs/fuzzing.md`): small valid inputs of every kind, made here from the
//! protocol's own types so that they stay valid. This test checks that the
//! committed files are exactly what it makes; `LEASEHOLD_FUZZ_SEEDS=write`
//! (`make fuzz-seeds`) writes them instead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use leasehold::remote::protocol::{self, ClientFrame, Request, WireSlotLease, VERSION};
use leasehold::slots::Owner;

/// A seed file's name and contents, per target.
type Seeds = BTreeMap<&'static str, BTreeMap<String, Vec<u8>>>;

fn hello(token: Option<&str>) -> ClientFrame {
    ClientFrame::Hello {
        version: VERSION,
        token: token.map(str::to_owned),
        identity: "seed".into(),
    }
}

fn request(id: u64, body: Request) -> ClientFrame {
    ClientFrame::Request { id, body }
}

fn hold(request_id: u128, key: &str, queue: bool, group: Option<u128>) -> Request {
    Request::Hold {
        lock: "jobs".into(),
        key: key.into(),
        request_id,
        ttl_ms: 10_000,
        max_hold_ms: Some(60_000),
        queue,
        group,
    }
}

fn slot_lease() -> WireSlotLease {
    WireSlotLease {
        namespace: "ids".into(),
        owner: Owner::with_instance("svc", "0123456789abcdef").unwrap(),
        slot: 0,
        offset: 0,
        fence: 1,
        floor: 0,
        expires_at: 1_000_000,
        ceiling: 1_002_000,
    }
}

/// One request of every kind, with ids from 1.
fn every_request() -> Vec<ClientFrame> {
    let owner = Owner::with_instance("svc", "0123456789abcdef").unwrap();
    [
        hold(11, "chat-1", true, None),
        hold(12, "chat-2", false, Some(99)),
        Request::Renew {
            leases: vec![(1, 5_000), (u128::MAX, 3_600_000)],
        },
        Request::Release { lease_id: 42 },
        Request::GiveUp { request_id: 11 },
        Request::List {
            lock: Some("jobs".into()),
        },
        Request::List { lock: None },
        Request::Ping,
        Request::SlotAcquire {
            namespace: "ids".into(),
            owner,
            limit: 16,
            ttl_ms: 10_000,
            tolerance_ms: 2_000,
            offset: 0,
            preferred: Some(3),
            layout: leasehold::idgen::IdLayout::js_safe(),
        },
        Request::SlotRenew {
            lease: slot_lease(),
            ttl_ms: 10_000,
        },
        Request::SlotRelease {
            lease: slot_lease(),
            last_issued: 1_000_500,
        },
        Request::RenewGroup {
            group_id: 99,
            ttl_ms: 10_000,
        },
        Request::HoldMany {
            lock: "jobs".into(),
            keys: vec![("m1".into(), 101), ("m2".into(), 102), ("k".into(), 103)],
            ttl_ms: 10_000,
            max_hold_ms: None,
            queue: true,
            group: Some(99),
        },
        Request::Holder {
            lock: "jobs".into(),
            key: "k".into(),
        },
    ]
    .into_iter()
    .zip(1..)
    .map(|(body, id)| request(id, body))
    .collect()
}

/// A connection target input: the flags byte (16: the connections are
/// open at the same time), then each connection's frames as
/// `[u16 LE length][payload]`, connections separated by `0xffff`.
fn session(flags: u8, connections: &[Vec<ClientFrame>]) -> Vec<u8> {
    let mut out = vec![flags];
    for (i, frames) in connections.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(&0xffffu16.to_le_bytes());
        }
        for frame in frames {
            let payload = protocol::encode(frame).unwrap();
            out.extend_from_slice(&u16::try_from(payload.len()).unwrap().to_le_bytes());
            out.extend_from_slice(&payload);
        }
    }
    out
}

fn frame_decoder(seeds: &mut BTreeMap<String, Vec<u8>>) {
    let mut frames = vec![hello(Some("writer-token")), hello(None)];
    frames.extend(every_request());
    for (i, frame) in frames.iter().enumerate() {
        let payload = protocol::encode(frame).unwrap();
        // As the bytes of a connection too: the length, then the payload.
        let mut wire = u32::try_from(payload.len()).unwrap().to_be_bytes().to_vec();
        wire.extend_from_slice(&payload);
        seeds.insert(format!("client-{i:02}"), payload);
        seeds.insert(format!("wire-{i:02}"), wire);
    }
}

fn connection(seeds: &mut BTreeMap<String, Vec<u8>>) {
    let mut all = vec![hello(None)];
    all.extend(every_request());
    seeds.insert("every-request".into(), session(0, &[all.clone()]));
    seeds.insert("every-request-tiny-limits".into(), session(4 | 8, &[all]));
    // A second hold of a held key waits in line; the release grants it (pushed).
    let line = vec![
        hello(None),
        request(1, hold(1, "k", true, Some(7))),
        request(2, hold(2, "k", true, None)),
        request(
            3,
            Request::RenewGroup {
                group_id: 7,
                ttl_ms: 10_000,
            },
        ),
        request(4, Request::List { lock: None }),
    ];
    seeds.insert("line".into(), session(0, std::slice::from_ref(&line)));
    // The waiting request is claimed again from the next connection.
    let again = vec![hello(None), request(1, hold(2, "k", true, None))];
    seeds.insert("reconnect".into(), session(0, &[line, again]));
    // Two connections at once: the second waits in line for the key the
    // first holds, until the first gives its request up (releasing it).
    let first = vec![
        hello(None),
        request(1, hold(21, "k", true, None)),
        request(2, Request::Ping),
        request(3, Request::GiveUp { request_id: 21 }),
    ];
    let second = vec![hello(None), request(1, hold(22, "k", true, None))];
    seeds.insert("at-once".into(), session(16, &[first, second]));
    // Tokens: a writer, a reader (Hold is PermissionDenied), none.
    let mut reader = vec![hello(Some("reader"))];
    reader.extend(every_request());
    let writer = vec![hello(Some("writer")), request(1, hold(5, "w", false, None))];
    seeds.insert(
        "tokens".into(),
        session(2, &[reader, writer, vec![hello(None)]]),
    );
    // Refusals: another version, a request before the hello, a second hello.
    let refusals = [
        vec![ClientFrame::Hello {
            version: VERSION + 1,
            token: None,
            identity: "seed".into(),
        }],
        vec![request(1, Request::Ping)],
        vec![hello(None), hello(None)],
    ];
    seeds.insert("refusals".into(), session(0, &refusals));
    // Raw bytes: a hello and a ping, then a length over the limit.
    let mut raw = vec![1 | 4];
    for frame in [hello(None), request(1, Request::Ping)] {
        let payload = protocol::encode(&frame).unwrap();
        raw.extend_from_slice(&u32::try_from(payload.len()).unwrap().to_be_bytes());
        raw.extend_from_slice(&payload);
    }
    raw.extend_from_slice(&4096u32.to_be_bytes());
    seeds.insert("raw-oversized".into(), raw);
}

fn scenario(seeds: &mut BTreeMap<String, Vec<u8>>) {
    for path in spec_tests::runner::scenario_files().unwrap() {
        let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
        seeds.insert(name, std::fs::read(&path).unwrap());
    }
}

fn ffi_input(seeds: &mut BTreeMap<String, Vec<u8>>) {
    // Parts: duration, URL, lock name, key, lease name, then the flags
    // byte (ttl, maxHold, wait, margin given) and five i64s (ns).
    let numbers = |flags: u8, values: [i64; 5]| {
        let mut out = vec![flags];
        for v in values {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out
    };
    const S: i64 = 1_000_000_000;
    // A seed's name, its five text parts and its numbers.
    type Case = (&'static str, [&'static [u8]; 5], Vec<u8>);
    let cases: [Case; 5] = [
        (
            "server-url",
            [
                b"30s",
                b"leasehold://127.0.0.1:7450",
                b"jobs",
                b"chat-1",
                b"migration",
            ],
            numbers(15, [10 * S, 60 * S, 5 * S, S, 30 * S]),
        ),
        (
            "etcd-url",
            [
                b"1m30s",
                b"etcds://user:p%40ss@[::1]:2379,h2/team-a",
                b"l",
                b"k",
                b"m",
            ],
            numbers(1, [S, 0, 0, 0, 3600 * S]),
        ),
        (
            "bad-url",
            [b"250ms", b"leasehold://h:7450/path?q", b"", b"k", b""],
            numbers(0, [0, 0, 0, 0, 0]),
        ),
        (
            "not-utf8",
            [
                b"\xc3(",
                b"etcd://\xe2\x82",
                b"\x80",
                b"\xed\xa0\x80",
                b"ok",
            ],
            numbers(2, [-1, -1, -1, -1, -1]),
        ),
        (
            "bad-durations",
            [b"soon", b"redis://h", b"jobs", b"k", b"lease"],
            numbers(15, [S, S / 2, -5, 6 * S, 2 * 3600 * S]),
        ),
    ];
    for (name, parts, nums) in cases {
        let mut input = Vec::new();
        for part in parts {
            input.extend_from_slice(part);
            input.push(0xff);
        }
        input.extend_from_slice(&nums);
        seeds.insert(name.into(), input);
    }
}

fn all() -> Seeds {
    let mut seeds = Seeds::new();
    frame_decoder(seeds.entry("frame_decoder").or_default());
    connection(seeds.entry("connection").or_default());
    scenario(seeds.entry("scenario").or_default());
    ffi_input(seeds.entry("ffi_input").or_default());
    seeds
}

fn seed_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds")
}

// The committed seed corpora are what `all` makes (LEASEHOLD_FUZZ_SEEDS=write rewrites them).
#[test]
fn fuzz_seeds_are_current() {
    let write = std::env::var("LEASEHOLD_FUZZ_SEEDS").is_ok_and(|v| v == "write");
    for (target, files) in all() {
        let dir = seed_dir().join(target);
        if write {
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            for (name, bytes) in &files {
                std::fs::write(dir.join(name), bytes).unwrap();
            }
            continue;
        }
        let mut committed = BTreeMap::new();
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            committed.insert(name, std::fs::read(&path).unwrap());
        }
        assert!(
            committed == files,
            "fuzz/seeds/{target} is stale: run `make fuzz-seeds`"
        );
    }
}
