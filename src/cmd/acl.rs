//! `ACL`: the user store of [`crate::acl`] as commands show and change it.
//! The permission check itself is [`super::access`]'s.

use bytes::Bytes;

use super::access::user_check;
use super::help::{help_reply, subcommand_syntax};
use super::util::eq;
use super::{cmd, container, table, CommandSpec, Ctx, Lookup};
use crate::acl::{Denied, CATEGORIES};
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;

pub static COMMANDS: &[CommandSpec] = &[cmd("acl", container, -2, "", 0, 0, 0, "@slow")
    .subs(ACL_SUBS)
    .doc("A container for Access List Control commands", "6.0.0")];

static ACL_SUBS: &[CommandSpec] = &[
    cmd("cat", acl_cat, -2, "noscript loading stale", 0, 0, 0, "@slow")
        .doc("List the ACL categories or the commands inside a category", "6.0.0"),
    cmd("deluser", acl_deluser, -3, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Remove the specified ACL users and the associated rules", "6.0.0"),
    cmd("dryrun", acl_dryrun, -4, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Returns whether the user can execute the given command without executing the command.", "7.0.0"),
    cmd("genpass", acl_genpass, -2, "noscript loading stale", 0, 0, 0, "@slow")
        .doc("Generate a pseudorandom secure password to use for ACL users", "6.0.0"),
    cmd("getuser", acl_getuser, 3, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Get the rules for a specific ACL user", "6.0.0"),
    cmd("help", acl_help, 2, "loading stale", 0, 0, 0, "@slow")
        .doc("Show helpful text about the different subcommands", "6.0.0"),
    cmd("list", acl_list, 2, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("List the current ACL rules in ACL config file format", "6.0.0"),
    cmd("load", acl_load_save, 2, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Reload the ACLs from the configured ACL file", "6.0.0"),
    cmd("log", acl_log, -2, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("List latest events denied because of ACLs in place", "6.0.0"),
    cmd("save", acl_load_save, 2, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Save the current ACL rules in the configured ACL file", "6.0.0"),
    cmd("setuser", acl_setuser, -3, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Modify or create the rules for a specific ACL user", "6.0.0"),
    cmd("users", acl_users, 2, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("List the username of all the configured ACL rules", "6.0.0"),
    cmd("whoami", acl_whoami, 2, "noscript loading stale", 0, 0, 0, "@slow")
        .doc("Return the name of the user associated to the current connection", "6.0.0"),
];

fn acl_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(help_reply(
        ctx.core.profile(),
        "ACL",
        &[
            "CAT [<category>]",
            "    List all commands that belong to <category>, or all command categories",
            "    when no category is specified.",
            "DELUSER <username> [<username> ...]",
            "    Delete a list of users.",
            "DRYRUN <username> <command> [<arg> ...]",
            "    Returns whether the user can execute the given command without executing the command.",
            "GETUSER <username>",
            "    Get the user's details.",
            "GENPASS [<bits>]",
            "    Generate a secure 256-bit user password. The optional `bits` argument can",
            "    be used to specify a different size.",
            "LIST",
            "    Show users details in config file format.",
            "LOAD",
            "    Reload users from the ACL file.",
            "LOG [<count> | RESET]",
            "    Show the ACL log entries.",
            "SAVE",
            "    Save the current config to the ACL file.",
            "SETUSER <username> <attribute> [<attribute> ...]",
            "    Create or modify a user with the specified attributes.",
            "USERS",
            "    List all the registered usernames.",
            "WHOAMI",
            "    Return the current connection username.",
        ],
    ))
}

fn acl_whoami(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::Bulk(ctx.client.user.clone()))
}

fn acl_users(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::Array(ctx.core.acl.users.keys().map(|u| Reply::Bulk(u.clone())).collect()))
}

fn acl_list(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let cat = &*ctx.core.catalog.clone();
    Ok(Reply::Array(
        ctx.core
            .acl
            .users
            .iter()
            .map(|(name, u)| {
                let mut line = b"user ".to_vec();
                line.extend_from_slice(name);
                line.push(b' ');
                line.extend_from_slice(u.describe(cat).as_bytes());
                Reply::Bulk(Bytes::from(line))
            })
            .collect(),
    ))
}

fn acl_getuser(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let Some(u) = ctx.core.acl.users.get(&args[2][..]) else {
        return Ok(Reply::Nil);
    };
    let cat = &*ctx.core.catalog.clone();
    let bulk = |s: String| Reply::Bulk(Bytes::from(s));
    let parts = |(c, k, ch): (String, String, String)| {
        vec![
            (Reply::bulk_str("commands"), bulk(c)),
            (Reply::bulk_str("keys"), bulk(k)),
            (Reply::bulk_str("channels"), bulk(ch)),
        ]
    };
    let mut out = vec![
        (Reply::bulk_str("flags"), Reply::Set(u.flags().into_iter().map(Reply::bulk_str).collect())),
        (Reply::bulk_str("passwords"), Reply::Array(u.passwords.iter().map(|h| bulk(h.clone())).collect())),
    ];
    out.extend(u.selector_parts(cat, true).into_iter().flat_map(parts));
    let selectors = u.selector_parts(cat, false).into_iter().map(|p| Reply::Map(parts(p))).collect();
    out.push((Reply::bulk_str("selectors"), Reply::Array(selectors)));
    Ok(Reply::Map(out))
}

fn acl_cat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    match args.len() {
        2 => Ok(Reply::Array(CATEGORIES.iter().map(|c| Reply::bulk_str(c)).collect())),
        3 => {
            let name = String::from_utf8_lossy(&args[2]).to_ascii_lowercase();
            if !CATEGORIES.contains(&name.as_str()) {
                return Err(CmdError::echo("ERR Unknown category '", &args[2], "'"));
            }
            let tag = format!("@{name}");
            let t = table();
            let mut out = Vec::new();
            // A container is listed by its own categories, then its
            // subcommands by theirs, as Redis's `aclCatWithFlags` walks them.
            let profile = ctx.core.profile();
            for c in t.listed(profile) {
                for c in std::iter::once(c).chain(c.subcommands.values()) {
                    if c.answers_in(&profile) && c.spec.acl_in(profile).split_whitespace().any(|a| a == tag) {
                        out.push(Reply::Bulk(Bytes::from(c.fullname.clone())));
                    }
                }
            }
            Ok(Reply::Array(out))
        }
        _ => Err(subcommand_syntax(args)),
    }
}

fn acl_genpass(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    use rand::Rng;
    let bits = match args.get(2) {
        None => 256,
        Some(a) => match crate::num::parse_int(a) {
            Ok(n) if (1..=4096).contains(&n) => n,
            _ => {
                return Err(CmdError::custom(
                    "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096",
                ))
            }
        },
    };
    let chars = (bits as usize).div_ceil(4);
    let mut rng = rand::rng();
    let hex: String = (0..chars).map(|_| char::from_digit(rng.random_range(0..16), 16).expect("hex digit")).collect();
    Ok(Reply::Bulk(Bytes::from(hex)))
}

fn acl_log(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() > 3 {
        return Err(subcommand_syntax(args));
    }
    let count = match args.get(2) {
        None => 10,
        Some(a) if eq(a, "reset") => {
            ctx.core.acl.log.clear();
            return Ok(Reply::ok());
        }
        Some(a) => crate::num::parse_int(a)?.max(0) as usize,
    };
    let now = ctx.shared.clock.now_ms();
    let entries = ctx.core.acl.log.iter().take(count).map(|e| {
        Reply::Map(vec![
            (Reply::bulk_str("count"), Reply::Int(e.count as i64)),
            (Reply::bulk_str("reason"), Reply::bulk_str(e.reason)),
            (Reply::bulk_str("context"), Reply::bulk_str(e.context)),
            (Reply::bulk_str("object"), Reply::Bulk(e.object.clone())),
            (Reply::bulk_str("username"), Reply::Bulk(e.username.clone())),
            (Reply::bulk_str("age-seconds"), Reply::Double(now.saturating_sub(e.time_ms) as f64 / 1000.0)),
            (Reply::bulk_str("client-info"), Reply::Bulk(Bytes::from(e.client_info.clone()))),
        ])
    });
    Ok(Reply::Array(entries.collect()))
}

/// Kills (or, for the caller, closes after the reply) the connections
/// authenticated as `user` that `keep` does not keep.
fn disconnect(ctx: &mut Ctx<'_>, user: &[u8], keep: impl Fn(&Ctx<'_>, u64) -> bool) {
    let targets: Vec<_> = ctx.core.clients.values().filter(|r| r.user[..] == *user).map(|r| r.shared.clone()).collect();
    for c in targets {
        if keep(ctx, c.id) {
            continue;
        }
        if c.id == ctx.client.id {
            ctx.client.close = true;
        } else {
            c.kill();
        }
    }
}

fn acl_deluser(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args[2..].iter().any(|u| &u[..] == b"default") {
        return Err(CmdError::custom("ERR The 'default' user cannot be removed"));
    }
    let mut n = 0;
    for name in &args[2..] {
        if ctx.core.acl.users.remove(&name[..]).is_some() {
            n += 1;
            disconnect(ctx, name, |_, _| false);
        }
    }
    ctx.core.acl.refresh();
    Ok(Reply::Int(n))
}

/// `SETUSER`'s arguments with a selector written over several of them
/// (`(~k*` `+get)`) joined into one.
fn merge_selectors(args: &[Bytes]) -> Result<Vec<Bytes>, CmdError> {
    let mut out = Vec::new();
    let mut open: Option<Vec<u8>> = None;
    for a in args {
        match open.as_mut() {
            Some(sel) => {
                sel.push(b' ');
                sel.extend_from_slice(a);
                if a.last() == Some(&b')') {
                    out.push(Bytes::from(open.take().unwrap_or_default()));
                }
            }
            None if a.first() == Some(&b'(') && a.last() != Some(&b')') => open = Some(a.to_vec()),
            None => out.push(a.clone()),
        }
    }
    if let Some(sel) = open {
        let first = sel.split(|&b| b == b' ').next().unwrap_or_default().to_vec();
        return Err(CmdError::echo("ERR Unmatched parenthesis in acl selector starting at '", &first, "'."));
    }
    Ok(out)
}

fn acl_setuser(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let cat = &*ctx.core.catalog.clone();
    let name = args[2].clone();
    if name.iter().any(|&b| b == b' ' || b == 0) {
        return Err(CmdError::custom("ERR Usernames can't contain spaces or null characters"));
    }
    let allchannels = ctx.core.config.acl_pubsub_allchannels;
    let mut user = match ctx.core.acl.users.get(&name[..]) {
        Some(u) => u.clone(),
        None => ctx.core.acl.new_user(cat, allchannels),
    };
    for rule in merge_selectors(&args[3..])? {
        if let Err(why) = user.apply(&rule, cat, allchannels) {
            let mut msg = b"ERR Error in ACL SETUSER modifier '".to_vec();
            msg.extend_from_slice(&rule);
            msg.extend_from_slice(b"': ");
            msg.extend_from_slice(why.as_bytes());
            return Err(CmdError::Raw(Bytes::from(msg)));
        }
    }
    ctx.core.acl.users.insert(name.clone(), user);
    ctx.core.acl.refresh();
    // Subscribers whose channels the user may no longer use are dropped.
    disconnect(ctx, &name, |ctx, id| {
        use crate::pubsub::Kind;
        let ps = &ctx.core.pubsub;
        let mut subs: Vec<(Bytes, bool)> = Vec::new();
        for (kind, pattern) in [(Kind::Channel, false), (Kind::Pattern, true), (Kind::Shard, false)] {
            subs.extend(ps.subscriptions_of(id, kind).into_iter().map(|c| (c, pattern)));
        }
        ctx.core.acl.users.get(&name[..]).is_some_and(|u| u.channels_ok(&subs))
    });
    Ok(Reply::ok())
}

fn acl_dryrun(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let Some(user) = ctx.core.acl.users.get(&args[2][..]) else {
        return Err(CmdError::echo("ERR User '", &args[2], "' not found"));
    };
    let argv = &args[3..];
    let c = match super::lookup(ctx.core, argv) {
        Lookup::Found(c) => c,
        _ => return Err(CmdError::echo("ERR Command '", &argv[0], "' not found")),
    };
    if !super::arity_ok(c.spec.arity, argv.len()) {
        return Err(CmdError::WrongArity(c.fullname.clone()));
    }
    // Redis 7.2 names the user where 7.0 says "This user".
    let who = match ctx.core.profile().at_least(7, 2, 0) {
        true => [b"User ", &args[2][..]].concat(),
        false => b"This user".to_vec(),
    };
    let text = match user_check(user, c, argv) {
        Ok(()) => return Ok(Reply::ok()),
        Err(Denied::Command) => {
            [&who[..], format!(" has no permissions to run the '{}' command", c.fullname).as_bytes()].concat()
        }
        Err(Denied::Key(p)) => [&who[..], b" has no permissions to access the '", &argv[p][..], b"' key"].concat(),
        Err(Denied::Channel(p)) => {
            [&who[..], b" has no permissions to access the '", &argv[p][..], b"' channel"].concat()
        }
    };
    Ok(Reply::Bulk(Bytes::from(text)))
}

fn acl_load_save(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    if ctx.core.profile().is_valkey() {
        // Valkey's words leave out "Redis".
        return Err(CmdError::custom("ERR This instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a configuration file set) in order to store users in the configuration."));
    }
    Err(CmdError::custom("ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."))
}
