//! The chaos harness of issue #13: holders in every language contend for a
//! few keys of a real store while faults are injected at random from a
//! seed; every holder records its history ([`history`]) on one monotonic
//! clock ([`clock`]), and the checker ([`check`]) finds every broken promise.

pub mod check;
pub mod clock;
pub mod history;
