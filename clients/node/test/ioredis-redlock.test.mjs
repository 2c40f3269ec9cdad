// ioredis + redlock (its Lua scripts run unmodified) against servers started by the package.
import { test } from "node:test";
import assert from "node:assert/strict";
import Redis from "ioredis";
import Redlock from "redlock";
import { RlockdServer } from "rlockd";

const connect = (srv) => new Redis(srv.url, { maxRetriesPerRequest: 1, lazyConnect: false });

test("redlock takes, extends and releases a lock on one server", async (t) => {
  const srv = await RlockdServer.start();
  const client = connect(srv);
  t.after(async () => {
    client.disconnect();
    await srv.stop();
  });
  const redlock = new Redlock([client], { retryCount: 0 });
  let lock = await redlock.acquire(["orders"], 5000);
  assert.equal(await client.get("orders"), lock.value);
  const ttl = await client.pttl("orders");
  assert.ok(ttl > 0 && ttl <= 5000, `pttl ${ttl}`);
  lock = await lock.extend(20000);
  assert.ok((await client.pttl("orders")) > 5000);
  await assert.rejects(redlock.acquire(["orders"], 5000), /quorum|locked|ResourceLocked|Execution/i);
  await lock.release();
  assert.equal(await client.exists("orders"), 0);
});

test("a lease that runs out lets the next holder in", async (t) => {
  const srv = await RlockdServer.start();
  const a = connect(srv);
  const b = connect(srv);
  t.after(async () => {
    a.disconnect();
    b.disconnect();
    await srv.stop();
  });
  const first = await new Redlock([a], { retryCount: 0 }).acquire(["lease"], 300);
  // retries every 100 ms, bounded (50 tries) as a hang guard
  const second = await new Redlock([b], { retryCount: 50, retryDelay: 100, retryJitter: 0 }).acquire(["lease"], 5000);
  assert.notEqual(second.value, first.value);
  assert.equal(await b.get("lease"), second.value);
  await second.release();
});

test("redlock over three servers keeps working with one of them stopped", async (t) => {
  const servers = await Promise.all([1, 2, 3].map(() => RlockdServer.start()));
  const clients = servers.map(connect);
  t.after(async () => {
    for (const c of clients) c.disconnect();
    await Promise.all(servers.map((s) => s.stop()));
  });
  const redlock = new Redlock(clients, { retryCount: 0 });
  const lock = await redlock.acquire(["multi"], 5000);
  // Redlock resolves as soon as a quorum (2 of 3) has voted; the third
  // server's vote (EVALSHA, then EVAL after NOSCRIPT) may still be on its
  // way. Its attempt statistics settle once every server has answered.
  await Promise.all(lock.attempts);
  for (const c of clients) assert.equal(await c.get("multi"), lock.value);
  await lock.release();

  await servers[2].stop();
  const quorum = await redlock.acquire(["multi"], 5000); // 2 of 3
  assert.equal(await clients[0].get("multi"), quorum.value);
  assert.equal(await clients[1].get("multi"), quorum.value);
  await quorum.release();
});
