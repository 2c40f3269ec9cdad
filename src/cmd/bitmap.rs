//! Bitmaps: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP — strings seen as bit
//! arrays, bit 0 being the most significant bit of the first byte, with
//! Redis 7.0's argument order, ranges (BYTE/BIT) and errors.

use bytes::Bytes;

use super::util::{eq, int};
use super::{cmd, CommandSpec, Ctx};
use crate::db::{notify, StrEnc, Value};
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;

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
];

const OFFSET_ERR: &str = "ERR bit offset is not an integer or out of range";

/// `getBitOffsetFromArgument`: a bit offset below `proto-max-bulk-len` bytes.
fn bit_offset(ctx: &Ctx<'_>, arg: &[u8]) -> Result<u64, CmdError> {
    match crate::num::parse_i64_strict(arg) {
        Some(n) if n >= 0 && (n >> 3) < ctx.core.config.proto_max_bulk => Ok(n as u64),
        _ => Err(CmdError::custom(OFFSET_ERR)),
    }
}

/// The string at `key` for reading (None: missing); WRONGTYPE otherwise.
fn read_string(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<Option<Bytes>, CmdError> {
    ctx.db().get_str(key).map(|s| s.cloned())
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
    let old = match db.get_mut(key) {
        Some(Value::Str(s)) => {
            let mut old = false;
            super::string::edit_string(s, |m| {
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
            old
        }
        Some(_) => return Err(CmdError::WrongType),
        None => {
            let mut m = vec![0u8; byte + 1];
            if on == 1 {
                m[byte] |= mask;
            }
            db.set(key, Value::Str(Bytes::from(m)), false);
            false
        }
    };
    db.set_str_enc(key, StrEnc::Raw);
    db.touch(key);
    db.notify(notify::STRING, "setbit", key);
    Ok(Reply::Int(i64::from(old)))
}

fn getbit(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let offset = bit_offset(ctx, &args[2])?;
    let Some(s) = read_string(ctx, &args[1])? else { return Ok(Reply::Int(0)) };
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

fn bitcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    // Redis 7.0 looks the key up before parsing the range.
    let Some(s) = read_string(ctx, &args[1])? else { return Ok(Reply::Int(0)) };
    let len = s.len() as i64;
    let r = match args.len() {
        2 => Range { start: 0, end: len - 1, first_mask: 0, last_mask: 0 },
        4 | 5 => {
            let (start, end) = (int(&args[2])?, int(&args[3])?);
            let is_bit = if args.len() == 5 { unit(&args[4])? } else { false };
            if start < 0 && end < 0 && start > end {
                return Ok(Reply::Int(0));
            }
            resolve(len, start, end, is_bit)
        }
        _ => return Err(CmdError::Syntax),
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
    let Some(s) = read_string(ctx, &args[1])? else { return Ok(Reply::Int(if bit { -1 } else { 0 })) };
    let len = s.len() as i64;
    let mut end_given = false;
    let r = match args.len() {
        3 => Range { start: 0, end: len - 1, first_mask: 0, last_mask: 0 },
        4..=6 => {
            let start = int(&args[3])?;
            let is_bit = if args.len() == 6 { unit(&args[5])? } else { false };
            let end = if args.len() >= 5 {
                end_given = true;
                int(&args[4])?
            } else if is_bit {
                (len << 3) + 7
            } else {
                len - 1
            };
            resolve(len, start, end, is_bit)
        }
        _ => return Err(CmdError::Syntax),
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
    }
    let op = if eq(&args[1], "and") {
        Op::And
    } else if eq(&args[1], "or") {
        Op::Or
    } else if eq(&args[1], "xor") {
        Op::Xor
    } else if eq(&args[1], "not") {
        Op::Not
    } else {
        return Err(CmdError::Syntax);
    };
    if op == Op::Not && args.len() != 4 {
        return Err(CmdError::custom("ERR BITOP NOT must be called with a single source key."));
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
            sources[1..].iter().fold(if op == Op::Not { !first } else { first }, |acc, s| match op {
                Op::And => acc & byte(s, j),
                Op::Or => acc | byte(s, j),
                Op::Xor => acc ^ byte(s, j),
                Op::Not => acc,
            })
        })
        .collect();
    db.set(dst, Value::Str(Bytes::from(out)), false);
    db.set_str_enc(dst, StrEnc::Raw);
    db.notify(notify::STRING, "set", dst);
    Ok(Reply::Int(maxlen as i64))
}
