//! What the process reports about itself and which server it answers as:
//! the [`Profile`] (a server and its version: Redis 7.0.15 by default, a
//! later Redis, or Valkey), and the allocator.
//!
//! A profile is a behaviour, not a string: it decides which rows of the
//! command table answer (each row's `since`, [`Version::parse`]), what
//! `INFO`, `HELLO` and Lua's `redis.REDIS_VERSION*` report, and the
//! behaviour a handler keys on a version ([`Profile::at_least`]). Adding the
//! next version is data: the rows that came with it carry its `since`.

/// The Redis version rlockd follows by default: the default of the
/// `redis-version` parameter.
pub const REDIS_VERSION: &str = "7.0.15";

/// The Redis version Valkey 7.2 and 8 report as `redis_version` (and Lua's
/// `REDIS_VERSION`): the release Valkey forked from, whose behaviour it
/// keeps where it added nothing of its own.
pub const VALKEY_REDIS_VERSION: Version = Version::new(7, 2, 4);

/// A version, `major.minor.patch` (each 0 to 255), ordered as numbers.
/// Its value is Redis's `REDIS_VERSION_NUM` (`0x00MMmmpp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version(u32);

impl Version {
    pub const fn new(major: u8, minor: u8, patch: u8) -> Version {
        Version(((major as u32) << 16) | ((minor as u32) << 8) | patch as u32)
    }

    /// A version later than any release: what a row that never answers in
    /// a flavour is available from.
    pub const NEVER: Version = Version(u32::MAX);

    /// Parses `major.minor.patch` (numbers 0 to 255, at most three digits
    /// each); runs when the command table is compiled, so a row's bad
    /// `since` is a compile error.
    pub const fn parse(s: &str) -> Option<Version> {
        let b = s.as_bytes();
        let mut parts = [0u32; 3];
        let (mut part, mut digits, mut i) = (0, 0, 0);
        while i < b.len() {
            let c = b[i];
            if c == b'.' {
                if digits == 0 || part == 2 {
                    return None;
                }
                part += 1;
                digits = 0;
            } else if c.is_ascii_digit() && digits < 3 {
                parts[part] = parts[part] * 10 + (c - b'0') as u32;
                digits += 1;
            } else {
                return None;
            }
            i += 1;
        }
        if part != 2 || digits == 0 || parts[0] > 255 || parts[1] > 255 || parts[2] > 255 {
            return None;
        }
        Some(Version::new(parts[0] as u8, parts[1] as u8, parts[2] as u8))
    }

    /// [`parse`](Self::parse) of a `since` in the command table, where an
    /// empty one (a row without documentation) is as old as any.
    pub const fn of_since(s: &str) -> Version {
        if s.is_empty() {
            return Version(0);
        }
        match Version::parse(s) {
            Some(v) => v,
            None => panic!("a `since` in the command table is not major.minor.patch"),
        }
    }

    /// `REDIS_VERSION_NUM` as Lua sees it.
    pub const fn num(self) -> u32 {
        self.0
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0 >> 16, (self.0 >> 8) & 0xff, self.0 & 0xff)
    }
}

/// The server a profile answers as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Flavor {
    Redis = 0,
    Valkey = 1,
}

/// The server and version rlockd answers as (`redis-version`,
/// `valkey-version`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Profile {
    flavor: Flavor,
    /// The version the server names itself by: Redis's, or Valkey's own.
    version: Version,
    /// [`Profile::redis_level`], kept so a check on the request path is
    /// one comparison.
    level: Version,
    /// What a command's availability per flavour is compared with: this
    /// flavour's version, and "never" for the other (so no check needs to
    /// branch on the flavour).
    gate: [Version; 2],
}

impl Default for Profile {
    fn default() -> Self {
        Profile::redis(Version::parse(REDIS_VERSION).expect("the default version parses"))
    }
}

impl Profile {
    /// The oldest Redis whose behaviour rlockd has: a lower
    /// `redis-version` is reported as set but answers as this one.
    pub const OLDEST: Version = Version::new(7, 0, 0);

    pub fn redis(version: Version) -> Profile {
        let level = version.max(Self::OLDEST);
        Profile { flavor: Flavor::Redis, version, level, gate: [level, Version::NEVER] }
    }

    pub fn valkey(version: Version) -> Profile {
        Profile { flavor: Flavor::Valkey, version, level: VALKEY_REDIS_VERSION, gate: [Version::NEVER, version] }
    }

    pub fn is_valkey(&self) -> bool {
        self.flavor == Flavor::Valkey
    }

    /// The version the server names itself by (`HELLO`'s `version`;
    /// `INFO`'s `redis_version` for Redis, `valkey_version` for Valkey).
    pub fn version(&self) -> Version {
        self.version
    }

    /// The Redis version this profile's behaviour follows where it has
    /// nothing of its own: Redis's own version (at least [`Self::OLDEST`]),
    /// or for Valkey the Redis it forked from.
    #[inline]
    pub fn redis_level(&self) -> Version {
        self.level
    }

    /// Whether this profile has the behaviour Redis `major.minor.patch`
    /// introduced (false for what Valkey never took from a later Redis).
    #[inline]
    pub fn at_least(&self, major: u8, minor: u8, patch: u8) -> bool {
        self.level >= Version::new(major, minor, patch)
    }

    /// Whether a command first available at `available` (per flavour:
    /// Redis's version, Valkey's) answers under this profile: two
    /// comparisons, the other flavour's always true.
    #[inline]
    pub fn has(&self, available: &[Version; 2]) -> bool {
        available[0] <= self.gate[0] && available[1] <= self.gate[1]
    }

    /// The key is stored inside its value's object (Redis 8.0's `kvobj`,
    /// Valkey 8.0's embedded keys): no value is shared (`OBJECT REFCOUNT`
    /// is 1 for the small integers too), and a key renamed or moved is a
    /// new object (its LFU counter starts again).
    pub fn embeds_keys(&self) -> bool {
        match self.flavor {
            Flavor::Redis => self.version >= Version::new(8, 0, 0),
            Flavor::Valkey => self.version >= Version::new(8, 0, 0),
        }
    }

    /// What `INFO`'s `redis_version` and Lua's `REDIS_VERSION` say.
    pub fn redis_version(&self) -> Version {
        match self.flavor {
            Flavor::Redis => self.version,
            Flavor::Valkey => VALKEY_REDIS_VERSION,
        }
    }

    /// `HELLO`'s `server`.
    pub fn server_name(&self) -> &'static str {
        match self.flavor {
            Flavor::Redis => "redis",
            Flavor::Valkey => "valkey",
        }
    }

    /// The RDB format version `DUMP` writes and `RESTORE` accepts up to:
    /// 10 in Redis 7.0, 11 in 7.2 (and Valkey 7.2 and 8), 12 from 7.4.
    pub fn rdb_version(&self) -> u16 {
        match self.redis_level() {
            v if v >= Version::new(7, 4, 0) => 12,
            v if v >= Version::new(7, 2, 0) => 11,
            _ => 10,
        }
    }
}

static ALLOCATOR: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// Names the process's allocator for `INFO memory` (`mem_allocator`); the
/// `rlockd` binary sets it when it allocates with jemalloc.
pub fn set_allocator_name(name: &'static str) {
    let _ = ALLOCATOR.set(name);
}

/// The allocator `INFO memory` reports (`libc` unless told otherwise).
pub fn allocator_name() -> &'static str {
    ALLOCATOR.get().copied().unwrap_or("libc")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_order_as_numbers() {
        assert_eq!(Version::parse("7.0.15"), Some(Version::new(7, 0, 15)));
        assert_eq!(Version::parse("7.0.15").unwrap().num(), 0x0007_000f);
        assert_eq!(Version::parse("8.2.3").unwrap().num(), 524_803, "Redis 8.2.3's REDIS_VERSION_NUM");
        assert_eq!(VALKEY_REDIS_VERSION.num(), 459_268, "Valkey 8.1.8's REDIS_VERSION_NUM");
        for bad in ["", "7", "7.2", "7.2.", ".7.2", "7.2.4.1", "256.0.0", "7.2.x", "1234.0.0", "7..2"] {
            assert_eq!(Version::parse(bad), None, "{bad}");
        }
        assert_eq!(Version::parse("007.02.004").map(|v| v.to_string()), Some("7.2.4".into()));
        assert!(Version::new(7, 10, 0) > Version::new(7, 9, 255));
        assert!(Version::new(8, 0, 0) > Version::new(7, 255, 255));
    }

    #[test]
    fn profiles_follow_their_redis() {
        let default = Profile::default();
        assert_eq!((default.redis_version().to_string(), default.rdb_version()), ("7.0.15".into(), 10));
        assert!(default.at_least(7, 0, 0) && !default.at_least(7, 2, 0));
        let old = Profile::redis(Version::new(6, 2, 14));
        assert_eq!(old.redis_level(), Profile::OLDEST, "below 7.0, 7.0's behaviour");
        assert_eq!(old.redis_version().to_string(), "6.2.14", "… under the version set");
        let r8 = Profile::redis(Version::new(8, 2, 3));
        assert!(r8.at_least(7, 4, 0) && r8.at_least(8, 2, 3) && !r8.at_least(8, 4, 0));
        assert_eq!(r8.rdb_version(), 12);
        let v = Profile::valkey(Version::new(8, 1, 8));
        assert_eq!(
            (v.server_name(), v.version().to_string(), v.redis_version().to_string()),
            ("valkey", "8.1.8".into(), "7.2.4".into())
        );
        assert!(v.at_least(7, 2, 4) && !v.at_least(7, 4, 0), "no hash-field TTLs in Valkey 8.1");
        assert_eq!(v.rdb_version(), 11);
    }
}
