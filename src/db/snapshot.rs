//! A point-in-time RDB file of the keyspace, made a piece at a time while
//! the keyspace keeps changing: what a full resynchronisation sends a
//! replica (Redis forks for it; we copy on write, one key at a time).
//!
//! At the start ([`Snapshot::start`], the stream's offset O) every database
//! begins a new *generation* (`Entries::new_generation`, O(1)): each entry
//! carries the generation of the last snapshot that saw it (`Entry::mark`,
//! two bytes in what was padding), and every entry stored from then on is
//! marked with the new one. An entry is written once, by whichever comes
//! first:
//!
//! * the cursor ([`Snapshot::step`], a bounded slice per event-loop turn),
//!   which walks each database from its last index down and writes (and
//!   marks) the unmarked entries it meets. Removal is `swap_remove` (the
//!   last entry moves into the hole) and insertion appends, so an entry
//!   not yet looked at only ever moves down, never past the cursor;
//!   whatever is at or above the cursor is marked (looked at, or stored
//!   after O);
//! * the keyspace's before-image hook ([`super::preimage`]), just before
//!   the first change of an entry (a write, a deletion, lazy or active
//!   expiry, eviction): [`Snapshot::before_change`] writes the entry as it
//!   still is — as of O, since it is unmarked — and marks it. Keys of a
//!   database the cursor has not reached yet go to that database's own
//!   buffer, written right after its `SELECTDB` when the cursor gets there.
//!
//! So the file holds each key present at O once, with its value and
//! deadline as of O (a key that expired meanwhile is written with its
//! deadline; the replica expires it), and no key stored after O: the
//! stream from O re-creates those. Bulk changes (`FLUSHDB`, `SWAPDB`, a
//! snapshot's restore, a full resynchronisation of this node) first write
//! the rest of the databases they replace at once ([`Snapshot::complete_db`]).
//!
//! Costs: nothing per key while no snapshot runs (the hook's one branch,
//! and the store of the generation into an entry as it is stored); during
//! one, a mark compare per first change of a key in a command, and the
//! file itself in memory, handed over in pieces with the CRC carried on.

use std::time::Instant;

use bytes::Bytes;

use super::rdb::{key_record, FileWriter};
use super::Db;

/// Bytes gathered before they are cut off the writer as one piece.
const PIECE: usize = 256 * 1024;

/// A database as the snapshot sees it.
#[derive(Debug, Default)]
struct Part {
    /// Keys, and keys with a deadline, at O (`RESIZEDB`; 0: no section).
    keys: usize,
    expires: usize,
    /// Records of keys changed before the cursor reached this database.
    early: Vec<u8>,
    /// Every key of it as of O is written (a bulk change came): the
    /// cursor does not walk it.
    complete: bool,
}

/// See the module docs.
#[derive(Debug)]
pub struct Snapshot {
    w: FileWriter,
    /// The file's pieces so far, in order.
    pieces: Vec<Bytes>,
    parts: Vec<Part>,
    /// The database the cursor walks (`parts.len()`: all walked).
    at: usize,
    /// Its section (`SELECTDB`…) is written: its keys go to `w`.
    open: bool,
    /// Entries of `at` at this index and above were looked at.
    cursor: usize,
    list_fill: i64,
    scratch: Vec<u8>,
}

impl Snapshot {
    /// Begins the snapshot of `dbs` as they are now; `w` holds the file's
    /// head already (aux fields, functions).
    pub fn start(dbs: &mut [Db], w: FileWriter, list_fill: i64) -> Snapshot {
        let parts = dbs
            .iter_mut()
            .map(|db| {
                db.map.new_generation();
                Part { keys: db.len(), expires: db.expires_len(), ..Default::default() }
            })
            .collect();
        Snapshot { w, pieces: Vec::new(), parts, at: 0, open: false, cursor: 0, list_fill, scratch: Vec::new() }
    }

    /// Walks on until every key is written (true) or `deadline` passes.
    pub fn step(&mut self, dbs: &mut [Db], deadline: Option<Instant>) -> bool {
        let mut n = 0u32;
        while self.at < self.parts.len() {
            let part = &mut self.parts[self.at];
            if !self.open {
                if part.keys == 0 {
                    self.at += 1;
                    continue;
                }
                self.w.select_db(self.at, part.keys, part.expires);
                self.w.records(&std::mem::take(&mut part.early));
                self.open = true;
                self.cursor = if part.complete { 0 } else { dbs[self.at].len() };
            }
            let db = &mut dbs[self.at];
            loop {
                // Keys may have gone meanwhile (the walk resumes below them).
                self.cursor = self.cursor.min(db.len());
                if self.cursor == 0 {
                    break;
                }
                self.cursor -= 1;
                if let Some((k, e)) = db.map.claim_index(self.cursor) {
                    self.w.key(k, e);
                }
                n += 1;
                if n.is_multiple_of(64) {
                    self.cut();
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return false;
                    }
                }
            }
            self.at += 1;
            self.open = false;
        }
        true
    }

    /// Cuts a piece off the writer once it holds enough.
    fn cut(&mut self) {
        if self.w.pending() >= PIECE {
            self.pieces.push(Bytes::from(self.w.take()));
        }
    }

    /// Where the record of a key of database `index` goes now: the file,
    /// or the database's own buffer until its section begins.
    fn record(&mut self, index: usize, key: &[u8], entry: &super::Entry) {
        if index == self.at && self.open {
            self.w.key(key, entry);
        } else {
            key_record(&mut self.parts[index].early, &mut self.scratch, key, entry, self.list_fill);
        }
    }

    /// Just before the first change of `key` of database `index` (found
    /// at index `found` when the caller looked: `Some(None)`, absent):
    /// writes it as it still is unless it was written or stored after O.
    #[inline]
    pub fn before_change(&mut self, db: &mut Db, index: usize, key: &[u8], found: Option<Option<usize>>) {
        if index < self.at || self.parts.get(index).is_none_or(|p| p.complete) {
            return;
        }
        let idx = match found {
            Some(Some(i)) => i,
            Some(None) => return,
            None => match db.map.get_index_of(key) {
                Some(i) => i,
                None => return,
            },
        };
        if let Some((k, e)) = db.map.claim_index(idx) {
            self.record(index, k, e);
        }
    }

    /// Before a bulk change of database `index` (`FLUSHDB`, `SWAPDB`, a
    /// restore…): writes every key of it not written yet, at once.
    pub fn complete_db(&mut self, db: &Db, index: usize) {
        if index < self.at || self.parts.get(index).is_none_or(|p| p.complete) {
            return;
        }
        let gen = db.map.gen();
        for (k, e) in db.iter() {
            if e.mark != gen {
                self.record(index, k, e);
            }
        }
        self.parts[index].complete = true;
        if index == self.at && self.open {
            self.cursor = 0;
        }
    }

    /// The whole file, in pieces, once [`step`](Self::step) said so.
    pub fn finish(mut self) -> Vec<Bytes> {
        let last = self.w.finish();
        self.pieces.push(Bytes::from(last));
        self.pieces
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::{Keyspace, Value};

    fn file(ks: &mut Keyspace, writes: impl Fn(&mut Keyspace, usize)) -> Vec<u8> {
        let mut s = Snapshot::start(&mut ks.dbs, FileWriter::new(-2), -2);
        ks.sig.images.set_snapshot(Some(Box::new(s)));
        let mut turn = 0;
        loop {
            writes(ks, turn);
            turn += 1;
            let Keyspace { dbs, sig, .. } = ks;
            s = *sig.images.set_snapshot(None).expect("running");
            // A slice of a few keys per turn.
            let done = s.step(dbs, Some(Instant::now()));
            if done {
                return s.finish().concat();
            }
            sig.images.set_snapshot(Some(Box::new(s)));
        }
    }

    fn keys_of(file: &[u8]) -> Vec<(usize, String, String, Option<u64>)> {
        let f = super::super::rdb::load_file(file, 4).expect("loads");
        let mut out: Vec<_> = f
            .keys
            .into_iter()
            .map(|k| {
                let v = match k.value {
                    Value::Str(s) => String::from_utf8_lossy(&s).into_owned(),
                    other => format!("{other:?}"),
                };
                (k.db, String::from_utf8_lossy(&k.key).into_owned(), v, k.expire_ms)
            })
            .collect();
        out.sort();
        out
    }

    /// `SWAPDB` of the database being walked with one not reached yet, and
    /// `FLUSHALL`-like clears after: both are written whole first, as of
    /// the start; what the swapped and cleared databases get later is not.
    #[test]
    fn bulk_changes_in_the_middle_keep_the_start() {
        let mut ks = Keyspace::new(2);
        let mut expected = Vec::new();
        for db in 0..2usize {
            for i in 0..500 {
                ks.view(db).set(
                    &Bytes::from(format!("k{i}")),
                    Value::Str(crate::db::StrValue::from(format!("{db}"))),
                    false,
                );
                expected.push((db, format!("k{i}"), format!("{db}"), None));
            }
        }
        expected.sort();
        let got = keys_of(&file(&mut ks, |ks, turn| {
            if turn == 2 {
                let Keyspace { dbs, sig, .. } = ks;
                sig.images.all(&dbs[0], 0);
                sig.images.all(&dbs[1], 1);
                dbs.swap(0, 1);
            }
            if turn == 3 {
                let Keyspace { dbs, sig, .. } = ks;
                for (i, db) in dbs.iter_mut().enumerate() {
                    sig.images.all(db, i);
                    db.clear();
                }
            }
            ks.view(turn % 2).set(
                &Bytes::from(format!("k{turn}")),
                Value::Str(crate::db::StrValue::from("later")),
                false,
            );
            ks.sig.images.clear();
        }));
        assert_eq!(got, expected);
    }

    /// Every key deleted in the middle of the walk (not by a bulk change):
    /// the walk ends there, the file still holds them all.
    #[test]
    fn a_database_emptied_during_the_walk() {
        let mut ks = Keyspace::new(1);
        let mut expected = Vec::new();
        for i in 0..1000 {
            ks.view(0).set(&Bytes::from(format!("k{i}")), Value::Str(crate::db::StrValue::from("v")), false);
            expected.push((0, format!("k{i}"), "v".to_string(), None));
        }
        expected.sort();
        let got = keys_of(&file(&mut ks, |ks, turn| {
            if turn == 1 {
                for i in 0..1000 {
                    ks.view(0).remove(format!("k{i}").as_bytes());
                }
            }
            ks.sig.images.clear();
        }));
        assert_eq!(got, expected);
    }

    /// Writes, deletions, expiries and new keys during the walk: the file
    /// holds the keys as they were at the start, each once.
    #[test]
    fn the_file_is_the_keyspace_at_the_start() {
        let mut ks = Keyspace::new(4);
        ks.now = 1_000;
        let mut expected = Vec::new();
        for db in [0usize, 2] {
            for i in 0..3000 {
                let key = Bytes::from(format!("k{i}"));
                let mut v = ks.view(db);
                v.set(&key, Value::Str(crate::db::StrValue::from(format!("v{i}"))), false);
                let at = (i % 7 == 0).then(|| 2_000 + i as u64);
                if let Some(at) = at {
                    v.set_expire(&key, at);
                }
                expected.push((db, format!("k{i}"), format!("v{i}"), at));
            }
        }
        expected.sort();
        let got = keys_of(&file(&mut ks, |ks, turn| {
            // Each turn: change, delete and add keys all over both databases,
            // and let time pass so that some deadlines come.
            ks.now = 1_000 + turn as u64 * 50;
            for db in [0usize, 2, 3] {
                for j in 0..20 {
                    let i = (turn * 37 + j * 151) % 3000;
                    let key = Bytes::from(format!("k{i}"));
                    let mut v = ks.view(db);
                    match j % 4 {
                        0 => v.set(&key, Value::Str(crate::db::StrValue::from("changed")), false),
                        1 => {
                            v.remove(&key);
                        }
                        2 => v.set(
                            &Bytes::from(format!("new{turn}-{j}")),
                            Value::Str(crate::db::StrValue::from("n")),
                            false,
                        ),
                        _ => {
                            v.set_expire(&key, 1);
                        }
                    }
                }
                let now = ks.now;
                let Keyspace { dbs, sig, .. } = ks;
                dbs[db].expire_due(db, now, 50, sig);
            }
            if turn == 5 {
                // A bulk change of a database not walked yet.
                let Keyspace { dbs, sig, .. } = ks;
                sig.images.all(&dbs[2], 2);
                dbs[2].clear();
            }
            ks.sig.images.clear();
        }));
        assert_eq!(got, expected);
        // Once done, the next snapshot writes everything again.
        let mut all = Vec::new();
        for (i, db) in ks.dbs.iter().enumerate() {
            for (k, e) in db.iter() {
                let Value::Str(v) = &e.value else { panic!() };
                all.push((
                    i,
                    String::from_utf8_lossy(k).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                    e.expire(),
                ));
            }
        }
        all.sort();
        assert_eq!(keys_of(&file(&mut ks, |_, _| {})), all);
    }
}
