//! Every fenced block of README.md and of each front end's README is either
//! run or marked illustrative, with the reason, on the line just before it:
//!
//! ```text
//! <!-- readme-test: KIND[; option: value]... -->
//! <!-- illustrative: REASON -->
//! ```
//!
//! This check needs no toolchain: it fails on a block with no marker, an
//! unknown kind or option, an illustrative mark without a reason, and a
//! `rust` block that is not, line for line, in the file its marker names
//! (`tests/it/readme_rust.rs`, compiled and run with these tests). The other
//! kinds are run by `clients/readme-blocks.sh` (through `clients/test.sh`,
//! see `front_ends.rs`): `sh`, `python`, `pytest`, `node`, `node-test`,
//! `go-test`, `java-test`; the language sections' install steps and test files (`project`)
//! by `clients/test.sh`; the Cargo.toml lines (`fresh-machine`) by
//! `.ci/fresh-machine.sh`.

use std::path::Path;

const READMES: &[&str] = &[
    "README.md",
    "clients/python/README.md",
    "clients/node/README.md",
    "clients/java/README.md",
    "clients/go/README.md",
];
const KINDS: &[&str] =
    &["sh", "python", "pytest", "node", "node-test", "go-test", "java-test", "project", "rust", "fresh-machine"];
const OPTIONS: &[&str] = &["server", "expect", "file"];

/// A fenced block: where it opens, the marker above it, its lines.
#[derive(Debug)]
struct Block {
    at: String,
    marker: Option<String>,
    body: Vec<String>,
}

fn blocks(readme: &str) -> Vec<Block> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(readme)).expect("read the README");
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if !lines[i].starts_with("```") {
            i += 1;
            continue;
        }
        let marker = lines[..i]
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .and_then(|l| l.strip_prefix("<!-- ")?.strip_suffix(" -->"))
            .map(str::to_string);
        let start = i;
        i += 1;
        let mut body = Vec::new();
        while i < lines.len() && !lines[i].starts_with("```") {
            body.push(lines[i].to_string());
            i += 1;
        }
        out.push(Block { at: format!("{readme}:{}", start + 1), marker, body });
        i += 1;
    }
    out
}

/// What is wrong with a block's marker, if anything.
fn marker_problem(b: &Block) -> Option<String> {
    let Some(m) = &b.marker else {
        return Some(
            "no marker (<!-- readme-test: KIND --> or <!-- illustrative: REASON -->) on the line before it".into(),
        );
    };
    if let Some(reason) = m.strip_prefix("illustrative:") {
        return reason.trim().is_empty().then(|| "an illustrative mark without a reason".into());
    }
    let Some(spec) = m.strip_prefix("readme-test:") else {
        return Some(format!("the line before it is not a marker: <!-- {m} -->"));
    };
    let mut parts = spec.split(';').map(str::trim);
    let kind = parts.next().unwrap_or("");
    if !KINDS.contains(&kind) {
        return Some(format!("unknown kind {kind:?} (known: {})", KINDS.join(", ")));
    }
    for opt in parts {
        let name = opt.split(':').next().unwrap_or("").trim();
        if !OPTIONS.contains(&name) || !opt.contains(':') {
            return Some(format!("unknown option {opt:?} (known: {})", OPTIONS.join(", ")));
        }
    }
    if kind == "rust" {
        let Some(file) = option(m, "file") else { return Some("a rust block names its file (file: …)".into()) };
        let Ok(src) = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(&file)) else {
            return Some(format!("{file} cannot be read"));
        };
        let have: Vec<&str> = src.lines().map(str::trim).collect();
        let want: Vec<&str> = b.body.iter().map(|l| l.trim()).collect();
        if !have.windows(want.len()).any(|w| w == want.as_slice()) {
            return Some(format!("its lines are not in {file}, where they run"));
        }
    }
    None
}

fn option(marker: &str, name: &str) -> Option<String> {
    marker.split(';').skip(1).find_map(|o| {
        let (n, v) = o.split_once(':')?;
        (n.trim() == name).then(|| v.trim().to_string())
    })
}

#[test]
fn every_readme_block_is_run_or_marked_illustrative() {
    let all: Vec<Block> = READMES.iter().flat_map(|r| blocks(r)).collect();
    assert!(all.len() > 40, "too few blocks found: {}", all.len());
    let problems: Vec<String> =
        all.iter().filter_map(|b| marker_problem(b).map(|p| format!("{}: {p}", b.at))).collect();
    assert!(problems.is_empty(), "README blocks:\n{}", problems.join("\n"));
}

#[test]
fn the_marker_check_refuses_what_it_should() {
    let block = |marker: Option<&str>| Block { at: "x".into(), marker: marker.map(str::to_string), body: vec![] };
    assert!(marker_problem(&block(None)).is_some());
    assert!(marker_problem(&block(Some("illustrative:  "))).is_some());
    assert!(marker_problem(&block(Some("readme-test: perl"))).is_some());
    assert!(marker_problem(&block(Some("readme-test: sh; port: 6379"))).is_some());
    assert!(marker_problem(&block(Some("readme-test: rust"))).is_some());
    assert!(marker_problem(&block(Some("readme-test: sh; server: rlockd --port 6379"))).is_none());
    assert!(marker_problem(&block(Some("illustrative: a fragment"))).is_none());
}
