//! Lua scripting engine.

pub mod libs;

/// The Lua engine of one server.
#[derive(Debug, Default)]
pub struct Scripting {}

impl Scripting {
    pub fn new() -> Self {
        Scripting {}
    }
}
