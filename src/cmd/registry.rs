//! The command table: built once from every family's rows ([`build`]),
//! and a command line looked up in it, with Redis's errors for an unknown
//! command or subcommand and a wrong number of arguments.

use bytes::Bytes;

use super::spec::{flags, Command, CommandSpec, NameMap};
use crate::error::CmdError;
use crate::version::{Flavor, Profile, Version, VALKEY_REDIS_VERSION};

/// The process-wide, immutable command table.
#[derive(Debug)]
pub struct Table {
    pub commands: NameMap,
    /// Full names by id.
    pub names: Vec<String>,
}

/// When a row answers, per flavour (`Command::available`): from its
/// `since` (its container's, if later); in Valkey, what Redis had by the 7.2.4 Valkey
/// forked from, and the rows Valkey added (its own, or ones Redis added
/// later too) from their Valkey version.
fn availability(spec: &CommandSpec, container: Option<[Version; 2]>) -> [Version; 2] {
    let container_at = |flavor: Flavor, v: Version| container.map_or(v, |c| v.max(c[flavor as usize]));
    // A row only Valkey has carries no Redis `since`.
    let redis = if spec.since.is_empty() && !spec.valkey_since.is_empty() {
        Version::NEVER
    } else {
        container_at(Flavor::Redis, Version::of_since(spec.since))
    };
    // Under a Valkey profile the Redis column is not compared (and the
    // other way round): see `Profile::has`. Valkey has what Redis had by
    // the version it forked from, and what it added from its own version.
    let valkey = if !spec.valkey_since.is_empty() {
        container_at(Flavor::Valkey, Version::of_since(spec.valkey_since))
    } else if redis <= VALKEY_REDIS_VERSION {
        Version::new(0, 0, 0)
    } else {
        Version::NEVER
    };
    [redis, valkey]
}

/// Builds the table from every family's rows, each family with its
/// `COMMAND DOCS` group; ids follow the rows' order.
pub fn build(families: &[(&'static str, &'static [CommandSpec])]) -> Table {
    let mut names = Vec::new();
    let mut commands = NameMap::default();
    for &(group, specs) in families {
        for spec in specs {
            let available = availability(spec, None);
            let mut c = Command {
                spec,
                id: names.len(),
                fullname: spec.name.to_string(),
                flags: spec.flag_bits,
                group,
                subcommands: NameMap::default(),
                available,
            };
            names.push(spec.name.to_string());
            for sub in spec.subcommands {
                let full = format!("{}|{}", spec.name, sub.name);
                c.subcommands.insert(
                    sub.name.as_bytes().to_vec(),
                    Command {
                        spec: sub,
                        id: names.len(),
                        fullname: full.clone(),
                        flags: sub.flag_bits | (spec.flag_bits & flags::INHERITED),
                        group,
                        subcommands: NameMap::default(),
                        available: availability(sub, Some(available)),
                    },
                );
                names.push(full);
            }
            let prev = commands.insert(spec.name.as_bytes().to_vec(), c);
            assert!(prev.is_none(), "command {} registered twice", spec.name);
        }
    }
    Table { commands, names }
}

/// Result of looking a command line up.
pub enum Lookup {
    Found(&'static Command),
    Unknown,
    /// The container exists but not the subcommand.
    UnknownSub,
}

/// `name` lower-cased into `buf`; None if longer than any command name.
/// Eight bytes at a time (every command line is looked up this way).
fn lower<'a>(name: &[u8], buf: &'a mut [u8; 32]) -> Option<&'a [u8]> {
    buf.get_mut(..name.len())?.copy_from_slice(name);
    for word in buf.chunks_exact_mut(8) {
        let w = u64::from_ne_bytes(word.try_into().expect("8 bytes"));
        word.copy_from_slice(&ascii_lower_word(w).to_ne_bytes());
    }
    Some(&buf[..name.len()])
}

/// `make_ascii_lowercase` of the eight bytes of `w` at once: `A`-`Z` get
/// bit 5 set, every other byte (non-ASCII included) is left alone.
fn ascii_lower_word(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Per byte, on its low seven bits (so no carry crosses bytes): the high
    // bit is set by the first sum if >= 'A', by the second if > 'Z'.
    let low7 = w & !HIGH;
    let ge_a = low7 + ONES * (0x80 - b'A' as u64);
    let gt_z = low7 + ONES * (0x80 - b'Z' as u64 - 1);
    let upper = ge_a & !gt_z & !w & HIGH;
    w | (upper >> 2)
}

/// A command name of at most 16 bytes as written (letter case kept),
/// zero-padded, with its length: two names are the same exactly when
/// their keys are equal.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
struct NameKey {
    words: [u64; 2],
    len: usize,
}

impl NameKey {
    fn of(name: &[u8]) -> Option<NameKey> {
        let mut b = [0u8; 16];
        b.get_mut(..name.len())?.copy_from_slice(name);
        let words = [
            u64::from_ne_bytes(b[..8].try_into().expect("8 bytes")),
            u64::from_ne_bytes(b[8..].try_into().expect("8 bytes")),
        ];
        Some(NameKey { words, len: name.len() })
    }

    /// Where the key goes in the cache (a multiplicative hash of both words).
    fn slot(&self) -> usize {
        let h = (self.words[0] ^ self.words[1].rotate_left(29) ^ self.len as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> (64 - NameCache::BITS)) as usize
    }
}

/// The commands found lately, by the name's exact bytes (direct-mapped:
/// a name replaces whatever shared its slot). Every command line — a
/// client's, a script's `redis.call` — names its command again and again,
/// mostly in the same letter case: a hit costs a copy, a hash and two
/// compares instead of lower-casing, hashing and comparing in the table.
/// Only names found are kept (an empty slot's key has a length no name
/// has, so it matches none), and the table never changes,
/// so a hit is exactly what the table would answer.
struct NameCache {
    slots: [(NameKey, Option<&'static Command>); 1 << NameCache::BITS],
}

impl NameCache {
    const BITS: u32 = 6;
}

thread_local! {
    static NAME_CACHE: std::cell::RefCell<NameCache> =
        const { std::cell::RefCell::new(NameCache { slots: [(NameKey { words: [0; 2], len: usize::MAX }, None); 1 << NameCache::BITS] }) };
}

impl Table {
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// The top-level commands a listing shows (`COMMAND`, `COMMAND COUNT`,
    /// `ACL CAT`…): those of `profile`, never test control's.
    pub fn listed(&'static self, profile: Profile) -> impl Iterator<Item = &'static Command> {
        self.commands.values().filter(move |c| !c.has(flags::TEST_CONTROL) && c.answers_in(&profile))
    }

    /// Finds a top-level command by name, any letter case: in this
    /// thread's [`NameCache`] by the name's exact bytes, else lower-cased
    /// in the table (and then remembered).
    pub fn get(&'static self, name: &[u8]) -> Option<&'static Command> {
        let Some(key) = NameKey::of(name) else {
            return self.commands.get(lower(name, &mut [0u8; 32])?);
        };
        // A hit costs a copy, a hash and two compares, in line: the miss is
        // its own function (whether the compiler inlined the cache's
        // thread-local access otherwise moved instructions per lock+unlock
        // by ~400 from one build to the next).
        let hit = NAME_CACHE.with(
            #[inline(always)]
            |cache| {
                let cache = cache.borrow();
                let slot = &cache.slots[key.slot()];
                (slot.0 == key).then_some(slot.1)
            },
        );
        match hit {
            Some(found) => found,
            None => self.get_uncached(name, key),
        }
    }

    /// [`Table::get`] of a name not in this thread's cache: looked up and
    /// remembered.
    #[inline(never)]
    fn get_uncached(&'static self, name: &[u8], key: NameKey) -> Option<&'static Command> {
        let found = self.commands.get(lower(name, &mut [0u8; 32])?)?;
        NAME_CACHE.with(|cache| cache.borrow_mut().slots[key.slot()] = (key, Some(found)));
        Some(found)
    }

    /// Resolves `argv` to a command or subcommand.
    pub fn lookup(&'static self, argv: &[Bytes]) -> Lookup {
        let Some(c) = self.get(&argv[0]) else {
            return Lookup::Unknown;
        };
        if c.subcommands.is_empty() || argv.len() < 2 {
            return Lookup::Found(c);
        }
        match lower(&argv[1], &mut [0u8; 32]).and_then(|sub| c.subcommands.get(sub)) {
            Some(s) => Lookup::Found(s),
            None => Lookup::UnknownSub,
        }
    }
}

/// [`Table::lookup`] for a command line of a client of `core`: a row the
/// server's profile does not have is unknown, and so are test control's
/// rows while `test-control` is off.
#[inline]
pub fn lookup(core: &crate::core::Core, argv: &[Bytes]) -> Lookup {
    let table = super::table();
    let found = table.lookup(argv);
    // Every command a client or script names: one test for the common case.
    if let Lookup::Found(c) = found {
        if c.flags & flags::TEST_CONTROL == 0 && c.answers_in(&core.config.profile) {
            return found;
        }
    }
    lookup_rare(core, table, argv, found)
}

/// [`lookup`] of a command the profile lacks, a test-control row, or an
/// unknown (sub)command.
#[cold]
fn lookup_rare(core: &crate::core::Core, table: &'static Table, argv: &[Bytes], found: Lookup) -> Lookup {
    let profile = &core.config.profile;
    let found = match found {
        Lookup::Found(c) if !c.answers_in(profile) => {
            // A subcommand of a container the profile has is an unknown
            // subcommand; anything else an unknown command.
            let top = table.get(&argv[0]).filter(|top| !std::ptr::eq(*top, c) && top.answers_in(profile));
            if top.is_some() {
                Lookup::UnknownSub
            } else {
                Lookup::Unknown
            }
        }
        Lookup::UnknownSub if !table.get(&argv[0]).is_some_and(|top| top.answers_in(profile)) => Lookup::Unknown,
        found => found,
    };
    if core.control.is_on() {
        return found;
    }
    match found {
        Lookup::Found(c) if c.has(flags::TEST_CONTROL) => Lookup::Unknown,
        Lookup::UnknownSub if table.get(&argv[0]).is_some_and(|c| c.has(flags::TEST_CONTROL)) => Lookup::Unknown,
        other => other,
    }
}

/// `%.Ns` of a C string: stops at NUL, at most `max` bytes.
pub(crate) fn c_str_prefix(b: &[u8], max: usize) -> &[u8] {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len()).min(max);
    &b[..end]
}

/// `ERR unknown command 'x', with args beginning with: 'a' 'b' `.
pub fn unknown_command_error(argv: &[Bytes]) -> CmdError {
    let mut args: Vec<u8> = Vec::new();
    for a in &argv[1..] {
        if args.len() >= 128 {
            break;
        }
        let room = 128 - args.len();
        args.push(b'\'');
        args.extend_from_slice(c_str_prefix(a, room));
        args.extend_from_slice(b"' ");
    }
    let mut msg = b"ERR unknown command '".to_vec();
    msg.extend_from_slice(c_str_prefix(&argv[0], 128));
    msg.extend_from_slice(b"', with args beginning with: ");
    msg.extend_from_slice(&args);
    CmdError::Raw(sanitize(msg))
}

/// `ERR unknown subcommand 'x'. Try CLIENT HELP.`
pub fn unknown_subcommand_error(argv: &[Bytes]) -> CmdError {
    let mut msg = b"ERR unknown subcommand '".to_vec();
    msg.extend_from_slice(c_str_prefix(&argv[1], 128));
    msg.extend_from_slice(b"'. Try ");
    msg.extend_from_slice(&argv[0].to_ascii_uppercase());
    msg.extend_from_slice(b" HELP.");
    CmdError::Raw(sanitize(msg))
}

fn sanitize(mut v: Vec<u8>) -> Bytes {
    for c in v.iter_mut() {
        if *c == b'\r' || *c == b'\n' {
            *c = b' ';
        }
    }
    Bytes::from(v)
}

/// True if `argc` satisfies `arity`.
pub fn arity_ok(arity: i32, argc: usize) -> bool {
    let argc = argc as i64;
    let arity = i64::from(arity);
    (arity > 0 && argc == arity) || (arity < 0 && argc >= -arity)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_lowercase_is_make_ascii_lowercase() {
        for b in 0..=255u8 {
            for at in 0..8 {
                let mut bytes = [b'x'; 8];
                bytes[at] = b;
                bytes[(at + 3) % 8] = 255 - b;
                let mut want = bytes;
                want.make_ascii_lowercase();
                assert_eq!(ascii_lower_word(u64::from_ne_bytes(bytes)).to_ne_bytes(), want, "{b} at {at}");
            }
        }
        let mut buf = [0u8; 32];
        assert_eq!(lower(b"HinCrBy", &mut buf), Some(&b"hincrby"[..]));
        assert_eq!(lower(&[b'A'; 33], &mut buf), None);
        assert_eq!(lower(&[b'Z'; 32], &mut buf), Some(&[b'z'; 32][..]));
    }

    #[test]
    fn name_cache_answers_as_the_table() {
        let t = super::super::table();
        let names: &[&[u8]] = &[
            b"GET",
            b"get",
            b"GeT",
            b"get\0",
            b"",
            b"hincrby",
            b"HINCRBY",
            b"nosuch",
            b"client",
            b"georadiusbymember_ro",
            b"set",
            b"sett",
            b"se",
            b"\0\0\0",
            b"publish",
            b"evalsha",
            b"EVALSHA",
        ];
        for _ in 0..3 {
            for n in names {
                let cached = t.get(n).map(|c| c.id);
                let direct = lower(n, &mut [0u8; 32]).and_then(|l| t.commands.get(l)).map(|c| c.id);
                assert_eq!(cached, direct, "{}", String::from_utf8_lossy(n));
            }
        }
        assert!(t.get(b"get\0").is_none());
        assert_eq!(t.get(b"Get").map(|c| c.fullname.as_str()), Some("get"));
    }

    #[test]
    fn unknown_command_text_matches_redis() {
        let argv = vec![Bytes::from("foo"), Bytes::from("a"), Bytes::from("b")];
        assert_eq!(
            unknown_command_error(&argv).to_string(),
            "ERR unknown command 'foo', with args beginning with: 'a' 'b' "
        );
        let argv = vec![Bytes::from("client"), Bytes::from("nope")];
        assert_eq!(unknown_subcommand_error(&argv).to_string(), "ERR unknown subcommand 'nope'. Try CLIENT HELP.");
    }
}
