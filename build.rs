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
    for own in ["lua/vm/instructions.c", "lua/vm/tables.c", "lua/vm/args.c"] {
        println!("cargo:rerun-if-changed={own}");
        c_files.push(PathBuf::from(own));
    }
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

/// The `lua-src` version `Cargo.toml` pins as a build-dependency; checked
/// against the manifest below so the two cannot drift apart.
const LUA_SRC_VERSION: &str = "551.0.2";

/// The `lua-5.1.5` directory of the `lua-src` package this build uses.
///
/// `lua-src` does not export the path of its sources, so Cargo is asked where
/// it unpacked that one package: `cargo metadata --offline` on a scratch
/// manifest in `OUT_DIR` whose only dependency is `lua-src` at the pinned
/// version. That graph (`lua-src` and `cc`'s own dependencies) is exactly
/// what Cargo already fetched to compile this build script, so it resolves
/// from the local cache on any machine, with no network and nothing of
/// rlockd's other dependencies or dev-dependencies (which a user of the crate
/// never downloads). Cargo is run from this package's directory, so the
/// user's source replacement (`cargo vendor`, mirrors) applies as it did to
/// the build itself.
fn lua_src_dir() -> PathBuf {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let manifest = fs::read_to_string(manifest_dir.join("Cargo.toml")).expect("read Cargo.toml");
    assert!(
        manifest.contains(&format!("\"={LUA_SRC_VERSION}\"")),
        "build.rs looks for lua-src {LUA_SRC_VERSION}, but Cargo.toml pins another version: update LUA_SRC_VERSION"
    );

    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    let scratch = out.join("lua-src-locate");
    fs::create_dir_all(&scratch).expect("create the lua-src locator directory");
    fs::write(
        scratch.join("Cargo.toml"),
        format!(
            "[package]\nname = \"rlockd-lua-src-locate\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
             [lib]\npath = \"lib.rs\"\n\
             [dependencies]\nlua-src = \"={LUA_SRC_VERSION}\"\n\
             # Not a member of whatever workspace OUT_DIR lies in.\n[workspace]\n"
        ),
    )
    .expect("write the lua-src locator manifest");
    fs::write(scratch.join("lib.rs"), "").expect("write the lua-src locator lib.rs");

    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target = env::var("TARGET").expect("TARGET");
    let output = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline", "--filter-platform", &target])
        .arg("--manifest-path")
        .arg(scratch.join("Cargo.toml"))
        .current_dir(&manifest_dir)
        .output()
        .expect("run cargo metadata");
    assert!(
        output.status.success(),
        "cargo metadata for lua-src {LUA_SRC_VERSION} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json = String::from_utf8(output.stdout).expect("cargo metadata output is UTF-8");
    const KEY: &str = "\"manifest_path\":\"";
    json.match_indices(KEY)
        .filter_map(|(at, _)| {
            let rest = &json[at + KEY.len()..];
            // JSON escapes a Windows path's backslashes.
            let manifest = PathBuf::from(rest[..rest.find('"')?].replace("\\\\", "\\"));
            let dir = manifest.parent()?.join("lua-5.1.5");
            dir.join("lbaselib.c").is_file().then_some(dir)
        })
        .next()
        .unwrap_or_else(|| panic!("cargo metadata did not list the lua-src {LUA_SRC_VERSION} package"))
}
