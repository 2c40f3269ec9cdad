// The RlockdServer object: start, address, stop, errors, logs, orphans.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { createRequire } from "node:module";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { RlockdServer, RlockdError, binaryPath, withServer } from "rlockd";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function alive(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.split(")").pop().trim().split(" ")[0] !== "Z";
  } catch {
    return false;
  }
}

async function waitUntil(pred, ms = 10000) {
  const deadline = Date.now() + ms; // hang guard only
  while (Date.now() < deadline) {
    if (await pred()) return true;
    await sleep(20);
  }
  return false;
}

test("the binary comes from this platform's package", () => {
  const p = binaryPath();
  assert.match(p, new RegExp(`node_modules/@rlockd/${process.platform}-${process.arch}/bin/rlockd$`));
  fs.accessSync(p, fs.constants.X_OK);
});

test("without this platform's package, rlockd on PATH, else one line on how to get one", async () => {
  // index.cjs on its own, where no @rlockd/<platform> package can be resolved from.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rlockd-alone-"));
  const bin = path.join(dir, "bin");
  fs.mkdirSync(bin);
  fs.copyFileSync(createRequire(import.meta.url).resolve("rlockd"), path.join(dir, "index.cjs"));
  fs.copyFileSync(binaryPath(), path.join(bin, "rlockd"));
  fs.chmodSync(path.join(bin, "rlockd"), 0o755);
  const run = (PATH) => {
    const env = { ...process.env, PATH };
    delete env.RLOCKD_BINARY;
    const script = `try { console.log(require(${JSON.stringify(path.join(dir, "index.cjs"))}).binaryPath()) } catch (e) { console.log(e.message) }`;
    return execFileSync(process.execPath, ["-e", script], { env, encoding: "utf8" }).trim();
  };
  try {
    assert.equal(run(`${path.join(dir, "empty")}${path.delimiter}${bin}`), path.join(bin, "rlockd"));
    const none = run(path.join(dir, "empty"));
    assert.match(none, /no @rlockd\/\S+ package is installed .* no rlockd on PATH; .*cargo install --path/);
  } finally {
    fs.rmSync(dir, { recursive: true });
  }
});

test("start, url, port, command, stop", async () => {
  const srv = await RlockdServer.start();
  assert.equal(srv.url, `redis://127.0.0.1:${srv.port}`);
  assert.ok(srv.port > 0);
  assert.equal(await srv.command("PING"), "PONG");
  assert.equal(await srv.command("SET", "k", "v"), "OK");
  assert.deepEqual(await srv.command("GET", "k"), Buffer.from("v"));
  assert.equal(await srv.command("INCR", "n"), 1);
  await assert.rejects(srv.command("NOSUCHCOMMAND"), /unknown command/);
  const pid = srv.pid;
  await srv.stop();
  assert.equal(srv.running, false);
  assert.ok(await waitUntil(() => !alive(pid)));
  await assert.rejects(
    new Promise((resolve, reject) => {
      const s = net.connect(srv.port, "127.0.0.1", () => resolve(s.end()));
      s.on("error", reject);
    }),
  );
  await srv.stop(); // twice is fine
});

test("password goes into the url", async () => {
  const srv = await RlockdServer.start({ password: "s3cret" });
  try {
    assert.equal(srv.url, `redis://:s3cret@127.0.0.1:${srv.port}`);
    assert.equal(await srv.ping(), true);
  } finally {
    await srv.stop();
  }
});

test("many servers in one process are independent", async () => {
  const servers = await Promise.all([1, 2, 3].map(() => RlockdServer.start()));
  try {
    assert.equal(new Set(servers.map((s) => s.port)).size, 3);
    for (const [i, s] of servers.entries()) assert.equal(await s.command("SET", "lock", `o${i}`, "NX"), "OK");
    for (const [i, s] of servers.entries()) assert.deepEqual(await s.command("GET", "lock"), Buffer.from(`o${i}`));
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
});

test("a taken port is a clear error with the server log", async () => {
  const first = await RlockdServer.start();
  try {
    await assert.rejects(RlockdServer.start({ port: first.port }), (e) => {
      assert.ok(e instanceof RlockdError);
      assert.match(e.message, new RegExp(`${first.port}: the port is already in use`));
      assert.match(e.message, /--- rlockd log ---/);
      return true;
    });
    assert.equal(await first.ping(), true);
  } finally {
    await first.stop();
  }
});

test("a missing binary is a clear error (option and RLOCKD_BINARY)", async () => {
  const missing = path.join(os.tmpdir(), "no-such-dir", "rlockd");
  await assert.rejects(RlockdServer.start({ binary: missing }), /rlockd binary not found: .*no-such-dir.*binary option/);
  const saved = process.env.RLOCKD_BINARY;
  process.env.RLOCKD_BINARY = missing;
  try {
    await assert.rejects(RlockdServer.start(), /RLOCKD_BINARY/);
  } finally {
    if (saved === undefined) delete process.env.RLOCKD_BINARY;
    else process.env.RLOCKD_BINARY = saved;
  }
});

test("RLOCKD_BINARY runs that binary", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rlockd-bin-"));
  const copy = path.join(dir, "my-rlockd");
  fs.copyFileSync(binaryPath(), copy);
  fs.chmodSync(copy, 0o755);
  process.env.RLOCKD_BINARY = copy;
  try {
    const srv = await RlockdServer.start();
    try {
      assert.equal(fs.readlinkSync(`/proc/${srv.pid}/exe`), copy);
    } finally {
      await srv.stop();
    }
  } finally {
    delete process.env.RLOCKD_BINARY;
    fs.rmSync(dir, { recursive: true });
  }
});

test("the server log is available", async () => {
  const srv = await RlockdServer.start({ args: ["--loglevel", "verbose"] });
  await srv.stop();
  assert.match(srv.logs(), /ready to accept connections/);
});

test("a killed parent leaves no rlockd", async () => {
  const script =
    'const { RlockdServer } = require("rlockd");' +
    "RlockdServer.start().then((s) => { console.log(s.pid, s.port); setInterval(() => {}, 1000); });";
  const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  try {
    const line = await new Promise((resolve, reject) => {
      child.stdout.once("data", (d) => resolve(d.toString()));
      child.once("exit", () => reject(new Error("child exited early")));
    });
    const [pid, port] = line.trim().split(/\s+/).map(Number);
    assert.ok(alive(pid));
    assert.ok(port > 0);
    child.kill("SIGKILL"); // no exit handler runs: only the pipe tells the server
    assert.ok(await waitUntil(() => !alive(pid)), "rlockd outlived its killed parent");
  } finally {
    child.kill("SIGKILL");
  }
});

test("a normal exit stops servers that were not stopped", async () => {
  const script =
    'const { RlockdServer } = require("rlockd");' +
    "RlockdServer.start().then((s) => console.log(s.pid));";
  const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  const code = await new Promise((resolve) => child.once("exit", resolve));
  assert.equal(code, 0);
  const pid = Number(out.trim());
  assert.ok(pid > 0);
  assert.ok(await waitUntil(() => !alive(pid)));
});

test("withServer passes a running server and stops it after the body", async () => {
  let pid;
  const body = withServer(async (srv, label) => {
    pid = srv.pid;
    assert.equal(label, "ctx");
    return srv.command("PING");
  });
  assert.equal(await body("ctx"), "PONG");
  assert.ok(await waitUntil(() => !alive(pid)));
});

test("withServer appends the server log to a failing body's error", async () => {
  let pid;
  const body = withServer(async (srv) => {
    pid = srv.pid;
    assert.equal(1, 2, "on purpose");
  }, { args: ["--loglevel", "verbose"] });
  await assert.rejects(body(), (e) => {
    assert.match(e.message, /on purpose/);
    assert.match(e.message, /--- rlockd log \(port \d+\) ---/);
    assert.match(e.message, /ready to accept connections/);
    assert.match(e.rlockdLogs, /ready to accept connections/);
    return true;
  });
  assert.ok(await waitUntil(() => !alive(pid)));
});

test("a non-executable binary is refused, not made executable", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rlockd-bin-"));
  const text = path.join(dir, "rlockd");
  fs.writeFileSync(text, "echo this is not rlockd\n", { mode: 0o644 });
  const saved = process.env.RLOCKD_BINARY;
  try {
    await assert.rejects(RlockdServer.start({ binary: text }), /rlockd binary is not executable: .*binary option/);
    process.env.RLOCKD_BINARY = text;
    await assert.rejects(RlockdServer.start(), /rlockd binary is not executable: .*RLOCKD_BINARY/);
    assert.equal(fs.statSync(text).mode & 0o777, 0o644);
  } finally {
    if (saved === undefined) delete process.env.RLOCKD_BINARY;
    else process.env.RLOCKD_BINARY = saved;
    fs.rmSync(dir, { recursive: true });
  }
});

test("start({ test: t }) puts the log into a failing test's report only", async () => {
  // A test file of its own, run by a child node --test, beside this one so that it finds "rlockd".
  const file = path.join(path.dirname(new URL(import.meta.url).pathname), `report-${process.pid}.test.mjs`);
  fs.writeFileSync(
    file,
    `import { test } from "node:test";
import assert from "node:assert/strict";
import { RlockdServer } from "rlockd";
test("fails", async (t) => {
  const srv = await RlockdServer.start({ test: t, args: ["--loglevel", "verbose"] });
  t.after(() => srv.stop());
  await srv.command("SET", "k", "v");
  assert.equal(1, 2, "on purpose");
});
test("passes", async (t) => {
  const srv = await RlockdServer.start({ test: t });
  t.after(() => srv.stop());
  assert.equal(await srv.command("PING"), "PONG");
});
`,
  );
  try {
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT; // a run of its own, not a child of this one
    const child = spawn(process.execPath, ["--test", "--test-reporter=tap", file], {
      stdio: ["ignore", "pipe", "pipe"],
      env,
    });
    let out = "";
    child.stdout.on("data", (c) => (out += c));
    child.stderr.on("data", (c) => (out += c));
    const code = await new Promise((resolve) => child.once("exit", resolve));
    assert.equal(code, 1, out);
    assert.match(out, /# pass 1/, out);
    assert.match(out, /# fail 1/, out);
    const logs = out.match(/rlockd log \(port \d+\)/g) || [];
    assert.equal(logs.length, 1, out);
    assert.match(out, /ready to accept connections/, out);
    // Under TAP each log line is a diagnostic line of its own, not one line with "\n" in it.
    assert.match(out, /^\s*# .*ready to accept connections/m, out);
    assert.ok(!out.includes("\\n"), out);
  } finally {
    fs.rmSync(file, { force: true });
  }
});
