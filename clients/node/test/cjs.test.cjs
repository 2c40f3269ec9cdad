// The CommonJS entry gives the same class as the ESM one.
const { test } = require("node:test");
const assert = require("node:assert/strict");
const { RlockdServer } = require("rlockd");

test("require('rlockd') starts a server", async () => {
  const srv = await RlockdServer.start();
  try {
    assert.equal(await srv.ping(), true);
  } finally {
    await srv.stop();
  }
});

test("ESM and CJS share one implementation", async () => {
  const esm = await import("rlockd");
  assert.equal(esm.RlockdServer, RlockdServer);
});
