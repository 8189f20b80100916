//! The members of the etcd cluster, one client each, and which one the
//! driver's calls go to: all of them to one member while it answers (as
//! etcd's own client pins one endpoint), and on to the next the moment a
//! try at it fails or is stuck past the try's bound. A member that failed
//! is passed over for a while; when every member failed lately, the one
//! that failed first is tried again.
//!
//! A client per member, rather than one balanced over all of them, is what
//! lets a retry go elsewhere: a balanced channel picks among the members
//! whose connection is up, and a frozen member's connection stays up.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use etcd_client::Client;
use tokio::sync::OnceCell;
use tokio::time::Instant;

/// One member: its endpoint, its client once made, and until when it is passed over.
struct Member {
    endpoint: String,
    client: OnceCell<Client>,
    passed_over_until: Mutex<Option<Instant>>,
}

impl Member {
    fn passed_over(&self, now: Instant) -> Option<Instant> {
        let until = *self
            .passed_over_until
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        until.filter(|u| *u > now)
    }

    fn pass_over(&self, until: Option<Instant>) {
        *self
            .passed_over_until
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = until;
    }
}

/// The cluster's members and the one calls go to.
pub(crate) struct Members {
    list: Vec<Member>,
    current: AtomicUsize,
    options: etcd_client::ConnectOptions,
}

/// Which member to try, and whether every member failed lately (the caller
/// then pauses before the try).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pick {
    pub(crate) member: usize,
    pub(crate) all_failed: bool,
}

impl Members {
    /// The members at `endpoints`, each reached with `options` once first tried.
    pub(crate) fn new(endpoints: &[String], options: etcd_client::ConnectOptions) -> Members {
        Members {
            list: endpoints
                .iter()
                .map(|endpoint| Member {
                    endpoint: endpoint.clone(),
                    client: OnceCell::new(),
                    passed_over_until: Mutex::new(None),
                })
                .collect(),
            current: AtomicUsize::new(0),
            options,
        }
    }

    /// The member the next try goes to: the current one unless it failed
    /// lately, else the next that did not, else the one that failed first.
    pub(crate) fn pick(&self) -> Pick {
        let now = Instant::now();
        let n = self.list.len();
        let current = self.current.load(Ordering::Relaxed) % n;
        let mut first_back: Option<(Instant, usize)> = None;
        for step in 0..n {
            let i = (current + step) % n;
            match self.list[i].passed_over(now) {
                None => {
                    if i != current {
                        self.current.store(i, Ordering::Relaxed);
                    }
                    return Pick {
                        member: i,
                        all_failed: false,
                    };
                }
                Some(until) => {
                    if first_back.is_none_or(|(at, _)| until < at) {
                        first_back = Some((until, i));
                    }
                }
            }
        }
        Pick {
            member: first_back.map_or(current, |(_, i)| i),
            all_failed: true,
        }
    }

    /// A try at `member` failed or was stuck: pass it over for `cooldown`.
    pub(crate) fn failed(&self, member: usize, cooldown: Duration) {
        self.list[member].pass_over(Some(Instant::now() + cooldown));
    }

    /// `member` answered: it is tried again like any other, and calls go to
    /// it if the current member failed.
    pub(crate) fn answered(&self, member: usize) {
        self.list[member].pass_over(None);
        let current = self.current.load(Ordering::Relaxed) % self.list.len();
        if current != member && self.list[current].passed_over(Instant::now()).is_some() {
            self.current.store(member, Ordering::Relaxed);
        }
    }

    /// The client of `member`, made on first use. Making one sends nothing
    /// unless the store logs in as a user, which asks the member for a token.
    pub(crate) async fn client(&self, member: usize) -> Result<&Client, etcd_client::Error> {
        let m = &self.list[member];
        m.client
            .get_or_try_init(|| Client::connect([m.endpoint.as_str()], Some(self.options.clone())))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn three() -> Members {
        let endpoints: Vec<String> = (0..3).map(|i| format!("http://127.0.0.1:{i}")).collect();
        Members::new(&endpoints, etcd_client::ConnectOptions::new())
    }

    // DIST-02: calls stay on one member while it answers, move on at once
    // when a try at it fails, and come back to a member that failed first
    // when every member failed lately.
    #[tokio::test(start_paused = true)]
    async fn dist_02_a_failed_member_is_passed_over() {
        let m = three();
        let cooldown = Duration::from_secs(1);
        assert_eq!(
            m.pick(),
            Pick {
                member: 0,
                all_failed: false
            }
        );
        assert_eq!(m.pick().member, 0, "calls stay on the member that answers");
        m.failed(0, cooldown);
        assert_eq!(
            m.pick(),
            Pick {
                member: 1,
                all_failed: false
            }
        );
        m.failed(1, cooldown);
        assert_eq!(m.pick().member, 2);
        tokio::time::advance(Duration::from_millis(10)).await;
        m.failed(2, cooldown);
        assert_eq!(
            m.pick(),
            Pick {
                member: 0,
                all_failed: true
            },
            "all failed: the first to fail is tried again"
        );
        m.answered(0);
        assert_eq!(
            m.pick(),
            Pick {
                member: 0,
                all_failed: false
            }
        );
        m.failed(0, cooldown);
        tokio::time::advance(Duration::from_millis(995)).await;
        assert_eq!(
            m.pick(),
            Pick {
                member: 1,
                all_failed: false
            },
            "member 1's time passed over is up, member 0's and 2's is not"
        );
    }
}
