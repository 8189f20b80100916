//! The load of `make bench-live` (docs/live.md): on the server store at
//! URL, KEYS keys held (renewed as one group) and CHURN keys each with a
//! holder and a waiter that hand the key over every second: CHURN grants
//! a second, CHURN requests always waiting. Prints `ready` once every key
//! is held, then runs until its standard input closes.
//!
//! `live_load URL KEYS CHURN`

use std::time::Duration;

use leasehold::{ConnectOptions, HoldOptions, Store};

/// How many holds are begun at once while the keys are taken.
const AT_ONCE: usize = 2000;

fn usage() -> ! {
    eprintln!("usage: live_load URL KEYS CHURN");
    std::process::exit(2)
}

#[tokio::main]
async fn main() -> leasehold::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, keys, churn] = &args[..] else {
        usage()
    };
    let (Ok(keys), Ok(churn)) = (keys.parse::<usize>(), churn.parse::<usize>()) else {
        usage()
    };
    let store = Store::connect(url, ConnectOptions::default()).await?;
    let bulk = store.lock("bulk").ttl(Duration::from_secs(30)).open()?;
    let mut held = Vec::with_capacity(keys);
    for start in (0..keys).step_by(AT_ONCE) {
        let begun: Vec<_> = (start..(start + AT_ONCE).min(keys))
            .map(|i| {
                let bulk = bulk.clone();
                tokio::spawn(async move {
                    bulk.begin(&format!("key-{i:06}"), &HoldOptions::default())
                        .await
                })
            })
            .collect();
        for task in begun {
            held.push(task.await.map_err(|e| {
                leasehold::Error::new(leasehold::ErrorKind::Internal, e.to_string())
            })??);
        }
    }
    let handover = store.lock("handover").ttl(Duration::from_secs(10)).open()?;
    for k in 0..churn {
        for _ in 0..2 {
            let handover = handover.clone();
            tokio::spawn(async move {
                let key = format!("hot-{k:04}");
                loop {
                    let Ok(h) = handover.begin(&key, &HoldOptions::default()).await else {
                        return;
                    };
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    if h.end().await.is_err() {
                        return;
                    }
                }
            });
        }
    }
    println!(
        "ready: {} keys held, {churn} keys handed over every second",
        held.len()
    );
    let _ =
        tokio::task::spawn_blocking(|| std::io::copy(&mut std::io::stdin(), &mut std::io::sink()))
            .await;
    store.close().await;
    Ok(())
}
