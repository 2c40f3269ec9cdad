//! server_cmds integration tests.
