//! [`Rule::FailedWithQuorum`] (DIST-09): on a store that keeps a quorum
//! (etcd), a hold failed for want of the store (`Unavailable`, `Timeout`,
//! or its lease `Lost`) although the store as a whole was within reach for
//! the whole call and its holder was never frozen meanwhile: the death,
//! freeze or cut-off of one member must cost an election and a round trip,
//! never a failed call.

use super::model::Run;
use super::{Report, Rule, Violation};

/// Whether an outcome, as any holder's language writes it (`Unavailable`,
/// `UNAVAILABLE`, Go's `leasehold: Unavailable: …`), is a failure for want
/// of the store.
fn for_want_of_the_store(outcome: &str) -> bool {
    let code = outcome.strip_prefix("leasehold: ").unwrap_or(outcome);
    let code = code.split(':').next().unwrap_or("").trim();
    let code: String = code
        .chars()
        .filter(|c| *c != '_')
        .flat_map(char::to_lowercase)
        .collect();
    matches!(code.as_str(), "unavailable" | "timeout" | "lost")
}

/// Finds the calls that failed while a quorum was within reach.
pub fn failed_with_quorum(run: &Run, report: &mut Report) {
    for call in &run.calls {
        if !for_want_of_the_store(&call.outcome)
            || run.store_unreachable_within(call.from, call.to)
            || run.frozen_within(call.pid, call.from, call.to)
        {
            continue;
        }
        report.violations.push(Violation {
            rule: Rule::FailedWithQuorum,
            at: call.to,
            detail: format!(
                "{} (pid {}): a call on {} failed {} after {} ms, the store within reach throughout",
                call.process,
                call.pid,
                call.key,
                call.outcome,
                (call.to - call.from) / 1_000_000
            ),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::for_want_of_the_store;

    #[test]
    fn every_languages_codes_are_read() {
        for failed in [
            "Unavailable",
            "UNAVAILABLE",
            "Timeout",
            "Lost",
            "LOST",
            "leasehold: Unavailable: etcd could not be reached",
        ] {
            assert!(for_want_of_the_store(failed), "{failed}");
        }
        for other in ["ok", "not_held", "WaitTimeout", "WAIT_TIMEOUT", "Cancelled"] {
            assert!(!for_want_of_the_store(other), "{other}");
        }
    }
}
