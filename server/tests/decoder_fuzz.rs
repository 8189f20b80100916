//! ERR-02: the decoder of client frames, fed random and mutated byte strings
//! (100,000 in `make test`; `LEASEHOLD_FUZZ_CASES` sets how many), never
//! panics; whatever it accepts is a frame that round-trips. A quick check on
//! the stable toolchain; the coverage-guided fuzz target `frame_decoder`
//! (`make fuzz`, docs/fuzzing.md) goes further.

use leasehold::remote::protocol::{self, ClientFrame, Request, VERSION};
use proptest::prelude::*;

/// Valid frames of every kind, to mutate.
fn seeds() -> Vec<Vec<u8>> {
    let frames = [
        ClientFrame::Hello {
            version: VERSION,
            token: Some("writer-token".into()),
            identity: "test".into(),
        },
        ClientFrame::Hello {
            version: VERSION,
            token: None,
            identity: "worker 7".into(),
        },
        ClientFrame::Request {
            id: 1,
            body: Request::Hold {
                lock: "jobs".into(),
                key: "chat-1".into(),
                request_id: u128::MAX - 7,
                ttl_ms: 10_000,
                max_hold_ms: Some(60_000),
                queue: true,
                group: None,
            },
        },
        ClientFrame::Request {
            id: u64::MAX,
            body: Request::Renew {
                leases: vec![(1, 5_000), (u128::MAX, 3_600_000)],
            },
        },
        ClientFrame::Request {
            id: 3,
            body: Request::Release { lease_id: 42 },
        },
        ClientFrame::Request {
            id: 4,
            body: Request::GiveUp { request_id: 43 },
        },
        ClientFrame::Request {
            id: 5,
            body: Request::List {
                lock: Some("jobs".into()),
            },
        },
        ClientFrame::Request {
            id: 6,
            body: Request::Ping,
        },
    ];
    frames
        .iter()
        .map(|f| protocol::encode(f).unwrap())
        .collect()
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip {
        at: usize,
        bit: u8,
    },
    Set {
        at: usize,
        byte: u8,
    },
    Insert {
        at: usize,
        byte: u8,
    },
    Remove {
        at: usize,
    },
    Truncate {
        at: usize,
    },
    /// A huge varint (a length or a number) in the middle.
    Varint {
        at: usize,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(at, bit)| Mutation::Flip { at, bit }),
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Set { at, byte }),
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Insert { at, byte }),
        any::<usize>().prop_map(|at| Mutation::Remove { at }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
        any::<usize>().prop_map(|at| Mutation::Varint { at }),
    ]
}

fn apply(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        let n = bytes.len().max(1);
        match *m {
            Mutation::Flip { at, bit } => {
                if let Some(b) = bytes.get_mut(at % n) {
                    *b ^= 1 << bit;
                }
            }
            Mutation::Set { at, byte } => {
                if let Some(b) = bytes.get_mut(at % n) {
                    *b = byte;
                }
            }
            Mutation::Insert { at, byte } => bytes.insert(at % (bytes.len() + 1), byte),
            Mutation::Remove { at } => {
                if !bytes.is_empty() {
                    bytes.remove(at % n);
                }
            }
            Mutation::Truncate { at } => bytes.truncate(at % (bytes.len() + 1)),
            Mutation::Varint { at } => {
                let at = at % (bytes.len() + 1);
                bytes.splice(
                    at..at,
                    [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
                );
            }
        }
    }
    bytes
}

fn inputs() -> impl Strategy<Value = Vec<u8>> {
    let seeds = seeds();
    prop_oneof![
        // Random bytes, mostly short (where the decoder's branches are).
        4 => proptest::collection::vec(any::<u8>(), 0..48),
        1 => proptest::collection::vec(any::<u8>(), 0..1024),
        // Valid frames with a few mutations.
        5 => (
            proptest::sample::select(seeds),
            proptest::collection::vec(mutation(), 1..6)
        )
            .prop_map(|(seed, ms)| apply(seed, &ms)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("LEASEHOLD_FUZZ_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(100_000),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    // ERR-02: no byte string makes the decoder panic; an accepted one is a frame.
    #[test]
    fn err_02_the_decoder_never_panics(bytes in inputs()) {
        match protocol::decode::<ClientFrame>(&bytes) {
            Ok(frame) => {
                let again = protocol::encode(&frame).unwrap();
                prop_assert_eq!(protocol::decode::<ClientFrame>(&again).unwrap(), frame);
            }
            Err(e) => prop_assert_eq!(e.kind(), leasehold::ErrorKind::Protocol),
        }
    }
}
