// Hash-field expiration (Redis 7.4) on rlockd answering as Redis 8.2.3, with
// node-redis's typed commands and ioredis: a field's TTL set, read and
// cleared, then a field expired by test control's clock.
//
//     rlockd --port 6379 --redis-version 8.2.3 &
//     npm install && node field_ttl.js 6379
const { createClient } = require('redis');
const Redis = require('ioredis');

function check(what, got, want) {
  if (JSON.stringify(got) !== JSON.stringify(want)) {
    throw new Error(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  }
}

async function main() {
  const port = process.argv[2] || '6379';
  const client = createClient({ url: `redis://127.0.0.1:${port}` });
  client.on('error', (err) => {
    console.error(err);
    process.exit(1);
  });
  await client.connect();
  await client.del('ttl:session');
  await client.hSet('ttl:session', { token: 't1', user: 'ada' });
  check('HEXPIRE', await client.hExpire('ttl:session', 'token', 60), [1]);
  const ttl = await client.hTTL('ttl:session', 'token');
  if (!(ttl[0] > 0 && ttl[0] <= 60)) throw new Error(`HTTL: ${ttl}`);
  check('HTTL of a field without a TTL', await client.hTTL('ttl:session', 'user'), [-1]);
  check('HPERSIST', await client.hPersist('ttl:session', 'token'), [1]);
  check('HTTL after HPERSIST', await client.hTTL('ttl:session', 'token'), [-1]);

  // ioredis sends the same commands through call().
  const io = new Redis({ port: Number(port), host: '127.0.0.1', lazyConnect: true });
  await io.connect();
  check('ioredis HPEXPIRE', await io.call('hpexpire', 'ttl:session', 1000, 'FIELDS', 1, 'token'), [1]);
  // The server's clock moves a second on: the field expires, the other stays.
  await io.call('RLOCKD', 'CLOCK', 'ADVANCE', 1500);
  check('HGETALL after the field expired', await io.hgetall('ttl:session'), { user: 'ada' });
  check('ioredis HTTL of the expired field', await io.call('httl', 'ttl:session', 'FIELDS', 1, 'token'), [-2]);
  io.disconnect();
  await client.quit();
  console.log('node field ttl: ok');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
