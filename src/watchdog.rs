//! Parent watchdog of the binary: a front end (the Python, Node and Java
//! test libraries under `clients/`) starts rlockd with its standard input on
//! a pipe and `RLOCKD_STDIN_WATCHDOG=1`. When that pipe reaches end of file
//! the parent has closed it or died (even by SIGKILL, when no clean-up code
//! of its own can run), so the server exits instead of living on as an
//! orphan holding its port.

use std::io::{Read, Write};

/// The environment variable that turns the watchdog on (value `1`).
pub const ENV: &str = "RLOCKD_STDIN_WATCHDOG";

/// Starts the watchdog thread when `RLOCKD_STDIN_WATCHDOG=1`. Whatever is
/// written on standard input is read and ignored; end of file or a read
/// error ends the process, after `before_exit` (which saves a recording).
pub fn start_if_requested(before_exit: fn()) {
    if std::env::var(ENV).as_deref() != Ok("1") {
        return;
    }
    std::thread::Builder::new()
        .name("stdin-watchdog".into())
        .spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut buf = [0u8; 256];
            while let Ok(n) = stdin.read(&mut buf) {
                if n == 0 {
                    break;
                }
            }
            // Not through tracing: the parent that read our stderr may be
            // gone, and the log layer panics (in eprintln!) when it cannot
            // report a failed write. A failed write is ignored here.
            let _ = writeln!(
                std::io::stderr(),
                "rlockd: standard input closed (the parent process is gone), shutting down"
            );
            before_exit();
            std::process::exit(0);
        })
        .expect("stdin watchdog thread");
}
