// Start-to-first-PONG of the Node front end: RlockdServer.start() until the
// first PING is answered (through ioredis, and through srv.command), N times. Then a
// cluster of 3 (RlockdCluster.start()) until ioredis's Cluster, which reads CLUSTER SLOTS
// first, answers PING from every node.
//   node start-to-pong.mjs [N]     # in a project with rlockd and ioredis installed
import Redis from "ioredis";
import { RlockdCluster, RlockdServer } from "rlockd";

const n = Number(process.argv[2] || 20);
const stats = (xs) => {
  xs.sort((a, b) => a - b);
  const med = xs[Math.floor(xs.length / 2)];
  return `median ${med.toFixed(1)} ms, p90 ${xs[Math.ceil(xs.length * 0.9) - 1].toFixed(1)} ms, min ${xs[0].toFixed(1)} ms`;
};
const viaClient = [];
const viaCommand = [];
for (let i = 0; i < n; i++) {
  let t0 = performance.now();
  let srv = await RlockdServer.start();
  const r = new Redis(srv.url, { lazyConnect: true });
  await r.connect();
  if ((await r.ping()) !== "PONG") throw new Error("no PONG");
  viaClient.push(performance.now() - t0);
  r.disconnect();
  await srv.stop();

  t0 = performance.now();
  srv = await RlockdServer.start();
  if ((await srv.command("PING")) !== "PONG") throw new Error("no PONG");
  viaCommand.push(performance.now() - t0);
  await srv.stop();
}
console.log(`node start-to-first-PONG over ${n}, ioredis: ${stats(viaClient)}`);
console.log(`node start-to-first-PONG over ${n}, srv.command: ${stats(viaCommand)}`);
const viaCluster = [];
for (let i = 0; i < n; i++) {
  const t0 = performance.now();
  const c = await RlockdCluster.start({ nodes: 3 });
  const cluster = new Redis.Cluster(c.startupNodes);
  await new Promise((resolve, reject) => {
    cluster.once("ready", resolve);
    cluster.once("error", reject);
  });
  const pongs = await Promise.all(cluster.nodes("all").map((node) => node.ping()));
  if (pongs.length !== 3 || pongs.some((p) => p !== "PONG")) throw new Error("no PONG");
  viaCluster.push(performance.now() - t0);
  cluster.disconnect();
  await c.stop();
}
console.log(`node start-to-first-PONG over ${n}, a 3-node cluster, ioredis Cluster (PING on every node): ${stats(viaCluster)}`);
