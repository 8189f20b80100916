//! The server store's frame decoder (ERR-02): the bytes of a connection cut
//! into frames by the codec both sides use (a 4-byte big-endian length, at
//! most `max_frame` bytes), each payload decoded with postcard.
//!
//! Asserts: nothing panics; the codec fails only on an oversized frame; a
//! payload fails only `Protocol`; whatever decodes (as a client frame or a
//! server frame) encodes to bytes that decode to the same frame, and those
//! bytes are canonical (encoding what they decode to gives them again).
#![no_main]

use std::fmt::Debug;

use bytes::BytesMut;
use leasehold::remote::protocol::{self, ClientFrame, ServerFrame};
use leasehold::ErrorKind;
use libfuzzer_sys::fuzz_target;
use serde::{de::DeserializeOwned, Serialize};
use tokio_util::codec::{Decoder, LengthDelimitedCodecError};

/// The smallest `--max-frame` the server accepts, so that oversized frames
/// are within the fuzzer's reach.
const MAX_FRAME: usize = 1024;

fuzz_target!(|data: &[u8]| {
    // The input as one payload, as the connection hands it to the decoder.
    payload::<ClientFrame>(data);
    payload::<ServerFrame>(data);
    // The input as the bytes of a connection.
    let mut codec = leasehold::remote::codec(MAX_FRAME);
    let mut buf = BytesMut::from(data);
    loop {
        match codec.decode(&mut buf) {
            Ok(Some(frame)) => {
                assert!(frame.len() <= MAX_FRAME, "a frame over the limit passed");
                payload::<ClientFrame>(&frame);
            }
            // Waiting for more bytes: the rest is an incomplete frame.
            Ok(None) => break,
            Err(e) => {
                let oversized = e
                    .get_ref()
                    .is_some_and(|inner| inner.is::<LengthDelimitedCodecError>());
                assert!(
                    oversized,
                    "the codec failed otherwise than on an oversized frame: {e}"
                );
                break;
            }
        }
    }
});

/// Decodes `bytes` as one `T` and checks the round trip, or that it failed `Protocol`.
fn payload<T: Serialize + DeserializeOwned + PartialEq + Debug>(bytes: &[u8]) {
    match protocol::decode::<T>(bytes) {
        Ok(frame) => {
            let again = protocol::encode(&frame).expect("a decoded frame encodes");
            let back = protocol::decode::<T>(&again).expect("an encoded frame decodes");
            assert_eq!(back, frame, "decode(encode(frame)) is another frame");
            assert_eq!(
                protocol::encode(&back).expect("a decoded frame encodes"),
                again,
                "the encoding is not canonical"
            );
        }
        Err(e) => assert_eq!(e.kind(), ErrorKind::Protocol, "{e}"),
    }
}
