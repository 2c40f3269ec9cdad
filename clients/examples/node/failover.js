// The lock lost in a failover, with ioredis's Sentinel support and redlock.
//
//     node failover.js SENTINEL_PORT[,PORT...] lossy|replicated
//
// Client A takes a lock on the primary the Sentinels name. In `lossy` mode
// the primary's replication is paused first (RLOCKD REPL PAUSE), so the
// write that granted it never reaches the replica. Then the primary crashes
// (RLOCKD REPL CRASH ... NOW, sent to the replica); the Sentinels flag it
// down and promote the replica. Client B, discovering the new primary
// through the Sentinels, asks for the same lock; RLOCKD CHECK there says
// whether two clients held it. Client A follows +switch-master on its own.
const Redis = require('ioredis');
const Redlock = require('redlock');

const ports = process.argv[2].split(',').map(Number);
const mode = process.argv[3];
const sentinels = ports.map((port) => ({ host: '127.0.0.1', port }));

async function main() {
  const sentinel = new Redis(ports[0]);
  const [, primaryPort] = await sentinel.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', 'mymaster');
  const replicas = await sentinel.call('SENTINEL', 'REPLICAS', 'mymaster');
  const replicaPort = replicas[0][replicas[0].indexOf('port') + 1];
  // The Sentinels' +switch-master, awaited rather than slept for.
  const events = new Redis(ports[1]);
  await events.subscribe('+switch-master');
  const switched = new Promise((resolve) => events.on('message', (_channel, text) => resolve(text)));

  // Client A, through the Sentinels; failoverDetector follows +switch-master.
  const a = new Redis({ sentinels, name: 'mymaster', failoverDetector: true });
  if (mode === 'lossy') await a.call('RLOCKD', 'REPL', 'PAUSE');
  const lockA = await new Redlock([a], { retryCount: 0 }).lock('order:42', 30000);
  // The write that granted it: acknowledged by the replica or not.
  const acked = await a.call('WAIT', 1, mode === 'lossy' ? 100 : 0);

  const replica = new Redis(Number(replicaPort));
  await replica.call('RLOCKD', 'REPL', 'CRASH', primaryPort, 'NOW');
  const text = await switched;
  const newPort = text.split(' ')[4];

  // Client B, a new process would do the same.
  const b = new Redis({ sentinels, name: 'mymaster' });
  let second = true;
  try {
    await new Redlock([b], { retryCount: 0 }).lock('order:42', 30000);
  } catch (e) {
    second = false; // LockError: A's lock is there
  }
  const violations = await b.call('RLOCKD', 'CHECK');
  // A reconnected to the promoted replica by itself.
  const aPort = (await a.call('CONFIG', 'GET', 'port'))[1];
  console.log(
    `${mode}: WAIT=${acked} second-holder=${second} violations=${violations.length} ` +
      `a-follows=${aPort === newPort && newPort === String(replicaPort)}`,
  );
  for (const v of violations) console.log(v);
  void lockA;
  for (const c of [sentinel, events, replica, a, b]) c.disconnect();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
