// node-redis: a SET NX PX lock with a compare-and-delete release script.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createClient } from "redis";
import { RlockdServer } from "rlockd";

const RELEASE = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`;

test("node-redis takes and releases a lock", async (t) => {
  const srv = await RlockdServer.start();
  const a = createClient({ url: srv.url });
  const b = createClient({ url: srv.url });
  await a.connect();
  await b.connect();
  t.after(async () => {
    await a.quit();
    await b.quit();
    await srv.stop();
  });
  assert.equal(await a.set("job", "token-a", { NX: true, PX: 10000 }), "OK");
  assert.equal(await b.set("job", "token-b", { NX: true, PX: 10000 }), null);
  assert.equal(await b.eval(RELEASE, { keys: ["job"], arguments: ["token-b"] }), 0);
  assert.equal(await a.eval(RELEASE, { keys: ["job"], arguments: ["token-a"] }), 1);
  assert.equal(await b.set("job", "token-b", { NX: true, PX: 10000 }), "OK");
  const ttl = await b.pTTL("job");
  assert.ok(ttl > 0 && ttl <= 10000);
});

test("node-redis with a password in the url", async (t) => {
  const srv = await RlockdServer.start({ password: "pw" });
  const c = createClient({ url: srv.url });
  await c.connect();
  t.after(async () => {
    await c.quit();
    await srv.stop();
  });
  assert.equal(await c.ping(), "PONG");
});
