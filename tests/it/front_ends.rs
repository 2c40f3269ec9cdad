//! The language front ends (`clients/python`, `clients/node`, `clients/go`,
//! `clients/java`), each packed as its users get it and tested with its
//! real clients by `clients/test.sh`, against the `rlockd` binary this
//! build produced, and each language's README section as written there, in
//! scratch projects outside the checkout, then every other README block
//! marked to run (`clients/readme-blocks.sh`; `readme.rs` checks the marks).
//! A missing toolchain is a skip the script reports visibly; a failure of any
//! front end or block fails this test.

use std::process::Command;

#[test]
fn python_node_java_and_go_front_ends_pass_their_tests() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/clients/test.sh");
    let out = Command::new("bash")
        .arg(script)
        .env("RLOCKD_BINARY", env!("CARGO_BIN_EXE_rlockd"))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run clients/test.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Shown past the harness's capture: which front ends ran, which skipped.
    for line in stdout.lines().filter(|l| l.starts_with("clients:")) {
        eprintln!("{line}");
    }
    assert!(out.status.success(), "clients/test.sh failed:\n{stdout}\n{stderr}");
    let summary = stdout.lines().rev().find(|l| l.starts_with("clients: ") && l.ends_with(" failed"));
    assert!(summary.is_some_and(|l| l.ends_with(" 0 failed")), "no clean summary line:\n{stdout}");
}
