// ioredis's Redis.Cluster with redlock through failovers on
// `rlockd --cluster 3 --cluster-replicas 1`: a lock held while its primary
// fails over to a replica that has everything (the lock survives, is
// extended and released through the new primary), then a failover with the
// replication stream paused (the promoted replica never got the lock: a
// second client acquires it and RLOCKD CHECK reports two holders).
//
//     npm install && rlockd --cluster 3 --cluster-replicas 1 --port 7000 &
//     node cluster_failover.js 7000
const Redis = require('ioredis');
const Redlock = require('redlock');

function check(cond, what) {
  if (!cond) throw new Error(`node cluster failover: ${what}`);
}

/// Waits for a state of the cluster (bounded: a hang guard).
async function waitFor(what, cond) {
  const deadline = Date.now() + 30000;
  while (!(await cond())) {
    check(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/// The range of `slot` in CLUSTER SLOTS: [start, end, primary, replica…].
async function range(conn, slot) {
  const ranges = await conn.cluster('SLOTS');
  return ranges.find(([a, b]) => a <= slot && slot <= b);
}

async function main() {
  const port = Number(process.argv[2] || '7000');
  const seed = new Redis(port);
  // A replica is listed in CLUSTER SLOTS once it has received something
  // (as on Redis): one write per primary first.
  const setup = new Redis.Cluster([{ host: '127.0.0.1', port }]);
  for (const tag of ['a', 'b', 'c']) await setup.set(`{${tag}}:hello`, 'world');
  await waitFor('every replica in CLUSTER SLOTS', async () => (await seed.cluster('SLOTS')).every((r) => r.length === 4));
  await setup.quit();

  const cluster = new Redis.Cluster([{ host: '127.0.0.1', port }]);
  const redlock = new Redlock([cluster], { retryCount: 0 });
  const name = 'example:failover-redlock';
  const slot = await cluster.cluster('KEYSLOT', name);
  const before = await range(seed, slot);
  const [primaryPort, replicaPort] = [before[2][1], before[3][1]];

  // 1. CLUSTER FAILOVER sent to the replica: it waits until it has all its
  //    primary wrote, then takes the slots. The lock survives.
  let lock = await redlock.lock(name, 30000);
  const replica = new Redis(replicaPort);
  check((await replica.cluster('FAILOVER')) === 'OK', 'CLUSTER FAILOVER');
  await waitFor('the replica to take the slot', async () => (await range(seed, slot))[2][1] === replicaPort);
  lock = await lock.extend(30000); // MOVED from the old primary, then the new one
  await lock.unlock();
  check((await cluster.exists(name)) === 0, 'released through the new primary');

  // 2. The stream to the new primary's replica paused, a lock taken, and a
  //    failover at once (test control, with what the replica has).
  check((await replica.call('RLOCKD', 'REPL', 'PAUSE')) === 1, 'pause the stream');
  const first = await redlock.lock(name, 30000);
  const replicaId = await replica.cluster('MYID');
  const other = new Redis((await range(seed, (slot + 8000) % 16384))[2][1]);
  check((await other.call('RLOCKD', 'CHECK')).length === 0, 'no violation yet');
  check((await other.call('RLOCKD', 'CLUSTER', 'FAILOVER', replicaId)) === 'OK', 'test-control failover');
  check((await range(seed, slot))[2][1] === primaryPort, 'the old primary has the slot back');

  const second = new Redis.Cluster([{ host: '127.0.0.1', port }]);
  const secondLock = await new Redlock([second], { retryCount: 0 }).lock(name, 30000);
  const violations = await other.call('RLOCKD', 'CHECK');
  check(violations.length === 1 && violations[0].includes(name), `RLOCKD CHECK reports two holders: ${violations}`);
  let lost = false;
  try {
    await first.unlock();
  } catch (e) {
    lost = true; // its value is not the lock's any more
  }
  check(lost, 'the first holder could release a lock it had lost');
  await secondLock.unlock();
  check((await cluster.exists(name)) === 0, 'the second holder released it');
  for (const c of [cluster, second]) await c.quit();
  for (const c of [seed, replica, other]) c.disconnect();
  console.log('node cluster failover: ok');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
