//! Before-images of what a command changes, for the consumers that must
//! see a key's state just before it changes: a floor above that compares a
//! key's state before and after a command without keeping a copy of every
//! key between commands (test control's lock history, `control::history`),
//! and a full-sync snapshot being written ([`super::snapshot`]), which
//! copies a key it has not written yet before its first change.
//!
//! While a consumer is installed ([`PreImages::active`]: one flag, the one
//! branch the write path pays), the keyspace calls [`PreImages::take_found`]
//! with the database as it still is just before the first change of a key
//! in a command: every [`super::DbView`] write (and a write command's first
//! lookup of a key, before its lazy expiry), active expiry, and the bulk
//! changes (`FLUSHDB`, `SWAPDB`, a full resynchronisation, a snapshot's
//! restore: [`PreImages::all`]). The history's [`PreImageFn`] decides what
//! the image is (maybe of another key: an auxiliary key maps to its lock)
//! and records it here once per command; the owner reads the images after
//! the command ([`PreImages::get`]) and clears them.

use std::hash::BuildHasher;

use hashbrown::HashTable;

use super::snapshot::Snapshot;
use super::{Db, Entry};

/// Records the image of `key` of database `index` (`db`, before the
/// change) into `images`, once per command: see the module docs. `found`
/// is `key`'s entry when the caller looked it up already (`Some(None)`:
/// there is none), to spare the hook a lookup.
pub type PreImageFn = fn(db: &Db, index: usize, key: &[u8], found: Option<Option<&Entry>>, images: &mut PreImages);

/// The images of one command: `(database, name, bytes)` records in one
/// buffer, found by a scan while few, by hash past [`PreImages::SCAN_MAX`].
#[derive(Debug, Default)]
pub struct PreImages {
    /// Installed by the floor that reads the images (`None`: none taken).
    hook: Option<PreImageFn>,
    /// The full-sync snapshot being written, if one is.
    snapshot: Option<Box<Snapshot>>,
    /// `hook` or `snapshot` is set.
    on: bool,
    /// The records, one after the other: database and name lengths as
    /// 4-byte words, the name, the image.
    buf: Vec<u8>,
    /// Where each record starts in `buf`, and where the next one will.
    starts: Vec<u32>,
    /// Record numbers by the hash of `(database, name)`, once there are many.
    index: HashTable<u32>,
    hasher: super::Hasher,
}

impl PreImages {
    /// Records scanned before an index is built (a command touches a few keys).
    const SCAN_MAX: usize = 16;

    /// Whether an image is being taken (a consumer is installed).
    #[inline]
    pub fn active(&self) -> bool {
        self.on
    }

    /// Installs (or removes) the floor above's hook.
    pub fn set_hook(&mut self, hook: Option<PreImageFn>) {
        self.hook = hook;
        self.on = self.hook.is_some() || self.snapshot.is_some();
    }

    /// Installs (or removes) the running snapshot; the one there was.
    pub fn set_snapshot(&mut self, snapshot: Option<Box<Snapshot>>) -> Option<Box<Snapshot>> {
        let old = std::mem::replace(&mut self.snapshot, snapshot);
        self.on = self.hook.is_some() || self.snapshot.is_some();
        old
    }

    /// The running snapshot.
    pub fn snapshot_mut(&mut self) -> Option<&mut Snapshot> {
        self.snapshot.as_deref_mut()
    }

    /// True while a snapshot runs.
    pub fn has_snapshot(&self) -> bool {
        self.snapshot.is_some()
    }

    /// Runs the consumers for `key` of `db`: see
    /// [`take_found`](Self::take_found).
    #[inline(always)]
    pub fn take(&mut self, db: &mut Db, index: usize, key: &[u8]) {
        self.take_found(db, index, key, None);
    }

    /// Before the first change of `key` of `db` (at index `found` in its
    /// map when the caller looked it up already, `Some(None)`: absent):
    /// the snapshot copies it if it has not written it; the hook records
    /// its image unless the last record is of this very key (a command
    /// changes one key several times in a row).
    #[inline(always)]
    pub fn take_found(&mut self, db: &mut Db, index: usize, key: &[u8], found: Option<Option<usize>>) {
        if self.snapshot.is_some() {
            self.snapshot_take(db, index, key, found);
        }
        if let Some(hook) = self.hook {
            if !self.is_last(index, key) {
                let found = found.map(|f| f.and_then(|i| db.get_index(i)).map(|(_, e)| e));
                hook(db, index, key, found, self);
            }
        }
    }

    /// True if the last record is `name`'s of database `db`.
    #[inline]
    fn is_last(&self, db: usize, name: &[u8]) -> bool {
        let Some(&from) = self.starts.last() else { return false };
        let b = &self.buf[from as usize..];
        b.len() >= 8 + name.len()
            && b[..4] == (db as u32).to_le_bytes()
            && b[4..8] == (name.len() as u32).to_le_bytes()
            && &b[8..8 + name.len()] == name
    }

    /// The snapshot's part of [`take_found`](Self::take_found), out of
    /// the way of the hook's.
    #[cold]
    #[inline(never)]
    fn snapshot_take(&mut self, db: &mut Db, index: usize, key: &[u8], found: Option<Option<usize>>) {
        if let Some(s) = self.snapshot.as_deref_mut() {
            s.before_change(db, index, key, found);
        }
    }

    /// Runs the consumers for every key of `db` (before a bulk change):
    /// the snapshot writes the rest of it at once.
    pub fn all(&mut self, db: &Db, index: usize) {
        if let Some(s) = self.snapshot.as_deref_mut() {
            s.complete_db(db, index);
        }
        if let Some(hook) = self.hook {
            for (k, e) in db.iter() {
                hook(db, index, k.as_bytes(), Some(Some(e)), self);
            }
        }
    }

    fn record(&self, n: usize) -> (usize, &[u8], &[u8]) {
        let (from, to) = (self.starts[n] as usize, self.starts.get(n + 1).map_or(self.buf.len(), |&e| e as usize));
        let b = &self.buf[from..to];
        let db = u32::from_le_bytes(b[..4].try_into().expect("4 bytes")) as usize;
        let len = u32::from_le_bytes(b[4..8].try_into().expect("4 bytes")) as usize;
        (db, &b[8..8 + len], &b[8 + len..])
    }

    fn find(&self, db: usize, name: &[u8]) -> Option<usize> {
        if self.starts.len() <= Self::SCAN_MAX {
            return (0..self.starts.len()).find(|&n| {
                let (d, k, _) = self.record(n);
                d == db && k == name
            });
        }
        let hash = self.hasher.hash_one((db, name));
        self.index
            .find(hash, |&n| {
                let (d, k, _) = self.record(n as usize);
                d == db && k == name
            })
            .map(|&n| n as usize)
    }

    /// The image recorded for `name` of database `db` this command.
    pub fn get(&self, db: usize, name: &[u8]) -> Option<&[u8]> {
        self.find(db, name).map(|n| self.record(n).2)
    }

    /// Starts the record of `name` of database `db` unless there is one:
    /// the caller writes the image into the returned buffer at once (an
    /// empty image is an image too); it ends where the next record starts.
    /// `None`: already recorded this command.
    pub fn begin(&mut self, db: usize, name: &[u8]) -> Option<&mut Vec<u8>> {
        if self.find(db, name).is_some() {
            return None;
        }
        let n = self.starts.len();
        self.starts.push(self.buf.len() as u32);
        self.buf.extend_from_slice(&(db as u32).to_le_bytes());
        self.buf.extend_from_slice(&(name.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(name);
        if n + 1 > Self::SCAN_MAX {
            let PreImages { index, hasher, buf, starts, .. } = self;
            let hash_of = |m: u32| {
                let from = starts[m as usize] as usize;
                let db = u32::from_le_bytes(buf[from..from + 4].try_into().expect("4 bytes")) as usize;
                let len = u32::from_le_bytes(buf[from + 4..from + 8].try_into().expect("4 bytes")) as usize;
                hasher.hash_one((db, &buf[from + 8..from + 8 + len]))
            };
            let first = if n == Self::SCAN_MAX { 0 } else { n };
            for m in first..=n {
                index.insert_unique(hash_of(m as u32), m as u32, |&m| hash_of(m));
            }
        }
        Some(&mut self.buf)
    }

    /// Forgets the images (after the command).
    pub fn clear(&mut self) {
        if !self.starts.is_empty() {
            self.buf.clear();
            self.starts.clear();
            self.index.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_found_once_scanned_or_indexed() {
        let mut p = PreImages::default();
        let names: Vec<String> = (0..100).map(|i| format!("k{i}")).collect();
        for (i, n) in names.iter().enumerate() {
            let b = p.begin(i % 3, n.as_bytes()).expect("new");
            b.extend_from_slice(&[i as u8; 3][..i % 4]);
            assert!(p.begin(i % 3, n.as_bytes()).is_none());
            for (j, m) in names[..=i].iter().enumerate() {
                assert_eq!(p.get(j % 3, m.as_bytes()), Some(&[j as u8; 3][..j % 4]), "{i} {j}");
                assert_eq!(p.get((j + 1) % 3, m.as_bytes()), None);
            }
        }
        p.clear();
        assert!(p.starts.is_empty() && p.get(0, b"k0").is_none());
        assert!(p.begin(0, b"k0").is_some());
        assert_eq!(p.get(0, b"k0"), Some(&[][..]));
    }
}
