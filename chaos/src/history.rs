//! The history format: one JSON object a line, written by every holder (in
//! every language) and by the harness, read back by the checker.
//!
//! ```json
//! {"ns":81234567890,"process":"rust-2","pid":4242,"kind":"granted","key":"k3","fence":7301,"lease":"9f…","request":"0c…","sent":81234500000}
//! ```
//!
//! `ns` is `CLOCK_MONOTONIC` in nanoseconds ([`crate::clock`]). Ids are
//! 32 hex digits. A field that does not apply is left out.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::clock::now_ns;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A hold request was sent: `key`, `request`, `ttl_ms`, `group`, `queue`.
    Request,
    /// A hold request was answered that it waits in line: `key`, `request`.
    Queued,
    /// A grant arrived (answer or push): `key`, `request`, `lease`, `fence`,
    /// `group`, `sent` (when its request was sent).
    Granted,
    /// A renewal was confirmed: `lease` (by id) or `group` (by group), `sent`, `ttl_ms`.
    Renewed,
    /// A release was sent: `key`, `lease`.
    Release,
    /// A waiting request was given up (wait bound, cancellation): `key`, `request`.
    GiveUp,
    /// The holder learnt that its lease is lost: `key`, `fence`, `reason`.
    Lost,
    /// The held function started: `key`, `fence`.
    Start,
    /// The held function ended: `key`, `fence`.
    End,
    /// The hold call returned: `key`, `fence` (when granted), `reason`: `ok`,
    /// `lost`, `not_held`, `wait_timeout` or another error code.
    Outcome,
    /// A fenced write: `key`, `fence`, `reason`: `landed` or `refused`;
    /// `seq` when it went to PostgreSQL. After the run the harness adds one
    /// per row of the table, `reason` `final`, `fence` and `seq` as the row has them.
    Write,
    /// The harness injected a fault: `reason` names its kind, `target` the
    /// process it hit (`freeze`, `thaw`, `kill_holder`, `kill_server`,
    /// `restart_server`, `cut`, `delay`, …).
    Fault,
}

/// One line of a history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// `CLOCK_MONOTONIC` nanoseconds when it happened.
    pub ns: u64,
    /// The process's name in the run (`rust-2`, `python-0`, `harness`).
    pub process: String,
    /// Its operating-system process id.
    pub pid: u32,
    /// What happened.
    pub kind: Kind,
    /// The key (lock names are one per run, so the key alone names it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The lease's fence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fence: Option<u64>,
    /// The lease id, hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<String>,
    /// The request id, hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
    /// The renewal group, hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Why: a loss reason, an outcome, a fault's kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// For an answer: when the request it answers was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent: Option<u64>,
    /// The ttl asked for, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// For a request: whether it waits in line (`false`: a try).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<bool>,
    /// For a write to PostgreSQL: the row's count of landed writes after it
    /// (the order writes landed in on the key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// For a fault: the process it hit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<u32>,
}

impl Event {
    /// An event of `kind` now, with no other field set.
    pub fn new(kind: Kind) -> Event {
        Event::at(now_ns(), kind)
    }

    /// An event of `kind` at `ns`, with no other field set.
    pub fn at(ns: u64, kind: Kind) -> Event {
        Event {
            ns,
            process: String::new(),
            pid: 0,
            kind,
            key: None,
            fence: None,
            lease: None,
            request: None,
            group: None,
            reason: None,
            sent: None,
            ttl_ms: None,
            queue: None,
            seq: None,
            target: None,
        }
    }

    /// With `key`.
    pub fn key(mut self, key: &str) -> Event {
        self.key = Some(key.to_owned());
        self
    }

    /// With `fence`.
    pub fn fence(mut self, fence: u64) -> Event {
        self.fence = Some(fence);
        self
    }

    /// With the lease id `lease`.
    pub fn lease(mut self, lease: u128) -> Event {
        self.lease = Some(format!("{lease:032x}"));
        self
    }

    /// With the request id `request`.
    pub fn request(mut self, request: u128) -> Event {
        self.request = Some(format!("{request:032x}"));
        self
    }

    /// With the renewal group `group`.
    pub fn group(mut self, group: u128) -> Event {
        self.group = Some(format!("{group:032x}"));
        self
    }

    /// With `reason`.
    pub fn reason(mut self, reason: &str) -> Event {
        self.reason = Some(reason.to_owned());
        self
    }

    /// With the send time of the request this answers.
    pub fn sent(mut self, sent: u64) -> Event {
        self.sent = Some(sent);
        self
    }

    /// With the ttl asked for.
    pub fn ttl_ms(mut self, ttl_ms: u64) -> Event {
        self.ttl_ms = Some(ttl_ms);
        self
    }

    /// With whether the request waits in line.
    pub fn queue(mut self, queue: bool) -> Event {
        self.queue = Some(queue);
        self
    }

    /// With a PostgreSQL write's place in its row's order.
    pub fn seq(mut self, seq: u64) -> Event {
        self.seq = Some(seq);
        self
    }

    /// With the process a fault hit.
    pub fn target(mut self, pid: u32) -> Event {
        self.target = Some(pid);
        self
    }
}

/// Appends one process's events to its history file, one `write(2)` a line,
/// so that a process killed with SIGKILL loses nothing it recorded.
#[derive(Debug)]
pub struct Recorder {
    process: String,
    pid: u32,
    file: Mutex<File>,
}

impl Recorder {
    /// Appends to `path` (created if missing) as process `process`.
    pub fn create(path: &Path, process: &str) -> std::io::Result<Recorder> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Recorder {
            process: process.to_owned(),
            pid: std::process::id(),
            file: Mutex::new(file),
        })
    }

    /// Records `event` as this process's.
    pub fn record(&self, mut event: Event) {
        event.process.clone_from(&self.process);
        event.pid = self.pid;
        let mut line = serde_json::to_vec(&event).expect("an event serialises");
        line.push(b'\n');
        self.file
            .lock()
            .unwrap()
            .write_all(&line)
            .expect("write the history");
    }
}

/// Reads every `*.jsonl` history in `dir`. A last line cut short (its
/// process was killed while writing it) is skipped; any other bad line fails.
pub fn read_dir(dir: &Path) -> anyhow::Result<Vec<Event>> {
    let mut events = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            events.extend(read_file(&path)?);
        }
    }
    Ok(events)
}

/// Reads one history file.
pub fn read_file(path: &Path) -> anyhow::Result<Vec<Event>> {
    let lines: Vec<String> = BufReader::new(File::open(path)?)
        .lines()
        .collect::<Result<_, _>>()?;
    let mut events = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        match serde_json::from_str(line) {
            Ok(event) => events.push(event),
            Err(_) if i + 1 == lines.len() => {}
            Err(e) => anyhow::bail!("{}:{}: {e}: {line}", path.display(), i + 1),
        }
    }
    Ok(events)
}
