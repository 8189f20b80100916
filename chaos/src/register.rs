//! The fenced register the holders write to: one file per key holding the
//! fence of the last write that landed, updated under `flock` only when
//! the new fence is larger (the file's `UPDATE … SET fence = $f WHERE key
//! = $k AND fence < $f`). The write's event is recorded while the lock is
//! held, so the histories list landed writes in the order they landed.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

use crate::history::{Event, Kind, Recorder};

/// The register in a directory shared by every holder of a run.
#[derive(Debug, Clone)]
pub struct Register {
    dir: PathBuf,
}

impl Register {
    /// The register in `dir` (created if missing).
    pub fn open(dir: &Path) -> std::io::Result<Register> {
        std::fs::create_dir_all(dir)?;
        Ok(Register {
            dir: dir.to_owned(),
        })
    }

    /// Writes `fence` to `key` if it is larger than the last fence that
    /// landed there, recording the write as `landed` or `refused`; answers
    /// whether it landed.
    pub fn write(&self, key: &str, fence: u64, recorder: &Recorder) -> std::io::Result<bool> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(self.dir.join(key))?;
        let mut file: Flock<File> =
            Flock::lock(file, FlockArg::LockExclusive).map_err(|(_, e)| std::io::Error::from(e))?;
        let mut text = String::new();
        file.read_to_string(&mut text)?;
        let last: u64 = text.trim().parse().unwrap_or(0);
        let landed = fence > last;
        if landed {
            file.seek(SeekFrom::Start(0))?;
            file.set_len(0)?;
            file.write_all(fence.to_string().as_bytes())?;
        }
        let reason = if landed { "landed" } else { "refused" };
        recorder.record(Event::new(Kind::Write).key(key).fence(fence).reason(reason));
        Ok(landed)
    }
}
