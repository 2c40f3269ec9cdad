//! `RLOCKD`'s replies and error texts, byte for byte: a fixed list of command
//! lines (good and bad: unknown operations, wrong counts, bad numbers, every
//! fault kind with its options) sent to a standalone server, a primary with
//! a replica and a cluster, compared with `tests/it/rlockd_replies.txt`.
//! The file was written before the subcommands' operations became op tables
//! (`cmd/control.rs`), so it holds what the `if` chains answered; a change
//! of a reply shows as a diff of that file. A reply that depends on the time
//! or on ports is sent but not recorded (lines marked `~`).
//!
//! `RLOCKD_REGENERATE_REPLIES=1 cargo test --test it rlockd_tree` rewrites it.

use crate::common::resp::{RawConn, Value};

/// Command lines after `RLOCKD`, split on spaces; `_` stands for an empty
/// argument and `+` for a space inside one. A leading `~` runs the line
/// without recording its reply.
const STANDALONE: &[&str] = &[
    "",
    "HELP",
    "HELP x",
    "NOPE",
    "CLOCK",
    "CLOCK NOPE",
    "CLOCK GET x",
    "CLOCK ADVANCE",
    "CLOCK ADVANCE x",
    "CLOCK SET -1",
    "CLOCK SET 1 2",
    "CLOCK FREEZE x",
    "CLOCK SKEW abc",
    "CLOCK INFO x",
    "~CLOCK FREEZE",
    "CLOCK SET 1700000000000",
    "CLOCK GET",
    "CLOCK ADVANCE 5",
    "CLOCK ADVANCE -5",
    "~CLOCK INFO",
    "~CLOCK SKEW 10",
    "~CLOCK RESUME",
    "LOCKS",
    "LOCKS a b c",
    "LOCKS TEXT",
    "LOCKS * TEXT",
    "LOCKS TEXT TEXT",
    "EVENTS",
    "EVENTS k SINCE x",
    "EVENTS k SINCE -1",
    "EVENTS k SINCE 3",
    "EVENTS a b",
    "EVENTS 1 2 3 4",
    "CHECK",
    "CHECK RESET",
    "CHECK RESET x",
    "CHECK foo",
    "SNAPSHOT",
    "SNAPSHOT a",
    "SNAPSHOT a b",
    "RESTORE nope",
    "RESTORE a",
    "SNAPSHOTS",
    "SNAPSHOTS x",
    "SCRIPTS",
    "SCRIPTS x y",
    "SCRIPTS abc",
    "FAULT",
    "FAULT NOPE",
    "FAULT LIST",
    "FAULT LIST x",
    "FAULT CLEAR",
    "FAULT CLEAR x",
    "FAULT CLEAR -1",
    "FAULT CLEAR 1 2",
    "FAULT ERROR",
    "FAULT ERROR _",
    "FAULT ERROR ERR+boom COMMAND ping",
    "FAULT LIST",
    "FAULT CLEAR",
    "FAULT LATENCY",
    "FAULT LATENCY x",
    "FAULT LATENCY -1",
    "FAULT LATENCY 5 JITTER",
    "FAULT LATENCY 5 JITTER x",
    "FAULT LATENCY 5 JITTER 3 KEY k TIMES 2",
    "FAULT CLOSE",
    "FAULT CLOSE AFTER COMMAND x",
    "FAULT CLOSE sideways",
    "FAULT CLOSE BEFORE CLIENT c ID 7",
    "FAULT FREEZE",
    "FAULT FREEZE 600000 COMMAND nothing",
    "FAULT SLOWWRITE 1",
    "FAULT SLOWWRITE 0 5 COMMAND x",
    "FAULT CUTWRITE",
    "FAULT CUTWRITE 3 KEY z",
    "FAULT DROPMSG COMMAND x",
    "FAULT DROPMSG CHANNEL c TIMES 1",
    "FAULT DELAYMSG",
    "FAULT DELAYMSG 5 CHANNEL c",
    "FAULT DELAYMSG 5 KEY c",
    "FAULT FREEZE 5 CHANNEL c",
    "FAULT LIST",
    "FAULT KILL TIMES 1",
    "FAULT KILL KEY x",
    "FAULT KILL CHANNEL x",
    "FAULT KILL CLIENT nobody ID 12345",
    "FAULT KILL extra",
    "FAULT ERROR x COMMAND",
    "FAULT ERROR x BOGUS y",
    "FAULT ERROR x ID abc",
    "FAULT ERROR x TIMES -2",
    "FAULT CLEAR 2",
    "FAULT CLEAR 999",
    "FAULT CLEAR",
    "FAULT LIST",
    "REPL",
    "REPL NOPE",
    "REPL STATUS",
    "REPL STATUS x",
    "REPL PAUSE",
    "REPL PAUSE 1 2",
    "REPL PAUSE x",
    "REPL PAUSE 0",
    "REPL RESUME 7000",
    "REPL BREAK 70000",
    "REPL RESTORE",
    "REPL LAG",
    "REPL LAG x",
    "REPL LAG -1",
    "REPL LAG 5",
    "REPL LAG 5 x",
    "REPL LAG 5 6 7",
    "REPL DROP",
    "REPL DROP x",
    "REPL DROP 1 2",
    "REPL FAILOVER",
    "REPL FAILOVER x",
    "REPL FAILOVER 1 2",
    "REPL CRASH 0",
    "REPL CRASH x",
    "REPL CRASH 1 2 3",
    "REPL CRASH 1 2",
    "REPL CRASH 1",
    "REPL CRASH 1 NOW",
    "REPL CRASH NOW NOW",
    "REPL REVIVE",
    "REPL REVIVE 1",
    "REPL REVIVE x",
    "REPL REVIVE 1 NOW",
    "CLUSTER",
    "CLUSTER NOPE",
    "CLUSTER MOVESLOT 1 0",
    "TIMELINE FORMAT xml",
    "TIMELINE KEY",
    "TIMELINE FROM x",
    "TIMELINE FROM -1",
    "TIMELINE TO 1 x",
    "~TIMELINE KEY k FROM 0 TO 1 FORMAT json",
    "CLAIM",
    "CLAIM NOPE",
    "CLAIM ENTER k",
    "CLAIM ENTER k h x",
    "CLAIM LEAVE k h",
    "CLAIM ENTER k h",
    "CLAIM LEAVE k h",
    "RECORD",
    "RECORD NOPE",
    "RECORD START MAXBYTES",
    "RECORD START MAXBYTES -1",
    "RECORD START x y",
    "RECORD SAVE",
    "RECORD SAVE /nonexistent-dir/run.jsonl",
    "RECORD STOP",
    "RECORD STATUS x",
    "SCHEMA record",
    "SCHEMA claim",
    "SCHEMA timeline",
    "SCHEMA FAULT",
    "SCHEMA clock",
    "SCHEMA nope",
    "SCHEMA a b",
    "SCHEMA",
];

const PRIMARY: &[&str] = &[
    "REPL NOPE",
    "REPL PAUSE",
    "REPL PAUSE 1",
    "REPL RESUME",
    "REPL LAG 0",
    "REPL LAG x",
    "REPL DROP",
    "REPL BREAK",
    "REPL RESTORE",
    "REPL PAUSE 1 2",
    "REPL FAILOVER 1",
];

const REPLICA: &[&str] = &["REPL FAILOVER", "REPL FAILOVER x", "REPL FAILOVER 1 2", "REPL DROP 1"];

const CLUSTER: &[&str] = &[
    "CLUSTER",
    "CLUSTER NOPE",
    "CLUSTER MOVESLOT",
    "CLUSTER MOVESLOT 1",
    "CLUSTER MOVESLOT x 0",
    "CLUSTER MOVESLOT 99999 0",
    "CLUSTER MOVESLOT 1 9",
    "CLUSTER MOVESLOT 1 nobody",
    "CLUSTER MOVESLOT 1 0 KEYS",
    "CLUSTER MOVESLOT 1 0 FOO 1",
    "CLUSTER MOVESLOT 1 0 KEYS -1",
    "CLUSTER MOVESLOT 1 0 KEYS x",
    "CLUSTER MOVESLOT 0 0",
    "CLUSTER MOVESLOT 0 0 KEYS 5",
    "CLUSTER FAILOVER",
    "CLUSTER FAILOVER 9",
    "CLUSTER FAILOVER 0",
    "CLUSTER FAILOVER 0 1",
    "CLUSTER DOWN",
    "CLUSTER DOWN 9",
    "CLUSTER UP 1",
    "CLUSTER UP 1 2",
    "CLUSTER down",
];

fn argv(line: &str) -> Vec<String> {
    let mut v = vec!["RLOCKD".to_string()];
    v.extend(
        line.split(' ').filter(|w| !w.is_empty()).map(|w| if w == "_" { String::new() } else { w.replace('+', " ") }),
    );
    v
}

/// Sends `lines` on a fresh connection to `port`, writing what is recorded
/// to `out` under `title`.
fn run(port: u16, title: &str, lines: &[&str], out: &mut String) {
    let mut c = RawConn::connect(port);
    out.push_str(&format!("## {title}\n"));
    for line in lines {
        let (record, line) = match line.strip_prefix('~') {
            Some(l) => (false, l),
            None => (true, *line),
        };
        let args = argv(line);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        c.cmd(&refs);
        if !record {
            out.push_str(&format!("> {line}\n  (not recorded)\n"));
            continue;
        }
        let raw = String::from_utf8_lossy(&c.last_raw).into_owned();
        out.push_str(&format!("> {line}\n  {}\n", raw.trim_end_matches("\r\n").replace("\r\n", "\n  ")));
    }
}

#[test]
fn rlockd_tree_replies_are_the_recorded_ones() {
    let mut out = String::new();
    let srv = crate::common::server();
    run(srv.port(), "standalone", STANDALONE, &mut out);
    drop(srv);

    let nodes = rlockd::Server::start_with_replicas(1, rlockd::Config::default()).expect("primary and replica");
    run(nodes[0].port(), "primary with one replica", PRIMARY, &mut out);
    run(nodes[1].port(), "its replica", REPLICA, &mut out);
    drop(nodes);

    let cluster = rlockd::Cluster::start(rlockd::ClusterConfig::new(3)).expect("cluster");
    let port = cluster.addrs()[0].port();
    run(port, "cluster node 0 of 3", CLUSTER, &mut out);
    drop(cluster);

    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/rlockd_replies.txt");
    if std::env::var("RLOCKD_REGENERATE_REPLIES").is_ok_and(|v| v == "1") {
        std::fs::write(&path, &out).expect("write the replies");
        return;
    }
    let want = std::fs::read_to_string(&path).expect("read tests/it/rlockd_replies.txt");
    if want != out {
        let first = want.lines().zip(out.lines()).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "RLOCKD's replies differ from tests/it/rlockd_replies.txt from line {}:\n  want: {:?}\n  got:  {:?}\n\
             (a deliberate change: RLOCKD_REGENERATE_REPLIES=1 cargo test --test it rlockd_tree, then read the diff)",
            first + 1,
            want.lines().nth(first),
            out.lines().nth(first)
        );
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::Bulk(Some(b)) | Value::Simple(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("not a string: {other:?}"),
    }
}

fn field<'a>(map: &'a Value, name: &str) -> &'a Value {
    let Value::Map(pairs) = map else { panic!("not a map: {map:?}") };
    &pairs.iter().find(|(k, _)| text(k) == name).unwrap_or_else(|| panic!("no {name} in {map:?}")).1
}

fn items(v: &Value) -> &[Value] {
    match v {
        Value::Agg(_, Some(items)) => items,
        other => panic!("not an array: {other:?}"),
    }
}

/// What `RLOCKD SCHEMA FAULT` says each kind (and `KILL`) takes is what the
/// server takes: each kind with its required arguments accepts exactly the
/// scope options its row names, and refuses the others.
#[test]
fn each_fault_kind_takes_the_options_the_schema_names() {
    let srv = crate::common::server();
    let mut c = RawConn::connect(srv.port());
    assert!(matches!(c.cmd(&["HELLO", "3"]), Value::Map(_)));
    let fault = c.cmd(&["RLOCKD", "SCHEMA", "FAULT"]);
    let all = ["command", "key", "client", "id", "channel", "times"];
    let mut kinds = 0;
    for op in items(field(&fault, "ops")) {
        let options: Vec<String> = items(field(op, "options")).iter().map(text).collect();
        if options.is_empty() {
            continue;
        }
        kinds += usize::from(*field(op, "group") == Value::Bulk(Some(b"kind".to_vec())));
        let mut line = vec!["RLOCKD".to_string(), "FAULT".to_string(), text(field(op, "name"))];
        for a in items(field(op, "args")).iter().filter(|a| *field(a, "optional") == Value::Bool(false)) {
            line.push(if text(field(a, "type")) == "integer" { "1".into() } else { "ERR x".into() });
        }
        for word in all {
            let mut l = line.clone();
            l.extend([word.to_string(), "12345".to_string()]);
            let refs: Vec<&str> = l.iter().map(String::as_str).collect();
            let r = c.cmd(&refs);
            assert_eq!(!matches!(r, Value::Error(_)), options.iter().any(|o| o == word), "{l:?}: {r:?}");
            c.cmd(&["RLOCKD", "FAULT", "CLEAR"]);
        }
    }
    assert_eq!(kinds, 8);
}
