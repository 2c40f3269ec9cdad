// Takes and releases a lock on rlockd with node-redis: SET NX PX, then a
// compare-and-delete Lua script (the usual single-instance lock).
//
//     npm install && node example.js 6379
const { createClient } = require('redis');

const UNLOCK = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

async function main() {
  const port = process.argv[2] || '6379';
  const client = createClient({ url: `redis://127.0.0.1:${port}` });
  client.on('error', (err) => {
    console.error(err);
    process.exit(1);
  });
  await client.connect();
  const token = `${process.pid}-${Date.now()}`;
  if ((await client.set('example:lock', token, { NX: true, PX: 10000 })) !== 'OK') {
    throw new Error('lock not acquired');
  }
  await client.set('example:node', 'ok');
  if ((await client.eval(UNLOCK, { keys: ['example:lock'], arguments: [token] })) !== 1) {
    throw new Error('lock not released');
  }
  await client.quit();
  console.log('node example: ok');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
