//! Keeps `src/cmd/meta.resp3` (Redis 7.0's tips, key specs and docs for the
//! commands rlockd implements), `meta-redis-8.2.3.resp3` and
//! `meta-valkey-8.1.8.resp3` (the same for the commands rlockd answers
//! under those profiles) equal to what each oracle says. (Redis lists
//! subcommands in its dict order, which changes with each process's hash
//! seed; rlockd lists them sorted.)
//!
//! `RLOCKD_REGENERATE_META=1 cargo test --test it metadata_file` rewrites the
//! files from the installed servers; without it, any difference fails.

use super::common::oracle::{Oracle, OracleKind};
use super::common::resp::{RawConn, Value};

/// RESP3 encoding of a reply read from the oracle.
fn encode(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Simple(s) => {
            out.push(b'+');
            out.extend_from_slice(s);
            out.extend_from_slice(b"\r\n");
        }
        Value::Int(n) => out.extend_from_slice(format!(":{n}\r\n").as_bytes()),
        Value::Bulk(Some(b)) => {
            out.extend_from_slice(format!("${}\r\n", b.len()).as_bytes());
            out.extend_from_slice(b);
            out.extend_from_slice(b"\r\n");
        }
        Value::Bulk(None) | Value::Null | Value::Agg(_, None) => out.extend_from_slice(b"_\r\n"),
        Value::Agg(tag, Some(items)) => {
            out.extend_from_slice(format!("{}{}\r\n", *tag as char, items.len()).as_bytes());
            for i in items {
                encode(i, out);
            }
        }
        Value::Map(pairs) => {
            out.extend_from_slice(format!("%{}\r\n", pairs.len()).as_bytes());
            for (k, v) in pairs {
                encode(k, out);
                encode(v, out);
            }
        }
        other => panic!("unexpected metadata value {other:?}"),
    }
}

#[test]
fn metadata_file_matches_redis() {
    check(OracleKind::Redis70, "meta.resp3");
}

#[test]
fn metadata_file_matches_redis_8_2() {
    check(OracleKind::Redis82, "meta-redis-8.2.3.resp3");
}

#[test]
fn metadata_file_matches_valkey_8_1() {
    check(OracleKind::Valkey81, "meta-valkey-8.1.8.resp3");
}

/// Compares (or rewrites) `src/cmd/<file>` with the metadata the server of
/// `kind` gives for the commands rlockd answers under its profile.
fn check(kind: OracleKind, file: &str) {
    let Some(oracle) = Oracle::start_kind(kind, &[]) else {
        return;
    };
    let config = rlockd::Config { params: vec![kind.rlockd_param()], ..Default::default() };
    let srv = rlockd::Server::start_with(config).expect("rlockd");
    let mut ours = RawConn::connect(srv.port());
    let mut redis = RawConn::connect(oracle.port);
    redis.cmd(&["HELLO", "3"]);
    let Value::Agg(_, Some(names)) = ours.cmd(&["COMMAND", "LIST"]) else { panic!("COMMAND LIST") };
    let mut names: Vec<String> = names
        .into_iter()
        .map(|n| match n {
            Value::Bulk(Some(b)) => String::from_utf8(b).unwrap(),
            other => panic!("name {other:?}"),
        })
        .collect();
    names.sort();
    let mut entries = Vec::new();
    for name in &names {
        let Value::Agg(_, Some(info)) = redis.cmd(&["COMMAND", "INFO", name]) else { panic!("COMMAND INFO {name}") };
        let Value::Agg(_, Some(info)) = &info[0] else {
            continue; // not a command of the oracle
        };
        let Value::Map(docs) = redis.cmd(&["COMMAND", "DOCS", name]) else { panic!("COMMAND DOCS {name}") };
        let Some((_, Value::Map(doc))) = docs.into_iter().next() else { panic!("docs of {name}") };
        let doc: Vec<(Value, Value)> =
            doc.into_iter().filter(|(k, _)| *k != Value::Bulk(Some(b"subcommands".to_vec()))).collect();
        entries.push((name.clone(), info[7].clone(), info[8].clone(), doc));
    }
    let mut out = format!("%{}\r\n", entries.len()).into_bytes();
    for (name, tips, key_specs, doc) in &entries {
        encode(&Value::Bulk(Some(name.as_bytes().to_vec())), &mut out);
        out.extend_from_slice(b"*3\r\n");
        encode(tips, &mut out);
        encode(key_specs, &mut out);
        encode(&Value::Map(doc.clone()), &mut out);
    }
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cmd").join(file);
    if std::env::var("RLOCKD_REGENERATE_META").is_ok_and(|v| v == "1") {
        std::fs::write(&path, &out).expect("write the metadata file");
        eprintln!("wrote {} ({} commands)", path.display(), entries.len());
        return;
    }
    let current = std::fs::read(&path).expect("read the metadata file");
    assert!(
        current == out,
        "src/cmd/{file} differs from {}'s metadata; regenerate it with \
         RLOCKD_REGENERATE_META=1 cargo test --test it metadata_file",
        kind.label()
    );
}

#[test]
fn command_info_matches_redis() {
    check_info(OracleKind::Redis70);
}

#[test]
fn command_info_matches_redis_8_2() {
    check_info(OracleKind::Redis82);
}

#[test]
fn command_info_matches_valkey_8_1() {
    check_info(OracleKind::Valkey81);
}

/// A container's subcommands in name order (the server lists them in its
/// dict's order, seeded per process).
fn sorted_subcommands(v: Value) -> Value {
    let Value::Agg(tag, Some(mut rows)) = v else { return v };
    for row in rows.iter_mut() {
        if let Value::Agg(_, Some(fields)) = row {
            if let Some(Value::Agg(_, Some(subs))) = fields.get_mut(9) {
                subs.sort_by_key(|s| format!("{s:?}"));
            }
        }
    }
    Value::Agg(tag, Some(rows))
}

/// `COMMAND INFO` of every command the server of `kind` lists (arity,
/// flags, key positions, ACL categories, tips, key specs, subcommands)
/// is rlockd's under that profile, in RESP2, but for the commands of the
/// modules Redis 8 loads (vector sets), which rlockd answers as a server
/// built without them.
fn check_info(kind: OracleKind) {
    let Some(oracle) = Oracle::start_kind(kind, &[]) else {
        return;
    };
    let config = rlockd::Config { params: vec![kind.rlockd_param()], ..Default::default() };
    let srv = rlockd::Server::start_with(config).expect("rlockd");
    let mut ours = RawConn::connect(srv.port());
    let mut redis = RawConn::connect(oracle.port);
    let Value::Agg(_, Some(names)) = redis.cmd(&["COMMAND", "LIST"]) else { panic!("COMMAND LIST") };
    let mut differ = Vec::new();
    let mut compared = 0;
    for n in names {
        let Value::Bulk(Some(name)) = n else { panic!("name {n:?}") };
        let name = String::from_utf8(name).unwrap();
        let theirs = sorted_subcommands(redis.cmd(&["COMMAND", "INFO", &name]));
        let is_module = match &theirs {
            Value::Agg(_, Some(rows)) => rows.iter().any(|r| match r {
                Value::Agg(_, Some(f)) => {
                    matches!(&f[2], Value::Agg(_, Some(fl)) if fl.contains(&Value::Simple(b"module".to_vec())))
                }
                _ => false,
            }),
            _ => false,
        };
        if is_module {
            continue;
        }
        compared += 1;
        let mine = sorted_subcommands(ours.cmd(&["COMMAND", "INFO", &name]));
        if mine != theirs {
            differ.push(format!("{name}:\n  rlockd {mine:?}\n  server {theirs:?}"));
        }
    }
    assert!(compared > 300, "only {compared} commands compared");
    assert!(differ.is_empty(), "COMMAND INFO differs from {}:\n{}", kind.label(), differ.join("\n"));
}
