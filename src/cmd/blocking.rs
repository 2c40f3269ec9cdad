//! Blocking commands (BLPOP, BZPOPMIN…): rows live here, grouped under
//! their type family for `COMMAND DOCS`.

use super::CommandSpec;

pub static COMMANDS: &[CommandSpec] = &[];

/// The `COMMAND DOCS` group of a blocking command.
pub fn group_of(name: &str) -> &'static str {
    if name.starts_with("bz") {
        "sorted-set"
    } else {
        "list"
    }
}
