//! What a module-less Redis answers to its module and `FAILOVER` commands,
//! with Redis's errors.

use bytes::Bytes;

use super::util::eq;
use super::{cmd, container, CommandSpec, Ctx};
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;

pub static COMMANDS: &[CommandSpec] = &[
    cmd("failover", failover, -1, "admin noscript stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Start a coordinated failover between this server and one of its replicas.", "6.2.0"),
    cmd("module", container, -2, "", 0, 0, 0, "@slow")
        .subs(MODULE_SUBS)
        .doc("A container for module commands", "4.0.0"),
];

static MODULE_SUBS: &[CommandSpec] = &[
    cmd("help", module_help, 2, "loading stale", 0, 0, 0, "@slow")
        .doc("Show helpful text about the different subcommands", "5.0.0"),
    cmd("list", module_list, 2, "admin noscript", 0, 0, 0, "@admin @slow @dangerous")
        .doc("List all modules loaded by the server", "4.0.0"),
    cmd("load", module_refused, -3, "admin noscript no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Load a module", "4.0.0"),
    cmd("loadex", module_refused, -3, "admin noscript no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Load a module with extended parameters", "7.0.0"),
    cmd("unload", module_refused, 3, "admin noscript no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Unload a module", "4.0.0"),
];

/// `FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms]` with no replicas.
fn failover(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (mut abort, mut timeout, mut to, mut force) = (false, false, false, false);
    let mut j = 1;
    while j < args.len() {
        if eq(&args[j], "abort") && !abort {
            abort = true;
        } else if eq(&args[j], "timeout") && j + 1 < args.len() && !timeout {
            if crate::num::parse_int(&args[j + 1])? <= 0 {
                return Err(CmdError::custom("ERR FAILOVER timeout must be greater than 0"));
            }
            timeout = true;
            j += 1;
        } else if eq(&args[j], "to") && j + 2 < args.len() && !to {
            crate::num::parse_int(&args[j + 2])?;
            to = true;
            j += 2;
        } else if eq(&args[j], "force") && !force {
            force = true;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    if abort {
        return Err(CmdError::custom("ERR No failover in progress."));
    }
    Err(CmdError::custom("ERR FAILOVER requires connected replicas."))
}

fn module_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(super::help::help_reply(
        ctx.core.profile(),
        "MODULE",
        &[
            "LIST",
            "    Return a list of loaded modules.",
            "LOAD <path> [<arg> ...]",
            "    Load a module library from <path>, passing to it any optional arguments.",
            "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
            "    Load a module library from <path>, while passing it module configurations and optional arguments.",
            "UNLOAD <name>",
            "    Unload a module.",
        ],
    ))
}

fn module_list(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::Array(Vec::new()))
}

/// Redis's answer with `enable-module-command no` (its default).
fn module_refused(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Err(CmdError::custom("ERR MODULE command not allowed. If the enable-module-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."))
}
