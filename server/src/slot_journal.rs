//! The server's slot journal: what slot leases need to survive a restart,
//! kept in the data directory (SLOT-02, SLOT-06).
//!
//! `DIR/slots.json` holds every namespace's limit, tolerance, offset and ID
//! layout, and a ceiling at or above every ceiling the server gave. A restarted server
//! starts every slot's floor at that ceiling, so the holders of its last
//! run, which may issue up to their ceilings, never overlap the new ones.
//! The ceiling is written ahead by [`HEADROOM`], so that renewals do not
//! write the file each time: at most one write per headroom of time. Writes
//! go to a temp file, fsync, rename, fsync of the directory.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use leasehold::idgen::IdLayout;
use leasehold::slots::{NamespaceSpec, Recovered, SlotJournal};
use leasehold::{Error, ErrorKind};
use serde::{Deserialize, Serialize};

/// The name of the journal in the data directory.
pub const SLOTS_FILE: &str = "slots.json";
const SLOTS_TMP: &str = "slots.json.tmp";

/// How far ahead of the ceilings given the recorded ceiling is written.
pub const HEADROOM: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct FileSpec {
    limit: u32,
    tolerance_ms: u64,
    /// Absent in a journal written before offsets existed: 0 (SLOT-02).
    #[serde(default)]
    offset: u32,
    /// Absent in a journal written before ID layouts existed: the default.
    #[serde(default)]
    layout: IdLayout,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Contents {
    ceiling: u64,
    namespaces: BTreeMap<String, FileSpec>,
}

/// A [`SlotJournal`] in a data directory.
#[derive(Debug)]
pub struct FileSlotJournal {
    dir: PathBuf,
    contents: Contents,
}

fn headroom_ms() -> u64 {
    u64::try_from(HEADROOM.as_millis()).unwrap_or(u64::MAX)
}

impl FileSlotJournal {
    /// Opens the journal in `dir` (a data directory the caller has locked)
    /// and says what the last run left; no file means a first run.
    pub fn open(dir: &Path) -> io::Result<(FileSlotJournal, Recovered)> {
        let path = dir.join(SLOTS_FILE);
        let contents: Contents = match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{} is not a slot journal: {e}", path.display()),
                )
            })?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Contents::default(),
            Err(e) => return Err(e),
        };
        let recovered = Recovered {
            base_floor: contents.ceiling,
            namespaces: contents
                .namespaces
                .iter()
                .map(|(name, s)| {
                    (
                        name.clone(),
                        NamespaceSpec {
                            limit: s.limit,
                            tolerance: Duration::from_millis(s.tolerance_ms),
                            offset: s.offset,
                            layout: s.layout,
                        },
                    )
                })
                .collect(),
        };
        let journal = FileSlotJournal {
            dir: dir.to_owned(),
            contents,
        };
        Ok((journal, recovered))
    }

    fn write(&self, contents: &Contents) -> leasehold::Result<()> {
        let attempt = || -> io::Result<()> {
            let tmp = self.dir.join(SLOTS_TMP);
            {
                let mut f = File::create(&tmp)?;
                f.write_all(&serde_json::to_vec_pretty(contents)?)?;
                f.sync_all()?;
            }
            fs::rename(&tmp, self.dir.join(SLOTS_FILE))?;
            File::open(&self.dir)?.sync_all()
        };
        attempt().map_err(|e| {
            Error::new(
                ErrorKind::Internal,
                format!(
                    "cannot write the slot journal in {}: {e}",
                    self.dir.display()
                ),
            )
        })
    }
}

impl SlotJournal for FileSlotJournal {
    fn record_namespace(&mut self, name: &str, spec: NamespaceSpec) -> leasehold::Result<()> {
        let mut next = self.contents.clone();
        next.namespaces.insert(
            name.to_owned(),
            FileSpec {
                limit: spec.limit,
                tolerance_ms: u64::try_from(spec.tolerance.as_millis()).unwrap_or(u64::MAX),
                offset: spec.offset,
                layout: spec.layout,
            },
        );
        self.write(&next)?;
        self.contents = next;
        Ok(())
    }

    fn cover_ceiling(&mut self, ceiling: u64) -> leasehold::Result<()> {
        if ceiling <= self.contents.ceiling {
            return Ok(());
        }
        let next = Contents {
            ceiling: ceiling.saturating_add(headroom_ms()),
            ..self.contents.clone()
        };
        self.write(&next)?;
        self.contents = next;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: NamespaceSpec = NamespaceSpec {
        limit: 16,
        tolerance: Duration::from_millis(1500),
        offset: 4,
        layout: IdLayout::js_safe(),
    };

    // SLOT-02, SLOT-06: namespaces and the ceiling survive a reopening; the
    // ceiling is written ahead, so a smaller one writes nothing.
    #[test]
    fn slot_02_slot_06_journal_survives_reopening() {
        let tmp = tempfile::tempdir().unwrap();
        let (mut journal, first) = FileSlotJournal::open(tmp.path()).unwrap();
        assert_eq!(first, Recovered::default());
        journal.record_namespace("ids", SPEC).unwrap();
        journal.cover_ceiling(1_000).unwrap();
        let written = fs::read(tmp.path().join(SLOTS_FILE)).unwrap();
        journal.cover_ceiling(1_000 + headroom_ms()).unwrap();
        assert_eq!(fs::read(tmp.path().join(SLOTS_FILE)).unwrap(), written);
        drop(journal);
        let (_, again) = FileSlotJournal::open(tmp.path()).unwrap();
        assert_eq!(again.base_floor, 1_000 + headroom_ms());
        assert_eq!(again.namespaces, vec![("ids".to_owned(), SPEC)]);
        assert!(!tmp.path().join(SLOTS_TMP).exists());
    }

    // SLOT-02: a journal written before offsets and layouts existed reads as
    // offset 0 and the default layout.
    #[test]
    fn slot_02_journal_without_offset_or_layout_reads_as_defaults() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(
            tmp.path().join(SLOTS_FILE),
            r#"{"ceiling": 5, "namespaces": {"old": {"limit": 8, "tolerance_ms": 0}}}"#,
        )
        .unwrap();
        let (_, recovered) = FileSlotJournal::open(tmp.path()).unwrap();
        assert_eq!(recovered.namespaces[0].1.offset, 0);
        assert_eq!(recovered.namespaces[0].1.layout, IdLayout::DEFAULT);
        assert_eq!(recovered.base_floor, 5);
    }

    #[test]
    fn a_garbled_journal_is_refused_not_reset() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join(SLOTS_FILE), "{").unwrap();
        let err = FileSlotJournal::open(tmp.path()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert_eq!(
            fs::read_to_string(tmp.path().join(SLOTS_FILE)).unwrap(),
            "{"
        );
    }
}
