// The README's example, as it is printed there.

// lock.test.mjs — run with node --test
import { test } from "node:test";
import assert from "node:assert/strict";
import Redis from "ioredis";
import Redlock from "redlock";
import { RlockdServer } from "rlockd";

test("a lease runs out", async (t) => {
  const srv = await RlockdServer.start();
  const redis = new Redis(srv.url);
  t.after(async () => {
    redis.disconnect();
    await srv.stop();
  });
  const lock = await new Redlock([redis], { retryCount: 0 }).acquire(["orders"], 30000); // nobody extends it
  const [held] = await srv.locks();
  assert.equal(held.holders[0].id, lock.value);
  await srv.advanceClock(30000); // no sleeping: the lease is over now
  assert.equal(await redis.exists("orders"), 0);
  const events = await srv.lockEvents({ key: "orders" });
  assert.deepEqual(events.map((e) => e.event), ["acquired", "expired"]);
  await srv.assertLocksSafe(); // no two holders at once, no queue jumped
});
