//! `leasehold-chaos`: the harness, a holder, and the checker.

fn main() {}
