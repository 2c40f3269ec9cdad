// A cluster through ioredis's Cluster, a primary with replicas through ioredis's sentinels.
import { test } from "node:test";
import assert from "node:assert/strict";
import Redis from "ioredis";
import Redlock from "redlock";
import { LocksUnsafeError, RlockdCluster, RlockdError, RlockdReplicated, RlockdServer } from "rlockd";

test("ioredis Cluster follows a moved slot; the clock and checks cover every node", async (t) => {
  const c = await RlockdCluster.start({ nodes: 3, test: t });
  const cluster = new Redis.Cluster(c.startupNodes);
  t.after(async () => {
    cluster.disconnect();
    await c.stop();
  });
  assert.equal(c.nodes.length, 3);
  assert.equal(new Set(c.urls).size, 3);
  const lock = await new Redlock([cluster], { retryCount: 0 }).acquire(["orders"], 30000);
  const slot = await c.keySlot("orders");
  const owner = await c.slotOwner(slot);
  const to = (owner + 1) % 3;
  assert.equal(await c.moveSlot(slot, to), 1); // the key went with its slot
  assert.equal(await c.slotOwner(slot), to);
  assert.equal(await cluster.get("orders"), lock.value); // followed MOVED
  const [held] = await c.locks();
  assert.equal(held.holders[0].id, lock.value);
  await c.advanceClock(30000);
  assert.equal(await cluster.exists("orders"), 0);
  await c.assertLocksSafe();
});

test("a cluster node taken down refuses, the others answer CLUSTERDOWN, and it comes back", async (t) => {
  const c = await RlockdCluster.start({ test: t });
  t.after(() => c.stop());
  const owner = await c.slotOwner(await c.keySlot("k"));
  const [down, other] = [c.nodes[owner], c.nodes[(owner + 1) % 3]];
  await down.command("SET", "k", "v");
  await c.takeDown(owner);
  assert.equal(await down.ping().catch(() => false), false);
  await assert.rejects(other.command("GET", "k"), (e) => e instanceof RlockdError && e.message.startsWith("CLUSTERDOWN"));
  await c.bringUp(down);
  assert.equal(String(await down.command("GET", "k")), "v");
});

test("ioredis through the Sentinels: a failover before replication gives the lock a second holder", async (t) => {
  const r = await RlockdReplicated.start({ replicas: 1, sentinels: 3, test: t });
  const clients = [];
  const viaSentinels = () => {
    const c = new Redis({ sentinels: r.sentinels, name: r.masterName, maxRetriesPerRequest: 1 });
    clients.push(c);
    return c;
  };
  t.after(async () => {
    for (const c of clients) c.disconnect();
    await r.stop();
  });
  assert.equal(r.masterName, "mymaster");
  assert.equal(r.sentinels.length, 3);
  assert.equal(r.replicas.length, 1);
  assert.equal(r.replicaUrls[0], r.replicas[0].url);
  const a = viaSentinels();
  assert.equal(await r.pauseReplication(), 1); // the lock will not reach the replica
  await new Redlock([a], { retryCount: 0 }).acquire(["order:42"], 30000);
  const [link] = await r.replicationStatus();
  assert.equal(link.paused, true);
  assert.ok(link.pendingWrites >= 1);
  const primary = await r.failover();
  assert.equal(primary.port, r.replicas[0].port);
  const b = viaSentinels();
  await new Redlock([b], { retryCount: 0 }).acquire(["order:42"], 30000); // a second holder
  await assert.rejects(r.assertLocksSafe(), (e) => e instanceof LocksUnsafeError && /order:42/.test(e.message));
});

test("replication lag, break and restore", async (t) => {
  const r = await RlockdReplicated.start({ sentinels: 0, test: t });
  t.after(() => r.stop());
  assert.deepEqual(r.sentinels, []);
  assert.equal(await r.setReplicationLag(50), 1);
  assert.equal((await r.replicationStatus())[0].lagMs, 50);
  assert.equal(await r.breakReplication(), 1);
  const info = String(await r.replicas[0].command("INFO", "replication"));
  assert.match(info, /master_link_status:down/);
  assert.equal(await r.restoreReplication({ replica: r.replicas[0] }), 1);
  assert.equal((await r.currentPrimary()).port, r.primary.port);
});

test("cluster replicas are passed to the binary", async () => {
  let c;
  try {
    c = await RlockdCluster.start({ nodes: 2, replicas: 1 });
  } catch (e) {
    // a binary without cluster replicas says so in its log
    assert.ok(e instanceof RlockdError && /cluster-replicas/.test(e.logs), e.message);
    return;
  }
  try {
    assert.equal(c.nodes.length, 4);
    const roles = await Promise.all(c.nodes.map(async (n) => String((await n.command("ROLE"))[0])));
    assert.deepEqual(roles.sort(), ["master", "master", "slave", "slave"]);
  } finally {
    await c.stop();
  }
});

test("a cluster has the replication and failover controls: a failover loses an unreplicated lock", async (t) => {
  const c = await RlockdCluster.start({ nodes: 3, replicas: 1, test: t });
  const cluster = new Redis.Cluster(c.startupNodes);
  t.after(async () => {
    cluster.disconnect();
    await c.stop();
  });
  const slot = await c.keySlot("orders");
  const owner = await c.slotOwner(slot);
  assert.equal(await c.pauseReplication({ primary: owner }), 1);
  assert.equal(await cluster.set("orders", "client-1", "PX", 30000, "NX"), "OK");
  assert.equal((await c.replicationStatus()).filter((l) => l.paused).length, 1);
  const next = await c.failover(owner); // its replica takes the slots without the lock
  assert.notEqual(next.port, c.nodes[owner].port);
  assert.equal(await c.slotOwner(slot), c.nodes.findIndex((n) => n.port === next.port));
  assert.equal(await next.command("SET", "orders", "client-2", "PX", 30000, "NX"), "OK");
  assert.ok((await c.checkLocks()).length > 0); // two holders, seen from any node
  assert.equal(await c.setReplicationLag(0), 3);
  assert.equal(await c.resumeReplication(), 3);
  assert.equal(await c.breakReplication(), 3);
  assert.equal(await c.restoreReplication(), 3);
  await assert.rejects(c.pauseReplication({ replicas: 1 }), /unknown option "replicas"; accepted: replica, primary/);
});

test("start refuses unknown options and wrong types, naming the accepted ones", async () => {
  await assert.rejects(
    RlockdCluster.start({ nodes: 3, clusterReplicas: 1 }),
    /^TypeError: RlockdCluster\.start: unknown option "clusterReplicas"; accepted: nodes, replicas, port, host, password, args, binary, startupTimeoutMs, test$/,
  );
  await assert.rejects(RlockdReplicated.start({ sentinel: 3 }), /unknown option "sentinel"; accepted: replicas, sentinels,/);
  await assert.rejects(RlockdCluster.start({ replicas: "1" }), /option "replicas" takes a count, not "1"/);
  await assert.rejects(RlockdReplicated.start({ args: "--port 1" }), /option "args" takes an array of strings/);
  await assert.rejects(
    RlockdServer.start({ prot: 6379 }),
    /unknown option "prot"; accepted: port, host, password, args, binary, startupTimeoutMs, test/,
  );
});

test("a replicated node taken down and brought up", async (t) => {
  const r = await RlockdReplicated.start({ replicas: 1, sentinels: 1, test: t });
  t.after(() => r.stop());
  await r.takeDown(1); // the replica crashes: its port closes
  await assert.rejects(r.replicas[0].command("PING"));
  await r.bringUp(1);
  assert.equal(await r.replicas[0].command("PING"), "PONG");
});
