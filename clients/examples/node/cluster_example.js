// ioredis's Redis.Cluster with redlock, and node-redis's createCluster, on
// `rlockd --cluster 3`: keys spread over the nodes, a Redlock lock held
// while its slot moves to another node (ASK, then MOVED), and a script over
// keys of two slots refused with CROSSSLOT.
//
//     npm install && rlockd --cluster 3 --port 7000 & node cluster_example.js 7000
const Redis = require('ioredis');
const Redlock = require('redlock');
const { createCluster } = require('redis');

function check(cond, what) {
  if (!cond) throw new Error(`node cluster example: ${what}`);
}

/// The id of the node serving `slot`, and of another primary.
async function owners(client, slot) {
  const ranges = await client.cluster('SLOTS');
  const owner = ranges.find(([a, b]) => a <= slot && slot <= b)[2][2];
  const other = ranges.map((r) => r[2][2]).find((id) => id !== owner);
  return { owner, other };
}

async function withIoredis(port) {
  const cluster = new Redis.Cluster([{ host: '127.0.0.1', port: Number(port) }]);
  for (let i = 0; i < 100; i++) await cluster.set(`key:${i}`, String(i));
  for (let i = 0; i < 100; i++) check((await cluster.get(`key:${i}`)) === String(i), 'values read back');
  const sizes = await Promise.all(cluster.nodes('master').map((n) => n.dbsize()));
  check(sizes.length === 3 && sizes.every((s) => s > 0), `keys on every node: ${sizes}`);

  const redlock = new Redlock([cluster], { retryCount: 0 });
  const name = 'example:redlock';
  const lock = await redlock.lock(name, 30000);
  let second = null;
  try {
    second = await redlock.lock(name, 30000);
  } catch (e) {
    // LockError: held by the first lock.
  }
  check(second === null, 'a second holder got the lock');

  const slot = await cluster.cluster('KEYSLOT', name);
  const { other } = await owners(cluster, slot);
  // Any node runs RLOCKD; the slot's owner is found by the server.
  const anyNode = cluster.nodes('master')[0];
  check((await anyNode.call('RLOCKD', 'CLUSTER', 'MOVESLOT', slot, other, 'KEYS', '1')) === 1, 'lock key moved');
  const extended = await lock.extend(30000); // its owner answers ASK now
  check((await anyNode.call('RLOCKD', 'CLUSTER', 'MOVESLOT', slot, other)) === 0, 'slot moved');
  await extended.unlock(); // MOVED to the new owner
  check((await cluster.exists(name)) === 0, 'lock still held after unlock');
  const after = await owners(cluster, slot);
  check(after.owner === other, 'the slot has its new owner');

  let crossslot = null;
  try {
    await cluster.eval("return redis.call('mget', KEYS[1], KEYS[2])", 2, 'a', 'b');
  } catch (e) {
    crossslot = e.message;
  }
  check(crossslot === "CROSSSLOT Keys in request don't hash to the same slot", `CROSSSLOT expected: ${crossslot}`);
  await cluster.quit();
}

async function withNodeRedis(port) {
  const cluster = createCluster({ rootNodes: [{ url: `redis://127.0.0.1:${port}` }] });
  cluster.on('error', (err) => {
    console.error(err);
    process.exit(1);
  });
  await cluster.connect();
  for (let i = 0; i < 50; i++) await cluster.set(`nr:${i}`, String(i));
  for (let i = 0; i < 50; i++) check((await cluster.get(`nr:${i}`)) === String(i), 'node-redis values');
  const token = `${process.pid}`;
  check((await cluster.set('{order:1}:lock', token, { NX: true, PX: 10000 })) === 'OK', 'node-redis lock');
  const replies = await cluster.multi().incr('{order:1}:count').get('{order:1}:lock').exec();
  check(replies[0] === 1 && replies[1] === token, `MULTI on one slot: ${replies}`);
  let crossslot = null;
  try {
    await cluster.eval("return redis.call('mget', KEYS[1], KEYS[2])", { keys: ['a', 'b'] });
  } catch (e) {
    crossslot = e.message;
  }
  check(crossslot === "CROSSSLOT Keys in request don't hash to the same slot", `CROSSSLOT expected: ${crossslot}`);
  await cluster.quit();
}

async function main() {
  const port = process.argv[2] || '7000';
  await withIoredis(port);
  await withNodeRedis(port);
  console.log('node cluster example: ok');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
