// toxiproxy-node-client drives rlockd's Toxiproxy API while ioredis and
// redlock observe each fault through the proxy.
//
// Usage: node drive.js API_PORT RLOCKD_PORT. Prints one line per fault;
// exits non-zero on the first check that fails.
"use strict";
const assert = require("node:assert/strict");
const Redis = require("ioredis");
const Redlock = require("redlock");
const { Toxiproxy } = require("toxiproxy-node-client");

const [apiPort, nodePort] = process.argv.slice(2).map(Number);

// No retries and no offline queue: each fault is seen by the call it hits.
function client(port, commandTimeout = 2000) {
  return new Redis({
    port,
    host: "127.0.0.1",
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
    commandTimeout,
    lazyConnect: true,
  });
}

async function lockCycle(redlock, resource = "toxi:lock") {
  const lock = await redlock.lock(resource, 10000);
  await lock.unlock();
}

async function fails(fn) {
  try {
    await fn();
  } catch (e) {
    return e;
  }
  throw new Error("did not fail");
}

async function main() {
  const toxiproxy = new Toxiproxy(`http://127.0.0.1:${apiPort}`);
  assert.match(await toxiproxy.getVersion(), /"version": "2\.12\.0"/);
  const all = await toxiproxy.getAll();
  assert.equal(all[`rlockd-${nodePort}`].upstream, `127.0.0.1:${nodePort}`);

  const proxy = await toxiproxy.createProxy({
    name: "redis",
    listen: "127.0.0.1:0",
    upstream: `127.0.0.1:${nodePort}`,
  });
  const port = Number(proxy.listen.split(":").pop());
  const direct = new Redis({ port: nodePort, host: "127.0.0.1" });

  // latency: every reply held back 300 ms (downstream).
  let r = client(port);
  await r.connect();
  let redlock = new Redlock([r], { retryCount: 0 });
  await lockCycle(redlock);
  const latency = await proxy.addToxic({
    name: "latency",
    type: "latency",
    stream: "downstream",
    toxicity: 1,
    attributes: { latency: 300, jitter: 0 },
  });
  let start = Date.now();
  await lockCycle(redlock); // the lock script, then the unlock script
  assert.ok(Date.now() - start >= 600, `${Date.now() - start} ms`);
  // Updated in place: the attributes given change.
  const updated = await latency.update({ attributes: { latency: 100 } });
  assert.deepEqual(updated.attributes, { latency: 100, jitter: 0 });
  await updated.remove();
  console.log("latency: the lock and unlock replies held back 300 ms each");

  // timeout: no reply passes; the lock call times out on the client.
  r.disconnect();
  r = client(port, 500);
  await r.connect();
  redlock = new Redlock([r], { retryCount: 0 });
  const timeout = await proxy.addToxic({
    name: "timeout", type: "timeout", stream: "downstream", toxicity: 1, attributes: { timeout: 0 },
  });
  let err = await fails(() => lockCycle(redlock, "toxi:t"));
  assert.equal(err.name, "LockError", String(err));
  await timeout.remove();
  console.log(`timeout: the lock call failed (${err.name})`);
  await direct.del("toxi:t");

  // reset_peer: the connection is reset when the reply comes.
  r.disconnect();
  r = client(port);
  await r.connect();
  assert.equal(await r.ping(), "PONG");
  const reset = await proxy.addToxic({
    name: "reset", type: "reset_peer", stream: "downstream", toxicity: 1, attributes: { timeout: 0 },
  });
  err = await fails(() => r.get("toxi:lock"));
  await reset.remove();
  console.log(`reset_peer: the call failed (${err.message.replace(/\.$/, "")})`);

  // slicer: replies cut into 1-byte pieces, 200 µs apart; reassembled.
  r = client(port);
  await r.connect();
  redlock = new Redlock([r], { retryCount: 0 });
  const slicer = await proxy.addToxic({
    name: "slicer", type: "slicer", stream: "downstream", toxicity: 1,
    attributes: { average_size: 1, size_variation: 0, delay: 200 },
  });
  const value = "v".repeat(2000);
  await direct.set("toxi:big", value);
  start = Date.now();
  assert.equal(await r.get("toxi:big"), value);
  assert.ok(Date.now() - start >= 2000 * 0.2 * 0.9, `${Date.now() - start} ms`);
  await lockCycle(redlock);
  await slicer.remove();
  console.log("slicer: a 2000-byte reply arrived in pieces and read whole; the lock works");

  // down: the proxy disabled, the lock call fails; enabled, it works.
  const down = await proxy.update({ enabled: false, listen: proxy.listen, upstream: proxy.upstream, name: "redis" });
  assert.equal(down.enabled, false);
  err = await fails(() => lockCycle(redlock));
  assert.equal(err.name, "LockError", String(err));
  const up = await proxy.update({ enabled: true, listen: proxy.listen, upstream: proxy.upstream, name: "redis" });
  assert.equal(up.enabled, true);
  r = client(port);
  await r.connect();
  await lockCycle(new Redlock([r], { retryCount: 0 }));
  console.log(`down: the lock call failed (${err.name}); enabled again, it works`);

  // reset: toxics gone, the proxy enabled.
  await proxy.addToxic({ name: "bw", type: "bandwidth", stream: "upstream", toxicity: 0.5, attributes: { rate: 1 } });
  assert.equal((await proxy.getToxic("bw")).toxicity, 0.5);
  await toxiproxy.reset();
  assert.deepEqual((await toxiproxy.get("redis")).toJson().enabled, true);
  assert.equal((await fails(() => proxy.getToxic("bw"))).message, "Request failed with status code 404");
  console.log("reset: every toxic removed");

  await proxy.remove();
  r.disconnect();
  direct.disconnect();
  console.log("toxiproxy-node-client: ok");
  // fetch keeps its API connections open for a while: end now.
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
