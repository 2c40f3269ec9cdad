// The paused holder, with ioredis and redlock: the application believes it is inside its
// critical section (RLOCKD CLAIM) while its lease runs out and a second client takes the
// lock. RLOCKD CHECK says so, and the timeline (written to TIMELINE_FILE) shows why.
//
//     npm install && node paused_holder.js 6379 timeline.html
const fs = require('fs');
const Redis = require('ioredis');
const Redlock = require('redlock');

const port = Number(process.argv[2] || 6379);
const out = process.argv[3] || 'timeline.html';

async function main() {
  const admin = new Redis(port);
  const a = new Redis(port, { connectionName: 'worker-a' });
  const b = new Redis(port, { connectionName: 'worker-b' });
  try {
    await admin.call('RLOCKD', 'CLOCK', 'FREEZE'); // the test drives time
    const first = await new Redlock([a], { retryCount: 0 }).lock('orders', 30000);
    await a.call('RLOCKD', 'CLAIM', 'ENTER', 'orders', first.value);
    // A pauses (a GC pause, a stalled event loop) past its lease: no extension.
    await admin.call('RLOCKD', 'CLOCK', 'ADVANCE', 31000);
    let second = false;
    try {
      await new Redlock([b], { retryCount: 0 }).lock('orders', 30000);
      second = true; // B holds the lock while A still works
    } catch (e) {
      second = false;
    }
    await a.call('RLOCKD', 'CLAIM', 'LEAVE', 'orders', first.value);
    const violations = await admin.call('RLOCKD', 'CHECK');
    fs.writeFileSync(out, await admin.call('RLOCKD', 'TIMELINE'));
    console.log(`paused holder: second-holder=${second} violations=${violations.length}`);
    for (const v of violations) console.log(v);
  } finally {
    for (const c of [admin, a, b]) c.disconnect();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
