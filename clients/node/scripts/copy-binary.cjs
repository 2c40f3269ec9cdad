// Runs before `npm pack`: copies the prebuilt static rlockd binary into bin/
// so that the tarball carries it (nothing is downloaded at install time).
// Source: RLOCKD_BINARY, else the repository's static release build.
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const root = path.resolve(__dirname, "..");
const src =
  process.env.RLOCKD_BINARY ||
  path.resolve(root, "..", "..", "target", "x86_64-unknown-linux-gnu", "release", "rlockd");
if (!fs.existsSync(src)) {
  console.error(
    `rlockd binary not found at ${src}: build it with clients/test.sh (static build) or set RLOCKD_BINARY`,
  );
  process.exit(1);
}
fs.mkdirSync(path.join(root, "bin"), { recursive: true });
const dest = path.join(root, "bin", "rlockd");
fs.copyFileSync(src, dest);
fs.chmodSync(dest, 0o755);
// Debug info is of no use to a test: strip it when binutils are there.
try {
  require("node:child_process").execFileSync("strip", [dest], { stdio: "ignore" });
} catch {
  // keep the binary as built
}
console.error(`rlockd: packed ${src}`);
