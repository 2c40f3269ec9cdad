//! Redis glob-style matching (`stringmatchlen`): `*`, `?`, `[abc]`, `[^a]`,
//! `[a-z]`, `\x` escapes. Used by KEYS, SCAN MATCH, CONFIG GET, PSUBSCRIBE.

/// True if `s` matches `pattern`. `nocase` compares ASCII case-insensitively.
pub fn matches(pattern: &[u8], s: &[u8], nocase: bool) -> bool {
    let mut skip_longer = false;
    match_impl(pattern, s, nocase, &mut skip_longer, 0)
}

fn eq(a: u8, b: u8, nocase: bool) -> bool {
    if nocase {
        a.eq_ignore_ascii_case(&b)
    } else {
        a == b
    }
}

/// A byte as C's (signed) `char`.
fn signed(b: u8) -> i32 {
    i32::from(b as i8)
}

/// `tolower` in the C locale (negative `char`s are left alone).
fn lower(c: i32) -> i32 {
    if (i32::from(b'A')..=i32::from(b'Z')).contains(&c) {
        c + 32
    } else {
        c
    }
}

fn match_impl(mut p: &[u8], mut s: &[u8], nocase: bool, skip_longer: &mut bool, nesting: u32) -> bool {
    // Protect against abusive patterns (Redis limits nesting to 1000).
    if nesting > 1000 {
        return false;
    }
    while !p.is_empty() && !s.is_empty() {
        match p[0] {
            b'*' => {
                while p.len() > 1 && p[1] == b'*' {
                    p = &p[1..];
                }
                if p.len() == 1 {
                    return true;
                }
                while !s.is_empty() {
                    if match_impl(&p[1..], s, nocase, skip_longer, nesting + 1) {
                        return true;
                    }
                    if *skip_longer {
                        return false;
                    }
                    s = &s[1..];
                }
                *skip_longer = true;
                return false;
            }
            b'?' => {
                s = &s[1..];
            }
            b'[' => {
                p = &p[1..];
                let not = !p.is_empty() && p[0] == b'^';
                if not {
                    p = &p[1..];
                }
                let mut matched = false;
                loop {
                    if p.is_empty() {
                        break;
                    }
                    if p[0] == b'\\' && p.len() >= 2 {
                        p = &p[1..];
                        if p[0] == s[0] {
                            matched = true;
                        }
                    } else if p[0] == b']' {
                        break;
                    } else if p.len() >= 3 && p[1] == b'-' {
                        // C compares `char`s, which are signed on the
                        // platforms Redis runs on: bytes >= 0x80 sort
                        // below 0, so `[a-\xff]` is the range -1..='a'.
                        let (mut start, mut end) = (signed(p[0]), signed(p[2]));
                        let mut c = signed(s[0]);
                        if start > end {
                            std::mem::swap(&mut start, &mut end);
                        }
                        if nocase {
                            start = lower(start);
                            end = lower(end);
                            c = lower(c);
                        }
                        p = &p[2..];
                        if c >= start && c <= end {
                            matched = true;
                        }
                    } else if eq(p[0], s[0], nocase) {
                        matched = true;
                    }
                    p = &p[1..];
                }
                if p.is_empty() {
                    // Unterminated class: Redis steps back onto the last char.
                    // Treat the pattern as ended.
                    if not {
                        matched = !matched;
                    }
                    if !matched {
                        return false;
                    }
                    s = &s[1..];
                    return s.is_empty();
                }
                if not {
                    matched = !matched;
                }
                if !matched {
                    return false;
                }
                s = &s[1..];
            }
            b'\\' if p.len() >= 2 => {
                p = &p[1..];
                if !eq(p[0], s[0], nocase) {
                    return false;
                }
                s = &s[1..];
            }
            c => {
                if !eq(c, s[0], nocase) {
                    return false;
                }
                s = &s[1..];
            }
        }
        p = &p[1..];
        if s.is_empty() {
            while !p.is_empty() && p[0] == b'*' {
                p = &p[1..];
            }
            break;
        }
    }
    p.is_empty() && s.is_empty()
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn glob_cases() {
        let t = |p: &str, s: &str| matches(p.as_bytes(), s.as_bytes(), false);
        // Redis's stringmatchlen does not match an empty string with "*"
        // (KEYS * special-cases it).
        assert!(!t("*", ""));
        assert!(t("*", "abc"));
        assert!(t("a*c", "abbbc"));
        assert!(!t("a*c", "abbb"));
        assert!(t("h?llo", "hello"));
        assert!(t("h[ae]llo", "hallo"));
        assert!(!t("h[^e]llo", "hello"));
        assert!(t("h[a-b]llo", "hbllo"));
        assert!(t("h[b-a]llo", "hallo"));
        assert!(t("h\\*llo", "h*llo"));
        assert!(!t("h\\*llo", "hello"));
        assert!(t("redisson_lock__channel:{*}", "redisson_lock__channel:{l}"));
        assert!(!t("a", ""));
        assert!(!t("", "a"));
        assert!(t("a*", "a"));
        assert!(matches(b"HELLO", b"hello", true));
        assert!(!t("*a*a*a*a*a*a*a*a*a*a*b", &"a".repeat(40)));
        // Signed `char` ranges, as redis-server 7.0.15 answers KEYS.
        let b = |p: &[u8], s: &[u8]| matches(p, s, false);
        assert!(b(b"[a-\xff]", b"0"));
        assert!(b(b"[a-\xff]", b"B"));
        assert!(!b(b"[a-\xff]", b"b"));
        assert!(b(b"[\x80-\xff]", b"\xfe"));
        assert!(!b(b"[\x80-\xff]", b"0"));
        assert!(b(b"[\xff-\x80]", b"\x80"));
        assert!(!matches(b"[A-\xff]", b"b", true));
        assert!(matches(b"[A-\xff]", b"0", true));
    }
}
