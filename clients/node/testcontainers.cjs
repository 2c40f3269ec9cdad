"use strict";
// The shape of @testcontainers/redis, started without Docker: switching a test is
// its import line (require("@testcontainers/redis") -> require("rlockd/testcontainers")).
// RedisContainer(image) takes the image name and ignores it (no image is run: an
// rlockd process answers in its place); start() resolves to a StartedRedisContainer
// with getHost, getPort, getMappedPort, getFirstMappedPort, getPassword,
// getConnectionUrl, executeCliCmd, restart and stop. Its test control is at .server.
const fs = require("node:fs");
const { RlockdServer, RlockdError } = require("./index.cjs");

const REDIS_PORT = 6379;

class RedisContainer {
  constructor(image = "redis:7.2") {
    this.image = image;
    this._password = "";
    this._initialData = "";
  }

  withPassword(password) {
    this._password = password;
    return this;
  }

  /** Data kept across restart() needs a process that writes it to disk: not supported here. */
  withPersistence() {
    throw new RlockdError("rlockd/testcontainers: withPersistence is not supported (the server keeps its data in memory)");
  }

  /** A file of redis-cli commands (one per line, quoted as a shell would) run once started. */
  withInitialData(importScriptFile) {
    this._initialData = importScriptFile;
    return this;
  }

  // GenericContainer's settings that mean nothing without Docker.
  withExposedPorts() {
    return this;
  }
  withStartupTimeout() {
    return this;
  }
  withName() {
    return this;
  }
  withReuse() {
    return this;
  }

  async start() {
    const started = new StartedRedisContainer(this.image, this._password);
    await started._start();
    if (this._initialData) {
      const text = fs.readFileSync(this._initialData, "utf8");
      for (const line of text.split("\n")) {
        const args = splitCommand(line);
        if (args.length === 0) continue;
        try {
          await started.server.command(...args);
        } catch (e) {
          await started.stop();
          throw new RlockdError(`Could not import initial data from ${this._initialData}: ${e.message}`);
        }
      }
    }
    return started;
  }
}

class StartedRedisContainer {
  constructor(image, password) {
    this.image = image;
    this._password = password || "";
    /** The rlockd server in the container's place (its test control: advanceClock, locks...). */
    this.server = new RlockdServer(this._password ? { password: this._password } : {});
  }

  async _start() {
    await this.server._start();
  }

  getHost() {
    return this.server.host;
  }

  getPort() {
    return this.getMappedPort(REDIS_PORT);
  }

  getFirstMappedPort() {
    return this.getPort();
  }

  getMappedPort(port) {
    if (Number(String(port).replace(/\/tcp$/, "")) !== REDIS_PORT) {
      throw new Error(`No port mapping found for "${port}": only ${REDIS_PORT} is exposed`);
    }
    return this.server.port;
  }

  getPassword() {
    return this._password ? this._password.toString() : "";
  }

  getConnectionUrl() {
    const url = new URL("", "redis://");
    url.hostname = this.getHost();
    url.port = this.getPort().toString();
    url.password = this.getPassword();
    return url.toString();
  }

  getId() {
    return `rlockd-${this.server.pid}`;
  }

  getName() {
    return `/rlockd-${this.server.pid}`;
  }

  /** The command's reply as redis-cli prints it when its output is not a terminal. */
  async executeCliCmd(cmd, additionalFlags = []) {
    let reply;
    try {
      reply = await this.server.command(...splitCommand(cmd), ...additionalFlags);
    } catch (e) {
      reply = e;
    }
    return cliText(reply) + "\n";
  }

  /** A new process on a new port; the data does not survive (there is no disk here). */
  async restart() {
    await this.server.stop();
    this.server = new RlockdServer(this._password ? { password: this._password } : {});
    await this.server._start();
    return this;
  }

  async stop() {
    await this.server.stop();
    return this;
  }

  async [Symbol.asyncDispose ?? Symbol.for("Symbol.asyncDispose")]() {
    await this.stop();
  }
}

// Words of a line as redis-cli reads them: "double" and 'single' quoted strings.
function splitCommand(line) {
  const args = [];
  const re = /"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g;
  let m;
  while ((m = re.exec(line)) !== null) {
    if (m[1] !== undefined) args.push(m[1].replace(/\\(.)/g, (_, c) => ({ n: "\n", r: "\r", t: "\t" })[c] ?? c));
    else if (m[2] !== undefined) args.push(m[2]);
    else args.push(m[3]);
  }
  return args;
}

function cliText(reply) {
  if (reply === null || reply === undefined) return "";
  if (reply instanceof Error) return reply.message;
  if (Buffer.isBuffer(reply)) return reply.toString("utf8");
  if (Array.isArray(reply)) return reply.map(cliText).join("\n");
  return String(reply);
}

module.exports = { RedisContainer, StartedRedisContainer };
