//! `CLIENT` and its subcommands.

use bytes::Bytes;

use super::session::{info_line_of, last_cmd_name, lib_fields, tracking_off, valid_client_name};
use super::util::{eq, info_text, int};
use super::{cmd, container, CommandSpec, Ctx};
use crate::client::ReplyMode;
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;

pub static COMMANDS: &[CommandSpec] = &[cmd("client", container, -2, "", 0, 0, 0, "@slow")
    .hidden_flags("keeps_caching")
    .subs(CLIENT_SUBS)
    .doc("A container for client connection commands", "2.4.0")];

static CLIENT_SUBS: &[CommandSpec] = &[
    cmd("caching", client_caching, 3, "noscript loading stale", 0, 0, 0, "@slow @connection")
        .doc("Instruct the server about tracking or not keys in the next request", "6.0.0"),
    cmd("capa", client_capa, -3, "noscript loading stale", 0, 0, 0, "@slow @connection")
        .valkey_only("A client claims its capability.", "8.0.0"),
    cmd("getname", client_getname, 2, "noscript loading stale", 0, 0, 0, "@slow @connection")
        .doc("Get the current connection name", "2.6.9"),
    cmd("getredir", client_getredir, 2, "noscript loading stale", 0, 0, 0, "@slow @connection")
        .doc("Get tracking notifications redirection client ID if any", "6.0.0"),
    cmd("help", client_help, 2, "loading stale", 0, 0, 0, "@slow @connection")
        .doc("Show helpful text about the different subcommands", "5.0.0"),
    cmd("id", client_id, 2, "noscript loading stale", 0, 0, 0, "@slow @connection")
        .doc("Returns the client ID for the current connection", "5.0.0"),
    cmd("import-source", client_import_source, 3, "noscript loading stale", 0, 0, 0, "@slow @connection")
        .valkey_only("Mark this client as an import source when server is in import mode.", "8.1.0"),
    cmd("info", client_info, 2, "noscript loading stale", 0, 0, 0, "@slow @connection")
        .doc("Returns information about the current client connection.", "6.2.0"),
    cmd("kill", client_kill, -3, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous @connection")
        .doc("Kill the connection of a client", "2.4.0"),
    cmd("list", client_list, -2, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous @connection")
        .doc("Get the list of client connections", "2.4.0"),
    cmd("no-touch", client_no_touch, 3, "noscript loading stale", 0, 0, 0, "@slow @connection")
        .doc("Controls whether commands sent by the client will alter the LRU/LFU of the keys they access.", "7.2.0"),
    cmd("setinfo", client_setinfo, 4, "noscript loading stale", 0, 0, 0, "@slow @connection")
        .doc("Sets information specific to the client or connection.", "7.2.0"),
    cmd("no-evict", client_no_evict, 3, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous @connection")
        .doc("Set client eviction mode for the current connection", "7.0.0"),
    cmd("pause", client_pause, -3, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous @connection")
        .hidden_flags("pause_exempt")
        .doc("Stop processing commands from clients for some time", "2.9.50"),
    cmd("reply", client_reply, 3, "noscript loading stale", 0, 0, 0, "@slow @connection")
        .doc("Instruct the server whether to reply to commands", "3.2.0"),
    cmd("setname", client_setname, 3, "noscript loading stale", 0, 0, 0, "@slow @connection")
        .doc("Set the current connection name", "2.6.9"),
    cmd("tracking", client_tracking, -3, "noscript loading stale", 0, 0, 0, "@slow @connection")
        .doc("Enable or disable server assisted client side caching support", "6.0.0"),
    cmd("trackinginfo", client_trackinginfo, 2, "noscript loading stale", 0, 0, 0, "@slow @connection")
        .doc("Return information about server assisted client side caching for the current connection", "6.2.0"),
    cmd("unblock", client_unblock, -3, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous @connection")
        .doc("Unblock a client blocked in a blocking command from a different connection", "5.0.0"),
    cmd("unpause", client_unpause, 2, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous @connection")
        .hidden_flags("pause_exempt")
        .doc("Resume processing of clients that were paused", "6.2.0"),
];

fn client_id(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::Int(ctx.client.id as i64))
}

fn client_getname(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let n = ctx.core.clients.get(&ctx.client.id).map(|r| r.name.clone()).unwrap_or_default();
    Ok(if n.is_empty() { Reply::Nil } else { Reply::Bulk(n) })
}

fn client_setname(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    valid_client_name(&args[2])?;
    if let Some(r) = ctx.core.client_record(ctx.client.id) {
        r.name = args[2].clone();
    }
    Ok(Reply::ok())
}

fn client_setinfo(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() != 4 {
        return Err(CmdError::WrongArity("client|setinfo".into()));
    }
    let lib_name = if eq(&args[2], "lib-name") {
        valid_client_name(&args[3])
            .map_err(|_| CmdError::custom("ERR lib-name cannot contain spaces, newlines or special characters."))?;
        true
    } else if eq(&args[2], "lib-ver") {
        valid_client_name(&args[3])
            .map_err(|_| CmdError::custom("ERR lib-ver cannot contain spaces, newlines or special characters."))?;
        false
    } else {
        return Err(CmdError::echo("ERR Unrecognized option '", &args[2], "'"));
    };
    if let Some(r) = ctx.core.client_record(ctx.client.id) {
        if lib_name {
            r.lib_name = args[3].clone();
        } else {
            r.lib_ver = args[3].clone();
        }
    }
    Ok(Reply::ok())
}

fn client_info(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let now = ctx.now_ms();
    let line = info_line_of(ctx, now);
    Ok(info_text(ctx, format!("{line}\n")))
}

/// A client's kind as `CLIENT LIST`/`KILL`'s `TYPE` names it (Redis's
/// `getClientType`: a replica's link first, then pub/sub).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Normal,
    Primary,
    Replica,
    PubSub,
}

impl Kind {
    fn parse(ctx: &Ctx<'_>, word: &Bytes) -> Result<Kind, CmdError> {
        let valkey = ctx.core.profile().is_valkey();
        match String::from_utf8_lossy(word).to_ascii_lowercase().as_str() {
            "normal" => Ok(Kind::Normal),
            "master" => Ok(Kind::Primary),
            "primary" if valkey => Ok(Kind::Primary),
            "replica" | "slave" => Ok(Kind::Replica),
            "pubsub" => Ok(Kind::PubSub),
            _ => Err(CmdError::echo("ERR Unknown client type '", word, "'")),
        }
    }

    fn of(c: &crate::client::ClientShared) -> Kind {
        if c.replica.load(std::sync::atomic::Ordering::Relaxed) {
            Kind::Replica
        } else if c.subscriptions() > 0 {
            Kind::PubSub
        } else {
            Kind::Normal
        }
    }
}

/// What `CLIENT LIST` and `CLIENT KILL <filter> <value> ...` select. Redis
/// parses the two differently (LIST takes one `TYPE` or one `ID` list; KILL
/// takes pairs, `MAXAGE` from 7.4); Valkey 8 parses both with one grammar
/// (every filter, `ID` with several ids). Matching is the same for all.
#[derive(Default)]
struct Filter {
    ids: Option<Vec<u64>>,
    addr: Option<Bytes>,
    laddr: Option<Bytes>,
    kind: Option<Kind>,
    user: Option<Bytes>,
    skipme: Option<bool>,
    maxage: Option<u64>,
}

impl Filter {
    /// Redis's `CLIENT LIST [TYPE t | ID id ...]`.
    fn redis_list(ctx: &Ctx<'_>, args: &[Bytes]) -> Result<Filter, CmdError> {
        let mut f = Filter::default();
        match args.get(2) {
            None => {}
            Some(k) if eq(k, "type") && args.len() == 4 => f.kind = Some(Kind::parse(ctx, &args[3])?),
            Some(k) if eq(k, "id") && args.len() >= 4 => {
                let ids = args[3..]
                    .iter()
                    .map(|a| int(a).map(|id| id as u64).map_err(|_| CmdError::custom("ERR Invalid client ID")))
                    .collect::<Result<_, _>>()?;
                f.ids = Some(ids);
            }
            Some(_) => return Err(CmdError::Syntax),
        }
        Ok(f)
    }

    /// Redis's `CLIENT KILL <filter> <value> ...` (pairs).
    fn redis_kill(ctx: &Ctx<'_>, args: &[Bytes]) -> Result<Filter, CmdError> {
        let mut f = Filter::default();
        for pair in args[2..].chunks(2) {
            let [k, v] = pair else { return Err(CmdError::Syntax) };
            if eq(k, "id") {
                let id = int(v).ok().filter(|x| *x > 0).ok_or_else(client_id_error)?;
                f.ids = Some(vec![id as u64]);
            } else if eq(k, "maxage") && ctx.core.profile().at_least(7, 4, 0) {
                f.maxage = Some(maxage(v)?);
            } else {
                f.common(ctx, k, v)?;
            }
        }
        Ok(f)
    }

    /// Valkey 8's one grammar for `CLIENT LIST` and `CLIENT KILL`: `ID`
    /// takes the integers that follow it.
    fn valkey(ctx: &Ctx<'_>, args: &[Bytes]) -> Result<Filter, CmdError> {
        let mut f = Filter::default();
        let mut i = 2;
        while i < args.len() {
            let k = &args[i];
            if i + 1 >= args.len() {
                return Err(CmdError::Syntax);
            }
            if eq(k, "id") {
                let mut ids = f.ids.take().unwrap_or_default();
                let first = ids.len();
                i += 1;
                while let Some(id) = args.get(i).and_then(|a| int(a).ok()) {
                    if id <= 0 {
                        return Err(client_id_error());
                    }
                    ids.push(id as u64);
                    i += 1;
                }
                if ids.len() == first {
                    return Err(CmdError::Syntax);
                }
                f.ids = Some(ids);
                continue;
            }
            let v = &args[i + 1];
            if eq(k, "maxage") {
                f.maxage = Some(maxage(v)?);
            } else {
                f.common(ctx, k, v)?;
            }
            i += 2;
        }
        Ok(f)
    }

    /// The filters both grammars spell the same way.
    fn common(&mut self, ctx: &Ctx<'_>, k: &Bytes, v: &Bytes) -> Result<(), CmdError> {
        if eq(k, "addr") {
            self.addr = Some(v.clone());
        } else if eq(k, "laddr") {
            self.laddr = Some(v.clone());
        } else if eq(k, "type") {
            self.kind = Some(Kind::parse(ctx, v)?);
        } else if eq(k, "user") {
            if !ctx.core.acl.users.contains_key(&v[..]) {
                return Err(CmdError::echo("ERR No such user '", v, "'"));
            }
            self.user = Some(v.clone());
        } else if eq(k, "skipme") {
            self.skipme = Some(if eq(v, "yes") {
                true
            } else if eq(v, "no") {
                false
            } else {
                return Err(CmdError::Syntax);
            });
        } else {
            return Err(CmdError::Syntax);
        }
        Ok(())
    }

    /// Whether a client passes every filter given (`skipme` aside).
    fn matches(&self, c: &crate::client::ClientShared, user: &[u8], now_ms: u64) -> bool {
        self.ids.as_ref().is_none_or(|ids| ids.contains(&c.id))
            && self.user.as_ref().is_none_or(|u| u[..] == *user)
            && self.addr.as_ref().is_none_or(|a| a[..] == *c.addr.to_string().as_bytes())
            && self.laddr.as_ref().is_none_or(|a| a[..] == *c.laddr.to_string().as_bytes())
            && self.kind.is_none_or(|k| k == Kind::of(c))
            && self.maxage.is_none_or(|m| now_ms.saturating_sub(c.created_ms) / 1000 >= m)
    }
}

fn client_id_error() -> CmdError {
    CmdError::custom("ERR client-id should be greater than 0")
}

fn maxage(v: &Bytes) -> Result<u64, CmdError> {
    let age = int(v).map_err(|_| CmdError::custom("ERR maxage is not an integer or out of range"))?;
    if age <= 0 {
        return Err(CmdError::custom("ERR maxage should be greater than 0"));
    }
    Ok(age as u64)
}

fn client_list(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let filter =
        if ctx.core.profile().is_valkey() { Filter::valkey(ctx, args)? } else { Filter::redis_list(ctx, args)? };
    let now = ctx.now_ms();
    let with_lib = lib_fields(ctx);
    let skip_self = filter.skipme == Some(true);
    let mut out = String::new();
    for (id, r) in &ctx.core.clients {
        let c = &r.shared;
        if !filter.matches(c, &r.user, now) || (skip_self && *id == ctx.client.id) {
            continue;
        }
        let current = if *id == ctx.client.id { ctx.client.current } else { None };
        out.push_str(&r.info_line(now, id + 7, last_cmd_name(c), current, with_lib));
        out.push('\n');
    }
    Ok(info_text(ctx, out))
}

fn client_kill(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let self_id = ctx.client.id;
    if args.len() == 3 {
        // Old form: CLIENT KILL addr:port
        let addr = String::from_utf8_lossy(&args[2]).to_string();
        let target = ctx.core.clients.values().find(|r| r.shared.addr.to_string() == addr).map(|r| r.shared.clone());
        return match target {
            Some(c) => {
                if c.id == self_id {
                    ctx.client.close = true;
                } else {
                    c.kill();
                }
                Ok(Reply::ok())
            }
            None => Err(CmdError::custom("ERR No such client")),
        };
    }
    let filter =
        if ctx.core.profile().is_valkey() { Filter::valkey(ctx, args)? } else { Filter::redis_kill(ctx, args)? };
    let skipme = filter.skipme.unwrap_or(true);
    let now = ctx.now_ms();
    let mut killed = 0;
    let victims: Vec<_> = ctx
        .core
        .clients
        .values()
        .filter(|r| filter.matches(&r.shared, &r.user, now))
        .map(|r| r.shared.clone())
        .collect();
    for c in victims {
        if c.id == self_id {
            if skipme {
                continue;
            }
            ctx.client.close = true;
        } else {
            c.kill();
        }
        killed += 1;
    }
    Ok(Reply::Int(killed))
}

fn client_pause(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let ms = int(&args[2]).map_err(|_| CmdError::TimeoutNotInteger)?;
    if ms < 0 {
        return Err(CmdError::NegativeTimeout);
    }
    super::blocking::check_deadline(ctx, ms)?;
    let writes_only = match args.get(3) {
        None => false,
        Some(a) if eq(a, "write") => true,
        Some(a) if eq(a, "all") => false,
        Some(_) => return Err(CmdError::custom("ERR CLIENT PAUSE mode must be WRITE or ALL")),
    };
    if args.len() > 4 {
        return Err(CmdError::Syntax);
    }
    let until = ctx.now_ms().saturating_add(ms as u64);
    ctx.shared.pause.set(until, writes_only);
    Ok(Reply::ok())
}

fn client_unpause(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    ctx.shared.pause.clear();
    Ok(Reply::ok())
}

fn on_off(a: &[u8]) -> Result<bool, CmdError> {
    if eq(a, "on") {
        Ok(true)
    } else if eq(a, "off") {
        Ok(false)
    } else {
        Err(CmdError::Syntax)
    }
}

fn client_no_evict(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    on_off(&args[2])?;
    Ok(Reply::ok())
}

/// Valkey's `CLIENT CAPA capability...`: a client claims what it can
/// handle (`redirect`: a replica may redirect it to its primary). Unknown
/// capabilities are ignored, as Valkey ignores them; rlockd never
/// redirects, so nothing is kept.
fn client_capa(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::ok())
}

/// Valkey 8.1's import source: only while `import-mode` is on, which
/// rlockd refuses to turn on (it has no import mode), so this answers as
/// Valkey does with import mode off.
fn client_import_source(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Err(CmdError::custom("ERR Server is not in import mode"))
}

fn client_no_touch(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    on_off(&args[2])?;
    Ok(Reply::ok())
}

/// `CLIENT TRACKING on|off [REDIRECT id] [PREFIX p]... [BCAST] [OPTIN]
/// [OPTOUT] [NOLOOP]`, with Redis's checks in Redis's order.
fn client_tracking(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut redirect = 0u64;
    let (mut bcast, mut optin, mut optout, mut noloop) = (false, false, false, false);
    let mut prefixes: Vec<Bytes> = Vec::new();
    let mut j = 3;
    while j < args.len() {
        let more = j + 1 < args.len();
        let a = &args[j];
        if eq(a, "redirect") && more {
            j += 1;
            if redirect != 0 {
                return Err(CmdError::custom("ERR A client can only redirect to a single other client"));
            }
            let id = int(&args[j])?;
            if id <= 0 || !ctx.core.clients.contains_key(&(id as u64)) {
                return Err(CmdError::custom("ERR The client ID you want redirect to does not exist"));
            }
            redirect = id as u64;
        } else if eq(a, "bcast") {
            bcast = true;
        } else if eq(a, "optin") {
            optin = true;
        } else if eq(a, "optout") {
            optout = true;
        } else if eq(a, "noloop") {
            noloop = true;
        } else if eq(a, "prefix") && more {
            j += 1;
            prefixes.push(args[j].clone());
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    if eq(&args[2], "off") {
        tracking_off(ctx);
        return Ok(Reply::ok());
    }
    if !eq(&args[2], "on") {
        return Err(CmdError::Syntax);
    }
    let id = ctx.client.id;
    let current = ctx.core.clients.get(&id).and_then(|r| r.tracking.clone());
    if !bcast && !prefixes.is_empty() {
        return Err(CmdError::custom("ERR PREFIX option requires BCAST mode to be enabled"));
    }
    if current.as_ref().is_some_and(|t| t.bcast != bcast) {
        return Err(CmdError::custom(
            "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.",
        ));
    }
    if bcast && (optin || optout) {
        return Err(CmdError::custom("ERR OPTIN and OPTOUT are not compatible with BCAST"));
    }
    if optin && optout {
        return Err(CmdError::custom("ERR You can't specify both OPTIN mode and OPTOUT mode"));
    }
    if current.as_ref().is_some_and(|t| (optin && t.optout) || (optout && t.optin)) {
        return Err(CmdError::custom(
            "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.",
        ));
    }
    if bcast {
        check_prefix_collisions(current.as_ref(), &prefixes)?;
        if prefixes.is_empty() {
            prefixes.push(Bytes::new());
        }
    }
    let was_on = current.is_some();
    let mut mode = current.unwrap_or_default();
    // Turning tracking on again replaces the options; prefixes accumulate.
    mode.redirect = redirect;
    mode.broken_redirect = false;
    mode.bcast = bcast;
    mode.optin = optin;
    mode.optout = optout;
    mode.noloop = noloop;
    let added: Vec<Bytes> = prefixes.into_iter().filter(|p| mode.prefixes.insert(p.clone())).collect();
    ctx.core.tracking.enable(id, was_on, &added);
    if let Some(r) = ctx.core.client_record(id) {
        r.tracking = Some(mode);
    }
    Ok(Reply::ok())
}

/// Redis's prefix checks: a new prefix may not overlap (one a prefix of the
/// other) a prefix the client has, nor another one given with it.
fn check_prefix_collisions(current: Option<&crate::client::Tracking>, prefixes: &[Bytes]) -> Result<(), CmdError> {
    let overlap = |a: &[u8], b: &[u8]| a.starts_with(b) || b.starts_with(a);
    let text = |b: &[u8]| super::c_str_prefix(b, usize::MAX).to_vec();
    for (i, p) in prefixes.iter().enumerate() {
        if let Some(existing) = current.and_then(|t| t.prefixes.iter().find(|e| overlap(e, p))) {
            let mut msg = b"ERR Prefix '".to_vec();
            msg.extend(text(p));
            msg.extend_from_slice(b"' overlaps with an existing prefix '");
            msg.extend(text(existing));
            msg.extend_from_slice(b"'. Prefixes for a single client must not overlap.");
            return Err(CmdError::Raw(Bytes::from(msg)));
        }
        if let Some(other) = prefixes[i + 1..].iter().find(|o| overlap(p, o)) {
            let mut msg = b"ERR Prefix '".to_vec();
            msg.extend(text(p));
            msg.extend_from_slice(b"' overlaps with another provided prefix '");
            msg.extend(text(other));
            msg.extend_from_slice(b"'. Prefixes for a single client must not overlap.");
            return Err(CmdError::Raw(Bytes::from(msg)));
        }
    }
    Ok(())
}

fn client_trackinginfo(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let mode = ctx.core.clients.get(&ctx.client.id).and_then(|r| r.tracking.as_ref());
    let mut flags = Vec::new();
    let (redirect, prefixes) = match mode {
        None => {
            flags.push("off");
            (-1, Vec::new())
        }
        Some(t) => {
            flags.push("on");
            if t.bcast {
                flags.push("bcast");
            }
            if t.optin {
                flags.push("optin");
                if t.caching {
                    flags.push("caching-yes");
                }
            }
            if t.optout {
                flags.push("optout");
                if t.caching {
                    flags.push("caching-no");
                }
            }
            if t.noloop {
                flags.push("noloop");
            }
            if t.broken_redirect {
                flags.push("broken_redirect");
            }
            (t.redirect as i64, t.prefixes.iter().cloned().map(Reply::Bulk).collect())
        }
    };
    Ok(Reply::Map(vec![
        (Reply::bulk_str("flags"), Reply::Set(flags.into_iter().map(Reply::bulk_str).collect())),
        (Reply::bulk_str("redirect"), Reply::Int(redirect)),
        (Reply::bulk_str("prefixes"), Reply::Array(prefixes)),
    ]))
}

fn client_getredir(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let mode = ctx.core.clients.get(&ctx.client.id).and_then(|r| r.tracking.as_ref());
    Ok(Reply::Int(mode.map_or(-1, |t| t.redirect as i64)))
}

fn client_caching(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let Some(t) = ctx.core.client_record(ctx.client.id).and_then(|r| r.tracking.as_mut()) else {
        return Err(CmdError::custom(
            "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled",
        ));
    };
    if eq(&args[2], "yes") {
        if !t.optin {
            return Err(CmdError::custom(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            ));
        }
    } else if eq(&args[2], "no") {
        if !t.optout {
            return Err(CmdError::custom(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            ));
        }
    } else {
        return Err(CmdError::Syntax);
    }
    t.caching = true;
    Ok(Reply::ok())
}

fn client_reply(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let a = &args[2];
    if eq(a, "on") {
        ctx.client.reply_mode = ReplyMode::OnNow;
        Ok(Reply::ok())
    } else if eq(a, "off") {
        ctx.client.reply_mode = ReplyMode::Off;
        Ok(Reply::ok())
    } else if eq(a, "skip") {
        ctx.client.reply_mode = ReplyMode::Skip;
        Ok(Reply::ok())
    } else {
        Err(CmdError::Syntax)
    }
}

fn client_unblock(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let id = int(&args[2])?;
    let with_error = match args.get(3) {
        None => false,
        Some(a) if eq(a, "timeout") => false,
        Some(a) if eq(a, "error") => true,
        Some(_) => return Err(CmdError::custom("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")),
    };
    if args.len() > 4 {
        return Err(CmdError::Syntax);
    }
    const UNBLOCKED: &str = "UNBLOCKED client unblocked via CLIENT UNBLOCK";
    let reply = with_error.then(|| Reply::error(UNBLOCKED));
    let Some(argv) = ctx.core.blocking.unblock_client(id as u64, reply) else {
        return Ok(Reply::Int(0));
    };
    if let super::Lookup::Found(c) = super::table().lookup(&argv) {
        let counted = if with_error { Reply::error(UNBLOCKED) } else { Reply::Nil };
        super::call::count_unblocked(ctx.core, c, 0, &counted);
        if !with_error {
            // Redis 7.0 counts the unblocked call failed either way.
            ctx.core.stats.commands[c.id].failed += 1;
        }
    }
    Ok(Reply::Int(1))
}

fn client_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(super::help::help_reply_in(ctx.core.profile(), "CLIENT", super::help::CLIENT_HELP))
}
