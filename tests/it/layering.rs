//! The crate is a stack: a module may use modules of its own layer or
//! below, never above (see ARCHITECTURE.md, *Floors*). This test reads the
//! sources and fails on a `crate::…` (or `super::…`) path that reaches up,
//! on a circle between top-level modules, on a top-level module that has
//! no place in the stack yet, and on a path through the crate root's
//! re-exports (`crate::Fault` for `crate::faults::Fault`), which would hide
//! the module it reaches from this test. A second test fails on files that
//! import each other in a circle, inside a module too (`cmd/call.rs` →
//! `cmd/replication.rs` → `cmd/call.rs`); a module with children (`mod.rs`,
//! or a file with a folder of its own), which lists them, takes no part.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first. A new top-level module must be added here.
const LAYERS: &[&[&str]] = &[
    &["num", "glob", "clock", "version", "memory", "signal"],
    &["protocol"],
    &["error"],
    &["db"],
    &["client", "config"],
    &["blocking", "tx", "pubsub", "monitor", "control", "acl", "tracking", "cluster", "replication"],
    &["script"],
    &["core"],
    &["cmd"],
    &["server", "testing"],
    // Sentinels watch and fail over the servers of their process.
    &["sentinel"],
    // Modules of the binaries (src/main.rs's watchdog, src/bin/), above the library.
    &["watchdog", "replay", "bin", "toxiproxy"],
];

/// Upward uses still being taken apart, `(from, to)`. Keep it empty.
const NOT_YET: &[(&str, &str)] = &[];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a source file (`src/cmd/mod.rs` → `[cmd]`,
/// `src/cmd/list.rs` → `[cmd, list]`).
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().expect("file name");
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" {
        parts.push(stem.to_string());
    }
    parts
}

/// The source with comments, string and character literals blanked out.
fn code_only(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c[i] == 'r' && (next == Some('#') || next == Some('"')) && (i == 0 || !is_ident(c[i - 1])) {
            // Raw string: r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while c.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= c.len() {
                    break;
                }
                if c[j] == '"' && (0..hashes).all(|h| c.get(j + 1 + h) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c[i] == '\'' {
            // A char literal ('x', '\n', '\''), or a lifetime ('a).
            if next == Some('\\') {
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push_str("' '");
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push_str("' '");
            } else {
                out.push(c[i]);
                i += 1;
            }
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Top-level modules named by `crate::x` and `super::…::x` paths (including
/// grouped imports `use crate::{a, b::c}`) in `code`, for a file at `path`.
fn referenced_modules(code: &str, path: &[String]) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let c: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < c.len() {
        if i > 0 && (is_ident(c[i - 1]) || c[i - 1] == ':') {
            i += 1;
            continue;
        }
        let rest: String = c[i..c.len().min(i + 7)].iter().collect();
        let (mut depth_left, mut j) = if rest.starts_with("crate::") {
            (Some(0usize), i + 7)
        } else if rest.starts_with("super::") {
            // Each `super::` climbs one module from the file's own.
            let mut j = i;
            let mut up = 0;
            while c[j..].iter().take(7).collect::<String>() == "super::" {
                up += 1;
                j += 7;
            }
            (path.len().checked_sub(up), j)
        } else {
            i += 1;
            continue;
        };
        // Walk down from the resolved module to reach the top level.
        let mut names = Vec::new();
        if depth_left == Some(0) {
            collect_first_segments(&c, &mut j, &mut names);
        } else if let Some(d) = depth_left.take() {
            if d >= 1 {
                names.push(path[0].clone());
            }
        }
        found.extend(names);
        i = j.max(i + 1);
    }
    found
}

/// At `c[*j]`, after `crate::`: the first segment, or every first segment
/// of a `{…}` group.
fn collect_first_segments(c: &[char], j: &mut usize, names: &mut Vec<String>) {
    if c.get(*j) == Some(&'{') {
        let mut depth = 0;
        let mut at_start = true;
        while *j < c.len() {
            match c[*j] {
                '{' => {
                    depth += 1;
                    at_start = depth == 1;
                    *j += 1;
                }
                '}' => {
                    depth -= 1;
                    *j += 1;
                    if depth == 0 {
                        return;
                    }
                }
                ',' => {
                    at_start = depth == 1;
                    *j += 1;
                }
                ch if ch.is_whitespace() => *j += 1,
                _ => {
                    let start = *j;
                    while *j < c.len() && is_ident(c[*j]) {
                        *j += 1;
                    }
                    if *j == start {
                        *j += 1;
                    } else if at_start {
                        names.push(c[start..*j].iter().collect());
                    }
                    at_start = false;
                }
            }
        }
    } else {
        let start = *j;
        while *j < c.len() && is_ident(c[*j]) {
            *j += 1;
        }
        names.push(c[start..*j].iter().collect());
    }
}

/// The names the crate root re-exports (`pub use a::b::Name;`,
/// `pub use a::{X, Y as Z};` in `lib.rs`), each with the top-level module it
/// comes from.
fn root_reexports(lib: &str) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    for stmt in lib.split(';') {
        let stmt = stmt.trim();
        let Some(path) = stmt.strip_prefix("pub use ").or_else(|| stmt.strip_prefix("pub(crate) use ")) else {
            continue;
        };
        let path: String = path.split_whitespace().collect::<Vec<_>>().join(" ");
        let path = path.strip_prefix("crate::").unwrap_or(&path);
        let module = path.split("::").next().unwrap_or_default().trim().to_string();
        let names = match (path.find('{'), path.rfind('}')) {
            (Some(open), Some(close)) => path[open + 1..close].split(',').map(str::to_string).collect(),
            _ => vec![path.rsplit("::").next().unwrap_or_default().to_string()],
        };
        for name in names {
            // `X as Y` is reached as `crate::Y`; a nested group's names are
            // its last segments.
            let name = name.rsplit(" as ").next().unwrap_or_default();
            let name = name.rsplit("::").next().unwrap_or_default().trim();
            if !name.is_empty() && name != "self" {
                found.insert(name.to_string(), module.clone());
            }
        }
    }
    found
}

#[test]
fn lower_layers_never_import_higher_ones() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let reexports = root_reexports(&code_only(&std::fs::read_to_string(src.join("lib.rs")).expect("read lib.rs")));
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut problems = Vec::new();
    for file in &files {
        let path = module_path(&src, file);
        let Some(top) = path.first() else {
            continue; // lib.rs, main.rs: the crate roots
        };
        if top == "main" || top == "lib" {
            continue;
        }
        let Some(mine) = layer_of(top) else {
            problems.push(format!("{}: module `{top}` has no layer in LAYERS", file.display()));
            continue;
        };
        let code = code_only(&std::fs::read_to_string(file).expect("read source"));
        for used in referenced_modules(&code, &path) {
            if let Some(module) = reexports.get(&used) {
                problems.push(format!(
                    "{}: `crate::{used}` reaches `{module}` through the crate root's re-export; \
                     use the module's own path",
                    file.display()
                ));
                continue;
            }
            let Some(theirs) = layer_of(&used) else {
                continue; // an item of the crate root (`crate::Config`), not a module
            };
            if NOT_YET.contains(&(top.as_str(), used.as_str())) {
                continue;
            }
            if used != *top {
                graph.entry(top.clone()).or_default().insert(used.clone());
            }
            if theirs > mine {
                problems.push(format!(
                    "{}: `{top}` (layer {mine}) uses `{used}` (layer {theirs}), a higher layer",
                    file.display()
                ));
            }
        }
    }
    // No circle between modules of one layer either.
    for start in graph.keys() {
        let mut stack = vec![vec![start.clone()]];
        while let Some(trail) = stack.pop() {
            let last = trail.last().expect("non-empty");
            for next in graph.get(last).into_iter().flatten() {
                if next == start && trail.iter().all(|m| m >= start) {
                    // Reported once, from its smallest module.
                    problems.push(format!("circle: {} -> {start}", trail.join(" -> ")));
                } else if !trail.contains(next) {
                    let mut t = trail.clone();
                    t.push(next.clone());
                    stack.push(t);
                }
            }
        }
    }
    problems.sort();
    problems.dedup();
    assert!(problems.is_empty(), "the layering is broken:\n{}", problems.join("\n"));
}

/// Every module path named by a `crate::…` or `super::…` path in `code`
/// (a file at module `path`), whole (`crate::cmd::call::call` →
/// `[cmd, call, call]`), `{…}` groups expanded.
fn referenced_paths(code: &str, path: &[String]) -> Vec<Vec<String>> {
    let c: Vec<char> = code.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < c.len() {
        if i > 0 && (is_ident(c[i - 1]) || c[i - 1] == ':') {
            i += 1;
            continue;
        }
        let at = |j: usize, s: &str| c[j..].iter().take(s.len()).copied().eq(s.chars());
        let (base, mut j) = if at(i, "crate::") {
            (Vec::new(), i + 7)
        } else if at(i, "super::") {
            let mut j = i;
            let mut up = 0;
            while at(j, "super::") {
                up += 1;
                j += 7;
            }
            match path.len().checked_sub(up) {
                Some(n) => (path[..n].to_vec(), j),
                None => {
                    i = j;
                    continue;
                }
            }
        } else {
            i += 1;
            continue;
        };
        path_tail(&c, &mut j, base, &mut found);
        i = j.max(i + 1);
    }
    found
}

/// At `c[*j]`: the rest of a path after `prefix` (`a::b::{c, d::e}`), each
/// complete path pushed to `out`.
fn path_tail(c: &[char], j: &mut usize, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    loop {
        while *j < c.len() && c[*j].is_whitespace() {
            *j += 1;
        }
        if c.get(*j) == Some(&'{') {
            *j += 1;
            loop {
                while *j < c.len() && (c[*j].is_whitespace() || c[*j] == ',') {
                    *j += 1;
                }
                if *j >= c.len() || c[*j] == '}' {
                    *j += 1;
                    return;
                }
                let before = *j;
                path_tail(c, j, prefix.clone(), out);
                if *j == before {
                    *j += 1;
                }
            }
        }
        let start = *j;
        while *j < c.len() && is_ident(c[*j]) {
            *j += 1;
        }
        if *j == start {
            out.push(prefix);
            return;
        }
        prefix.push(c[start..*j].iter().collect());
        if c.get(*j) == Some(&':') && c.get(*j + 1) == Some(&':') {
            *j += 2;
        } else {
            out.push(prefix);
            return;
        }
    }
}

/// The strongly connected components of `graph` with two nodes or more:
/// its circles (Tarjan's algorithm).
fn circles<'g, T: Ord>(graph: &'g BTreeMap<&'g T, BTreeSet<&'g T>>) -> Vec<Vec<&'g T>> {
    struct Walk<'g, T: Ord> {
        graph: &'g BTreeMap<&'g T, BTreeSet<&'g T>>,
        index: BTreeMap<&'g T, (usize, usize)>,
        stack: Vec<&'g T>,
        circles: Vec<Vec<&'g T>>,
    }
    impl<'g, T: Ord> Walk<'g, T> {
        fn visit(&mut self, v: &'g T) {
            let n = self.index.len();
            self.index.insert(v, (n, n));
            self.stack.push(v);
            for &w in self.graph.get(v).into_iter().flatten() {
                match self.index.get(w) {
                    None => {
                        self.visit(w);
                        let low = self.index[w].1.min(self.index[v].1);
                        self.index.get_mut(v).expect("visited").1 = low;
                    }
                    Some(&(wi, _)) if self.stack.contains(&w) => {
                        let low = wi.min(self.index[v].1);
                        self.index.get_mut(v).expect("visited").1 = low;
                    }
                    Some(_) => {}
                }
            }
            if self.index[v].0 == self.index[v].1 {
                let at = self.stack.iter().position(|x| *x == v).expect("on the stack");
                let component = self.stack.split_off(at);
                if component.len() > 1 {
                    self.circles.push(component);
                }
            }
        }
    }
    let mut walk = Walk { graph, index: BTreeMap::new(), stack: Vec::new(), circles: Vec::new() };
    for &v in graph.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.circles
}

#[test]
fn the_circle_finder_sees_circles() {
    let names = ["a", "b", "c", "d", "e", "f"];
    let edges = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e"), ("e", "d"), ("f", "a")];
    let mut graph: BTreeMap<&&str, BTreeSet<&&str>> = BTreeMap::new();
    for (from, to) in edges {
        let at = |n: &str| names.iter().find(|x| **x == n).expect("a name");
        graph.entry(at(from)).or_default().insert(at(to));
    }
    let mut found: Vec<Vec<&str>> = circles(&graph)
        .into_iter()
        .map(|c| {
            let mut c: Vec<&str> = c.into_iter().copied().collect();
            c.sort();
            c
        })
        .collect();
    found.sort();
    assert_eq!(found, [vec!["a", "b", "c"], vec!["d", "e"]]);
}

/// What a command must not do itself (`src/cmd/`): hold process state in
/// a `static` that changes (a `OnceLock`/`LazyLock` of fixed data is
/// fine), touch a socket, or sleep. Sockets and waiting belong to
/// `server/`, reached through `core::ServerIo`.
const NOT_IN_COMMANDS: &[&str] = &[
    "static mut ",
    "thread::sleep",
    "time::sleep",
    "TcpStream",
    "TcpListener",
    "UdpSocket",
    "UnixStream",
    "UnixListener",
];

#[test]
fn commands_hold_no_process_state_open_no_socket_and_never_sleep() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src.join("cmd"), &mut files);
    let mut problems = Vec::new();
    for file in &files {
        let code = code_only(&std::fs::read_to_string(file).expect("read source"));
        for (n, line) in code.lines().enumerate() {
            let name = file.strip_prefix(&src).expect("under src").display();
            for bad in NOT_IN_COMMANDS {
                if line.contains(bad) {
                    problems.push(format!("src/{name}:{}: {}", n + 1, bad.trim()));
                }
            }
            let t = line.trim_start();
            let is_static =
                t.starts_with("static ") || t.starts_with("pub static ") || t.starts_with("pub(crate) static ");
            let changes = ["Mutex<", "RwLock<", "Cell<", "Atomic"].iter().any(|m| t.contains(m));
            // The one exception: the per-thread cache of the fixed command
            // table's name lookups, which answers exactly as the table.
            let memo = t.contains("static NAME_CACHE:");
            if is_static && changes && !memo {
                problems.push(format!("src/{name}:{}: a static that changes", n + 1));
            }
        }
    }
    assert!(files.len() > 30, "the commands are read");
    assert!(problems.is_empty(), "commands doing what server/ does:\n{}", problems.join("\n"));
}

/// Configuration is parsed once, in `config.rs` (`RuntimeConfig`'s typed
/// fields): elsewhere a stored value is read only to be shown as it is.
#[test]
fn configuration_is_parsed_in_config_rs_only() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut problems = Vec::new();
    for file in files.iter().filter(|f| !f.ends_with("config.rs") || f.parent() != Some(src.as_path())) {
        let code = code_only(&std::fs::read_to_string(file).expect("read source"));
        for (at, _) in code.match_indices("get_str(") {
            let before = &code[..at];
            if !(before.ends_with("config.") || before.ends_with("cfg.")) {
                continue;
            }
            let Some(close) = code[at..].find(')') else { continue };
            let after = code[at + close + 1..].trim_start();
            let radix = before.trim_end_matches("config.").trim_end_matches("cfg.").ends_with("from_str_radix(core.");
            if after.starts_with(".parse") || after.starts_with("==") || after.starts_with("!=") || radix {
                let line = code[..at].lines().count();
                problems.push(format!("{}:{line}", file.strip_prefix(&src).expect("under src").display()));
            }
        }
    }
    assert!(problems.is_empty(), "a configuration value parsed where it is used:\n{}", problems.join("\n"));
}

#[test]
fn no_files_import_each_other_in_a_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let modules: BTreeMap<Vec<String>, &PathBuf> = files
        .iter()
        .map(|f| (module_path(&src, f), f))
        .filter(|(p, _)| !p.is_empty() && p[0] != "main" && p[0] != "lib" && p[0] != "bin")
        .collect();
    let parent = |m: &Vec<String>| modules.keys().any(|k| k.len() > m.len() && k.starts_with(m));
    let mut graph: BTreeMap<&Vec<String>, BTreeSet<&Vec<String>>> = BTreeMap::new();
    for (module, file) in &modules {
        if parent(module) {
            continue;
        }
        let code = code_only(&std::fs::read_to_string(file).expect("read source"));
        for used in referenced_paths(&code, module) {
            // The longest prefix that names a module of the crate.
            let Some(target) = (1..=used.len()).rev().find_map(|n| modules.get_key_value(&used[..n]).map(|(k, _)| k))
            else {
                continue;
            };
            if target != module && !parent(target) {
                graph.entry(module).or_default().insert(target);
            }
        }
    }
    let problems: Vec<String> = circles(&graph)
        .iter()
        .map(|c| {
            let mut names: Vec<String> =
                c.iter().map(|m| modules[*m].strip_prefix(&src).expect("under src").display().to_string()).collect();
            names.sort();
            format!("circle between files: {}", names.join(", "))
        })
        .collect();
    assert!(problems.is_empty(), "files import each other in a circle:\n{}", problems.join("\n"));
}

#[test]
fn the_path_scanner_sees_whole_paths() {
    let code = code_only(
        "use crate::{db::Keyspace, protocol::{Reply, reply::Resp}};\n\
         use super::util::{eq, int};\n\
         super::super::tx::discard(); crate::cmd::call::call(x);\n",
    );
    let found = referenced_paths(&code, &["cmd".to_string(), "list".to_string()]);
    let found: Vec<String> = found.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        found,
        [
            "db::Keyspace",
            "protocol::Reply",
            "protocol::reply::Resp",
            "cmd::util::eq",
            "cmd::util::int",
            "tx::discard",
            "cmd::call::call"
        ]
    );
}

#[test]
fn the_scanner_sees_imports() {
    let code = code_only(
        "use crate::{db::Keyspace, protocol::{Reply, Resp}};\n\
         // crate::server in a comment\n\
         let s = \"crate::cmd in a string\";\n\
         let c = '\"'; fn f<'a>(x: &'a crate::core::Core) {}\n\
         super::super::tx::discard();\n",
    );
    let found = referenced_modules(&code, &["cmd".to_string(), "list".to_string()]);
    let found: Vec<&str> = found.iter().map(String::as_str).collect();
    assert_eq!(found, ["core", "db", "protocol", "tx"]);
}

#[test]
fn the_scanner_sees_root_reexports() {
    let lib = code_only(
        "mod faults;\n\
         pub use clock::Clock;\n\
         pub use faults::{Fault, Scope as FaultScope};\n\
         pub use script::locks;\n\
         // pub use cmd::Hidden;\n",
    );
    let found = root_reexports(&lib);
    let found: Vec<(&str, &str)> = found.iter().map(|(n, m)| (n.as_str(), m.as_str())).collect();
    assert_eq!(found, [("Clock", "clock"), ("Fault", "faults"), ("FaultScope", "faults"), ("locks", "script")]);
    // The real root re-exports something, so the check above is not empty.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let real = root_reexports(&code_only(&std::fs::read_to_string(src.join("lib.rs")).expect("read lib.rs")));
    assert_eq!(real.get("Fault").map(String::as_str), Some("control"));
    // A use of one of them is seen by the import scanner.
    let used = referenced_modules(&code_only("fn f(x: crate::Fault) {}"), &["server".to_string()]);
    assert!(used.contains("Fault"));
}
