//! Bitmaps: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD — strings seen as bit
//! arrays, bit 0 being the most significant bit of the first byte, with
//! Redis 7.0's argument order, ranges (BYTE/BIT) and errors.

use bytes::Bytes;

use super::util::{eq, int};
use super::{cmd, CommandSpec, Ctx};
use crate::db::{notify, StrEnc, StrValue, Value};
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;
use crate::version::Version;

pub static COMMANDS: &[CommandSpec] = &[
    cmd("setbit", setbit, 4, "write denyoom", 1, 1, 1, "@write @bitmap @slow")
        .doc("Sets or clears the bit at offset in the string value stored at key", "2.2.0"),
    cmd("getbit", getbit, 3, "readonly fast", 1, 1, 1, "@read @bitmap @fast")
        .doc("Returns the bit value at offset in the string value stored at key", "2.2.0"),
    cmd("bitcount", bitcount, -2, "readonly", 1, 1, 1, "@read @bitmap @slow")
        .doc("Count set bits in a string", "2.6.0"),
    cmd("bitpos", bitpos, -3, "readonly", 1, 1, 1, "@read @bitmap @slow")
        .doc("Find first bit set or clear in a string", "2.8.7"),
    cmd("bitop", bitop, -4, "write denyoom", 2, -1, 1, "@write @bitmap @slow")
        .doc("Perform bitwise operations between strings", "2.6.0"),
    cmd("bitfield", bitfield, -2, "write denyoom", 1, 1, 1, "@write @bitmap @slow")
        .doc("Perform arbitrary bitfield integer operations on strings", "3.2.0"),
    cmd("bitfield_ro", bitfield_ro, -2, "readonly fast", 1, 1, 1, "@read @bitmap @fast")
        .doc("Perform arbitrary bitfield integer operations on strings. Read-only variant of BITFIELD", "6.0.0"),
];

const OFFSET_ERR: &str = "ERR bit offset is not an integer or out of range";

/// `getBitOffsetFromArgument`: a bit offset below `proto-max-bulk-len` bytes.
fn bit_offset(ctx: &Ctx<'_>, arg: &[u8]) -> Result<u64, CmdError> {
    match crate::num::parse_i64_strict(arg) {
        Some(n) if n >= 0 && (n >> 3) < ctx.core.config.proto_max_bulk => Ok(n as u64),
        _ => Err(CmdError::custom(OFFSET_ERR)),
    }
}

/// A copy of the string at `key` (None: missing); WRONGTYPE otherwise.
/// For `BITOP`'s sources, which it reads whole; the other readers look at
/// the stored bytes in place.
fn read_string(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<Option<Bytes>, CmdError> {
    ctx.db().get_str(key).map(|s| s.map(|s| s.to_bytes()))
}

fn setbit(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let offset = bit_offset(ctx, &args[2])?;
    let on = match crate::num::parse_i64_strict(&args[3]) {
        Some(v @ (0 | 1)) => v as u8,
        _ => return Err(CmdError::custom("ERR bit is not an integer or out of range")),
    };
    let key = &args[1];
    let byte = (offset >> 3) as usize;
    let mask = 0x80u8 >> (offset & 7);
    let mut db = ctx.db();
    // Redis signals (WATCH, keyspace event) only when the key is created or
    // grown, or the bit really changes.
    let (old, changed) = match db.get_mut(key) {
        Some(Value::Str(s)) => {
            let (mut old, mut changed) = (false, false);
            if s.len() > byte && (s[byte] & mask != 0) == (on == 1) {
                old = on == 1;
            } else {
                s.edit((byte + 1).saturating_sub(s.len()), |m| {
                    if m.len() <= byte {
                        m.resize(byte + 1, 0);
                    }
                    old = m[byte] & mask != 0;
                    if on == 1 {
                        m[byte] |= mask;
                    } else {
                        m[byte] &= !mask;
                    }
                });
                changed = true;
            }
            (old, changed)
        }
        Some(_) => return Err(CmdError::WrongType),
        None => {
            let mut m = vec![0u8; byte + 1];
            if on == 1 {
                m[byte] |= mask;
            }
            db.set(key, Value::Str(StrValue::from_vec(m)), false);
            (false, true)
        }
    };
    // Redis unshares the string (making it raw) even when no bit changes.
    db.set_str_enc(key, StrEnc::Raw);
    if changed {
        db.touch(key);
        db.notify(notify::STRING, "setbit", key);
    }
    Ok(Reply::Int(i64::from(old)))
}

fn getbit(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let offset = bit_offset(ctx, &args[2])?;
    let mut db = ctx.db();
    let Some(s) = db.get_str(&args[1])? else { return Ok(Reply::Int(0)) };
    let byte = (offset >> 3) as usize;
    Ok(Reply::Int(s.get(byte).map_or(0, |b| i64::from(b & (0x80 >> (offset & 7)) != 0))))
}

/// A `[start end [BYTE|BIT]]` range resolved to bytes, with masks of the
/// bits outside a BIT range in its first and last byte (Redis's
/// `first_byte_neg_mask` / `last_byte_neg_mask`).
struct Range {
    start: i64,
    end: i64,
    first_mask: u8,
    last_mask: u8,
}

fn resolve(len: i64, mut start: i64, mut end: i64, is_bit: bool) -> Range {
    let total = if is_bit { len << 3 } else { len };
    if start < 0 {
        start += total;
    }
    if end < 0 {
        end += total;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= total {
        end = total - 1;
    }
    let (mut first_mask, mut last_mask) = (0, 0);
    if is_bit && start <= end {
        first_mask = !((1u16 << (8 - (start & 7))) - 1) as u8;
        last_mask = ((1u16 << (7 - (end & 7))) - 1) as u8;
        start >>= 3;
        end >>= 3;
    }
    Range { start, end, first_mask, last_mask }
}

/// `BYTE` or `BIT`; anything else is a syntax error.
fn unit(arg: &[u8]) -> Result<bool, CmdError> {
    if eq(arg, "bit") {
        Ok(true)
    } else if eq(arg, "byte") {
        Ok(false)
    } else {
        Err(CmdError::Syntax)
    }
}

fn popcount(b: &[u8]) -> i64 {
    b.iter().map(|x| i64::from(x.count_ones())).sum()
}

/// A `BITCOUNT`/`BITPOS` range as given: start, end (`None`: the end of
/// the string), and whether it counts bits.
type GivenRange = Option<(i64, Option<i64>, bool)>;

/// `BITCOUNT`'s range arguments. Redis 7.0 looks the key up first (a
/// missing key answers 0 whatever follows); from 7.2 the arguments are
/// checked first. Valkey 8 takes a start without an end.
fn bitcount_range(ctx: &Ctx<'_>, args: &[Bytes]) -> Result<GivenRange, CmdError> {
    Ok(match args.len() {
        2 => None,
        3 if ctx.core.profile().is_valkey() && ctx.core.profile().version() >= Version::new(8, 0, 0) => {
            Some((int(&args[2])?, None, false))
        }
        4 | 5 => {
            let (start, end) = (int(&args[2])?, int(&args[3])?);
            Some((start, Some(end), args.len() == 5 && unit(&args[4])?))
        }
        _ => return Err(CmdError::Syntax),
    })
}

fn bitcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let checked_first = ctx.core.profile().at_least(7, 2, 0);
    // Read without side effects; its error is answered before the lookup
    // or after it, as the version does.
    let parsed = bitcount_range(ctx, args);
    let parsed = if checked_first { Ok(parsed?) } else { parsed };
    let mut db = ctx.db();
    let Some(s) = db.get_str(&args[1])? else { return Ok(Reply::Int(0)) };
    let given = parsed?;
    let len = s.len() as i64;
    let r = match given {
        None => Range { start: 0, end: len - 1, first_mask: 0, last_mask: 0 },
        Some((start, end, is_bit)) => {
            let end = end.unwrap_or(if is_bit { (len << 3) - 1 } else { len - 1 });
            if start < 0 && end < 0 && start > end {
                return Ok(Reply::Int(0));
            }
            resolve(len, start, end, is_bit)
        }
    };
    if r.start > r.end {
        return Ok(Reply::Int(0));
    }
    let (start, end) = (r.start as usize, r.end as usize);
    let mut count = popcount(&s[start..=end]);
    count -= i64::from((s[start] & r.first_mask).count_ones());
    count -= i64::from((s[end] & r.last_mask).count_ones());
    Ok(Reply::Int(count))
}

/// `redisBitpos`: position of the first `bit` in `bytes`; for a clear bit
/// not found, the position just past them (the string is zero-padded).
fn first_bit(bytes: &[u8], bit: bool) -> i64 {
    for (i, b) in bytes.iter().enumerate() {
        let v = if bit { *b } else { !*b };
        if v != 0 {
            return (i as i64) * 8 + i64::from(v.leading_zeros());
        }
    }
    if bit {
        -1
    } else {
        bytes.len() as i64 * 8
    }
}

fn bitpos(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let bit = match int(&args[2])? {
        0 => false,
        1 => true,
        _ => return Err(CmdError::custom("ERR The bit argument must be 1 or 0.")),
    };
    // Redis 7.0 looks the key up before the range; from 7.2 the range is
    // checked first.
    let range = |args: &[Bytes]| -> Result<GivenRange, CmdError> {
        Ok(match args.len() {
            3 => None,
            4..=6 => {
                let start = int(&args[3])?;
                let is_bit = args.len() == 6 && unit(&args[5])?;
                let end = if args.len() >= 5 { Some(int(&args[4])?) } else { None };
                Some((start, end, is_bit))
            }
            _ => return Err(CmdError::Syntax),
        })
    };
    let given = if ctx.core.profile().at_least(7, 2, 0) { Some(range(args)?) } else { None };
    let mut db = ctx.db();
    let Some(s) = db.get_str(&args[1])? else { return Ok(Reply::Int(if bit { -1 } else { 0 })) };
    let given = match given {
        Some(g) => g,
        None => range(args)?,
    };
    let len = s.len() as i64;
    let mut end_given = false;
    let r = match given {
        None => Range { start: 0, end: len - 1, first_mask: 0, last_mask: 0 },
        Some((start, end, is_bit)) => {
            end_given = end.is_some();
            let end = end.unwrap_or(if is_bit { (len << 3) + 7 } else { len - 1 });
            resolve(len, start, end, is_bit)
        }
    };
    if r.start > r.end {
        return Ok(Reply::Int(-1));
    }
    let (mut start, end) = (r.start as usize, r.end as usize);
    let mut bytes = end - start + 1;
    let apply = |b: u8, mask: u8| if bit { b & !mask } else { b | mask };
    let pos = 'found: {
        if r.first_mask != 0 {
            let mut c = apply(s[start], r.first_mask);
            if r.last_mask != 0 && bytes == 1 {
                c = apply(c, r.last_mask);
            }
            let pos = first_bit(&[c], bit);
            if bytes == 1 || (pos != -1 && pos != 8) {
                break 'found pos;
            }
            start += 1;
            bytes -= 1;
        }
        let cur = bytes - usize::from(r.last_mask != 0);
        if cur > 0 {
            let pos = first_bit(&s[start..start + cur], bit);
            if bytes == cur || (pos != -1 && pos != (cur as i64) << 3) {
                break 'found pos;
            }
            start += cur;
            bytes -= cur;
        }
        first_bit(&[apply(s[end], r.last_mask)], bit)
    };
    if end_given && !bit && pos == (bytes as i64) << 3 {
        return Ok(Reply::Int(-1));
    }
    Ok(Reply::Int(if pos != -1 { pos + ((start as i64) << 3) } else { pos }))
}

fn bitop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    #[derive(Clone, Copy, PartialEq)]
    enum Op {
        And,
        Or,
        Xor,
        Not,
        // Redis 8.2's: the first key against the union of the others, and
        // the bits set in exactly one key.
        Diff,
        Diff1,
        AndOr,
        One,
    }
    let since_8_2 = ctx.core.profile().at_least(8, 2, 0);
    let op = match &args[1].to_ascii_lowercase()[..] {
        b"and" => Op::And,
        b"or" => Op::Or,
        b"xor" => Op::Xor,
        b"not" => Op::Not,
        b"diff" if since_8_2 => Op::Diff,
        b"diff1" if since_8_2 => Op::Diff1,
        b"andor" if since_8_2 => Op::AndOr,
        b"one" if since_8_2 => Op::One,
        _ => return Err(CmdError::Syntax),
    };
    if op == Op::Not && args.len() != 4 {
        return Err(CmdError::custom("ERR BITOP NOT must be called with a single source key."));
    }
    let name = match op {
        Op::Diff => "DIFF",
        Op::Diff1 => "DIFF1",
        Op::AndOr => "ANDOR",
        _ => "",
    };
    if !name.is_empty() && args.len() < 5 {
        return Err(CmdError::custom(format!("ERR BITOP {name} must be called with at least two source keys.")));
    }
    let dst = &args[2];
    let sources: Vec<Bytes> = ctx.with_read_lookups(true, |ctx| {
        args[3..].iter().map(|k| read_string(ctx, k).map(Option::unwrap_or_default)).collect::<Result<_, _>>()
    })?;
    let maxlen = sources.iter().map(Bytes::len).max().unwrap_or(0);
    let mut db = ctx.db();
    if maxlen == 0 {
        if db.remove(dst).is_some() {
            db.notify(notify::GENERIC, "del", dst);
        }
        return Ok(Reply::Int(0));
    }
    let byte = |s: &Bytes, j: usize| s.get(j).copied().unwrap_or(0);
    let out: Vec<u8> = (0..maxlen)
        .map(|j| {
            let first = byte(&sources[0], j);
            let rest = || sources[1..].iter().map(|s| byte(s, j));
            match op {
                Op::And => rest().fold(first, |acc, b| acc & b),
                Op::Or => rest().fold(first, |acc, b| acc | b),
                Op::Xor => rest().fold(first, |acc, b| acc ^ b),
                Op::Not => !first,
                Op::Diff => first & !rest().fold(0, |acc, b| acc | b),
                Op::Diff1 => !first & rest().fold(0, |acc, b| acc | b),
                Op::AndOr => first & rest().fold(0, |acc, b| acc | b),
                Op::One => {
                    // Bits seen once so far, and bits seen at all.
                    let (once, _) =
                        rest().fold((first, first), |(once, seen), b| ((once & !b) | (b & !seen), seen | b));
                    once
                }
            }
        })
        .collect();
    db.set(dst, Value::Str(StrValue::from_vec(out)), false);
    db.set_str_enc(dst, StrEnc::Raw);
    db.notify(notify::STRING, "set", dst);
    Ok(Reply::Int(maxlen as i64))
}

/// One parsed BITFIELD operation.
struct BfOp {
    kind: BfKind,
    signed: bool,
    bits: u32,
    offset: u64,
    value: i64,
    overflow: Overflow,
}

#[derive(Clone, Copy, PartialEq)]
enum BfKind {
    Get,
    Set,
    Incrby,
}

#[derive(Clone, Copy, PartialEq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

fn bitfield(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    bitfield_generic(ctx, args, false)
}

fn bitfield_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    bitfield_generic(ctx, args, true)
}

/// `getBitfieldTypeFromArgument`: `i1`..`i64` or `u1`..`u63`.
fn bitfield_type(arg: &[u8]) -> Result<(bool, u32), CmdError> {
    let err = || {
        CmdError::custom(
            "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.",
        )
    };
    let signed = match arg.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return Err(err()),
    };
    match crate::num::parse_i64_strict(&arg[1..]) {
        Some(n) if n >= 1 && n <= if signed { 64 } else { 63 } => Ok((signed, n as u32)),
        _ => Err(err()),
    }
}

/// A BITFIELD offset: a bit number, or `#n` for the n-th field of `bits`.
fn bitfield_offset(ctx: &Ctx<'_>, arg: &[u8], bits: u32) -> Result<u64, CmdError> {
    let (hash, digits) = match arg.first() {
        Some(b'#') => (true, &arg[1..]),
        _ => (false, arg),
    };
    let n = crate::num::parse_i64_strict(digits).ok_or_else(|| CmdError::custom(OFFSET_ERR))?;
    let n = if hash { n.wrapping_mul(i64::from(bits)) } else { n };
    if n < 0 || (n >> 3) >= ctx.core.config.proto_max_bulk {
        return Err(CmdError::custom(OFFSET_ERR));
    }
    Ok(n as u64)
}

fn get_unsigned(p: &[u8], mut offset: u64, bits: u32) -> u64 {
    let mut v = 0u64;
    for _ in 0..bits {
        let byte = p.get((offset >> 3) as usize).copied().unwrap_or(0);
        v = (v << 1) | u64::from((byte >> (7 - (offset & 7))) & 1);
        offset += 1;
    }
    v
}

fn get_signed(p: &[u8], offset: u64, bits: u32) -> i64 {
    let mut v = get_unsigned(p, offset, bits);
    if bits < 64 && v & (1 << (bits - 1)) != 0 {
        v |= u64::MAX << bits;
    }
    v as i64
}

fn set_unsigned(p: &mut [u8], mut offset: u64, bits: u32, value: u64) {
    for j in 0..bits {
        let bit = (value >> (bits - 1 - j)) & 1;
        let byte = (offset >> 3) as usize;
        let shift = 7 - (offset & 7);
        p[byte] = (p[byte] & !(1 << shift)) | ((bit as u8) << shift);
        offset += 1;
    }
}

/// `checkUnsignedBitfieldOverflow`: 0, or ±1 with the wrapped/saturated value.
fn unsigned_overflow(value: u64, incr: i64, bits: u32, ow: Overflow) -> (i32, u64) {
    let max = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    let maxincr = max.wrapping_sub(value) as i64;
    let minincr = value.wrapping_neg() as i64;
    let wrap = || value.wrapping_add(incr as u64) & !(u64::MAX.checked_shl(bits).unwrap_or(0));
    if value > max || (incr > 0 && incr > maxincr) {
        (1, if ow == Overflow::Wrap { wrap() } else { max })
    } else if incr < 0 && incr < minincr {
        (-1, if ow == Overflow::Wrap { wrap() } else { 0 })
    } else {
        (0, 0)
    }
}

/// `checkSignedBitfieldOverflow`.
fn signed_overflow(value: i64, incr: i64, bits: u32, ow: Overflow) -> (i32, i64) {
    let max = if bits == 64 { i64::MAX } else { (1i64 << (bits - 1)) - 1 };
    let min = -max - 1;
    let maxincr = (max as u64).wrapping_sub(value as u64) as i64;
    let minincr = min.wrapping_sub(value);
    let wrap = || {
        let mut c = (value as u64).wrapping_add(incr as u64);
        if bits < 64 {
            let mask = u64::MAX << bits;
            if c & (1 << (bits - 1)) != 0 {
                c |= mask;
            } else {
                c &= !mask;
            }
        }
        c as i64
    };
    if value > max || (bits != 64 && incr > maxincr) || (value >= 0 && incr > 0 && incr > maxincr) {
        (1, if ow == Overflow::Wrap { wrap() } else { max })
    } else if value < min || (bits != 64 && incr < minincr) || (value < 0 && incr < 0 && incr < minincr) {
        (-1, if ow == Overflow::Wrap { wrap() } else { min })
    } else {
        (0, 0)
    }
}

/// `BITFIELD` / `BITFIELD_RO`: every operation is parsed before any runs.
fn bitfield_generic(ctx: &mut Ctx<'_>, args: &[Bytes], readonly_cmd: bool) -> CmdResult {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut highest_write: Option<u64> = None;
    let mut j = 2;
    while j < args.len() {
        let rem = args.len() - j - 1;
        let kind = if eq(&args[j], "get") && rem >= 2 {
            BfKind::Get
        } else if eq(&args[j], "set") && rem >= 3 {
            BfKind::Set
        } else if eq(&args[j], "incrby") && rem >= 3 {
            BfKind::Incrby
        } else if eq(&args[j], "overflow") && rem >= 1 {
            let t = &args[j + 1];
            overflow = if eq(t, "wrap") {
                Overflow::Wrap
            } else if eq(t, "sat") {
                Overflow::Sat
            } else if eq(t, "fail") {
                Overflow::Fail
            } else {
                return Err(CmdError::custom("ERR Invalid OVERFLOW type specified"));
            };
            j += 2;
            continue;
        } else {
            return Err(CmdError::Syntax);
        };
        let (signed, bits) = bitfield_type(&args[j + 1])?;
        let offset = bitfield_offset(ctx, &args[j + 2], bits)?;
        let mut value = 0;
        if kind != BfKind::Get {
            let last = offset + u64::from(bits) - 1;
            highest_write = Some(highest_write.map_or(last, |h| h.max(last)));
            value = int(&args[j + 3])?;
        }
        ops.push(BfOp { kind, signed, bits, offset, value, overflow });
        j += if kind == BfKind::Get { 3 } else { 4 };
    }
    let key = &args[1];
    let Some(highest) = highest_write else {
        // Only GETs: read the key (missing = all zeros).
        let mut db = ctx.db();
        let s: &[u8] = db.get_str(key)?.map_or(&[], |s| s);
        return Ok(Reply::Array(
            ops.iter()
                .map(|op| {
                    Reply::Int(if op.signed {
                        get_signed(s, op.offset, op.bits)
                    } else {
                        get_unsigned(s, op.offset, op.bits) as i64
                    })
                })
                .collect(),
        ));
    };
    if readonly_cmd {
        return Err(CmdError::custom("ERR BITFIELD_RO only supports the GET subcommand"));
    }
    let need = (highest >> 3) as usize + 1;
    let mut db = ctx.db();
    let created = match db.get(key) {
        None => true,
        Some(Value::Str(_)) => false,
        Some(_) => return Err(CmdError::WrongType),
    };
    if created {
        // Created before the operations run, as Redis's lookup does: only a
        // write that happens (not a FAIL overflow) signals the key.
        db.insert_new_untouched(key, Value::Str(StrValue::new(b"")));
    }
    let Some(Value::Str(stored)) = db.get_mut(key) else { unreachable!("a string now") };
    // Redis signals the key when a write (not a FAIL overflow) created or
    // grew the string, or changed a field's value.
    let grown = created || stored.len() < need;
    let mut out = Vec::with_capacity(ops.len());
    let mut changes = 0;
    stored.edit(need.saturating_sub(stored.len()), |buf| {
        if buf.len() < need {
            buf.resize(need, 0);
        }
        for op in &ops {
            match op.kind {
                BfKind::Get => out.push(Reply::Int(if op.signed {
                    get_signed(&buf[..], op.offset, op.bits)
                } else {
                    get_unsigned(&buf[..], op.offset, op.bits) as i64
                })),
                BfKind::Set | BfKind::Incrby => {
                    let incr = op.kind == BfKind::Incrby;
                    if op.signed {
                        let old = get_signed(&buf[..], op.offset, op.bits);
                        let (of, limit) = if incr {
                            signed_overflow(old, op.value, op.bits, op.overflow)
                        } else {
                            signed_overflow(op.value, 0, op.bits, op.overflow)
                        };
                        let new = if of != 0 {
                            limit
                        } else if incr {
                            old.wrapping_add(op.value)
                        } else {
                            op.value
                        };
                        if of != 0 && op.overflow == Overflow::Fail {
                            out.push(Reply::Nil);
                        } else {
                            out.push(Reply::Int(if incr { new } else { old }));
                            set_unsigned(&mut buf[..], op.offset, op.bits, new as u64);
                            changes += usize::from(grown || old != new);
                        }
                    } else {
                        let old = get_unsigned(&buf[..], op.offset, op.bits);
                        let (of, limit) = if incr {
                            unsigned_overflow(old, op.value, op.bits, op.overflow)
                        } else {
                            unsigned_overflow(op.value as u64, 0, op.bits, op.overflow)
                        };
                        let new = if of != 0 {
                            limit
                        } else if incr {
                            old.wrapping_add(op.value as u64)
                        } else {
                            op.value as u64
                        };
                        if of != 0 && op.overflow == Overflow::Fail {
                            out.push(Reply::Nil);
                        } else {
                            out.push(Reply::Int(if incr { new as i64 } else { old as i64 }));
                            set_unsigned(&mut buf[..], op.offset, op.bits, new);
                            changes += usize::from(grown || old != new);
                        }
                    }
                }
            }
        }
    });
    db.set_str_enc(key, StrEnc::Raw);
    if changes > 0 {
        db.touch(key);
        db.notify(notify::STRING, "setbit", key);
    }
    Ok(Reply::Array(out))
}
