//! `ACL`, for a server whose only user is `default` (its password is
//! `requirepass`): the read-only subcommands answer as Redis 7.0 does for
//! that configuration; creating other users is refused with a clear error.

use bytes::Bytes;
use sha2::{Digest, Sha256};

use super::scripting::{help, subcommand_syntax};
use super::util::eq;
use super::{cmd, container, table, CommandSpec, Ctx, Lookup};
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

/// Redis's categories, in `ACL CAT`'s order.
const CATEGORIES: &[&str] = &[
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

fn acl_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(help(
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

fn acl_whoami(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::bulk_str("default"))
}

fn acl_users(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::Array(vec![Reply::bulk_str("default")]))
}

/// The default user's password as ACL shows it: the SHA-256 of `requirepass`.
fn password_hash(ctx: &Ctx<'_>) -> Option<String> {
    let pass = ctx.core.config.requirepass.as_ref()?;
    Some(Sha256::digest(pass).iter().map(|b| format!("{b:02x}")).collect())
}

fn acl_list(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let pass = password_hash(ctx).map_or_else(|| "nopass".to_string(), |h| format!("#{h}"));
    Ok(Reply::Array(vec![Reply::Bulk(Bytes::from(format!("user default on {pass} ~* &* +@all")))]))
}

fn acl_getuser(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if &args[2][..] != b"default" {
        return Ok(Reply::Nil);
    }
    let hash = password_hash(ctx);
    let flags = if hash.is_some() { vec!["on"] } else { vec!["on", "nopass"] };
    Ok(Reply::Map(vec![
        (Reply::bulk_str("flags"), Reply::Set(flags.into_iter().map(Reply::bulk_str).collect())),
        (Reply::bulk_str("passwords"), Reply::Array(hash.into_iter().map(|h| Reply::Bulk(Bytes::from(h))).collect())),
        (Reply::bulk_str("commands"), Reply::bulk_str("+@all")),
        (Reply::bulk_str("keys"), Reply::bulk_str("~*")),
        (Reply::bulk_str("channels"), Reply::bulk_str("&*")),
        (Reply::bulk_str("selectors"), Reply::Array(Vec::new())),
    ]))
}

fn acl_cat(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
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
            for c in t.commands.values() {
                if c.subcommands.is_empty() {
                    if c.spec.acl.split_whitespace().any(|a| a == tag) {
                        out.push(Reply::Bulk(Bytes::from(c.fullname.clone())));
                    }
                } else {
                    for s in c.subcommands.values() {
                        if s.spec.acl.split_whitespace().any(|a| a == tag) {
                            out.push(Reply::Bulk(Bytes::from(s.fullname.clone())));
                        }
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

fn acl_log(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    match args.get(2) {
        None => Ok(Reply::Array(Vec::new())),
        Some(a) if eq(a, "reset") => Ok(Reply::ok()),
        Some(a) => {
            crate::num::parse_int(a)?;
            Ok(Reply::Array(Vec::new()))
        }
    }
}

fn acl_deluser(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args[2..].iter().any(|u| &u[..] == b"default") {
        return Err(CmdError::custom("ERR The 'default' user cannot be removed"));
    }
    Ok(Reply::Int(0))
}

fn acl_setuser(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Err(CmdError::custom(
        "ERR ACL SETUSER is not supported by rlockd: its only user is 'default' (set its password with CONFIG SET requirepass)",
    ))
}

fn acl_dryrun(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if &args[2][..] != b"default" {
        return Err(CmdError::echo("ERR User '", &args[2], "' not found"));
    }
    let argv = &args[3..];
    let c = match table().lookup(argv) {
        Lookup::Found(c) => c,
        _ => return Err(CmdError::echo("ERR Command '", &argv[0], "' not found")),
    };
    if !super::arity_ok(c.spec.arity, argv.len()) {
        return Err(CmdError::WrongArity(c.fullname.clone()));
    }
    Ok(Reply::ok())
}

fn acl_load_save(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Err(CmdError::custom("ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."))
}
