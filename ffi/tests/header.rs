//! The committed `include/leasehold.h` is what cbindgen makes of the source
//! now: a change to the ABI that was not written to the header fails here.
//! Regenerate with `LEASEHOLD_WRITE_HEADER=1 cargo build -p leasehold-ffi`.

#[test]
fn the_committed_header_is_fresh() {
    let fresh = include_str!(concat!(env!("OUT_DIR"), "/leasehold.h"));
    let committed =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/leasehold.h"))
            .expect("ffi/include/leasehold.h reads");
    assert!(
        fresh == committed,
        "ffi/include/leasehold.h is stale: run `LEASEHOLD_WRITE_HEADER=1 cargo build -p leasehold-ffi`"
    );
}
