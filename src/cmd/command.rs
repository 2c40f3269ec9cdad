//! `COMMAND` and its subcommands: the table as Redis describes it, and the
//! keys of a command line (`GETKEYS`) from Redis's key specs.

use bytes::Bytes;

use super::help::help_reply;
use super::meta::{BeginSearch, FindKeys, KeySpec};
use super::util::eq;
use super::{cmd, flags, table, Command, CommandSpec, Ctx};
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;
use crate::version::Profile;

pub static COMMANDS: &[CommandSpec] = &[cmd("command", command, -1, "loading stale", 0, 0, 0, "@slow @connection")
    .subs(COMMAND_SUBS)
    .doc("Get array of Redis command details", "2.8.13")];

static COMMAND_SUBS: &[CommandSpec] = &[
    cmd("count", command_count, 2, "loading stale", 0, 0, 0, "@slow @connection")
        .doc("Get total number of Redis commands", "2.8.13"),
    cmd("docs", command_docs, -2, "loading stale", 0, 0, 0, "@slow @connection")
        .doc("Get array of specific Redis command documentation", "7.0.0"),
    cmd("getkeys", command_getkeys, -3, "loading stale", 0, 0, 0, "@slow @connection")
        .arity_7_0(-4)
        .doc("Extract keys given a full Redis command", "2.8.13"),
    cmd("getkeysandflags", command_getkeysandflags, -3, "loading stale", 0, 0, 0, "@slow @connection")
        .arity_7_0(-4)
        .doc("Extract keys and access flags given a full Redis command", "7.0.0"),
    cmd("help", command_help, 2, "loading stale", 0, 0, 0, "@slow @connection")
        .doc("Show helpful text about the different subcommands", "5.0.0"),
    cmd("info", command_info, -2, "loading stale", 0, 0, 0, "@slow @connection")
        .doc("Get array of specific Redis command details, or all when no argument is given.", "2.8.13"),
    cmd("list", command_list, -2, "loading stale", 0, 0, 0, "@slow @connection")
        .doc("Get an array of Redis command names", "7.0.0"),
];

fn command_info_reply(c: &Command, profile: Profile) -> Reply {
    let arity = if !profile.at_least(7, 2, 0) && c.spec.arity_7_0 != 0 { c.spec.arity_7_0 } else { c.spec.arity };
    let flag_names: Vec<Reply> =
        c.spec.flags_in(profile).split_whitespace().map(|f| Reply::Status(Bytes::from_static(f.as_bytes()))).collect();
    let acl: Vec<Reply> =
        c.spec.acl_in(profile).split_whitespace().map(|a| Reply::Status(Bytes::from_static(a.as_bytes()))).collect();
    let subs = subcommands_in(c, profile);
    let meta = super::meta::for_profile(&c.fullname, profile);
    Reply::Array(vec![
        Reply::bulk_str(&c.fullname),
        Reply::Int(i64::from(arity)),
        Reply::Set(flag_names),
        Reply::Int(i64::from(c.spec.first_key)),
        Reply::Int(i64::from(c.spec.last_key)),
        Reply::Int(i64::from(c.spec.step)),
        Reply::Set(acl),
        meta.map_or_else(|| Reply::Set(vec![]), |m| m.tips.clone()),
        meta.map_or_else(|| Reply::Array(vec![]), |m| m.key_specs.clone()),
        Reply::Array(subs.into_iter().map(|s| command_info_reply(s, profile)).collect()),
    ])
}

/// The subcommands of `c` that `profile` has, by name.
fn subcommands_in(c: &Command, profile: Profile) -> Vec<&Command> {
    let mut subs: Vec<&Command> = c.subcommands.values().filter(|s| s.answers_in(&profile)).collect();
    subs.sort_by(|a, b| a.fullname.cmp(&b.fullname));
    subs
}

fn command(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() == 1 {
        let profile = ctx.core.profile();
        return Ok(Reply::Array(table().listed(profile).map(|c| command_info_reply(c, profile)).collect()));
    }
    Err(super::unknown_subcommand_error(args))
}

fn command_count(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::Int(table().listed(ctx.core.profile()).count() as i64))
}

pub(super) fn lookup_full(name: &[u8]) -> Option<&'static Command> {
    let lower = name.to_ascii_lowercase();
    match lower.iter().position(|&c| c == b'|') {
        Some(p) => table().get(&lower[..p])?.subcommands.get(&lower[p + 1..]),
        None => table().get(&lower),
    }
}

/// [`lookup_full`] as a client of `ctx` sees the table (rows of its
/// profile; test control's rows unknown while it is off).
fn lookup_named(ctx: &Ctx<'_>, name: &[u8]) -> Option<&'static Command> {
    let profile = ctx.core.profile();
    // A subcommand answers only where its container does (`available`).
    lookup_full(name).filter(|c| (ctx.core.control.is_on() || !c.has(flags::TEST_CONTROL)) && c.answers_in(&profile))
}

fn command_info(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let profile = ctx.core.profile();
    if args.len() == 2 {
        return Ok(Reply::Array(table().listed(profile).map(|c| command_info_reply(c, profile)).collect()));
    }
    Ok(Reply::Array(
        args[2..].iter().map(|n| lookup_named(ctx, n).map_or(Reply::Nil, |c| command_info_reply(c, profile))).collect(),
    ))
}

/// Redis's documentation of the command (see `cmd::meta`), or the table's
/// summary for the commands Redis 7.0 does not have; subcommands are the
/// ones rlockd implements.
fn command_docs_entry(c: &Command, profile: Profile) -> (Reply, Reply) {
    let mut m = match super::meta::for_profile(&c.fullname, profile) {
        Some(meta) => meta.docs.clone(),
        None => vec![
            (Reply::bulk_str("summary"), Reply::bulk_str(c.spec.summary)),
            (Reply::bulk_str("since"), Reply::bulk_str(c.spec.since)),
            (Reply::bulk_str("group"), Reply::bulk_str(c.group)),
        ],
    };
    if !c.subcommands.is_empty() {
        let subs = subcommands_in(c, profile).into_iter().map(|s| command_docs_entry(s, profile)).collect();
        m.push((Reply::bulk_str("subcommands"), Reply::Map(subs)));
    }
    (Reply::bulk_str(&c.fullname), Reply::Map(m))
}

fn command_docs(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let profile = ctx.core.profile();
    if args.len() == 2 {
        return Ok(Reply::Map(table().listed(profile).map(|c| command_docs_entry(c, profile)).collect()));
    }
    Ok(Reply::Map(
        args[2..].iter().filter_map(|n| lookup_named(ctx, n)).map(|c| command_docs_entry(c, profile)).collect(),
    ))
}

fn command_list(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let profile = ctx.core.profile();
    let mut names: Vec<&Command> = Vec::new();
    for c in table().listed(profile) {
        names.push(c);
        names.extend(c.subcommands.values().filter(|s| s.answers_in(&profile)));
    }
    let filter = match args.len() {
        2 => None,
        5 if eq(&args[2], "filterby") => Some((args[3].to_ascii_lowercase(), args[4].clone())),
        _ => return Err(CmdError::Syntax),
    };
    let out = names
        .into_iter()
        .filter(|c| match &filter {
            None => true,
            Some((by, v)) => match &by[..] {
                b"module" => false,
                b"aclcat" => {
                    let want = format!("@{}", String::from_utf8_lossy(v).to_ascii_lowercase());
                    c.spec.acl_in(profile).split_whitespace().any(|a| a == want)
                }
                b"pattern" => crate::glob::matches(v, c.fullname.as_bytes(), true),
                _ => false,
            },
        })
        .map(|c| Reply::bulk_str(&c.fullname))
        .collect();
    if let Some((by, _)) = &filter {
        if !matches!(&by[..], b"module" | b"aclcat" | b"pattern") {
            return Err(CmdError::Syntax);
        }
    }
    Ok(Reply::Array(out))
}

fn command_getkeys(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let argv = &args[2..];
    let keys = getkeys_checked(ctx, args)?;
    Ok(Reply::bulks(keys.into_iter().map(|(i, _)| argv[i].clone())))
}

/// `COMMAND GETKEYSANDFLAGS`: each key with its key-spec flags.
fn command_getkeysandflags(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let argv = &args[2..];
    let keys = getkeys_checked(ctx, args)?;
    Ok(Reply::Array(
        keys.into_iter().map(|(pos, flags)| Reply::Array(vec![Reply::Bulk(argv[pos].clone()), flags])).collect(),
    ))
}

/// Redis's `getKeysSubcommandImpl` checks, in its order: unknown command
/// (in the version served), a command without keys, arity, then no keys
/// found (an empty list for commands whose keys are optional, like EVAL).
/// `args` is the whole `COMMAND GETKEYS cmd …` line: Redis 7.0 wants a
/// command with at least one argument (the subcommands' arity -4), 7.2 a
/// command alone (-3), which then fails the command's own arity check.
fn getkeys_checked(ctx: &Ctx<'_>, args: &[Bytes]) -> Result<Vec<(usize, Reply)>, CmdError> {
    if !super::arity_ok(-4, args.len()) && !ctx.core.profile().at_least(7, 2, 0) {
        let sub = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
        return Err(CmdError::WrongArity(format!("command|{sub}")));
    }
    let argv = &args[2..];
    let c = match super::lookup(ctx.core, argv) {
        super::Lookup::Found(c) => c,
        _ => return Err(CmdError::custom("ERR Invalid command specified")),
    };
    let has_keys = match super::meta::get(&c.fullname) {
        Some(m) => !m.keys.is_empty(),
        None => c.spec.first_key > 0 || c.has(flags::MOVABLEKEYS),
    };
    if !has_keys {
        return Err(CmdError::custom("ERR The command has no key arguments"));
    }
    if !super::arity_ok(c.spec.arity, argv.len()) {
        return Err(CmdError::custom("ERR Invalid number of arguments specified for command"));
    }
    let keys = keys_and_flags(c, argv);
    if keys.is_empty() {
        if c.has(flags::NO_MANDATORY_KEYS) {
            return Ok(Vec::new());
        }
        return Err(CmdError::custom("ERR Invalid arguments specified for command"));
    }
    Ok(keys)
}

/// The keys command `c` names in `argv` (as `COMMAND GETKEYS` finds them).
pub(crate) fn command_keys(c: &Command, argv: &[Bytes]) -> Vec<Bytes> {
    keys_and_flags(c, argv).into_iter().filter_map(|(pos, _)| argv.get(pos).cloned()).collect()
}

/// The keys command `c` names in `argv` with the access each needs, as
/// the ACL checks it: (position, read, write). A key spec's `access` flag
/// asks for read permission, `insert`/`delete`/`update` for write.
pub(crate) fn key_access(c: &Command, argv: &[Bytes]) -> Vec<(usize, bool, bool)> {
    let has = |flags: &Reply, names: &[&str]| match flags {
        Reply::Set(v) | Reply::Array(v) => v.iter().any(|f| match f {
            Reply::Status(b) | Reply::Bulk(b) => names.iter().any(|n| b.eq_ignore_ascii_case(n.as_bytes())),
            _ => false,
        }),
        _ => false,
    };
    keys_and_flags(c, argv)
        .into_iter()
        .map(|(pos, f)| (pos, has(&f, &["access"]), has(&f, &["insert", "delete", "update"])))
        .collect()
}

fn key_flags(names: &[&str]) -> Reply {
    Reply::Set(names.iter().map(|n| Reply::Status(Bytes::copy_from_slice(n.as_bytes()))).collect())
}

/// Key positions with their flags: Redis's own key-getting procedures for
/// SET, DELEX, BITFIELD and SORT (whose key specs cannot say), the key specs
/// (`cmd::meta`) otherwise.
fn keys_and_flags(c: &Command, argv: &[Bytes]) -> Vec<(usize, Reply)> {
    match c.fullname.as_str() {
        "set" => {
            // Redis 8.4's `setGetKeys` (key spec flags `VARIABLE_FLAGS`):
            // GET reads the value back; a condition (`IFEQ`…, Valkey's
            // `IFEQ`) reads it without returning it. Its exact flags are not
            // documented: RW without `access` is rlockd's reading.
            let (mut get, mut cond) = (false, false);
            let mut i = 3;
            while i < argv.len() {
                let a = &argv[i];
                if eq(a, "get") {
                    get = true;
                } else if ["ifeq", "ifne", "ifdeq", "ifdne"].iter().any(|c| eq(a, c)) {
                    cond = true;
                    i += 1;
                } else if ["ex", "px", "exat", "pxat"].iter().any(|c| eq(a, c)) {
                    i += 1;
                }
                i += 1;
            }
            let flags = match (get, cond) {
                (true, _) => key_flags(&["RW", "access", "update"]),
                (false, true) => key_flags(&["RW", "update"]),
                _ => key_flags(&["OW", "update"]),
            };
            return vec![(1, flags)];
        }
        "delex" => {
            // Redis 8.4's `delexGetKeys`, likewise undocumented: DEL's
            // `RM delete` alone, `RW delete` when a condition reads the value.
            let flags = if argv.len() > 2 { key_flags(&["RW", "delete"]) } else { key_flags(&["RM", "delete"]) };
            return vec![(1, flags)];
        }
        "bitfield" => {
            let mut readonly = true;
            let mut i = 2;
            while i < argv.len() {
                let rem = argv.len() - i - 1;
                if eq(&argv[i], "get") && rem >= 2 {
                    i += 2;
                } else if eq(&argv[i], "overflow") && rem >= 1 {
                    i += 1;
                } else {
                    readonly = false;
                    break;
                }
                i += 1;
            }
            let flags = if readonly { key_flags(&["RO", "access"]) } else { key_flags(&["RW", "access", "update"]) };
            return vec![(1, flags)];
        }
        "migrate" => {
            return migrate_keys(argv).into_iter().map(|p| (p, key_flags(&["RW", "access", "delete"]))).collect()
        }
        "sort" | "sort_ro" => {
            let keys = if c.fullname == "sort" { super::sort::sort_keys(argv) } else { vec![1] };
            return keys
                .into_iter()
                .map(|p| (p, if p == 1 { key_flags(&["RO", "access"]) } else { key_flags(&["OW", "update"]) }))
                .collect();
        }
        _ => {}
    }
    let Some(meta) = super::meta::get(&c.fullname) else {
        // The 7.2 commands rlockd adds: positions from the table.
        return table_keys(c, argv).into_iter().map(|p| (p, Reply::Set(Vec::new()))).collect();
    };
    let mut out = Vec::new();
    for spec in &meta.keys {
        let Some(found) = spec_keys(spec, argv) else { return Vec::new() };
        out.extend(found.into_iter().map(|p| (p, spec.flags.clone())));
    }
    out
}

/// Redis's `migrateGetKeys`: the key argument, or what follows `KEYS`
/// (then the key argument must be empty), skipping the options' values.
fn migrate_keys(argv: &[Bytes]) -> Vec<usize> {
    let mut i = 6;
    while i < argv.len() {
        if eq(&argv[i], "keys") {
            if !argv[3].is_empty() {
                return Vec::new();
            }
            return (i + 1..argv.len()).collect();
        }
        if eq(&argv[i], "auth") {
            i += 1;
        } else if eq(&argv[i], "auth2") {
            i += 2;
        }
        i += 1;
    }
    vec![3]
}

/// Redis's `getKeysUsingKeySpecs` for one spec; None for a spec it cannot
/// evaluate (or arguments that do not fit it).
fn spec_keys(spec: &KeySpec, argv: &[Bytes]) -> Option<Vec<usize>> {
    let argc = argv.len() as i64;
    let mut first = match &spec.begin {
        BeginSearch::Index(i) => *i,
        BeginSearch::Keyword { keyword, startfrom } => {
            let from = *startfrom;
            let start = if from > 0 { from } else { argc + from };
            let end = if from > 0 { argc - 1 } else { 0 };
            let mut i = start;
            let mut found = 0;
            loop {
                if i >= argc || i < 1 {
                    break;
                }
                if argv[i as usize].eq_ignore_ascii_case(keyword) {
                    found = i + 1;
                    break;
                }
                if i == end {
                    break;
                }
                i = if start <= end { i + 1 } else { i - 1 };
            }
            if found == 0 {
                return Some(Vec::new());
            }
            found
        }
        BeginSearch::Unknown => return None,
    };
    let (last, step) = match spec.find {
        FindKeys::Range { lastkey, keystep, limit } => {
            let last = if lastkey >= 0 {
                first + lastkey
            } else if limit == 0 {
                argc + lastkey
            } else {
                first + ((argc - first) / limit + lastkey)
            };
            (last, keystep)
        }
        FindKeys::Keynum { keynumidx, firstkey, keystep } => {
            if keynumidx >= argc - first {
                return None;
            }
            let n = crate::num::parse_i64_strict(&argv[(first + keynumidx) as usize]).filter(|n| *n >= 0)?;
            first += firstkey;
            // `n` keys, `keystep` apart (every keynum spec of 7.0 and 8.2
            // steps by 1; 8.4's MSETEX steps over its values by 2).
            (first + (n - 1) * keystep.max(1), keystep)
        }
        FindKeys::Unknown => return None,
    };
    if last >= argc || last < first || first >= argc {
        return if last == first - 1 { Some(Vec::new()) } else { None };
    }
    Some((first..=last).step_by(step.max(1) as usize).map(|i| i as usize).collect())
}

/// Key positions from the table's first/last/step (the commands Redis 7.0
/// has no key specs for: rlockd's 7.2 additions).
fn table_keys(c: &Command, argv: &[Bytes]) -> Vec<usize> {
    let (first, last, step) = (c.spec.first_key, c.spec.last_key, c.spec.step);
    if first <= 0 {
        return Vec::new();
    }
    let last = if last < 0 { argv.len() as i32 + last } else { last };
    (first..=last).step_by(step.max(1) as usize).map(|i| i as usize).filter(|i| *i < argv.len()).collect()
}

fn command_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(help_reply("COMMAND", super::help::COMMAND_HELP))
}
