//! ACL users, as Redis 7.0 has them: the user store, `ACL SETUSER`'s rules,
//! the rule strings `ACL LIST`/`GETUSER` print, permission checks, and the
//! `ACL LOG`.
//!
//! This module knows commands only through a [`Catalog`] (ids, names,
//! categories) that the command layer builds from its table, so it sits with
//! the other per-server stores, below dispatch.
//!
//! A user is flags, SHA-256 password digests and selectors — the root one
//! plus `(...)` ones — each a bitmap over command ids (a container's bit
//! stands for all its subcommands when set by `+client`), key patterns with
//! read/write flags, channel patterns, and `+cmd|arg` first-argument rules.
//! `ACL SETUSER` applies its rules to a copy and stores it only if all pass.
//! `ACL LIST`/`GETUSER` print the commands as Redis 7.0 does, from the
//! bitmap: `+@all`/`-@all`, then categories greedily (the category that
//! fixes most commands while touching none in vain first), then single
//! commands. `requirepass` replaces the default user's passwords;
//! [`Acl::auth_required`] (default not `on nopass`) is what NOAUTH asks.
//! Clients carry their user's name (`ClientState::user`, mirrored in
//! `ClientRecord::user` for `CLIENT LIST`/`KILL USER`).
//!
//! **Invariant:** [`Acl::open`] is true exactly when `default` is the only
//! user and may run every command on every key and channel; dispatch then
//! skips the permission check with one branch.

use std::collections::{BTreeMap, VecDeque};

use bytes::Bytes;
use sha2::{Digest, Sha256};

/// Redis's categories, in `ACL CAT`'s order.
pub const CATEGORIES: &[&str] = &[
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// One top-level command as the ACL sees it.
#[derive(Debug)]
pub struct CatalogCommand {
    pub id: usize,
    pub name: String,
    /// Bit `i` set: in category `CATEGORIES[i]`.
    pub categories: u32,
    /// Subcommands: id, name (without the container's), categories.
    pub subs: Vec<(usize, String, u32)>,
}

/// The command table as the ACL needs it (built by the command layer).
#[derive(Debug)]
pub struct Catalog {
    /// The server version it describes the commands of.
    pub profile: crate::version::Profile,
    /// Number of ids (commands and subcommands).
    pub len: usize,
    /// Top-level commands, in the table's order.
    pub commands: Vec<CatalogCommand>,
}

impl Catalog {
    fn find(&self, name: &str) -> Option<&CatalogCommand> {
        self.commands.iter().find(|c| c.name.eq_ignore_ascii_case(name))
    }
}

/// The category index of `name` (any letter case).
pub fn category_index(name: &str) -> Option<usize> {
    CATEGORIES.iter().position(|c| c.eq_ignore_ascii_case(name))
}

/// Why a `SETUSER` rule was refused (Redis's texts).
pub mod reason {
    pub const SYNTAX: &str = "Syntax error";
    pub const UNKNOWN: &str = "Unknown command or category name in ACL";
    pub const AFTER_ALLKEYS: &str = "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns";
    pub const AFTER_ALLCHANNELS: &str = "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels";
    pub const NO_SUCH_PASSWORD: &str = "The password you are trying to remove from the user does not exist";
    pub const BAD_HASH: &str =
        "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters";
}

const READ: u8 = 1;
const WRITE: u8 = 2;

/// A bitmap over command ids.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Bits(Vec<u64>);

impl Bits {
    fn new(len: usize, on: bool) -> Bits {
        Bits(vec![if on { u64::MAX } else { 0 }; len.div_ceil(64).max(1)])
    }
    fn get(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
    fn set(&mut self, i: usize, on: bool) {
        if let Some(w) = self.0.get_mut(i / 64) {
            if on {
                *w |= 1 << (i % 64);
            } else {
                *w &= !(1 << (i % 64));
            }
        }
    }
}

/// A set of permissions: the user's root one, or one of its `(...)`
/// selectors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    allowed: Bits,
    /// The last of `+@all`/`-@all` was `+@all` (commands added later are
    /// allowed; rules print from `+@all`).
    all_base: bool,
    /// `+cmd|arg` rules of commands without subcommands: allowed first
    /// arguments (lower-case), by command id.
    firstargs: BTreeMap<usize, Vec<String>>,
    /// The command rules since the last `+@all`/`-@all`, as given
    /// (lower-case; a rule replaces an earlier one of the same command or
    /// category and its subcommands' rules): what Redis 7.2 and Valkey
    /// print. Redis 7.0 prints a description computed from the bits.
    rules: String,
    /// Key patterns with their `READ`/`WRITE` flags.
    keys: Vec<(u8, Bytes)>,
    allkeys: bool,
    channels: Vec<Bytes>,
    allchannels: bool,
}

/// Why a command was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denied {
    Command,
    /// The key at this argument position.
    Key(usize),
    /// The channel at this argument position.
    Channel(usize),
}

/// What a permission check needs to know of one command line.
pub struct Request<'a> {
    /// The (sub)command's id.
    pub id: usize,
    pub argv: &'a [Bytes],
    /// The command is flagged `no_auth` (`AUTH`, `HELLO`…): always allowed.
    pub no_auth: bool,
    /// Key positions with the access they need (read, write).
    pub keys: &'a dyn Fn() -> Vec<(usize, bool, bool)>,
    /// Channel positions, and whether each is a pattern (`PSUBSCRIBE`).
    pub channels: &'a dyn Fn() -> Vec<(usize, bool)>,
}

impl Selector {
    fn new(len: usize, allchannels: bool) -> Selector {
        Selector {
            allowed: Bits::new(len, false),
            all_base: false,
            firstargs: BTreeMap::new(),
            rules: String::new(),
            keys: Vec::new(),
            allkeys: false,
            channels: Vec::new(),
            allchannels,
        }
    }

    fn unrestricted(&self, len: usize) -> bool {
        self.allkeys && self.allchannels && (0..len).all(|i| self.allowed.get(i))
    }

    fn set_command(&mut self, c: &CatalogCommand, on: bool) {
        self.allowed.set(c.id, on);
        self.firstargs.remove(&c.id);
        for (id, _, _) in &c.subs {
            self.allowed.set(*id, on);
        }
    }

    fn set_category(&mut self, cat: &Catalog, bit: u32, on: bool) {
        for c in &cat.commands {
            if c.categories & bit != 0 {
                self.set_command(c, on);
            }
            for (id, _, cats) in &c.subs {
                if cats & bit != 0 {
                    self.allowed.set(*id, on);
                }
            }
        }
    }

    /// Applies one rule that a selector may hold (keys, channels, commands).
    fn apply(&mut self, rule: &[u8], cat: &Catalog) -> Result<(), &'static str> {
        let lower = String::from_utf8_lossy(rule).to_ascii_lowercase();
        match lower.as_str() {
            "allkeys" => {
                self.add_key(READ | WRITE, b"*");
                return Ok(());
            }
            "resetkeys" => {
                self.keys.clear();
                self.allkeys = false;
                return Ok(());
            }
            "allchannels" => {
                self.channels = vec![Bytes::from_static(b"*")];
                self.allchannels = true;
                return Ok(());
            }
            "resetchannels" => {
                self.channels.clear();
                self.allchannels = false;
                return Ok(());
            }
            "allcommands" | "+@all" => {
                self.allowed = Bits::new(cat.len, true);
                self.all_base = true;
                self.firstargs.clear();
                self.rules.clear();
                return Ok(());
            }
            "nocommands" | "-@all" => {
                self.allowed = Bits::new(cat.len, false);
                self.all_base = false;
                self.firstargs.clear();
                self.rules.clear();
                return Ok(());
            }
            _ => {}
        }
        match rule.first() {
            Some(b'~') => {
                if self.allkeys {
                    return Err(reason::AFTER_ALLKEYS);
                }
                self.add_key(READ | WRITE, &rule[1..]);
                Ok(())
            }
            Some(b'%') => {
                let tilde = rule.iter().position(|&b| b == b'~').ok_or(reason::SYNTAX)?;
                let mut flags = 0;
                for &f in &rule[1..tilde] {
                    flags |= match f.to_ascii_uppercase() {
                        b'R' => READ,
                        b'W' => WRITE,
                        _ => return Err(reason::SYNTAX),
                    };
                }
                if flags == 0 {
                    return Err(reason::SYNTAX);
                }
                if self.allkeys {
                    return Err(reason::AFTER_ALLKEYS);
                }
                self.add_key(flags, &rule[tilde + 1..]);
                Ok(())
            }
            Some(b'&') => {
                if self.allchannels {
                    return Err(reason::AFTER_ALLCHANNELS);
                }
                let pat = &rule[1..];
                if pat == b"*" {
                    self.channels = vec![Bytes::from_static(b"*")];
                    self.allchannels = true;
                } else if !self.channels.iter().any(|c| c == pat) {
                    self.channels.push(Bytes::copy_from_slice(pat));
                }
                Ok(())
            }
            Some(&op @ (b'+' | b'-')) => {
                self.apply_command(op == b'+', &lower[1..], cat)?;
                self.remember_rule(&lower);
                Ok(())
            }
            _ => Err(reason::SYNTAX),
        }
    }

    fn add_key(&mut self, flags: u8, pat: &[u8]) {
        if flags == READ | WRITE && pat == b"*" {
            self.keys = vec![(READ | WRITE, Bytes::from_static(b"*"))];
            self.allkeys = true;
            return;
        }
        match self.keys.iter_mut().find(|(_, p)| p == pat) {
            Some(k) => k.0 |= flags,
            None => self.keys.push((flags, Bytes::copy_from_slice(pat))),
        }
    }

    fn apply_command(&mut self, on: bool, name: &str, cat: &Catalog) -> Result<(), &'static str> {
        if let Some(c) = name.strip_prefix('@') {
            let i = category_index(c).ok_or(reason::UNKNOWN)?;
            self.set_category(cat, 1 << i, on);
            return Ok(());
        }
        let (top, sub) = match name.split_once('|') {
            Some((t, s)) => (t, Some(s)),
            None => (name, None),
        };
        let c = cat.find(top).ok_or(reason::UNKNOWN)?;
        if sub.is_some_and(str::is_empty) {
            return Err(reason::SYNTAX);
        }
        let Some(sub) = sub else {
            self.set_command(c, on);
            return Ok(());
        };
        if c.subs.is_empty() {
            // A first-argument rule (`+select|0`): allow only.
            if !on || sub.contains('|') {
                return Err(reason::UNKNOWN);
            }
            if !self.allowed.get(c.id) {
                let args = self.firstargs.entry(c.id).or_default();
                if !args.iter().any(|a| a == sub) {
                    args.push(sub.to_string());
                }
            }
            return Ok(());
        }
        let (id, _, _) = c.subs.iter().find(|(_, n, _)| n == sub).ok_or(reason::UNKNOWN)?;
        self.allowed.set(*id, on);
        Ok(())
    }

    /// Keeps a command rule (`+get`, `-@hash`, `+config|get`) in the order
    /// given: an earlier rule of the same name, or of one of its
    /// subcommands (`name|…`), is dropped first.
    fn remember_rule(&mut self, rule: &str) {
        let name = &rule[1..];
        let kept: Vec<&str> = self
            .rules
            .split(' ')
            .filter(|r| {
                let old = r.get(1..).unwrap_or("");
                !r.is_empty() && old != name && !old.strip_prefix(name).is_some_and(|rest| rest.starts_with('|'))
            })
            .collect();
        self.rules = kept.join(" ");
        if !self.rules.is_empty() {
            self.rules.push(' ');
        }
        self.rules.push_str(rule);
    }

    /// The rule string of the commands (`-@all +@hash -hdel +get`). From
    /// Redis 7.2 (and in Valkey): `+@all` or `-@all`, then the rules as
    /// given. Redis 7.0: categories chosen greedily (the best-fitting
    /// first), then the single commands still differing.
    fn describe_commands(&self, cat: &Catalog) -> String {
        let base = if self.all_base { "+@all" } else { "-@all" };
        if cat.profile.at_least(7, 2, 0) {
            return if self.rules.is_empty() { base.to_string() } else { format!("{base} {}", self.rules) };
        }
        let mut out = vec![base.to_string()];
        let mut fake = Selector::new(cat.len, false);
        fake.allowed = Bits::new(cat.len, self.all_base);
        // Redis 7.0's fit: a copy of the user's bits where each chosen
        // category is set back to the base; a category fits when more of
        // its members still differ from the base there than not, the best
        // one differing the least (then agreeing the most, then first).
        let additive = !self.all_base;
        let sign = if additive { '+' } else { '-' };
        let mut temp = Selector::new(cat.len, false);
        temp.allowed = self.allowed.clone();
        loop {
            let mut best: Option<(usize, usize, usize)> = None;
            for (i, _) in CATEGORIES.iter().enumerate() {
                let (mut on, mut off) = (0usize, 0usize);
                for_members(cat, 1 << i, |id| if temp.allowed.get(id) { on += 1 } else { off += 1 });
                let (diff, same) = if additive { (off, on) } else { (on, off) };
                if same > diff && best.is_none_or(|(d, s, _)| diff < d || (diff == d && same > s)) {
                    best = Some((diff, same, i));
                }
            }
            let Some((_, _, i)) = best else { break };
            fake.set_category(cat, 1 << i, additive);
            temp.set_category(cat, 1 << i, !additive);
            out.push(format!("{sign}@{}", CATEGORIES[i]));
        }
        for c in &cat.commands {
            let u = self.allowed.get(c.id);
            if u != fake.allowed.get(c.id) {
                out.push(format!("{}{}", if u { '+' } else { '-' }, c.name));
                fake.set_command(c, u);
            }
            for (id, name, _) in &c.subs {
                let u = self.allowed.get(*id);
                if u != fake.allowed.get(*id) {
                    out.push(format!("{}{}|{}", if u { '+' } else { '-' }, c.name, name));
                    fake.allowed.set(*id, u);
                }
            }
            if let Some(args) = self.firstargs.get(&c.id) {
                for a in args {
                    out.push(format!("+{}|{a}", c.name));
                }
            }
        }
        out.join(" ")
    }

    fn describe_keys(&self) -> String {
        if self.allkeys {
            return "~*".to_string();
        }
        let parts: Vec<String> = self
            .keys
            .iter()
            .map(|(f, p)| {
                let p = String::from_utf8_lossy(p);
                match *f {
                    READ => format!("%R~{p}"),
                    WRITE => format!("%W~{p}"),
                    _ => format!("~{p}"),
                }
            })
            .collect();
        parts.join(" ")
    }

    fn describe_channels(&self) -> String {
        if self.allchannels {
            return "&*".to_string();
        }
        let parts: Vec<String> = self.channels.iter().map(|c| format!("&{}", String::from_utf8_lossy(c))).collect();
        parts.join(" ")
    }

    /// The selector as `ACL LIST` prints it (keys, channels, commands).
    fn describe(&self, cat: &Catalog) -> String {
        let mut parts = Vec::new();
        let keys = self.describe_keys();
        if !keys.is_empty() {
            parts.push(keys);
        }
        if self.allchannels {
            parts.push("&*".to_string());
        } else {
            parts.push("resetchannels".to_string());
            let ch = self.describe_channels();
            if !ch.is_empty() {
                parts.push(ch);
            }
        }
        parts.push(self.describe_commands(cat));
        parts.join(" ")
    }

    fn key_ok(&self, key: &[u8], need: u8) -> bool {
        self.allkeys || self.keys.iter().any(|(f, p)| f & need == need && crate::glob::matches(p, key, false))
    }

    /// A channel (or, `pattern`, a `PSUBSCRIBE` pattern, which must be
    /// allowed literally).
    pub fn channel_ok(&self, chan: &[u8], pattern: bool) -> bool {
        self.allchannels
            || self.channels.iter().any(|p| if pattern { p == chan } else { crate::glob::matches(p, chan, false) })
    }

    fn check(&self, req: &Request<'_>) -> Result<(), Denied> {
        let mut ok = req.no_auth || self.allowed.get(req.id);
        if !ok {
            if let (Some(args), Some(first)) = (self.firstargs.get(&req.id), req.argv.get(1)) {
                ok = args.iter().any(|a| a.as_bytes().eq_ignore_ascii_case(first));
            }
        }
        if !ok {
            return Err(Denied::Command);
        }
        if !self.allkeys {
            for (pos, read, write) in (req.keys)() {
                let need = if read { READ } else { 0 } | if write { WRITE } else { 0 };
                if !req.argv.get(pos).is_some_and(|k| self.key_ok(k, need)) {
                    return Err(Denied::Key(pos));
                }
            }
        }
        if !self.allchannels {
            for (pos, pattern) in (req.channels)() {
                if !req.argv.get(pos).is_some_and(|c| self.channel_ok(c, pattern)) {
                    return Err(Denied::Channel(pos));
                }
            }
        }
        Ok(())
    }
}

/// Calls `f` with every id in category `bit` (containers and subcommands).
fn for_members(cat: &Catalog, bit: u32, mut f: impl FnMut(usize)) {
    for c in &cat.commands {
        if c.categories & bit != 0 {
            f(c.id);
        }
        for (id, _, cats) in &c.subs {
            if cats & bit != 0 {
                f(*id);
            }
        }
    }
}

/// The SHA-256 of a password, in lower-case hex (as ACL stores and shows it).
pub fn hash_password(pass: &[u8]) -> String {
    Sha256::digest(pass).iter().map(|b| format!("{b:02x}")).collect()
}

/// One user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub enabled: bool,
    pub nopass: bool,
    /// `Some(true)`: `sanitize-payload`; `Some(false)`: `skip-sanitize-payload`.
    pub sanitize: Option<bool>,
    /// SHA-256 hex digests, in the order added.
    pub passwords: Vec<String>,
    pub root: Selector,
    pub selectors: Vec<Selector>,
}

impl User {
    /// A new user as `ACL SETUSER` creates it: off, no passwords, no keys,
    /// channels per `acl-pubsub-default`, no commands.
    pub fn new(cat: &Catalog, allchannels: bool) -> User {
        let mut root = Selector::new(cat.len, allchannels);
        if allchannels {
            root.channels = vec![Bytes::from_static(b"*")];
        }
        User { enabled: false, nopass: false, sanitize: None, passwords: Vec::new(), root, selectors: Vec::new() }
    }

    /// Applies one `ACL SETUSER` rule. `allchannels`: `acl-pubsub-default`
    /// is `allchannels` (what `reset` restores).
    pub fn apply(&mut self, rule: &[u8], cat: &Catalog, allchannels: bool) -> Result<(), &'static str> {
        if rule.first() == Some(&b'(') && rule.last() == Some(&b')') && rule.len() >= 2 {
            let mut sel = Selector::new(cat.len, allchannels);
            if allchannels {
                sel.channels = vec![Bytes::from_static(b"*")];
            }
            for part in rule[1..rule.len() - 1].split(|&b| b == b' ').filter(|p| !p.is_empty()) {
                sel.apply(part, cat)?;
            }
            self.selectors.push(sel);
            return Ok(());
        }
        let lower = String::from_utf8_lossy(rule).to_ascii_lowercase();
        match lower.as_str() {
            "on" => self.enabled = true,
            "off" => self.enabled = false,
            "nopass" => {
                self.nopass = true;
                self.passwords.clear();
            }
            "resetpass" => {
                self.nopass = false;
                self.passwords.clear();
            }
            "sanitize-payload" => self.sanitize = Some(true),
            "skip-sanitize-payload" => self.sanitize = Some(false),
            "clearselectors" => self.selectors.clear(),
            "reset" => {
                let fresh = User::new(cat, allchannels);
                *self = User { sanitize: Some(true), ..fresh };
            }
            _ => match rule.first() {
                Some(b'>') => {
                    let h = hash_password(&rule[1..]);
                    if !self.passwords.contains(&h) {
                        self.passwords.push(h);
                    }
                    self.nopass = false;
                }
                Some(b'#') => {
                    let h = valid_hash(&rule[1..])?;
                    if !self.passwords.contains(&h) {
                        self.passwords.push(h);
                    }
                    self.nopass = false;
                }
                Some(b'<') => self.remove_password(hash_password(&rule[1..]))?,
                Some(b'!') => self.remove_password(valid_hash(&rule[1..])?)?,
                _ => self.root.apply(rule, cat)?,
            },
        }
        Ok(())
    }

    fn remove_password(&mut self, h: String) -> Result<(), &'static str> {
        let i = self.passwords.iter().position(|p| *p == h).ok_or(reason::NO_SUCH_PASSWORD)?;
        self.passwords.remove(i);
        self.nopass = false;
        Ok(())
    }

    /// True if `pass` opens this user (enabled, and nopass or a match).
    pub fn password_ok(&self, pass: &[u8]) -> bool {
        self.enabled && (self.nopass || self.passwords.contains(&hash_password(pass)))
    }

    /// The flags `ACL GETUSER` lists, in Redis's order.
    pub fn flags(&self) -> Vec<&'static str> {
        let mut f = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            f.push("nopass");
        }
        match self.sanitize {
            Some(false) => f.push("skip-sanitize-payload"),
            Some(true) => f.push("sanitize-payload"),
            None => {}
        }
        f
    }

    /// The user's rules as `ACL LIST` prints them (without `user <name>`).
    pub fn describe(&self, cat: &Catalog) -> String {
        let mut parts: Vec<String> = self.flags().iter().map(|s| s.to_string()).collect();
        parts.extend(self.passwords.iter().map(|h| format!("#{h}")));
        parts.push(self.root.describe(cat));
        parts.extend(self.selectors.iter().map(|s| format!("({})", s.describe(cat))));
        parts.join(" ")
    }

    /// `ACL GETUSER`'s commands, keys and channels of the root selector
    /// (`root`) or of each selector.
    pub fn selector_parts(&self, cat: &Catalog, root: bool) -> Vec<(String, String, String)> {
        let one = |s: &Selector| (s.describe_commands(cat), s.describe_keys(), s.describe_channels());
        if root {
            vec![one(&self.root)]
        } else {
            self.selectors.iter().map(one).collect()
        }
    }

    /// Checks one command line: allowed if the root selector or any other
    /// allows it; else the most telling refusal (a key or channel one over
    /// a command one).
    pub fn check(&self, req: &Request<'_>) -> Result<(), Denied> {
        let mut worst = None;
        for s in std::iter::once(&self.root).chain(&self.selectors) {
            match s.check(req) {
                Ok(()) => return Ok(()),
                Err(Denied::Command) => {
                    worst.get_or_insert(Denied::Command);
                }
                Err(d) => {
                    if worst.is_none_or(|w| w == Denied::Command) {
                        worst = Some(d);
                    }
                }
            }
        }
        Err(worst.unwrap_or(Denied::Command))
    }

    /// True if every channel (or pattern) is still allowed.
    pub fn channels_ok(&self, chans: &[(Bytes, bool)]) -> bool {
        chans.iter().all(|(c, pat)| std::iter::once(&self.root).chain(&self.selectors).any(|s| s.channel_ok(c, *pat)))
    }
}

fn valid_hash(h: &[u8]) -> Result<String, &'static str> {
    if h.len() != 64 || !h.iter().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c)) {
        return Err(reason::BAD_HASH);
    }
    Ok(String::from_utf8_lossy(h).into_owned())
}

/// One `ACL LOG` entry.
#[derive(Debug, Clone)]
pub struct LogEntry {
    pub count: u64,
    /// `command`, `key`, `channel` or `auth`.
    pub reason: &'static str,
    /// `toplevel`, `multi` or `lua`.
    pub context: &'static str,
    pub object: Bytes,
    pub username: Bytes,
    /// Unix ms of the last occurrence.
    pub time_ms: u64,
    pub client_info: String,
}

/// The user store and the ACL log.
#[derive(Debug)]
pub struct Acl {
    pub users: BTreeMap<Bytes, User>,
    /// Newest first.
    pub log: VecDeque<LogEntry>,
    /// See the module's invariant.
    pub open: bool,
    /// New users start with `sanitize-payload` (Redis 7.2 on; the
    /// profile's, set by the core).
    pub sanitize_new_users: bool,
    len: usize,
}

impl Acl {
    /// The store with only `default` (on, nopass or `requirepass`, all
    /// keys, channels and commands).
    pub fn new(cat: &Catalog, requirepass: Option<&[u8]>) -> Acl {
        let mut root = Selector::new(cat.len, true);
        root.channels = vec![Bytes::from_static(b"*")];
        root.allowed = Bits::new(cat.len, true);
        root.all_base = true;
        root.keys = vec![(READ | WRITE, Bytes::from_static(b"*"))];
        root.allkeys = true;
        let default =
            User { enabled: true, nopass: true, sanitize: None, passwords: Vec::new(), root, selectors: Vec::new() };
        let mut users = BTreeMap::new();
        users.insert(Bytes::from_static(b"default"), default);
        let mut acl = Acl { users, log: VecDeque::new(), open: true, sanitize_new_users: false, len: cat.len };
        acl.set_requirepass(requirepass);
        acl
    }

    /// `requirepass` replaces the default user's passwords (empty: nopass).
    pub fn set_requirepass(&mut self, pass: Option<&[u8]>) {
        if let Some(d) = self.users.get_mut(&b"default"[..]) {
            d.passwords.clear();
            match pass {
                Some(p) if !p.is_empty() => {
                    d.nopass = false;
                    d.passwords.push(hash_password(p));
                }
                _ => d.nopass = true,
            }
        }
        self.refresh();
    }

    /// Recomputes [`Acl::open`] after a change.
    pub fn refresh(&mut self) {
        let len = self.len;
        self.open = self.users.len() == 1
            && self.users.get(&b"default"[..]).is_some_and(|d| d.selectors.is_empty() && d.root.unrestricted(len));
    }

    /// Sets whether new users start with `sanitize-payload` (the
    /// profile's rule), the default user too while no rule has set its
    /// flag.
    pub fn set_sanitize_new_users(&mut self, on: bool) {
        self.sanitize_new_users = on;
        if let Some(d) = self.users.get_mut(&b"default"[..]) {
            if on && d.sanitize.is_none() {
                d.sanitize = Some(true);
            }
        }
    }

    /// A new user (`ACL SETUSER` of a name not known yet).
    pub fn new_user(&self, cat: &Catalog, allchannels: bool) -> User {
        let mut u = User::new(cat, allchannels);
        if self.sanitize_new_users {
            u.sanitize = Some(true);
        }
        u
    }

    pub fn default_user(&self) -> Option<&User> {
        self.users.get(&b"default"[..])
    }

    /// Redis's `authRequired`: clients must authenticate unless the
    /// default user is on and nopass.
    pub fn auth_required(&self) -> bool {
        !self.default_user().is_some_and(|d| d.nopass && d.enabled)
    }

    /// Adds a log entry, or counts it on an equal one less than 60 s old
    /// (which then moves to the front).
    pub fn log_event(&mut self, e: LogEntry, max_len: usize) {
        let same = self.log.iter().position(|o| {
            o.reason == e.reason
                && o.context == e.context
                && o.object == e.object
                && o.username == e.username
                && e.time_ms.saturating_sub(o.time_ms) < 60_000
        });
        let entry = match same.and_then(|i| self.log.remove(i)) {
            Some(mut o) => {
                o.count += 1;
                o.time_ms = e.time_ms;
                o.client_info = e.client_info;
                o
            }
            None => e,
        };
        self.log.push_front(entry);
        self.log.truncate(max_len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Catalog {
        // get(0: string read), set(1: string write), client(2) with
        // setname(3: connection) and kill(4: admin connection).
        let s = |n: &[&str]| n.iter().map(|c| 1u32 << category_index(c).unwrap()).fold(0, |a, b| a | b);
        Catalog {
            profile: Default::default(),
            len: 5,
            commands: vec![
                CatalogCommand { id: 0, name: "get".into(), categories: s(&["string", "read"]), subs: vec![] },
                CatalogCommand { id: 1, name: "set".into(), categories: s(&["string", "write"]), subs: vec![] },
                CatalogCommand {
                    id: 2,
                    name: "client".into(),
                    categories: s(&["slow"]),
                    subs: vec![
                        (3, "setname".into(), s(&["connection"])),
                        (4, "kill".into(), s(&["admin", "connection"])),
                    ],
                },
            ],
        }
    }

    fn user(rules: &[&str]) -> User {
        let cat = catalog();
        let mut u = User::new(&cat, false);
        for r in rules {
            u.apply(r.as_bytes(), &cat, false).unwrap();
        }
        u
    }

    #[test]
    fn rules_print_as_redis_does() {
        let cat = catalog();
        // GET is all of @read here: the category is the better fit.
        assert_eq!(user(&["+get"]).describe(&cat), "off resetchannels -@all +@read");
        assert_eq!(user(&["+get", "+client|setname"]).describe(&cat), "off resetchannels -@all +@read +client|setname");
        assert_eq!(user(&["+@all", "-client|setname"]).describe(&cat), "off resetchannels +@all -client|setname");
        assert_eq!(user(&["+client", "-client|kill"]).describe(&cat), "off resetchannels -@all +@slow -client|kill");
        assert_eq!(
            user(&["on", "~a*", "%R~b*", "%RW~c", "&x", ">p"]).describe(&cat),
            format!("on #{} ~a* %R~b* ~c resetchannels &x -@all", hash_password(b"p"))
        );
        assert_eq!(user(&["reset"]).describe(&cat), "off sanitize-payload resetchannels -@all");
    }

    #[test]
    fn rule_errors() {
        let cat = catalog();
        let mut u = User::new(&cat, false);
        assert_eq!(u.apply(b"xyz", &cat, false), Err(reason::SYNTAX));
        assert_eq!(u.apply(b"+nosuch", &cat, false), Err(reason::UNKNOWN));
        assert_eq!(u.apply(b"-get|x", &cat, false), Err(reason::UNKNOWN));
        assert_eq!(u.apply(b"<nope", &cat, false), Err(reason::NO_SUCH_PASSWORD));
        assert_eq!(u.apply(b"#abc", &cat, false), Err(reason::BAD_HASH));
        u.apply(b"allkeys", &cat, false).unwrap();
        assert_eq!(u.apply(b"%R~x", &cat, false), Err(reason::AFTER_ALLKEYS));
    }

    fn check(u: &User, id: usize, args: &[&str], write: bool) -> Result<(), Denied> {
        let argv: Vec<Bytes> = args.iter().map(|s| Bytes::copy_from_slice(s.as_bytes())).collect();
        let keys = || vec![(1, !write, write)];
        let none = Vec::new;
        u.check(&Request { id, argv: &argv, no_auth: false, keys: &keys, channels: &none })
    }

    #[test]
    fn checks_commands_keys_channels_and_selectors() {
        let u = user(&["+get", "%R~r*", "&news", "(+set ~w*)"]);
        assert_eq!(check(&u, 0, &["get", "r1"], false), Ok(()));
        assert_eq!(check(&u, 0, &["get", "x"], false), Err(Denied::Key(1)));
        assert_eq!(check(&u, 1, &["set", "w1"], true), Ok(()));
        assert_eq!(check(&u, 1, &["set", "r1"], true), Err(Denied::Key(1)));
        assert_eq!(check(&u, 3, &["client", "setname"], false), Err(Denied::Command));
        assert!(u.channels_ok(&[(Bytes::from_static(b"news"), false)]));
        assert!(!u.channels_ok(&[(Bytes::from_static(b"n*"), true)]));
    }

    #[test]
    fn default_user_is_open_until_restricted() {
        let cat = catalog();
        let mut acl = Acl::new(&cat, None);
        assert!(acl.open && !acl.auth_required());
        acl.set_requirepass(Some(b"pw"));
        assert!(acl.auth_required());
        acl.users.insert(Bytes::from_static(b"x"), User::new(&cat, false));
        acl.refresh();
        assert!(!acl.open);
    }
}
