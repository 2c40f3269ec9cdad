//! Builds the two pieces of C rlockd links:
//!
//! * `src/num.c` — Redis's number formatting and parsing through the C
//!   library (`strtold`, `%.17Lg`), so conversions match Redis's exactly;
//! * Lua 5.1.5 with the security fixes Redis carries (`lua/vm/patches.rs`).
//!   The pristine sources come from the `lua-src` crate (a build-dependency
//!   pinned to one version); they are copied to `OUT_DIR`, patched there,
//!   compiled and linked in place of mlua's vendored build (`mlua-sys` runs
//!   with its `external` feature, so nothing else provides Lua).

use std::path::{Path, PathBuf};
use std::{env, fs};

#[path = "lua/vm/patches.rs"]
mod patches;

fn main() {
    println!("cargo:rerun-if-changed=src/num.c");
    println!("cargo:rerun-if-changed=lua/vm/patches.rs");
    println!("cargo:rerun-if-changed=build.rs");
    cc::Build::new().file("src/num.c").opt_level(2).compile("rlockd_num");
    build_lua();
}

fn build_lua() {
    let pristine = lua_src_dir();
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    let src = out.join("lua-5.1.5-patched");
    let _ = fs::remove_dir_all(&src);
    fs::create_dir_all(&src).expect("create the patched Lua source directory");
    let mut c_files = Vec::new();
    for entry in fs::read_dir(&pristine).expect("read lua-src's Lua 5.1.5 sources") {
        let path = entry.expect("directory entry").path();
        let name = path.file_name().expect("file name").to_owned();
        match path.extension().and_then(|e| e.to_str()) {
            Some("c") | Some("h") => {}
            _ => continue,
        }
        // lua.c and luac.c are the stand-alone interpreter and compiler.
        if name == "lua.c" || name == "luac.c" {
            continue;
        }
        fs::copy(&path, src.join(&name)).expect("copy a Lua source file");
        if path.extension().and_then(|e| e.to_str()) == Some("c") {
            c_files.push(src.join(&name));
        }
    }
    for patch in patches::PATCHES {
        apply(&src, patch);
    }

    // Our own C beside Lua's (reads VM state the C API does not expose).
    println!("cargo:rerun-if-changed=lua/vm/instructions.c");
    c_files.push(PathBuf::from("lua/vm/instructions.c"));
    let mut build = cc::Build::new();
    build.files(&c_files).include(&src).define("LUA_USE_LINUX", None).warnings(false).flag_if_supported("-fno-common");
    // Always optimised, as in the release binary: scripts run at full speed
    // in debug test builds too, and the patches' regression tests meet the
    // code the optimiser produces (the unpack overflow crashed only once the
    // compiler had dropped the overflow check written in signed arithmetic).
    build.opt_level(2);
    if cfg!(debug_assertions) {
        // As mlua's vendored debug build: Lua checks API misuse.
        build.define("LUA_USE_APICHECK", None);
    }
    build.compile("rlockd_lua51");
    println!("cargo:include={}", src.display());
}

/// Applies `patch` to the copy in `dir`; see `lua/vm/patches.rs` for the rules.
fn apply(dir: &Path, patch: &patches::Patch) {
    let path = dir.join(patch.file);
    let mut text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    for (n, edit) in patch.edits.iter().enumerate() {
        match (text.matches(edit.find).count(), text.matches(edit.replace).count()) {
            (1, _) => text = text.replacen(edit.find, edit.replace, 1),
            (0, 1) => {} // the registry copy already carries this fix
            (found, already) => panic!(
                "Lua patch {} edit {} on {}: the text to replace occurs {found} times and the \
                 replacement {already} times; the lua-src sources changed, review the patch",
                patch.id,
                n + 1,
                patch.file
            ),
        }
    }
    fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// The `lua-5.1.5` directory of the `lua-src` package this build resolved,
/// asked of Cargo itself so that vendored and mirrored registries work too.
fn lua_src_dir() -> PathBuf {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest_dir = env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR");
    let target = env::var("TARGET").expect("TARGET");
    // Filtered to this target: packages of other platforms are never
    // downloaded, and `--offline` must not need them.
    let output = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline", "--filter-platform", &target])
        .arg("--manifest-path")
        .arg(Path::new(&manifest_dir).join("Cargo.toml"))
        .output()
        .expect("run cargo metadata");
    assert!(output.status.success(), "cargo metadata failed: {}", String::from_utf8_lossy(&output.stderr));
    let json = String::from_utf8(output.stdout).expect("cargo metadata output is UTF-8");
    const KEY: &str = "\"manifest_path\":\"";
    json.match_indices(KEY)
        .filter_map(|(at, _)| {
            let rest = &json[at + KEY.len()..];
            let manifest = PathBuf::from(&rest[..rest.find('"')?]);
            let dir = manifest.parent()?.join("lua-5.1.5");
            dir.join("lbaselib.c").is_file().then_some(dir)
        })
        .next()
        .expect("the lua-src package (a build-dependency) was not found by cargo metadata")
}
