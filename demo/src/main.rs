//! The Rust holder of `make demo`. For `DEMO_SECONDS` it holds random keys
//! of the lock `summaries` on the server store at `LEASEHOLD_STORE`, and
//! inside each hold writes its fence to a fenced resource: the file
//! `$DEMO_DIR/<key>`, which refuses a fence that is not larger than the last
//! one written. Every language's holder does the same, side by side.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use leasehold::remote::ConnectOptions;
use leasehold::{HoldOptions, Store};
use rand::Rng;

const KEYS: [&str; 3] = ["chat-1", "chat-2", "chat-3"];

/// Unix milliseconds now: the time of each line, for the demo's timeline.
fn unix_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

/// Writes `fence` to the resource of `key` unless a fence at least as large is there already.
fn write_fenced(dir: &Path, key: &str, fence: u64) -> Result<(), String> {
    let path = dir.join(key);
    let last: u64 = std::fs::read_to_string(&path)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    if fence <= last {
        return Err(format!(
            "REJECTED fence {fence} for {key}: the resource has seen {last}"
        ));
    }
    std::fs::write(&path, fence.to_string())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

async fn run(name: &str, dir: PathBuf, seconds: u64) -> Result<usize, String> {
    let url = env("LEASEHOLD_STORE", "leasehold://127.0.0.1:7450");
    let store = Store::connect(&url, ConnectOptions::default())
        .await
        .map_err(|e| e.to_string())?;
    let lock = store
        .lock("summaries")
        .ttl(Duration::from_secs(5))
        .open()
        .map_err(|e| e.to_string())?;
    let end = Instant::now() + Duration::from_secs(seconds);
    let mut holds = 0;
    while Instant::now() < end {
        let key = KEYS[rand::thread_rng().gen_range(0..KEYS.len())];
        let asked = Instant::now();
        let holding = lock
            .begin(key, &HoldOptions::default())
            .await
            .map_err(|e| e.to_string())?;
        let fence = holding.lease().fence();
        let waited = asked.elapsed().as_millis();
        println!(
            "[rust-{name}] holds summaries/{key} fence={fence} waited={waited}ms at={}",
            unix_ms()
        );
        let written = write_fenced(&dir, key, fence);
        let work = rand::thread_rng().gen_range(20..=80);
        tokio::time::sleep(Duration::from_millis(work)).await;
        println!(
            "[rust-{name}] done summaries/{key} fence={fence} at={}",
            unix_ms()
        );
        holding.end().await.map_err(|e| e.to_string())?;
        written?;
        holds += 1;
    }
    store.close().await;
    Ok(holds)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let name = env("DEMO_NAME", "1");
    let dir = PathBuf::from(env("DEMO_DIR", "."));
    let seconds = env("DEMO_SECONDS", "4").parse().unwrap_or(4);
    match run(&name, dir, seconds).await {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("[rust-{name}] {e}");
            ExitCode::FAILURE
        }
    }
}
