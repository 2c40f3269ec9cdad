//! One value in Redis 7.0's RDB format (version 10), as `DUMP` writes and
//! `RESTORE` reads it: the type byte, the value, the 2-byte RDB version and
//! the CRC-64 (Jones polynomial, reflected) of everything before it.
//!
//! The value is written in the encoding Redis would use for it
//! ([`Entry::encoding`]): strings as integers (`RDB_ENC_INT8/16/32`), raw, or
//! LZF-compressed when longer than 20 bytes and compression saves at least
//! 4 bytes; lists as a quicklist of listpack nodes; sets as an intset or a
//! plain member list; hashes and sorted sets as a listpack or a plain list
//! (sorted sets with binary doubles); streams as listpack nodes (master entry,
//! id deltas, same-fields flags) with their counters, groups, PELs and
//! consumers (`RDB_TYPE_STREAM_LISTPACKS_2`).
//!
//! Everything read is bound-checked (Redis's `sanitize-dump-payload yes`
//! checks, always on): a declared length never allocates more than the
//! payload can hold, listpacks and intsets are validated entry by entry,
//! duplicates are refused.
//!
//! Whole RDB files, for replication over TCP: [`FileWriter`] lays one out as
//! Redis 7.0 does (`REDIS0010`, aux fields, function libraries, per database
//! `SELECTDB`/`RESIZEDB`, each key with its `EXPIRETIME_MS`, `EOF` and the
//! CRC-64); [`load_file`] reads one back (the same value encodings, the
//! opcodes of versions up to 10, modules refused) with the same checks.

use bytes::Bytes;

use super::hash_value::DEADLINE_MAX;
use super::list_value::Elem;
use super::stream::{Consumer, Fields, Group, PendingEntry, Stream, StreamId};
use super::value::{HashValue, ListValue, SetValue};
use super::zset::ZSet;
use super::{EncLimits, Entry, StrEnc, StrValue, Value};
use crate::num::parse_i64_strict;

/// The RDB version Redis 7.0 writes (and the highest it reads).
pub const RDB_VERSION: u16 = 10;

const T_STRING: u8 = 0;
const T_SET: u8 = 2;
const T_HASH: u8 = 4;
const T_ZSET_2: u8 = 5;
const T_SET_INTSET: u8 = 11;
/// A small set that is not an intset, in Redis 7.2 and later.
const T_SET_LISTPACK: u8 = 20;
const T_HASH_LISTPACK: u8 = 16;
const T_ZSET_LISTPACK: u8 = 17;
const T_LIST_QUICKLIST_2: u8 = 18;
/// A hash with field deadlines in a hashtable (Redis 7.4, `RDB_TYPE_HASH_METADATA`).
const T_HASH_METADATA: u8 = 24;
/// A hash with field deadlines in a listpack (Redis 7.4, `RDB_TYPE_HASH_LISTPACK_EX`).
const T_HASH_LISTPACK_EX: u8 = 25;
/// What Redis writes as a hash's earliest deadline when it knows none.
const NO_FIELD_EXPIRE: u64 = 1 << 48;
const T_STREAM_LISTPACKS: u8 = 15;
const T_STREAM_LISTPACKS_2: u8 = 19;
/// Redis 7.2's streams: each consumer also has its active time.
const T_STREAM_LISTPACKS_3: u8 = 21;

const QUICKLIST_PLAIN: u64 = 1;
const QUICKLIST_PACKED: u64 = 2;

/// Redis's string size limit (`proto-max-bulk-len` default): no string in
/// a payload may claim more.
const MAX_STRING: u64 = 512 * 1024 * 1024;

/// Why a payload was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RdbError {
    /// Too short, a newer RDB version, or a wrong CRC.
    Checksum,
    /// The value does not parse (Redis: `Bad data format`).
    Format,
}

// ---------------------------------------------------------------- CRC-64

/// The Jones polynomial (`0xad93d23594c935a9`), bit-reflected.
const CRC64_POLY_REFLECTED: u64 = 0x95ac_9329_ac4b_c9b5;

const fn crc64_table() -> [u64; 256] {
    let mut t = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u64;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ CRC64_POLY_REFLECTED } else { c >> 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static CRC64_TABLE: [u64; 256] = crc64_table();

/// CRC-64/Jones as Redis's `crc64(crc, data)` (reflected in and out, no
/// final xor): continue from `crc` (0 to start).
pub fn crc64(mut crc: u64, data: &[u8]) -> u64 {
    for &b in data {
        crc = CRC64_TABLE[((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

// ---------------------------------------------------------------- LZF

const LZF_HLOG: u32 = 16;
const LZF_HSIZE: usize = 1 << LZF_HLOG;
const LZF_MAX_LIT: usize = 32;
const LZF_MAX_OFF: usize = 1 << 13;
const LZF_MAX_REF: usize = (1 << 8) + (1 << 3);

/// LZF compression (liblzf's format and its "very fast" match search, a
/// 2^16-slot hash of the next three bytes). Returns None when the output
/// would not fit in `out_max` bytes.
pub fn lzf_compress(input: &[u8], out_max: usize) -> Option<Vec<u8>> {
    LZF_TABLE.with(|t| {
        let mut t = t.borrow_mut();
        t.begin();
        lzf_compress_with(input, out_max, &mut t)
    })
}

/// The match-search hash table, kept per thread: a slot holds a position
/// only if written during the current call (its epoch matches), so no call
/// clears 2^16 slots (a DUMP of many long values compresses each one).
struct LzfTable {
    pos: Vec<u32>,
    epoch: Vec<u32>,
    now: u32,
}

impl LzfTable {
    fn begin(&mut self) {
        if self.pos.is_empty() {
            self.pos = vec![0; LZF_HSIZE];
            self.epoch = vec![0; LZF_HSIZE];
        }
        self.now = self.now.wrapping_add(1);
        if self.now == 0 {
            self.epoch.fill(0);
            self.now = 1;
        }
    }

    fn get(&self, slot: usize) -> u32 {
        if self.epoch[slot] == self.now {
            self.pos[slot]
        } else {
            0
        }
    }

    fn set(&mut self, slot: usize, p: usize) {
        self.pos[slot] = p as u32;
        self.epoch[slot] = self.now;
    }
}

thread_local! {
    static LZF_TABLE: std::cell::RefCell<LzfTable> =
        const { std::cell::RefCell::new(LzfTable { pos: Vec::new(), epoch: Vec::new(), now: 0 }) };
}

fn lzf_compress_with(input: &[u8], out_max: usize, htab: &mut LzfTable) -> Option<Vec<u8>> {
    let n = input.len();
    if n == 0 || out_max == 0 {
        return None;
    }
    let mut out: Vec<u8> = Vec::with_capacity(out_max + 1);
    // Position 0 doubles as "empty" (a match at position 0 is never taken,
    // as in liblzf).
    let idx = |h: u32| -> usize { ((h >> (24 - LZF_HLOG)).wrapping_sub(h.wrapping_mul(5)) as usize) & (LZF_HSIZE - 1) };
    let frst = |p: usize| -> u32 { (u32::from(input[p]) << 8) | u32::from(input.get(p + 1).copied().unwrap_or(0)) };
    let next = |v: u32, p: usize| -> u32 { (v << 8) | u32::from(input[p + 2]) };

    let mut lit: usize = 0;
    // `run` is the index of the current literal run's control byte.
    let mut run = 0usize;
    out.push(0);
    let mut ip = 0usize;
    let mut hval = frst(0);
    while n >= 3 && ip < n - 2 {
        hval = next(hval, ip);
        let slot = idx(hval);
        let r = htab.get(slot) as usize;
        htab.set(slot, ip);
        let is_match = r > 0
            && r < ip
            && ip - r - 1 < LZF_MAX_OFF
            && input[r + 2] == input[ip + 2]
            && input[r] == input[ip]
            && input[r + 1] == input[ip + 1];
        if is_match {
            let off = ip - r - 1;
            let mut len = 2usize;
            let maxlen = (n - ip - len).min(LZF_MAX_REF);
            // Output: the (possibly empty) literal run is closed, then 2 or 3 bytes.
            if out.len() + 3 + 1 >= out_max && out.len() - usize::from(lit == 0) + 3 + 1 >= out_max {
                return None;
            }
            out[run] = (lit as u8).wrapping_sub(1);
            if lit == 0 {
                out.pop();
            }
            'extend: {
                if maxlen > 16 {
                    for _ in 0..16 {
                        len += 1;
                        if input[r + len] != input[ip + len] {
                            break 'extend;
                        }
                    }
                }
                loop {
                    len += 1;
                    if !(len < maxlen && input[r + len] == input[ip + len]) {
                        break;
                    }
                }
            }
            len -= 2;
            ip += 1;
            if len < 7 {
                out.push(((off >> 8) + (len << 5)) as u8);
            } else {
                out.push(((off >> 8) + (7 << 5)) as u8);
                out.push((len - 7) as u8);
            }
            out.push(off as u8);
            lit = 0;
            run = out.len();
            out.push(0);
            ip += len + 1;
            if ip >= n - 2 {
                break;
            }
            ip -= 2;
            hval = frst(ip);
            hval = next(hval, ip);
            htab.set(idx(hval), ip);
            ip += 1;
            hval = next(hval, ip);
            htab.set(idx(hval), ip);
            ip += 1;
        } else {
            if out.len() >= out_max {
                return None;
            }
            lit += 1;
            out.push(input[ip]);
            ip += 1;
            if lit == LZF_MAX_LIT {
                out[run] = (lit - 1) as u8;
                lit = 0;
                run = out.len();
                out.push(0);
            }
        }
    }
    if out.len() + 3 > out_max {
        return None;
    }
    while ip < n {
        lit += 1;
        out.push(input[ip]);
        ip += 1;
        if lit == LZF_MAX_LIT {
            out[run] = (lit - 1) as u8;
            lit = 0;
            run = out.len();
            out.push(0);
        }
    }
    out[run] = (lit as u8).wrapping_sub(1);
    if lit == 0 {
        out.pop();
    }
    (out.len() <= out_max).then_some(out)
}

/// LZF decompression into exactly `len` bytes; None if the data is corrupt
/// or does not produce exactly `len` bytes.
pub fn lzf_decompress(input: &[u8], len: usize) -> Option<Vec<u8>> {
    let mut out: Vec<u8> = Vec::with_capacity(len.min(input.len().saturating_mul(4).max(64)));
    let mut ip = 0usize;
    while ip < input.len() {
        let ctrl = usize::from(input[ip]);
        ip += 1;
        if ctrl < 32 {
            let run = ctrl + 1;
            if ip + run > input.len() || out.len() + run > len {
                return None;
            }
            out.extend_from_slice(&input[ip..ip + run]);
            ip += run;
        } else {
            let mut mlen = ctrl >> 5;
            if mlen == 7 {
                mlen += usize::from(*input.get(ip)?);
                ip += 1;
            }
            let lo = usize::from(*input.get(ip)?);
            ip += 1;
            let back = ((ctrl & 0x1f) << 8) + lo + 1;
            mlen += 2;
            if back > out.len() || out.len() + mlen > len {
                return None;
            }
            let start = out.len() - back;
            for k in 0..mlen {
                let b = out[start + k];
                out.push(b);
            }
        }
    }
    (out.len() == len).then_some(out)
}

// ---------------------------------------------------------------- writing

fn save_len(out: &mut Vec<u8>, len: u64) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.push(0x40 | (len >> 8) as u8);
        out.push(len as u8);
    } else if len <= u64::from(u32::MAX) {
        out.push(0x80);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

/// Redis `rdbTryIntegerEncoding` + `rdbEncodeInteger`.
fn int_encoding(s: &[u8]) -> Option<Vec<u8>> {
    if s.len() > 11 {
        return None;
    }
    let v = parse_i64_strict(s)?;
    if let Ok(b) = i8::try_from(v) {
        Some(vec![0xc0, b as u8])
    } else if let Ok(h) = i16::try_from(v) {
        let mut o = vec![0xc1];
        o.extend_from_slice(&h.to_le_bytes());
        Some(o)
    } else if let Ok(w) = i32::try_from(v) {
        let mut o = vec![0xc2];
        o.extend_from_slice(&w.to_le_bytes());
        Some(o)
    } else {
        None
    }
}

/// Redis `rdbSaveRawString` (with `rdbcompression yes`).
fn save_string(out: &mut Vec<u8>, s: &[u8]) {
    if let Some(enc) = int_encoding(s) {
        out.extend_from_slice(&enc);
        return;
    }
    if s.len() > 20 {
        if let Some(c) = lzf_compress(s, s.len() - 4) {
            out.push(0xc3);
            save_len(out, c.len() as u64);
            save_len(out, s.len() as u64);
            out.extend_from_slice(&c);
            return;
        }
    }
    save_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// A listpack being built (Redis's `lpAppend` of strings: integers are
/// stored as integers).
struct Listpack {
    buf: Vec<u8>,
    count: usize,
}

impl Listpack {
    fn new() -> Listpack {
        Listpack { buf: vec![0; 6], count: 0 }
    }

    /// Bytes the listpack takes once finished (header, entries, end byte).
    fn bytes(&self) -> usize {
        self.buf.len() + 1
    }

    fn push(&mut self, s: &[u8]) {
        match parse_i64_strict(s) {
            Some(v) => self.push_int(v),
            None => self.push_str(s),
        }
    }

    fn push_int(&mut self, v: i64) {
        let start = self.buf.len();
        let b = &mut self.buf;
        {
            if (0..=127).contains(&v) {
                b.push(v as u8);
            } else if (-4096..=4095).contains(&v) {
                let u = (v as u16) & 0x1fff;
                b.push(0xc0 | (u >> 8) as u8);
                b.push(u as u8);
            } else if (-32768..=32767).contains(&v) {
                b.push(0xf1);
                b.extend_from_slice(&(v as i16).to_le_bytes());
            } else if (-8_388_608..=8_388_607).contains(&v) {
                b.push(0xf2);
                b.extend_from_slice(&(v as i32).to_le_bytes()[..3]);
            } else if let Ok(w) = i32::try_from(v) {
                b.push(0xf3);
                b.extend_from_slice(&w.to_le_bytes());
            } else {
                b.push(0xf4);
                b.extend_from_slice(&v.to_le_bytes());
            }
        }
        let l = b.len() - start;
        encode_backlen(b, l);
        self.count += 1;
    }

    fn push_str(&mut self, s: &[u8]) {
        let start = self.buf.len();
        let b = &mut self.buf;
        if s.len() < 64 {
            b.push(0x80 | s.len() as u8);
            b.extend_from_slice(s);
        } else if s.len() < 4096 {
            b.push(0xe0 | (s.len() >> 8) as u8);
            b.push(s.len() as u8);
            b.extend_from_slice(s);
        } else {
            b.push(0xf0);
            b.extend_from_slice(&(s.len() as u32).to_le_bytes());
            b.extend_from_slice(s);
        }
        let l = b.len() - start;
        encode_backlen(b, l);
        self.count += 1;
    }

    fn finish(mut self) -> Vec<u8> {
        self.buf.push(0xff);
        let total = self.buf.len() as u32;
        self.buf[..4].copy_from_slice(&total.to_le_bytes());
        let n = if self.count < 65535 { self.count as u16 } else { 65535 };
        self.buf[4..6].copy_from_slice(&n.to_le_bytes());
        self.buf
    }
}

/// A listpack entry's back-length: 7 bits a byte, most significant first,
/// every byte but the first with the high bit set (read right to left).
fn encode_backlen(b: &mut Vec<u8>, l: usize) {
    let mut groups = vec![(l & 127) as u8];
    let mut rest = l >> 7;
    while rest > 0 {
        groups.push((rest & 127) as u8);
        rest >>= 7;
    }
    let last = groups.len() - 1;
    for (i, g) in groups.iter().enumerate().rev() {
        b.push(if i == last { *g } else { *g | 128 });
    }
}

/// A list's quicklist nodes as Redis 7.0 has them for a list built by
/// appending: every node packed, a new one when the tail would not take
/// the element ([`quicklist_allows`]).
fn list_nodes_70(l: &ListValue, fill: i64) -> Vec<(u64, Vec<u8>)> {
    let mut nodes = Vec::new();
    let mut cur = Listpack::new();
    for e in l {
        if cur.count > 0 && !quicklist_allows(cur.bytes(), cur.count, e.len(), fill) {
            nodes.push((QUICKLIST_PACKED, std::mem::replace(&mut cur, Listpack::new()).finish()));
        }
        cur.push(e);
    }
    if cur.count > 0 {
        nodes.push((QUICKLIST_PACKED, cur.finish()));
    }
    nodes
}

/// The same as Redis 7.2 and later have them (Valkey 8 too): a list is one
/// listpack until an append would pass the node limit counted exactly
/// (`lpBytes` plus the element's length), when that listpack becomes the
/// first node whole; from then on appends follow the quicklist's rule, as
/// in 7.0 ([`quicklist_allows`]), and an element larger than a node may hold
/// is a plain node of its own (`isLargeElement`; 7.0 did that only from 1 GB).
fn list_nodes_72(l: &ListValue, fill: i64) -> Vec<(u64, Vec<u8>)> {
    let size_limit = EncLimits { list_fill: fill, ..EncLimits::default() }.list_node_bytes();
    // `quicklistNodeExceedsLimit` on the listpack's exact size: a size
    // limit, or (fill >= 0) a count limit within the 8 kB safety limit.
    let exceeds = |size: usize, count: usize| {
        if fill < 0 {
            size > size_limit
        } else {
            size > size_limit || count > usize::try_from(fill.max(1)).unwrap_or(usize::MAX)
        }
    };
    let mut nodes = Vec::new();
    let mut cur = Listpack::new();
    let mut quicklist = false;
    for e in l {
        if !quicklist {
            if !exceeds(cur.bytes() + e.len(), cur.count + 1) {
                cur.push(e);
                continue;
            }
            quicklist = true;
        }
        if e.len() > size_limit {
            if cur.count > 0 {
                nodes.push((QUICKLIST_PACKED, std::mem::replace(&mut cur, Listpack::new()).finish()));
            }
            nodes.push((QUICKLIST_PLAIN, e.to_vec()));
            continue;
        }
        if cur.count > 0 && !quicklist_allows(cur.bytes(), cur.count, e.len(), fill) {
            nodes.push((QUICKLIST_PACKED, std::mem::replace(&mut cur, Listpack::new()).finish()));
        }
        cur.push(e);
    }
    if cur.count > 0 {
        nodes.push((QUICKLIST_PACKED, cur.finish()));
    }
    nodes
}

/// Redis 7.0's quicklist node fill rule for a list built by appending: an
/// element is estimated at its length plus 8 bytes; a negative
/// `list-max-listpack-size` bounds a node's size (-1: 4 kB … -5: 64 kB), a
/// positive one its entries (within 8 kB; 0 makes one-entry nodes).
fn quicklist_allows(node_bytes: usize, node_count: usize, elem_len: usize, fill: i64) -> bool {
    let new_size = node_bytes + elem_len + 8;
    let max = EncLimits { list_fill: fill, ..EncLimits::default() }.list_node_bytes();
    new_size <= max && (fill < 0 || i64::try_from(node_count).unwrap_or(i64::MAX) < fill)
}

/// The score as `d2string` prints it into a listpack: Redis 7.0's
/// `%.17g`, or from 7.2 (RDB version 11, Valkey 8 included) the shortest
/// digits that read back the same.
fn score_text(d: f64, version: u16) -> String {
    if version >= 11 {
        crate::num::fmt_short(d)
    } else {
        crate::num::fmt_double(d)
    }
}

/// The DUMP payload of `entry`, with `version` in its footer (the
/// profile's: 10 for Redis 7.0, 11 for 7.2, 12 from 7.4; the values this
/// writes are the same in each).
pub fn dump(entry: &Entry, encoding: &str, list_fill: i64, version: u16) -> Vec<u8> {
    let mut out = Vec::new();
    dump_value(&mut out, entry, encoding, list_fill, version);
    out.extend_from_slice(&version.to_le_bytes());
    let crc = crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The type byte and the value of `entry`, as both DUMP and an RDB file
/// write them, in RDB format `version` (a stream's type follows it: 7.2's
/// from 11).
fn dump_value(out: &mut Vec<u8>, entry: &Entry, encoding: &str, list_fill: i64, version: u16) {
    match &entry.value {
        Value::Str(s) => {
            out.push(T_STRING);
            save_string(out, s);
        }
        Value::List(l) => {
            out.push(T_LIST_QUICKLIST_2);
            let nodes = if version >= 11 { list_nodes_72(l, list_fill) } else { list_nodes_70(l, list_fill) };
            save_len(out, nodes.len() as u64);
            for (container, n) in nodes {
                save_len(out, container);
                save_string(out, &n);
            }
        }
        Value::Set(s) => {
            if encoding == "intset" {
                out.push(T_SET_INTSET);
                let mut v: Vec<i64> = s.iter().filter_map(parse_i64_strict).collect();
                v.sort_unstable();
                let width: usize = if v.iter().all(|&x| i16::try_from(x).is_ok()) {
                    2
                } else if v.iter().all(|&x| i32::try_from(x).is_ok()) {
                    4
                } else {
                    8
                };
                let mut blob = Vec::with_capacity(8 + v.len() * width);
                blob.extend_from_slice(&(width as u32).to_le_bytes());
                blob.extend_from_slice(&(v.len() as u32).to_le_bytes());
                for x in v {
                    blob.extend_from_slice(&x.to_le_bytes()[..width]);
                }
                save_string(out, &blob);
            } else if encoding == "listpack" {
                // Redis 7.2 and later: the members in the set's order.
                out.push(T_SET_LISTPACK);
                let mut lp = Listpack::new();
                for m in s.iter() {
                    lp.push(m);
                }
                save_string(out, &lp.finish());
            } else {
                out.push(T_SET);
                save_len(out, s.len() as u64);
                for m in s.iter() {
                    save_string(out, m);
                }
            }
        }
        Value::Hash(h) if h.has_ttls() => dump_hash_ttl(out, h, encoding == "listpackex"),
        Value::Hash(h) => {
            if encoding == "listpack" {
                out.push(T_HASH_LISTPACK);
                let mut lp = Listpack::new();
                for (k, v) in h {
                    lp.push(k);
                    lp.push(v);
                }
                save_string(out, &lp.finish());
            } else {
                out.push(T_HASH);
                save_len(out, h.len() as u64);
                for (k, v) in h {
                    save_string(out, k);
                    save_string(out, v);
                }
            }
        }
        Value::ZSet(z) => {
            if encoding == "listpack" {
                out.push(T_ZSET_LISTPACK);
                let mut lp = Listpack::new();
                for (m, s) in z.iter() {
                    lp.push(m);
                    lp.push(score_text(s, version).as_bytes());
                }
                save_string(out, &lp.finish());
            } else {
                out.push(T_ZSET_2);
                save_len(out, z.len() as u64);
                let all: Vec<(&[u8], f64)> = z.iter().collect();
                for (m, s) in all.into_iter().rev() {
                    save_string(out, m);
                    out.extend_from_slice(&s.to_le_bytes());
                }
            }
        }
        Value::Stream(st) => {
            let v3 = version >= 11;
            out.push(if v3 { T_STREAM_LISTPACKS_3 } else { T_STREAM_LISTPACKS_2 });
            dump_stream(out, st, v3);
        }
    }
}

const STREAM_ITEM_DELETED: i64 = 1;
const STREAM_ITEM_SAMEFIELDS: i64 = 2;

fn id_key(id: StreamId) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&id.ms.to_be_bytes());
    k[8..].copy_from_slice(&id.seq.to_be_bytes());
    k
}

/// A hash with field deadlines, as Redis 7.4 writes it: its earliest
/// deadline (eight bytes), then a listpack of (field, value, deadline or 0)
/// triplets, or (a hashtable) a count and per field its deadline as a length
/// (0: none, else 1 + its distance from the earliest), field and value. A
/// hashtable without a deadline left is written as a plain hash.
fn dump_hash_ttl(out: &mut Vec<u8>, h: &HashValue, listpack: bool) {
    debug_assert!(h.has_ttls(), "a hash with deadlines");
    let min = h.min_expire();
    if !listpack && min.is_none() {
        out.push(T_HASH);
        save_len(out, h.len() as u64);
        for (k, v) in h {
            save_string(out, k);
            save_string(out, v);
        }
        return;
    }
    let head = if h.registered() != 0 { h.registered() } else { min.unwrap_or(NO_FIELD_EXPIRE) };
    if listpack {
        out.push(T_HASH_LISTPACK_EX);
        out.extend_from_slice(&head.to_le_bytes());
        let mut lp = Listpack::new();
        for (k, v, at) in h.iter_expire() {
            lp.push(k);
            lp.push(v);
            lp.push_int(at as i64);
        }
        save_string(out, &lp.finish());
    } else {
        let min = min.expect("checked");
        out.push(T_HASH_METADATA);
        out.extend_from_slice(&min.to_le_bytes());
        save_len(out, h.len() as u64);
        for (k, v, at) in h.iter_expire() {
            save_len(out, if at == 0 { 0 } else { at - min + 1 });
            save_string(out, k);
            save_string(out, v);
        }
    }
}

/// `RDB_TYPE_STREAM_LISTPACKS_2`: the nodes (master id key, listpack),
/// the counters, then each group with its PEL and consumers (`v3`, 7.2's
/// `_3`: with each consumer's active time, -1 for never).
fn dump_stream(out: &mut Vec<u8>, st: &Stream, v3: bool) {
    let nodes = st.dump_nodes();
    save_len(out, nodes.len() as u64);
    for (master, mfields, entries) in nodes {
        save_string(out, &id_key(master));
        let mut lp = Listpack::new();
        lp.push_int(entries.len() as i64);
        lp.push_int(0);
        lp.push_int(mfields.len() as i64);
        for f in mfields {
            lp.push(f);
        }
        lp.push_int(0);
        for (id, fields) in entries {
            let same = fields.len() == mfields.len() && fields.iter().zip(mfields).all(|((f, _), m)| f == m);
            lp.push_int(if same { STREAM_ITEM_SAMEFIELDS } else { 0 });
            lp.push_int(id.ms.wrapping_sub(master.ms) as i64);
            lp.push_int(id.seq.wrapping_sub(master.seq) as i64);
            if !same {
                lp.push_int(fields.len() as i64);
            }
            for (f, v) in fields {
                if !same {
                    lp.push(f);
                }
                lp.push(v);
            }
            let n = fields.len() as i64;
            lp.push_int(if same { n + 3 } else { 2 * n + 4 });
        }
        save_string(out, &lp.finish());
    }
    save_len(out, st.len() as u64);
    for id in [st.last_id, st.first_id, st.max_deleted_id] {
        save_len(out, id.ms);
        save_len(out, id.seq);
    }
    save_len(out, st.entries_added);
    save_len(out, st.groups.len() as u64);
    for (name, g) in &st.groups {
        save_string(out, name);
        save_len(out, g.last_id.ms);
        save_len(out, g.last_id.seq);
        save_len(out, g.entries_read.unwrap_or(u64::MAX));
        save_len(out, g.pel.len() as u64);
        for (id, p) in &g.pel {
            out.extend_from_slice(&id_key(*id));
            out.extend_from_slice(&p.delivery_time.to_le_bytes());
            save_len(out, p.delivery_count);
        }
        save_len(out, g.consumers.len() as u64);
        for (cname, c) in &g.consumers {
            save_string(out, cname);
            out.extend_from_slice(&c.seen_time.to_le_bytes());
            if v3 {
                let active = c.active_time.map_or(-1, |t| t as i64);
                out.extend_from_slice(&active.to_le_bytes());
            }
            save_len(out, c.pel.len() as u64);
            for id in &c.pel {
                out.extend_from_slice(&id_key(*id));
            }
        }
    }
}

// ---------------------------------------------------------------- reading

/// A cursor over the payload body; every read is bound-checked.
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

type R<T> = Result<T, RdbError>;

impl<'a> Reader<'a> {
    fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    fn take(&mut self, n: usize) -> R<&'a [u8]> {
        if n > self.remaining() {
            return Err(RdbError::Format);
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn byte(&mut self) -> R<u8> {
        Ok(self.take(1)?[0])
    }

    /// A length, or (true, special-encoding number) for `11xxxxxx`.
    fn len_or_enc(&mut self) -> R<(bool, u64)> {
        let b = self.byte()?;
        match b >> 6 {
            0 => Ok((false, u64::from(b & 0x3f))),
            1 => Ok((false, (u64::from(b & 0x3f) << 8) | u64::from(self.byte()?))),
            2 => match b {
                0x80 => Ok((false, u64::from(u32::from_be_bytes(self.take(4)?.try_into().expect("4"))))),
                0x81 => Ok((false, u64::from_be_bytes(self.take(8)?.try_into().expect("8")))),
                _ => Err(RdbError::Format),
            },
            _ => Ok((true, u64::from(b & 0x3f))),
        }
    }

    /// A length. An encoding byte (`11xxxxxx`) where a length is expected
    /// reads as its low 6 bits, as Redis's `rdbLoadLen` returns it.
    fn len(&mut self) -> R<u64> {
        Ok(self.len_or_enc()?.1)
    }

    /// A count of items that each take at least `min_bytes`: refused if the
    /// payload cannot hold that many.
    fn count(&mut self, min_bytes: usize) -> R<usize> {
        let n = self.len()?;
        if n > (self.remaining() / min_bytes.max(1)) as u64 {
            return Err(RdbError::Format);
        }
        Ok(n as usize)
    }

    fn string(&mut self) -> R<Vec<u8>> {
        match self.len_or_enc()? {
            (false, l) => Ok(self.take(usize::try_from(l).map_err(|_| RdbError::Format)?)?.to_vec()),
            (true, 0) => Ok((self.byte()? as i8).to_string().into_bytes()),
            (true, 1) => Ok(i16::from_le_bytes(self.take(2)?.try_into().expect("2")).to_string().into_bytes()),
            (true, 2) => Ok(i32::from_le_bytes(self.take(4)?.try_into().expect("4")).to_string().into_bytes()),
            (true, 3) => {
                let clen = self.len()?;
                let ulen = self.len()?;
                if ulen > MAX_STRING {
                    return Err(RdbError::Format);
                }
                let c = self.take(usize::try_from(clen).map_err(|_| RdbError::Format)?)?;
                if ulen == 0 {
                    // Redis accepts any data declared to decompress to
                    // nothing (its decompressor's failure value, 0, is the
                    // expected length).
                    return Ok(Vec::new());
                }
                lzf_decompress(c, ulen as usize).ok_or(RdbError::Format)
            }
            _ => Err(RdbError::Format),
        }
    }
}

/// One decoded listpack entry.
enum LpEntry<'a> {
    Int(i64),
    Str(&'a [u8]),
}

impl LpEntry<'_> {
    fn to_bytes(&self) -> Bytes {
        match self {
            LpEntry::Int(v) => crate::num::int_bytes(*v),
            LpEntry::Str(s) => Bytes::copy_from_slice(s),
        }
    }
}

/// Validates a whole listpack (header, every entry and its back-length,
/// the end byte, the count) and returns its entries.
fn parse_listpack(lp: &[u8]) -> R<Vec<LpEntry<'_>>> {
    parse_listpack_counted(lp, true)
}

/// [`parse_listpack`], checking the header's element count or not (Redis
/// validates a stream node's entries without it).
fn parse_listpack_counted(lp: &[u8], check_count: bool) -> R<Vec<LpEntry<'_>>> {
    let bad = RdbError::Format;
    if lp.len() < 7 {
        return Err(bad);
    }
    let total = u32::from_le_bytes(lp[..4].try_into().expect("4")) as usize;
    let declared = usize::from(u16::from_le_bytes(lp[4..6].try_into().expect("2")));
    if total != lp.len() || lp[lp.len() - 1] != 0xff {
        return Err(bad);
    }
    let end = lp.len() - 1;
    let mut p = 6;
    let mut out = Vec::new();
    while p < end {
        let b = lp[p];
        let need = |n: usize| if p + n <= end { Ok(()) } else { Err(RdbError::Format) };
        let (entry, enc_len) = if b & 0x80 == 0 {
            (LpEntry::Int(i64::from(b)), 1)
        } else if b & 0xc0 == 0x80 {
            let l = usize::from(b & 0x3f);
            need(1 + l)?;
            (LpEntry::Str(&lp[p + 1..p + 1 + l]), 1 + l)
        } else if b & 0xe0 == 0xc0 {
            need(2)?;
            let u = (u16::from(b & 0x1f) << 8) | u16::from(lp[p + 1]);
            let v = if u >= 1 << 12 { i64::from(u) - (1 << 13) } else { i64::from(u) };
            (LpEntry::Int(v), 2)
        } else if b & 0xf0 == 0xe0 {
            need(2)?;
            let l = (usize::from(b & 0x0f) << 8) | usize::from(lp[p + 1]);
            need(2 + l)?;
            (LpEntry::Str(&lp[p + 2..p + 2 + l]), 2 + l)
        } else {
            match b {
                0xf0 => {
                    need(5)?;
                    let l = u32::from_le_bytes(lp[p + 1..p + 5].try_into().expect("4")) as usize;
                    need(5usize.checked_add(l).ok_or(bad)?)?;
                    (LpEntry::Str(&lp[p + 5..p + 5 + l]), 5 + l)
                }
                0xf1 => {
                    need(3)?;
                    (LpEntry::Int(i64::from(i16::from_le_bytes([lp[p + 1], lp[p + 2]]))), 3)
                }
                0xf2 => {
                    need(4)?;
                    let v = i32::from_le_bytes([0, lp[p + 1], lp[p + 2], lp[p + 3]]) >> 8;
                    (LpEntry::Int(i64::from(v)), 4)
                }
                0xf3 => {
                    need(5)?;
                    (LpEntry::Int(i64::from(i32::from_le_bytes(lp[p + 1..p + 5].try_into().expect("4")))), 5)
                }
                0xf4 => {
                    need(9)?;
                    (LpEntry::Int(i64::from_le_bytes(lp[p + 1..p + 9].try_into().expect("8"))), 9)
                }
                _ => return Err(bad),
            }
        };
        // The back-length follows the entry.
        let mut expect = Vec::new();
        encode_backlen(&mut expect, enc_len);
        let q = p + enc_len;
        if q + expect.len() > end || lp[q..q + expect.len()] != expect[..] {
            return Err(bad);
        }
        out.push(entry);
        p = q + expect.len();
    }
    if check_count && declared != 65535 && declared != out.len() {
        return Err(bad);
    }
    Ok(out)
}

fn hash_from_pairs(pairs: impl Iterator<Item = (Bytes, Bytes)>) -> R<HashValue> {
    let mut h = HashValue::default();
    for (k, v) in pairs {
        if !h.insert(&k, &v) {
            return Err(RdbError::Format);
        }
    }
    if h.is_empty() {
        return Err(RdbError::Format);
    }
    Ok(h)
}

fn zset_insert(z: &mut ZSet, m: Bytes, s: f64) -> R<()> {
    if s.is_nan() || z.contains(&m) {
        return Err(RdbError::Format);
    }
    z.insert(m, s);
    Ok(())
}

impl Reader<'_> {
    fn stream_id_raw(&mut self) -> R<StreamId> {
        let k = self.take(16)?;
        Ok(StreamId::new(
            u64::from_be_bytes(k[..8].try_into().expect("8")),
            u64::from_be_bytes(k[8..].try_into().expect("8")),
        ))
    }

    fn stream_id_lens(&mut self) -> R<StreamId> {
        Ok(StreamId::new(self.len()?, self.len()?))
    }

    fn ms_time(&mut self) -> R<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }
}

fn lp_int(e: Option<&LpEntry<'_>>) -> R<i64> {
    match e {
        Some(LpEntry::Int(v)) => Ok(*v),
        Some(LpEntry::Str(s)) => parse_i64_strict(s).ok_or(RdbError::Format),
        None => Err(RdbError::Format),
    }
}

/// One node's listpack: master entry, then entries (deleted ones skipped).
fn load_stream_node(st: &mut Stream, master: StreamId, blob: &[u8]) -> R<()> {
    let bad = RdbError::Format;
    let es = parse_listpack_counted(blob, false)?;
    let mut it = es.iter();
    let count = lp_int(it.next())?;
    let deleted = lp_int(it.next())?;
    let nfields = lp_int(it.next())?;
    if count < 0 || deleted < 0 || nfields < 0 || nfields as usize > es.len() {
        return Err(bad);
    }
    let mfields: Vec<Bytes> = (0..nfields).map(|_| it.next().map(LpEntry::to_bytes).ok_or(bad)).collect::<R<_>>()?;
    if lp_int(it.next())? != 0 {
        return Err(bad);
    }
    let mut live: Vec<(StreamId, Fields)> = Vec::new();
    let mut seen_deleted = 0i64;
    let mut last = master;
    let mut prev: Option<StreamId> = st.max_loaded_id();
    while let Some(first) = it.next() {
        let flags = lp_int(Some(first))?;
        let ms = master.ms.wrapping_add(lp_int(it.next())? as u64);
        let seq = master.seq.wrapping_add(lp_int(it.next())? as u64);
        let id = StreamId::new(ms, seq);
        if id < master || prev.is_some_and(|p| id <= p) {
            return Err(bad);
        }
        prev = Some(id);
        last = id;
        let same = flags & STREAM_ITEM_SAMEFIELDS != 0;
        let n = if same { nfields } else { lp_int(it.next())? };
        if n < 0 || n as usize > es.len() {
            return Err(bad);
        }
        let mut fields: Fields = Vec::with_capacity(n as usize);
        for master_field in mfields.iter().chain(std::iter::repeat(&Bytes::new())).take(n as usize) {
            let f = if same { master_field.clone() } else { it.next().map(LpEntry::to_bytes).ok_or(bad)? };
            let v = it.next().map(LpEntry::to_bytes).ok_or(bad)?;
            fields.push((f, v));
        }
        let lp_count = lp_int(it.next())?;
        if lp_count != if same { n + 3 } else { 2 * n + 4 } {
            return Err(bad);
        }
        if flags & STREAM_ITEM_DELETED != 0 {
            seen_deleted += 1;
        } else {
            live.push((id, fields));
        }
    }
    if live.is_empty() || live.len() as i64 != count || seen_deleted != deleted {
        return Err(bad);
    }
    st.load_node(master, mfields, live, deleted as u32, last, blob.len());
    Ok(())
}

/// A stream, `RDB_TYPE_STREAM_LISTPACKS_2` or (`v2` false) the older
/// `RDB_TYPE_STREAM_LISTPACKS` without the 7.0 counters, or (`v3`) 7.2's
/// `_3` with the consumers' active times.
fn load_stream(r: &mut Reader<'_>, v2: bool, v3: bool) -> R<Stream> {
    let bad = RdbError::Format;
    let mut st = Stream::default();
    let nodes = r.count(17)?;
    for _ in 0..nodes {
        let key = r.string()?;
        if key.len() != 16 {
            return Err(bad);
        }
        let master = Reader { data: &key, pos: 0 }.stream_id_raw()?;
        let blob = r.string()?;
        load_stream_node(&mut st, master, &blob)?;
    }
    if r.len()? != st.len() as u64 {
        return Err(bad);
    }
    st.last_id = r.stream_id_lens()?;
    if v2 {
        st.first_id = r.stream_id_lens()?;
        st.max_deleted_id = r.stream_id_lens()?;
        st.entries_added = r.len()?;
    } else {
        // Redis takes the first entry's id; of an empty stream, the highest id.
        st.first_id = st.first_entry().map_or(StreamId::MAX, |(id, _)| *id);
        st.entries_added = st.len() as u64;
    }
    if st.max_loaded_id().is_some_and(|m| m > st.last_id) {
        return Err(bad);
    }
    let ngroups = r.count(5)?;
    for _ in 0..ngroups {
        let name = Bytes::from(r.string()?);
        let last_id = r.stream_id_lens()?;
        let read = if v2 {
            let n = r.len()?;
            (n != u64::MAX).then_some(n)
        } else {
            st.estimate_distance(&last_id)
        };
        let mut g = Group::new(last_id, read);
        let mut unowned = std::collections::HashSet::new();
        let npel = r.count(25)?;
        for _ in 0..npel {
            let id = r.stream_id_raw()?;
            let delivery_time = r.ms_time()?;
            let delivery_count = r.len()?;
            let p = PendingEntry { consumer: Bytes::new(), delivery_time, delivery_count };
            unowned.insert(id);
            if g.pel.insert(id, p).is_some() {
                return Err(bad);
            }
        }
        let nconsumers = r.count(10)?;
        for _ in 0..nconsumers {
            let cname = Bytes::from(r.string()?);
            let seen_time = r.ms_time()?;
            // Before 7.2's active time, Redis takes the seen time for it.
            let active_time = if v3 {
                let t = r.ms_time()? as i64;
                (t >= 0).then_some(t as u64)
            } else {
                Some(seen_time)
            };
            let mut c = Consumer { seen_time, active_time, ..Consumer::default() };
            let n = r.count(16)?;
            for _ in 0..n {
                let id = r.stream_id_raw()?;
                // Each PEL entry belongs to exactly one consumer.
                let Some(p) = g.pel.get_mut(&id).filter(|_| unowned.remove(&id)) else { return Err(bad) };
                c.pel.insert(id);
                p.consumer = cname.clone();
            }
            if g.consumers.insert(cname, c).is_some() {
                return Err(bad);
            }
        }
        if !unowned.is_empty() {
            return Err(bad);
        }
        if st.groups.insert(name, g).is_some() {
            return Err(bad);
        }
    }
    Ok(st)
}

/// Decodes a DUMP payload of an RDB version up to `max_version` into a
/// value: [`RdbError::Checksum`] for a bad footer, [`RdbError::Format`]
/// for a bad body.
pub fn restore(payload: &[u8], max_version: u16) -> Result<Value, RdbError> {
    if payload.len() < 10 {
        return Err(RdbError::Checksum);
    }
    let body_end = payload.len() - 10;
    let ver = u16::from_le_bytes([payload[body_end], payload[body_end + 1]]);
    if ver > max_version {
        return Err(RdbError::Checksum);
    }
    let crc = u64::from_le_bytes(payload[payload.len() - 8..].try_into().expect("8"));
    if crc64(0, &payload[..payload.len() - 8]) != crc {
        return Err(RdbError::Checksum);
    }
    // Redis reads the value from the whole buffer: a value that runs into
    // the footer is read from the footer's bytes.
    let mut r = Reader { data: payload, pos: 0 };
    let t = r.byte()?;
    load_value(&mut r, t)
}

/// The value of type `t` at the reader's position.
fn load_value(r: &mut Reader<'_>, t: u8) -> Result<Value, RdbError> {
    let v = match t {
        T_STRING => Value::Str(StrValue::from_vec(r.string()?)),
        T_LIST_QUICKLIST_2 => {
            let nodes = r.count(2)?;
            let mut l = ListValue::new();
            for _ in 0..nodes {
                let container = r.len()?;
                let data = r.string()?;
                match container {
                    QUICKLIST_PLAIN => l.push_elem(false, Elem::Shared(Bytes::from(data))),
                    QUICKLIST_PACKED => {
                        for e in parse_listpack(&data)? {
                            match e {
                                LpEntry::Str(s) => l.push_back(s),
                                LpEntry::Int(v) => l.push_back(&crate::num::int_bytes(v)),
                            }
                        }
                    }
                    _ => return Err(RdbError::Format),
                }
            }
            if l.is_empty() {
                return Err(RdbError::Format);
            }
            Value::List(l)
        }
        T_SET => {
            let n = r.count(1)?;
            let mut s = SetValue::new();
            for _ in 0..n {
                if !s.insert(&r.string()?) {
                    return Err(RdbError::Format);
                }
            }
            if s.is_empty() {
                return Err(RdbError::Format);
            }
            Value::Set(s)
        }
        T_SET_LISTPACK => {
            let blob = r.string()?;
            let mut s = SetValue::new();
            for e in parse_listpack(&blob)? {
                if !s.insert(&e.to_bytes()) {
                    return Err(RdbError::Format);
                }
            }
            if s.is_empty() {
                return Err(RdbError::Format);
            }
            Value::Set(s)
        }
        T_SET_INTSET => {
            let blob = r.string()?;
            if blob.len() < 8 {
                return Err(RdbError::Format);
            }
            let width = u32::from_le_bytes(blob[..4].try_into().expect("4")) as usize;
            let count = u32::from_le_bytes(blob[4..8].try_into().expect("4")) as usize;
            if ![2, 4, 8].contains(&width)
                || count == 0
                || (blob.len() - 8) / width != count
                || (blob.len() - 8) % width != 0
            {
                return Err(RdbError::Format);
            }
            let mut s = SetValue::new();
            let mut prev: Option<i64> = None;
            for c in blob[8..].chunks_exact(width) {
                let v = match width {
                    2 => i64::from(i16::from_le_bytes([c[0], c[1]])),
                    4 => i64::from(i32::from_le_bytes(c.try_into().expect("4"))),
                    _ => i64::from_le_bytes(c.try_into().expect("8")),
                };
                if prev.is_some_and(|p| p >= v) {
                    return Err(RdbError::Format);
                }
                prev = Some(v);
                s.insert(&crate::num::int_bytes(v));
            }
            Value::Set(s)
        }
        T_HASH => {
            let n = r.count(2)?;
            let mut pairs = Vec::with_capacity(n);
            for _ in 0..n {
                let k = Bytes::from(r.string()?);
                let v = Bytes::from(r.string()?);
                pairs.push((k, v));
            }
            Value::Hash(hash_from_pairs(pairs.into_iter())?)
        }
        T_HASH_LISTPACK => {
            let blob = r.string()?;
            let es = parse_listpack(&blob)?;
            if es.len() % 2 != 0 {
                return Err(RdbError::Format);
            }
            let pairs = es.chunks_exact(2).map(|p| (p[0].to_bytes(), p[1].to_bytes()));
            Value::Hash(hash_from_pairs(pairs)?)
        }
        T_HASH_LISTPACK_EX => {
            r.take(8)?;
            let blob = r.string()?;
            let es = parse_listpack(&blob)?;
            if es.len() % 3 != 0 {
                return Err(RdbError::Format);
            }
            let mut h = hash_from_pairs(es.chunks_exact(3).map(|p| (p[0].to_bytes(), p[1].to_bytes())))?;
            for p in es.chunks_exact(3) {
                let at = match &p[2] {
                    LpEntry::Int(v) => u64::try_from(*v).map_err(|_| RdbError::Format)?,
                    LpEntry::Str(_) => return Err(RdbError::Format),
                };
                if at > DEADLINE_MAX {
                    return Err(RdbError::Format);
                }
                h.make_ttl();
                h.set_field_expire(&p[0].to_bytes(), at, false);
            }
            Value::Hash(h)
        }
        T_HASH_METADATA => {
            let min = u64::from_le_bytes(r.take(8)?.try_into().expect("8"));
            let n = r.count(3)?;
            let mut h = HashValue::default();
            h.make_ttl();
            for _ in 0..n {
                let d = r.len()?;
                let k = Bytes::from(r.string()?);
                let v = Bytes::from(r.string()?);
                if !h.insert(&k, &v) {
                    return Err(RdbError::Format);
                }
                let at = if d == 0 { 0 } else { min.checked_add(d - 1).ok_or(RdbError::Format)? };
                if at > DEADLINE_MAX {
                    return Err(RdbError::Format);
                }
                h.set_field_expire(&k, at, false);
            }
            if h.is_empty() {
                return Err(RdbError::Format);
            }
            Value::Hash(h)
        }
        T_ZSET_2 => {
            let n = r.count(9)?;
            let mut z = ZSet::new();
            for _ in 0..n {
                let m = Bytes::from(r.string()?);
                let s = f64::from_le_bytes(r.take(8)?.try_into().expect("8"));
                zset_insert(&mut z, m, s)?;
            }
            if z.is_empty() {
                return Err(RdbError::Format);
            }
            Value::ZSet(z)
        }
        T_ZSET_LISTPACK => {
            let blob = r.string()?;
            let es = parse_listpack(&blob)?;
            if es.len() % 2 != 0 || es.is_empty() {
                return Err(RdbError::Format);
            }
            let mut z = ZSet::new();
            for p in es.chunks_exact(2) {
                let s = match &p[1] {
                    LpEntry::Int(v) => *v as f64,
                    // Read back as Redis reads it (trailing text ignored);
                    // a NaN score is refused by `zset_insert`.
                    LpEntry::Str(s) => crate::num::zzl_strtod(s),
                };
                zset_insert(&mut z, p[0].to_bytes(), s)?;
            }
            Value::ZSet(z)
        }
        T_STREAM_LISTPACKS_3 => Value::Stream(Box::new(load_stream(r, true, true)?)),
        T_STREAM_LISTPACKS_2 => Value::Stream(Box::new(load_stream(r, true, false)?)),
        T_STREAM_LISTPACKS => Value::Stream(Box::new(load_stream(r, false, false)?)),
        _ => return Err(RdbError::Format),
    };
    Ok(v)
}

/// The encoding of a value loaded from a compact payload (an intset, or a
/// listpack hash or sorted set): Redis keeps it compact unless it
/// has more entries than the threshold in force, without checking the
/// lengths of its elements. Other payloads are encoded from their content,
/// as a value stored whole is (`None`).
pub fn loaded_encoding(payload: &[u8], value: &Value, limits: &EncLimits) -> Option<StrEnc> {
    loaded_encoding_of(*payload.first()?, value, limits)
}

/// [`loaded_encoding`] for a value of RDB type `t`.
pub fn loaded_encoding_of(t: u8, value: &Value, limits: &EncLimits) -> Option<StrEnc> {
    if let (T_SET_LISTPACK, Value::Set(s)) = (t, value) {
        // A listpack set stays one within the entries threshold in force.
        return Some(if s.len() > limits.set_listpack_entries { StrEnc::Big } else { StrEnc::SetListpack });
    }
    let (len, max) = match (t, value) {
        (T_SET_INTSET, Value::Set(s)) => (s.len(), limits.intset_entries()),
        (T_HASH_LISTPACK | T_HASH_LISTPACK_EX, Value::Hash(h)) => (h.len(), limits.hash_entries),
        (T_ZSET_LISTPACK, Value::ZSet(z)) => (z.len(), limits.zset_entries),
        _ => return None,
    };
    Some(if len > max { StrEnc::Big } else { StrEnc::Small })
}

// ---------------------------------------------------------------- files

const OP_FUNCTION2: u8 = 0xf5;
const OP_FUNCTION_PRE_GA: u8 = 0xf6;
const OP_MODULE_AUX: u8 = 0xf7;
const OP_IDLE: u8 = 0xf8;
const OP_FREQ: u8 = 0xf9;
const OP_AUX: u8 = 0xfa;
const OP_RESIZEDB: u8 = 0xfb;
const OP_EXPIRETIME_MS: u8 = 0xfc;
const OP_EXPIRETIME: u8 = 0xfd;
const OP_SELECTDB: u8 = 0xfe;
const OP_EOF: u8 = 0xff;

/// Writes a whole RDB file, as Redis 7.0's `rdbSaveRio` lays it out: the
/// `REDIS0010` header, the aux fields, the functions, then per non-empty
/// database `SELECTDB`, `RESIZEDB` and each key (its `EXPIRETIME_MS` first),
/// and `EOF` with the CRC-64 of everything before.
///
/// A file can also be written in pieces ([`FileWriter::take`] hands over
/// the bytes so far, the CRC carried on), so that a snapshot made over many
/// turns never holds or checksums the whole file at once.
#[derive(Debug)]
pub struct FileWriter {
    out: Vec<u8>,
    list_fill: i64,
    /// CRC-64 of the bytes already taken.
    crc: u64,
    /// One value's bytes, reused from key to key.
    scratch: Vec<u8>,
}

impl FileWriter {
    pub fn new(list_fill: i64) -> FileWriter {
        let mut out = Vec::with_capacity(4096);
        out.extend_from_slice(format!("REDIS{RDB_VERSION:04}").as_bytes());
        FileWriter { out, list_fill, crc: 0, scratch: Vec::new() }
    }

    /// An aux field (`redis-ver`, `ctime`, `repl-id`…): integers are
    /// written in their integer encoding, as Redis's `rdbSaveAuxFieldStrInt`.
    pub fn aux(&mut self, key: &str, value: &[u8]) {
        self.out.push(OP_AUX);
        save_string(&mut self.out, key.as_bytes());
        save_string(&mut self.out, value);
    }

    /// The function libraries: a `FUNCTION DUMP` payload, whose body is
    /// the same `FUNCTION2` records (its 10-byte footer is left out).
    pub fn functions(&mut self, dump_payload: &[u8]) {
        if dump_payload.len() > 10 {
            self.out.extend_from_slice(&dump_payload[..dump_payload.len() - 10]);
        }
    }

    /// One database: skipped when empty, as Redis skips it.
    #[cfg(test)]
    pub fn db(&mut self, index: usize, db: &super::Db) {
        if db.is_empty() {
            return;
        }
        self.select_db(index, db.len(), db.expires_len());
        for (key, entry) in db.iter() {
            self.key(key, entry);
        }
    }

    /// A database's `SELECTDB` and `RESIZEDB` (its keys and keys with a
    /// deadline: sizing hints for the reader).
    pub fn select_db(&mut self, index: usize, keys: usize, expires: usize) {
        self.out.push(OP_SELECTDB);
        save_len(&mut self.out, index as u64);
        self.out.push(OP_RESIZEDB);
        save_len(&mut self.out, keys as u64);
        save_len(&mut self.out, expires as u64);
    }

    /// One key of the selected database, its deadline first.
    pub fn key(&mut self, key: &[u8], entry: &Entry) {
        key_record(&mut self.out, &mut self.scratch, key, entry, self.list_fill);
    }

    /// Key records made apart ([`key_record`]), appended as they are.
    pub fn records(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    /// Bytes written and not taken yet.
    pub fn pending(&self) -> usize {
        self.out.len()
    }

    /// The bytes written since the last call (the file goes on after them).
    pub fn take(&mut self) -> Vec<u8> {
        self.crc = crc64(self.crc, &self.out);
        std::mem::replace(&mut self.out, Vec::with_capacity(4096))
    }

    /// `EOF` and the checksum: the file (its rest, after what was taken).
    pub fn finish(mut self) -> Vec<u8> {
        self.out.push(OP_EOF);
        let crc = crc64(self.crc, &self.out);
        self.out.extend_from_slice(&crc.to_le_bytes());
        self.out
    }
}

/// One key's record of an RDB file (`EXPIRETIME_MS` when it has a
/// deadline, the type, the name, the value) appended to `out`; `scratch`
/// holds the value on the way.
pub fn key_record(out: &mut Vec<u8>, scratch: &mut Vec<u8>, key: &[u8], entry: &Entry, list_fill: i64) {
    if let Some(at) = entry.expire() {
        out.push(OP_EXPIRETIME_MS);
        out.extend_from_slice(&at.to_le_bytes());
    }
    scratch.clear();
    dump_value(scratch, entry, entry.encoding(), list_fill, RDB_VERSION);
    out.push(scratch[0]);
    save_string(out, key);
    out.extend_from_slice(&scratch[1..]);
}

/// One key of an RDB file.
#[derive(Debug)]
pub struct FileKey {
    pub db: usize,
    pub key: Bytes,
    pub value: Value,
    /// Its RDB type (see [`loaded_encoding_of`]).
    pub rdb_type: u8,
    /// Absolute deadline, unix ms.
    pub expire_ms: Option<u64>,
}

/// What an RDB file holds.
#[derive(Debug, Default)]
pub struct File {
    pub aux: Vec<(Bytes, Bytes)>,
    /// The function libraries as a `FUNCTION DUMP` payload (footer
    /// included; no records when the file has none).
    pub functions: Vec<u8>,
    pub keys: Vec<FileKey>,
}

/// Why an RDB file was refused (for the log).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileError(pub String);

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Reads a whole RDB file (versions 1 to 10, the types Redis 7.0 writes):
/// the header, aux fields, functions, databases up to `databases`, keys with
/// their deadlines (`IDLE`/`FREQ` are read and dropped), `EOF` and, unless
/// it is zero, the CRC-64. Module data is refused. Every length is checked
/// against the bytes present, so a hostile file costs no more memory than
/// its own size.
pub fn load_file(data: &[u8], databases: usize) -> Result<File, FileError> {
    let bad = |what: &str, at: usize| FileError(format!("{what} at byte {at}"));
    if data.len() < 9 || &data[..5] != b"REDIS" {
        return Err(FileError("wrong signature trying to load DB from file".into()));
    }
    let ver: u16 = std::str::from_utf8(&data[5..9])
        .ok()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| FileError("bad RDB version field".into()))?;
    if !(1..=RDB_VERSION).contains(&ver) {
        return Err(FileError(format!("can't handle RDB format version {ver}")));
    }
    let mut r = Reader { data, pos: 9 };
    let mut file = File::default();
    let mut db = 0usize;
    let mut expire: Option<u64> = None;
    let mut functions: Vec<u8> = Vec::new();
    loop {
        let at = r.pos;
        let t = r.byte().map_err(|_| bad("unexpected end of file", at))?;
        match t {
            OP_EOF => break,
            OP_AUX => {
                let k = r.string().map_err(|_| bad("bad aux field", at))?;
                let v = r.string().map_err(|_| bad("bad aux field", at))?;
                file.aux.push((Bytes::from(k), Bytes::from(v)));
            }
            OP_SELECTDB => {
                let n = r.len().map_err(|_| bad("bad SELECTDB", at))?;
                if n >= databases as u64 {
                    return Err(FileError(format!(
                        "FATAL: Data file was created with a Redis server configured to handle more than {databases} databases"
                    )));
                }
                db = n as usize;
            }
            OP_RESIZEDB => {
                r.len().and_then(|_| r.len()).map_err(|_| bad("bad RESIZEDB", at))?;
            }
            OP_EXPIRETIME_MS => {
                let b = r.take(8).map_err(|_| bad("bad EXPIRETIME_MS", at))?;
                expire = Some(u64::from_le_bytes(b.try_into().expect("8")));
            }
            OP_EXPIRETIME => {
                let b = r.take(4).map_err(|_| bad("bad EXPIRETIME", at))?;
                expire = Some(u64::from(u32::from_le_bytes(b.try_into().expect("4"))) * 1000);
            }
            OP_IDLE => {
                r.len().map_err(|_| bad("bad IDLE", at))?;
            }
            OP_FREQ => {
                r.byte().map_err(|_| bad("bad FREQ", at))?;
            }
            OP_FUNCTION2 => {
                let code = r.string().map_err(|_| bad("bad function", at))?;
                functions.push(OP_FUNCTION2);
                save_len(&mut functions, code.len() as u64);
                functions.extend_from_slice(&code);
            }
            OP_FUNCTION_PRE_GA => return Err(FileError("Pre-GA function format not supported".into())),
            OP_MODULE_AUX => return Err(FileError("module data in the RDB file: no modules here".into())),
            t => {
                let key = r.string().map_err(|_| bad("bad key", at))?;
                let value = load_value(&mut r, t).map_err(|_| bad(&format!("bad value of type {t}"), at))?;
                file.keys.push(FileKey { db, key: Bytes::from(key), value, rdb_type: t, expire_ms: expire.take() });
            }
        }
    }
    if ver >= 5 {
        let end = r.pos;
        let b = r.take(8).map_err(|_| FileError("the RDB file ends before its checksum".into()))?;
        let expected = u64::from_le_bytes(b.try_into().expect("8"));
        if expected != 0 && crc64(0, &data[..end]) != expected {
            return Err(FileError("Wrong RDB checksum".into()));
        }
    }
    functions.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(0, &functions);
    functions.extend_from_slice(&crc.to_le_bytes());
    file.functions = functions;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dump_default(e: &Entry) -> Vec<u8> {
        dump(e, e.encoding(), -2, RDB_VERSION)
    }

    /// A small set as Redis 7.2 and later dump it (`RDB_TYPE_SET_LISTPACK`,
    /// the bytes redis-server 8.2.3 writes for `SADD s b a c 1`), read back
    /// in the same order; a duplicate member is refused.
    #[test]
    fn listpack_set_round_trips() {
        let theirs: &[u8] = b"\x14\x12\x12\x00\x00\x00\x04\x00\x81b\x02\x81a\x02\x81c\x02\x01\x01\xff\x0c\x00\xca3\xd1\x13\xaf\xf0\xabj";
        let Value::Set(s) = restore(theirs, 12).expect("8.2.3's payload") else { panic!("a set") };
        assert_eq!(s.to_vec(), [&b"b"[..], b"a", b"c", b"1"].map(Bytes::from_static));
        let ours = dump(&Entry::new(Value::Set(s)), "listpack", -2, 12);
        assert_eq!(ours, theirs);
        let mut dup = theirs[..theirs.len() - 10].to_vec();
        dup[12] = b'b';
        dup.extend_from_slice(&12u16.to_le_bytes());
        let crc = crc64(0, &dup);
        dup.extend_from_slice(&crc.to_le_bytes());
        assert!(matches!(restore(&dup, 12), Err(RdbError::Format)));
    }

    /// A small hash with a field deadline dumps as redis-server 8.2.3's
    /// `DUMP` does (`RDB_TYPE_HASH_LISTPACK_EX`, RDB 12), byte for byte, and
    /// restores with its deadlines; a hashtable one round-trips through
    /// `RDB_TYPE_HASH_METADATA`.
    #[test]
    fn hash_with_field_deadlines_as_redis_8_2() {
        let mut h: HashValue = [("a", "1"), ("b", "2"), ("c", "3")].into_iter().collect();
        h.set_field_expire(b"b", 4_000_000_000_123, true);
        let mut e = Entry::new(Value::Hash(h.clone()));
        e.str_enc = StrEnc::Small;
        let redis: &[u8] = b"\x19\x7b\x40\x94\x52\xa3\x03\x00\x00\x24\x24\x00\x00\x00\x09\x00\x81b\x02\x02\x01\xf4\x7b\x40\x94\x52\xa3\x03\x00\x00\x09\x81a\x02\x01\x01\x00\x01\x81c\x02\x03\x01\x00\x01\xff\x0c\x00\x5d\x37\x55\x98\xe7\x03\x27\x9a";
        assert_eq!(dump(&e, e.encoding(), -2, 12), redis);
        let Value::Hash(back) = restore(redis, 12).expect("restores") else { panic!("a hash") };
        assert_eq!(back.field_expire(b"b"), Some(4_000_000_000_123));
        assert_eq!(back.field_expire(b"a"), Some(0));
        e.str_enc = StrEnc::Big;
        let payload = dump(&e, e.encoding(), -2, 12);
        assert_eq!(payload[0], T_HASH_METADATA);
        let Value::Hash(back) = restore(&payload, 12).expect("restores") else { panic!("a hash") };
        assert!(back.iter_expire().eq(h.iter_expire()));
        assert!(restore(&payload, 10).is_err(), "not under a 7.0 profile's version");
        // A deadline past what Redis's field expiry holds (2^48 - 1) is a
        // corrupt payload, in either form.
        for (at, ok) in [(DEADLINE_MAX, true), (DEADLINE_MAX + 1, false)] {
            let mut big = h.clone();
            big.to_big();
            big.set_field_expire(b"b", at, false);
            for enc in [StrEnc::Small, StrEnc::Big] {
                let mut e = Entry::new(Value::Hash(big.clone()));
                e.str_enc = enc;
                let payload = dump(&e, e.encoding(), -2, 12);
                assert_eq!(restore(&payload, 12).is_ok(), ok, "{at} {enc:?}");
            }
        }
    }

    #[test]
    fn crc64_check_value() {
        assert_eq!(crc64(0, b"123456789"), 0xe9c6_d914_c4b8_d9ca);
        // Continuing a CRC over a split input gives the same result.
        assert_eq!(crc64(crc64(0, b"1234"), b"56789"), 0xe9c6_d914_c4b8_d9ca);
    }

    #[test]
    fn lzf_round_trips() {
        let mut seed = 7u64;
        for n in [21usize, 40, 100, 1000, 10_000, 100_000] {
            for kind in 0..3 {
                let data: Vec<u8> = (0..n)
                    .map(|i| {
                        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        match kind {
                            0 => b'a' + (i % 7) as u8,
                            1 => (seed >> 60) as u8 + b'a',
                            _ => (seed >> 33) as u8,
                        }
                    })
                    .collect();
                if let Some(c) = lzf_compress(&data, n - 4) {
                    assert!(c.len() <= n - 4);
                    assert_eq!(lzf_decompress(&c, n).as_deref(), Some(&data[..]), "n={n} kind={kind}");
                } else {
                    assert_ne!(kind, 0, "repetitive data of {n} bytes must compress");
                }
            }
        }
        assert!(lzf_decompress(&[0x20, 0x00], 3).is_none(), "back-reference before the start");
        assert!(lzf_decompress(&[0x05, b'a'], 6).is_none(), "truncated literal run");
    }

    #[test]
    fn listpack_entries_round_trip() {
        let vals: Vec<&[u8]> = vec![
            b"0",
            b"127",
            b"128",
            b"-1",
            b"-4096",
            b"4095",
            b"4096",
            b"-32768",
            b"32767",
            b"32768",
            b"8388607",
            b"-8388609",
            b"2147483647",
            b"2147483648",
            b"-9223372036854775808",
            b"abc",
            b"-0",
            b"01",
            b"",
        ];
        let long = vec![b'x'; 5000];
        let mid = [b'y'; 100];
        let mut lp = Listpack::new();
        for v in vals.iter().copied().chain([&long[..], &mid[..]]) {
            lp.push(v);
        }
        let blob = lp.finish();
        let es = parse_listpack(&blob).expect("valid");
        let back: Vec<Bytes> = es.iter().map(LpEntry::to_bytes).collect();
        let want: Vec<&[u8]> = vals.iter().copied().chain([&long[..], &mid[..]]).collect();
        assert_eq!(back.iter().map(|b| &b[..]).collect::<Vec<_>>(), want);
        // Wrong total, wrong count, a missing end byte, a bad back-length.
        let mut bad = blob.clone();
        bad[0] ^= 1;
        assert!(parse_listpack(&bad).is_err());
        let mut bad = blob.clone();
        bad[4] ^= 1;
        assert!(parse_listpack(&bad).is_err());
        let mut bad = blob.clone();
        let last = bad.len() - 1;
        bad[last] = 0;
        assert!(parse_listpack(&bad).is_err());
        let mut bad = blob.clone();
        bad[7] ^= 1; // the back-length of the first entry ("0": 1 byte)
        assert!(parse_listpack(&bad).is_err());
    }

    #[test]
    fn strings_use_redis_encodings() {
        let e = |s: &str| dump_default(&Entry::new(Value::Str(StrValue::new(s.as_bytes()))));
        assert_eq!(&e("1")[..3], &[0, 0xc0, 1]);
        assert_eq!(&e("-200")[..4], &[0, 0xc1, 0x38, 0xff]);
        assert_eq!(&e("12345678901")[..3], &[0, 11, b'1']);
        assert_eq!(&e("hello")[..2], &[0, 5]);
        let big = "a".repeat(100);
        assert_eq!(e(&big)[1], 0xc3);
        for s in ["1", "-200", "hello", &big, "12345678901"] {
            match restore(&e(s), RDB_VERSION).expect("restore") {
                Value::Str(b) => assert_eq!(&b[..], s.as_bytes()),
                v => panic!("{v:?}"),
            }
        }
    }

    #[test]
    fn corrupt_payloads_are_refused() {
        let good = dump_default(&Entry::new(Value::Str(StrValue::new(b"hello world"))));
        assert_eq!(restore(&good[..5], RDB_VERSION).err(), Some(RdbError::Checksum));
        let mut flipped = good.clone();
        flipped[3] ^= 1;
        assert_eq!(restore(&flipped, RDB_VERSION).err(), Some(RdbError::Checksum));
        // A huge declared length with a valid CRC.
        let mut body = vec![T_STRING, 0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
        body.extend_from_slice(&RDB_VERSION.to_le_bytes());
        let crc = crc64(0, &body);
        body.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(restore(&body, RDB_VERSION).err(), Some(RdbError::Format));
    }

    /// Values of every type and encoding, dumped.
    fn sample_payloads() -> Vec<Vec<u8>> {
        let b = |s: String| Bytes::from(s);
        let mut vals = vec![
            Value::Str(StrValue::new(b"12345")),
            Value::Str(StrValue::from("lorem ipsum dolor sit amet ".repeat(8))),
            Value::List((0..300).map(|i| b(format!("item-{i}"))).collect()),
            Value::List((0..50).map(|i| b((i * 1000 - 7).to_string())).collect()),
            Value::Set(
                (0..20).map(|i| b((i * 70_000).to_string())).collect::<Vec<_>>().iter().map(|m| &m[..]).collect(),
            ),
            Value::Set((0..20).map(|i| b(format!("m{i}"))).collect::<Vec<_>>().iter().map(|m| &m[..]).collect()),
            Value::Hash((0..10).map(|i| (b(format!("f{i}")), b(i.to_string()))).collect()),
            Value::Hash((0..10).map(|i| (b(format!("f{i}")), b("v".repeat(70)))).collect()),
        ];
        for n in [10, 200] {
            let mut z = ZSet::new();
            for i in 0..n {
                z.insert(b(format!("m{i}")), f64::from(i) / 3.0);
            }
            vals.push(Value::ZSet(z));
        }
        let mut st = Stream::default();
        for i in 1..150u64 {
            let f = if i % 3 == 0 { "g" } else { "f" };
            st.append(StreamId::new(i, 0), vec![(b(f.into()), b(i.to_string()))], Default::default());
        }
        let mut g = Group::new(StreamId::new(2, 0), Some(2));
        for i in 1..=2 {
            let p = PendingEntry { consumer: Bytes::from_static(b"c"), delivery_time: 5, delivery_count: 1 };
            g.pel.insert(StreamId::new(i, 0), p);
        }
        let mut c = Consumer::default();
        c.pel.extend([StreamId::new(1, 0), StreamId::new(2, 0)]);
        g.consumers.insert(Bytes::from_static(b"c"), c);
        st.groups.insert(Bytes::from_static(b"g"), g);
        vals.push(Value::Stream(Box::new(st)));
        vals.into_iter().map(|v| dump_default(&Entry::new(v))).collect()
    }

    #[test]
    fn every_sample_round_trips() {
        for p in sample_payloads() {
            let v = restore(&p, RDB_VERSION).expect("restores");
            assert_eq!(dump_default(&Entry::new(v)), p);
        }
    }

    /// Random damage under a recomputed CRC never panics (and never
    /// allocates past what the payload can describe).
    #[test]
    fn damaged_payloads_never_panic() {
        let mut seed = 99u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        for p in sample_payloads() {
            let body = &p[..p.len() - 10];
            for _ in 0..2000 {
                let mut b = body.to_vec();
                match next() % 3 {
                    0 => {
                        for _ in 0..1 + next() % 4 {
                            let at = next() % b.len();
                            b[at] ^= 1 << (next() % 8);
                        }
                    }
                    1 => b.truncate(1 + next() % b.len()),
                    _ => {
                        let at = next() % b.len();
                        b[at] = [0x00, 0x3f, 0x40, 0x7f, 0x80, 0x81, 0xc0, 0xc3, 0xff][next() % 9];
                    }
                }
                b.extend_from_slice(&RDB_VERSION.to_le_bytes());
                let crc = crc64(0, &b);
                b.extend_from_slice(&crc.to_le_bytes());
                let _ = restore(&b, RDB_VERSION);
            }
        }
    }

    /// A keyspace with every value type, an expiry and functions, written
    /// as a file and read back.
    fn sample_file() -> Vec<u8> {
        let mut ks = super::super::Keyspace::new(16);
        for (i, p) in sample_payloads().into_iter().enumerate() {
            let v = restore(&p, RDB_VERSION).expect("sample payload");
            let key = Bytes::from(format!("k{i}"));
            let mut db = ks.view(i % 3 * 5);
            db.set(&key, v, false);
            if i % 2 == 0 {
                db.set_expire(&key, 4_000_000_000_000 + i as u64);
            }
        }
        let mut w = FileWriter::new(-2);
        w.aux("redis-ver", b"7.0.15");
        w.aux("repl-offset", b"1234");
        let mut funcs = vec![OP_FUNCTION2];
        save_string(&mut funcs, b"#!lua name=lib\nredis.register_function('f', function() return 1 end)");
        funcs.extend_from_slice(&[0; 10]);
        w.functions(&funcs);
        for (i, db) in ks.dbs.iter().enumerate() {
            w.db(i, db);
        }
        w.finish()
    }

    #[test]
    fn file_round_trips() {
        let file = sample_file();
        assert!(file.starts_with(b"REDIS0010"));
        let loaded = load_file(&file, 16).expect("loads");
        assert_eq!(loaded.aux[1], (Bytes::from_static(b"repl-offset"), Bytes::from_static(b"1234")));
        let payloads = sample_payloads();
        assert_eq!(loaded.keys.len(), payloads.len());
        for k in &loaded.keys {
            let i: usize = std::str::from_utf8(&k.key[1..]).unwrap().parse().unwrap();
            assert_eq!(k.db, i % 3 * 5);
            assert_eq!(k.expire_ms, i.is_multiple_of(2).then_some(4_000_000_000_000 + i as u64));
            let again = dump_default(&Entry::new(k.value.clone()));
            assert_eq!(again, dump_default(&Entry::new(restore(&payloads[i], RDB_VERSION).unwrap())), "key {i}");
        }
        assert_eq!(loaded.functions[0], OP_FUNCTION2);
        // Too many databases, a bad checksum, a bad signature.
        assert!(load_file(&file, 5).is_err());
        let mut bad = file.clone();
        let n = bad.len();
        bad[n - 1] ^= 1;
        assert_eq!(load_file(&bad, 16).unwrap_err().0, "Wrong RDB checksum");
        assert!(load_file(b"REDIS0011\xff", 16).is_err());
        assert!(load_file(b"RUBBISH00", 16).is_err());
    }

    #[test]
    fn damaged_files_are_refused_not_panicking() {
        let file = sample_file();
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        for _ in 0..3000 {
            let mut b = file[..file.len() - 8].to_vec();
            match next() % 3 {
                0 => {
                    let at = 9 + next() % (b.len() - 9);
                    b[at] ^= 1 << (next() % 8);
                }
                1 => b.truncate(9 + next() % (b.len() - 9)),
                _ => {
                    let at = 9 + next() % (b.len() - 9);
                    b[at] = [0x00, 0x3f, 0x40, 0x7f, 0x80, 0x81, 0xc0, 0xc3, 0xff, 0xf5, 0xfe][next() % 11];
                }
            }
            // A zero checksum is not checked: the body itself must be refused
            // or read, never panic.
            b.extend_from_slice(&[0; 8]);
            let _ = load_file(&b, 16);
        }
    }
}
