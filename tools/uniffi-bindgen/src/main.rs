//! uniffi's bindgen command line (`uniffi-bindgen generate --library …`).

fn main() {
    uniffi::uniffi_bindgen_main()
}
