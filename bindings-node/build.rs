//! Link settings napi-rs needs for a Node addon.

fn main() {
    napi_build::setup();
}
