// The topology classes have every method clients/surface.tsv lists for them.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { RlockdCluster, RlockdReplicated } from "rlockd";

const classes = { cluster: RlockdCluster, replicated: RlockdReplicated };
const camel = (name) => name.replace(/_([a-z])/g, (_, c) => c.toUpperCase());

test("every topology class has the surface table's methods", (t) => {
  const file =
    process.env.RLOCKD_SURFACE || path.join(path.dirname(new URL(import.meta.url).pathname), "..", "..", "surface.tsv");
  if (!fs.existsSync(file)) {
    t.skip(`no surface table at ${file} (RLOCKD_SURFACE names it)`);
    return;
  }
  const missing = [];
  for (const line of fs.readFileSync(file, "utf8").split("\n")) {
    if (!line.trim() || line.startsWith("#")) continue;
    const [name, ...kinds] = line.split("\t");
    for (const kind of kinds) {
      if (!(camel(name) in classes[kind].prototype)) missing.push(`${kind}.${camel(name)}`);
    }
  }
  assert.deepEqual(missing, [], `missing from the Node front end: ${missing.join(", ")}`);
});
