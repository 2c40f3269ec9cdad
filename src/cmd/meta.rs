//! Redis 7.0's own command metadata that the table does not carry: each
//! command's tips and key specifications (`COMMAND INFO`) and its full
//! documentation (`COMMAND DOCS`: complexity, arguments, history…).
//!
//! `meta.resp3` is generated from a real redis-server by the test
//! `command_meta::metadata_file_matches_redis` (run it with
//! `RLOCKD_REGENERATE_META=1` to rewrite the file); the same test fails when
//! the file and the oracle disagree. The table stays the source of truth for
//! what rlockd implements: subcommand lists are built from the table, and a
//! command without an entry here (the 7.2 commands rlockd adds) falls back
//! to what the table knows.

use std::collections::HashMap;
use std::sync::OnceLock;

use bytes::Bytes;

use crate::protocol::{decode, Reply};

/// Metadata of one command (by full name, `client|setname`).
#[derive(Debug)]
pub struct Meta {
    pub tips: Reply,
    /// The key specs as `COMMAND INFO` prints them.
    pub key_specs: Reply,
    /// The same, parsed once for finding keys (`COMMAND GETKEYS`).
    pub keys: Vec<KeySpec>,
    /// The `COMMAND DOCS` map, without `subcommands`.
    pub docs: Vec<(Reply, Reply)>,
}

static DATA: &[u8] = include_bytes!("meta.resp3");

/// The metadata of `fullname`, if Redis 7.0 has the command.
pub fn get(fullname: &str) -> Option<&'static Meta> {
    static MAP: OnceLock<HashMap<String, Meta>> = OnceLock::new();
    MAP.get_or_init(load).get(fullname)
}

fn load() -> HashMap<String, Meta> {
    let Some(Reply::Map(entries)) = decode(DATA) else { panic!("meta.resp3: not a map of entries") };
    entries
        .into_iter()
        .map(|(name, v)| {
            let Reply::Bulk(name) = name else { panic!("meta.resp3: bad name") };
            let Reply::Array(mut parts) = v else { panic!("meta.resp3: bad entry") };
            assert_eq!(parts.len(), 3, "meta.resp3: entry of 3");
            let docs = match parts.pop() {
                Some(Reply::Map(m)) => m,
                _ => panic!("meta.resp3: docs"),
            };
            let key_specs = parts.pop().expect("key specs");
            let tips = parts.pop().expect("tips");
            let keys = match &key_specs {
                Reply::Set(specs) | Reply::Array(specs) => specs.iter().map(KeySpec::parse).collect(),
                _ => Vec::new(),
            };
            (String::from_utf8_lossy(&name).into_owned(), Meta { tips, key_specs, keys, docs })
        })
        .collect()
}

/// One key specification (Redis's `keySpec`): where to start looking for
/// keys, how to find them from there, and the flags of the keys found.
#[derive(Debug, Clone, PartialEq)]
pub struct KeySpec {
    pub begin: BeginSearch,
    pub find: FindKeys,
    /// The keys' flags (`RW`, `access`…) as `COMMAND GETKEYSANDFLAGS`
    /// prints them.
    pub flags: Reply,
}

/// `begin_search` of a key spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BeginSearch {
    /// The first key is at this argument index.
    Index(i64),
    /// The first key follows `keyword`, searched from `startfrom`
    /// (negative: from the end, backwards).
    Keyword { keyword: Bytes, startfrom: i64 },
    /// A kind this evaluator does not know (no keys can be found).
    Unknown,
}

/// `find_keys` of a key spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FindKeys {
    /// Keys up to `lastkey` (relative to the first; negative: from the end,
    /// or a fraction of the rest with `limit`), every `keystep`.
    Range { lastkey: i64, keystep: i64, limit: i64 },
    /// The number of keys is the argument at `keynumidx` (relative to the
    /// first); they start `firstkey` after it, every `keystep`.
    Keynum { keynumidx: i64, firstkey: i64, keystep: i64 },
    /// A kind this evaluator does not know.
    Unknown,
}

impl KeySpec {
    /// Parses one spec as `COMMAND INFO` prints it; what it cannot read
    /// becomes `Unknown`.
    fn parse(spec: &Reply) -> KeySpec {
        let begin = (|| {
            let bs = map_get(spec, "begin_search")?;
            let s = map_get(bs, "spec")?;
            Some(match map_get(bs, "type")? {
                Reply::Bulk(t) if &t[..] == b"index" => BeginSearch::Index(map_int(s, "index")?),
                Reply::Bulk(t) if &t[..] == b"keyword" => {
                    let Reply::Bulk(keyword) = map_get(s, "keyword")? else { return None };
                    BeginSearch::Keyword { keyword: keyword.clone(), startfrom: map_int(s, "startfrom")? }
                }
                _ => return None,
            })
        })()
        .unwrap_or(BeginSearch::Unknown);
        let find = (|| {
            let fk = map_get(spec, "find_keys")?;
            let s = map_get(fk, "spec")?;
            Some(match map_get(fk, "type")? {
                Reply::Bulk(t) if &t[..] == b"range" => FindKeys::Range {
                    lastkey: map_int(s, "lastkey")?,
                    keystep: map_int(s, "keystep")?,
                    limit: map_int(s, "limit")?,
                },
                Reply::Bulk(t) if &t[..] == b"keynum" => FindKeys::Keynum {
                    keynumidx: map_int(s, "keynumidx")?,
                    firstkey: map_int(s, "firstkey")?,
                    keystep: map_int(s, "keystep")?,
                },
                _ => return None,
            })
        })()
        .unwrap_or(FindKeys::Unknown);
        let flags = map_get(spec, "flags").cloned().unwrap_or(Reply::Set(Vec::new()));
        KeySpec { begin, find, flags }
    }
}

fn map_get<'a>(m: &'a Reply, key: &str) -> Option<&'a Reply> {
    let Reply::Map(pairs) = m else { return None };
    pairs.iter().find(|(k, _)| matches!(k, Reply::Bulk(b) if &b[..] == key.as_bytes())).map(|(_, v)| v)
}

fn map_int(m: &Reply, key: &str) -> Option<i64> {
    match map_get(m, key)? {
        Reply::Int(n) => Some(*n),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn embedded_metadata_parses() {
        let get = super::get("get").expect("GET is in Redis 7.0");
        assert!(
            matches!(&get.key_specs, crate::protocol::Reply::Set(v) if v.len() == 1),
            "one key spec (a set, as Redis sends it)"
        );
        assert!(super::get("client|setname").is_some());
        assert!(super::get("waitaof").is_none(), "a 7.2 command has no 7.0 metadata");
    }
}
