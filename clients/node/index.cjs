// rlockd for Node: starts, addresses and stops the rlockd binary.
"use strict";
const { AssertionError } = require("node:assert");
const { spawn } = require("node:child_process");
const fs = require("node:fs");
const net = require("node:net");
const path = require("node:path");

const READY = /ready to accept connections.*\(port (\d+)\)/;
const live = new Set();

class RlockdError extends Error {
  constructor(message, logs) {
    super(message);
    this.name = "RlockdError";
    this.logs = logs;
  }
}

// The binary comes in one package per platform (npm installs the one whose os/cpu match, as an
// optional dependency): @rlockd/linux-x64 and so on.
const PLATFORM_PACKAGE = `@rlockd/${process.platform}-${process.arch}`;
const HOW_TO_GET =
  "set RLOCKD_BINARY to an rlockd executable or put rlockd on PATH (cargo install --path <rlockd checkout>, " +
  "or /usr/local/bin/rlockd from the rlockd container image)";

function bundledBinary() {
  try {
    const dir = path.dirname(require.resolve(`${PLATFORM_PACKAGE}/package.json`));
    const file = path.join(dir, "bin", "rlockd");
    return fs.existsSync(file) ? file : null;
  } catch {
    return null;
  }
}

function onPath() {
  for (const dir of (process.env.PATH || "").split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, "rlockd");
    try {
      if (fs.statSync(file).isFile()) {
        fs.accessSync(file, fs.constants.X_OK);
        return file;
      }
    } catch {
      // not here
    }
  }
  return null;
}

/**
 * Path of the rlockd executable: `explicit`, then RLOCKD_BINARY, then the one in this
 * platform's package (@rlockd/<platform>-<arch>), then rlockd on PATH.
 */
function binaryPath(explicit) {
  let file;
  let source;
  let bundled = false;
  if (explicit) {
    file = explicit;
    source = "the binary option";
  } else if (process.env.RLOCKD_BINARY) {
    file = process.env.RLOCKD_BINARY;
    source = "the RLOCKD_BINARY environment variable";
  } else {
    file = bundledBinary();
    if (!file) {
      // No package for this platform: rlockd on PATH, else say how to get one.
      const found = onPath();
      if (found) return found;
      throw new RlockdError(
        `rlockd binary not found: no ${PLATFORM_PACKAGE} package is installed (the rlockd package has its ` +
          `binary in one package per platform) and there is no rlockd on PATH; ${HOW_TO_GET}`,
      );
    }
    source = `the ${PLATFORM_PACKAGE} package`;
    bundled = true;
  }
  let st;
  try {
    st = fs.statSync(file);
  } catch {
    st = null;
  }
  if (!st || !st.isFile()) {
    throw new RlockdError(
      `rlockd binary not found: ${file} (from ${source}); ${HOW_TO_GET}`,
    );
  }
  const executable = () => {
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (!executable()) {
    // Only the package's own copy is mended (unpacked without its mode bits);
    // a file the user named is refused as it is.
    if (bundled) {
      try {
        fs.chmodSync(file, st.mode | 0o111);
      } catch {
        // reported below
      }
    }
    if (!executable()) throw new RlockdError(`rlockd binary is not executable: ${file} (from ${source})`);
  }
  return file;
}

/** Thrown by `assertLocksSafe()`: the server saw lock safety violations (listed in `violations`). */
class LocksUnsafeError extends AssertionError {
  constructor(violations) {
    const list = violations.map((v) => `  - ${v}`).join("\n");
    super({ message: `rlockd saw ${violations.length} lock safety violation(s):\n${list}` });
    this.name = "LocksUnsafeError";
    this.violations = violations;
  }
}

// Fault kinds and their required parameters, in RLOCKD FAULT order; then the optional ones,
// each with the word the server takes before its value ("" for none); then the scope every
// kind may take (which of it a kind takes: RLOCKD SCHEMA FAULT; the server refuses a wrong
// one). test/schema.test.mjs checks these tables against the server's RLOCKD SCHEMA.
const FAULT_PARAMS = {
  error: ["message"],
  latency: ["ms"],
  close: [],
  freeze: ["ms"],
  slowwrite: ["bytes", "ms"],
  cutwrite: ["bytes"],
  dropmsg: [],
  delaymsg: ["ms"],
};
const FAULT_OPTIONAL = {
  latency: { jitterMs: "JITTER" },
  close: { when: "" },
};
const FAULT_SCOPE = [
  ["command", "COMMAND"],
  ["key", "KEY"],
  ["client", "CLIENT"],
  ["id", "ID"],
  ["channel", "CHANNEL"],
  ["times", "TIMES"],
];

// Each start option: a check of its value and how an error names what it takes.
const isCount = (v) => Number.isInteger(v) && v >= 0;
const OPTION_TYPES = {
  port: [isCount, "a port number"],
  host: [(v) => typeof v === "string", "a string"],
  password: [(v) => v === undefined || v === null || typeof v === "string", "a string"],
  args: [(v) => Array.isArray(v) && v.every((a) => typeof a === "string" || typeof a === "number"), "an array of strings"],
  binary: [(v) => v === undefined || typeof v === "string", "a path string"],
  startupTimeoutMs: [(v) => typeof v === "number" && v > 0, "a number of milliseconds"],
  test: [(v) => v === undefined || (typeof v === "object" && v !== null), "a node:test context"],
  nodes: [(v) => Number.isInteger(v) && v >= 1, "a count of at least 1"],
  replicas: [isCount, "a count"],
  sentinels: [isCount, "a count"],
};

/** Refuses an option `cls` does not take, or a value of the wrong type, in one line. */
function checkOptions(cls, opts) {
  if (opts === null || typeof opts !== "object" || Array.isArray(opts)) {
    throw new TypeError(`${cls.name}.start: options are an object, not ${JSON.stringify(opts)}`);
  }
  const accepted = cls.options;
  for (const [name, value] of Object.entries(opts)) {
    if (!accepted.includes(name)) {
      throw new TypeError(`${cls.name}.start: unknown option "${name}"; accepted: ${accepted.join(", ")}`);
    }
    const [ok, what] = OPTION_TYPES[name];
    if (value !== undefined && !ok(value)) {
      throw new TypeError(`${cls.name}.start: option "${name}" takes ${what}, not ${JSON.stringify(value)}`);
    }
  }
}

class RlockdServer {
  /** The options `start()` takes; any other is refused. */
  static get options() {
    return ["port", "host", "password", "args", "binary", "startupTimeoutMs", "test"];
  }

  constructor(opts = {}) {
    checkOptions(this.constructor, opts);
    this.host = opts.host || "127.0.0.1";
    this.password = opts.password;
    this.port = undefined;
    this._opts = opts;
    this._log = [];
    this._child = null;
    this._exited = null;
    this._ports = [];
    this._sentinelPorts = [];
    // Ready lines to wait for (one per node, one per Sentinel) and the topology's options.
    this._want = { nodes: 1, sentinels: 0, args: [] };
  }

  /**
   * Starts a server and resolves once it accepts connections.
   * @param {{port?: number, host?: string, password?: string, args?: string[], binary?: string, startupTimeoutMs?: number}} [opts]
   */
  static async start(opts = {}) {
    const srv = new this(opts);
    if (opts.test) srv.reportTo(opts.test);
    await srv._start();
    return srv;
  }

  /**
   * Puts this server's log into the report of test `t` (a node:test context) if
   * the test fails: `RlockdServer.start({ test: t })` does it. Needs a runner
   * whose context has `after()`, `passed` and `diagnostic()` (node:test on Node
   * 20.12 and later); elsewhere it does nothing.
   */
  reportTo(t) {
    if (!t || typeof t.after !== "function" || typeof t.diagnostic !== "function") return this;
    t.after(() => {
      if (t.passed !== false) return;
      // One diagnostic per line: the TAP reporter (node --test's default when output is not
      // a terminal) writes a diagnostic on one line, with its newlines as literal "\n".
      t.diagnostic(`rlockd log (port ${this.port}):`);
      for (const line of (this.logs().trimEnd() || "(no output)").split("\n")) t.diagnostic(line);
    });
    return this;
  }

  get url() {
    const auth = this.password ? `:${encodeURIComponent(this.password)}@` : "";
    return `redis://${auth}${this.host}:${this.port}`;
  }

  get pid() {
    return this._child ? this._child.pid : undefined;
  }

  get running() {
    return this._child !== null && this._child.exitCode === null && this._child.signalCode === null;
  }

  /** Everything the server printed so far (stdout and stderr). */
  logs() {
    return this._log.join("");
  }

  _start() {
    const exe = binaryPath(this._opts.binary);
    const requested = this._opts.port || 0;
    const args = ["--port", String(requested), "--bind", this.host];
    if (this.password) args.push("--requirepass", this.password);
    args.push(...this._want.args, ...(this._opts.args || []).map(String));
    const child = spawn(exe, args, {
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...process.env, RLOCKD_STDIN_WATCHDOG: "1", NO_COLOR: "1" },
    });
    this._child = child;
    this._exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
    // The server watches its stdin: when this process dies the pipe closes and
    // it exits. Neither the child nor its pipes keep the event loop alive.
    child.unref();
    for (const s of [child.stdin, child.stdout, child.stderr]) s.unref?.();
    child.stdin.on("error", () => {});
    live.add(this);
    const timeoutMs = this._opts.startupTimeoutMs ?? 10000;
    return new Promise((resolve, reject) => {
      let stdout = "";
      let done = false;
      const fail = (why) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        this._kill();
        const log = this.logs().trim() || "(no output)";
        const msg = /in use/i.test(log)
          ? `rlockd could not listen on ${this.host}:${requested}: the port is already in use`
          : `rlockd ${why} (${exe} ${args.join(" ")})`;
        reject(new RlockdError(`${msg}\n--- rlockd log ---\n${log}`, log));
      };
      const timer = setTimeout(() => fail(`printed no ready line within ${timeoutMs} ms`), timeoutMs);
      child.stdout.on("data", (chunk) => {
        const text = chunk.toString("utf8");
        this._log.push(text);
        if (done) return;
        stdout += text;
        let nl;
        while ((nl = stdout.indexOf("\n")) >= 0) {
          const line = stdout.slice(0, nl);
          stdout = stdout.slice(nl + 1);
          const m = READY.exec(line);
          if (!m) continue;
          (/sentinel/.test(line) ? this._sentinelPorts : this._ports).push(Number(m[1]));
          if (this._ports.length >= this._want.nodes && this._sentinelPorts.length >= this._want.sentinels) {
            done = true;
            clearTimeout(timer);
            this.port = this._ports[0];
            return resolve();
          }
        }
      });
      child.stderr.on("data", (chunk) => this._log.push(chunk.toString("utf8")));
      child.once("error", (e) => fail(`could not be run: ${e.message}`));
      child.once("exit", (code, signal) => {
        live.delete(this);
        // let the pipes drain so that the error carries the whole log
        setImmediate(() => fail(signal ? `was killed by ${signal}` : `exited with code ${code}`));
      });
    });
  }

  _kill() {
    if (this.running) this._child.kill("SIGKILL");
    live.delete(this);
  }

  /** Stops the server (SIGTERM, SIGKILL after `timeoutMs`). Safe to call twice. */
  async stop(timeoutMs = 5000) {
    const child = this._child;
    if (!child) return;
    live.delete(this);
    if (this.running) {
      child.kill("SIGTERM");
      let timer;
      const late = new Promise((resolve) => {
        timer = setTimeout(() => resolve("late"), timeoutMs);
      });
      if ((await Promise.race([this._exited, late])) === "late") child.kill("SIGKILL");
      clearTimeout(timer);
      await this._exited;
    }
    child.stdin.destroy();
  }

  async [Symbol.asyncDispose ?? Symbol.for("Symbol.asyncDispose")]() {
    await this.stop();
  }

  /**
   * Sends one command on a new connection and resolves with the decoded reply:
   * bulk strings as Buffer, status replies as string, integers as number,
   * arrays as arrays; an error reply rejects with an RlockdError.
   */
  command(...args) {
    const cmds = this.password ? [["AUTH", this.password], args] : [args];
    return new Promise((resolve, reject) => {
      const sock = net.connect(this.port, this.host);
      sock.setTimeout(10000, () => sock.destroy(new RlockdError("command timed out")));
      let buf = Buffer.alloc(0);
      let replies = [];
      sock.on("connect", () => sock.write(Buffer.concat(cmds.map(encode))));
      sock.on("data", (d) => {
        buf = Buffer.concat([buf, d]);
        for (;;) {
          const r = parse(buf, 0);
          if (!r) return;
          replies.push(r.value);
          buf = buf.subarray(r.end);
          if (replies.length === cmds.length) {
            sock.end();
            const last = replies[replies.length - 1];
            const err = replies.find((x) => x instanceof RlockdError);
            return err ? reject(err) : resolve(last);
          }
        }
      });
      sock.on("error", reject);
    });
  }

  async ping() {
    return (await this.command("PING")) === "PONG";
  }

  // ------------------------------------------------------------ test control
  // The RLOCKD commands as methods, through command(); RESP2 maps arrive as
  // flat arrays [k1, v1, k2, v2, ...].

  _rlockd(...args) {
    return this.command("RLOCKD", ...args);
  }

  /** The server's time, unix ms. */
  async clockMs() {
    return await this._rlockd("CLOCK", "GET");
  }

  /** Time, offset from the system clock, frozen or not. */
  async clockInfo() {
    const m = toMap(await this._rlockd("CLOCK", "INFO"));
    return { nowMs: m.now_ms, offsetMs: m.offset_ms, frozen: m.frozen === 1 };
  }

  /** Moves the server's time by `ms` (negative: back); keys now due expire before it resolves. Resolves with the new time. */
  advanceClock(ms) {
    return this._rlockd("CLOCK", "ADVANCE", Math.trunc(ms));
  }

  /** Jumps to `unixMs`; resolves with the new time. */
  setClock(unixMs) {
    return this._rlockd("CLOCK", "SET", Math.trunc(unixMs));
  }

  /** Stops the server's time (TTLs, TIME, blocking timeouts, scripts). */
  async freezeClock() {
    await this._rlockd("CLOCK", "FREEZE");
  }

  /** Lets the server's time run again as if it had never stopped (moves made while frozen stay; the time spent frozen is caught up). */
  async resumeClock() {
    await this._rlockd("CLOCK", "RESUME");
  }

  /** Runs `ms` ahead of (negative: behind) the system clock; resolves with the new time. */
  skewClock(ms) {
    return this._rlockd("CLOCK", "SKEW", Math.trunc(ms));
  }

  /** Every lock in the keyspace (keys matching the glob `pattern`). */
  async locks(pattern) {
    const reply = await this._rlockd("LOCKS", ...(pattern === undefined ? [] : [pattern]));
    return reply.map(toLock);
  }

  /** The same, readable: one line per lock, holder and waiter. */
  async locksText(pattern) {
    const reply = await this._rlockd("LOCKS", ...(pattern === undefined ? [] : [pattern]), "TEXT");
    return text(reply);
  }

  /** What happened to the locks (of `key`), after event id `since`. */
  async lockEvents({ key, since = 0 } = {}) {
    const args = ["EVENTS"];
    if (key !== undefined) args.push(key);
    if (since) args.push("SINCE", since);
    return (await this._rlockd(...args)).map(toEvent);
  }

  /** Every safety violation the server saw (empty: nothing was unsafe). */
  async checkLocks() {
    return (await this._rlockd("CHECK")).map(text);
  }

  /** Forgets the lock events and violations seen so far (and the claims). */
  async resetLockChecks() {
    await this._rlockd("CHECK", "RESET");
  }

  /**
   * RLOCKD TIMELINE: the lock history as one self-contained HTML document (or JSON with
   * `format: "json"`), also written to `file` when one is given. `key` is a glob pattern;
   * `fromMs` / `toMs` bound the time shown (server time, unix ms).
   */
  async timeline(file, { key, fromMs, toMs, format = "html" } = {}) {
    const args = ["TIMELINE"];
    if (key !== undefined) args.push("KEY", key);
    if (fromMs !== undefined) args.push("FROM", Math.trunc(fromMs));
    if (toMs !== undefined) args.push("TO", Math.trunc(toMs));
    args.push("FORMAT", format);
    const doc = text(await this._rlockd(...args));
    if (file !== undefined && file !== null) fs.writeFileSync(file, doc);
    return doc;
  }

  /**
   * RLOCKD HISTORY: the lock history as Jepsen-style operations (index, time, type, process, f,
   * value), a JSON array (or Jepsen's EDN with `format: "jepsen"`), also written to `file` when
   * one is given. `key` is a glob pattern. The Go module's Porcupine check reads it.
   */
  async history(file, { key, format = "json" } = {}) {
    const args = ["HISTORY"];
    if (key !== undefined) args.push("KEY", key);
    args.push("FORMAT", format);
    const doc = text(await this._rlockd(...args));
    if (file !== undefined && file !== null) fs.writeFileSync(file, doc);
    return doc;
  }

  /** RLOCKD CLAIM ENTER: the application's code is now inside the critical section of `lock` as `holder`. */
  async claimEnter(lock, holder) {
    await this._rlockd("CLAIM", "ENTER", lock, holder);
  }

  /** RLOCKD CLAIM LEAVE: it left it. */
  async claimLeave(lock, holder) {
    await this._rlockd("CLAIM", "LEAVE", lock, holder);
  }

  /**
   * Runs `fn` as a claimed critical section of `lock` held as `holder` (redlock's `lock.value`,
   * Redisson's `uuid:threadId`): checkLocks() then flags it if it overlapped another holder's
   * grant or outlived its own lease. Resolves with what `fn` resolves with.
   */
  async claim(lock, holder, fn) {
    await this.claimEnter(lock, holder);
    try {
      return await fn();
    } finally {
      await this.claimLeave(lock, holder);
    }
  }

  /** Rejects with a LocksUnsafeError (an AssertionError) listing the violations, if any. */
  async assertLocksSafe() {
    const violations = await this.checkLocks();
    if (violations.length) throw new LocksUnsafeError(violations);
  }

  /** Captures every database, TTLs included, under `name`. */
  async snapshot(name) {
    await this._rlockd("SNAPSHOT", name);
  }

  /** Replaces every database with snapshot `name` (as after a failover). */
  async restore(name) {
    await this._rlockd("RESTORE", name);
  }

  async snapshots() {
    return (await this._rlockd("SNAPSHOTS")).map(text);
  }

  /**
   * Sets a fault; resolves with its id.
   * `addFault({ kind: "latency", ms: 200, client: "worker-*", times: 3 })`
   */
  async addFault(spec) {
    const kind = String(spec && spec.kind).toLowerCase();
    const params = FAULT_PARAMS[kind];
    if (!params) {
      throw new TypeError(`unknown fault kind ${spec && spec.kind}; one of ${Object.keys(FAULT_PARAMS).join(", ")}`);
    }
    const optional = Object.entries(FAULT_OPTIONAL[kind] || {});
    const accepted = ["kind", ...params, ...optional.map(([field]) => field)];
    checkKeys(`addFault({ kind: "${kind}" })`, spec, [...accepted, ...FAULT_SCOPE.map(([field]) => field)]);
    const args = ["FAULT", kind.toUpperCase()];
    for (const p of params) {
      if (spec[p] === undefined || spec[p] === null) throw new TypeError(`fault ${kind} needs ${p}`);
      args.push(spec[p]);
    }
    for (const [field, word] of optional) {
      if (spec[field] !== undefined && spec[field] !== null) args.push(...(word ? [word] : []), spec[field]);
    }
    for (const [field, word] of FAULT_SCOPE) {
      if (spec[field] !== undefined && spec[field] !== null) args.push(word, spec[field]);
    }
    return await this._rlockd(...args);
  }

  /** The faults set, with how often each applied. */
  async faults() {
    return (await this._rlockd("FAULT", "LIST")).map(toFault);
  }

  /** Removes fault `id`, or all of them; resolves with how many went. */
  clearFaults(id) {
    return this._rlockd("FAULT", "CLEAR", ...(id === undefined ? [] : [id]));
  }

  /** Closes the connections matching `client` (a name pattern) and/or `id` now; resolves with how many. */
  async killClients(opts = {}) {
    checkKeys("killClients", opts, ["client", "id"]);
    const { client, id } = opts;
    const args = ["FAULT", "KILL"];
    if (client !== undefined) args.push("CLIENT", client);
    if (id !== undefined) args.push("ID", id);
    return this._rlockd(...args);
  }
}

function text(v) {
  return Buffer.isBuffer(v) ? v.toString("utf8") : v;
}

function optText(v) {
  return v === null || v === undefined ? null : text(v);
}

// A RESP2 flat array [k1, v1, ...] as an object.
function toMap(flat) {
  if (!Array.isArray(flat) || flat.length % 2) throw new RlockdError(`expected a map, got ${flat}`);
  const m = {};
  for (let i = 0; i < flat.length; i += 2) m[text(flat[i])] = flat[i + 1];
  return m;
}

function toLock(flat) {
  const m = toMap(flat);
  return {
    key: text(m.key),
    db: m.db,
    kind: text(m.kind),
    mode: optText(m.mode),
    leaseMs: m.lease_ms,
    value: m.value,
    holders: m.holders.map((h) => {
      const x = toMap(h);
      return {
        id: text(x.id),
        count: x.count,
        leaseMs: x.lease_ms,
        score: x.score === null ? null : Number(text(x.score)),
      };
    }),
    waiters: m.waiters.map((w) => {
      const x = toMap(w);
      return { id: text(x.id), deadlineMs: x.deadline_ms };
    }),
  };
}

function toEvent(flat) {
  const m = toMap(flat);
  return {
    id: m.id,
    timeMs: m.time_ms,
    db: m.db,
    key: text(m.key),
    kind: text(m.kind),
    event: text(m.event),
    holder: text(m.holder),
    count: m.count,
    client: m.client,
    command: text(m.command),
  };
}

function toFault(flat) {
  const m = toMap(flat);
  return {
    id: m.id,
    kind: text(m.kind),
    params: text(m.params),
    command: optText(m.command),
    key: optText(m.key),
    client: optText(m.client),
    clientId: m.client_id,
    channel: optText(m.channel),
    timesLeft: m.times_left,
    hits: m.hits,
  };
}

function encode(args) {
  const parts = [Buffer.from(`*${args.length}\r\n`)];
  for (const a of args) {
    const b = Buffer.isBuffer(a) ? a : Buffer.from(String(a));
    parts.push(Buffer.from(`$${b.length}\r\n`), b, Buffer.from("\r\n"));
  }
  return Buffer.concat(parts);
}

// RESP2 reply at `pos`: {value, end} or null when incomplete.
function parse(buf, pos) {
  const nl = buf.indexOf("\r\n", pos);
  if (nl < 0) return null;
  const kind = String.fromCharCode(buf[pos]);
  const line = buf.toString("utf8", pos + 1, nl);
  const next = nl + 2;
  switch (kind) {
    case "+":
      return { value: line, end: next };
    case "-":
      return { value: new RlockdError(line), end: next };
    case ":":
      return { value: Number(line), end: next };
    case "$": {
      const n = Number(line);
      if (n < 0) return { value: null, end: next };
      if (buf.length < next + n + 2) return null;
      return { value: buf.subarray(next, next + n), end: next + n + 2 };
    }
    case "*": {
      const n = Number(line);
      if (n < 0) return { value: null, end: next };
      const items = [];
      let at = next;
      for (let i = 0; i < n; i++) {
        const r = parse(buf, at);
        if (!r) return null;
        items.push(r.value);
        at = r.end;
      }
      return { value: items, end: at };
    }
    default:
      return { value: new RlockdError(`unexpected reply ${line}`), end: next };
  }
}

// ------------------------------------------------------------ topologies

// A node of a topology: its address and its own test control (its keyspace, clock, locks,
// faults). The nodes share the topology's process: stop the topology, not a node.
function nodeAt(owner, port) {
  const n = new RlockdServer({ host: owner.host, password: owner.password });
  n.port = port;
  return n;
}

// The nodes that accept connections (a cluster node taken down does not).
async function upNodes(nodes) {
  const up = await Promise.all(nodes.map((n) => n.ping().catch(() => false)));
  return nodes.filter((_, i) => up[i]);
}

function replicationLink(flat) {
  const m = toMap(flat);
  return {
    primary: text(m.primary),
    replica: text(m.replica),
    acked: m.acked,
    pendingWrites: m.pending_writes,
    pendingBytes: m.pending_bytes,
    paused: m.paused === 1,
    lagMs: m.lag_ms,
    broken: m.broken === 1,
  };
}

/** Refuses keys of a method's options object that are not in `accepted`. */
function checkKeys(what, opts, accepted) {
  if (opts === null || typeof opts !== "object") throw new TypeError(`${what}: options are an object`);
  for (const k of Object.keys(opts)) {
    if (!accepted.includes(k)) throw new TypeError(`${what}: unknown option "${k}"; accepted: ${accepted.join(", ")}`);
  }
}

/** What a cluster and a replicated set share: the clock and the checks over every node. */
class RlockdTopology extends RlockdServer {
  /** Every node in start order (a replicated set: the primary, then its replicas). */
  get nodes() {
    return this._ports.map((p) => nodeAt(this, p));
  }

  get urls() {
    return this.nodes.map((n) => n.url);
  }

  async _each(fn) {
    const out = [];
    for (const n of await upNodes(this.nodes)) out.push(await fn(n));
    return out;
  }

  /** Moves every node's time by `ms`; resolves with the first node's new time. */
  async advanceClock(ms) {
    return (await this._each((n) => n.advanceClock(ms)))[0];
  }

  async setClock(unixMs) {
    return (await this._each((n) => n.setClock(unixMs)))[0];
  }

  async freezeClock() {
    await this._each((n) => n.freezeClock());
  }

  async resumeClock() {
    await this._each((n) => n.resumeClock());
  }

  async skewClock(ms) {
    return (await this._each((n) => n.skewClock(ms)))[0];
  }

  /** The violations any node saw (`assertLocksSafe()` rejects with them). */
  async checkLocks() {
    return [...new Set((await this._each((n) => n.checkLocks())).flat())];
  }

  async resetLockChecks() {
    await this._each((n) => n.resetLockChecks());
  }
}

/**
 * A Redis Cluster in one rlockd process (`rlockd --cluster N`), each node on a free port.
 * `RlockdCluster.start({ nodes: 3 })`; `replicas` passes `--cluster-replicas` (where the
 * binary supports it). The clock, `locks()`, `checkLocks()` and `assertLocksSafe()` cover
 * every node that is up; the other test-control methods act on the first node, and
 * `nodes[i]` has each node's.
 */
class RlockdCluster extends RlockdTopology {
  static get options() {
    return ["nodes", "replicas", ...super.options];
  }

  constructor(opts = {}) {
    super(opts);
    const n = opts.nodes ?? 3;
    const r = opts.replicas ?? 0;
    const args = ["--cluster", String(n)];
    if (r) args.push("--cluster-replicas", String(r));
    this._want = { nodes: n * (1 + r), sentinels: 0, args };
  }

  /** `[{ host, port }]` of every node, as `new Redis.Cluster(...)` takes its seeds. */
  get startupNodes() {
    return this._ports.map((port) => ({ host: this.host, port }));
  }

  async _via(...args) {
    let last;
    for (const n of this.nodes) {
      try {
        return await n._rlockd(...args);
      } catch (e) {
        if (e instanceof RlockdError) throw e;
        last = e; // that node is down: any other one answers
      }
    }
    throw new RlockdError(`no node of the cluster answers: ${last && last.message}`);
  }

  _index(node) {
    return typeof node === "number" ? node : this._ports.indexOf(node.port);
  }

  async _up() {
    const [n] = await upNodes(this.nodes);
    if (!n) throw new RlockdError("no node of the cluster answers");
    return n;
  }

  /** The key's hash slot (`CLUSTER KEYSLOT`). */
  async keySlot(key) {
    return await (await this._up()).command("CLUSTER", "KEYSLOT", key);
  }

  /** The index in `nodes` of the node serving `slot` now (-1: none). */
  async slotOwner(slot) {
    for (const r of await (await this._up()).command("CLUSTER", "SLOTS")) {
      if (r[0] <= slot && slot <= r[1]) return this._ports.indexOf(r[2][1]);
    }
    return -1;
  }

  /**
   * Moves `slot` with its keys to `node` (its index, or a node): clients get MOVED. With
   * `{ keys: n }` moves only n more keys and leaves the slot MIGRATING/IMPORTING (ASK).
   * Resolves with how many keys moved.
   */
  moveSlot(slot, node, { keys } = {}) {
    const args = ["CLUSTER", "MOVESLOT", slot, this._index(node)];
    if (keys !== undefined) args.push("KEYS", keys);
    return this._via(...args);
  }

  /** Stops a node: its clients are cut, its port refuses, the others answer CLUSTERDOWN. */
  async takeDown(node) {
    await this._via("CLUSTER", "DOWN", this._index(node));
  }

  /** Starts a node taken down again, on its port, with its keys. */
  async bringUp(node) {
    await this._via("CLUSTER", "UP", this._index(node));
  }

  /** The locks of the whole cluster (any node answers for all). */
  async locks(pattern) {
    const [n] = await upNodes(this.nodes);
    return n ? n.locks(pattern) : [];
  }

  async _primaries() {
    const out = [];
    for (const n of await upNodes(this.nodes)) {
      if (text((await n.command("ROLE"))[0]) === "master") out.push(n);
    }
    return out;
  }

  _node(node) {
    return typeof node === "number" ? this.nodes[node] : node;
  }

  // RLOCKD REPL on one replica's primary (that link), on one primary, or on every primary.
  async _repl(opts, ...args) {
    checkKeys("replication control", opts, ["replica", "primary"]);
    const { replica, primary } = opts;
    if (replica !== undefined) {
      const r = this._node(replica);
      const role = await r.command("ROLE");
      if (text(role[0]) !== "slave") throw new RlockdError(`node ${r.port} is not a replica`);
      return [await nodeAt(this, Number(role[2]))._rlockd("REPL", ...args, r.port)];
    }
    if (primary !== undefined) return [await this._node(primary)._rlockd("REPL", ...args)];
    const out = [];
    for (const p of await this._primaries()) out.push(await p._rlockd("REPL", ...args));
    return out;
  }

  async _replSum(opts, ...args) {
    return (await this._repl(opts, ...args)).reduce((a, b) => a + b, 0);
  }

  /** Holds the stream to the replicas (of every primary; `{ primary }`: of one; `{ replica }`: to one): writes pile up unacknowledged. Resolves with how many links. */
  pauseReplication(opts = {}) {
    return this._replSum(opts, "PAUSE");
  }

  /** Lets the held stream flow again. */
  resumeReplication(opts = {}) {
    return this._replSum(opts, "RESUME");
  }

  /** Delivers each write `ms` after it was made (0: at once). */
  setReplicationLag(ms, opts = {}) {
    return this._replSum(opts, "LAG", Math.trunc(ms));
  }

  /** Loses what the replicas have not received yet; resolves with how many writes. */
  dropReplication(opts = {}) {
    return this._replSum(opts, "DROP");
  }

  /** Takes the links down (`master_link_status:down`). */
  breakReplication(opts = {}) {
    return this._replSum(opts, "BREAK");
  }

  /** Brings the links back; the replicas catch up. */
  restoreReplication(opts = {}) {
    return this._replSum(opts, "RESTORE");
  }

  /** Every primary's links (`RLOCKD REPL STATUS`). */
  async replicationStatus() {
    return (await this._repl({}, "STATUS")).flat().map(replicationLink);
  }

  /**
   * Promotes `node` (a replica's index or the node; a primary's index names its first
   * replica) at once with what it has received (RLOCKD CLUSTER FAILOVER): it takes the
   * slots, its primary becomes its replica. Resolves with the new primary.
   */
  async failover(node) {
    await this._via("CLUSTER", "FAILOVER", this._index(node));
    const named = this._node(node);
    if (text((await named.command("ROLE"))[0]) === "master") return named;
    for (const p of await this._primaries()) {
      if ((await p.command("ROLE"))[2].some((r) => Number(text(r[1])) === named.port)) return p;
    }
    throw new RlockdError(`no node took over from node ${named.port}`);
  }
}

/**
 * A primary with replicas and Sentinels watching it as "mymaster", in one rlockd process
 * (`rlockd --replicas N --sentinel 0,0,0`): `RlockdReplicated.start({ replicas: 1,
 * sentinels: 3 })`. The replication controls go to the current primary; the clock and the
 * checks cover every node; the other test-control methods act on the primary as started.
 */
class RlockdReplicated extends RlockdTopology {
  static get options() {
    return ["replicas", "sentinels", ...super.options];
  }

  constructor(opts = {}) {
    super(opts);
    const r = opts.replicas ?? 1;
    const s = opts.sentinels ?? 3;
    const args = ["--replicas", String(r)];
    if (s) args.push("--sentinel", Array(s).fill("0").join(","));
    this._want = { nodes: 1 + r, sentinels: s, args };
  }

  /** The name the Sentinels watch the primary under. */
  get masterName() {
    return "mymaster";
  }

  /** The primary as started (`currentPrimary()` after a failover). */
  get primary() {
    return this.nodes[0];
  }

  /** The replicas as started. */
  get replicas() {
    return this.nodes.slice(1);
  }

  get replicaUrls() {
    return this.replicas.map((n) => n.url);
  }

  /** `[{ host, port }]` of each Sentinel, as ioredis's `sentinels` option takes them. */
  get sentinels() {
    return this._sentinelPorts.map((port) => ({ host: this.host, port }));
  }

  /** The node that is the primary now (each node's ROLE). */
  async currentPrimary() {
    for (const n of this.nodes) {
      if (text((await n.command("ROLE"))[0]) === "master") return n;
    }
    throw new RlockdError("no node is a primary");
  }

  /** Where the Sentinels say the primary is: `{ host, port }` (SENTINEL GET-MASTER-ADDR-BY-NAME). */
  async sentinelPrimary() {
    if (!this._sentinelPorts.length) throw new RlockdError("started without Sentinels");
    const s = nodeAt({ host: this.host }, this._sentinelPorts[0]);
    const [host, port] = await s.command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", this.masterName);
    return { host: text(host), port: Number(text(port)) };
  }

  async _repl(opts, ...args) {
    checkKeys("replication control", opts, ["replica"]);
    const { replica } = opts;
    if (replica !== undefined) args.push(typeof replica === "number" ? replica : replica.port);
    return await (await this.currentPrimary())._rlockd("REPL", ...args);
  }

  /** Holds the stream to the replicas (to `replica`, a port or a node): writes pile up unacknowledged. Resolves with how many links. */
  pauseReplication(opts = {}) {
    return this._repl(opts, "PAUSE");
  }

  /** Lets the held stream flow again. */
  resumeReplication(opts = {}) {
    return this._repl(opts, "RESUME");
  }

  /** Delivers each write `ms` after it was made (0: at once). */
  setReplicationLag(ms, opts = {}) {
    return this._repl(opts, "LAG", Math.trunc(ms));
  }

  /** Loses what the replicas have not received yet, as a crash would; resolves with how many writes. */
  dropReplication(opts = {}) {
    return this._repl(opts, "DROP");
  }

  /** Takes the links down (`master_link_status:down`). */
  breakReplication(opts = {}) {
    return this._repl(opts, "BREAK");
  }

  /** Brings the links back; the replicas catch up. */
  restoreReplication(opts = {}) {
    return this._repl(opts, "RESTORE");
  }

  /** The current primary's links (`RLOCKD REPL STATUS`). */
  async replicationStatus() {
    return (await this._repl({}, "STATUS")).map(replicationLink);
  }

  /**
   * Promotes a replica (`replica`, else the first) with what it has received now; the old
   * primary becomes its replica and the Sentinels announce +switch-master. Resolves with
   * the new primary once it is done and the Sentinels name it.
   */
  async failover(opts = {}) {
    await this._repl(opts, "FAILOVER");
    const p = await this.currentPrimary();
    const deadline = Date.now() + 10000; // the Sentinels look every 20 ms
    while (this._sentinelPorts.length && (await this.sentinelPrimary()).port !== p.port) {
      if (Date.now() > deadline) throw new RlockdError(`the Sentinels do not name ${p.url} after the failover`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return p;
  }

  /** The locks on the current primary. */
  async locks(pattern) {
    return (await this.currentPrimary()).locks(pattern);
  }

  async _viaOther(node, ...args) {
    const target = typeof node === "number" ? this.nodes[node] : node;
    const [other] = (await upNodes(this.nodes)).filter((n) => n.port !== target.port);
    if (!other) throw new RlockdError("no other node answers");
    await other._rlockd("REPL", ...args, target.port);
  }

  /**
   * Crashes a node (its index or the node; RLOCKD REPL CRASH): its port closes, its clients
   * are cut, what it had not replicated is lost; the Sentinels notice it after
   * down-after-milliseconds and fail over from a primary.
   */
  takeDown(node) {
    return this._viaOther(node, "CRASH");
  }

  /** Starts a crashed node again on its port (RLOCKD REPL REVIVE). */
  bringUp(node) {
    return this._viaOther(node, "REVIVE");
  }
}

/**
 * Wraps a test body: starts a server, passes it (and the runner's context) to
 * `fn`, stops it afterwards, and when `fn` throws appends the server's log to
 * the error. `test("x", withServer(async (srv) => { ... }))`
 */
/**
 * Writes `srv`'s timeline for a failed test under RLOCKD_ARTIFACTS (default: rlockd-artifacts
 * in the working directory) and, given node:test's context `t`, reports its path as the test's
 * diagnostic. Resolves with the path, or undefined if the server could not answer.
 */
async function writeTimeline(srv, t) {
  try {
    const dir = process.env.RLOCKD_ARTIFACTS || "rlockd-artifacts";
    fs.mkdirSync(dir, { recursive: true });
    const name = (t && typeof t.name === "string" ? t.name : "test").replace(/[^A-Za-z0-9_.-]+/g, "_");
    const file = path.resolve(dir, `${name}-${srv.port}-timeline.html`);
    await srv.timeline(file);
    if (t && typeof t.diagnostic === "function") t.diagnostic(`rlockd timeline: ${file}`);
    return file;
  } catch {
    return undefined;
  }
}

/**
 * With RLOCKD_RECORD=1, saves `srv`'s recording (`RLOCKD RECORD SAVE`) for a failed test beside
 * its timeline, for `rlockd replay`; resolves with the path, or undefined.
 */
async function saveRecording(srv, t) {
  if (process.env.RLOCKD_RECORD !== "1") return undefined;
  try {
    const dir = process.env.RLOCKD_ARTIFACTS || "rlockd-artifacts";
    fs.mkdirSync(dir, { recursive: true });
    const name = (t && typeof t.name === "string" ? t.name : "test").replace(/[^A-Za-z0-9_.-]+/g, "_");
    const file = path.resolve(dir, `${name}-${srv.port}-recording.jsonl`);
    await srv.command("RLOCKD", "RECORD", "SAVE", file);
    if (t && typeof t.diagnostic === "function") t.diagnostic(`rlockd recording: ${file}`);
    return file;
  } catch {
    return undefined;
  }
}

function withServer(fn, options) {
  return async (...ctx) => {
    const srv = await RlockdServer.start(options);
    try {
      // RLOCKD_RECORD=1: the server records every command, kept for a failure.
      if (process.env.RLOCKD_RECORD === "1") await srv.command("RLOCKD", "RECORD", "START");
      return await fn(srv, ...ctx);
    } catch (e) {
      const log = `--- rlockd log (port ${srv.port}) ---\n${srv.logs()}`;
      // The recording first: it then ends with the test's own commands.
      const recording = await saveRecording(srv, ctx[0]);
      const timeline = await writeTimeline(srv, ctx[0]);
      if (e instanceof Error) {
        e.message = `${e.message}\n${log}` + (timeline ? `\n--- rlockd timeline: ${timeline}` : "") +
          (recording ? `\n--- rlockd recording: ${recording}` : "");
        e.rlockdLogs = srv.logs();
        e.rlockdTimeline = timeline;
        e.rlockdRecording = recording;
      }
      throw e;
    } finally {
      await srv.stop();
    }
  };
}

// A normal exit (or process.exit) stops every server still running.
process.on("exit", () => {
  for (const srv of live) srv._kill();
});

module.exports = {
  RlockdServer,
  RlockdCluster,
  RlockdReplicated,
  RlockdTopology,
  RlockdError,
  LocksUnsafeError,
  binaryPath,
  withServer,
  writeTimeline,
};
// Not API: the tables test/schema.test.mjs compares with the server's RLOCKD SCHEMA.
Object.defineProperty(module.exports, "_tables", {
  value: Object.freeze({ FAULT_PARAMS, FAULT_OPTIONAL, FAULT_SCOPE }),
  enumerable: false,
});
