//! Number parsing and formatting with Redis's exact rules.
//!
//! Integers follow Redis `string2ll` (strict). Doubles and long doubles go
//! through the C library, as in Redis (see `num.c`), so `ZADD`,
//! `INCRBYFLOAT` and friends accept, reject and print exactly the same
//! strings.

extern "C" {
    fn rl_string2d(s: *const u8, len: usize, out: *mut f64) -> i32;
    fn rl_zzl_strtod(s: *const u8, len: usize) -> f64;
    fn rl_sort_score(s: *const u8, len: usize, out: *mut f64) -> i32;
    fn rl_ld_incr(cur: *const u8, curlen: usize, incr: *const u8, incrlen: usize, out: *mut u8, outlen: usize) -> i32;
    fn rl_ld_normalize(s: *const u8, len: usize, out: *mut u8, outlen: usize) -> i32;
    fn rl_fmt_g17(d: f64, out: *mut u8, outlen: usize) -> i32;
    fn rl_fmt_human_double(d: f64, out: *mut u8, outlen: usize) -> i32;
}

const LD_BUF: usize = 5 * 1024;

/// Redis `string2ll`: strict base-10 i64, no leading '+', no spaces, no leading zeros
/// (except "0" itself), "-0" refused.
pub fn parse_i64_strict(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s.len() == 1 && s[0] == b'0' {
        return Some(0);
    }
    let (neg, digits) = if s[0] == b'-' { (true, &s[1..]) } else { (false, s) };
    if digits.is_empty() || digits[0] == b'0' {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    if neg {
        if v > (i64::MAX as u64) + 1 {
            None
        } else {
            Some((v as i64).wrapping_neg())
        }
    } else if v > i64::MAX as u64 {
        None
    } else {
        Some(v as i64)
    }
}

/// An argument that is not a strict integer; converts into
/// `ERR value is not an integer or out of range`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotInteger;

/// Redis `string2ll` as used by `getLongLongFromObject`.
pub fn parse_int(b: &[u8]) -> Result<i64, NotInteger> {
    parse_i64_strict(b).ok_or(NotInteger)
}

/// Redis `getDoubleFromObject` (strtod, whole string, no NaN).
pub fn parse_double(b: &[u8]) -> Option<f64> {
    let mut out = 0f64;
    // SAFETY: pointer/length come from a valid slice; out is a valid f64.
    let ok = unsafe { rl_string2d(b.as_ptr(), b.len(), &mut out) };
    (ok == 1).then_some(out)
}

/// Redis `zzlStrtod`: `strtod` of the first 127 bytes, trailing text
/// ignored (0 when nothing parses). How Redis reads a score back from a
/// sorted set's listpack.
pub fn zzl_strtod(b: &[u8]) -> f64 {
    // SAFETY: pointer/length come from a valid slice; the C side copies at most 127 bytes.
    unsafe { rl_zzl_strtod(b.as_ptr(), b.len()) }
}

/// The score `SORT` gives a value (`strtod` as Redis calls it there).
pub fn sort_score(b: &[u8]) -> Option<f64> {
    let mut out = 0f64;
    // SAFETY: pointer/length come from a valid slice; out is a valid f64.
    let ok = unsafe { rl_sort_score(b.as_ptr(), b.len(), &mut out) };
    (ok == 1).then_some(out)
}

/// The score Redis 8's `SORT` gives a value (its `fast_float` parse), and
/// how Redis 8 reads a sorted set's score bounds (`zslParseRange`): no
/// leading space or hex form, a value out of range is ±inf or 0, NaN is
/// refused, and the empty string is 0, as before.
pub fn sort_score_8(b: &[u8]) -> Option<f64> {
    if b.is_empty() {
        return Some(0.0);
    }
    let v: f64 = std::str::from_utf8(b).ok()?.parse().ok()?;
    (!v.is_nan()).then_some(v)
}

/// Error from [`incr_long_double`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LdError {
    /// The stored value is not a float.
    Current,
    /// The increment is not a float.
    Increment,
    /// NaN or infinity.
    NanOrInf,
}

/// `INCRBYFLOAT` arithmetic: x87 long double, printed the way Redis prints it.
pub fn incr_long_double(cur: Option<&[u8]>, incr: &[u8]) -> Result<String, LdError> {
    let mut out = vec![0u8; LD_BUF];
    let (cp, cl) = match cur {
        Some(c) => (c.as_ptr(), c.len()),
        None => (std::ptr::null(), 0),
    };
    // SAFETY: all pointers are valid for their lengths; out has LD_BUF bytes.
    let n = unsafe { rl_ld_incr(cp, cl, incr.as_ptr(), incr.len(), out.as_mut_ptr(), out.len()) };
    match n {
        -1 => Err(LdError::Current),
        -2 => Err(LdError::Increment),
        n if n <= 0 => Err(LdError::NanOrInf),
        n => {
            out.truncate(n as usize);
            Ok(String::from_utf8(out).unwrap_or_default())
        }
    }
}

/// Parses a long double and prints it in Redis's human form; `None` if not a float.
pub fn normalize_long_double(s: &[u8]) -> Option<String> {
    let mut out = vec![0u8; LD_BUF];
    // SAFETY: as above.
    let n = unsafe { rl_ld_normalize(s.as_ptr(), s.len(), out.as_mut_ptr(), out.len()) };
    if n <= 0 {
        return None;
    }
    out.truncate(n as usize);
    String::from_utf8(out).ok()
}

/// `%.17g`, exactly as C prints it (`-nan`, `inf`, `-0`…), into `out`;
/// returns the length. Whole numbers below 2^53 — the common case, a lease
/// or a count passed from Lua — take a fast path with the same digits.
pub fn fmt_g17_into(d: f64, out: &mut [u8; 64]) -> usize {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53: every integer below is exact
    if d.fract() == 0.0 && d.abs() < EXACT && !(d == 0.0 && d.is_sign_negative()) {
        let mut b = itoa::Buffer::new();
        let s = b.format(d as i64).as_bytes();
        out[..s.len()].copy_from_slice(s);
        return s.len();
    }
    // SAFETY: `out` has 64 bytes; %.17g of any double needs at most ~25.
    let n = unsafe { rl_fmt_g17(d, out.as_mut_ptr(), out.len()) };
    n.clamp(0, 63) as usize
}

/// A double printed as Redis 7.0's `addReplyDouble` prints it (`%.17g`,
/// `inf`/`-inf`).
pub fn fmt_double(d: f64) -> String {
    if d.is_infinite() {
        return if d > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if d.is_nan() {
        return "nan".into();
    }
    let mut buf = [0u8; 64];
    let n = fmt_g17_into(d, &mut buf);
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// A double printed as Redis 7.2 and later print it (`d2string`: `nan`,
/// `inf`, `-inf`, `0`, `-0`; a whole number up to 2^62 as an integer; else
/// the shortest digits that read back as the same double), into `out`;
/// returns the length. Scripts' numbers as `redis.call` arguments, and
/// double replies, from 7.2 on.
pub fn fmt_short_into(d: f64, out: &mut [u8; 64]) -> usize {
    let put = |out: &mut [u8; 64], s: &[u8]| {
        out[..s.len()].copy_from_slice(s);
        s.len()
    };
    if d.is_nan() {
        return put(out, b"nan");
    }
    if d.is_infinite() {
        return put(out, if d > 0.0 { b"inf" } else { b"-inf" });
    }
    if d == 0.0 {
        return put(out, if d.is_sign_negative() { b"-0" } else { b"0" });
    }
    // Whole numbers within half of i64's range print as integers.
    const HALF: f64 = (i64::MAX / 2) as f64;
    if (-HALF..=HALF).contains(&d) && d.fract() == 0.0 {
        let mut b = itoa::Buffer::new();
        return put(out, b.format(d as i64).as_bytes());
    }
    // The shortest round-trip digits and their decimal exponent, from
    // Rust's exact formatter: "d.ddde±x".
    let sci = format!("{:e}", d.abs());
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("{:e}'s exponent");
    let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    let n = digits.len() as i32;
    // value = digits × 10^k
    let k = exp - (n - 1);
    let mut s: Vec<u8> = Vec::with_capacity(32);
    if d < 0.0 {
        s.push(b'-');
    }
    if k >= 0 && exp.abs() < n + 7 {
        // A whole number past 2^62, written out.
        s.extend_from_slice(&digits);
        s.resize(s.len() + k as usize, b'0');
    } else if k < 0 && (k > -7 || exp.abs() < 4) {
        // A plain decimal.
        let point = n + k;
        if point <= 0 {
            s.extend_from_slice(b"0.");
            s.resize(s.len() + (-point) as usize, b'0');
            s.extend_from_slice(&digits);
        } else {
            s.extend_from_slice(&digits[..point as usize]);
            s.push(b'.');
            s.extend_from_slice(&digits[point as usize..]);
        }
    } else {
        // Scientific: d[.ddd]e±x, the exponent without leading zeros.
        s.push(digits[0]);
        if n > 1 {
            s.push(b'.');
            s.extend_from_slice(&digits[1..]);
        }
        s.push(b'e');
        s.push(if exp < 0 { b'-' } else { b'+' });
        s.extend_from_slice(exp.abs().to_string().as_bytes());
    }
    put(out, &s)
}

/// [`fmt_short_into`] as a string.
pub fn fmt_short(d: f64) -> String {
    let mut buf = [0u8; 64];
    let n = fmt_short_into(d, &mut buf);
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// A double printed as Redis's `addReplyHumanLongDouble` prints it (the
/// value widened to long double, `%.17Lf` with trailing zeros removed):
/// geo coordinates.
pub fn fmt_human_double(d: f64) -> String {
    let mut out = vec![0u8; LD_BUF];
    // SAFETY: out has LD_BUF bytes.
    let n = unsafe { rl_fmt_human_double(d, out.as_mut_ptr(), out.len()) };
    out.truncate(n.max(0) as usize);
    String::from_utf8(out).unwrap_or_default()
}

/// Integer to bytes.
pub fn int_bytes(i: i64) -> bytes::Bytes {
    let mut b = itoa::Buffer::new();
    bytes::Bytes::copy_from_slice(b.format(i).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_doubles_print_as_redis_7_2() {
        let cases: &[(f64, &str)] = &[
            (0.1, "0.1"),
            (1.0 / 3.0, "0.3333333333333333"),
            (1.6, "1.6"),
            (-0.0, "-0"),
            (0.0, "0"),
            (100.0, "100"),
            (-2.5, "-2.5"),
            (1.5e-5, "0.000015"),
            (1e-7, "1e-7"),
            (1.25e-7, "1.25e-7"),
            (0.001, "0.001"),
            (123456.789, "123456.789"),
            (1e20, "1e+20"),
            (1.5e300, "1.5e+300"),
            (-1e-300, "-1e-300"),
            (4.611686018427388e18, "4611686018427387904"),
            (9.3e18, "9.3e+18"),
            (1e15, "1000000000000000"),
            (1.5e-6, "1.5e-6"),
            (1e-6, "0.000001"),
            (1.2345678e25, "1.2345678e+25"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
        ];
        for &(d, want) in cases {
            assert_eq!(fmt_short(d), want, "{d:e}");
            if d.is_finite() {
                assert_eq!(fmt_short(d).parse::<f64>().unwrap().to_bits(), d.to_bits(), "round trip of {d:e}");
            }
        }
    }

    #[test]
    fn g17_fast_path_prints_what_c_prints() {
        let c = |d: f64| {
            let mut buf = [0u8; 64];
            // SAFETY: as in fmt_g17_into.
            let n = unsafe { rl_fmt_g17(d, buf.as_mut_ptr(), buf.len()) };
            buf[..n as usize].to_vec()
        };
        let ours = |d: f64| {
            let mut buf = [0u8; 64];
            let n = fmt_g17_into(d, &mut buf);
            buf[..n].to_vec()
        };
        let mut samples =
            vec![0.0, -0.0, 1.0, -1.0, 30000.0, 1e15, -1e15, 9_007_199_254_740_991.0, 9_007_199_254_740_992.0];
        samples.extend([
            1e17,
            1e20,
            0.5,
            -2.5,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ]);
        let mut x = 1.0f64;
        for _ in 0..200 {
            x = x * 3.7 + 1.0;
            samples.push(x.floor());
            samples.push(-x.floor());
        }
        for d in samples {
            assert_eq!(ours(d), c(d), "{d:e}");
        }
    }

    #[test]
    fn strict_integer_parsing_matches_string2ll() {
        assert_eq!(parse_i64_strict(b"0"), Some(0));
        assert_eq!(parse_i64_strict(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64_strict(b"9223372036854775808"), None);
        for bad in [&b"01"[..], b"-0", b"+1", b" 1", b"", b"-", b"1a"] {
            assert_eq!(parse_i64_strict(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn doubles_format_like_redis_7_0() {
        assert_eq!(fmt_double(1.5), "1.5");
        assert_eq!(fmt_double(1.1), "1.1000000000000001");
        assert_eq!(fmt_double(0.0), "0");
        assert_eq!(fmt_double(1e20), "1e+20");
        assert_eq!(fmt_double(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn double_parsing_follows_strtod() {
        assert_eq!(parse_double(b"1.5"), Some(1.5));
        assert_eq!(parse_double(b"+inf"), Some(f64::INFINITY));
        assert_eq!(parse_double(b"-Infinity"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_double(b"nan"), None);
        assert_eq!(parse_double(b" 1"), None);
        assert_eq!(parse_double(b"1 "), None);
        assert_eq!(parse_double(b""), None);
        assert_eq!(parse_double(b"1e400"), None);
    }

    #[test]
    fn long_double_increment_is_human_friendly() {
        assert_eq!(incr_long_double(Some(b"10.5"), b"0.1").unwrap(), "10.6");
        assert_eq!(incr_long_double(None, b"0.1").unwrap(), "0.1");
        assert_eq!(incr_long_double(Some(b"5.0e3"), b"2.0e2").unwrap(), "5200");
        assert_eq!(incr_long_double(Some(b"abc"), b"1"), Err(LdError::Current));
        assert_eq!(incr_long_double(Some(b"1"), b"x"), Err(LdError::Increment));
        assert_eq!(incr_long_double(Some(b"1"), b"inf"), Err(LdError::NanOrInf));
    }
}
