//! `HELP` of container commands, as each profile prints it: the texts, the
//! reply that prints them, and the error that points to them.
//!
//! Most texts are the same in every version; a line that came, went or
//! changed with a version carries the profiles that print it ([`Shown`]).
//! The versions are those of the oracles where one answers (7.0.15, 8.2.3,
//! Valkey 8.1.8); a change both Redis 8.2 and Valkey 8 have is dated to the
//! 7.2 line Valkey forked from.

use bytes::Bytes;

use crate::error::CmdError;
use crate::protocol::Reply;
use crate::version::{Profile, Version};

/// The profiles that print a line: from a version on (per flavour, Redis's
/// and Valkey's own, as a command row's availability) and before another.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shown {
    from: [Version; 2],
    until: [Version; 2],
}

const V0: Version = Version::new(0, 0, 0);
const NEVER: Version = Version::NEVER;

impl Shown {
    /// Redis from `redis`, Valkey from `valkey`.
    pub(crate) const fn since(redis: Version, valkey: Version) -> Shown {
        Shown { from: [redis, valkey], until: [NEVER, NEVER] }
    }

    pub(crate) fn in_profile(self, profile: Profile) -> bool {
        profile.has(&self.from) && !profile.has(&self.until)
    }
}

/// Every profile.
pub(crate) const EVERY: Shown = Shown::since(V0, V0);
/// Redis 7.0 only (changed by the 7.2 line Valkey forked from).
pub(crate) const BEFORE_7_2: Shown = Shown { from: [V0, NEVER], until: [Version::new(7, 2, 0), NEVER] };
/// Redis from 7.2, and Valkey.
pub(crate) const FROM_7_2: Shown = Shown::since(Version::new(7, 2, 0), V0);
/// Redis from 7.4, Valkey from 8.0.
pub(crate) const FROM_7_4: Shown = Shown::since(Version::new(7, 4, 0), Version::new(8, 0, 0));
/// Redis from 7.4 only (Valkey says it its own way).
pub(crate) const REDIS_FROM_7_4: Shown = Shown::since(Version::new(7, 4, 0), NEVER);
/// Redis, every version (Valkey says it its own way).
pub(crate) const REDIS: Shown = Shown::since(V0, NEVER);
/// Valkey from 8.0.
pub(crate) const VALKEY_8_0: Shown = Shown::since(NEVER, Version::new(8, 0, 0));
/// Valkey from 8.1.
pub(crate) const VALKEY_8_1: Shown = Shown::since(NEVER, Version::new(8, 1, 0));

/// A line of a HELP text and the profiles that print it.
pub(crate) type Line = (Shown, &'static str);

/// The `HELP` reply shape every container command has (`addReplyHelp`):
/// the title, the lines, and `HELP` itself ("Prints" until 7.2, "Print"
/// after).
pub(crate) fn help_reply(profile: Profile, cmd: &str, lines: &[&str]) -> Reply {
    help_of(profile, cmd, lines.iter().copied())
}

/// [`help_reply`] of a text whose lines depend on the profile.
pub(crate) fn help_reply_in(profile: Profile, cmd: &str, lines: &[Line]) -> Reply {
    help_of(profile, cmd, lines.iter().filter(|(shown, _)| shown.in_profile(profile)).map(|&(_, l)| l))
}

fn help_of<'a>(profile: Profile, cmd: &str, lines: impl Iterator<Item = &'a str>) -> Reply {
    let mut out =
        vec![Reply::Status(Bytes::from(format!("{cmd} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")))];
    out.extend(lines.map(|l| Reply::Status(Bytes::copy_from_slice(l.as_bytes()))));
    out.push(Reply::status("HELP"));
    out.push(Reply::status(if BEFORE_7_2.in_profile(profile) {
        "    Prints this help."
    } else {
        "    Print this help."
    }));
    Reply::Array(out)
}

/// `addReplySubcommandSyntaxError`.
pub(crate) fn subcommand_syntax(args: &[Bytes]) -> CmdError {
    CmdError::custom(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.",
        String::from_utf8_lossy(&args[1]),
        String::from_utf8_lossy(&args[0]).to_ascii_uppercase()
    ))
}

pub(crate) const OBJECT_HELP: &[&str] = &[
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
];
pub(crate) const CLIENT_HELP: &[Line] = &[
    (EVERY, "CACHING (YES|NO)"),
    (EVERY, "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes."),
    (VALKEY_8_0, "CAPA <option> [options...]"),
    (VALKEY_8_0, "    The client claims its some capability options. Options are:"),
    (VALKEY_8_0, "    * REDIRECT"),
    (VALKEY_8_0, "      The client can handle redirection during primary and replica failover in standalone mode."),
    (EVERY, "GETREDIR"),
    (EVERY, "    Return the client ID we are redirecting to when tracking is enabled."),
    (EVERY, "GETNAME"),
    (EVERY, "    Return the name of the current connection."),
    (EVERY, "ID"),
    (EVERY, "    Return the ID of the current connection."),
    (EVERY, "INFO"),
    (EVERY, "    Return information about the current client connection."),
    (EVERY, "KILL <ip:port>"),
    (EVERY, "    Kill connection made from <ip:port>."),
    (EVERY, "KILL <option> <value> [<option> <value> [...]]"),
    (EVERY, "    Kill connections. Options are:"),
    (EVERY, "    * ADDR (<ip:port>|<unixsocket>:0)"),
    (EVERY, "      Kill connections made from the specified address"),
    (EVERY, "    * LADDR (<ip:port>|<unixsocket>:0)"),
    (EVERY, "      Kill connections made to specified local address"),
    (REDIS, "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)"),
    (VALKEY_8_0, "    * TYPE (NORMAL|PRIMARY|REPLICA|PUBSUB)"),
    (EVERY, "      Kill connections by type."),
    (EVERY, "    * USER <username>"),
    (EVERY, "      Kill connections authenticated by <username>."),
    (EVERY, "    * SKIPME (YES|NO)"),
    (EVERY, "      Skip killing current connection (default: yes)."),
    (REDIS_FROM_7_4, "    * ID <client-id>"),
    (REDIS_FROM_7_4, "      Kill connections by client id."),
    (VALKEY_8_0, "    * ID <client-id> [<client-id>...]"),
    (VALKEY_8_0, "      Kill connections by client ids."),
    (FROM_7_4, "    * MAXAGE <maxage>"),
    (FROM_7_4, "      Kill connections older than the specified age."),
    (EVERY, "LIST [options ...]"),
    (EVERY, "    Return information about client connections. Options:"),
    (REDIS, "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)"),
    (VALKEY_8_0, "    * TYPE (NORMAL|PRIMARY|REPLICA|PUBSUB)"),
    (EVERY, "      Return clients of specified type."),
    (VALKEY_8_0, "    * USER <username>"),
    (VALKEY_8_0, "      Return clients authenticated by <username>."),
    (VALKEY_8_0, "    * ADDR <ip:port>"),
    (VALKEY_8_0, "      Return clients connected from the specified address."),
    (VALKEY_8_0, "    * LADDR <ip:port>"),
    (VALKEY_8_0, "      Return clients connected to the specified local address."),
    (VALKEY_8_0, "    * ID <client-id> [<client-id>...]"),
    (VALKEY_8_0, "      Return clients with the specified IDs."),
    (VALKEY_8_0, "    * SKIPME (YES|NO)"),
    (VALKEY_8_0, "      Exclude the current client from the list (default: no)."),
    (VALKEY_8_0, "    * MAXAGE <maxage>"),
    (VALKEY_8_0, "      List connections older than the specified age."),
    (EVERY, "UNPAUSE"),
    (EVERY, "    Stop the current client pause, resuming traffic."),
    (EVERY, "PAUSE <timeout> [WRITE|ALL]"),
    (EVERY, "    Suspend all, or just write, clients for <timeout> milliseconds."),
    (EVERY, "REPLY (ON|OFF|SKIP)"),
    (EVERY, "    Control the replies sent to the current connection."),
    (EVERY, "SETNAME <name>"),
    (EVERY, "    Assign the name <name> to the current connection."),
    (FROM_7_2, "SETINFO <option> <value>"),
    (FROM_7_2, "    Set client meta attr. Options are:"),
    (FROM_7_2, "    * LIB-NAME: the client lib name."),
    (FROM_7_2, "    * LIB-VER: the client lib version."),
    (EVERY, "UNBLOCK <clientid> [TIMEOUT|ERROR]"),
    (EVERY, "    Unblock the specified blocked client."),
    (EVERY, "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]"),
    (EVERY, "         [OPTIN] [OPTOUT] [NOLOOP]"),
    (EVERY, "    Control server assisted client side caching."),
    (EVERY, "TRACKINGINFO"),
    (EVERY, "    Report tracking status for the current connection."),
    (EVERY, "NO-EVICT (ON|OFF)"),
    (EVERY, "    Protect current client connection from eviction."),
    (FROM_7_2, "NO-TOUCH (ON|OFF)"),
    (FROM_7_2, "    Will not touch LRU/LFU stats when this mode is on."),
    (VALKEY_8_1, "IMPORT-SOURCE (ON|OFF)"),
    (VALKEY_8_1, "    Mark this connection as an import source if import-mode is enabled."),
    (VALKEY_8_1, "    Sync tools can set their connections into 'import-source' state to visit"),
    (VALKEY_8_1, "    expired keys."),
];
pub(crate) const CONFIG_HELP: &[&str] = &[
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "RESETSTAT",
    "    Reset statistics reported by the INFO command.",
    "REWRITE",
    "    Rewrite the configuration file.",
];
pub(crate) const COMMAND_HELP: &[Line] = &[
    (EVERY, "(no subcommand)"),
    (REDIS, "    Return details about all Redis commands."),
    (VALKEY_8_0, "    Return details about all commands."),
    (EVERY, "COUNT"),
    (REDIS, "    Return the total number of commands in this Redis server."),
    (VALKEY_8_0, "    Return the total number of commands in this server."),
    (EVERY, "LIST"),
    (REDIS, "    Return a list of all commands in this Redis server."),
    (VALKEY_8_0, "    Return a list of all commands in this server."),
    (EVERY, "INFO [<command-name> ...]"),
    (REDIS, "    Return details about multiple Redis commands."),
    (VALKEY_8_0, "    Return details about multiple commands."),
    (EVERY, "    If no command names are given, documentation details for all"),
    (EVERY, "    commands are returned."),
    (EVERY, "DOCS [<command-name> ...]"),
    (REDIS, "    Return documentation details about multiple Redis commands."),
    (VALKEY_8_0, "    Return documentation details about multiple commands."),
    (EVERY, "    If no command names are given, documentation details for all"),
    (EVERY, "    commands are returned."),
    (EVERY, "GETKEYS <full-command>"),
    (REDIS, "    Return the keys from a full Redis command."),
    (VALKEY_8_0, "    Return the keys from a full command."),
    (EVERY, "GETKEYSANDFLAGS <full-command>"),
    (REDIS, "    Return the keys and the access flags from a full Redis command."),
    (VALKEY_8_0, "    Return the keys and the access flags from a full command."),
];
pub(crate) const MEMORY_HELP: &[&str] = &[
    "DOCTOR",
    "    Return memory problems reports.",
    "MALLOC-STATS",
    "    Return internal statistics report from the memory allocator.",
    "PURGE",
    "    Attempt to purge dirty pages for reclamation by the allocator.",
    "STATS",
    "    Return information about the memory usage of the server.",
    "USAGE <key> [SAMPLES <count>]",
    "    Return memory in bytes used by <key> and its value. Nested values are",
    "    sampled up to <count> times (default: 5, 0 means sample all).",
];
pub(crate) const LATENCY_HELP: &[&str] = &[
    "DOCTOR",
    "    Return a human readable latency analysis report.",
    "GRAPH <event>",
    "    Return an ASCII latency graph for the <event> class.",
    "HISTORY <event>",
    "    Return time-latency samples for the <event> class.",
    "LATEST",
    "    Return the latest latency samples for all events.",
    "RESET [<event> ...]",
    "    Reset latency data of one or more <event> classes.",
    "    (default: reset all data for all event classes)",
    "HISTOGRAM [COMMAND ...]",
    "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
    "    If no commands are specified then all histograms are replied.",
];
pub(crate) const SLOWLOG_HELP: &[&str] = &[
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
    "    client name",
    "LEN",
    "    Return the length of the slowlog.",
    "RESET",
    "    Reset the slowlog.",
];
pub(crate) const COMMANDLOG_HELP: &[&str] = &[
    "GET <count> <type>",
    "    Return top <count> entries of the specified <type> from the commandlog (-1 mean all).",
    "    Entries are made of:",
    "    id, timestamp,",
    "        time in microseconds for type of slow,",
    "        or size in bytes for type of large-request,",
    "        or size in bytes for type of large-reply",
    "    arguments array, client IP and port,",
    "    client name",
    "LEN <type>",
    "    Return the length of the specified type of commandlog.",
    "RESET <type>",
    "    Reset the specified type of commandlog.",
];
