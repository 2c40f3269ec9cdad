// ioredis's Redis.Cluster with redlock through a partition of the cluster
// bus on `rlockd --cluster 3 --cluster-replicas 1`: the lock's primary cut
// off from the majority (RLOCKD CLUSTER PARTITION), cluster-node-timeout
// passed on every node's clock (RLOCKD CLOCK ADVANCE), the majority promotes
// its replica and a second client asks for the same lock there.
//
//   lossy:  client A locks on the cut-off primary (WAIT finds no replica)
//           and trusts it; client B gets the lock too, RLOCKD CHECK names
//           the two holders and the partition; after HEAL A's lock is gone.
//   waited: A locks before the cut and trusts it once WAIT says a replica
//           has it; B does not get it; A still holds it after HEAL.
//
//     npm install && rlockd --cluster 3 --cluster-replicas 1 --port 7000 &
//     node cluster_partition.js 7000 lossy
const Redis = require('ioredis');
const Redlock = require('redlock');

function check(cond, what) {
  if (!cond) throw new Error(`node cluster partition: ${what}`);
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

/// One field of an INFO-like text.
function field(text, name) {
  const line = text.split('\r\n').find((l) => l.startsWith(`${name}:`));
  return line && line.slice(name.length + 1);
}

async function main() {
  const port = Number(process.argv[2] || '7000');
  const mode = process.argv[3] || 'lossy';
  const seed = new Redis(port);
  const setup = new Redis.Cluster([{ host: '127.0.0.1', port }]);
  for (const tag of ['a', 'b', 'c']) await setup.set(`{${tag}}:hello`, 'world');
  await waitFor('every replica in CLUSTER SLOTS', async () => (await seed.cluster('SLOTS')).every((r) => r.length === 4));
  await setup.quit();

  const name = 'order:42';
  const slot = await seed.cluster('KEYSLOT', name);
  const before = await range(seed, slot);
  const ownerPort = before[2][1];
  const owner = new Redis(ownerPort);
  const otherPort = (await range(seed, (slot + 8000) % 16384))[2][1];
  const other = new Redis(otherPort);
  const all = (await seed.cluster('SLOTS')).flatMap((r) => r.slice(2).map((n) => n[1]));

  const a = new Redis.Cluster([{ host: '127.0.0.1', port: ownerPort }]);
  const redlockA = new Redlock([a], { retryCount: 0 });
  let lockA = null;
  let waited = null;
  // WAIT counts for the connection that wrote: A's own to the primary.
  const waitOnA = (timeout) => a.nodes('master').find((n) => n.options.port === ownerPort).call('WAIT', 1, timeout);
  if (mode === 'waited') {
    lockA = await redlockA.lock(name, 120000);
    waited = await waitOnA(5000);
    check(waited === 1, `the replica acknowledged the lock: ${waited}`);
  }

  const cut = await other.call('RLOCKD', 'CLUSTER', 'PARTITION', String(ownerPort));
  check(cut.startsWith(`127.0.0.1:${ownerPort} | `), `the partition: ${cut}`);
  if (mode === 'lossy') {
    // The cut-off primary still grants; nothing reaches its replica.
    lockA = await redlockA.lock(name, 120000);
    waited = await waitOnA(100);
  }

  for (const p of all) {
    const c = new Redis(p);
    await c.call('RLOCKD', 'CLOCK', 'ADVANCE', 15001);
    c.disconnect();
  }
  await waitFor('the majority to promote the replica', async () => (await range(other, slot))[2][1] !== ownerPort);
  await waitFor('the cut-off primary to refuse', async () => field(await owner.cluster('INFO'), 'cluster_state') === 'fail');

  // Client B starts from the majority side.
  const b = new Redis.Cluster([{ host: '127.0.0.1', port: otherPort }]);
  let second = true;
  try {
    await new Redlock([b], { retryCount: 0 }).lock(name, 120000);
  } catch (e) {
    second = false;
  }
  const violations = await other.call('RLOCKD', 'CHECK');
  check(violations.every((v) => v.includes('partition') && v.includes(name)), `CHECK names the partition: ${violations}`);

  const healed = await other.call('RLOCKD', 'CLUSTER', 'PARTITION', 'HEAL');
  check(healed === `127.0.0.1:${ownerPort}`, `the old primary rejoins: ${healed}`);
  await waitFor('the old primary to resynchronise', async () => field(await owner.info('replication'), 'master_link_status') === 'up');
  const after = new Redis.Cluster([{ host: '127.0.0.1', port: otherPort }]);
  const aHolds = (await after.get(name)) === lockA.value;
  console.log(`${mode}: WAIT=${waited} second-holder=${second} violations=${violations.length} a-holds-after-heal=${aHolds}`);
  for (const v of violations) console.log(v);
  for (const c of [a, b, after]) c.disconnect();
  for (const c of [seed, owner, other]) c.disconnect();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
