//! The permission check of dispatch: the command side of the user store in
//! [`crate::acl`] — the [`Catalog`] of the command table it is given, the
//! key and channel positions a check needs, the `NOPERM` replies, the
//! `ACL LOG` entries, and `AUTH`. Used by dispatch (top level), `EXEC`
//! (each queued command) and scripts (each `redis.call`).
//!
//! A check is the command's bit, then its keys from
//! `command::key_access` (the key specs `COMMAND GETKEYS` uses: `access`
//! needs read permission, `insert`/`update`/`delete` write), then the
//! channels of the commands flagged `channel_arg`, `channel_args` or
//! `pattern_args`. Dispatch runs it after NOAUTH and the no-multi check, as
//! Redis's `processCommand` does; `EXEC` runs it again per queued command,
//! a script per `redis.call` (after the `noscript` check). Refusals are
//! logged with context `toplevel`, `multi` or `lua`.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;

use super::{flags, table, Command, Ctx};
use crate::acl::{category_index, Catalog, CatalogCommand, Denied, LogEntry, Request, User};
use crate::error::CmdError;
use crate::version::Profile;

/// The command table as the ACL sees it under `profile`: the commands and
/// subcommands that answer in it, so that a category holds the commands
/// of the version served, and its rules print as that version's server
/// prints them (`ACL LIST`). The default profile's is built once per
/// process (every server starts with it); another profile's when a server
/// takes it (`Core::config_changed`).
pub(crate) fn catalog(profile: Profile) -> Arc<Catalog> {
    static DEFAULT: OnceLock<Arc<Catalog>> = OnceLock::new();
    if profile == Profile::default() {
        return DEFAULT.get_or_init(|| Arc::new(build_catalog(profile))).clone();
    }
    Arc::new(build_catalog(profile))
}

fn build_catalog(profile: Profile) -> Catalog {
    let t = table();
    let cats = |acl: &str| {
        acl.split_whitespace()
            .filter_map(|c| c.strip_prefix('@').and_then(category_index))
            .fold(0u32, |a, i| a | (1 << i))
    };
    let mut commands: Vec<CatalogCommand> = t
        .commands
        .values()
        .filter(|c| c.answers_in(&profile))
        .map(|c| {
            let mut subs: Vec<(usize, String, u32)> = c
                .subcommands
                .values()
                .filter(|s| s.answers_in(&profile))
                .map(|s| (s.id, s.spec.name.to_string(), cats(s.spec.acl_in(profile))))
                .collect();
            subs.sort_by_key(|s| s.0);
            CatalogCommand { id: c.id, name: c.spec.name.to_string(), categories: cats(c.spec.acl_in(profile)), subs }
        })
        .collect();
    commands.sort_by_key(|c| c.id);
    Catalog { profile, len: t.len(), commands }
}

/// Channel positions of a command line, and whether each is a pattern.
fn channels(cmd: &Command, argv: &[Bytes]) -> Vec<(usize, bool)> {
    if cmd.has(flags::CHANNEL_ARG) {
        vec![(1, false)]
    } else if cmd.has(flags::CHANNEL_ARGS) || cmd.has(flags::PATTERN_ARGS) {
        (1..argv.len()).map(|i| (i, cmd.has(flags::PATTERN_ARGS))).collect()
    } else {
        Vec::new()
    }
}

/// Whether `user` may run `argv` (resolved to `cmd`).
pub(crate) fn user_check(user: &User, cmd: &Command, argv: &[Bytes]) -> Result<(), Denied> {
    let keys = || super::command::key_access(cmd, argv);
    let chans = || channels(cmd, argv);
    user.check(&Request { id: cmd.id, argv, no_auth: cmd.has(flags::NO_AUTH), keys: &keys, channels: &chans })
}

/// Redis's `ACLCheckAllPerm` for the calling client's user (a user deleted
/// under a connection may run nothing).
pub(crate) fn check(ctx: &Ctx<'_>, cmd: &Command, argv: &[Bytes]) -> Result<(), Denied> {
    check_as(ctx.core, &ctx.client.user, cmd, argv)
}

/// [`check`] for user `user`.
pub(crate) fn check_as(core: &crate::core::Core, user: &[u8], cmd: &Command, argv: &[Bytes]) -> Result<(), Denied> {
    match core.acl.users.get(user) {
        Some(user) => user_check(user, cmd, argv),
        None => Err(Denied::Command),
    }
}

/// The `NOPERM` error of a refusal, after logging it; `context` is
/// `toplevel`, `multi` or `lua`.
pub(crate) fn refuse(ctx: &mut Ctx<'_>, cmd: &Command, argv: &[Bytes], d: Denied, context: &'static str) -> CmdError {
    let (reason, object) = match d {
        Denied::Command => ("command", Bytes::from(cmd.fullname.clone())),
        Denied::Key(p) => ("key", argv[p].clone()),
        Denied::Channel(p) => ("channel", argv[p].clone()),
    };
    let user = ctx.client.user.clone();
    log(ctx, reason, context, object, user);
    if ctx.core.profile().at_least(7, 2, 0) {
        return CmdError::custom(format!("NOPERM {}", denial_text(ctx, cmd, d)));
    }
    match d {
        Denied::Command => {
            CmdError::custom(format!("NOPERM this user has no permissions to run the '{}' command", cmd.fullname))
        }
        Denied::Key(_) => {
            CmdError::custom("NOPERM this user has no permissions to access one of the keys used as arguments")
        }
        Denied::Channel(_) => {
            CmdError::custom("NOPERM this user has no permissions to access one of the channels used as arguments")
        }
    }
}

/// Redis 7.2's words for a refusal (its `getAclErrorMessage`), for the
/// calling client's user.
fn denial_text(ctx: &Ctx<'_>, cmd: &Command, d: Denied) -> String {
    match d {
        Denied::Command => format!(
            "User {} has no permissions to run the '{}' command",
            String::from_utf8_lossy(&ctx.client.user),
            cmd.fullname
        ),
        Denied::Key(_) => "No permissions to access a key".into(),
        Denied::Channel(_) => "No permissions to access a channel".into(),
    }
}

/// `EXEC`'s check of each queued command (the user's rules may have
/// changed since it was queued): the error standing for its reply, if any.
pub(crate) fn check_in_exec(ctx: &mut Ctx<'_>, cmd: &Command, argv: &[Bytes]) -> Option<CmdError> {
    if ctx.core.acl.open {
        return None;
    }
    let d = check(ctx, cmd, argv).err()?;
    refuse(ctx, cmd, argv, d, "multi");
    let reason = match d {
        Denied::Command => "no permission to execute the command or subcommand",
        Denied::Key(_) => "no permission to touch the specified keys",
        Denied::Channel(_) => "no permission to access one of the channels used as arguments",
    };
    Some(CmdError::custom(format!("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {reason}")))
}

/// A script's refusal, in Redis's words (raised as `ERR …`).
pub(crate) fn script_denial(ctx: &Ctx<'_>, cmd: &Command, d: Denied) -> String {
    if ctx.core.profile().at_least(7, 2, 0) {
        return format!("ACL failure in script: {}", denial_text(ctx, cmd, d));
    }
    let text = match d {
        Denied::Command => "The user executing the script can't run this command or subcommand",
        Denied::Key(_) => {
            "The user executing the script can't access at least one of the keys mentioned in the command arguments"
        }
        Denied::Channel(_) => "The user executing the script can't publish to the channel mentioned in the command",
    };
    text.into()
}

fn log(ctx: &mut Ctx<'_>, reason: &'static str, context: &'static str, object: Bytes, username: Bytes) {
    let now = ctx.shared.clock.now_ms();
    let client_info = super::session::info_line_of(ctx, now);
    let max = ctx.core.config.acllog_max_len;
    let entry = LogEntry { count: 1, reason, context, object, username, time_ms: now, client_info };
    ctx.core.acl.log_event(entry, max);
}

/// `AUTH`/`HELLO AUTH`: on success the client runs as `user` from now on;
/// a failure is logged.
pub(crate) fn authenticate(ctx: &mut Ctx<'_>, user: &Bytes, pass: &[u8]) -> bool {
    if !ctx.core.acl.users.get(&user[..]).is_some_and(|u| u.password_ok(pass)) {
        log(ctx, "auth", "toplevel", Bytes::from_static(b"AUTH"), user.clone());
        return false;
    }
    ctx.client.authenticated = true;
    super::session::set_user(ctx, user.clone());
    true
}
