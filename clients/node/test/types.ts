// Compiled with tsc --noEmit by clients/test.sh: the declarations in index.d.ts
// describe the ESM entry as it is used.
import { RlockdCluster, RlockdReplicated, RlockdServer, RlockdError, LocksUnsafeError, binaryPath, withServer } from "rlockd";
import { RedisContainer, StartedRedisContainer } from "rlockd/testcontainers";
import type { RlockdOptions, RespReply, LockInfo, LockEvent, FaultInfo, FaultSpec, ClockInfo } from "rlockd";

const options: RlockdOptions = { port: 0, password: "pw", args: ["--loglevel", "verbose"], startupTimeoutMs: 5000 };

export async function use(): Promise<void> {
  const srv: RlockdServer = await RlockdServer.start(options);
  const url: string = srv.url;
  const port: number = srv.port;
  const running: boolean = srv.running;
  const reply: RespReply = await srv.command("SET", "k", 1, Buffer.from("v"));
  const pong: boolean = await srv.ping();
  const logs: string = srv.logs();
  const exe: string = binaryPath();
  await srv.stop(1000);
  // @ts-expect-error the port is a number
  const wrong: string = srv.port;
  try {
    await RlockdServer.start({ binary: "/nonexistent" });
  } catch (e) {
    if (e instanceof RlockdError) {
      const log: string | undefined = e.logs;
      void log;
    }
  }
  void [url, port, running, reply, pong, logs, exe, wrong];
}

// withServer keeps the body's return type and the runner's arguments.
export const body: (label: string) => Promise<number> = withServer(async (srv: RlockdServer, label: string) => {
  await srv.ping();
  return label.length;
});

// Test control: typed records, typed fault specs.
export async function control(srv: RlockdServer): Promise<void> {
  const now: number = await srv.advanceClock(30_000);
  await srv.freezeClock();
  await srv.resumeClock();
  const set: number = await srv.setClock(now);
  const skewed: number = await srv.skewClock(-500);
  const info: ClockInfo = await srv.clockInfo();
  const frozen: boolean = info.frozen;
  const locks: LockInfo[] = await srv.locks("order:*");
  const holder: string = locks[0].holders[0].id;
  const lease: number | null = locks[0].leaseMs;
  const waiterDeadline: number | null = locks[0].waiters[0].deadlineMs;
  const text: string = await srv.locksText();
  const events: LockEvent[] = await srv.lockEvents({ key: "orders", since: 3 });
  const what: "acquired" | "reentered" | "renewed" | "released" | "expired" | "counter" = events[0].event;
  const violations: string[] = await srv.checkLocks();
  await srv.assertLocksSafe();
  await srv.resetLockChecks();
  await srv.snapshot("a");
  await srv.restore("a");
  const names: string[] = await srv.snapshots();
  const specs: FaultSpec[] = [
    { kind: "error", message: "LOADING Redis is loading the dataset in memory", command: "evalsha", times: 3 },
    { kind: "latency", ms: 200, jitterMs: 50, client: "worker-*" },
    { kind: "close", when: "after", command: "eval", key: "lock:*" },
    { kind: "freeze", ms: 5000, id: 7 },
    { kind: "slowwrite", bytes: 10, ms: 20 },
    { kind: "cutwrite", bytes: 5 },
    { kind: "dropmsg", channel: "redisson_lock__channel:*" },
    { kind: "delaymsg", ms: 1000, channel: "x" },
  ];
  const id: number = await srv.addFault(specs[0]);
  const faults: FaultInfo[] = await srv.faults();
  const hits: number = faults[0].hits;
  const left: number | null = faults[0].timesLeft;
  const cleared: number = await srv.clearFaults(id);
  const killed: number = await srv.killClients({ client: "worker-*" });
  // @ts-expect-error a latency fault needs its ms
  await srv.addFault({ kind: "latency" });
  // @ts-expect-error CHANNEL goes with message faults only
  await srv.addFault({ kind: "latency", ms: 1, channel: "x" });
  // @ts-expect-error message faults take no command scope
  await srv.addFault({ kind: "dropmsg", command: "publish" });
  // @ts-expect-error no such fault
  await srv.addFault({ kind: "explode" });
  // @ts-expect-error close is before or after
  await srv.addFault({ kind: "close", when: "during" });
  try {
    await srv.assertLocksSafe();
  } catch (e) {
    if (e instanceof LocksUnsafeError) {
      const seen: string[] = e.violations;
      void seen;
    }
  }
  void [set, skewed, frozen, holder, lease, waiterDeadline, text, what, violations, names, hits, left, cleared, killed];
}

export async function topologies(): Promise<void> {
  const c: RlockdCluster = await RlockdCluster.start({ nodes: 3, replicas: 0 });
  const seeds: { host: string; port: number }[] = c.startupNodes;
  const moved: number = await c.moveSlot(await c.keySlot("k"), c.nodes[1], { keys: 1 });
  await c.takeDown(0);
  await c.bringUp(0);
  const r: RlockdReplicated = await RlockdReplicated.start({ replicas: 1, sentinels: 3 });
  const lag: number = await r.setReplicationLag(100, { replica: r.replicas[0] });
  const [link] = await r.replicationStatus();
  const paused: boolean = link.paused;
  const primary: RlockdServer = await r.failover();
  const name: string = r.masterName;
  void [seeds, moved, lag, paused, primary, name];
  await c.stop();
  await r.stop();
}

// rlockd/testcontainers, as @testcontainers/redis is used.
export async function container(): Promise<string> {
  const c: StartedRedisContainer = await new RedisContainer("redis:7.2").withPassword("pw").start();
  const host: string = c.getHost();
  const port: number = c.getMappedPort(6379);
  const server: RlockdServer = c.server;
  await c.stop();
  // @ts-expect-error the mapped port is a number
  const wrong: string = c.getPort();
  return `${host}:${port}:${server.port}:${wrong}:${await c.executeCliCmd("ping")}`;
}
