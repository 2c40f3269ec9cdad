//! Skips that cannot be missed.
//!
//! The test harness captures what a passing test prints, so a test that
//! skips its checks (no redis-server, no JDK…) would look like a pass.
//! [`skipped`] writes one line straight to the process's stderr, past the
//! capture, at once; and when the test binary exits, after the harness's
//! `test result:` line, one summary line per reason lists every skipped
//! test. `RLOCKD_REQUIRE_REDIS=1` turns the redis-server skip into a failure
//! (see `oracle`).

use std::io::Write;
use std::sync::{Mutex, Once};

static SKIPPED: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());
static REGISTER: Once = Once::new();

/// Records that the current test skipped its checks because of `reason`
/// and says so on stderr, uncaptured.
pub fn skipped(reason: &str) {
    let test = std::thread::current().name().unwrap_or("<unnamed test>").to_string();
    let _ = std::io::stderr().lock().write_all(format!("SKIPPED {test}: {reason}\n").as_bytes());
    SKIPPED.lock().unwrap_or_else(|e| e.into_inner()).push((reason.to_string(), test));
    REGISTER.call_once(|| {
        // SAFETY: registers a plain `extern "C"` function; it runs once at exit.
        unsafe { libc::atexit(summary) };
    });
}

extern "C" fn summary() {
    let list = SKIPPED.lock().unwrap_or_else(|e| e.into_inner());
    let mut reasons: Vec<&str> = list.iter().map(|(r, _)| r.as_str()).collect();
    reasons.sort_unstable();
    reasons.dedup();
    let mut out = String::new();
    for reason in reasons {
        let tests: Vec<&str> = list.iter().filter(|(r, _)| r == reason).map(|(_, t)| t.as_str()).collect();
        out.push_str(&format!("SKIPPED: {} test(s) left checks out: {reason}: {}\n", tests.len(), tests.join(", ")));
    }
    let _ = std::io::stderr().lock().write_all(out.as_bytes());
}
