// Runs before `npm pack` of a per-platform package (platforms/<os>-<cpu>, its
// prepack script): copies the prebuilt static rlockd binary into that
// package's bin/, stripped of its debug info when binutils are there, so that
// the tarball carries it (nothing is downloaded at install time).
// Source: RLOCKD_BINARY, else the repository's static release build.
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const pkg = process.cwd(); // npm runs prepack in the package being packed
const repo = path.resolve(__dirname, "..", "..", "..");
const src =
  process.env.RLOCKD_BINARY || path.join(repo, "target", "x86_64-unknown-linux-gnu", "release", "rlockd");
if (!fs.existsSync(src)) {
  console.error(
    `rlockd binary not found at ${src}: build it with clients/test.sh (static build) or set RLOCKD_BINARY`,
  );
  process.exit(1);
}
fs.mkdirSync(path.join(pkg, "bin"), { recursive: true });
const dest = path.join(pkg, "bin", "rlockd");
fs.copyFileSync(src, dest);
fs.chmodSync(dest, 0o755);
try {
  require("node:child_process").execFileSync("strip", [dest], { stdio: "ignore" });
} catch {
  // keep the binary as built
}
console.error(`rlockd: packed ${src} into ${JSON.parse(fs.readFileSync(path.join(pkg, "package.json"))).name}`);
