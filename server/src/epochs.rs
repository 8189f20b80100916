//! The server's epochs, persisted in its data directory so that every fence
//! it grants is larger than every fence it granted before it restarted
//! (LOCK-02, LOCK-15).
//!
//! `DIR/epoch` holds the last epoch taken, in decimal. Taking the next one
//! writes it to `DIR/epoch.tmp`, fsyncs it, renames it over `DIR/epoch` and
//! fsyncs the directory, so that a crash at any point leaves either the old
//! or the new epoch on disk, never a torn or lost one. `DIR/lock` is locked
//! for as long as the server runs, so two servers never share one directory.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use leasehold::fence::{next_wall_clock_epoch, EpochSource};
use leasehold::{Error, ErrorKind};
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

/// The name of the epoch file in the data directory.
pub const EPOCH_FILE: &str = "epoch";
const EPOCH_TMP: &str = "epoch.tmp";
const LOCK_FILE: &str = "lock";

/// The data directory of one running server, locked while this value lives
/// (an exclusive `flock` on `DIR/lock`, let go when the file closes).
#[derive(Debug)]
pub struct DataDir {
    path: PathBuf,
    _lock: Flock<File>,
}

impl DataDir {
    /// Creates the directory if needed and locks it; fails if another server holds it.
    pub fn open(path: &Path) -> anyhow::Result<DataDir> {
        fs::create_dir_all(path)
            .with_context(|| format!("cannot create the data directory {}", path.display()))?;
        let lock_path = path.join(LOCK_FILE);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .with_context(|| format!("cannot open {}", lock_path.display()))?;
        let lock = match Flock::lock(lock, FlockArg::LockExclusiveNonblock) {
            Ok(locked) => locked,
            Err((_, Errno::EWOULDBLOCK)) => bail!(
                "the data directory {} is in use by another leasehold server",
                path.display()
            ),
            Err((_, e)) => {
                return Err(io::Error::from(e))
                    .with_context(|| format!("cannot lock {}", lock_path.display()))
            }
        };
        Ok(DataDir {
            path: path.to_owned(),
            _lock: lock,
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// An [`EpochSource`] that persists every epoch it gives in a [`DataDir`]
/// before giving it: each is larger than the one on disk, and larger than
/// the wall clock's seconds since 1970 when the clock is ahead.
#[derive(Debug)]
pub struct FileEpochs {
    dir: DataDir,
    last: u32,
}

impl FileEpochs {
    /// Epochs persisted in `dir`.
    pub fn new(dir: DataDir) -> FileEpochs {
        FileEpochs { dir, last: 0 }
    }

    /// The epoch on disk (0 when there is no epoch file yet).
    pub fn read(dir: &Path) -> io::Result<u32> {
        let path = dir.join(EPOCH_FILE);
        match fs::read_to_string(&path) {
            Ok(text) => text.trim().parse().map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{} does not hold an epoch ({e}): {text:?}", path.display()),
                )
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(e),
        }
    }

    /// Writes `epoch` durably: temp file, fsync, rename, fsync of the directory.
    pub fn write(dir: &Path, epoch: u32) -> io::Result<()> {
        let tmp = dir.join(EPOCH_TMP);
        {
            let mut f = File::create(&tmp)?;
            writeln!(f, "{epoch}")?;
            f.sync_all()?;
        }
        fs::rename(&tmp, dir.join(EPOCH_FILE))?;
        File::open(dir)?.sync_all()
    }

    fn take(&mut self) -> io::Result<u32> {
        let on_disk = FileEpochs::read(self.dir.path())?;
        let prev = on_disk.max(self.last);
        let next =
            next_wall_clock_epoch(prev).map_err(|e| io::Error::other(e.message().to_owned()))?;
        FileEpochs::write(self.dir.path(), next)?;
        self.last = next;
        Ok(next)
    }
}

impl EpochSource for FileEpochs {
    fn next_epoch(&mut self) -> leasehold::Result<u32> {
        let epoch = self.take().map_err(|e| {
            Error::new(
                ErrorKind::Internal,
                format!(
                    "cannot persist the next epoch in {}: {e}",
                    self.dir.path().display()
                ),
            )
        })?;
        tracing::info!(epoch, dir = %self.dir.path().display(), "took a new epoch");
        Ok(epoch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // LOCK-02: each epoch is persisted and larger than the one before, across reopenings.
    #[test]
    fn lock_02_epochs_grow_and_persist() {
        let tmp = tempfile::tempdir().unwrap();
        let first = {
            let mut epochs = FileEpochs::new(DataDir::open(tmp.path()).unwrap());
            let a = epochs.next_epoch().unwrap();
            let b = epochs.next_epoch().unwrap();
            assert!(b > a);
            assert_eq!(FileEpochs::read(tmp.path()).unwrap(), b);
            b
        };
        let mut again = FileEpochs::new(DataDir::open(tmp.path()).unwrap());
        assert!(again.next_epoch().unwrap() > first);
        assert!(!tmp.path().join(EPOCH_TMP).exists());
    }

    // LOCK-02: an epoch on disk ahead of the wall clock is still exceeded.
    #[test]
    fn lock_02_epoch_ahead_of_the_clock_still_grows() {
        let tmp = tempfile::tempdir().unwrap();
        FileEpochs::write(tmp.path(), u32::MAX - 5).unwrap();
        let mut epochs = FileEpochs::new(DataDir::open(tmp.path()).unwrap());
        assert_eq!(epochs.next_epoch().unwrap(), u32::MAX - 4);
    }

    #[test]
    fn a_garbled_epoch_file_is_refused_not_reset() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join(EPOCH_FILE), "twelve\n").unwrap();
        let mut epochs = FileEpochs::new(DataDir::open(tmp.path()).unwrap());
        let err = epochs.next_epoch().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Internal);
        assert_eq!(
            fs::read_to_string(tmp.path().join(EPOCH_FILE)).unwrap(),
            "twelve\n"
        );
    }

    #[test]
    fn a_data_dir_is_locked_while_open() {
        let tmp = tempfile::tempdir().unwrap();
        let held = DataDir::open(tmp.path()).unwrap();
        let err = DataDir::open(tmp.path()).unwrap_err();
        assert!(err.to_string().contains("in use"), "{err}");
        drop(held);
        DataDir::open(tmp.path()).unwrap();
    }
}
