// The test-control methods (clock, locks, events, checks, snapshots, faults) with ioredis + redlock.
import { test } from "node:test";
import assert from "node:assert/strict";
import Redis from "ioredis";
import Redlock from "redlock";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { LocksUnsafeError, RlockdError, withServer } from "rlockd";

const connect = (srv, options = {}) => new Redis(srv.url, { maxRetriesPerRequest: 1, ...options });

// Runs `fn(srv, connect)` with a fresh server; every client made through `open` is closed after.
const withClients = (fn) =>
  withServer(async (srv) => {
    const clients = [];
    const open = (options) => {
      const c = connect(srv, options);
      clients.push(c);
      return c;
    };
    try {
      return await fn(srv, open);
    } finally {
      for (const c of clients) c.disconnect();
    }
  });

test(
  "a redlock lease runs out by advanceClock while its holder is paused",
  withClients(async (srv, open) => {
    await srv.freezeClock();
    const a = open();
    const b = open();
    const first = await new Redlock([a], { retryCount: 0 }).acquire(["orders"], 30000);
    assert.deepEqual(await srv.locks(), [
      {
        key: "orders",
        db: 0,
        kind: "token",
        mode: null,
        leaseMs: 30000,
        value: null,
        holders: [{ id: first.value, count: 1, leaseMs: 30000, score: null }],
        waiters: [],
      },
    ]);
    const other = new Redlock([b], { retryCount: 0 });
    await assert.rejects(other.acquire(["orders"], 30000));

    // The holder never extends (a GC pause, a stalled event loop). No sleeping.
    await srv.advanceClock(29999);
    assert.deepEqual((await srv.locks()).map((l) => l.leaseMs), [1]);
    await assert.rejects(other.acquire(["orders"], 30000));
    await srv.advanceClock(1);
    assert.deepEqual(await srv.locks(), []);
    const second = await other.acquire(["orders"], 30000);
    assert.equal((await srv.locks("ord*"))[0].holders[0].id, second.value);
    assert.deepEqual(await srv.locks("nothing*"), []);
    await assert.rejects(first.release()); // no longer its lock

    const events = await srv.lockEvents({ key: "orders" });
    assert.deepEqual(
      events.map((e) => [e.event, e.holder]),
      [
        ["acquired", first.value],
        ["expired", first.value],
        ["acquired", second.value],
      ],
    );
    assert.equal(events[1].command, "(expiry)");
    assert.equal(events[1].client, 0);
    assert.deepEqual(await srv.lockEvents({ since: events[2].id }), []);
    assert.deepEqual(await srv.lockEvents({ key: "elsewhere" }), []);

    // Two holders at once: the server saw it.
    const violations = await srv.checkLocks();
    assert.equal(violations.length, 1, violations.join("\n"));
    assert.match(violations[0], new RegExp(`orders: acquired by ${second.value} after its lease expired while held by ${first.value}`));
    await assert.rejects(srv.assertLocksSafe(), (e) => {
      assert.ok(e instanceof LocksUnsafeError);
      assert.ok(e instanceof assert.AssertionError);
      assert.deepEqual(e.violations, violations);
      assert.ok(e.message.includes(violations[0]));
      return true;
    });
    await srv.resetLockChecks();
    await srv.assertLocksSafe();
    await second.release();
  }),
);

test(
  "a normal redlock run is safe and recorded",
  withClients(async (srv, open) => {
    const redlock = new Redlock([open()], { retryCount: 0 });
    let lock = await redlock.acquire(["job"], 5000);
    lock = await lock.extend(10000);
    await lock.release();
    const again = await redlock.acquire(["job"], 5000);
    await again.release();
    assert.deepEqual(await srv.checkLocks(), []);
    await srv.assertLocksSafe();
    const events = await srv.lockEvents({ key: "job" });
    assert.deepEqual(
      events.map((e) => [e.event, e.holder, e.kind]),
      [
        ["acquired", lock.value, "token"],
        ["renewed", lock.value, "token"],
        ["released", lock.value, "token"],
        ["acquired", again.value, "token"],
        ["released", again.value, "token"],
      ],
    );
    assert.ok(events.every((e, i) => i === 0 || e.id > events[i - 1].id));
    assert.ok(events[0].client > 0 && events[0].command.length > 0);
  }),
);

test(
  "an injected error reaches ioredis and fails a redlock attempt",
  withClients(async (srv, open) => {
    const client = open();
    const message = "READONLY You can't write against a read only replica.";
    const id = await srv.addFault({ kind: "error", message, key: "orders", times: 10 });
    assert.equal(await client.set("unrelated", "1"), "OK"); // another key
    await assert.rejects(client.set("orders", "x"), (e) => e.name === "ReplyError" && e.message === message);
    await assert.rejects(new Redlock([client], { retryCount: 0 }).acquire(["orders"], 5000), (e) => {
      assert.equal(e.name, "ExecutionError");
      return true;
    });
    const [fault] = await srv.faults();
    assert.equal(fault.id, id);
    assert.equal(fault.kind, "error");
    assert.equal(fault.params, message);
    assert.equal(fault.key, "orders");
    assert.equal(fault.command, null);
    assert.ok(fault.hits >= 2, `hits ${fault.hits}`); // the SET, then redlock's script(s) on the key
    assert.equal(fault.timesLeft, 10 - fault.hits);
    assert.equal(await srv.clearFaults(id), 1);
    assert.deepEqual(await srv.faults(), []);
    const lock = await new Redlock([client], { retryCount: 0 }).acquire(["orders"], 5000);
    await lock.release();
    await srv.assertLocksSafe();
  }),
);

test(
  "latency for one named connection only",
  withClients(async (srv, open) => {
    await srv.addFault({ kind: "latency", ms: 300, jitterMs: 0, client: "worker-*", command: "get", times: 1 });
    const worker = open({ connectionName: "worker-1" });
    const plain = open();
    await worker.ping();
    await plain.ping();
    const timed = async (p) => {
      const t = performance.now();
      await p;
      return performance.now() - t;
    };
    assert.ok((await timed(plain.get("k"))) < 250);
    const slow = await timed(worker.get("k"));
    assert.ok(slow >= 290, `worker get took ${slow} ms`);
    assert.deepEqual(await srv.faults(), []); // its one time was used
    assert.ok((await timed(worker.get("k"))) < 250);
  }),
);

test(
  "clock control",
  withServer(async (srv) => {
    await srv.freezeClock();
    const info = await srv.clockInfo();
    assert.equal(info.frozen, true);
    const now = await srv.clockMs();
    assert.equal(now, info.nowMs);
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(await srv.clockMs(), now);
    assert.equal(await srv.advanceClock(1500), now + 1500);
    const base = (Math.floor(now / 1000) - 3600) * 1000;
    assert.equal(await srv.setClock(base), base);
    const [secs] = await srv.command("TIME");
    assert.equal(Number(secs.toString()), base / 1000);
    await srv.resumeClock();
    assert.equal((await srv.clockInfo()).frozen, false);
    await new Promise((r) => setTimeout(r, 20));
    assert.ok((await srv.clockMs()) > base);
    const skewed = await srv.skewClock(-60000);
    assert.ok(Math.abs(skewed - (Date.now() - 60000)) < 1000);
    assert.ok(Math.abs((await srv.clockInfo()).offsetMs + 60000) < 1000);
  }),
);

test(
  "snapshot and restore bring a released lock back",
  withClients(async (srv, open) => {
    const redlock = new Redlock([open()], { retryCount: 0 });
    const lock = await redlock.acquire(["orders"], 30000);
    await srv.snapshot("before-failover");
    assert.deepEqual(await srv.snapshots(), ["before-failover"]);
    await lock.release();
    assert.deepEqual(await srv.locks(), []);
    await srv.restore("before-failover");
    assert.deepEqual((await srv.locks())[0].holders.map((h) => h.id), [lock.value]);
    await assert.rejects(srv.restore("missing"), (e) => e instanceof RlockdError && /no snapshot named/.test(e.message));
    assert.match(await srv.locksText(), /db0 orders token \(lease \d+ ms\)\n  holder /);
  }),
);

test(
  "fault specs are checked, listed, cleared; clients killed by name",
  withClients(async (srv, open) => {
    await assert.rejects(srv.addFault({ kind: "explode" }), TypeError);
    await assert.rejects(srv.addFault({ kind: "slowwrite", bytes: 10 }), /needs ms/);
    await assert.rejects(
      srv.addFault({ kind: "latency", ms: 10, clinet: "worker-*" }),
      /addFault\(\{ kind: "latency" \}\): unknown option "clinet"; accepted: kind, ms, jitterMs, command, key, client, id, channel, times/,
    );
    await assert.rejects(srv.addFault({ kind: "freeze", ms: 10, jitterMs: 5 }), /unknown option "jitterMs"/);
    await assert.rejects(srv.killClients({ name: "worker-*" }), /killClients: unknown option "name"; accepted: client, id/);
    await assert.rejects(srv.addFault({ kind: "freeze", ms: 10, jitterMs: 1 }), /jitterMs/);
    const drop = await srv.addFault({ kind: "dropmsg", channel: "events:*" });
    const close = await srv.addFault({ kind: "close", when: "after", command: "eval", key: "lock:*" });
    const slow = await srv.addFault({ kind: "slowwrite", bytes: 10, ms: 20, command: "get" });
    assert.deepEqual(
      (await srv.faults()).map((f) => [f.id, f.kind, f.params, f.channel]),
      [
        [drop, "dropmsg", "", "events:*"],
        [close, "close", "after", null],
        [slow, "slowwrite", "10 bytes every 20 ms", null],
      ],
    );
    assert.equal(await srv.clearFaults(), 3);

    const victim = open({ connectionName: "victim" });
    const bystander = open({ connectionName: "bystander" });
    await victim.ping();
    await bystander.ping();
    const closed = new Promise((resolve) => victim.once("close", resolve));
    assert.equal(await srv.killClients({ client: "nobody" }), 0);
    assert.equal(await srv.killClients({ client: "vic*" }), 1);
    await closed;
    assert.equal(await bystander.ping(), "PONG");
    const id = await bystander.client("ID");
    assert.equal(await srv.killClients({ id }), 1);
  }),
);

test(
  "a claim outliving its lease is a violation, and the timeline draws it",
  withClients(async (srv, open) => {
    await srv.freezeClock();
    const a = open({ connectionName: "worker-a" });
    const b = open();
    assert.equal(await a.set("orders", "tok-a", "PX", 30_000, "NX"), "OK");
    await srv.claim("orders", "tok-a", async () => {
      await srv.advanceClock(31_000); // paused past its lease
      assert.equal(await b.set("orders", "tok-b", "PX", 30_000, "NX"), "OK");
    });
    const violations = await srv.checkLocks();
    assert.ok(violations.some((v) => v.includes("outlived its lease")), violations.join("\n"));
    assert.ok(violations.some((v) => v.includes("overlaps a grant to tok-b")), violations.join("\n"));
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "rlockd-tl-")), "t.html");
    const html = await srv.timeline(file);
    assert.equal(fs.readFileSync(file, "utf8"), html);
    assert.match(html, /class="lane" data-lock="orders"/);
    assert.match(html, /data-client-name="worker-a" data-end="expired"/);
    assert.match(html, /<rect class="claim"/);
    const data = JSON.parse(await srv.timeline(null, { key: "ord*", format: "json" }));
    assert.deepEqual(data.lanes[0].holds.map((h) => h.end), ["expired", "held"]);
    await assert.rejects(srv.claimLeave("orders", "nobody"), RlockdError);
  }),
);

test(
  "the history is Jepsen-style operations: a refused acquire failed, the expiry the nemesis's",
  withClients(async (srv, open) => {
    await srv.freezeClock();
    const c = open();
    assert.equal(await c.set("orders", "tok-a", "PX", 30_000, "NX"), "OK");
    assert.equal(await c.set("orders", "tok-b", "PX", 30_000, "NX"), null);
    await srv.advanceClock(31_000);
    assert.equal(await c.set("orders", "tok-b", "PX", 30_000, "NX"), "OK");
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "rlockd-h-")), "h.json");
    const doc = await srv.history(file, { key: "ord*" });
    assert.equal(fs.readFileSync(file, "utf8"), doc);
    const ops = JSON.parse(doc);
    assert.deepEqual(
      ops.map((o) => [o.index, o.type, o.process, o.f, o.value.holder, o.time / 1e9]),
      [
        [0, "invoke", 0, "acquire", "tok-a", 0],
        [1, "ok", 0, "acquire", "tok-a", 0],
        [2, "invoke", 1, "acquire", "tok-b", 0],
        [3, "fail", 1, "acquire", "tok-b", 0],
        [4, "info", "nemesis", "expire", "tok-a", 31],
        [5, "info", "nemesis", "expire", "tok-a", 31],
        [6, "invoke", 1, "acquire", "tok-b", 31],
        [7, "ok", 1, "acquire", "tok-b", 31],
      ],
    );
    const edn = (await srv.history(null, { format: "jepsen" })).trim().split("\n");
    assert.equal(edn.length, ops.length);
    assert.match(edn[3], /^\{:index 3, :time 0, :type :fail, :process 1, :f :acquire/);
  }),
);

test(
  "a redlock holder paused inside its claim while another holds the lock is a violation",
  withClients(async (srv, open) => {
    await srv.freezeClock();
    const first = await new Redlock([open()], { retryCount: 0 }).acquire(["orders"], 30000);
    const other = new Redlock([open()], { retryCount: 0 });
    let second;
    await srv.claim("orders", first.value, async () => {
      await srv.advanceClock(31000); // paused past its lease
      second = await other.acquire(["orders"], 30000);
    });
    const violations = (await srv.checkLocks()).join("\n");
    assert.match(violations, new RegExp(`overlaps a grant to ${second.value}`));
    assert.match(violations, /outlived its lease/);
    const data = JSON.parse(await srv.timeline(null, { format: "json" }));
    assert.deepEqual(
      data.lanes[0].holds.map((h) => [h.holder, h.end]),
      [
        [first.value, "expired"],
        [second.value, "held"],
      ],
    );
    await second.release();
  }),
);

test("a failed test's timeline is written and its path reported", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rlockd-artifacts-"));
  const before = process.env.RLOCKD_ARTIFACTS;
  process.env.RLOCKD_ARTIFACTS = dir;
  const said = [];
  const context = { name: "fails on purpose", diagnostic: (m) => said.push(m) };
  try {
    const body = withServer(async (srv) => {
      await srv.command("SET", "orders", "tok", "NX", "PX", 30_000);
      throw new Error("on purpose");
    });
    const e = await body(context).then(
      () => assert.fail("the body threw"),
      (err) => err,
    );
    assert.match(e.message, /rlockd timeline: .*fails_on_purpose-\d+-timeline\.html/);
    assert.equal(said.length, 1);
    const [file] = fs.readdirSync(dir);
    assert.match(fs.readFileSync(path.join(dir, file), "utf8"), /data-lock="orders"/);
  } finally {
    if (before === undefined) delete process.env.RLOCKD_ARTIFACTS;
    else process.env.RLOCKD_ARTIFACTS = before;
  }
});

test("with RLOCKD_RECORD=1 a failed test's recording is saved beside its timeline", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rlockd-artifacts-"));
  const before = [process.env.RLOCKD_ARTIFACTS, process.env.RLOCKD_RECORD];
  process.env.RLOCKD_ARTIFACTS = dir;
  process.env.RLOCKD_RECORD = "1";
  const said = [];
  const context = { name: "records on purpose", diagnostic: (m) => said.push(m) };
  try {
    const body = withServer(async (srv) => {
      await srv.command("SET", "orders", "tok-a", "NX", "PX", 30_000);
      assert.equal(await srv.command("SET", "orders", "tok-b", "NX", "PX", 30_000), null);
      throw new Error("on purpose");
    });
    const e = await body(context).then(
      () => assert.fail("the body threw"),
      (err) => err,
    );
    assert.match(e.message, /rlockd recording: .*records_on_purpose-\d+-recording\.jsonl/);
    assert.ok(said.some((m) => m.startsWith("rlockd recording: ")));
    const lines = fs.readFileSync(e.rlockdRecording, "utf8").trim().split("\n");
    assert.match(lines[0], /^\{"t":"rlockd-record"/);
    assert.ok(lines.some((l) => l.includes('"args":["SET","orders","tok-b","NX","PX","30000"]') &&
      l.includes('"reply":"$-1\\r\\n"')), lines.join("\n"));
  } finally {
    const restore = (k, v) => (v === undefined ? delete process.env[k] : (process.env[k] = v));
    restore("RLOCKD_ARTIFACTS", before[0]);
    restore("RLOCKD_RECORD", before[1]);
  }
});
